"""Slots on fakes (docs/architecture/exactly-once.md, docs/architecture/slots.md): a slot is a case
task in flight; recording a case passes its slot to the run's next task, else back to the
organization, whose waiting runs take it."""

from __future__ import annotations

from collections.abc import Iterator
from types import SimpleNamespace

import pytest

from chalicelib.domain.enums import AttemptState, RunStatus
from chalicelib.domain.events import Event, SlotReleased
from chalicelib.domain.run_rules import Task
from chalicelib.services import event_handlers, run_case, slots
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run

PASSED = run_case.AttemptResult(
    AttemptState.PASSED, answer="4", cost_micros=20, input_tokens=7, output_tokens=3
)


def no_pause() -> None:
    return None


def _org(c: FakeContainer, limit: int) -> None:
    c.orgs.ensure("acme", concurrency_limit=limit, now_iso="2026-12-01T08:00:00.000Z")


def _started(c: FakeContainer, run_id: str, **fields: object) -> None:
    """A run written and put in its organization's line, as a start does."""
    c.runs.create(a_run(run_id, **fields))  # type: ignore[arg-type]
    slots.enqueue_run(c, c.runs.get_for_org("acme", run_id))  # type: ignore[arg-type]


def _sent(c: FakeContainer) -> list[tuple[str, str]]:
    return [(m["run_id"], m["case_id"]) for m in c.case_queue.sent]


@pytest.fixture
def wired() -> Iterator[None]:
    event_handlers.wire()
    yield


def test_a_recorded_attempt_passes_its_slot_to_the_next_task(
    c: FakeContainer, events: list[Event]
) -> None:
    _org(c, 6)
    _started(c, "r1", cases=3, limit=1)
    assert _sent(c) == [("r1", "c1")]
    assert run_case.record(
        c, c.runs.get_for_org("acme", "r1"), Task("candidate", "c1", 1), 0, PASSED, pause=no_pause
    )
    run = c.runs.get_for_org("acme", "r1")
    assert (run.status, run.next_index, run.slots, run.recorded, run.passed, run.cost_micros) == (
        "running",
        2,
        1,
        1,
        1,
        20,
    )
    assert c.orgs.get("acme").in_flight == 1  # the slot moved on: none was freed or taken
    assert _sent(c) == [("r1", "c1"), ("r1", "c2")]
    assert c.runs.get_attempt("acme", "r1", "candidate#c1#001").successor == {
        "org_id": "acme",
        "run_id": "r1",
        "arm_id": "candidate",
        "case_id": "c2",
        "attempt": 1,
        "index": 1,
    }
    assert events == []  # nothing released


def test_a_redelivered_task_counts_once_and_sends_its_successor_again(
    c: FakeContainer, events: list[Event]
) -> None:
    _org(c, 6)
    _started(c, "r1", cases=3, limit=1)
    run = c.runs.get_for_org("acme", "r1")
    assert run_case.record(c, run, Task("candidate", "c1", 1), 0, PASSED, pause=no_pause)
    assert not run_case.record(
        c, c.runs.get_for_org("acme", "r1"), Task("candidate", "c1", 1), 0, PASSED, pause=no_pause
    )
    run = c.runs.get_for_org("acme", "r1")
    assert (run.recorded, run.passed, run.next_index) == (1, 1, 2)
    # The successor c2 was never recorded: its message may have been lost, so it goes again.
    assert _sent(c) == [("r1", "c1"), ("r1", "c2"), ("r1", "c2")]


def test_a_run_waiting_for_a_slot_gets_the_one_released(c: FakeContainer, wired: None) -> None:
    c.datasets = SimpleNamespace(get_case=lambda *_: {"tags": []}, cases=lambda *_: [])
    _org(c, 1)
    _started(c, "rA", cases=2, limit=2, created_at="2026-12-01T08:00:00.000Z")
    _started(c, "rB", cases=2, created_at="2026-12-01T08:00:01.000Z")
    assert _sent(c) == [("rA", "c1")]  # the organization's one slot
    assert c.runs.get_for_org("acme", "rB").status == RunStatus.QUEUED
    assert c.orgs.get("acme").waiting == ["rA", "rB"]
    # rA's first case has no task left in its lane (rA has two): its slot goes back, and rA, first
    # in line, takes it for its second case, which then has nothing to pass it to.
    run_case.record(
        c, c.runs.get_for_org("acme", "rA"), Task("candidate", "c1", 1), 0, PASSED, pause=no_pause
    )
    run_case.record(
        c, c.runs.get_for_org("acme", "rA"), Task("candidate", "c2", 1), 1, PASSED, pause=no_pause
    )
    a, b = c.runs.get_for_org("acme", "rA"), c.runs.get_for_org("acme", "rB")
    assert (a.status, a.slots, a.recorded) == ("completed", 0, 2)
    assert (b.status, b.slots, b.next_index) == ("running", 1, 1)
    assert _sent(c) == [("rA", "c1"), ("rA", "c2"), ("rB", "c1")]
    assert c.orgs.get("acme").in_flight == 1
    assert c.orgs.get("acme").waiting == ["rB"]  # rB has a case left to start


def test_the_organization_limit_holds_across_its_runs(
    c: FakeContainer, events: list[Event]
) -> None:
    _org(c, 2)
    _started(c, "rX", cases=5, limit=3)
    _started(c, "rY", cases=5, limit=3)
    x, y = c.runs.get_for_org("acme", "rX"), c.runs.get_for_org("acme", "rY")
    assert (x.slots, y.slots, c.orgs.get("acme").in_flight) == (2, 0, 2)
    assert (x.status, y.status) == ("running", "queued")
    assert slots.assign_free_slots(c, "acme", pause=no_pause) == 0  # the tick finds nothing free
    run_case.record(c, x, Task("candidate", "c1", 1), 0, PASSED, pause=no_pause)
    assert c.orgs.get("acme").in_flight == 2  # passed within rX, not to rY
    assert c.runs.get_for_org("acme", "rY").slots == 0
    c.orgs.set_limit("acme", 3)
    assert slots.assign_free_slots(c, "acme", pause=no_pause) == 1  # rX holds 2 of its 3: one more
    assert (c.runs.get_for_org("acme", "rX").slots, c.orgs.get("acme").in_flight) == (3, 3)
    assert c.orgs.get("acme").waiting == ["rY"]  # rX at its own limit left the line


def test_a_claim_lost_to_another_worker_is_decided_again_on_what_it_left(c: FakeContainer) -> None:
    _org(c, 3)
    c.runs.create(a_run("r1", cases=5, limit=3))
    c.orgs.add_waiting("acme", "r1", 0)
    # Between this caller's read and its claim of 3 tasks, another takes one of them.
    c.runs.meanwhile.append(
        lambda: c.runs.claim_tasks(c.runs.get_for_org("acme", "r1"), [0], "acme", 3, 1, "t")
    )
    assert slots.assign_free_slots(c, "acme", pause=no_pause) == 2
    run = c.runs.get_for_org("acme", "r1")
    assert (run.next_index, run.slots, c.orgs.get("acme").in_flight) == (3, 3, 3)
    assert _sent(c) == [("r1", "c2"), ("r1", "c3")]  # task 0 is the other worker's to send


def test_a_recording_never_loses_its_claim_to_another_slot_of_the_run(
    c: FakeContainer, events: list[Event]
) -> None:
    _org(c, 6)
    _started(c, "r1", cases=4, limit=2)
    assert _sent(c) == [("r1", "c1"), ("r1", "c2")]
    first_read = c.runs.get_for_org("acme", "r1")
    # c2's worker records first: it starts c4, the next task of its own lane, so c1's write,
    # decided on a read from before, still holds and starts c3 at the first try.
    c.runs.meanwhile.append(
        lambda: run_case.record(
            c,
            c.runs.get_for_org("acme", "r1"),
            Task("candidate", "c2", 1),
            1,
            PASSED,
            pause=no_pause,
        )
    )
    refreshes: list[str] = []
    real_refresh = c.runs.refresh
    c.runs.refresh = lambda run: refreshes.append(run.run_id) or real_refresh(run)  # type: ignore[method-assign]
    assert run_case.record(c, first_read, Task("candidate", "c1", 1), 0, PASSED, pause=no_pause)
    assert refreshes == []  # no conflict: the run was never read again
    run = c.runs.get_for_org("acme", "r1")
    assert (run.recorded, run.next_index, run.slots) == (2, 4, 2)
    assert _sent(c) == [("r1", "c1"), ("r1", "c2"), ("r1", "c4"), ("r1", "c3")]
    assert c.runs.get_attempt("acme", "r1", "candidate#c1#001").successor["case_id"] == "c3"
    assert c.runs.get_attempt("acme", "r1", "candidate#c2#001").successor["case_id"] == "c4"


def test_a_task_recorded_after_the_last_claim_gives_its_slot_back(
    c: FakeContainer, events: list[Event]
) -> None:
    _org(c, 6)
    _started(c, "r1", cases=1)
    run_case.record(
        c, c.runs.get_for_org("acme", "r1"), Task("candidate", "c1", 1), 0, PASSED, pause=no_pause
    )
    assert (c.runs.get_for_org("acme", "r1").slots, c.orgs.get("acme").in_flight) == (0, 0)
    assert events == [SlotReleased("acme", "r1")]
