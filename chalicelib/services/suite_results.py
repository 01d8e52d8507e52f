"""A suite's results (docs/guides/suites.md): what ended runs come to (`facts_of`), each result
recorded on the suite and its owner told when it is bad (`record`), and the results read back.
Running a suite is `services.suites`.
"""

from __future__ import annotations

import logging
import uuid
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain import judge_rules
from chalicelib.domain.enums import (
    ArmRole,
    AttemptState,
    CaseOutcome,
    RunPurpose,
    RunStatus,
    TriggerKind,
)
from chalicelib.domain.events import (
    GateDecided,
    SuiteJudgeRepublished,
)
from chalicelib.domain.guard_rules import Measured, measured
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Attempt, Run, Suite, SuiteResultEntry
from chalicelib.domain.run_rules import settle
from chalicelib.domain.spec import spec_hash
from chalicelib.domain.suite_rules import (
    RunFacts,
    SuiteDecision,
    tells_owner,
)
from chalicelib.errors import (
    ConflictError,
)
from chalicelib.services import (
    arm_tries,
    finalize,
    messagebus,
    notifications,
    redacting,
)
from chalicelib.services.suite_saving import change_suite, get, touch

log = logging.getLogger(__name__)


def kept_trigger(entry: dict[str, Any]) -> dict[str, Any]:
    """A trigger as a run's settings, the suite's active trigger and a result keep it (stored data,
    not a response)."""
    return {
        k: entry.get(k)
        for k in ("kind", "kinds", "version", "baseline_version", "promotion_id", "by", "at")
    }


def facts_of(c: Container, run: Run, attempts: list[Attempt] | None = None) -> RunFacts:
    """What a finished run says about its first candidate, for the suite's threshold (`attempts`:
    `finalize.all_attempts` of the run when the caller has them)."""
    attempts = finalize.all_attempts(c, run) if attempts is None else attempts
    summaries = finalize.summarize(run, attempts)
    cand = next(a.arm_id for a in run.arms if a.role is ArmRole.CANDIDATE)
    summary = summaries[cand]
    tries = arm_tries.by_case(run, attempts, cand)
    settled = {cid: settle(a.state for a in tries.get(cid, [])) for cid in run.case_ids}
    undecided = [
        cid
        for cid, state in settled.items()
        if state in (AttemptState.INCOMPLETE, AttemptState.UNGRADED)
    ]
    failed_cases = [cid for cid, state in settled.items() if state is AttemptState.FAILED]
    crashes = [r.case_id for r in attempts if r.arm_id == cand and int(r.attempt) == 1 and r.crash]
    kept = run.outcome if run.status == RunStatus.COMPLETED else None
    comparison = kept.comparison if kept is not None else None
    if comparison is None and any(a.role is ArmRole.BASELINE for a in run.arms):
        comparison = finalize.comparison_of(c, run, attempts)
    base = next((a.arm_id for a in run.arms if a.role is ArmRole.BASELINE), None)
    base_summary = summaries.get(base) if base else None
    regressions = [
        f.case_id
        for f in (comparison.flips if comparison is not None else ())
        if f.outcome is CaseOutcome.REGRESSION and f.confirmed
    ]
    counts = comparison.counts if comparison is not None else {}
    compared = (
        CaseOutcome.REGRESSION,
        CaseOutcome.FIXED,
        CaseOutcome.UNCHANGED,
        CaseOutcome.INCOMPLETE,
    )
    measured = kept.noise if kept is not None else None
    if comparison is not None and not any(counts.get(k) for k in compared):
        comparison = None  # no case in common with the baseline: nothing was compared
    republished = None
    if comparison is not None and comparison.invalid_reason is not None and base is not None:
        republished = judge_rules.republished(
            _publications(attempts, cand), _publications(attempts, base)
        )
    return RunFacts(
        status=run.status,
        total=summary.cases,
        passed=summary.passed,
        undecided=undecided,
        failed_cases=failed_cases,
        first_crashes=sorted(set(crashes), key=run.case_ids.index),
        compared=comparison is not None,
        invalid_reason=comparison.invalid_reason if comparison is not None else None,
        confirmed_regressions=regressions,
        noise=(measured or {}).get("sentence") if comparison is not None else None,
        overall=comparison.overall.value if comparison is not None and comparison.overall else None,
        cost_per_pass_micros=(
            summary.cost_micros // summary.passed if summary.passed else None,
            (base_summary.cost_micros // base_summary.passed)
            if base_summary and base_summary.passed
            else None,
        ),
        p95_latency_ms=(
            summary.latency_p95_ms,
            base_summary.latency_p95_ms if base_summary else None,
        ),
        could_not_run="; ".join(
            f"{k}: {v}"
            for k, v in (
                (comparison.could_not_run if comparison is not None else None) or {}
            ).items()
        )
        or None,
        reason=run.reason,
        note=(run.settings or {}).get("suite_note"),
        republished=republished,
    )


def _publications(attempts: list[Attempt], arm_id: str) -> set[tuple[str, int]]:
    """The judge publications `(judge_id, version)` that graded an arm's answers."""
    return {
        found
        for r in attempts
        if r.arm_id == arm_id and (found := judge_rules.score_publication(r.scores or []))
    }


def with_last_result(
    c: Container, suite: Suite, version: int | None, result: SuiteResultEntry, bad: bool
) -> Suite:
    """The suite with its last result, and whether its owner was told of the bad results of
    `version` so far (a good result ends the run of bad ones: the next bad one tells again)."""
    last = {
        "result": result.result,
        "result_id": result.result_id,
        "run_id": result.run_id,
        "version": version,
        "at": result.completed_at,
    }
    return touch(c, suite, notified={**(suite.notified or {}), str(version): bad}, last_result=last)


def measured_on(row: Suite, entry: dict[str, Any], run: Run) -> Measured:
    """What a suite's run measured (`domain.guard_rules.Measured`): its dataset version, the hash
    of its scoring, the suite's threshold as it is at the run's end and the baseline version its
    trigger gave it."""
    return measured(
        dataset_id=run.dataset_id,
        dataset_version=run.dataset_version,
        scoring_hash=spec_hash(run.scoring) if run.scoring is not None else None,
        threshold=row.threshold,
        baseline_version=entry.get("baseline_version"),
    )


def record(
    c: Container,
    row: Suite,
    entry: dict[str, Any],
    run: Run | None,
    decision: SuiteDecision,
    *,
    started: str,
) -> None:
    """Keep a result (once per run) with what it was measured on (`measured_on`; None without a
    run), tell the owner when it is bad (once per run of bad results of a version), and decide a
    gate's promotion (`GateDecided`). Only a result kept here decides a promotion: a result that
    people's verdicts replace later (`Suites.replace_result`) moves nothing by itself."""
    result_id = run.run_id if run is not None else f"nr_{uuid.uuid4().hex[:12]}"
    if (
        run is not None
        and c.suites.result_of_run(row.org_id, row.agent_id, row.suite_id, run.run_id) is not None
    ):
        return
    version = entry.get("version")
    purpose = RunPurpose.GATE if entry.get("kind") == TriggerKind.GATE else RunPurpose.SUITE
    result = SuiteResultEntry(
        suite_id=row.suite_id,
        started_key=f"{started}#{result_id}",
        result_id=result_id,
        org_id=row.org_id,
        agent_id=row.agent_id,
        trigger=kept_trigger(entry),
        version=version,
        run_id=run.run_id if run else None,
        purpose=purpose.value,
        result=decision.result.value,
        reasons=redacting.for_org(c, row.org_id).value(list(decision.reasons)),
        cases_broken=decision.broken,
        cases_undecided=decision.undecided,
        overall=decision.overall,
        started_at=started,
        completed_at=iso(c.clock.now()),
        measured=dict(measured_on(row, entry, run)) if run is not None else None,
        grading_changed=True if decision.grading_changed else None,
    )
    if not c.suites.add_result(result):
        return
    bad = decision.result.bad
    try:
        changed = change_suite(
            c,
            row.org_id,
            row.agent_id,
            row.suite_id,
            lambda s: with_last_result(c, s, version, result, bad),
        )
        # As read before the write (or as the caller read it, when the suite is gone).
        told = changed.before if changed is not None else row
    except ConflictError:  # the result is kept; whether to tell goes by the suite as it is now
        log.warning(
            "suite %s kept changing: its last result and notices were not updated", row.suite_id
        )
        told = c.suites.get(row.org_id, row.agent_id, row.suite_id) or row
    if tells_owner(decision, bool((told.notified or {}).get(str(version)))):
        if decision.republished is not None:
            messagebus.publish(
                c,
                SuiteJudgeRepublished(
                    row.org_id,
                    row.agent_id,
                    row.suite_id,
                    result.result_id,  # a result of a run is kept under its run's id
                    decision.republished.judge_id,
                    decision.republished.before,
                    decision.republished.after,
                ),
            )
        else:
            notifications.suite_result(c, told, result)
    if entry.get("kind") == TriggerKind.GATE and entry.get("promotion_id"):
        messagebus.publish(
            c,
            GateDecided(
                row.org_id,
                row.agent_id,
                entry["promotion_id"],
                row.suite_id,
                str(result.result),
                result.run_id,
                tuple(result.reasons or ()),
            ),
        )


def results(
    c: Container, who: Identity, agent_id: str, suite_id: str, limit: int = 50
) -> list[SuiteResultEntry]:
    """The suite's newest `limit` results, newest first. Raises NotFoundError for a suite or agent
    the organization does not have."""
    get(c, who, agent_id, suite_id)
    return c.suites.results(who.org_id, agent_id, suite_id, limit)
