"""A delivery carries on with its lane (issue 12) on the in-memory fakes: cancels, spent budgets,
twins of its message, failures and a worker killed between two cases of the lane."""

from __future__ import annotations

import json
import threading
from types import SimpleNamespace
from typing import Any

import pytest

from chalicelib.clock import epoch_ms
from chalicelib.domain.enums import AttemptState, RunStatus
from chalicelib.domain.events import Event
from chalicelib.services import budgets, finalize, run_case, slots
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run

PLENTY = lambda: 10**9  # noqa: E731


@pytest.fixture
def c(monkeypatch: pytest.MonkeyPatch, events: list[Event]) -> FakeContainer:
    """The services' fake container (published events caught by `events`), organization `acme`,
    every case asked through a stub that records it and runs the hook set for it."""
    c = FakeContainer()
    c.orgs.ensure("acme", concurrency_limit=6, now_iso="2026-12-01T08:00:00.000Z")
    c.datasets = SimpleNamespace(  # type: ignore[assignment]
        get_case=lambda _o, _d, _v, case_id: {"case_id": case_id, "input": "q"}
    )
    c.asked = []  # type: ignore[attr-defined]
    c.hooks = {}  # type: ignore[attr-defined]

    def ask_and_grade(cc: Any, run: Any, arm: Any, case: Any, task: Any, **_: Any):
        c.asked.append(case.case_id)  # type: ignore[attr-defined]
        hook = c.hooks.pop(case.case_id, None)  # type: ignore[attr-defined]
        if hook is not None:
            hook()
        return run_case.AttemptResult(AttemptState.PASSED, answer="4")

    monkeypatch.setattr(run_case, "ask_and_grade", ask_and_grade)
    return c


def _start(c: FakeContainer, cases: int, limit: int = 1) -> None:
    c.runs.create(a_run("r1", cases=cases, limit=limit))
    slots.enqueue_run(c, c.runs.get_for_org("acme", "r1"))


def _body(msg: dict[str, Any]) -> str:
    return json.dumps(msg)


def test_a_failure_reading_the_budgets_of_a_carried_task_lets_its_claim_go(
    c: FakeContainer,
) -> None:
    """The claim a recording took for the next task is let go when reading that task's budgets
    fails, so the message's next delivery need not wait for it to lapse."""
    _start(c, cases=3)
    (msg,) = c.case_queue.sent
    real_read = c.spend.read
    calls = {"n": 0}

    def flaky_read(*a: Any, **kw: Any):
        calls["n"] += 1
        if calls["n"] == 1:
            raise RuntimeError("ProvisionedThroughputExceeded")
        return real_read(*a, **kw)

    c.spend.read = flaky_read  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    run = c.runs.get_for_org("acme", "r1")
    lease = c.runs.lease_of(run, "candidate#c2#001")
    assert lease is not None and lease.holder == "m1" and not lease.done
    assert lease.until_ms < epoch_ms(c.clock.now())


def test_a_worker_killed_between_two_cases_of_a_lane_is_taken_over_by_the_sweep(
    c: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Killed between recording c1 (which claimed c2 for it) and asking c2: the sweep leaves the
    claim while the run may still be alive, and once the run missed `TAKEOVER_BEATS` heartbeats
    lets it go and sends c2 - long before SQS would deliver the message again (its visibility)
    and before the run would be abandoned."""
    from chalicelib.services import sweep

    _start(c, cases=3)
    (msg,) = c.case_queue.sent

    def die(*_a: Any, **_kw: Any):
        raise SystemExit("worker killed between the recording and the carried task")

    real_carried = run_case._carried
    monkeypatch.setattr(run_case, "_carried", die)
    with pytest.raises(SystemExit):
        run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    monkeypatch.setattr(run_case, "_carried", real_carried)
    assert len(c.case_queue.sent) == 1

    c.clock.advance(seconds=c.settings.eval_resend_after_seconds + 1)
    sweep.sweep(c)
    assert len(c.case_queue.sent) == 1, "a claim was taken from a run that may be alive"

    beats = sweep.TAKEOVER_BEATS * c.settings.eval_heartbeat_seconds
    c.clock.advance(seconds=beats - c.settings.eval_resend_after_seconds)
    assert (
        beats < c.settings.eval_abandoned_after_minutes * 60 < c.settings.visibility_timeout_seconds
    )
    report = sweep.sweep(c)
    assert report.resent == ["r1"] and [m["case_id"] for m in c.case_queue.sent[1:]] == ["c2"]
    run_case.handle_task(c, _body(c.case_queue.sent[1]), message_id="later", remaining_ms=PLENTY)
    run = c.runs.get_for_org("acme", "r1")
    assert run.recorded == 3
    assert c.runs.get_attempt("acme", "r1", "candidate#c2#001").state == "passed"
    assert c.asked == ["c1", "c2", "c3"]
    # The dead delivery's message, delivered at last, finds its lane carried on by another.
    run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    assert c.asked == ["c1", "c2", "c3"] and len(c.case_queue.sent) == 2
    assert c.orgs.get("acme").in_flight == 0


def test_a_cancel_mid_lane_stops_the_lane_and_frees_its_slot(c: FakeContainer) -> None:
    from chalicelib.services import runs as runs_service

    _start(c, cases=4)
    (msg,) = c.case_queue.sent

    def cancel() -> None:
        runs_service.end_run(
            c, c.runs.get_for_org("acme", "r1"), RunStatus.CANCELLED, "cancelled by u"
        )

    c.hooks["c2"] = cancel
    run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    run = c.runs.get_for_org("acme", "r1")
    assert c.asked == ["c1", "c2"]
    assert (run.status, run.recorded, run.slots, run.lane_busy) == ("cancelled", 2, 0, (False,))
    assert c.orgs.get("acme").in_flight == 0
    assert len(c.case_queue.sent) == 1


def test_a_budget_spent_mid_lane_asks_nobody_more(c: FakeContainer) -> None:
    _start(c, cases=4)
    (msg,) = c.case_queue.sent

    def spend() -> None:
        c.runs.set("acme", "r1", status=RunStatus.BUDGET_EXCEEDED.value)

    c.hooks["c2"] = spend
    run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    run = c.runs.get_for_org("acme", "r1")
    assert c.asked == ["c1", "c2"]
    assert (run.recorded, run.slots) == (2, 0)
    assert c.orgs.get("acme").in_flight == 0


def test_a_carried_tasks_budgets_are_read_while_the_attempt_before_it_is_recorded(
    c: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The read and the write are under way at once (a barrier both must reach), and the read
    still sees what the case before charged as its request ended."""
    _start(c, cases=2)
    (msg,) = c.case_queue.sent
    both = threading.Barrier(2, timeout=60)
    real_read, real_record = c.spend.read, c.runs.record_attempt
    seen: dict[str, Any] = {}

    lane = threading.current_thread()

    def read(*a: Any, **kw: Any) -> Any:
        if threading.current_thread() is not lane:
            both.wait()  # the recording of c1 is under way in the lane's own thread
        return real_read(*a, **kw)

    def record_attempt(*a: Any, **kw: Any) -> Any:
        if "c1" in a[1].attempt_key:
            both.wait()  # and the read is under way in another
        return real_record(*a, **kw)

    def ask_and_grade(cc: Any, run: Any, arm: Any, case: Any, task: Any, **kw: Any):
        seen[case.case_id] = kw["budget_read"]
        if case.case_id == "c1":
            c.spend.charge("acme", run.agent_id, budgets.month_of(c.clock.now()), 700, judge=False)
        return run_case.AttemptResult(AttemptState.PASSED, answer="4", cost_micros=700)

    monkeypatch.setattr(c.spend, "read", read)
    monkeypatch.setattr(c.runs, "record_attempt", record_attempt)
    monkeypatch.setattr(run_case, "ask_and_grade", ask_and_grade)
    run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    assert c.runs.get_for_org("acme", "r1").recorded == 2
    assert seen["c2"].org_spent_micros == 700


def test_a_twin_of_the_message_while_its_lane_is_carried_on_asks_nobody(c: FakeContainer) -> None:
    _start(c, cases=3)
    (msg,) = c.case_queue.sent
    seen: list[str] = []

    def twin() -> None:
        try:
            run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
        except run_case.LeaseHeld:
            seen.append("held")

    c.hooks["c2"] = twin
    run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    assert seen == ["held"] and c.asked == ["c1", "c2", "c3"]


def test_a_run_ending_without_flips_reads_its_attempts_once_between_its_last_answer_and_verdict(
    c: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """The attempts read to find the flips are the ones the outcome is computed from: the move
    to finalizing is conditional on the recorded count they were read at."""
    _start(c, cases=4)
    (msg,) = c.case_queue.sent
    run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    reads: list[str] = []
    real = c.runs.attempts

    def counted(org_id: str, run_id: str) -> Any:
        reads.append(run_id)
        return real(org_id, run_id)

    monkeypatch.setattr(c.runs, "attempts", counted)
    finalize.advance_if_done(c, "acme", "r1")
    run = c.runs.get_for_org("acme", "r1")
    assert run.status == RunStatus.COMPLETED.value
    assert run.outcome is not None and run.outcome.total == 4
    assert reads == ["r1"]


def test_lanes_that_finish_together_read_the_attempts_once(
    c: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    """Every lane whose slot goes back after the last answer may move the phase on; one claims
    it and reads the attempts, the others leave (a 20,000-case run's read is seconds and ~50 MB)."""
    _start(c, cases=4)
    (msg,) = c.case_queue.sent
    run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    reads: list[str] = []
    real = c.runs.attempts
    monkeypatch.setattr(c.runs, "attempts", lambda o, r: reads.append(r) or real(o, r))
    now_ms = epoch_ms(c.clock.now())
    # another lane took the claim a moment ago and is reading
    assert c.runs.claim_advance("acme", "r1", "answering", now_ms + 60_000, now_ms)
    finalize.advance_if_done(c, "acme", "r1")
    assert reads == [] and c.runs.get_for_org("acme", "r1").status == RunStatus.RUNNING.value
    # that lane died: once its claim lapsed, its message's next delivery (or any release) moves on
    c.clock.advance(seconds=finalize.ADVANCE_CLAIM_SECONDS + 1)
    finalize.advance_if_done(c, "acme", "r1")
    assert reads == ["r1"]
    assert c.runs.get_for_org("acme", "r1").status == RunStatus.COMPLETED.value


def test_a_lane_hands_its_next_task_to_the_queue_while_other_tasks_wait_for_a_worker(
    c: FakeContainer,
) -> None:
    """With every worker busy and case tasks waiting (another organization's first case), a lane
    does not carry on: its next task goes to the back of the queue, and the worker it frees takes
    the oldest waiting one (EVAL_CARRY_SLICE_SECONDS 0, the default)."""
    _start(c, cases=3)
    (msg,) = c.case_queue.sent
    c.case_queue.backlog = 1
    run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    assert c.asked == ["c1"]
    assert [m["case_id"] for m in c.case_queue.sent] == ["c1", "c2"]
    lease = c.runs.lease_of(c.runs.get_for_org("acme", "r1"), "candidate#c2#001")
    assert lease is None  # sent, not claimed: whichever delivery takes it claims it
    # Nothing waits any more (a second later, when the backlog is read again): it carries on.
    c.case_queue.backlog = 0
    c.clock.advance(seconds=1)
    run_case.handle_task(c, _body(c.case_queue.sent[-1]), message_id="m2", remaining_ms=PLENTY)
    assert c.asked == ["c1", "c2", "c3"]
    assert c.runs.get_for_org("acme", "r1").status == RunStatus.RUNNING.value  # phase next


def test_a_lane_carries_on_for_its_slice_before_it_makes_way(c: FakeContainer) -> None:
    c.settings = c.settings.model_copy(update={"eval_carry_slice_seconds": 30})
    _start(c, cases=4)
    (msg,) = c.case_queue.sent
    c.case_queue.backlog = 5
    c.hooks["c2"] = lambda: c.clock.advance(seconds=31)  # the slice is spent while c2 is asked
    run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    assert c.asked == ["c1", "c2"]
    assert c.case_queue.sent[-1]["case_id"] == "c3"


def test_the_backlog_is_read_once_a_second_by_a_process(c: FakeContainer) -> None:
    _start(c, cases=5)
    (msg,) = c.case_queue.sent
    run_case.handle_task(c, _body(msg), message_id="m1", remaining_ms=PLENTY)
    assert c.asked == ["c1", "c2", "c3", "c4", "c5"]
    assert c.case_queue.waiting_reads == 1  # four carry decisions, the clock never moved
