"""Agent events and schedule handlers (the case worker is `cases`). `batch_size=1`: Chalice
cannot report partial batch failures.

Each function is a Lambda whose entry point is this module (`chalicelib.startup` says why):
importing it starts the worker.
"""

from __future__ import annotations

import json
import logging

from chalice import Blueprint

from chalicelib import bootstrap, names
from chalicelib.services import agent_events, suites, sweep
from chalicelib.startup import start

start()

log = logging.getLogger(__name__)

bp = Blueprint(__name__)


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
