"""The sliding window on fakes (docs/architecture/slots.md): a slot whose stride ran dry takes the
back half of the longest stride left, so no slot of a run idles while one of its tasks waits,
and every task is still claimed, asked and recorded once."""

from __future__ import annotations

import heapq
import math
import random
from collections import Counter

import pytest

from chalicelib.domain.enums import AttemptState
from chalicelib.domain.events import Event, SlotReleased
from chalicelib.domain.run_rules import Task
from chalicelib.services import run_case, slots
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run

PASSED = run_case.AttemptResult(AttemptState.PASSED, answer="4")
NEVER = math.inf


def no_pause() -> None:
    return None


def _start(c: FakeContainer, cases: int, limit: int) -> None:
    c.orgs.ensure("acme", concurrency_limit=6, now_iso="2026-12-01T08:00:00.000Z")
    c.runs.create(a_run("r1", cases=cases, limit=limit))
    slots.enqueue_run(c, c.runs.get_for_org("acme", "r1"))


def _record(c: FakeContainer, message: dict[str, object], delivery: str) -> bool:
    task = Task(str(message["arm_id"]), str(message["case_id"]), int(message["attempt"]))  # type: ignore[call-overload]
    run = c.runs.get_for_org("acme", "r1")
    return bool(
        run_case.record(
            c, run, task, int(message["index"]), PASSED, delivery=delivery, pause=no_pause
        )  # type: ignore[call-overload]
    )


class Simulated:
    """Workers on a simulated clock: every task sent starts at once (one worker per message,
    asked once: a copy of a task asked already is dropped, as its lease makes it) and ends after
    its case's duration; after each event the rule is checked: while a task of the run waits
    (no lane started it), every slot the run may hold is busy."""

    def __init__(self, c: FakeContainer, durations: dict[str, float]) -> None:
        self.c, self.durations = c, durations
        self.now, self.taken = 0.0, 0
        self.running: list[tuple[float, int, dict[str, object]]] = []
        self.asked: Counter[str] = Counter()
        self.recorded: list[str] = []
        self.idle_while_pending: list[tuple[float, int, int]] = []

    def _take_sent(self) -> None:
        sent = self.c.case_queue.sent
        for seq in range(self.taken, len(sent)):
            case_id = str(sent[seq]["case_id"])
            if self.asked[case_id]:
                continue  # a copy: its lease (or recorded attempt) makes it ask nobody
            self.asked[case_id] += 1
            end = self.now + self.durations.get(case_id, 1.0)
            heapq.heappush(self.running, (end, seq, sent[seq]))
        self.taken = len(sent)

    def _check(self) -> None:
        run = self.c.runs.get_for_org("acme", "r1")
        pending = run.lanes.pending(int(run.tasks_total))
        if pending and (run.slots < run.lanes.n or len(self.running) < run.lanes.n):
            self.idle_while_pending.append((self.now, pending, len(self.running)))

    def run(self) -> None:
        """Until only tasks that never end are left."""
        self._take_sent()
        self._check()
        while self.running and self.running[0][0] < NEVER:
            self.now, seq, message = heapq.heappop(self.running)
            assert _record(self.c, message, f"m{seq}")
            self.recorded.append(str(message["case_id"]))
            self._take_sent()
            self._check()

    def finish(self, case_id: str) -> None:
        """The case that never ended ends now."""
        (entry,) = [e for e in self.running if e[2]["case_id"] == case_id]
        self.running.remove(entry)
        heapq.heapify(self.running)
        self.durations[case_id] = 0.0
        heapq.heappush(self.running, (self.now, entry[1], entry[2]))
        self.run()


def test_a_slot_stuck_on_one_case_keeps_none_of_the_tasks_behind_it(
    c: FakeContainer, events: list[Event]
) -> None:
    # 12 tasks in 3 lanes: lane 0 holds c1 (never ends) with c4, c7, c10 behind it.
    _start(c, cases=12, limit=3)
    sim = Simulated(c, {"c1": NEVER})
    sim.run()
    assert sim.idle_while_pending == []
    assert sorted(sim.recorded) == sorted(f"c{i}" for i in range(2, 13))
    assert {"c4", "c7", "c10"} <= set(sim.recorded)  # the stuck lane's stride, taken by others
    run = c.runs.get_for_org("acme", "r1")
    assert (run.recorded, run.slots, run.lanes.pending(12)) == (11, 1, 0)
    assert c.orgs.get("acme").in_flight == 1  # the two other slots went back, nothing to take
    assert events == [SlotReleased("acme", "r1")] * 2
    # The stuck case ends: its slot has nothing to start and goes back too.
    sim.finish("c1")
    run = c.runs.get_for_org("acme", "r1")
    assert (run.recorded, run.slots, run.next_index) == (12, 0, 12)
    assert c.orgs.get("acme").in_flight == 0
    assert set(sim.asked.values()) == {1} and len(sim.asked) == 12
    kept = c.runs.attempts_kept[("acme", "r1")]
    successors = [a.successor["index"] for a in kept.values() if a.successor]
    assert sorted(successors + [0, 1, 2]) == list(range(12))  # each task started exactly once


@pytest.mark.parametrize("seed", range(6))
def test_no_slot_idles_while_a_task_waits_whatever_the_durations(
    c: FakeContainer, events: list[Event], seed: int
) -> None:
    rng = random.Random(seed)
    durations = {f"c{i}": rng.lognormvariate(0, 1.5) for i in range(1, 41)}
    durations[f"c{rng.randrange(1, 41)}"] *= 50  # one case far slower than the rest
    _start(c, cases=40, limit=4)
    sim = Simulated(c, durations)
    sim.run()
    assert sim.idle_while_pending == []
    assert sorted(sim.recorded) == sorted(durations) and set(sim.asked.values()) == {1}
    run = c.runs.get_for_org("acme", "r1")
    assert (run.recorded, run.slots, run.next_index) == (40, 0, 40)
    assert c.orgs.get("acme").in_flight == 0
    assert events == [SlotReleased("acme", "r1")] * 4


def _message(c: FakeContainer, case_id: str) -> dict[str, object]:
    (m,) = [m for m in c.case_queue.sent if m["case_id"] == case_id][:1]
    return m


def test_two_slots_running_dry_together_take_different_tasks_once(
    c: FakeContainer, events: list[Event]
) -> None:
    # 8 tasks in 3 lanes: lane 0 has c1 (running), c4, c7; lane 1 c2, c5, c8; lane 2 c3, c6.
    _start(c, cases=8, limit=3)
    for case_id in ("c2", "c3", "c5"):
        assert _record(c, _message(c, case_id), f"d-{case_id}")
    # Lane 2's c6 and lane 1's c8 are running; both strides are dry after them.
    stale = c.runs.get_for_org("acme", "r1")
    assert _record(c, _message(c, "c8"), "d-c8")  # lane 1 takes the back half of lane 0: c7
    refreshes: list[str] = []
    real_refresh = c.runs.refresh
    c.runs.refresh = lambda run: refreshes.append(run.run_id) or real_refresh(run)  # type: ignore[method-assign]
    # Lane 2 decided on a read from before lane 1's steal: it aimed at c7 too, lost, read again
    # and took what was left of lane 0: c4.
    assert run_case.record(c, stale, Task("candidate", "c6", 1), 5, PASSED, pause=no_pause)
    assert refreshes == ["r1"]
    kept = c.runs.attempts_kept[("acme", "r1")]
    assert kept["candidate#c8#001"].successor["case_id"] == "c7"
    assert kept["candidate#c6#001"].successor["case_id"] == "c4"
    assert Counter(m["case_id"] for m in c.case_queue.sent) == Counter(f"c{i}" for i in range(1, 9))
    run = c.runs.get_for_org("acme", "r1")
    assert (run.next_index, run.slots, run.lanes.pending(8)) == (8, 3, 0)
    # Lane 0's c1 ends: nothing is left to start anywhere, its slot goes back.
    assert _record(c, _message(c, "c1"), "d-c1")
    assert kept["candidate#c1#001"].successor is None
    assert events == [SlotReleased("acme", "r1")]


def test_a_redelivered_steal_sends_its_successor_again_only_when_never_started(
    c: FakeContainer, events: list[Event]
) -> None:
    _start(c, cases=6, limit=2)  # lane 0: c1 (stuck), c3, c5; lane 1: c2, c4, c6
    for case_id in ("c2", "c4", "c6"):
        assert _record(c, _message(c, case_id), f"d-{case_id}")
    kept = c.runs.attempts_kept[("acme", "r1")]
    assert kept["candidate#c6#001"].successor["case_id"] == "c5"  # the back half of lane 0
    sent = len(c.case_queue.sent)
    # The recording delivery comes back (its worker died after the write): c5 never started, so
    # it is sent again; the copy changes no counter and steals nothing more.
    assert not _record(c, _message(c, "c6"), "d-c6")
    assert [m["case_id"] for m in c.case_queue.sent[sent:]] == ["c5"]
    run = c.runs.get_for_org("acme", "r1")
    assert (run.recorded, run.next_index, run.lanes.pending(6)) == (3, 5, 1)  # c3 still lane 0's
    # Once c5 started (its delivery holds its lease), another copy sends nothing.
    assert c.runs.take_lease(run, "candidate#c5#001", "d-c5", 10**15, 0)
    assert not _record(c, _message(c, "c6"), "d-c6")
    assert len(c.case_queue.sent) == sent + 1
    # A copy from another delivery than the recording one never sends anything.
    assert not _record(c, _message(c, "c6"), "someone-else")
    assert len(c.case_queue.sent) == sent + 1


def test_a_cancelled_run_steals_nothing(c: FakeContainer, events: list[Event]) -> None:
    _start(c, cases=6, limit=2)
    assert _record(c, _message(c, "c2"), "d-c2")
    assert _record(c, _message(c, "c4"), "d-c4")
    c.runs.set("acme", "r1", status="cancelled")
    assert _record(c, _message(c, "c6"), "d-c6")  # its stride is dry and c3, c5 wait in lane 0
    run = c.runs.get_for_org("acme", "r1")
    assert c.runs.attempts_kept[("acme", "r1")]["candidate#c6#001"].successor is None
    assert (run.slots, run.next_index, run.lanes.pending(6)) == (1, 4, 2)
    assert events == [SlotReleased("acme", "r1")]


def test_reruns_added_after_steals_are_all_started(c: FakeContainer, events: list[Event]) -> None:
    _start(c, cases=6, limit=2)  # lane 0: c1, c3, c5; lane 1: c2, c4, c6
    for case_id in ("c2", "c4", "c6", "c1", "c5", "c3"):  # lane 1 took c5 from lane 0
        assert _record(c, _message(c, case_id), f"d-{case_id}")
    run = c.runs.get_for_org("acme", "r1")
    assert (run.recorded, run.slots, run.lanes.end[0]) == (6, 0, 4)  # lane 0's stride was cut
    reruns = [["candidate", f"c{i}", 2] for i in (1, 2, 3)]
    assert c.runs.enter_confirming(run, reruns)
    run = c.runs.get_for_org("acme", "r1")
    assert run.lanes.pending(9) == 3  # every rerun has a lane again
    sent = len(c.case_queue.sent)
    slots.enqueue_run(c, run)
    sim = Simulated(c, {})
    sim.taken = sent
    sim.run()
    assert sim.idle_while_pending == [] and sorted(sim.recorded) == ["c1", "c2", "c3"]
    run = c.runs.get_for_org("acme", "r1")
    assert (run.recorded, run.next_index, run.slots) == (9, 9, 0)
