"""A case task dead-lettered on assay's own error ends its run `failed` at once on the fakes
(docs/architecture/run-lifecycle.md, "A run its worker cannot finish"): its running cases failed,
the rest never started, its slots freed, the error named and redacted; exactly once."""

from __future__ import annotations

import json
from types import SimpleNamespace
from typing import Any

import pytest

from chalicelib.domain import events as domain_events
from chalicelib.domain.enums import AttemptState, RunStatus
from chalicelib.domain.events import CaseTaskDead, Event
from chalicelib.services import messagebus, run_case, slots, sweep
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run

SECRET = "sk-live-0123456789abcdefghij"


@pytest.fixture
def c(monkeypatch: pytest.MonkeyPatch, events: list[Event]) -> FakeContainer:
    """The fake container, organization `acme` with one stored secret, every case answered."""
    c = FakeContainer()
    c.orgs.ensure("acme", concurrency_limit=6, now_iso="2026-12-01T08:00:00.000Z")
    c.secrets.kept[("acme", "provider-key")] = SECRET
    c.datasets = SimpleNamespace(  # type: ignore[assignment]
        get_case=lambda _o, _d, _v, case_id: {"case_id": case_id, "input": "q"}
    )

    def ask_and_grade(*_: Any, **__: Any) -> run_case.AttemptResult:
        return run_case.AttemptResult(AttemptState.PASSED, answer="4")

    monkeypatch.setattr(run_case, "ask_and_grade", ask_and_grade)
    # Events are caught (`events`), but a dead task's is handled as wired: the run fails.
    caught = {kind: [lambda _c, event: events.append(event)] for kind in _event_kinds()}
    messagebus.wire({**caught, CaseTaskDead: [sweep.on_case_task_dead]})
    return c


def _event_kinds() -> list[type[Event]]:
    return [
        k
        for k in vars(domain_events).values()
        if isinstance(k, type) and issubclass(k, Event) and k is not Event
    ]


def _start(c: FakeContainer, cases: int, limit: int) -> list[str]:
    """Start run r-dead (an id no other test's run has: a process remembers a run's agent); the
    bodies of the case-task messages its slots sent."""
    c.runs.create(a_run("r-dead", cases=cases, limit=limit))
    slots.enqueue_run(c, c.runs.get_for_org("acme", "r-dead"))
    return [json.dumps(m) for m in c.case_queue.sent]


def _states(c: FakeContainer) -> dict[str, tuple[str, str | None]]:
    return {a.case_id: (a.state, a.reason) for a in c.runs.attempts("acme", "r-dead")}


def test_a_dead_task_fails_its_run_at_once_with_the_error_named_and_redacted(
    c: FakeContainer,
) -> None:
    first, second = _start(c, cases=4, limit=2)
    run_case.handle_dead_task(
        c, first, receive_count=5, message_id="m1", error=f"boom with key {SECRET} in it"
    )
    run = c.runs.get_for_org("acme", "r-dead")
    assert run.status == RunStatus.FAILED
    assert run.reason is not None and run.reason.startswith("stopped on an error (boom with key ")
    assert SECRET not in run.reason and "start the run again" in run.reason
    assert run.slots == 0 and c.orgs.get("acme").in_flight == 0
    # Both running cases failed; the two never started stay without an attempt.
    states = _states(c)
    assert len(states) == 2, states
    assert all(s == AttemptState.FAILED.value for s, _ in states.values()), states
    assert all(r and "stopped on an error" in r for _, r in states.values()), states
    # The other running case's message, delivered later, asks nobody and changes nothing.
    run_case.handle_task(c, second, message_id="m2")
    again = c.runs.get_for_org("acme", "r-dead")
    assert (again.status, again.reason, again.slots) == (run.status, run.reason, 0)
    assert c.orgs.get("acme").in_flight == 0


def test_a_dead_task_without_a_reason_names_the_worker_s_failure(c: FakeContainer) -> None:
    first, _ = _start(c, cases=3, limit=2)
    run_case.handle_dead_task(c, first, message_id="m1")
    run = c.runs.get_for_org("acme", "r-dead")
    assert run.status == RunStatus.FAILED
    assert run.reason == sweep.error_reason(sweep.WORKER_ERROR)


def test_a_dead_copy_of_a_recorded_task_does_not_fail_its_run(c: FakeContainer) -> None:
    (first,) = _start(c, cases=3, limit=1)
    run_case.handle_task(c, first, message_id="m1")
    run_case.handle_dead_task(c, first, message_id="m1-dead", error="boom")
    run = c.runs.get_for_org("acme", "r-dead")
    assert run.status == RunStatus.RUNNING and run.reason is None
    assert {s for s, _ in _states(c).values()} == {AttemptState.PASSED.value}


def test_a_dead_task_of_a_run_that_ended_leaves_it_as_it_ended_and_gives_its_slot_back(
    c: FakeContainer,
) -> None:
    first, _ = _start(c, cases=3, limit=2)
    run = c.runs.get_for_org("acme", "r-dead")
    assert c.runs.end(run, RunStatus.CANCELLED, "cancelled by a test", "2026-12-01T08:01:00.000Z")
    before = c.runs.get_for_org("acme", "r-dead")
    run_case.handle_dead_task(c, first, message_id="m1", error="boom")
    after = c.runs.get_for_org("acme", "r-dead")
    assert (after.status, after.reason) == (RunStatus.CANCELLED, "cancelled by a test")
    assert after.slots == before.slots - 1  # its slot went back with the recording
    assert {s for s, _ in _states(c).values()} == {AttemptState.INCOMPLETE.value}
