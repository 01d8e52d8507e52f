"""The one-minute sweep and slot tick (docs/architecture/run-lifecycle.md,
docs/architecture/slots.md).

A running run whose heartbeat and progress stood still for `EVAL_ABANDONED_AFTER_MINUTES` is
failed (conditional on the values read, so a run that moves meanwhile is left alone); so is a
run whose worker cannot finish a case task (`fail_on_error`, on `CaseTaskDead`); its
running cases are failed, the rest skipped, and its slots released exactly once; its attempts'
workspaces are deleted (as at every run's end, and again when the sweep frees a slot a dead worker
left under an ended run). A slow run that still heartbeats is never swept. Every recorded attempt
stays readable.
"""

from __future__ import annotations

import logging
from dataclasses import dataclass, field
from datetime import datetime

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.enums import AttemptState, RunPhase, RunStatus
from chalicelib.domain.events import CaseTaskDead
from chalicelib.domain.records import Attempt, Run
from chalicelib.services import finalize, slots, workspaces

log = logging.getLogger(__name__)


@dataclass
class SweepReport:
    """What one sweep did (run ids)."""

    failed: list[str] = field(default_factory=list)
    finalized: list[str] = field(default_factory=list)
    released: list[str] = field(default_factory=list)
    resent: list[str] = field(default_factory=list)
    """Runs some of whose running tasks were sent again (`resend_unclaimed`)."""
    slots_started: int = 0


def _abandoned_reason(minutes: float) -> str:
    return (
        f"abandoned: no heartbeat and no progress for {minutes:g} minutes; the recorded results "
        "are kept, start the run again"
    )


def fail_running_cases(c: Container, run: Run, reason: str, now: datetime) -> int:
    """Write a `failed` attempt for every task the run claimed that has no attempt yet, each
    counted in the run's counters by its own write (issue 11: after a sweep the counters equal
    the attempts)."""
    keys = c.runs.attempt_keys(run.org_id, run.run_id)
    written = 0
    for index in run.lanes.claimed(int(run.tasks_total)):
        task = slots.task_of(run, index)
        if task.key in keys:
            continue
        attempt = Attempt(
            run_id=run.run_id,
            attempt_key=task.key,
            arm_id=task.arm_id,
            recorded_key=f"{epoch_ms(now):013d}#{task.key}",
            case_id=task.case_id,
            attempt=task.attempt,
            state=AttemptState.FAILED.value,
            reason=reason,
            recorded_at=iso(now),
        )
        written += c.runs.put_attempt_counted(run, attempt, epoch_ms(now))
    return written


WORKER_ERROR = "the case worker kept failing on this task"
"""The error a dead-lettered case task is failed with when nothing named one (its deliveries
died, or their failures could not be counted)."""

FAIL_TRIES = 5
"""Times `fail_on_error` reads the run again when another lane moved its slots meanwhile."""


def error_reason(error: str) -> str:
    """The reason a run stopped on assay's own error `error` (already redacted) shows."""
    return (
        f"stopped on an error ({error[:300]}); the recorded results are kept, start the run again"
    )


def on_case_task_dead(c: Container, event: CaseTaskDead) -> None:
    """A case task of the run kept failing on assay's own error (`run_case.handle_task` counted
    its attempt's `EVAL_CASE_ERROR_TRIES`-th failure, or `run_case.handle_dead_task` read it off
    the dead-letter queue): the run fails at once (`fail_on_error`), with the error named, else
    `WORKER_ERROR`."""
    run = c.runs.get(event.org_id, event.run_id)
    if run is not None:
        fail_on_error(c, run, event.error or WORKER_ERROR)


def fail_on_error(c: Container, run: Run, error: str) -> bool:
    """End the running `run` `failed` at once because its worker cannot finish a case task
    (`error`: what failed, already redacted): its running cases are failed, the rest never start,
    every slot it holds goes back to its organization and it is not resumed. Conditional on the
    run running (read again, at most `FAIL_TRIES` times, when a lane moved its slots meanwhile);
    False when it had ended already, which changes nothing."""
    now = c.clock.now()
    reason = error_reason(error)
    for _ in range(FAIL_TRIES):
        if run.status != RunStatus.RUNNING:
            return False
        if c.runs.fail_on_error(run, reason, iso(now)):
            finalize.count_end(c, RunStatus.FAILED)
            fail_running_cases(c, run, "the run stopped on an error while this case ran", now)
            c.orgs.remove_waiting(run.org_id, run.run_id)
            finalize.ended(c, run.org_id, run.run_id)
            log.error("run %s failed: %s", run.run_id, reason)
            return True
        again = c.runs.get(run.org_id, run.run_id)
        if again is None:
            return False
        run = again
    log.error("run %s could not be failed: its slots kept moving", run.run_id)
    return False


TAKEOVER_BEATS = 3
"""Heartbeats a run may miss before the sweep takes its running tasks from the deliveries that
claimed them: every live case beats its run each `EVAL_HEARTBEAT_SECONDS`, so a run silent for
three beats has nobody alive on it."""


def resend_unclaimed(c: Container, run: Run, *, take_over: bool = False) -> int:
    """Send again every running task of `run` (a busy lane's task in flight) that no delivery
    ever claimed (issue 11): its message was lost with a worker that died after the write that
    started it and before the send. Sending one that is only slow costs a copy, which its lease
    makes ask nobody. With `take_over` (the run silent for `TAKEOVER_BEATS` heartbeats), a task a
    delivery claimed and never recorded is sent too, its claim let go: its worker died, perhaps
    between two cases of a lane it carried on with (issue 12), whose message SQS would only
    deliver again after its visibility timeout - past the sweep's abandonment. Returns how many
    were sent. A run no longer running (one that just failed on an error, say) sends nothing."""
    lanes = run.lanes
    if not run.lane_next or run.status != RunStatus.RUNNING:
        return 0
    lost = []
    for j in range(lanes.n):
        index = lanes.next[j] - lanes.n
        if lanes.busy[j] and index >= 0:
            task = slots.task_of(run, index)
            lease = c.runs.lease_of(run, task.key)
            if lease is None:
                lost.append(slots.message(run, task, index))
            elif take_over and not lease.done and lease.holder is not None:
                if c.runs.release_lease(run, task.key, lease.holder):
                    lost.append(slots.message(run, task, index))
    if lost:
        log.warning(
            "run %s: %d running task(s) never claimed%s: sent again",
            run.run_id,
            len(lost),
            " or left by a silent delivery" if take_over else "",
        )
        c.case_queue.send(lost)
    return len(lost)


def sweep(c: Container) -> SweepReport:
    """Fail abandoned runs, free slots of ended runs, and hand free slots to waiting runs."""
    now = c.clock.now()
    minutes = c.settings.eval_abandoned_after_minutes
    cutoff = epoch_ms(now) - int(minutes * 60_000)
    report = SweepReport()
    for candidate in c.runs.stale(RunStatus.RUNNING, cutoff):
        run = c.runs.get(candidate.org_id, candidate.run_id)
        if run is None or run.status != RunStatus.RUNNING or int(run.heartbeat_at_ms) > cutoff:
            continue
        if run.phase == RunPhase.FINALIZING:
            finalize.finalize(c, run.org_id, run.run_id)
            finalize.ended(c, run.org_id, run.run_id)
            report.finalized.append(run.run_id)
            continue
        reason = _abandoned_reason(minutes)
        if c.runs.abandon(run, reason, iso(now)):
            finalize.count_end(c, RunStatus.FAILED)
            fail_running_cases(c, run, "the run was abandoned while this case ran", now)
            c.orgs.remove_waiting(run.org_id, run.run_id)
            finalize.ended(c, run.org_id, run.run_id)
            report.failed.append(run.run_id)
    resend_cutoff = epoch_ms(now) - int(c.settings.eval_resend_after_seconds * 1000)
    takeover_cutoff = epoch_ms(now) - int(TAKEOVER_BEATS * c.settings.eval_heartbeat_seconds * 1000)
    for candidate in c.runs.stale(RunStatus.RUNNING, resend_cutoff):
        run = c.runs.get(candidate.org_id, candidate.run_id)
        if run is None or run.status != RunStatus.RUNNING or run.run_id in report.failed:
            continue
        take_over = int(run.heartbeat_at_ms) <= takeover_cutoff
        if int(run.heartbeat_at_ms) <= resend_cutoff and resend_unclaimed(
            c, run, take_over=take_over
        ):
            report.resent.append(run.run_id)
    for candidate in c.runs.stale(RunStatus.QUEUED, cutoff):
        run = c.runs.get(candidate.org_id, candidate.run_id)
        if run is None or run.status != RunStatus.QUEUED:
            continue
        org = c.orgs.get(run.org_id)
        if org is not None and run.run_id in (org.waiting or []):
            continue  # still in line for a slot: a queued run may wait as long as its job is queued
        if c.runs.fail_unstarted(run, "failed: nothing was left to run it", iso(now)):
            finalize.count_end(c, RunStatus.FAILED)
            finalize.ended(c, run.org_id, run.run_id)
            report.failed.append(run.run_id)
    for status in (RunStatus.CANCELLED, RunStatus.BUDGET_EXCEEDED, RunStatus.FAILED):
        for candidate in c.runs.stale(status, cutoff):
            run = c.runs.get(candidate.org_id, candidate.run_id)
            if run is None or int(run.slots) <= 0 or int(run.heartbeat_at_ms) > cutoff:
                continue
            # A case a dead worker left running under an ended run: fail it and free its slot.
            if c.runs.release_stranded(
                run, run.reason or status.value, run.completed_at or iso(now)
            ):
                fail_running_cases(c, run, "its worker stopped after the run ended", now)
                workspaces.release(c, run.org_id, run.run_id)
                report.released.append(run.run_id)
    for org in c.orgs.orgs_with_waiting_runs():
        report.slots_started += slots.assign_free_slots(c, org.org_id)
    return report
