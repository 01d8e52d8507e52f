"""Recording one case attempt once and passing its slot on (docs/architecture/exactly-once.md,
docs/architecture/slots.md).

The attempt row is written with `attribute_not_exists` in one transaction with the run's counters,
the claim of the slot's next task and the lease marked done, so a redelivered message changes
nothing and the slot it held is passed on exactly once. `on_duplicate` finishes the hand-off of a
delivery that recorded and then died.
"""

from __future__ import annotations

import logging
import threading
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, NamedTuple

from chalicelib import names
from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain import agent_output, text
from chalicelib.domain.enums import AttemptState, RunStatus
from chalicelib.domain.events import SlotReleased, TasksNotQueued
from chalicelib.domain.leases import Lease
from chalicelib.domain.records import Attempt, BudgetReading, Run
from chalicelib.domain.run_rules import Claim, Task
from chalicelib.retrying import change, jitter
from chalicelib.services import access as access_service
from chalicelib.services import budgets, eval_agent_runs, messagebus, slots
from chalicelib.services.answering import AttemptResult
from chalicelib.services.heartbeats import LeaseHeld, _lease_ms
from chalicelib.services.ports.ledger import RecordConflict, RecordOutcome
from chalicelib.services.ports.telemetry import Metric

if TYPE_CHECKING:  # the pool is made by the first carried recording, not as a worker starts
    from concurrent.futures import Future, ThreadPoolExecutor

log = logging.getLogger(__name__)

ANSWER_PREVIEW_CHARS = 1000
"""How much of an answer kept in the bucket stays inline on its attempt, in characters."""

RECORD_TRIES = 100
"""Lost races a recording takes before it gives up (each loses to the run moving - it ended - or
to another slot of the run taking the very task it claims: a steal of the last task of its stride,
or another steal of the same stride; a run's own slots, at most its concurrency limit, race it)."""


@dataclass(frozen=True)
class _Recording:
    """One try at recording: the run as read and, once decided, the attempt to write with what
    its write does to the run's slot (claim the next task, or give the slot back)."""

    run: Run
    attempt: Attempt | None = None
    claim: Claim | None = None
    """The task the write starts with the attempt's slot (`Lanes.claim_for`), None: none."""
    lane: int | None = None
    """The lane running the attempt's task, None when none does (recorded already, swept)."""
    release_slot: bool = False
    now_ms: int = 0


class KeptAnswer(NamedTuple):
    """An answer as its attempt keeps it (docs/reference/data-protection.md; issue 11, scope 7)."""

    answer: str | None
    """The kept answer inline, or its first 1,000 characters when it is in the bucket."""
    answer_ref: str | None
    """Where the kept answer is in the results bucket, None when it is inline."""
    answer_bytes: int
    """The whole answer's UTF-8 length in bytes (0 without an answer), cut or not."""
    answer_truncated: bool
    """True when the whole answer was longer than `ASSAY_ANSWER_MAX_BYTES` and is kept cut."""


ATTEMPT_ROOM_BYTES = 360_000
"""Bytes an attempt row's answer, calls and scores may take together: DynamoDB's items hold
400 KB, and the rest of the row (ids, reason, error, figures) takes less than 40 KB."""


def _answer_kept(
    c: Container, run: Run, task: Task, answer: str | None, beside: int = 0
) -> KeptAnswer:
    """The answer as the attempt keeps it: its first `ASSAY_ANSWER_MAX_BYTES` bytes (cut at a
    character boundary, `answer_truncated`), in the bucket when that is more than
    `ASSAY_ANSWER_INLINE_BYTES`, or more than what `ATTEMPT_ROOM_BYTES` leaves beside the
    attempt's calls and scores (`beside`, in bytes as stored) - under the organization's prefix
    like everything of a tenant there (docs/architecture/tables.md) - with its first 1,000
    characters inline."""
    if answer is None:
        return KeptAnswer(None, None, 0, False)
    inline = min(c.settings.assay_answer_inline_bytes, max(0, ATTEMPT_ROOM_BYTES - beside))
    whole = text.utf8_length(answer)
    truncated = whole > c.settings.assay_answer_max_bytes
    kept = text.cut_utf8(answer, c.settings.assay_answer_max_bytes) if truncated else answer
    if not truncated and whole <= inline:
        return KeptAnswer(kept, None, whole, False)
    if text.utf8_length(kept) <= inline:
        return KeptAnswer(kept, None, whole, truncated)
    ref = c.bucket.put_text(names.answer_key(run.org_id, run.run_id, task.key), kept)
    return KeptAnswer(kept[:ANSWER_PREVIEW_CHARS], ref, whole, truncated)


def _attempt(
    run: Run,
    task: Task,
    result: AttemptResult,
    answer: KeptAnswer,
    successor: int | None,
    now_ms: int,
    now_iso: str,
    delivery: str | None = None,
) -> Attempt:
    """The attempt `result` is recorded as by the delivery `delivery` (a message id), claiming
    the task `successor` (an index; None: none)."""
    return Attempt(
        run_id=run.run_id,
        attempt_key=task.key,
        recorded_key=f"{now_ms:013d}#{task.key}",
        arm_id=task.arm_id,
        case_id=task.case_id,
        attempt=task.attempt,
        state=result.state.value,
        answer=answer.answer,
        answer_ref=answer.answer_ref,
        answer_bytes=answer.answer_bytes,
        answer_truncated=answer.answer_truncated,
        calls=result.calls,
        scores=result.scores,
        reason=result.reason,
        error=result.error,
        crash=result.crash,
        guardrail=result.guardrail,
        cost_micros=result.cost_micros,
        judge_cost_micros=result.judge_cost_micros,
        judge_calls=result.judge_calls,
        input_tokens=result.input_tokens,
        output_tokens=result.output_tokens,
        latency_ms=round(result.latency_ms, 3),
        model=result.model,
        recorded_at=now_iso,
        successor=(
            slots.message(run, slots.task_of(run, successor), successor)
            if successor is not None
            else None
        ),
        delivery=delivery,
    )


class Recorded(NamedTuple):
    """What `record` did: whether it wrote the attempt (its truth), and the task it carried on
    with."""

    written: bool
    carried: int | None = None
    """The index of the task the write claimed for its delivery to carry on with (None: none)."""
    run: Run | None = None
    """With `carried`: the run as the write left its cursor (its lane moved on, still running)."""
    reading: Future[BudgetReading] | None = None
    """With `carried`: the budgets read beside the write (`_budgets_beside`)."""

    def __bool__(self) -> bool:
        return self.written


_BESIDE: ThreadPoolExecutor | None = None
_BESIDE_LOCK = threading.Lock()
BESIDE_THREADS = 8
"""Threads per process reading a carried task's budgets beside its recording (a Lambda needs one;
the embedded stack's lanes share them, and a read waiting for one is only later)."""


def _budgets_beside(c: Container, run: Run) -> Future[BudgetReading]:
    """The budgets for the task the recording of `run`'s attempt carries on with, read while that
    recording is written (issue 12: two round trips one after the other were most of a case
    beyond its agent).

    The check before a model request needs both budgets and both month counters as they stand
    once every earlier request of the lane is charged, and each is charged as it ends, before its
    attempt is recorded (`budgets`): a read beside the recording sees what one after it would, but
    for other lanes' charges in those few ms, which the model request that follows is exposed to
    in the same way (docs/reference/access.md). A failed read fails the carried task as
    a failed read after the recording did (`_carried`)."""
    global _BESIDE
    with _BESIDE_LOCK:
        if _BESIDE is None:
            from concurrent.futures import ThreadPoolExecutor

            _BESIDE = ThreadPoolExecutor(BESIDE_THREADS, thread_name_prefix="budgets-beside")
        pool = _BESIDE
    return pool.submit(budgets.read, c, run.org_id, run.agent_id, access_service.run_as(run))


def record(
    c: Container,
    run: Run,
    task: Task,
    index: int,
    result: AttemptResult,
    *,
    pass_slot: bool = True,
    delivery: str | None = None,
    carry: str | None = None,
    pause: Callable[[], None] = jitter,
) -> Recorded:
    """Write the attempt once with the run's counters, and pass its slot on
    (docs/architecture/exactly-once.md, docs/architecture/slots.md).

    The write starts the next task of the stride of the lane running the task (`Lanes.lane_of`),
    conditional on that lane's cursor as read and on no other slot having taken that task; a
    lane whose stride ran dry takes the back half of the longest stride left instead
    (`Lanes.claim_for`), conditional on that stride's end as read, so no slot leaves a run while
    one of its tasks waits. Without any task left to start, the slot goes back to the
    organization (whose oldest waiting run takes it). The write conflicts only when the run
    moved (it ended, or was deleted) or another slot took the very task claimed; then the run is
    read again and decided anew. A run that ended claims nothing.

    Args:
        index: the task's index in the run's plan.
        pass_slot: start the next task with this slot; False gives the slot back instead.
        delivery: the message id that recorded it (kept on the attempt: only that message, when
            SQS delivers it again, finishes the hand-off).
        carry: the holder (`delivery`'s claim) that carries on with the task the write starts:
            its lease is written with the attempt and no message is sent; None sends it.
        pause: between lost writes (tests pass a no-op).
    Returns a `Recorded`, true when this call wrote the attempt (false when it existed: a
    redelivery, or the run was deleted meanwhile), with the task it carried on with.
    Raises:
        ConflictError: `RECORD_TRIES` writes in a row were lost (SQS delivers the task again).
    """
    counters = {
        "recorded": 1,
        result.state.value: 1,
        "crashed": int(result.crash),
        "cost_micros": result.cost_micros,
        "judge_cost_micros": result.judge_cost_micros,
        "judge_calls": result.judge_calls,
        "input_tokens": result.input_tokens,
        "output_tokens": result.output_tokens,
        "asked": int(result.asked is not None),
        "judged": int(bool(result.judge_calls)),
    }
    taken = agent_output.stored_bytes(result.calls) + agent_output.stored_bytes(result.scores)
    answer = _answer_kept(c, run, task, result.answer, taken)
    agent_runs = eval_agent_runs.of_attempt(run, task, result, epoch_ms(c.clock.now()))
    beside = _budgets_beside(c, run) if carry is not None else None
    reads = iter([run])
    outcome = RecordOutcome(written=False)

    def read() -> _Recording | None:
        seen = next(reads, None) or c.runs.refresh(run)
        return _Recording(seen) if seen is not None else None

    def decide(before: _Recording) -> _Recording:
        now, seen = c.clock.now(), before.run
        lanes = seen.lanes
        lane = lanes.lane_of(index)
        claim = (
            _next_claim(seen, lane)
            if pass_slot and lane is not None and seen.status == RunStatus.RUNNING
            else None
        )
        successor = claim.index if claim is not None else None
        attempt = _attempt(seen, task, result, answer, successor, epoch_ms(now), iso(now), delivery)
        return _Recording(
            seen,
            attempt,
            claim,
            lane,
            release_slot=claim is None and lane is not None and int(seen.slots) > 0,
            now_ms=epoch_ms(now),
        )

    def write(_: _Recording, after: _Recording) -> bool:
        nonlocal outcome
        if after.attempt is None:
            raise ValueError(f"run {run.run_id}: a recording of {task.key} without its attempt")
        successor_lease = None
        if carry is not None and after.claim is not None:
            successor_lease = Lease(
                attempt_key=slots.task_of(after.run, after.claim.index).key,
                holder=carry,
                until_ms=after.now_ms + _lease_ms(c),
            )
        try:
            outcome = c.runs.record_attempt(
                after.run,
                after.attempt,
                counters=counters,
                lane=after.lane,
                claim=after.claim,
                release_slot=after.release_slot,
                now_ms=after.now_ms,
                successor_lease=successor_lease,
                agent_runs=agent_runs,
            )
        except RecordConflict:
            return False
        return True

    done = change(
        read,
        decide,
        write,
        conflict=f"run {run.run_id}: could not record {task.key}",
        field="run_id",
        tries=RECORD_TRIES,
        pause=pause,
    )
    if done is None:
        return Recorded(False)
    run, claim = done.after.run, done.after.claim
    if not outcome.written:
        on_duplicate(c, run, task, delivery)
        return Recorded(False)
    state = result.state.value
    c.metrics.add(Metric.ATTEMPTS, state=state)
    spent = result.cost_micros + result.judge_cost_micros
    c.metrics.add(Metric.COST_USD, spent / 1_000_000, state=state)
    if claim is None:
        after_release(c, run.org_id, run.run_id)
    elif carry is not None:
        lanes = run.lanes.after(claim)
        ends = {"lane_end": lanes.end} if run.lane_end else {}
        moved = run.moved(lane_next=lanes.next, next_index=int(run.next_index) + 1, **ends)
        return Recorded(True, claim.index, moved, beside)
    else:
        slots.send_tasks(c, run, [claim.index])
    return Recorded(True)


def _next_claim(run: Run, lane: int) -> Claim | None:
    """What the slot of `lane` starts next on `run` (`Lanes.claim_for`); a run kept before
    strides could be cut (no `lane_end`) only follows its own stride."""
    lanes, total = run.lanes, int(run.tasks_total)
    if run.lane_end:
        return lanes.claim_for(lane, total)
    own = lanes.successor(lane, total)
    return Claim(lane, own) if own is not None else None


def after_release(c: Container, org_id: str, run_id: str) -> None:
    """A slot went back to the organization: hand it on, and see whether the phase is over."""
    messagebus.publish(c, SlotReleased(org_id, run_id))


def on_duplicate(c: Container, run: Run, task: Task, delivery: str | None = None) -> None:
    """A task whose attempt is recorded: finish what the delivery that recorded it may not have.

    Only that delivery's own message does (`delivery`, its message id; None: a caller that cannot
    tell, treated as it): SQS keeps a message until its handler returns, so a worker that died
    after the write comes back with that message, while any other copy would start a second
    chain. It re-sends the successor the write claimed unless that successor ever started (its
    lease or attempt exists), or redoes the idempotent hand-off and phase check when it claimed
    none. A successor the delivery carried on with itself (its lease is the delivery's) is
    followed: recorded, to its own successor; claimed and lapsed (the worker died on it), sent
    for a new delivery to take over.

    Raises:
        LeaseHeld: a task this delivery carried on with is still held (its worker may be alive):
            the message comes back once that claim lapses.
    """
    key = task.key
    for _ in range(int(run.tasks_total) + 1):  # a chain never holds a task twice
        row = c.runs.get_attempt(run.org_id, run.run_id, key)
        if row is None:
            return
        if delivery is not None and row.delivery is not None and row.delivery != delivery:
            return
        if not row.successor:
            after_release(c, run.org_id, run.run_id)
            return
        succ = row.successor
        key = Task(succ["arm_id"], succ["case_id"], int(succ["attempt"])).key
        lease = c.runs.lease_of(run, key)
        if lease is None:
            c.case_queue.send([succ])
            return
        if lease.done:
            continue
        if delivery is None or lease.holder != delivery:
            return  # another delivery answers it
        left_ms = lease.until_ms - epoch_ms(c.clock.now())
        if left_ms >= 0:
            raise LeaseHeld(key, max(1, -(-left_ms // 1000)))
        c.case_queue.send([succ])
        return


def on_tasks_not_queued(c: Container, event: TasksNotQueued) -> None:
    """Claimed tasks that could not be queued: each `incomplete`, and its slot given back (a send
    that just failed would likely fail again for a successor). The run then waits for slots again:
    the next hand-off in its organization or the one-minute sweep starts what it has left - never
    this call, where a queue that keeps refusing would recurse through every case."""
    for index in event.indices:
        run = c.runs.get(event.org_id, event.run_id)
        if run is not None:
            record(
                c,
                run,
                slots.task_of(run, index),
                index,
                AttemptResult(AttemptState.INCOMPLETE, reason="could not be queued"),
                pass_slot=False,
            )
    run = c.runs.get(event.org_id, event.run_id)
    if run is not None:
        slots.wait_again(c, run)
