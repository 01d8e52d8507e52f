"""Unit tests of the services' rules on in-memory fakes (`tests/fakes`): no moto, no network."""

from __future__ import annotations

from collections.abc import Iterator

import pytest

from chalicelib.domain import events as domain_events
from chalicelib.domain.events import Event
from chalicelib.services import event_handlers, messagebus
from tests.fakes import FakeContainer


@pytest.fixture
def c() -> FakeContainer:
    return FakeContainer()


@pytest.fixture
def events() -> Iterator[list[Event]]:
    """Every event published during the test, in order, instead of the wired handlers; the real
    handlers are wired again afterwards."""
    seen: list[Event] = []
    kinds = [
        k
        for k in vars(domain_events).values()
        if isinstance(k, type) and issubclass(k, Event) and k is not Event
    ]
    messagebus.wire({kind: [lambda _c, event: seen.append(event)] for kind in kinds})
    try:
        yield seen
    finally:
        event_handlers.wire()
