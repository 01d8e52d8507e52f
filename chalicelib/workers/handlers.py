"""Agent events and schedule handlers (the case worker is `cases`). `batch_size=1`: Chalice
cannot report partial batch failures.

Each function is a Lambda whose entry point is this module (`chalicelib.startup` says why):
importing it starts the worker.
"""

from __future__ import annotations

import json
import logging

from chalice import Blueprint

from chalicelib import bootstrap, telemetry
from chalicelib.config import get_settings
from chalicelib.services import agent_events, suites, sweep
from chalicelib.services.ports.telemetry import Metric
from chalicelib.startup import start

start()
NAMES = get_settings().names
"""The stack's queues, as the settings name them when the function starts (`workers.cases`)."""

log = logging.getLogger(__name__)

bp = Blueprint(__name__)


@bp.on_sqs_message(queue=NAMES.agent_events_queue, batch_size=1)
def handle_agent_event(event):
    """Publish-pipeline events. A malformed one goes straight to the DLQ with its reason."""
    c = bootstrap.container()
    with telemetry.invocation(c.settings, event.context, metrics=c.metrics):
        for record in event:
            message_id = (record.to_dict() or {}).get("messageId")
            with telemetry.keys(correlation_id=message_id):
                try:
                    agent_events.handle(c, record.body)
                except agent_events.MalformedEventError as exc:
                    log.warning("agent event moved to %s: %s", NAMES.agent_events_dlq, exc)
                    c.agent_events_dlq.send_text(record.body, {"reason": str(exc)[:1000]})
                    c.metrics.add(Metric.DEAD_LETTERS, queue="agent-events", cause="refused")


@bp.schedule("rate(1 minute)")
def sweep_runs(event):
    """Fail abandoned runs, free their slots, and hand free slots to waiting runs."""
    c = bootstrap.container()
    with telemetry.invocation(c.settings, event.context, metrics=c.metrics):
        report = sweep.sweep(c)
        if report.failed or report.released or report.finalized or report.resent:
            log.info("sweep: %s", json.dumps(report.__dict__))


@bp.schedule("rate(1 minute)")
def suite_tick(event):
    """Fire due suite schedules (in their time zones) and start due waiting triggers."""
    c = bootstrap.container()
    with telemetry.invocation(c.settings, event.context, metrics=c.metrics):
        report = suites.tick(c)
        if any(report.values()):
            log.info("suite tick: %s", json.dumps(report))
