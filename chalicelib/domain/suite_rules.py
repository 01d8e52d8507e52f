"""What a suite result must meet, and which triggers a suite keeps (docs/guides/suites.md).

Pure: the service turns a finished eval run into `RunFacts` and stores the `SuiteDecision`.
"""

from __future__ import annotations

import math
from collections.abc import Sequence
from dataclasses import dataclass, field, replace
from enum import StrEnum
from typing import Any

from pydantic import Field, StrictBool, StrictFloat, StrictInt

from chalicelib.domain.display_names import comparison_key
from chalicelib.domain.enums import TriggerKind
from chalicelib.domain.judge_rules import Republished
from chalicelib.domain.models import Frozen
from chalicelib.domain.records import SuiteResultEntry
from chalicelib.errors import ConflictError


class SuiteResult(StrEnum):
    """The word a suite result reads."""

    PASSED = "passed"
    FAILED = "failed"
    INCONCLUSIVE = "inconclusive"
    ERROR = "error"
    BASELINE_SET = "baseline_set"
    NOT_RUN = "not_run"

    @property
    def bad(self) -> bool:
        """Results the owner is told of (failed, inconclusive, not run)."""
        return self in (SuiteResult.FAILED, SuiteResult.INCONCLUSIVE, SuiteResult.NOT_RUN)


def shown_name(name: str) -> str:
    """A suite's name as it is kept and shown: the name given without the spaces at either end."""
    return name.strip()


def name_key(name: str) -> str:
    """What a suite name is compared by: unique among one agent's suites (docs/guides/suites.md).

    Two names are the same name when they read the same to a person
    (`display_names.comparison_key`): invisible format characters left out ("Night\\u200bly" is
    "Nightly"), compared case-insensitively (Unicode case folding: "Nightly", "NIGHTLY" and
    "nightly" are one name), in Unicode's compatibility form (NFKC: a full-width "Ｎｉｇｈｔｌｙ"
    is "Nightly"), with the spaces at either end trimmed and every run of spaces inside counted as
    one space. The empty string for a name that is blank: a suite without a name holds none, and
    any number of suites may have none.
    """
    return comparison_key(name)


def name_taken(name: str, suite_id: str) -> ConflictError:
    """The 409 (field `name`, `suite_id` the holder) of a name another suite of the agent holds,
    quoting that suite's name as it is kept (`name`), whatever spelling the refused save used."""
    return ConflictError(
        f"name: this agent already has a suite named {name!r} ({suite_id}); suite names are "
        "unique per agent, compared without case, surrounding spaces or invisible characters: "
        "choose another name",
        field="name",
        suite_id=suite_id,
    )


class Threshold(Frozen):
    """The bar every result must meet."""

    min_pass_rate: StrictInt | StrictFloat | None = Field(None, ge=0, le=1, allow_inf_nan=False)
    """Minimum settled pass rate (0..1) over every case; None sets no floor."""
    max_regressions: StrictInt = Field(0, ge=0, le=1_000_000)
    """Confirmed regressions allowed (none by default: one fails the result)."""
    max_cost_per_pass_rise_pct: StrictInt | StrictFloat | None = Field(
        None, ge=0, le=1_000_000, allow_inf_nan=False
    )
    """Largest allowed rise of cost per passed case against the baseline, in percent."""
    max_p95_latency_rise_pct: StrictInt | StrictFloat | None = Field(
        None, ge=0, le=1_000_000, allow_inf_nan=False
    )
    """Largest allowed rise of p95 latency against the baseline, in percent."""


class Schedule(Frozen):
    cron: str = Field(min_length=1, max_length=100)
    """5-field Unix cron read on the wall clock of `timezone`."""
    timezone: str = Field("UTC", min_length=1, max_length=64)


class Triggers(Frozen):
    """When a suite runs (any combination)."""

    schedule: Schedule | None = None
    on_publish: StrictBool = False
    on_promotion: StrictBool = False
    on_dependency_change: StrictBool = False


@dataclass(frozen=True)
class RunFacts:
    """What a finished eval run says about the candidate, as far as a suite result goes."""

    status: str
    """The run's status: completed, failed, cancelled, budget_exceeded."""
    total: int
    passed: int
    undecided: Sequence[str] = ()
    """Cases the candidate left incomplete or ungraded (settled)."""
    failed_cases: Sequence[str] = ()
    """Cases the candidate failed (settled): named when the pass rate misses the minimum."""
    first_crashes: Sequence[str] = ()
    """Cases whose first answer crashed (counted apart from the settled majority)."""
    compared: bool = False
    """The run had a baseline to compare with."""
    invalid_reason: str | None = None
    confirmed_regressions: Sequence[str] = ()
    overall: str | None = None
    cost_per_pass_micros: tuple[int | None, int | None] = (None, None)
    """(candidate, baseline)."""
    p95_latency_ms: tuple[float | None, float | None] = (None, None)
    could_not_run: str | None = None
    reason: str | None = None
    """Why the run ended as it did (its `reason`)."""
    note: str | None = None
    """Said beside the result whatever it is (e.g. why nothing was compared)."""
    noise: str | None = None
    """The run's noise sentence (its `outcome.noise` `sentence`, docs/concepts/noise.md): how
    likely its confirmed regressions are luck; None without one."""
    republished: Republished | None = None
    """The judge published again between the baseline's grading and the candidate's (what made
    the comparison invalid, when it is); None otherwise."""


@dataclass(frozen=True)
class SuiteDecision:
    """A suite result: its word, every reason it fell short, and the cases behind it."""

    result: SuiteResult
    reasons: list[str] = field(default_factory=list)
    broken: list[str] = field(default_factory=list)
    undecided: list[str] = field(default_factory=list)
    overall: str | None = None
    grading_changed: bool = False
    """Its comparison was invalid - the sides were graded differently - so the next run of the
    version runs the version before beside it (`grading_changed_since`)."""
    republished: Republished | None = None
    """The judge published again since the run it was compared with (its owner is told)."""


def rise_pct(new: float | None, old: float | None) -> float | None:
    """The rise from `old` to `new` in percent; None when either is unknown. From a zero baseline
    any positive increase is an infinite rise (a bar is exceeded by any positive increase)."""
    if new is None or old is None:
        return None
    if old == 0:
        return math.inf if new > 0 else 0.0
    return (
        (new - old) * 100.0 / old
    )  # multiply first: 100 -> 107 is exactly 7.0, not 7.000000000000001


def _pct(x: float) -> str:
    return f"{x * 100:.1f}%"


def decide_result(threshold: Threshold, facts: RunFacts) -> SuiteDecision:
    """The result of a suite run (docs/guides/suites.md): `_decide`'s, whose reasons end with
    the run's noise sentence (`facts.noise`) when the run has confirmed regressions, whatever the
    result, so whoever reads why knows how likely they are luck. A result of a run that did not fail
    whose comparison was invalid is a grading change (`grading_changed`), carrying the judge
    published again when that is what changed (`republished`)."""
    decision = _decide(threshold, facts)
    if facts.compared and facts.invalid_reason is not None and decision.result != "error":
        decision = replace(decision, grading_changed=True, republished=facts.republished)
    if facts.noise and facts.confirmed_regressions:
        return replace(decision, reasons=[*decision.reasons, facts.noise])
    return decision


def invalid_doubt(invalid_reason: str, republished: Republished | None) -> str:
    """Why an invalid comparison leaves a result inconclusive: the judge published again since the
    run it is compared with, named with both versions, else the comparison's own reason."""
    if republished is None:
        return f"the comparison is invalid: {invalid_reason}"
    return (
        f"the comparison is invalid: judge {republished.judge_id} was published again since the "
        f"run it is compared with (version {republished.before} graded that run, version "
        f"{republished.after} grades now), so a flip would say something about the grading, not "
        f"the agent; the next run compares under version {republished.after}"
    )


def grading_changed_since(newer: Sequence[SuiteResultEntry]) -> bool:
    """Whether a result of a version since its last good one (`newer`) could not be compared with
    that run because the grading changed (docs/guides/suites.md): then the next run of the version
    runs the version before beside it, graded the way it is now, rather than being compared with a
    run graded another way again. A result kept before results recorded it says so in its
    reasons."""
    return any(
        r.grading_changed or any("comparison is invalid" in str(x) for x in r.reasons or ())
        for r in newer
    )


def tells_owner(decision: SuiteDecision, told_of_version: bool) -> bool:
    """Whether a result's owner is told of it (docs/guides/suites.md): a bad result, once per run
    of bad results of a version (`told_of_version`: the owner was told of this run already) - and
    always when the judge was published again since the run it was compared with, which is news
    even amid bad results."""
    return decision.result.bad and (not told_of_version or decision.republished is not None)


def _decide(threshold: Threshold, facts: RunFacts) -> SuiteDecision:
    """The result of a suite run before the noise sentence (docs/guides/suites.md).

    `error` when the run failed. `failed` when something fails outright: more confirmed
    regressions than allowed, any crash among first answers, a pass rate under the minimum even
    were every undecided case to pass, or an efficiency ceiling exceeded. Otherwise
    `inconclusive` when the run was cancelled or ran out of budget, the comparison is invalid,
    a side could not run, or a case is left undecided. Otherwise `baseline_set` for a first
    measurement with neither a minimum nor a baseline, else `passed`. McNemar's direction is
    carried along and never decides.
    """
    broken = list(facts.confirmed_regressions)
    undecided = list(facts.undecided)
    note = [facts.note] if facts.note else []
    if facts.status == "failed":
        return SuiteDecision(
            SuiteResult.ERROR,
            [f"the eval run failed: {facts.reason or 'no reason given'}", *note],
            broken,
            undecided,
            facts.overall,
        )
    fails: list[str] = []
    if len(broken) > threshold.max_regressions:
        fails.append(
            f"{len(broken)} confirmed regression{'s' if len(broken) != 1 else ''}, "
            f"{threshold.max_regressions} allowed"
        )
    if facts.first_crashes:
        n = len(facts.first_crashes)
        fails.append(
            f"the agent crashed on {n} case{'s' if n != 1 else ''}' first answers"
            if n != 1
            else "the agent crashed on 1 case's first answer"
        )
        broken += [c for c in facts.first_crashes if c not in broken]
    if threshold.min_pass_rate is not None and facts.total:
        best = (facts.passed + len(undecided)) / facts.total
        if best < threshold.min_pass_rate:
            broken += [c for c in facts.failed_cases if c not in broken]
            rate = facts.passed / facts.total
            fails.append(
                f"pass rate {_pct(rate)} is below the minimum {_pct(threshold.min_pass_rate)}"
                + (f" even were every undecided case to pass ({_pct(best)})" if undecided else "")
            )
    comparable = facts.compared and facts.invalid_reason is None and facts.could_not_run is None
    if comparable:
        for name, limit, (new, old) in (
            (
                "cost per passed case",
                threshold.max_cost_per_pass_rise_pct,
                facts.cost_per_pass_micros,
            ),
            ("p95 latency", threshold.max_p95_latency_rise_pct, facts.p95_latency_ms),
        ):
            rise = rise_pct(new, old) if limit is not None else None
            if rise is not None and limit is not None and rise > limit:
                shown = "from zero" if math.isinf(rise) else f"{rise:.1f}%"
                fails.append(f"{name} rose {shown}, more than the {limit:g}% allowed")
    if fails:
        return SuiteDecision(SuiteResult.FAILED, fails + note, broken, undecided, facts.overall)
    doubts: list[str] = []
    if facts.status in ("cancelled", "budget_exceeded"):
        doubts.append(
            "the eval run was "
            f"{'cancelled' if facts.status == 'cancelled' else 'stopped: budget exceeded'}"
            + (f" ({facts.reason})" if facts.reason else "")
        )
    if facts.invalid_reason:
        doubts.append(invalid_doubt(facts.invalid_reason, facts.republished))
    if facts.could_not_run:
        doubts.append(f"a side could not run: {facts.could_not_run}")
    if undecided:
        doubts.append(
            f"{len(undecided)} case{'s' if len(undecided) != 1 else ''} left undecided: "
            + ", ".join(undecided[:10])
            + ("…" if len(undecided) > 10 else "")
        )
    if doubts:
        return SuiteDecision(
            SuiteResult.INCONCLUSIVE, doubts + note, broken, undecided, facts.overall
        )
    if threshold.min_pass_rate is None and not facts.compared:
        return SuiteDecision(
            SuiteResult.BASELINE_SET,
            [
                "a first measurement with no minimum and nothing earlier to compare: "
                "a reference for later results, not a pass",
                *note,
            ],
            broken,
            undecided,
            facts.overall,
        )
    return SuiteDecision(SuiteResult.PASSED, note, broken, undecided, facts.overall)


def absorb(pending: Sequence[dict[str, Any]], trigger: dict[str, Any]) -> list[dict[str, Any]]:
    """The waiting triggers after `trigger` arrives (docs/guides/suites.md).

    A suite waiting to check a version absorbs the next trigger for the same version: the waiting
    entry stays (keeping its earlier due time, so a burst of dependency changes is one run due
    after the first), and takes on what the new one adds - a gate or a paired baseline. Triggers
    for other versions wait in arrival order.
    """
    out = [dict(p) for p in pending]
    for entry in out:
        if entry.get("version") == trigger.get("version"):
            entry["kinds"] = sorted(
                set(entry.get("kinds", [entry.get("kind")])) | {trigger["kind"]}
            )
            entry["due_at_ms"] = min(int(entry["due_at_ms"]), int(trigger["due_at_ms"]))
            for key in ("baseline_version", "promotion_id", "by"):
                if trigger.get(key) is not None and entry.get(key) is None:
                    entry[key] = trigger[key]
            if trigger["kind"] == TriggerKind.GATE:
                entry["kind"] = TriggerKind.GATE.value  # a gate decides a promotion: it wins
                entry["promotion_id"] = trigger.get("promotion_id")
                entry["baseline_version"] = trigger.get("baseline_version")
            return out
    out.append({**trigger, "kinds": [trigger["kind"]]})
    return out
