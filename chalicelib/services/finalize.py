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
from chalicelib.domain.runs import ArmSummary, AttemptFacts, summarize_arm, verdict_word

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
    return {
        "quality": {
            "cases": s.cases, "passed": s.passed, "failed": s.failed, "incomplete": s.incomplete,
            "ungraded": s.ungraded, "crashed": s.crashed, "pass_rate": s.pass_rate,
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


def outcome_of(run: RunRow, summaries: dict[str, ArmSummary]) -> dict[str, Any]:
    """The first candidate's numbers as the run's `outcome` (what listings and verdicts read)."""
    cand = next(a["arm_id"] for a in run.arms if a["role"] == ArmRole.CANDIDATE)
    s = summaries[cand]
    return {"arm_id": cand, "total": s.cases, "passed": s.passed, "failed": s.failed,
            "incomplete": s.incomplete, "ungraded": s.ungraded, "crashed": s.crashed,
            "pass_rate": s.pass_rate, "first_pass_rate": s.first_pass_rate,
            "average_score": s.average_score, "verdict": verdict_word(s.cases, s.passed).value,
            "undecided": s.incomplete + s.ungraded}


def advance_if_done(c: Container, run_id: str) -> None:
    """If every expected attempt is recorded, move the phase on; the one winner finalizes."""
    run = c.runs.get(run_id)
    if run is None or run.status != RunStatus.RUNNING or int(run.recorded) < int(run.expected):
        return
    if run.phase == RunPhase.ANSWERING:
        if c.runs.set_phase(run_id, expect_phase=RunPhase.ANSWERING.value, expect_recorded=int(run.recorded),
                            actions=[RunRow.phase.set(RunPhase.FINALIZING.value)]):
            finalize(c, run_id)


def finalize(c: Container, run_id: str) -> None:
    """Compute the summaries and outcome and complete the run (idempotent: conditional on the phase)."""
    run = c.runs.get(run_id)
    if run is None or run.phase != RunPhase.FINALIZING or run.status != RunStatus.RUNNING:
        return
    summaries = summarize(run, c.runs.attempts(run_id))
    outcome = outcome_of(run, summaries)
    outcome["arms"] = {arm_id: summary_view(s) for arm_id, s in summaries.items()}
    c.runs.update(run_id, [RunRow.status.set(RunStatus.COMPLETED.value), RunRow.phase.set(RunPhase.DONE.value),
                           RunRow.outcome.set(outcome), RunRow.completed_at.set(iso(c.clock.now()))],
                  condition=(RunRow.phase == RunPhase.FINALIZING.value)
                  & (RunRow.status == RunStatus.RUNNING.value))
