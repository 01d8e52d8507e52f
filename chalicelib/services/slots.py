"""Slots: a slot is a case-task message in flight (DESIGN §6).

`assign_free_slots` hands an organization's free slots to its waiting runs, oldest first. It is
called when a run starts, when a finished case had no successor to pass its slot to, and by the
one-minute tick, so a hand-off lost to a crash costs at most a minute, never a slot.
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from dataclasses import dataclass, replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.events import TasksNotQueued
from chalicelib.domain.records import Run
from chalicelib.domain.run_rules import Task, slots_to_claim, task_at
from chalicelib.errors import ConflictError
from chalicelib.retrying import change, jitter
from chalicelib.services import messagebus
from chalicelib.services.ports.messaging import QueueSendError

log = logging.getLogger(__name__)

ROUNDS = 50
"""At most this many runs are handed slots per call (each round serves one run, oldest first)."""


def run_limit(run: Run) -> int:
    """The run's own concurrency limit (EVAL_RUN_CONCURRENCY when it started)."""
    return int((run.settings or {}).get("run_concurrency", 3))


def task_of(run: Run, index: int) -> Task:
    """The run's `index`-th task (first answers only on the arms that answer here)."""
    return task_at(index, [a.arm_id for a in run.arms if a.answers], run.case_ids, run.tasks)


def message(run: Run, task: Task) -> dict[str, Any]:
    """A case-task message: ids only (DESIGN §5)."""
    return {
        "org_id": run.org_id,
        "run_id": run.run_id,
        "arm_id": task.arm_id,
        "case_id": task.case_id,
        "attempt": task.attempt,
    }


def send_tasks(c: Container, run: Run, tasks: list[Task]) -> None:
    """Send claimed tasks; a task that cannot be queued is recorded `incomplete`, not rolled back
    (seed 001 "Stuck runs"), which also gives its slot back."""
    if not tasks:
        return
    try:
        c.case_queue.send([message(run, t) for t in tasks])
    except QueueSendError as exc:
        log.error("run %s: %d task(s) could not be queued", run.run_id, len(exc.failed))
        messagebus.publish(
            c,
            TasksNotQueued(
                run.org_id,
                run.run_id,
                tuple(
                    Task(body["arm_id"], body["case_id"], body["attempt"]) for body in exc.failed
                ),
            ),
        )


@dataclass(frozen=True)
class _Offer:
    """The oldest waiting run that can start a task now, the organization's slots as read, and
    how many tasks it claims (`k`: 0 until decided)."""

    run: Run
    org_limit: int
    free: int
    k: int = 0


def _offer(c: Container, org_id: str) -> _Offer | None:
    """What the organization can start now: its oldest waiting run with a task to start, or None
    (no free slot, nobody waiting). A waiting run with nothing to start leaves the line on the way:
    a run at its own limit passes slots between its own tasks."""
    org = c.orgs.get(org_id)
    if org is None or not org.waiting:
        return None
    free = int(org.concurrency_limit) - int(org.in_flight)
    if free <= 0:
        return None
    for run_id in list(org.waiting):
        run = c.runs.get(org_id, run_id)
        if (
            run is None
            or RunStatus(run.status).ended
            or int(run.tasks_total) - int(run.next_index) <= 0
            or int(run.slots) >= run_limit(run)
        ):
            c.orgs.remove_waiting(org_id, run_id)
            continue
        return _Offer(run, int(org.concurrency_limit), free)
    return None


def _claimed(offer: _Offer) -> _Offer:
    """The offer with how many tasks its run may claim (DESIGN §6: run limit, pending, free)."""
    run = offer.run
    pending = int(run.tasks_total) - int(run.next_index)
    return replace(
        offer,
        k=slots_to_claim(
            run_limit=run_limit(run), run_slots=int(run.slots), pending=pending, org_free=offer.free
        ),
    )


def assign_free_slots(c: Container, org_id: str, *, pause: Callable[[], None] = jitter) -> int:
    """Give the organization's free slots to its waiting runs, oldest first.

    Returns the number of tasks started (`pause`: between lost claims; tests pass a no-op).
    Every claim is a conditional transaction on the run's `next_index` and the organization's
    `in_flight`, so concurrent callers never over-claim; a claim lost to them is decided again on
    what they left. Gives up quietly when claims keep being lost: whoever frees a slot next, or
    the one-minute tick, hands out what is left.
    """
    started = 0

    def claim(_: _Offer, offer: _Offer) -> bool:
        now = c.clock.now()
        return c.runs.claim_tasks(
            offer.run, offer.k, org_id, offer.org_limit, epoch_ms(now), iso(now)
        )

    for _ in range(ROUNDS):
        try:
            done = change(
                lambda: _offer(c, org_id),
                _claimed,
                claim,
                conflict=f"the slots of organization {org_id} keep being claimed",
                field="org_id",
                pause=pause,
            )
        except ConflictError:
            return started
        if done is None or not done.written:
            return started
        run, k = done.after.run, done.after.k
        first = int(run.next_index)
        if int(run.slots) + k >= run_limit(run) or first + k >= int(run.tasks_total):
            c.orgs.remove_waiting(org_id, run.run_id)
        send_tasks(c, run, [task_of(run, i) for i in range(first, first + k)])
        started += k
    return started


def wait_again(c: Container, run: Run) -> None:
    """Put a run that still has tasks to start back in its organization's waiting line (once),
    handing out no slot now: whoever frees a slot next, or the sweep, serves it."""
    if RunStatus(run.status).ended or int(run.next_index) >= int(run.tasks_total):
        return
    org = c.orgs.get(run.org_id)
    if org is None or run.run_id not in (org.waiting or []):
        c.orgs.add_waiting(run.org_id, run.run_id, epoch_ms(c.clock.now()))


def enqueue_run(c: Container, run: Run) -> int:
    """Put a run that has tasks to start in its organization's waiting line and hand out slots."""
    c.orgs.add_waiting(run.org_id, run.run_id, epoch_ms(c.clock.now()))
    return assign_free_slots(c, run.org_id)
