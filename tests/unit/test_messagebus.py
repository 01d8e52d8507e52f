"""The message bus (issue 10 scope 1): what one use case tells another, dispatched by one table."""

from __future__ import annotations

import dataclasses
import inspect
from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.domain import events
from chalicelib.domain.events import Event, RunEnded, SlotReleased
from chalicelib.services import event_handlers, messagebus


@pytest.fixture
def bus() -> Iterator[None]:
    """A test's own wiring, and the process's wiring back afterwards (the embedded stack shares
    it)."""
    yield
    event_handlers.wire()


def test_every_event_has_a_handler_in_the_table():
    kinds = {
        obj
        for _, obj in inspect.getmembers(events, inspect.isclass)
        if issubclass(obj, Event) and obj is not Event and obj.__module__ == events.__name__
    }
    assert kinds == set(event_handlers.EVENT_HANDLERS), kinds ^ set(event_handlers.EVENT_HANDLERS)
    assert all(event_handlers.EVENT_HANDLERS[kind] for kind in kinds)


def test_events_are_frozen_values_naming_their_organization():
    event = RunEnded("org_a", "run_1")
    assert event == RunEnded("org_a", "run_1") and event.org_id == "org_a"
    with pytest.raises(dataclasses.FrozenInstanceError):
        event.run_id = "run_2"  # type: ignore[misc]  # the point: it cannot change


def test_handlers_run_in_the_order_listed_with_the_container_and_the_event(bus):
    seen: list[tuple[str, Any, Event]] = []
    container = object()
    messagebus.wire(
        {
            SlotReleased: [
                lambda c, e: seen.append(("first", c, e)),
                lambda c, e: seen.append(("second", c, e)),
            ]
        }
    )
    event = SlotReleased("org_a", "run_1")
    messagebus.publish(container, event)
    assert seen == [("first", container, event), ("second", container, event)]


def test_an_event_nobody_handles_is_an_error_not_work_silently_dropped(bus):
    messagebus.wire({})
    with pytest.raises(LookupError, match="RunEnded"):
        messagebus.publish(object(), RunEnded("org_a", "run_1"))


def test_what_a_handler_raises_reaches_the_publisher_and_later_handlers_do_not_run(bus):
    later: list[Event] = []

    def broken(c: Any, e: Event) -> None:
        raise ValueError("handler failed")

    messagebus.wire({RunEnded: [broken, lambda c, e: later.append(e)]})
    with pytest.raises(ValueError, match="handler failed"):
        messagebus.publish(object(), RunEnded("org_a", "run_1"))
    assert later == []


def test_a_bus_wired_on_first_publish_loads_its_table_once_then_dispatches(bus, monkeypatch):
    monkeypatch.setattr(messagebus, "_wired", False)  # as a worker Lambda's bus starts
    loads: list[int] = []
    seen: list[Event] = []

    def load() -> messagebus.Table:
        loads.append(1)
        return {RunEnded: [lambda c, e: seen.append(e)]}

    messagebus.wire_on_first_publish(load)
    assert loads == []  # nothing is imported until an event is published
    first, second = RunEnded("org_a", "run_1"), RunEnded("org_a", "run_2")
    messagebus.publish(object(), first)
    messagebus.publish(object(), second)
    assert loads == [1] and seen == [first, second]


def test_a_table_wired_outright_wins_over_one_left_for_the_first_publish(bus, monkeypatch):
    monkeypatch.setattr(messagebus, "_wired", False)
    seen: list[str] = []
    messagebus.wire_on_first_publish(lambda: {RunEnded: [lambda c, e: seen.append("lazy")]})
    messagebus.wire({RunEnded: [lambda c, e: seen.append("wired")]})
    messagebus.wire_on_first_publish(lambda: {RunEnded: [lambda c, e: seen.append("late")]})
    messagebus.publish(object(), RunEnded("org_a", "run_1"))
    assert seen == ["wired"]
