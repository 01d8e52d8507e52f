"""One case attempt: ask the agent, grade, record once, pass the slot on
(docs/architecture/exactly-once.md, docs/architecture/run-lifecycle.md).

Delivery is at least once; asking is once (issue 11). A delivery first claims its attempt with a
lease, so a copy of a task being answered or answered already asks nobody. The attempt is then
recorded once (`chalicelib.services.recording`, re-exported here), which passes its slot on.
While its invocation has time, the delivery carries on with the task its slot passed to: the
same transaction claims it for the delivery, and no message is sent (issue 12).
"""

from __future__ import annotations

import json
import logging
import threading
import uuid
import weakref
from collections.abc import Callable
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any

from chalicelib import telemetry
from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms
from chalicelib.domain import judge_rules as judge_rules
from chalicelib.domain.enums import AttemptState, RunStatus
from chalicelib.domain.events import (
    BudgetExhausted,
    CaseTaskDead,
    StarterRefused,
)
from chalicelib.domain.identity import is_org_id
from chalicelib.domain.leases import ERROR_CHARS, error_text, stops_run
from chalicelib.domain.models import (
    Case,
)
from chalicelib.domain.records import BudgetReading, Run
from chalicelib.domain.run_rules import Task
from chalicelib.services import access as access_service
from chalicelib.services import budgets, messagebus, redacting, slots
from chalicelib.services.answering import AttemptResult as AttemptResult
from chalicelib.services.answering import ask_and_grade as ask_and_grade
from chalicelib.services.answering import grade_answer as grade_answer
from chalicelib.services.heartbeats import _HEARTBEATS, LeaseHeld, _lease_ms
from chalicelib.services.heartbeats import _Heartbeats as _Heartbeats
from chalicelib.services.ports.telemetry import Metric
from chalicelib.services.recording import ANSWER_PREVIEW_CHARS as ANSWER_PREVIEW_CHARS
from chalicelib.services.recording import RECORD_TRIES as RECORD_TRIES
from chalicelib.services.recording import KeptAnswer as KeptAnswer
from chalicelib.services.recording import Recorded as Recorded
from chalicelib.services.recording import _answer_kept as _answer_kept
from chalicelib.services.recording import after_release as after_release
from chalicelib.services.recording import on_duplicate as on_duplicate
from chalicelib.services.recording import on_tasks_not_queued as on_tasks_not_queued
from chalicelib.services.recording import record as record

if TYPE_CHECKING:  # the pool is made by the first carried recording, not as a worker starts
    from concurrent.futures import Future

log = logging.getLogger(__name__)


@dataclass(frozen=True)
class TaskMessage:
    """A case-task message as parsed: its run, its task and the index it says the task has in
    the run's plan (None in a message that does not carry one)."""

    org_id: str
    run_id: str
    task: Task
    index: int | None = None


def parse_message(body: str) -> TaskMessage | None:
    """The case-task message `body`, or None when it is malformed (a message without its
    organization included: a run is named by its organization and its id)."""
    try:
        data = json.loads(body)
        org_id = data["org_id"]
        if not is_org_id(org_id):
            return None
        index = data.get("index")
        return TaskMessage(
            org_id,
            str(data["run_id"]),
            Task(str(data["arm_id"]), str(data["case_id"]), int(data["attempt"])),
            index if isinstance(index, int) and not isinstance(index, bool) else None,
        )
    except (ValueError, KeyError, TypeError, AttributeError, RecursionError):
        return None


# --- entry points ----------------------------------------------------------------------------


_RUN_AGENTS: dict[tuple[str, str], tuple[str, tuple[str, str | None] | None]] = {}
"""`(org_id, run_id) -> (agent_id, who the run runs as)`, which never change: once a process knows
them, a task's run, its budgets and its starter's membership come in one read."""


def _load_run(c: Container, org_id: str, run_id: str) -> tuple[Run | None, BudgetReading | None]:
    """The organization's run (consistent) and, when the process has seen the run before, its
    budgets and its starter's membership read in the same request (else None: they are read
    before the first model request)."""
    known = _RUN_AGENTS.get((org_id, run_id))
    if known is None:
        run = c.runs.get(org_id, run_id)
        if run is not None:
            if len(_RUN_AGENTS) > 10_000:
                _RUN_AGENTS.clear()
            _RUN_AGENTS[(org_id, run_id)] = (run.agent_id, access_service.run_as(run))
        return run, None
    agent_id, starter = known
    return c.spend.read_with_run(
        org_id, run_id, agent_id, budgets.month_of(c.clock.now()), starter=starter
    )


@dataclass(frozen=True)
class _Found:
    """A case task worth handling: its run as read, the task, its index, the budgets read with
    the run (None when not read yet)."""

    run: Run
    task: Task
    index: int
    reading: BudgetReading | None


def _drop(c: Container, body: str, reason: str, *, dead: bool) -> None:
    """Move a case task the service will not run to the DLQ with `reason` (it changes nothing);
    one read off the DLQ already (`dead`) is only logged."""
    if dead:
        log.error("case task dropped: %s: %.200s", reason, body)
        return
    log.warning("case task moved to the dead-letter queue: %s: %.200s", reason, body)
    c.case_dlq.send_text(body, {"reason": reason[:1000]})
    c.metrics.add(Metric.DEAD_LETTERS, queue="case-tasks", cause="refused")


def _found(c: Container, body: str, *, dead: bool = False) -> _Found | None:
    """The run and task a message names, or None when there is nothing to do for it: a malformed
    message or a task the run never planned or never started (`_drop`ped with its reason), or a
    deleted run."""
    parsed = parse_message(body)
    if parsed is None:
        _drop(c, body, "malformed case task", dead=dead)
        return None
    _bind_task(parsed.org_id, parsed.run_id, parsed.task)
    run, reading = _load_run(c, parsed.org_id, parsed.run_id)
    if run is None:
        log.info("case task for deleted run %s dropped", parsed.run_id)
        return None
    index = slots.index_in_plan(run, parsed.task, parsed.index)
    if index is None:
        _drop(c, body, f"run {run.run_id} has no task {parsed.task.key}", dead=dead)
    elif not run.lanes.is_claimed(index):
        _drop(c, body, f"run {run.run_id} never started task {parsed.task.key}", dead=dead)
    else:
        return _Found(run, parsed.task, index, reading)
    return None


def _held_elsewhere(c: Container, found: _Found, holder: str, receipt: str | None) -> None:
    """This delivery could not claim its attempt: finish a recorded one's hand-off, leave one
    another delivery is answering, and hand back a message whose own earlier delivery holds it.

    Raises:
        LeaseHeld: this message's earlier delivery holds the claim (SQS delivers it again once
            the claim lapses: the worker that held it died, or it records meanwhile).
    """
    run, task = found.run, found.task
    lease = c.runs.lease_of(run, task.key)
    if lease is None:  # gone since the claim failed (its run deleted): SQS delivers it again
        raise LeaseHeld(task.key, 1)
    try:
        if lease.done:
            on_duplicate(c, run, task, holder)
            return
        if lease.holder != holder:
            log.info(
                "attempt %s of run %s is being answered by another delivery", task.key, run.run_id
            )
            return
        raise LeaseHeld(task.key, max(1, -(-(lease.until_ms - epoch_ms(c.clock.now())) // 1000)))
    except LeaseHeld as held:
        _deliver_again_in(c, receipt, min(held.seconds, 43_200))
        raise


CARRY_MARGIN_SECONDS = 30
"""Time a delivery keeps in hand past a case's timeout before it carries on with another task:
below it, the task it starts is sent as a message for a new invocation."""


def handle_task(
    c: Container,
    body: str,
    *,
    receive_count: int = 1,
    receipt_handle: str | None = None,
    message_id: str | None = None,
    remaining_ms: Callable[[], int] | None = None,
) -> None:
    """Run one case-task message end to end (issue 11 "One ask per attempt").

    The delivery first claims its attempt (a lease in the attempts' lease table, conditional on
    no live claim and no recording): a second delivery while the claim lives leaves without
    asking, a recorded attempt is never asked again, and after a worker died the next delivery
    of its message past the claim takes over. `message_id`: the SQS message id (None: a caller
    outside SQS, whose every call is a delivery of its own).

    The task the recording starts in the attempt's lane is carried on with in this delivery
    while its invocation has time for one more case (`remaining_ms`, the Lambda context's
    milliseconds left, above `EVALUATION_CASE_TIMEOUT_SECONDS` + `CARRY_MARGIN_SECONDS`; None:
    never): the write that records one attempt also claims the next for this delivery, so a lane
    costs no message, receive or delete per case (issue 12). Its message stays in flight until
    the last: should the worker die, SQS delivers it again and `on_duplicate` follows the chain
    to the task left unrecorded.

    Raises only for bugs, AWS failures and `LeaseHeld` (so SQS delivers again); every expected
    outcome is recorded as an attempt state. A failure of assay's own (not `LeaseHeld`) is
    counted on the attempt's lease (`_failed_on_error`): the `EVAL_CASE_ERROR_TRIES`-th ends the
    run `failed` with the error named, and then returns (the message is done with).
    `receive_count` is kept for the handlers' logs.
    """
    found = _found(c, body)
    if found is None:
        return
    holder = message_id or f"call-{uuid.uuid4().hex}"
    now_ms = epoch_ms(c.clock.now())
    if not c.runs.take_lease(found.run, found.task.key, holder, now_ms + _lease_ms(c), now_ms):
        _held_elsewhere(c, found, holder, receipt_handle)
        return
    held: tuple[Run, str] = (found.run, found.task.key)
    try:
        while True:
            recorded = _answer(c, found, holder, receipt_handle, remaining_ms, now_ms)
            if recorded.carried is None or recorded.run is None or recorded.reading is None:
                return
            held = (recorded.run, slots.task_of(recorded.run, recorded.carried).key)
            found = _carried(recorded.run, recorded.carried, recorded.reading)
            _bind_task(found.run.org_id, found.run.run_id, found.task)
    except LeaseHeld:
        # Expected: a task this delivery carried on with is held; no failure of assay's.
        c.runs.release_lease(*held, holder)
        raise
    except Exception as exc:
        # A failure in this process (a bug, AWS): the next delivery need not wait for the claim
        # to lapse, and the failure is counted on the attempt; at `EVAL_CASE_ERROR_TRIES` its run
        # ends `failed` and the message is done with. A worker that is killed never gets here;
        # its claim lapses with the message's visibility.
        if not _failed_on_error(c, *held, holder, exc, receipt_handle):
            raise


ERROR_RETRY_SECONDS = 30
"""After a delivery's `n`-th failure on assay's own error, its message is delivered again in
`n` times this many seconds (rather than after the queue's visibility timeout, when that is
longer): a run whose worker cannot finish a case ends within minutes, and a throttled request
gets a pause."""


def _failed_on_error(
    c: Container, run: Run, key: str, holder: str, exc: Exception, receipt: str | None
) -> bool:
    """Count the failure `exc` of the delivery `holder` on the attempt `key` of `run` - an
    error of assay's own: the agent's failures and provider errors are recorded as attempts and
    never raise - and let its claim go in the same write (`Runs.fail_lease`). The count lives
    on the attempt's lease, not on the SQS message: a copy of the task the sweep sent again
    (whose receive count starts over) counts on the same attempt.

    Below `EVAL_CASE_ERROR_TRIES` failures the message is made visible again in
    `ERROR_RETRY_SECONDS` times the count and False is returned (the caller raises: SQS delivers
    it again). From there on the run ends `failed` at once, the error named, redacted and cut to
    `leases.ERROR_CHARS` (`CaseTaskDead`, `sweep.fail_on_error`), and True is returned once the
    attempt has its `failed` record (the message is done with); a run that ended otherwise
    meanwhile leaves the attempt to the next delivery, which records it `incomplete`.

    Never raises: a failure to count (the store unreachable too) is logged and False returned,
    and the message's own redelivery, then the dead-letter queue and the sweep, take it from
    there."""
    try:
        error = _redacted_error(c, run.org_id, exc)
        lease = c.runs.fail_lease(run, key, holder, error)
        if lease is None:  # not this delivery's claim any more, or recorded meanwhile
            return False
        if not stops_run(lease.failures, c.settings.eval_case_error_tries):
            log.warning(
                "attempt %s of run %s failed on assay's own error (%d of %d): delivered again",
                key,
                run.run_id,
                lease.failures,
                c.settings.eval_case_error_tries,
            )
            _deliver_again_in(
                c,
                receipt,
                min(ERROR_RETRY_SECONDS * lease.failures, c.settings.visibility_timeout_seconds),
            )
            return False
        log.error(
            "attempt %s of run %s failed %d times on assay's own error: the run fails",
            key,
            run.run_id,
            lease.failures,
        )
        messagebus.publish(c, CaseTaskDead(run.org_id, run.run_id, lease.last_error or error))
        return c.runs.attempt_exists(run.org_id, run.run_id, key)
    except Exception:  # noqa: BLE001 - the delivery's own error is raised by the caller
        log.warning("could not count a failure of attempt %s of run %s", key, run.run_id)
        return False


def _deliver_again_in(c: Container, receipt: str | None, seconds: int) -> None:
    """Make the message of `receipt` visible again in `seconds` (None: a caller outside SQS)."""
    if receipt:
        try:
            c.case_queue.extend_visibility(receipt, seconds)
        except Exception:  # noqa: BLE001 - a stale receipt: SQS delivers it again all the same
            log.info("could not move the visibility of a case-task message")


def _redacted_error(c: Container, org_id: str, exc: Exception) -> str:
    """`exc` named as a run's reason may show it: its class and message, redacted with the
    organization's secrets and cut to `leases.ERROR_CHARS`; its class alone when the secrets
    cannot be read (nothing is kept half-redacted)."""
    kind = type(exc).__name__
    try:
        redactor = redacting.for_org(c, org_id)
    except Exception:  # noqa: BLE001 - the secrets store unreachable too
        return kind
    return redactor.text(error_text(kind, str(exc)[: 20 * ERROR_CHARS]))[:ERROR_CHARS]


def _bind_task(org_id: str, run_id: str, task: Task) -> None:
    """Name the task at hand on every log line from here on (`chalicelib.telemetry`)."""
    telemetry.bind(
        org_id=org_id,
        run_id=run_id,
        arm_id=task.arm_id,
        case_id=task.case_id,
        attempt=task.attempt,
    )


BACKLOG_READ_EVERY_MS = 1000
"""How often a process asks the queue how many case tasks wait (the lanes of a process share the
answer: one request a second at most, not one per case)."""

_BACKLOG: weakref.WeakKeyDictionary[Any, tuple[int, int]] = weakref.WeakKeyDictionary()
"""`queue -> (when it was read, epoch ms; messages waiting)`."""
_BACKLOG_LOCK = threading.Lock()


def _others_wait(c: Container) -> bool:
    """Whether case tasks wait for a worker (`CaseQueue.waiting`, read at most once a
    `BACKLOG_READ_EVERY_MS` per process); a failed read counts as none waiting."""
    now_ms = epoch_ms(c.clock.now())
    key = c.case_queue
    with _BACKLOG_LOCK:
        seen = _BACKLOG.get(key)
        if seen is not None and now_ms - seen[0] < BACKLOG_READ_EVERY_MS:
            return seen[1] > 0
        _BACKLOG[key] = (now_ms, seen[1] if seen else 0)  # one reader; the others use the last
    try:
        waiting = c.case_queue.waiting()
    except Exception:  # noqa: BLE001 - fairness is a preference: carrying on is never wrong
        log.warning("could not read the case queue's backlog", exc_info=True)
        waiting = 0
    with _BACKLOG_LOCK:
        _BACKLOG[key] = (now_ms, waiting)
    return waiting > 0


def _carry(
    c: Container, holder: str, remaining_ms: Callable[[], int] | None, since_ms: int
) -> str | None:
    """`holder` when this invocation carries on with one more case after the one it records now,
    else None: it needs time for one (`remaining_ms`), and once it has carried on for
    `EVAL_CARRY_SLICE_SECONDS` since `since_ms` (epoch ms), no other case task may be waiting for
    a worker - else the lane's next task goes to the back of the queue, and every organization's
    first case starts within a round of cases (docs/architecture/slots.md)."""
    if remaining_ms is None:
        return None
    needed_s = c.settings.evaluation_case_timeout_seconds + CARRY_MARGIN_SECONDS
    if remaining_ms() <= needed_s * 1000:
        return None
    carried_ms = epoch_ms(c.clock.now()) - since_ms
    if carried_ms >= c.settings.eval_carry_slice_seconds * 1000 and _others_wait(c):
        return None
    return holder


def _carried(run: Run, index: int, beside: Future[BudgetReading]) -> _Found:
    """The task `index` this delivery claimed with its last recording of `run` (as that write
    left it), with the budgets as read beside that write, before its model request as every
    task's. The run is not read again: the claim was conditional on it running a moment ago, as
    a message's first read would have found it (a cancel in that instant finds the task started);
    whatever moved since - another lane's counters, a cancel - fails its recording's condition,
    which reads the run again."""
    return _Found(run, slots.task_of(run, index), index, beside.result())


def _answer(
    c: Container,
    found: _Found,
    holder: str,
    receipt_handle: str | None,
    remaining_ms: Callable[[], int] | None,
    since_ms: int,
) -> Recorded:
    """Ask, grade and record the task this delivery holds the lease of (with what the recording
    claimed for this delivery to carry on with; `since_ms`: when the delivery began, epoch ms)."""
    run, task, index = found.run, found.task, found.index

    def finish(result: AttemptResult) -> Recorded:
        carry = _carry(c, holder, remaining_ms, since_ms)
        return record(c, run, task, index, result, delivery=holder, carry=carry)

    status = RunStatus(run.status)
    if status.ended:
        # Nothing else starts once a run ended; its slot is given back by recording the task.
        reason = {
            RunStatus.CANCELLED: "cancelled",
            RunStatus.BUDGET_EXCEEDED: "budget exceeded",
        }.get(status, f"run {status.value}")
        result = AttemptResult(AttemptState.INCOMPLETE, reason=reason)
        return finish(result)
    arm = next(a for a in run.arms if a.arm_id == task.arm_id)
    raw_case = c.datasets.get_case(
        run.org_id, run.dataset_id, int(run.dataset_version), task.case_id
    )
    if raw_case is None:
        result = AttemptResult(AttemptState.INCOMPLETE, reason="the case is gone from its dataset")
        return finish(result)
    refusal = access_service.starter_refusal(c, run, found.reading)
    if refusal is not None:
        messagebus.publish(c, StarterRefused(run.org_id, run.run_id, refusal))
        return finish(AttemptResult(AttemptState.INCOMPLETE, reason=refusal))
    with _HEARTBEATS.keeping(c, run, task.key, holder, receipt_handle):
        result = ask_and_grade(
            c, run, arm, Case.model_validate(raw_case), task, budget_read=found.reading
        )
    if result.budget_exceeded is not None:
        # Running cases finish; nothing else starts, and what was never asked stays incomplete.
        messagebus.publish(
            c, BudgetExhausted(run.org_id, run.run_id, result.budget_exceeded.reason)
        )
    return finish(result)


def handle_dead_task(
    c: Container,
    body: str,
    *,
    receive_count: int | None = None,
    message_id: str | None = None,
    error: str | None = None,
) -> None:
    """A case task that kept failing on assay's own error reached the DLQ (the agent's failures
    and provider errors are recorded as attempts and never get here): its run ends `failed` at
    once with the error named, redacted (`error`: the message's reason; else the last error its
    deliveries counted on the attempt's lease, `Lease.last_error`; else `sweep.WORKER_ERROR`, as
    for a worker that died on every delivery), its running cases failed and its slots freed
    (`sweep.fail_on_error`). Most such tasks never get here: `EVAL_CASE_ERROR_TRIES` failures
    of an attempt end its run first (`handle_task`); the queue's `maxReceiveCount` is the
    fallback for failures that could not be counted.

    Exactly once: a task already recorded only finishes the hand-off of the delivery that
    recorded it, one another delivery is answering now is left to it, and a task of a run that
    ended is recorded `incomplete` (its slot given back), the run left as it ended.
    `receive_count` is kept for the logs."""
    found = _found(c, body, dead=True)
    if found is None:
        return
    c.metrics.add(Metric.DEAD_LETTERS, queue="case-tasks", cause="redelivered")
    run, task = found.run, found.task
    lease = c.runs.lease_of(run, task.key)
    if lease is not None and lease.done:
        on_duplicate(c, run, task, message_id)
        return
    if (
        lease is not None
        and lease.holder != message_id
        and lease.until_ms >= epoch_ms(c.clock.now())
    ):
        return
    if RunStatus(run.status).ended:
        # Its run ended already (cancelled, over budget, failed): nothing else starts, and the
        # task is recorded `incomplete` so that its slot goes back now, not at the sweep.
        record(
            c,
            run,
            task,
            found.index,
            AttemptResult(
                AttemptState.INCOMPLETE,
                reason=f"gave up after {receive_count or 'several'} deliveries",
            ),
            delivery=message_id,
        )
        return
    log.error(
        "case task %s of run %s dead after %s deliveries: the run fails",
        task.key,
        run.run_id,
        receive_count or "several",
    )
    error = (error or "").strip() or (lease.last_error if lease is not None else None)
    named = redacting.for_org(c, run.org_id).text(error or "")[:ERROR_CHARS]
    messagebus.publish(c, CaseTaskDead(run.org_id, run.run_id, named))
