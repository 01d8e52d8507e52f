"""The message bus: a use case tells the others what happened by publishing an event
(`chalicelib.domain.events`); the handlers listed in `services.handlers` act on it.

The publisher imports this module and the event, never the services that listen: that keeps the
service modules a graph, not a ring (issue 10). Dispatch is synchronous and in order (the
cosmicpython message bus, without its queue): a handler's exception reaches the publisher, which
decides whether its own work stands regardless.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chalicelib.domain.events import Event

Handler = Callable[[Any, Any], None]
"""`handler(container, event)`."""

_handlers: dict[type[Event], tuple[Handler, ...]] = {}


def wire(handlers: Mapping[type[Event], Sequence[Handler]]) -> None:
    """Install the handlers of every event type (replacing any before; idempotent)."""
    _handlers.clear()
    _handlers.update({kind: tuple(listed) for kind, listed in handlers.items()})


def publish(c: Any, event: Event) -> None:
    """Run every handler of `type(event)`, in order.

    Raises:
        LookupError: no handler is wired for the event's type (`services.handlers.wire()` was never
            called in this process): an event nobody hears would be work silently not done.
        Exception: whatever a handler raises.
    """
    listed = _handlers.get(type(event))
    if not listed:
        raise LookupError(
            f"no handler is wired for {type(event).__name__}: call "
            "chalicelib.services.event_handlers.wire()"
        )
    for handler in listed:
        handler(c, event)
