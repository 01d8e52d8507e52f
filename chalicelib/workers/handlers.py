"""Queue and schedule handlers. `batch_size=1`: Chalice cannot report partial batch failures."""

from __future__ import annotations

import json
import logging

from chalice import Blueprint

from chalicelib import bootstrap, names
from chalicelib.services import agent_events, run_case, suites, sweep

log = logging.getLogger(__name__)

bp = Blueprint(__name__)


def _message_id(record) -> str | None:
    return (record.to_dict() or {}).get("messageId")


def _receive_count(record) -> int:
    try:
        return int((record.to_dict().get("attributes") or {}).get("ApproximateReceiveCount", 1))
    except (TypeError, ValueError):
        return 1


@bp.on_sqs_message(queue=names.CASE_TASKS_QUEUE, batch_size=1)
def handle_case_task(event):
    """One case attempt per message (DESIGN §5). Raising (`run_case.LeaseHeld` included: an
    earlier delivery of this message still holds its attempt) leaves the message for redelivery."""
    c = bootstrap.container()
    for record in event:
        run_case.handle_task(
            c,
            record.body,
            receive_count=_receive_count(record),
            receipt_handle=record.receipt_handle,
            message_id=_message_id(record),
        )


@bp.on_sqs_message(queue=names.CASE_TASKS_DLQ, batch_size=1)
def handle_dead_case(event):
    """A case task that failed `maxReceiveCount` times: recorded `incomplete`, its slot passed
    on."""
    c = bootstrap.container()
    for record in event:
        run_case.handle_dead_task(
            c, record.body, receive_count=_receive_count(record), message_id=_message_id(record)
        )


@bp.on_sqs_message(queue=names.AGENT_EVENTS_QUEUE, batch_size=1)
def handle_agent_event(event):
    """Publish-pipeline events. A malformed one goes straight to the DLQ with its reason."""
    c = bootstrap.container()
    for record in event:
        try:
            agent_events.handle(c, record.body)
        except agent_events.MalformedEventError as exc:
            log.warning("agent event moved to %s: %s", names.AGENT_EVENTS_DLQ, exc)
            c.agent_events_dlq.send_text(record.body, {"reason": str(exc)[:1000]})


@bp.schedule("rate(1 minute)")
def sweep_runs(event):
    """Fail abandoned runs, free their slots, and hand free slots to waiting runs."""
    report = sweep.sweep(bootstrap.container())
    if report.failed or report.released or report.finalized or report.resent:
        log.info("sweep: %s", json.dumps(report.__dict__))


@bp.schedule("rate(1 minute)")
def suite_tick(event):
    """Fire due suite schedules (in their time zones) and start due waiting triggers."""
    report = suites.tick(bootstrap.container())
    if any(report.values()):
        log.info("suite tick: %s", json.dumps(report))
