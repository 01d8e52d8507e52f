"""Slots: a slot is a case-task message in flight (DESIGN §6).

`assign_free_slots` hands an organization's free slots to its waiting runs, oldest first. It is
called when a run starts, when a finished case had no successor to pass its slot to, and by the
one-minute tick, so a hand-off lost to a crash costs at most a minute, never a slot.
"""

from __future__ import annotations

import logging

from chalicelib.adapters.queue import QueueSendError
from chalicelib.adapters.tables import RunRow
from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.events import TasksNotQueued
from chalicelib.domain.runs import Task, slots_to_claim, task_at
from chalicelib.services import messagebus

log = logging.getLogger(__name__)


def run_limit(run: RunRow) -> int:
    """The run's own concurrency limit (EVAL_RUN_CONCURRENCY when it started)."""
    return int((run.settings or {}).get("run_concurrency", 3))


def task_of(run: RunRow, index: int) -> Task:
    """The run's `index`-th task (first answers only on the arms that answer here)."""
    return task_at(index, [a["arm_id"] for a in run.arms if a.get("answers", True)], run.case_ids, run.tasks)


def message(run: RunRow, task: Task) -> dict:
    """A case-task message: ids only (DESIGN §5)."""
    return {"org_id": run.org_id, "run_id": run.run_id, "arm_id": task.arm_id,
            "case_id": task.case_id, "attempt": task.attempt}


def send_tasks(c: Container, run: RunRow, tasks: list[Task]) -> None:
    """Send claimed tasks; a task that cannot be queued is recorded `incomplete`, not rolled back
    (seed 001 "Stuck runs"), which also gives its slot back."""
    if not tasks:
        return
    try:
        c.case_queue.send([message(run, t) for t in tasks])
    except QueueSendError as exc:
        log.error("run %s: %d task(s) could not be queued", run.run_id, len(exc.failed))
        messagebus.publish(c, TasksNotQueued(run.org_id, run.run_id, tuple(
            Task(body["arm_id"], body["case_id"], body["attempt"]) for body in exc.failed)))


def assign_free_slots(c: Container, org_id: str) -> int:
    """Give the organization's free slots to its waiting runs, oldest first.

    Returns the number of tasks started. Every claim is a conditional transaction on the run's
    `next_index` and the organization's `in_flight`, so concurrent callers never over-claim.
    """
    started = 0
    for _ in range(50):
        org = c.orgs.get(org_id)
        if org is None or not org.waiting:
            return started
        free = int(org.concurrency_limit) - int(org.in_flight)
        if free <= 0:
            return started
        progressed = False
        for run_id in list(org.waiting):
            run = c.runs.get(org_id, run_id)
            pending = 0 if run is None else int(run.tasks_total) - int(run.next_index)
            if run is None or RunStatus(run.status).ended or pending <= 0 \
                    or int(run.slots) >= run_limit(run):
                # Nothing to start for it: a run at its own limit passes slots between its tasks.
                c.orgs.remove_waiting(org_id, run_id)
                progressed = True
                continue
            k = slots_to_claim(run_limit=run_limit(run), run_slots=int(run.slots),
                               pending=pending, org_free=free)
            now = c.clock.now()
            if c.runs.claim_tasks(run, k, org_id, int(org.concurrency_limit), epoch_ms(now), iso(now)):
                first = int(run.next_index)
                if int(run.slots) + k >= run_limit(run) or first + k >= int(run.tasks_total):
                    c.orgs.remove_waiting(org_id, run_id)
                send_tasks(c, run, [task_of(run, i) for i in range(first, first + k)])
                started += k
            progressed = True
            break
        if not progressed:
            return started
    return started


def wait_again(c: Container, run: RunRow) -> None:
    """Put a run that still has tasks to start back in its organization's waiting line (once),
    handing out no slot now: whoever frees a slot next, or the sweep, serves it."""
    if RunStatus(run.status).ended or int(run.next_index) >= int(run.tasks_total):
        return
    org = c.orgs.get(run.org_id)
    if org is None or run.run_id not in (org.waiting or []):
        c.orgs.add_waiting(run.org_id, run.run_id, epoch_ms(c.clock.now()))


def enqueue_run(c: Container, run: RunRow) -> int:
    """Put a run that has tasks to start in its organization's waiting line and hand out slots."""
    c.orgs.add_waiting(run.org_id, run.run_id, epoch_ms(c.clock.now()))
    return assign_free_slots(c, run.org_id)
