"""What a function says about its work (issue 13 scope 6): structured logs and the request id.

Logs: every module logs through the standard library (`logging.getLogger(__name__)`), as before. A
deployed stage (`Settings.log_format` `json`) gives the `chalicelib` logger a stdout handler with
the JSON formatter of Powertools' `Logger` (`LambdaPowertoolsFormatter`; service `assay`; level
`POWERTOOLS_LOG_LEVEL`, else Lambda's own `AWS_LAMBDA_LOG_LEVEL`, else `INFO`: Lambda's root
logger dropped every `info` line), so each line is one JSON object. Besides Powertools' fields
(`level`, `location`, `message`, `timestamp`, `service`, `exception`...), a line carries the keys
bound for the work at hand:

- `correlation_id`: the request id on the API (API Gateway's, `X-Request-Id`), the SQS message id
  on a queue worker;
- `function_request_id` and `cold_start`: Lambda's invocation id and whether it started the
  process;
- `org_id`, `run_id`, `arm_id`, `case_id`, `attempt` on the case worker's lines
  (`services.run_case` binds them per task).

Keys live in a context variable (`bind`), so the embedded stack's concurrent threads never mix
them; each invocation starts from none (`invocation`). Elsewhere (`text`: the CLI, the demo, the
tests) the process's logging is left as it is, so `assay dev` and `make demo` print what they did.

Powertools is imported at the first invocation of a deployed function, not as its module is
imported: its ~15 ms would count against the cold-import goals (issue 12, `bench.coldimport`).
Its `Logger` object itself is not used: it would take the logger named `assay`, which is Chalice's
app logger (with Chalice's text handler), and filter the root handlers.
"""

from __future__ import annotations

import logging
import sys
import threading
import uuid
from collections.abc import Iterator, Mapping
from contextlib import contextmanager
from contextvars import ContextVar
from types import MappingProxyType
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from chalicelib.config import Settings

SERVICE = "assay"
"""The `service` field of every line and the `service` dimension of every metric."""
REQUEST_ID_HEADER = "X-Request-Id"
"""The response header that carries the request id on every answer of the API (the error bodies
carry it too, as `error.request_id`)."""

_KEYS: ContextVar[Mapping[str, Any]] = ContextVar(
    "assay_log_keys",
    default=MappingProxyType({}),  # read-only: each change sets a new mapping
)
_configured_lock = threading.Lock()
_configured = False
_started = False


def bind(**keys: Any) -> None:
    """Add `keys` to every log line of the current context from now on (None removes a key)."""
    merged = {**_KEYS.get(), **keys}
    _KEYS.set({k: v for k, v in merged.items() if v is not None})


def bound() -> Mapping[str, Any]:
    """The keys bound in the current context."""
    return _KEYS.get()


@contextmanager
def keys(**extra: Any) -> Iterator[None]:
    """Bind `extra` for the block only."""
    token = _KEYS.set({**_KEYS.get(), **{k: v for k, v in extra.items() if v is not None}})
    try:
        yield
    finally:
        _KEYS.reset(token)


class ContextKeys(logging.Filter):
    """Copies the bound keys onto each record (Powertools' formatter prints a record's extra
    attributes as JSON fields); a key the call passed itself (`extra=`) wins."""

    def filter(self, record: logging.LogRecord) -> bool:
        for key, value in _KEYS.get().items():
            if not hasattr(record, key):
                setattr(record, key, value)
        return True


_saved: tuple[list[logging.Handler], int, bool] | None = None


def log_level(settings: Settings) -> str:
    """The level of the JSON lines: `POWERTOOLS_LOG_LEVEL`, else Lambda's `AWS_LAMBDA_LOG_LEVEL`,
    else `INFO` (as Powertools' `Logger` chooses)."""
    chosen = settings.powertools_log_level or settings.aws_lambda_log_level or "INFO"
    return chosen.upper() if chosen.upper() in logging.getLevelNamesMapping() else "INFO"


def configure_logging(settings: Settings, stream: Any = None) -> bool:
    """Give the `chalicelib` logger a JSON handler (Powertools' formatter) when
    `settings.log_format` is `json` (once per process; `stream` default stdout); returns whether
    it is so configured."""
    global _configured, _saved
    if settings.log_format != "json":
        return False
    with _configured_lock:
        if _configured:
            return True
        from aws_lambda_powertools.logging.formatter import LambdaPowertoolsFormatter

        handler = logging.StreamHandler(stream if stream is not None else sys.stdout)
        handler.setFormatter(LambdaPowertoolsFormatter(service=SERVICE, utc=True, use_rfc3339=True))
        handler.addFilter(ContextKeys())
        target = logging.getLogger("chalicelib")
        _saved = (list(target.handlers), target.level, target.propagate)
        target.handlers = [handler]
        target.setLevel(log_level(settings))
        target.propagate = False  # Lambda's root handler would print each line again, as text
        _configured = True
        return True


def reset_logging() -> None:
    """Undo `configure_logging` (tests: a process that is no Lambda goes on logging as before)."""
    global _configured, _saved
    with _configured_lock:
        if _saved is not None:
            target = logging.getLogger("chalicelib")
            target.handlers, level, target.propagate = _saved
            target.setLevel(level)
        _configured, _saved = False, None


def new_request_id() -> str:
    """A request id where no gateway gave one (the embedded stack's gateway, tests)."""
    return str(uuid.uuid4())


@contextmanager
def invocation(
    settings: Settings,
    lambda_context: Any = None,
    *,
    metrics: Any = None,
    **keys_: Any,
) -> Iterator[None]:
    """One invocation of a function (a request, a delivery, a schedule's tick): logging set up,
    the bound keys replaced by `keys_` and Lambda's invocation id, and the metrics counted meanwhile
    flushed at the end (`metrics.flush()`), whatever happens.

    Args:
        settings: the process's settings (`configure_logging`).
        lambda_context: Lambda's context object, if any (`aws_request_id`).
        metrics: the container's metrics (`services.ports.telemetry.Metrics`), or None.
        keys_: e.g. `correlation_id=...`.
    """
    global _started
    configure_logging(settings)
    cold = not _started
    _started = True
    fresh = {
        "function_request_id": getattr(lambda_context, "aws_request_id", None),
        "cold_start": cold if settings.deployed else None,
        **keys_,
    }
    token = _KEYS.set({k: v for k, v in fresh.items() if v is not None})
    try:
        yield
    finally:
        _KEYS.reset(token)
        if metrics is not None:
            try:
                metrics.flush()
            except Exception:  # noqa: BLE001 - lost figures never fail the work they describe
                logging.getLogger(__name__).warning("metrics could not be flushed", exc_info=True)
