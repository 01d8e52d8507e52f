"""SQS and schedule handlers (Chalice blueprints); each hands its event to one service.

How a worker Lambda starts (issue 12). Chalice gives a handler on a blueprint the handler string
`<blueprint module>.<function>` (`chalicelib.workers.cases.handle_case_task`; only the API
function's is `app.app`), so a worker Lambda imports its own module and never `app.py`
(aws/chalice#1566). Hence:

- each worker module is a Lambda entry point: it calls `start()` as it is imported, which does
  what `app.py` does for the API - refuse an unsafe deployed stage, make the message bus heard -
  since nothing else would in that process;
- the modules are split by what their functions need (`cases`: the case-tasks queue and its DLQ;
  `handlers`: agent events and the schedules), so the case worker imports the case's services
  and not the suites, the routes or their schemas;
- the bus's table is wired at the first publish rather than at start-up
  (`messagebus.wire_on_first_publish`): it names every listener, and most deliveries publish
  nothing.

`chalice package` and `chalice deploy` still see every handler: they import `app.py`, which
registers every blueprint.
"""

from __future__ import annotations

from chalicelib import bootstrap
from chalicelib.services import messagebus


def _event_handlers() -> messagebus.Table:
    from chalicelib.services import event_handlers  # the listeners: imported on the first event

    return event_handlers.EVENT_HANDLERS


def start() -> None:
    """A worker Lambda's start: refuse an unsafe deployed stage (`bootstrap.check_deployment`) and
    have the first published event wire the bus (`services.event_handlers`); idempotent.

    Raises:
        ConfigurationError: a deployed stage that is not safe to run, naming each setting at fault.
    """
    bootstrap.check_deployment()
    messagebus.wire_on_first_publish(_event_handlers)
