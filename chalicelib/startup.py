"""What every Lambda function of assay does as it starts, and why it imports so little (issue 12).

Which module a function imports as it starts is Chalice's doing: the API function's handler is
`app.app`, so it imports `app.py`; an event handler on a blueprint gets the handler string
`<blueprint module>.<function>` (`chalicelib.workers.cases.handle_case_task`), so its function
imports that module and never `app.py` (aws/chalice#1566). `chalice package` and `chalice deploy`
import `app.py`, which registers every blueprint, so the deployment still holds every route and
every handler. Hence:

- `start()` runs in each entry module (`app.py` and every worker module) as it is imported: the
  deployed-stage check and the message bus are each entry's own, as nothing else would do them in
  that process (before issue 12 a worker function never checked the stage nor wired its bus);
- the bus's table is wired at the first publish (`messagebus.wire_on_first_publish`): it names
  every listener, so importing it imports most services, and most requests and deliveries
  publish nothing;
- the worker modules are split by what their functions need (`workers.cases`: the case-tasks
  queue and its DLQ; `workers.handlers`: agent events and the schedules), so the case worker
  imports the case's services and not the suites, the routes or their schemas;
- the API function registers the routes only: `app.py` leaves the worker blueprints out when
  Lambda says (`_HANDLER`, a variable Lambda sets to the function's handler string) that this
  process is the API function, and the routes import each service and view on the first request
  that needs it (`chalicelib.api.lazy`);
- libraries that cost a start tens of milliseconds each (jsonschema, regex, croniter, scipy,
  httpx, PyJWT and cryptography, boto3, PynamoDB) are imported where first used, and the settings
  are read without pydantic-settings (`chalicelib.config`).

`tests/unit/test_cold_start.py` checks what each function imports; `bench/coldimport.py` times it.
"""

from __future__ import annotations

from collections.abc import Mapping

from chalicelib import bootstrap
from chalicelib.services import messagebus


def _event_handlers() -> messagebus.Table:
    from chalicelib.services import event_handlers  # the listeners: imported on the first event

    return event_handlers.EVENT_HANDLERS


def start() -> None:
    """A Lambda function's start: refuse an unsafe deployed stage (`bootstrap.check_deployment`),
    and have the first published event wire the bus (`services.event_handlers`); idempotent.

    Raises:
        ConfigurationError: a deployed stage that is not safe to run, naming each setting at fault.
    """
    bootstrap.check_deployment()
    messagebus.wire_on_first_publish(_event_handlers)


API_HANDLER = "app.app"
"""The API function's handler string (Chalice's, whatever the deployment)."""


def serves_only_the_api(environ: Mapping[str, str]) -> bool:
    """Whether this process is the deployed API function: Lambda sets `_HANDLER` to the function's
    handler string. `chalice package`, `chalice deploy`, tests and the embedded stack set none."""
    return environ.get("_HANDLER") == API_HANDLER
