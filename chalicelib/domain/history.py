"""What an agent's completed runs leave for the reads that must not grow with their number (issue
12 "History costs nothing").

A verdict and a start's baseline choice (docs/concepts/verdicts.md) and its estimate
(docs/guides/costs.md) each depend on a few of the agent's completed runs, never on all of them.
Those few are kept as they change, in small rows of the agent's history, one per thing read:

- `LatestRow`, one per agent version (or the draft): per evaluation, its latest completed run's
  totals. A verdict sums them. An implied evaluation (a run that named none) is held
  under its dataset id, as these rows always held it; an explicit one under
  `<dataset_id>#<evaluation_id>` (`evaluation_slot`), so two evaluations of one version on one
  dataset are two contributions.
- `ArmsRow`, one per (agent version, dataset): the newest arms that could stand in as that
  version's baseline, `ARMS_KEPT` per condition a baseline is matched on.
- `CostRow`, one per model the agent answered on (`answers`) and per judge model that graded it
  (`grading`): the newest `COST_RUNS_KEPT` completed runs' cost and attempts (or calls) there.

The transaction that completes a run folds the run into each row it touches (`rows_of`,
`with_run`), a grade again folds it in again with its new outcome (the same call: every row holds
at most one entry per run, replaced by the newer one), and a delete takes it out (`without_run`).
Each fold is pure: the row as read and the run in, the row to write out. The store writes it
conditional on the row as read.

"Latest" is the latest completed run: the one that completed last (`completed_at`), so a
run started earlier that completes later replaces the earlier-completed one, as the verdicts have
always read it; between two that completed in the same millisecond, the one created later.
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping, Sequence
from dataclasses import asdict, dataclass, field, replace
from typing import Any

from chalicelib.domain.baseline_rules import ArmRecord, arm_records, model_of
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.estimate_rules import CostHistory
from chalicelib.domain.evaluations import is_implied
from chalicelib.domain.records import Run

ARMS_KEPT = 8
"""Arms kept per baseline condition (scoring, environment, model, judge, replay): the newest one
is the default baseline; the others stand in when a delete takes a newer one away. The dataset
version is left out of the condition, so a reusable arm (same dataset version, within
`EVAL_BASELINE_CACHE_HOURS`) is missed only when `ARMS_KEPT` newer arms of other dataset versions
completed after it: the paired baseline then runs here, as it would without the reuse."""
ARMS_ROW_MAX = 200
"""At most this many arms in one row (the oldest go first): a row stays far below DynamoDB's
400 KB item limit however many conditions the version was measured under."""
COST_RUNS_KEPT = 200
"""Runs kept per model: what `EVAL_ESTIMATE_SAMPLE` (50 by default) samples, with room for
deletes. The estimate never read further back: it used to search the agent's newest 200 runs."""

LATEST = "latest"
ARMS = "arms"
ANSWERS = "answers"
GRADING = "grading"
_SEP = "#"


def subject_of(version: int | None, draft: bool) -> str | None:
    """What a verdict is beside: `"draft"`, `"v<version>"`, or None for a run of neither."""
    if draft:
        return "draft"
    return None if version is None else f"v{int(version)}"


def counts(run: Run) -> bool:
    """Whether a run leaves anything in its agent's history: it completed, with an outcome."""
    return run.status == RunStatus.COMPLETED and run.outcome is not None and bool(run.completed_at)


# --- latest results: what a verdict sums (docs/concepts/verdicts.md) ------------------------------


@dataclass(frozen=True, slots=True)
class LatestResult:
    """One evaluation's latest completed run of one agent version (or the draft)."""

    dataset_id: str
    run_id: str
    completed_at: str
    created_at: str
    total: int
    passed: int
    spec_hash: str
    """The spec the run tested (a draft's verdict is stale when the draft's differs)."""
    evaluation_id: str | None = None
    """The explicit evaluation the run belongs to; None for the implied one."""
    p_luck_regression: float | None = None
    """The chance a candidate that changed nothing would show a confirmed regression in this
    run's comparison (its `outcome.noise`, docs/concepts/noise.md); None for a run that compared
    nothing (or was kept before the noise was)."""
    noise: str | None = None
    """The run's noise sentence (`outcome.noise` `sentence`); None likewise."""

    @property
    def slot(self) -> str:
        """Where a `LatestRow` holds it (`evaluation_slot`)."""
        return evaluation_slot(self.dataset_id, self.evaluation_id)

    def is_newer_than(self, other: LatestResult) -> bool:
        """Completed later; in the same millisecond, created later."""
        return (self.completed_at, self.created_at) > (other.completed_at, other.created_at)


def evaluation_slot(dataset_id: str, evaluation_id: str | None) -> str:
    """The key of an evaluation's entry in a `LatestRow`: the dataset id for an implied evaluation
    (as rows kept before evaluations were), `<dataset_id>#<evaluation_id>` for an explicit one."""
    return dataset_id if is_implied(evaluation_id) else f"{dataset_id}{_SEP}{evaluation_id}"


def latest_result(run: Run) -> LatestResult | None:
    """What a completed run says of its evaluation; None for a run that did not complete."""
    if not counts(run) or run.outcome is None or run.completed_at is None:
        return None
    measured = run.outcome.noise or {}
    return LatestResult(
        dataset_id=run.dataset_id,
        run_id=run.run_id,
        completed_at=run.completed_at,
        created_at=run.created_at,
        total=int(run.outcome.total),
        passed=int(run.outcome.passed),
        spec_hash=run.spec_hash,
        evaluation_id=None if is_implied(run.evaluation_id) else run.evaluation_id,
        p_luck_regression=measured.get("p_luck_regression"),
        noise=measured.get("sentence"),
    )


@dataclass(frozen=True)
class LatestRow:
    """Per evaluation, the latest completed run of one agent version or of the draft (`subject`)."""

    subject: str
    results: Mapping[str, LatestResult] = field(default_factory=dict)
    """By `evaluation_slot`."""

    @property
    def key(self) -> str:
        return f"{LATEST}{_SEP}{self.subject}"

    def with_run(self, run: Run) -> LatestRow:
        """The run is its evaluation's latest if it is newer than the one held, or is the one held
        (then with its totals as they are now: a grade again moves them)."""
        result = latest_result(run)
        if result is None or subject_of(run.resolved_version, run.draft) != self.subject:
            return self
        held = self.results.get(result.slot)
        if held is not None and held.run_id != result.run_id and not result.is_newer_than(held):
            return self
        return replace(self, results={**self.results, result.slot: result})

    def vacated_by(self, run_id: str) -> str | None:
        """The evaluation (`evaluation_slot`) whose latest run is `run_id` (its contribution must
        be found again when the run goes), or None."""
        return next((d for d, r in self.results.items() if r.run_id == run_id), None)

    def without_run(self, run_id: str) -> LatestRow:
        """The row without `run_id`: its evaluation contributes nothing until the next-latest run of
        that evaluation is folded in (`with_run`)."""
        return replace(self, results={d: r for d, r in self.results.items() if r.run_id != run_id})

    def as_json(self) -> Any:
        return {d: _plain(r) for d, r in sorted(self.results.items())}

    @classmethod
    def of_json(cls, subject: str, data: Any) -> LatestRow:
        return cls(subject, {d: LatestResult(**r) for d, r in (data or {}).items()})


@dataclass(frozen=True, slots=True)
class VerdictTotals:
    """An agent version's latest results summed (docs/concepts/verdicts.md): the numbers beside the
    verdict word."""

    total: int
    passed: int
    evaluations: int
    last_completed_at: str | None
    stale: bool
    run_ids: list[str]
    luck: list[RunLuck] = field(default_factory=list)
    """The contributing runs that rest on a comparison with measured noise, by run id."""
    p_luck_regression: float | None = None
    """The chance at least one of those comparisons shows a confirmed regression by luck (runs
    independent: `1 - prod(1 - p)`); None when no contributing run rests on one."""


@dataclass(frozen=True, slots=True)
class RunLuck:
    """How likely one contributing run's confirmed regressions are luck (its `outcome.noise`)."""

    run_id: str
    dataset_id: str
    p_luck_regression: float
    sentence: str | None


def verdict_of(
    results: Iterable[LatestResult], *, draft: bool, draft_spec_hash: str | None
) -> VerdictTotals:
    """Sum each evaluation's latest run; a draft's is stale when one of them tested another spec
    than the draft's now. The runs resting on a comparison with measured noise say how likely
    their confirmed regressions are luck (`luck`), and together how likely at least one is
    (`p_luck_regression`)."""
    kept = list(results)
    luck = [
        RunLuck(r.run_id, r.dataset_id, float(r.p_luck_regression), r.noise)
        for r in sorted(kept, key=lambda r: r.run_id)
        if r.p_luck_regression is not None
    ]
    none_by_luck = 1.0
    for one in luck:
        none_by_luck *= 1.0 - one.p_luck_regression
    return VerdictTotals(
        total=sum(r.total for r in kept),
        passed=sum(r.passed for r in kept),
        evaluations=len(kept),
        last_completed_at=max((r.completed_at for r in kept if r.completed_at), default=None),
        stale=draft and any(r.spec_hash != draft_spec_hash for r in kept),
        run_ids=sorted(r.run_id for r in kept),
        luck=luck,
        p_luck_regression=(
            None if not luck else luck[0].p_luck_regression if len(luck) == 1 else 1 - none_by_luck
        ),
    )


# --- arms that may be a baseline (docs/concepts/verdicts.md) -------------------------------------


def _condition(a: ArmRecord) -> tuple[str, str | None, str | None, str | None, str | None]:
    return (a.scoring_hash, a.environment_id, a.model, a.judge_key, a.replay)


def _newest_first(a: ArmRecord) -> tuple[int, str, str]:
    return (-a.completed_at_ms, a.run_id, a.arm_id)


@dataclass(frozen=True)
class ArmsRow:
    """The newest arms of one agent version on one dataset that a later run may take as its
    baseline: answered in their own run, every case answered (no other arm ever qualifies)."""

    version: int
    dataset_id: str
    arms: tuple[ArmRecord, ...] = ()
    """Newest first."""

    @property
    def key(self) -> str:
        return arms_key(self.version, self.dataset_id)

    def with_run(self, run: Run) -> ArmsRow:
        """The run's arms of this version on this dataset in place of any it had here, then the
        newest `ARMS_KEPT` per condition, at most `ARMS_ROW_MAX` in all."""
        mine = [a for a in baseline_arms(run) if (a.version, a.dataset_id) == self.key_parts]
        return self._keeping([*(a for a in self.arms if a.run_id != run.run_id), *mine])

    def without_run(self, run_id: str) -> ArmsRow:
        return replace(self, arms=tuple(a for a in self.arms if a.run_id != run_id))

    @property
    def key_parts(self) -> tuple[int, str]:
        return (self.version, self.dataset_id)

    def _keeping(self, arms: Sequence[ArmRecord]) -> ArmsRow:
        per_condition: dict[tuple[Any, ...], int] = {}
        kept: list[ArmRecord] = []
        for a in sorted(arms, key=_newest_first):
            seen = per_condition.get(_condition(a), 0)
            if seen < ARMS_KEPT and len(kept) < ARMS_ROW_MAX:
                per_condition[_condition(a)] = seen + 1
                kept.append(a)
        return replace(self, arms=tuple(kept))

    def as_json(self) -> Any:
        return [_plain(a) for a in self.arms]

    @classmethod
    def of_json(cls, version: int, dataset_id: str, data: Any) -> ArmsRow:
        return cls(version, dataset_id, tuple(ArmRecord(**a) for a in data or []))


def arms_key(version: int, dataset_id: str) -> str:
    """The key of the `ArmsRow` of `version` on `dataset_id`."""
    return f"{ARMS}{_SEP}v{int(version)}{_SEP}{dataset_id}"


def baseline_arms(run: Run) -> list[ArmRecord]:
    """The arms of a completed run that a later run may take as its baseline: of a published
    version, answered in this run, every case answered (the rules' fixed conditions)."""
    return [
        a
        for a in arm_records(run)
        if a.version is not None and a.answered_here and a.every_case_answered
    ]


# --- cost history (docs/guides/costs.md) ----------------------------------------------------------


@dataclass(frozen=True, slots=True)
class CostEntry:
    """What one completed run spent on one model: its answers (or the judge's calls) there."""

    run_id: str
    created_at: str
    cost_micros: int
    count: int
    """Attempts paid for: case answers for an agent, calls for a judge."""


def _by_created(e: CostEntry) -> tuple[str, str]:
    return (e.created_at, e.run_id)


def answer_costs(run: Run) -> dict[str | None, CostEntry]:
    """Per model, what a completed run's answering arms spent (several arms on one model are one
    run there); an arm that answered nothing, or borrowed its answers, spent nothing."""
    if not counts(run):
        return {}
    results = run.outcome.arms if run.outcome is not None else {}
    totals: dict[str | None, list[int]] = {}
    for arm in run.arms:
        result = results.get(arm.arm_id)
        eff = result.efficiency if result is not None else None
        if arm.answers and eff is not None and eff.attempts:
            acc = totals.setdefault(model_of(arm.spec), [0, 0])
            acc[0] += eff.cost_micros or 0
            acc[1] += eff.attempts
    return {
        m: CostEntry(run.run_id, run.created_at, cost, count) for m, (cost, count) in totals.items()
    }


def grading_cost(run: Run) -> tuple[str, CostEntry] | None:
    """The judge model that graded a completed run and what it spent there (the run's judge cost
    and calls, as they stood when its outcome was last written: a grade again that kept no grade
    adds its cost to the run, and reaches this row with the run's next outcome), or None when no
    judge was asked."""
    judge_model = (run.settings or {}).get("judge_model")
    calls = int(run.judge_calls or 0)
    if not counts(run) or not judge_model or not calls:
        return None
    return str(judge_model), CostEntry(
        run.run_id, run.created_at, int(run.judge_cost_micros or 0), calls
    )


@dataclass(frozen=True)
class CostRow:
    """The newest completed runs on one model, newest first: what the agent's answers cost there
    (`kind` `answers`), or what its judge's grading cost (`grading`)."""

    kind: str
    model: str | None
    entries: tuple[CostEntry, ...] = ()

    @property
    def key(self) -> str:
        return cost_key(self.kind, self.model)

    def _entry(self, run: Run) -> CostEntry | None:
        if self.kind == ANSWERS:
            return answer_costs(run).get(self.model)
        graded = grading_cost(run)
        return graded[1] if graded is not None and graded[0] == self.model else None

    def with_run(self, run: Run) -> CostRow:
        """The run's entry in place of any it had, the newest `COST_RUNS_KEPT` by creation."""
        entry = self._entry(run)
        rest = [e for e in self.entries if e.run_id != run.run_id]
        entries = sorted([*rest, *([entry] if entry else [])], key=_by_created, reverse=True)
        return replace(self, entries=tuple(entries[:COST_RUNS_KEPT]))

    def without_run(self, run_id: str) -> CostRow:
        return replace(self, entries=tuple(e for e in self.entries if e.run_id != run_id))

    def history(self, sample: int) -> CostHistory | None:
        """What the newest `sample` runs spent here in all (None without any)."""
        used = self.entries[:sample]
        if not used:
            return None
        return CostHistory(sum(e.cost_micros for e in used), sum(e.count for e in used), len(used))

    def as_json(self) -> Any:
        return [_plain(e) for e in self.entries]

    @classmethod
    def of_json(cls, kind: str, model: str | None, data: Any) -> CostRow:
        return cls(kind, model, tuple(CostEntry(**e) for e in data or []))


def cost_key(kind: str, model: str | None) -> str:
    """`answers#<model>` or `grading#<model>`; a spec that names no model is `answers` alone."""
    return kind if model is None else f"{kind}{_SEP}{model}"


# --- every row ------------------------------------------------------------------------------

HistoryRow = LatestRow | ArmsRow | CostRow


def rows_of(run: Run) -> list[HistoryRow]:
    """The (empty) rows of its agent's history that a completed run has something in, in key
    order; none for a run that did not complete."""
    if not counts(run):
        return []
    rows: dict[str, HistoryRow] = {}
    subject = subject_of(run.resolved_version, run.draft)
    if subject is not None:
        rows[f"{LATEST}{_SEP}{subject}"] = LatestRow(subject)
    for a in baseline_arms(run):
        assert a.version is not None  # baseline_arms keeps published versions only
        row = ArmsRow(a.version, a.dataset_id)
        rows[row.key] = row
    for model in answer_costs(run):
        rows[cost_key(ANSWERS, model)] = CostRow(ANSWERS, model)
    graded = grading_cost(run)
    if graded is not None:
        rows[cost_key(GRADING, graded[0])] = CostRow(GRADING, graded[0])
    return [rows[k] for k in sorted(rows)]


def row_of_json(key: str, data: Any) -> HistoryRow:
    """The row kept under `key` (`HistoryRow.key`) from its JSON.

    Raises:
        ValueError: a key no row has.
    """
    kind, _, rest = key.partition(_SEP)
    if kind == LATEST and rest:
        return LatestRow.of_json(rest, data)
    if kind == ARMS and rest.startswith("v") and _SEP in rest:
        version, _, dataset_id = rest[1:].partition(_SEP)
        return ArmsRow.of_json(int(version), dataset_id, data)
    if kind in (ANSWERS, GRADING):
        return CostRow.of_json(kind, rest if _SEP in key else None, data)
    raise ValueError(f"not a history row key: {key!r}")


def _plain(value: Any) -> dict[str, Any]:
    return asdict(value)
