"""Phase changes and the final computation of a run (DESIGN §7.3-§7.4).

The write that sees `recorded == expected` moves the phase with a conditional update, so
exactly one worker finalizes. Finalizing is pure domain code over the attempts; its result is
kept on the run as `outcome` so listings never recompute it.
"""

from __future__ import annotations

import logging
from typing import Any

from chalicelib.adapters.tables import AttemptRow, RunRow
from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain.enums import ArmRole, AttemptState, RunPhase, RunStatus
from chalicelib.domain.money import micros_to_usd
from chalicelib.domain import compare
from chalicelib.domain.runs import ArmSummary, AttemptFacts, settle, summarize_arm, verdict_word
from chalicelib.services import slots

log = logging.getLogger(__name__)


def facts(row: AttemptRow) -> AttemptFacts:
    """The summary-relevant facts of an attempt row."""
    scores = row.scores or []
    decided = [s.get("score", 0.0) for s in scores if s.get("passed") is not None]
    return AttemptFacts(
        case_id=row.case_id, attempt=int(row.attempt), state=AttemptState(row.state),
        score=(sum(decided) / len(decided)) if decided else 0.0,
        cost_micros=int(row.cost_micros or 0), input_tokens=int(row.input_tokens or 0),
        output_tokens=int(row.output_tokens or 0), latency_ms=float(row.latency_ms or 0),
        crash=bool(row.crash), reason=row.reason or "")


def summary_view(s: ArmSummary) -> dict[str, Any]:
    """The API shape of an arm summary: quality and efficiency kept apart (seed 004 "Results")."""
    interval = compare.wilson_interval(s.passed, s.decided)
    return {
        "quality": {
            "cases": s.cases, "passed": s.passed, "failed": s.failed, "incomplete": s.incomplete,
            "ungraded": s.ungraded, "crashed": s.crashed, "pass_rate": s.pass_rate,
            "pass_rate_interval_95": list(interval) if interval else None,
            "first_pass_rate": s.first_pass_rate, "average_score": s.average_score,
            "undecided": s.incomplete + s.ungraded, "undecided_reasons": s.undecided_reasons,
        },
        "efficiency": {
            "cost_usd": micros_to_usd(s.cost_micros),
            "cost_per_passed_case_usd": micros_to_usd(s.cost_micros // s.passed) if s.passed else None,
            "tokens_per_case": ((s.input_tokens + s.output_tokens) / s.cases) if s.cases else None,
            "input_tokens": s.input_tokens, "output_tokens": s.output_tokens,
            "latency_p50_ms": s.latency_p50_ms, "latency_p95_ms": s.latency_p95_ms,
        },
    }


def summarize(run: RunRow, attempts: list[AttemptRow]) -> dict[str, ArmSummary]:
    """Each arm's summary over the run's cases."""
    by_arm: dict[str, list[AttemptFacts]] = {a["arm_id"]: [] for a in run.arms}
    for row in attempts:
        if row.arm_id in by_arm:
            by_arm[row.arm_id].append(facts(row))
    return {arm_id: summarize_arm(rows, run.case_ids) for arm_id, rows in by_arm.items()}


def could_not_run(attempts: list[AttemptRow], arm_id: str) -> str | None:
    """The one error every first answer of an arm failed with, when they all did (a setup error:
    the side "could not run" and says so instead of a verdict, seed 004 "Results")."""
    firsts = [r for r in attempts if r.arm_id == arm_id and int(r.attempt) == 1]
    errors = {r.error for r in firsts}
    if firsts and len(errors) == 1 and None not in errors and all(r.state != "passed" for r in firsts):
        return next(iter(errors))
    return None


def arm_views(c: Container, run: RunRow, attempts: list[AttemptRow],
              summaries: dict[str, ArmSummary]) -> dict[str, dict[str, Any]]:
    """Each arm's summary with its per-tag summaries and, when it could not run, why."""
    tags = {cid: (c.datasets.get_case(run.dataset_id, int(run.dataset_version), cid) or {}).get("tags") or []
            for cid in run.case_ids}
    views = {}
    for arm_id, summary in summaries.items():
        view = summary_view(summary)
        by_tag = compare.summarize_by_tag(_by_case(run, attempts, arm_id), tags)
        view["tags"] = {tag: summary_view(s) for tag, s in sorted(by_tag.items())}
        view["could_not_run"] = could_not_run(attempts, arm_id)
        views[arm_id] = view
    return views


def outcome_of(run: RunRow, summaries: dict[str, ArmSummary]) -> dict[str, Any]:
    """The first candidate's numbers as the run's `outcome` (what listings and verdicts read)."""
    cand = next(a["arm_id"] for a in run.arms if a["role"] == ArmRole.CANDIDATE)
    s = summaries[cand]
    return {"arm_id": cand, "total": s.cases, "passed": s.passed, "failed": s.failed,
            "incomplete": s.incomplete, "ungraded": s.ungraded, "crashed": s.crashed,
            "pass_rate": s.pass_rate, "first_pass_rate": s.first_pass_rate,
            "average_score": s.average_score, "verdict": verdict_word(s.cases, s.passed).value,
            "undecided": s.incomplete + s.ungraded}


def settled_state(tries: list[AttemptRow]) -> str | None:
    """A case's settled state on one arm (majority of decided tries), or None when never asked."""
    if not tries:
        return None
    return settle(AttemptState(r.state) for r in sorted(tries, key=lambda r: int(r.attempt))).value


def _by_case(run: RunRow, attempts: list[AttemptRow], arm_id: str) -> dict[str, list[AttemptFacts]]:
    out: dict[str, list[AttemptFacts]] = {}
    for row in attempts:
        if row.arm_id == arm_id:
            out.setdefault(row.case_id, []).append(facts(row))
    for tries in out.values():
        tries.sort(key=lambda a: a.attempt)
    return out


def _arm_ids(run: RunRow, role: ArmRole) -> list[str]:
    return [a["arm_id"] for a in run.arms if a["role"] == role]


def confirming_tasks(run: RunRow, attempts: list[AttemptRow]) -> list[list[Any]]:
    """What a run asks once its first answers are in: for a stability run every case again (seed 004
    "How steady the answers are"); otherwise the reruns of every flipped case, on every candidate
    arm and on the baseline ("A flip is confirmed before it counts"); none without a baseline or
    reruns."""
    baseline = _arm_ids(run, ArmRole.BASELINE)
    reruns = int((run.settings or {}).get("reruns", 0))
    if run.purpose == "stability":
        return [list(t) for t in compare.rerun_tasks(run.case_ids, _arm_ids(run, ArmRole.CANDIDATE), None, reruns)]
    if not baseline or reruns < 1:
        return []
    base = _by_case(run, attempts, baseline[0])
    flipped: list[str] = []
    for arm_id in _arm_ids(run, ArmRole.CANDIDATE):
        cand = _by_case(run, attempts, arm_id)
        for case_id in run.case_ids:
            first_c, first_b = cand.get(case_id), base.get(case_id)
            # Both sides answered the same dataset version: no case changed between them.
            outcome = compare.compare_case(first_c[0].state if first_c else None,
                                           first_b[0].state if first_b else None,
                                           candidate_fp=None, baseline_fp=None)
            if outcome in (compare.CaseOutcome.REGRESSION, compare.CaseOutcome.FIXED) and case_id not in flipped:
                flipped.append(case_id)
    ordered = [cid for cid in run.case_ids if cid in flipped]
    return [list(t) for t in compare.rerun_tasks(ordered, _arm_ids(run, ArmRole.CANDIDATE), baseline[0], reruns)]


def advance_if_done(c: Container, run_id: str) -> None:
    """If every expected attempt is recorded, move the phase on (exactly one caller wins each move):
    answering → confirming (reruns of the flips, through the same queue and slots) → finalizing."""
    run = c.runs.get(run_id)
    if run is None or run.status != RunStatus.RUNNING or int(run.recorded) < int(run.expected):
        return
    if run.phase == RunPhase.ANSWERING:
        extra = confirming_tasks(run, c.runs.attempts(run_id))
        if extra:
            n = len(extra)
            if c.runs.set_phase(run_id, expect_phase=RunPhase.ANSWERING.value, expect_recorded=int(run.recorded),
                                actions=[RunRow.phase.set(RunPhase.CONFIRMING.value),
                                         RunRow.tasks.set((run.tasks or []) + extra),
                                         RunRow.tasks_total.set(int(run.tasks_total) + n),
                                         RunRow.expected.set(int(run.expected) + n)]):
                fresh = c.runs.get(run_id)
                if fresh is not None:
                    slots.enqueue_run(c, fresh)
            return
        expect = RunPhase.ANSWERING
    elif run.phase == RunPhase.CONFIRMING:
        expect = RunPhase.CONFIRMING
    else:
        return
    if c.runs.set_phase(run_id, expect_phase=expect.value, expect_recorded=int(run.recorded),
                        actions=[RunRow.phase.set(RunPhase.FINALIZING.value)]):
        finalize(c, run_id)


def comparison_of(c: Container, run: RunRow, attempts: list[AttemptRow]) -> dict[str, Any] | None:
    """The first candidate compared with the baseline, as the API shows it; None without a baseline."""
    baseline = _arm_ids(run, ArmRole.BASELINE)
    if not baseline:
        return None
    cases = {cid: c.datasets.get_case(run.dataset_id, int(run.dataset_version), cid) or {} for cid in run.case_ids}
    # Both sides of a run answered the same dataset version, so a case is the same on both.
    fps = {cid: compare.case_fingerprint(case) for cid, case in cases.items()}
    cand_arm, base_arm = _arm_ids(run, ArmRole.CANDIDATE)[0], baseline[0]
    broken = {arm: err for arm in (cand_arm, base_arm) if (err := could_not_run(attempts, arm))}
    result = compare.compare_arms(
        _by_case(run, attempts, _arm_ids(run, ArmRole.CANDIDATE)[0]), _by_case(run, attempts, baseline[0]),
        candidate_fps=fps, baseline_fps=fps, baseline_rerun=True,
        reruns_expected=int((run.settings or {}).get("reruns", 0)), invalid_reason=None,
        significance=c.settings.eval_significance,
        questions={cid: case.get("input", "") for cid, case in cases.items()})
    summaries = summarize(run, attempts)
    view = {"candidate_arm_id": cand_arm, "baseline_arm_id": base_arm, **result.as_dict(),
            "efficiency": {name: (str(axis) if axis else None) for name, axis in compare.efficiency_axes(
                summaries[cand_arm], summaries[base_arm], c.settings.eval_efficiency_tolerance).items()},
            "cases": [{"case_id": cid, "outcome": str(result.outcomes[cid])} for cid in run.case_ids
                      if cid in result.outcomes]}
    if broken:
        # A side that could not run says so instead of a verdict.
        view.update(verdict=None, overall=None, could_not_run=broken)
    return view


def finalize(c: Container, run_id: str) -> None:
    """Compute the summaries, the comparison and the outcome, and complete the run (idempotent:
    conditional on the phase)."""
    run = c.runs.get(run_id)
    if run is None or run.phase != RunPhase.FINALIZING or run.status != RunStatus.RUNNING:
        return
    attempts = c.runs.attempts(run_id)
    summaries = summarize(run, attempts)
    outcome = outcome_of(run, summaries)
    outcome["arms"] = arm_views(c, run, attempts, summaries)
    if run.purpose == "stability":
        cand = _by_case(run, attempts, _arm_ids(run, ArmRole.CANDIDATE)[0])
        outcome["stability"] = compare.stability({cid: [a.state for a in tries] for cid, tries in cand.items()})
    comparison = comparison_of(c, run, attempts)
    if comparison is not None:
        outcome["comparison"] = comparison
        outcome["comparison_verdict"] = comparison["verdict"]
    c.runs.update(run_id, [RunRow.status.set(RunStatus.COMPLETED.value), RunRow.phase.set(RunPhase.DONE.value),
                           RunRow.outcome.set(outcome), RunRow.completed_at.set(iso(c.clock.now()))],
                  condition=(RunRow.phase == RunPhase.FINALIZING.value)
                  & (RunRow.status == RunStatus.RUNNING.value))
