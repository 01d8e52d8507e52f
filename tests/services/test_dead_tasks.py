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
from chalicelib.domain.run_rules import attempt_key
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


# --- failures of assay's own counted per attempt (`run_case._failed_on_error`) ---------------

KEY = "AKIAIOSFODNN7EXAMPLE"


def _breaking(c: FakeContainer, case_id: str, error: Exception) -> list[int]:
    """Make the datasets store raise `error` on `case_id` (every other case read as before);
    the list counts the reads that raised."""
    raised: list[int] = []
    real = c.datasets.get_case

    def get_case(org_id: str, dataset_id: str, version: int, cid: str) -> Any:
        if cid == case_id:
            raised.append(1)
            raise error
        return real(org_id, dataset_id, version, cid)

    c.datasets = SimpleNamespace(get_case=get_case)  # type: ignore[assignment]  # a stand-in store with the one method used
    return raised


def _lease(c: FakeContainer, case_id: str) -> Any:
    run = c.runs.get_for_org("acme", "r-dead")
    return c.runs.lease_of(run, attempt_key("candidate", case_id, 1))


def _tries(c: FakeContainer, tries: int) -> None:
    c.settings = c.settings.model_copy(update={"eval_case_error_tries": tries})


def test_an_attempt_failing_on_assay_s_own_error_ends_its_run_at_the_third_failure(
    c: FakeContainer,
) -> None:
    """`EVAL_CASE_ERROR_TRIES` (3): the first two failures are delivered again soon, the third
    ends the run `failed` at once naming the error, redacted, and the message is done with."""
    first, second = _start(c, cases=4, limit=2)
    _breaking(c, "c1", RuntimeError(f"the datasets table said no ({KEY}, {SECRET})"))
    for n in (1, 2):
        with pytest.raises(RuntimeError):
            run_case.handle_task(c, first, message_id="m1", receipt_handle=f"rh{n}")
        lease = _lease(c, "c1")
        assert (lease.failures, lease.until_ms) == (n, 0), "counted, and the claim let go"
        assert c.runs.get_for_org("acme", "r-dead").status == RunStatus.RUNNING
    # Delivered again within a minute or two, not after the queue's visibility timeout.
    assert c.case_queue.visibility == [("rh1", 30), ("rh2", 60)]
    run_case.handle_task(c, first, message_id="m1", receipt_handle="rh3")  # does not raise
    run = c.runs.get_for_org("acme", "r-dead")
    assert run.status == RunStatus.FAILED
    assert run.reason == sweep.error_reason(
        "RuntimeError: the datasets table said no ([REDACTED:aws_access_key], [REDACTED:secret])"
    ), run.reason
    assert KEY not in run.reason and SECRET not in run.reason
    assert _lease(c, "c1").last_error is not None and KEY not in _lease(c, "c1").last_error
    assert run.slots == 0 and c.orgs.get("acme").in_flight == 0
    stopped = "the run stopped on an error while this case ran"
    assert _states(c) == {
        "c1": (AttemptState.FAILED.value, stopped),
        "c2": (AttemptState.FAILED.value, stopped),
    }, "the running cases failed, the rest never start"
    # The other running case's message, and the broken one's again, change nothing.
    run_case.handle_task(c, second, message_id="m2")
    run_case.handle_task(c, first, message_id="m1")
    assert c.runs.get_for_org("acme", "r-dead").reason == run.reason
    assert len(_states(c)) == 2 and c.orgs.get("acme").in_flight == 0
    # However long it then stands still, the sweep sends none of its tasks again.
    sent = len(c.case_queue.sent)
    c.clock.advance(minutes=30)
    report = sweep.sweep(c)
    assert "r-dead" not in report.resent and len(c.case_queue.sent) == sent
    assert sweep.resend_unclaimed(c, run, take_over=True) == 0


@pytest.mark.parametrize("tries", [1, 5])
def test_eval_case_error_tries_is_how_many_failures_of_an_attempt_end_its_run(
    c: FakeContainer, tries: int
) -> None:
    _tries(c, tries)
    first, _ = _start(c, cases=3, limit=2)
    raised = _breaking(c, "c1", OSError("the queue is unreachable"))
    for _ in range(tries - 1):
        with pytest.raises(OSError):
            run_case.handle_task(c, first, message_id="m1")
        assert c.runs.get_for_org("acme", "r-dead").status == RunStatus.RUNNING
    run_case.handle_task(c, first, message_id="m1")
    run = c.runs.get_for_org("acme", "r-dead")
    assert len(raised) == tries
    assert run.status == RunStatus.FAILED
    assert run.reason == sweep.error_reason("OSError: the queue is unreachable")


def test_the_count_is_the_attempt_s_so_copies_sent_as_new_messages_count_on_it(
    c: FakeContainer,
) -> None:
    """The sweep sends a task again as a new message (its receive count starts over): each
    delivery of any copy counts on the attempt."""
    first, _ = _start(c, cases=3, limit=2)
    _breaking(c, "c1", RuntimeError("boom"))
    for message_id in ("m1", "m1-copy"):
        with pytest.raises(RuntimeError):
            run_case.handle_task(c, first, message_id=message_id)
    assert _lease(c, "c1").failures == 2
    run_case.handle_task(c, first, message_id="m1-copy-2")
    assert c.runs.get_for_org("acme", "r-dead").status == RunStatus.FAILED


def test_a_throttled_request_that_succeeds_on_redelivery_does_not_fail_the_run(
    c: FakeContainer,
) -> None:
    first, _ = _start(c, cases=3, limit=2)
    real = c.datasets.get_case
    raised = _breaking(c, "c1", RuntimeError("ThrottlingException: Rate exceeded"))
    with pytest.raises(RuntimeError):
        run_case.handle_task(c, first, message_id="m1")
    c.datasets = SimpleNamespace(get_case=real)  # type: ignore[assignment]  # the real store put back
    run_case.handle_task(c, first, message_id="m1")
    run = c.runs.get_for_org("acme", "r-dead")
    assert (len(raised), run.status, run.reason) == (1, RunStatus.RUNNING, None)
    assert _states(c)["c1"][0] == AttemptState.PASSED.value
    assert _lease(c, "c1").done and _lease(c, "c1").failures == 1


def test_an_expected_outcome_is_no_failure_and_counts_nothing(
    c: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """`LeaseHeld` (a task this delivery carried on with is still held) only lets the claim
    go: it is raised for SQS to deliver again, and never fails a run however often."""
    _tries(c, 1)
    first, _ = _start(c, cases=3, limit=2)

    def held(*_: Any, **__: Any) -> Any:
        raise run_case.LeaseHeld(attempt_key("candidate", "c1", 1), 5)

    monkeypatch.setattr(run_case, "_answer", held)
    for _ in range(3):
        with pytest.raises(run_case.LeaseHeld):
            run_case.handle_task(c, first, message_id="m1")
    assert _lease(c, "c1").failures == 0 and _lease(c, "c1").until_ms == 0
    assert c.runs.get_for_org("acme", "r-dead").status == RunStatus.RUNNING


def test_a_failure_that_cannot_be_counted_is_raised_as_it_was(
    c: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The lease table unreachable too: the delivery's own error is raised (SQS delivers it
    again; the dead-letter queue and the sweep are the fallbacks), never the store's."""
    _tries(c, 1)
    first, _ = _start(c, cases=3, limit=2)
    _breaking(c, "c1", RuntimeError("the datasets table is unreachable"))

    def unreachable(*_: Any) -> Any:
        raise ConnectionError("the lease table is unreachable")

    monkeypatch.setattr(c.runs, "fail_lease", unreachable)
    with pytest.raises(RuntimeError, match="datasets table"):
        run_case.handle_task(c, first, message_id="m1")
    assert c.runs.get_for_org("acme", "r-dead").status == RunStatus.RUNNING


def test_a_dead_task_names_the_last_error_its_deliveries_counted(c: FakeContainer) -> None:
    """A task dead-lettered before `EVAL_CASE_ERROR_TRIES` (its message carries no reason) is
    failed with the error its attempt's lease kept, not the generic text."""
    _tries(c, 10)
    first, _ = _start(c, cases=3, limit=2)
    _breaking(c, "c1", RuntimeError(f"boom {KEY}"))
    with pytest.raises(RuntimeError):
        run_case.handle_task(c, first, message_id="m1")
    run_case.handle_dead_task(c, first, receive_count=5, message_id="m1")
    run = c.runs.get_for_org("acme", "r-dead")
    assert run.status == RunStatus.FAILED
    assert run.reason == sweep.error_reason("RuntimeError: boom [REDACTED:aws_access_key]")
