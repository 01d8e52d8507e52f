"""Cancel and the sweep (docs/architecture/run-lifecycle.md)."""

from __future__ import annotations

import uuid

from chalicelib.services import run_case, slots, sweep
from chalicelib.services.ports.messaging import QueueSendError
from tests.e2e.conftest import cases, sleepy_spec, wait_for
from tests.e2e.manual import Queue
from tests.support.agents import held_spec, hold


def test_cancel_lets_running_cases_finish_and_starts_nothing_else(api, container):
    h = hold(f"c-{uuid.uuid4().hex}")
    ds = api.dataset(cases(12))
    run = api.start(api.agent(held_spec(h.name)), ds)
    h.release(3)  # three answers; the three cases after them are asked and held
    api.wait(run["run_id"], until=lambda p: p["recorded"] >= 3)
    h.wait_in_flight(3)
    cancelled = api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/cancel")
    assert cancelled["status"] == "cancelled"
    assert cancelled["progress"]["recorded"] == 3
    # Running cases hold their organization slots until they end.
    assert container.orgs.get(api.org_id).in_flight == 3
    h.open()
    wait_for(lambda: container.orgs.get(api.org_id).in_flight == 0, what="the slots back")
    # Only the three cases in flight when it was cancelled ran after it; then nothing starts, not
    # even when free slots are handed out again (what the tick and every freed slot do).
    assert h.calls == 6, h.seen()
    assert slots.assign_free_slots(container, api.org_id) == 0
    assert container.orgs.get(api.org_id).in_flight == 0
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert full["status"] == "cancelled"
    answered = [r for r in full["results"] if r["state"] == "passed"]
    assert len(answered) == 6 == h.answered, "every case that ran is kept"
    assert all(r["reason"] == "cancelled" for r in full["results"] if r["state"] == "incomplete")
    assert len(full["results"]) <= 6 < 12
    assert h.calls == 6, "a case started after the cancel"
    status, body = api.call("POST", f"/api/v1/eval-runs/{run['run_id']}/cancel")
    assert status == 409 and body["error"]["field"] == "run_id"


def test_the_sweep_fails_a_run_that_stood_still_and_frees_its_slots_once(
    api, container, frozen, stack
):
    minutes = container.settings.eval_abandoned_after_minutes  # 10
    ds = api.dataset(cases(8))
    run = api.start(api.agent(sleepy_spec()), ds)
    run_id = run["run_id"]
    assert container.orgs.get(api.org_id).in_flight == 3  # three tasks claimed and queued, none ran

    frozen.advance(minutes=minutes - 1)
    assert run_id not in sweep.sweep(container).failed, "swept before standing still long enough"

    frozen.advance(minutes=1)
    report = sweep.sweep(container)
    assert run_id in report.failed
    full = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    assert full["status"] == "failed" and full["reason"].startswith("abandoned")
    # The three running cases failed, the five never started are skipped (no attempt).
    assert sorted((r["case_id"], r["state"]) for r in full["results"]) == [
        ("c000", "failed"),
        ("c001", "failed"),
        ("c002", "failed"),
    ]
    assert container.orgs.get(api.org_id).in_flight == 0
    counted = api.ok("GET", f"/api/v1/eval-runs/{run_id}/progress")
    assert (counted["recorded"], counted["failed"]) == (3, 3), "the sweep's attempts are counted"
    assert sweep.sweep(container).failed == [], "a swept run is not swept twice"

    # The dead worker's messages come back later: they change nothing and free nothing twice.
    q = Queue(stack)
    for d in q.receive():
        run_case.handle_task(
            container, d.body, receive_count=d.receive_count, message_id=d.message_id
        )
        q.delete(d)
    assert container.orgs.get(api.org_id).in_flight == 0
    after = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    assert after["status"] == "failed" and len(after["results"]) == 3


def test_a_slow_run_that_still_heartbeats_is_never_swept(api, container, frozen):
    ds = api.dataset(cases(3))
    run = api.start(api.agent(sleepy_spec()), ds)
    for _ in range(5):  # 45 minutes of a case that takes long, heartbeating every 9 minutes
        frozen.advance(minutes=9)
        assert container.runs.beat(api.org_id, run["run_id"], int(frozen.at.timestamp() * 1000))
        assert run["run_id"] not in sweep.sweep(container).failed
    assert api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/progress")["status"] == "running"


def test_the_sweep_fails_a_queued_run_that_nothing_is_left_to_run(api, container, frozen, limits):
    limits(2, 2)
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec())
    first, lost, waiting = (api.start(agent, ds) for _ in range(3))
    assert (first["status"], lost["status"], waiting["status"]) == ("running", "queued", "queued")
    # Drop the middle run from the organization's line, as a lost hand-off would.
    container.orgs.remove_waiting(api.org_id, lost["run_id"])
    frozen.advance(minutes=container.settings.eval_abandoned_after_minutes + 1)
    report = sweep.sweep(container)
    assert sorted(report.failed) == sorted([first["run_id"], lost["run_id"]])
    assert (
        api.ok("GET", f"/api/v1/eval-runs/{lost['run_id']}")["reason"]
        == "failed: nothing was left to run it"
    )
    # The slots the abandoned first run held go to the run still in line.
    assert report.slots_started == 2
    assert api.ok("GET", f"/api/v1/eval-runs/{waiting['run_id']}/progress")["status"] == "running"
    assert container.orgs.get(api.org_id).in_flight == 2


def test_tasks_the_queue_will_not_take_are_recorded_incomplete_and_their_slots_go_back(
    api, container, monkeypatch
):
    # Every send for this organization fails: each claimed task is recorded `incomplete`
    # (docs/architecture/run-lifecycle.md), its slot goes back and the run waits for slots again,
    # which the hand-off serves on its next turn, until every case is recorded and the run has ended
    # (it used to stop after the first three, holding no slot and waiting for none, until the sweep
    # failed it).
    sent = container.case_queue.send

    def refuse_ours(bodies):
        ours = [b for b in bodies if b["org_id"] == api.org_id]
        if ours:
            raise QueueSendError(ours)
        sent(bodies)

    monkeypatch.setattr(container.case_queue, "send", refuse_ours)
    run = api.start(api.agent(sleepy_spec()), api.dataset(cases(5)))
    progress = api.wait(run["run_id"])
    assert progress["status"] == "completed" and progress["recorded"] == 5, progress
    results = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["results"]
    assert len(results) == 5 and {r["state"] for r in results} == {"incomplete"}, results
    assert {r["reason"] for r in results} == {"could not be queued"}
    assert container.orgs.get(api.org_id).in_flight == 0
