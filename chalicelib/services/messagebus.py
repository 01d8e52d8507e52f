"""The message bus: a use case tells the others what happened by publishing an event
(`chalicelib.domain.events`); the handlers listed in `services.handlers` act on it.

The publisher imports this module and the event, never the services that listen: that keeps the
service modules a graph, not a ring (issue 10). Dispatch is synchronous and in order (the
cosmicpython message bus, without its queue): a handler's exception reaches the publisher, which
decides whether its own work stands regardless.

A Lambda wires the table at its first publish rather than as it starts (`wire_on_first_publish`,
`chalicelib.startup`): the table names every listener, so importing it imports most of the
services, which most requests and case attempts never use (issue 12).
"""

from __future__ import annotations

import threading
from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chalicelib.domain.events import Event

Handler = Callable[[Any, Any], None]
"""`handler(container, event)`."""

Table = Mapping[type[Event], Sequence[Handler]]
"""The handlers of each event type, in order."""

_handlers: dict[type[Event], tuple[Handler, ...]] = {}
_wired = False
_load_table: Callable[[], Table] | None = None
_lock = threading.Lock()


def wire(handlers: Table) -> None:
    """Install the handlers of every event type (replacing any before; idempotent)."""
    with _lock:
        _install(handlers)


def wire_on_first_publish(load_table: Callable[[], Table]) -> None:
    """Have the first `publish` wire `load_table()`, unless `wire` has been called by then (the
    table wired first stays)."""
    global _load_table
    with _lock:
        if not _wired:
            _load_table = load_table


def _install(handlers: Table) -> None:
    global _wired, _load_table
    _handlers.clear()
    _handlers.update({kind: tuple(listed) for kind, listed in handlers.items()})
    _wired, _load_table = True, None


def _wire_if_pending() -> None:
    load = _load_table
    if load is None:
        return
    table = load()  # outside the lock: it imports the listeners' modules
    with _lock:
        if _load_table is load:
            _install(table)


def publish(c: Any, event: Event) -> None:
    """Run every handler of `type(event)`, in order.

    Raises:
        LookupError: no handler is wired for the event's type (`services.handlers.wire()` was never
            called in this process): an event nobody hears would be work silently not done.
        Exception: whatever a handler raises.
    """
    _wire_if_pending()
    listed = _handlers.get(type(event))
    if not listed:
        raise LookupError(
            f"no handler is wired for {type(event).__name__}: call "
            "chalicelib.services.event_handlers.wire()"
        )
    for handler in listed:
        handler(c, event)
