"""The case worker: a case attempt per message of the case-tasks queue (and the tasks of its lane
it carries on with), and the runs its DLQ's tasks fail. `batch_size=1`: Chalice cannot report
partial batch failures.

A Lambda entry point of its own (`chalicelib.startup` says why): importing it starts the worker.
"""

from __future__ import annotations

from chalice import Blueprint

from chalicelib import bootstrap, telemetry
from chalicelib.config import get_settings
from chalicelib.services import run_case
from chalicelib.startup import start

start()
NAMES = get_settings().names
"""The stack's queues, as the settings name them when the function starts (Chalice reads each
handler's queue as the module is imported: `chalice package` with the stage's prefix)."""

bp = Blueprint(__name__)


def _message_id(record) -> str | None:
    return (record.to_dict() or {}).get("messageId")


def _receive_count(record) -> int:
    try:
        return int((record.to_dict().get("attributes") or {}).get("ApproximateReceiveCount", 1))
    except (TypeError, ValueError):
        return 1


def _reason(record) -> str | None:
    """The `reason` attribute a message was sent with, if any (SQS's redrive keeps it): a task
    the worker refused carries one; a case task redriven after its receives carries none."""
    attributes = (record.to_dict() or {}).get("messageAttributes") or {}
    value = (attributes.get("reason") or {}).get("stringValue")
    return value if isinstance(value, str) else None


@bp.on_sqs_message(queue=NAMES.case_tasks_queue, batch_size=1)
def handle_case_task(event):
    """One case attempt per message (docs/architecture/exactly-once.md), carrying on with the next
    task of its lane while the invocation has time for it. Raising (`run_case.LeaseHeld` included:
    an earlier delivery of this message still holds its attempt) leaves the message for
    redelivery."""
    c = bootstrap.container()
    remaining = getattr(event.context, "get_remaining_time_in_millis", None)
    with telemetry.invocation(c.settings, event.context, metrics=c.metrics):
        for record in event:
            with telemetry.keys(correlation_id=_message_id(record)):
                run_case.handle_task(
                    c,
                    record.body,
                    receive_count=_receive_count(record),
                    receipt_handle=record.receipt_handle,
                    message_id=_message_id(record),
                    remaining_ms=remaining,
                )


@bp.on_sqs_message(queue=NAMES.case_tasks_dlq, batch_size=1)
def handle_dead_case(event):
    """A case task that failed `maxReceiveCount` times on assay's own error (one whose failures
    could not all be counted on its attempt: `EVAL_CASE_ERROR_TRIES` counted ends its run first):
    its run ends `failed` at once, the error named - the message's `reason` when it carries one,
    else the last error counted on the attempt (`run_case.handle_dead_task`)."""
    c = bootstrap.container()
    with telemetry.invocation(c.settings, event.context, metrics=c.metrics):
        for record in event:
            with telemetry.keys(correlation_id=_message_id(record)):
                run_case.handle_dead_task(
                    c,
                    record.body,
                    receive_count=_receive_count(record),
                    message_id=_message_id(record),
                    error=_reason(record),
                )
