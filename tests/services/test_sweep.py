"""The one-minute sweep on fakes (docs/architecture/run-lifecycle.md): a running run whose heartbeat
and progress stood still for `EVAL_ABANDONED_AFTER_MINUTES` (10) is failed and its slots freed,
once; a run that still moves is left alone."""

from __future__ import annotations

from dataclasses import replace

from chalicelib.clock import epoch_ms
from chalicelib.domain.events import Event, RunEnded
from chalicelib.domain.records import Run
from chalicelib.services import finalize, sweep
from chalicelib.services.ports.telemetry import Metric
from tests.fakes import START, FakeContainer
from tests.fakes.ledger import a_run, an_attempt

NOW_MS = epoch_ms(START)
MINUTE_MS = 60_000


def _org(c: FakeContainer, in_flight: int) -> None:
    c.orgs.ensure("acme", concurrency_limit=6, now_iso="2026-12-01T08:00:00.000Z")
    c.orgs.kept["acme"] = replace(c.orgs.kept["acme"], in_flight=in_flight)


def _running(
    run_id: str, *, beat_minutes_ago: float, next_index: int, slots: int, recorded: int = 0
) -> Run:
    return a_run(
        run_id,
        cases=3,
        status="running",
        heartbeat_at_ms=NOW_MS - int(beat_minutes_ago * MINUTE_MS),
        next_index=next_index,
        slots=slots,
        recorded=recorded,
    )


def test_an_abandoned_running_run_is_failed_and_its_slots_freed_and_a_fresh_one_is_not(
    c: FakeContainer, events: list[Event]
) -> None:
    _org(c, in_flight=3)
    c.runs.add(_running("old", beat_minutes_ago=11, next_index=3, slots=2, recorded=1))
    c.runs.add_attempt("acme", an_attempt("c1", "passed", run_id="old"))
    c.runs.add(_running("fresh", beat_minutes_ago=1, next_index=1, slots=1))
    report = sweep.sweep(c)
    assert report.failed == ["old"]
    old, fresh = c.runs.get_for_org("acme", "old"), c.runs.get_for_org("acme", "fresh")
    assert (old.status, old.slots, old.reason.split(":")[0]) == ("failed", 0, "abandoned")
    assert (fresh.status, fresh.slots) == ("running", 1)
    assert c.orgs.get("acme").in_flight == 1
    # The cases it was running are failed; what it recorded stays as it was.
    assert [(a.case_id, a.state, a.reason) for a in c.runs.attempts("acme", "old")] == [
        ("c1", "passed", ""),
        ("c2", "failed", "the run was abandoned while this case ran"),
        ("c3", "failed", "the run was abandoned while this case ran"),
    ]
    assert events == [RunEnded("acme", "old")]
    assert sweep.sweep(c).failed == []  # swept once: nothing is freed twice
    assert c.orgs.get("acme").in_flight == 1
    assert c.metrics.counted == {(Metric.RUNS_ENDED, (("status", "failed"),)): 1}  # once


def test_a_run_that_heartbeats_between_the_sweep_s_read_and_its_write_is_left_running(
    c: FakeContainer, events: list[Event]
) -> None:
    _org(c, in_flight=2)
    c.runs.add(_running("slow", beat_minutes_ago=11, next_index=2, slots=2))
    c.runs.meanwhile.append(lambda: c.runs.beat("acme", "slow", NOW_MS))
    assert sweep.sweep(c).failed == []
    assert (c.runs.get_for_org("acme", "slow").status, c.orgs.get("acme").in_flight) == (
        "running",
        2,
    )
    assert events == []


def test_a_queued_run_nothing_will_start_is_failed_but_one_in_line_waits(
    c: FakeContainer, events: list[Event]
) -> None:
    _org(c, in_flight=0)
    stale = NOW_MS - 11 * MINUTE_MS
    c.runs.add(a_run("lost", heartbeat_at_ms=stale))
    c.runs.add(a_run("in-line", heartbeat_at_ms=stale))
    c.orgs.set_limit("acme", 0)  # no slot free: the tick starts nothing
    c.orgs.add_waiting("acme", "in-line", stale)
    assert sweep.sweep(c).failed == ["lost"]
    assert c.runs.get_for_org("acme", "lost").reason == "failed: nothing was left to run it"
    assert c.runs.get_for_org("acme", "in-line").status == "queued"


def test_a_case_left_running_under_a_cancelled_run_is_failed_and_its_slot_freed(
    c: FakeContainer, events: list[Event]
) -> None:
    _org(c, in_flight=1)
    c.runs.add(
        a_run(
            "gone",
            cases=2,
            status="cancelled",
            reason="cancelled by ana",
            next_index=2,
            slots=1,
            recorded=1,
            completed_at="2026-12-01T08:40:00.000Z",
            heartbeat_at_ms=NOW_MS - 20 * MINUTE_MS,
        )
    )
    c.runs.add_attempt("acme", an_attempt("c1", "passed", run_id="gone"))
    assert sweep.sweep(c).released == ["gone"]
    gone = c.runs.get_for_org("acme", "gone")
    assert (gone.status, gone.reason, gone.completed_at, gone.slots) == (
        "cancelled",
        "cancelled by ana",
        "2026-12-01T08:40:00.000Z",
        0,
    )
    assert c.orgs.get("acme").in_flight == 0
    assert (
        c.runs.get_attempt("acme", "gone", "candidate#c2#001").reason
        == "its worker stopped after the run ended"
    )


def test_a_running_task_no_delivery_ever_claimed_is_sent_again_once_the_run_stood_still(
    c: FakeContainer,
) -> None:
    """Issue 11: a worker that died between the write that started a task and its send leaves a
    busy lane whose task nobody holds; the sweep sends that task again, and only that one."""
    _org(c, in_flight=4)
    stuck = _running("stuck", beat_minutes_ago=2, next_index=2, slots=2)
    c.runs.add(stuck)
    c.runs.take_lease(stuck, "candidate#c1#001", "msg-1", NOW_MS + MINUTE_MS, NOW_MS)
    c.runs.add(_running("moving", beat_minutes_ago=0.5, next_index=2, slots=2))
    report = sweep.sweep(c)
    assert report.resent == ["stuck"] and report.failed == []
    assert c.case_queue.sent == [
        {
            "org_id": "acme",
            "run_id": "stuck",
            "arm_id": "candidate",
            "case_id": "c2",
            "attempt": 1,
            "index": 1,
        }
    ]
    assert c.runs.get_for_org("acme", "stuck").status == "running"


def test_the_sweep_deletes_the_workspaces_of_the_run_it_fails_and_no_other_run_s(
    c: FakeContainer, events: list[Event]
) -> None:
    _org(c, in_flight=3)
    c.runs.add(_running("old", beat_minutes_ago=11, next_index=3, slots=2))
    c.runs.add(_running("fresh", beat_minutes_ago=1, next_index=1, slots=1))
    c.workspaces.write("acme", "old", "candidate#c1#001", "notes.txt", "draft")
    c.workspaces.write("acme", "fresh", "candidate#c1#001", "notes.txt", "kept")
    assert sweep.sweep(c).failed == ["old"]
    assert c.workspaces.files == {("acme", "fresh", "candidate#c1#001", "notes.txt"): "kept"}


def test_a_workspace_delete_that_fails_is_logged_and_the_run_is_failed_all_the_same(
    c: FakeContainer, events: list[Event], caplog
) -> None:
    _org(c, in_flight=2)
    c.runs.add(_running("old", beat_minutes_ago=11, next_index=2, slots=2))
    c.workspaces.write("acme", "old", "candidate#c1#001", "notes.txt", "draft")
    c.workspaces.broken = True
    assert sweep.sweep(c).failed == ["old"]
    assert c.runs.get_for_org("acme", "old").status == "failed"
    assert events == [RunEnded("acme", "old")], "what follows the end still happens"
    assert "run old: its workspaces could not be deleted" in caplog.text
    c.workspaces.broken = False
    # the next release of the run takes what is left: a slot given back after its end
    finalize.advance_if_done(c, "acme", "old")
    assert c.workspaces.files == {}
