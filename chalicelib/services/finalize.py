"""Phase changes and the final computation of a run (docs/architecture/run-lifecycle.md,
docs/concepts/verdicts.md).

When `recorded == expected`, the phase moves with an update conditional on the phase and on
`recorded`, so exactly one worker wins each move: answering → confirming (the reruns of every
flip, or a stability run's re-asks, added as tasks and sent through the same queue and slots) →
finalizing. Finalizing is pure domain code over the attempts (`domain.run_rules`, `domain.compare`);
its result is kept on the run as `outcome` so listings never recompute it.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain import compare
from chalicelib.domain import judge_rules as judge_rules
from chalicelib.domain import outcome as outcomes
from chalicelib.domain.enums import (
    ArmRole,
    AttemptState,
    RunPhase,
    RunPurpose,
    RunStatus,
)
from chalicelib.domain.events import RunEnded
from chalicelib.domain.outcome import (
    ArmResult,
    CaseCompared,
    ComparedBaseline,
    Comparison,
    Outcome,
    Stability,
)
from chalicelib.domain.records import Arm, Attempt, Run
from chalicelib.domain.review_rules import ReviewVerdict, reviewed_tries
from chalicelib.domain.run_rules import (
    ArmSummary,
    AttemptFacts,
    settle,
    summarize_arm,
)
from chalicelib.domain.spec import spec_hash
from chalicelib.services import messagebus, review, run_noise, slots, usage, workspaces
from chalicelib.services.arm_tries import by_case
from chalicelib.services.ports.telemetry import Metric

log = logging.getLogger(__name__)


def summarize(run: Run, attempts: list[Attempt]) -> dict[str, ArmSummary]:
    """Each arm's summary over the run's cases (a case graded by two judges counts the tries of
    the one that graded more of them)."""
    return {
        arm.arm_id: summarize_arm(
            [f for tries in by_case(run, attempts, arm.arm_id).values() for f in tries],
            run.case_ids,
        )
        for arm in run.arms
    }


def judge_keys(attempts: list[Attempt], arm_id: str) -> set[str]:
    """The judges (fingerprint keys) that graded an arm's answers."""
    return {
        key
        for r in attempts
        if r.arm_id == arm_id and (key := judge_rules.score_judge_key(r.scores or []))
    }


def ungraded_score_ids(run: Run, attempts: list[Attempt]) -> list[str]:
    """The judge scores that graded nothing (the judge failed or was skipped): what "grade again"
    grades (docs/concepts/verdicts.md). A score id is `<run_id>:<attempt_key>:judge`. First answers
    a baseline borrowed from another run are that run's to grade again, not this one's."""
    return [
        score_id(run.run_id, r.attempt_key)
        for r in sorted(attempts, key=lambda r: r.attempt_key)
        if not (int(r.attempt) == 1 and _borrowed(run, r.arm_id))
        and any(
            s.get("scorer") == judge_rules.JUDGE_SCORER and s.get("passed") is None
            for s in r.scores or []
        )
    ]


def score_id(run_id: str, attempt_key: str) -> str:
    """The id of an attempt's judge score."""
    return f"{run_id}:{attempt_key}:{judge_rules.JUDGE_SCORER}"


def could_not_run(attempts: list[Attempt], arm_id: str) -> str | None:
    """The one error every first answer of an arm failed with, when they all did (a setup error:
    the side "could not run" and says so instead of a verdict, docs/concepts/verdicts.md)."""
    firsts = [r for r in attempts if r.arm_id == arm_id and int(r.attempt) == 1]
    errors = {r.error for r in firsts}
    if (
        firsts
        and len(errors) == 1
        and None not in errors
        and all(r.state != "passed" for r in firsts)
    ):
        return next(iter(errors))
    return None


def arm_results(
    c: Container, run: Run, attempts: list[Attempt], summaries: dict[str, ArmSummary]
) -> dict[str, ArmResult]:
    """Each arm's result: its summary, its per-tag summaries (the tags read from the dataset's
    cases), why it could not run, its judges, what its own answers cost (the next estimate's
    exact history; nothing for answers borrowed from another run) and the model its answers
    reported (`domain.outcome.reported_model`, borrowed answers too)."""
    tags = {
        cid: (
            c.datasets.get_case(run.org_id, run.dataset_id, int(run.dataset_version), cid) or {}
        ).get("tags")
        or []
        for cid in run.case_ids
    }
    results = {}
    for arm_id, summary in summaries.items():
        own = [] if _borrowed(run, arm_id) else [r for r in attempts if r.arm_id == arm_id]
        results[arm_id] = outcomes.arm_result(
            summary,
            tags=compare.summarize_by_tag(by_case(run, attempts, arm_id), tags),
            could_not_run=could_not_run(attempts, arm_id),
            judges=judge_keys(attempts, arm_id),
            own=(sum(int(r.cost_micros or 0) for r in own), len(own)),
            model=outcomes.reported_model(r.model for r in attempts if r.arm_id == arm_id),
        )
    return results


def _borrowed(run: Run, arm_id: str) -> bool:
    return any(a.arm_id == arm_id and not a.answers for a in run.arms)


def outcome_of(
    run: Run, summaries: dict[str, ArmSummary], arms: dict[str, ArmResult] | None = None
) -> Outcome:
    """The first candidate's numbers as the run's outcome (what listings and verdicts read), with
    every arm's result `arms` when given."""
    cand = next(a.arm_id for a in run.arms if a.role is ArmRole.CANDIDATE)
    return outcomes.outcome_of(cand, summaries[cand], arms)


def settled_state(tries: list[Attempt]) -> str | None:
    """A case's settled state on one arm (majority of decided tries; a person's verdict on one of
    its answers, when one stands), or None when never asked."""
    if not tries:
        return None
    reviewed = next((r.review for r in tries if r.review), None)
    if reviewed:
        states = reviewed_tries([AttemptState.PASSED], ReviewVerdict(reviewed["verdict"]))
        return states[0].value
    return settle(AttemptState(r.state) for r in sorted(tries, key=lambda r: int(r.attempt))).value


def _arm_ids(run: Run, role: ArmRole) -> list[str]:
    return [a.arm_id for a in run.arms if a.role is role]


def borrowed(run: Run, arm: Arm, source: list[Attempt]) -> list[Attempt]:
    """The first answers a baseline `arm` of `run` borrows, out of its source run's attempts
    `source`: relabelled with this run's id and arm id (`recorded_key` with them), costing this
    run nothing."""
    out = []
    for row in source:
        if row.arm_id != arm.source_arm_id or int(row.attempt) != 1:
            continue
        key = f"{arm.arm_id}#{row.case_id}#001"
        out.append(
            replace(
                row,
                run_id=run.run_id,
                arm_id=arm.arm_id,
                cost_micros=0,
                attempt_key=key,
                recorded_key=f"{row.recorded_key.partition('#')[0]}#{key}",
            )
        )
    return out


def all_attempts(c: Container, run: Run) -> list[Attempt]:
    """The run's attempts, plus the first answers a baseline arm borrowed from an earlier run
    (`borrowed`). Borrowed answers the run keeps itself - copied in when their run was deleted
    (`runs.delete_run`) - are read from the run alone."""
    rows = c.runs.attempts(run.org_id, run.run_id)
    kept = {row.attempt_key for row in rows}
    for arm in run.arms:
        if arm.answers or not arm.source_run_id:
            continue
        source = c.runs.attempts(run.org_id, arm.source_run_id)  # of the same organization
        rows += [row for row in borrowed(run, arm, source) if row.attempt_key not in kept]
    return rows


@dataclass(frozen=True)
class Sides:
    """The first candidate arm and the baseline arm of a run, ready to compare."""

    candidate: dict[str, list[AttemptFacts]]
    baseline: dict[str, list[AttemptFacts]]
    candidate_fps: dict[str, str]
    baseline_fps: dict[str, str]
    baseline_arm: Arm
    invalid_reason: str | None


def sides(
    c: Container,
    run: Run,
    attempts: list[Attempt],
    arm_id: str | None = None,
    case_ids: frozenset[str] | None = None,
) -> Sides | None:
    """A candidate arm (default the first) and the baseline, over every case or only `case_ids`
    (whose `attempts` the caller gives); None for a run without a baseline."""
    base_arm = next((a for a in run.arms if a.role is ArmRole.BASELINE), None)
    if base_arm is None:
        return None

    def fps(version: int) -> dict[str, str]:
        return {
            case["case_id"]: compare.case_fingerprint(case)
            for case in c.datasets.cases(run.org_id, run.dataset_id, version)
            if case_ids is None or case["case_id"] in case_ids
        }

    cand_fps = fps(int(run.dataset_version))
    source_version = int(base_arm.source_dataset_version or run.dataset_version)
    base_fps = cand_fps if source_version == int(run.dataset_version) else fps(source_version)
    invalid = None
    cand_arm = arm_id or _arm_ids(run, ArmRole.CANDIDATE)[0]
    if base_arm.source_run_id:
        source_scoring = base_arm.source_scoring_hash
        if source_scoring is None:  # an arm kept before its source's scoring was
            source = c.runs.get(run.org_id, base_arm.source_run_id)
            source_scoring = spec_hash(source.scoring) if source is not None else None
        if source_scoring is not None and source_scoring != spec_hash(run.scoring):
            invalid = "the sides were scored with different scoring settings"
    invalid = invalid or judge_rules.invalid_reason(
        judge_keys(attempts, cand_arm), judge_keys(attempts, base_arm.arm_id)
    )
    return Sides(
        by_case(run, attempts, cand_arm),
        by_case(run, attempts, base_arm.arm_id),
        cand_fps,
        base_fps,
        base_arm,
        invalid,
    )


def confirming_tasks(c: Container, run: Run, attempts: list[Attempt]) -> list[list[Any]]:
    """What a run asks once its first answers are in: for a stability run every case again
    (docs/concepts/verdicts.md); otherwise the reruns of every flipped case, on every candidate arm
    and on the baseline unless it is the candidate itself at an earlier time (a flip is confirmed
    before it counts); none without a baseline or reruns."""
    reruns = int((run.settings or {}).get("reruns", 0))
    candidates = _arm_ids(run, ArmRole.CANDIDATE)
    if run.purpose == RunPurpose.STABILITY:
        return [list(t) for t in compare.rerun_tasks(run.case_ids, candidates, None, reruns)]
    flipped: list[str] = []
    both = None
    for arm_id in candidates:  # every model's flips, each rerun on every arm and the baseline
        both = sides(c, run, attempts, arm_id)
        if both is None or reruns < 1 or both.invalid_reason:
            return []
        for case_id in run.case_ids:
            first_c, first_b = both.candidate.get(case_id), both.baseline.get(case_id)
            outcome = compare.compare_case(
                first_c[0].state if first_c else None,
                first_b[0].state if first_b else None,
                candidate_fp=both.candidate_fps.get(case_id),
                baseline_fp=both.baseline_fps.get(case_id),
            )
            if (
                outcome in (compare.CaseOutcome.REGRESSION, compare.CaseOutcome.FIXED)
                and case_id not in flipped
            ):
                flipped.append(case_id)
    if both is None:
        return []
    flipped = [cid for cid in run.case_ids if cid in flipped]
    rerun_base = both.baseline_arm.arm_id if both.baseline_arm.rerun else None
    return [list(t) for t in compare.rerun_tasks(flipped, candidates, rerun_base, reruns)]


def advance_if_done(c: Container, org_id: str, run_id: str) -> None:
    """If every expected attempt of the organization's run is recorded, move the phase on (exactly
    one caller wins each move): answering → confirming (reruns of the flips, through the same queue
    and slots) → finalizing. On a run that has ended (a case that ran on after a cancel gave its
    slot back), its workspaces are deleted again instead."""
    run = c.runs.get(org_id, run_id)
    if run is not None and RunStatus(run.status).ended:
        # A case that ran on after the run ended gave its slot back: what it wrote in its
        # workspace goes too (the delete at the run's end came before it).
        workspaces.release(c, org_id, run_id)
        return
    if run is None or run.status != RunStatus.RUNNING or int(run.recorded) < int(run.expected):
        return
    attempts: list[Attempt] | None = None
    if run.phase in (RunPhase.ANSWERING, RunPhase.CONFIRMING) and not _advancing(c, run):
        return  # the lane that claimed it reads the attempts, once (a 20,000-case run's ~5 s)
    if run.phase == RunPhase.ANSWERING:
        attempts = all_attempts(c, run)
        extra = confirming_tasks(c, run, attempts)
        if extra:
            if c.runs.enter_confirming(run, extra):
                fresh = c.runs.get(org_id, run_id)
                if fresh is not None:
                    slots.enqueue_run(c, fresh)
            return
    elif run.phase == RunPhase.FINALIZING:
        # Whoever moved it here stopped before completing it (a worker died, a read failed): the
        # delivery that recorded its last attempt comes back and finishes, as the sweep would.
        if finalize(c, org_id, run_id):
            ended(c, org_id, run_id)
        return
    elif run.phase != RunPhase.CONFIRMING:
        return
    if c.runs.enter_finalizing(run):
        # The move was conditional on `recorded` as read, and every attempt is written with its
        # count: the attempts read above are all there will be (a second read of a 2,000-case
        # run cost ~0.3 s between its last answer and its verdict).
        finalize(c, org_id, run_id, attempts)
        ended(c, org_id, run_id)


ADVANCE_CLAIM_SECONDS = 60
"""How long one caller holds the claim to move a run on from its phase. A caller that dies holding
it comes back with its message, which SQS delivers again once its visibility lapses (later than
this: the case timeout and more), so the move is never left to nobody; one that outlives it only
reads what a second caller reads again, the moves being conditional."""


def _advancing(c: Container, run: Run) -> bool:
    """Whether this caller takes the claim to move `run` on from its phase
    (`Runs.claim_advance`)."""
    now_ms = epoch_ms(c.clock.now())
    return c.runs.claim_advance(
        run.org_id, run.run_id, run.phase, now_ms + ADVANCE_CLAIM_SECONDS * 1000, now_ms
    )


def ended(c: Container, org_id: str, run_id: str) -> None:
    """A run ended: its attempts' workspaces are deleted (`services.workspaces`), then what follows
    it (a suite's result and what that decides) happens now. A failure there never undoes the
    run's end; the tick and later events pick the suite up again."""
    workspaces.release(c, org_id, run_id)
    try:
        messagebus.publish(c, RunEnded(org_id, run_id))
    except Exception:  # noqa: BLE001 - the run is over whatever its suite makes of it
        log.exception("suite follow-up of run %s failed", run_id)


def comparison_of(
    c: Container,
    run: Run,
    attempts: list[Attempt],
    arm_id: str | None = None,
    case_ids: frozenset[str] | None = None,
) -> Comparison | None:
    """A candidate arm (default the first) compared with the baseline, over every case or only
    `case_ids` (the cases under a tag); None without a baseline."""
    if case_ids is not None:
        attempts = [a for a in attempts if a.case_id in case_ids]
    both = sides(c, run, attempts, arm_id, case_ids)
    if both is None:
        return None
    cand_arm, base_arm = arm_id or _arm_ids(run, ArmRole.CANDIDATE)[0], both.baseline_arm.arm_id
    broken = {arm: err for arm in (cand_arm, base_arm) if (err := could_not_run(attempts, arm))}
    questions = {
        case["case_id"]: case.get("input", "")
        for case in c.datasets.cases(run.org_id, run.dataset_id, int(run.dataset_version))
    }
    result = compare.compare_arms(
        both.candidate,
        both.baseline,
        candidate_fps=both.candidate_fps,
        baseline_fps=both.baseline_fps,
        baseline_rerun=both.baseline_arm.rerun,
        reruns_expected=int((run.settings or {}).get("reruns", 0)),
        invalid_reason=both.invalid_reason,
        significance=c.settings.eval_significance,
        questions=questions,
    )
    summaries = summarize(run, attempts)
    base = both.baseline_arm
    values = {
        "candidate_arm_id": cand_arm,
        "baseline_arm_id": base_arm,
        "baseline": ComparedBaseline(
            version=base.version,
            source_run_id=base.source_run_id,
            source_completed_at=base.source_completed_at,
            source_dataset_version=base.source_dataset_version,
            rerun=base.rerun,
        ),
        **result.as_dict(),
        "efficiency": compare.efficiency_axes(
            summaries[cand_arm], summaries[base_arm], c.settings.eval_efficiency_tolerance
        ),
        "cases": [
            CaseCompared(case_id=cid, outcome=result.outcomes[cid])
            for cid in run.case_ids
            if cid in result.outcomes
        ],
    }
    if broken:
        # A side that could not run says so instead of a verdict.
        values |= {"verdict": None, "overall": None, "could_not_run": broken}
    return Comparison.model_validate(values)


def compute_outcome(
    c: Container, run: Run, attempts: list[Attempt], seen: run_noise.Seen | None = None
) -> Outcome:
    """The run's outcome: the first candidate's numbers, every arm's result, the stability
    figures or the comparison with the baseline. `seen`: how the earlier runs its noise rests on
    are to be read (`run_noise.noise_of`), when not as stored."""
    summaries = summarize(run, attempts)
    cand = _arm_ids(run, ArmRole.CANDIDATE)[0]
    stability = None
    if run.purpose == RunPurpose.STABILITY:
        tries = by_case(run, attempts, cand)
        stability = Stability(
            **compare.stability(
                {cid: [a.state for a in case_tries] for cid, case_tries in tries.items()}
            )
        )
    comparison = comparison_of(c, run, attempts)
    return outcomes.outcome_of(
        cand,
        summaries[cand],
        arm_results(c, run, attempts, summaries),
        stability=stability,
        comparison=comparison,
        noise=run_noise.noise_of(c, run, attempts, comparison, seen)
        if comparison is not None
        else None,
    )


def finalize(c: Container, org_id: str, run_id: str, attempts: list[Attempt] | None = None) -> bool:
    """Compute the outcome and complete the organization's run (idempotent: conditional on the
    phase). True when this call completed it. `attempts`: `all_attempts` of the run as its move
    to finalizing found it, when the caller read them (None: read them here)."""
    run = c.runs.get(org_id, run_id)
    if run is None or run.phase != RunPhase.FINALIZING or run.status != RunStatus.RUNNING:
        return False
    attempts = all_attempts(c, run) if attempts is None else attempts
    outcome = compute_outcome(c, run, attempts)
    # What it stands behind goes to review before the run reads completed (a finalize delivered
    # again sends nothing twice: every item's id is its answer's).
    routed = review.route_finished(c, replace(run, outcome=outcome), attempts)
    # Counted before it reads completed: whoever sees it completed sees its usage.
    usage.count(c, run)
    if not c.runs.complete(run, outcome, iso(c.clock.now()), routed):
        return False
    count_end(c, RunStatus.COMPLETED)
    return True


def count_end(c: Container, status: RunStatus) -> None:
    """Count a run's end (`RunsEnded` by `status`); called by the conditional write that ended it,
    which exactly one caller wins, so each run is counted once."""
    c.metrics.add(Metric.RUNS_ENDED, status=RunStatus(status).value)
