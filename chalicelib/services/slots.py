"""Slots: a slot is a case-task message in flight (docs/architecture/slots.md).

A run's slots run in lanes (`domain.run_rules.Lanes`): a finished task passes its slot to the next
task of its own lane's stride, or, when that stride ran dry, to the back half of the longest
stride left (`services.recording`), so no slot idles while a task of its run waits.
`assign_free_slots` hands an organization's free slots to the idle lanes of
its waiting runs, oldest run first. It is
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
from chalicelib.domain.run_rules import Task, index_of, slots_to_claim, task_at
from chalicelib.errors import ConflictError
from chalicelib.retrying import change, jitter
from chalicelib.services import messagebus
from chalicelib.services.ports.messaging import QueueSendError

log = logging.getLogger(__name__)

ROUNDS = 50
"""At most this many runs are handed slots per call (each round serves one run, oldest first)."""


def _answering_arms(run: Run) -> list[str]:
    return [a.arm_id for a in run.arms if a.answers]


def task_of(run: Run, index: int) -> Task:
    """The run's `index`-th task (first answers only on the arms that answer here)."""
    return task_at(index, _answering_arms(run), run.case_ids, run.tasks)


def index_in_plan(run: Run, task: Task, hint: int | None = None) -> int | None:
    """The index of `task` among the run's tasks, or None when the run never planned it
    (`hint`: the index its message carries)."""
    return index_of(task, _answering_arms(run), run.case_ids, run.tasks, hint=hint)


def message(run: Run, task: Task, index: int) -> dict[str, Any]:
    """A case-task message: ids only (docs/architecture/exactly-once.md), and the task's index in
    the run's plan (which names its lane)."""
    return {
        "org_id": run.org_id,
        "run_id": run.run_id,
        "arm_id": task.arm_id,
        "case_id": task.case_id,
        "attempt": task.attempt,
        "index": index,
    }


def send_tasks(c: Container, run: Run, indices: list[int]) -> None:
    """Send the claimed tasks `indices`; a task that cannot be queued is recorded `incomplete`, not
    rolled back (docs/architecture/run-lifecycle.md), which also gives its slot back."""
    if not indices:
        return
    try:
        c.case_queue.send([message(run, task_of(run, i), i) for i in indices])
    except QueueSendError as exc:
        log.error("run %s: %d task(s) could not be queued", run.run_id, len(exc.failed))
        messagebus.publish(
            c, TasksNotQueued(run.org_id, run.run_id, tuple(b["index"] for b in exc.failed))
        )


@dataclass(frozen=True)
class _Offer:
    """The oldest waiting run that can start a task now, the organization's slots as read, and
    the lanes whose next tasks it starts (empty until decided)."""

    run: Run
    org_limit: int
    free: int
    lanes: tuple[int, ...] = ()


def _offer(c: Container, org_id: str) -> _Offer | None:
    """What the organization can start now: its oldest waiting run with a task to start, or None
    (no free slot, nobody waiting). A waiting run with nothing to start leaves the line on the way:
    a run whose lanes are all busy passes slots between its own tasks."""
    org = c.orgs.get(org_id)
    if org is None or not org.waiting:
        return None
    limit = org.concurrency_limit(c.settings.eval_org_concurrency)
    free = limit - int(org.in_flight)
    if free <= 0:
        return None
    for run_id in list(org.waiting):
        run = c.runs.get(org_id, run_id)
        if (
            run is None
            or RunStatus(run.status).ended
            or not run.lanes.startable(int(run.tasks_total))
        ):
            c.orgs.remove_waiting(org_id, run_id)
            continue
        return _Offer(run, limit, free)
    return None


def _claimed(offer: _Offer) -> _Offer:
    """The offer with the lanes its run starts (docs/architecture/slots.md: idle lanes with a task,
    at most the organization's free slots)."""
    run = offer.run
    startable = run.lanes.startable(int(run.tasks_total))
    k = slots_to_claim(
        run_limit=run.lanes.n,
        run_slots=run.lanes.held,
        pending=len(startable),
        org_free=offer.free,
    )
    return replace(offer, lanes=tuple(startable[:k]))


def assign_free_slots(c: Container, org_id: str, *, pause: Callable[[], None] = jitter) -> int:
    """Give the organization's free slots to its waiting runs, oldest first.

    Returns the number of tasks started (`pause`: between lost claims; tests pass a no-op).
    Every claim is a conditional transaction on the cursors of the run's lanes it starts and the
    organization's `in_flight`, so concurrent callers never over-claim; a claim lost to them is
    decided again on what they left. Gives up quietly when claims keep being lost: whoever frees a
    slot next, or the one-minute tick, hands out what is left.
    """
    started = 0

    def claim(_: _Offer, offer: _Offer) -> bool:
        now = c.clock.now()
        return c.runs.claim_tasks(
            offer.run, list(offer.lanes), org_id, offer.org_limit, epoch_ms(now), iso(now)
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
        if done is None or not done.written or not done.after.lanes:
            return started
        run, lanes = done.after.run, done.after.lanes
        indices = [run.lanes.next[j] for j in lanes]
        if not run.lanes.claiming(lanes).startable(int(run.tasks_total)):
            c.orgs.remove_waiting(org_id, run.run_id)
        send_tasks(c, run, indices)
        started += len(lanes)
    return started


def wait_again(c: Container, run: Run) -> None:
    """Put a run that still has tasks to start back in its organization's waiting line (once),
    handing out no slot now: whoever frees a slot next, or the sweep, serves it."""
    if RunStatus(run.status).ended or not run.lanes.pending(int(run.tasks_total)):
        return
    org = c.orgs.get(run.org_id)
    if org is None or run.run_id not in (org.waiting or []):
        c.orgs.add_waiting(run.org_id, run.run_id, epoch_ms(c.clock.now()))


def enqueue_run(c: Container, run: Run) -> int:
    """Put a run that has tasks to start in its organization's waiting line and hand out slots."""
    c.orgs.add_waiting(run.org_id, run.run_id, epoch_ms(c.clock.now()))
    return assign_free_slots(c, run.org_id)
