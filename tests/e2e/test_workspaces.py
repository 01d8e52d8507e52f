"""Every eval attempt's disposable workspace is deleted when its run ends, whatever the end:
completed, cancelled (and again once the cases still running then finish), failed by the sweep;
and with the run when it is deleted (docs/guides/tools.md, "Workspaces")."""

from __future__ import annotations

import uuid

from chalicelib.adapters.workspaces import BucketWorkspaces
from chalicelib.services import run_case, sweep
from tests.e2e.conftest import cases, sleepy_spec, wait_for
from tests.e2e.manual import Queue
from tests.support.agents import held_spec, hold


def _files(container, org_id: str, run_id: str) -> list[str]:
    """Every object under the run's workspaces prefix in the results bucket."""
    bucket = container.bucket
    pages = bucket.client.get_paginator("list_objects_v2").paginate(
        Bucket=bucket.bucket, Prefix=BucketWorkspaces.run_prefix(org_id, run_id)
    )
    return [o["Key"] for page in pages for o in page.get("Contents", [])]


def _write(container, org_id: str, run_id: str, case_id: str, path: str = "notes.txt") -> None:
    container.workspaces.write(
        org_id, run_id, f"candidate#{case_id}#001", path, f"{case_id} was here"
    )


def test_a_run_s_workspaces_are_deleted_when_it_completes_and_no_other_run_s(api, container):
    h, still = hold(f"ws-{uuid.uuid4().hex}"), hold(f"ws-{uuid.uuid4().hex}")
    ds = api.dataset(cases(2))
    run_id = api.start(api.agent(held_spec(h.name)), ds)["run_id"]
    other_id = api.start(api.agent(held_spec(still.name)), ds)["run_id"]
    h.wait_in_flight(2)
    still.wait_in_flight(2)
    for case_id in ("c000", "c001"):
        _write(container, api.org_id, run_id, case_id)
        _write(container, api.org_id, run_id, case_id, "deep/er/file.txt")
    _write(container, api.org_id, other_id, "c000")
    assert len(_files(container, api.org_id, run_id)) == 4
    key = "candidate#c000#001"
    assert container.workspaces.list(api.org_id, run_id, key) == ["deep/er/file.txt", "notes.txt"]

    h.open()
    assert api.wait(run_id)["status"] == "completed"
    # The delete follows the run's completing write: the run may read completed a moment before.
    wait_for(lambda: _files(container, api.org_id, run_id) == [], what="the workspaces gone")
    assert container.workspaces.read(api.org_id, run_id, key, "notes.txt") is None
    assert container.workspaces.list(api.org_id, other_id, key) == ["notes.txt"], (
        "another run's workspace went with it"
    )
    still.open()
    assert api.wait(other_id)["status"] == "completed"
    assert _files(container, api.org_id, other_id) == []


def test_a_cancelled_run_s_workspaces_go_at_the_cancel_and_again_when_its_cases_finish(
    api, container
):
    h = hold(f"ws-{uuid.uuid4().hex}")
    run_id = api.start(api.agent(held_spec(h.name)), api.dataset(cases(6)))["run_id"]
    h.wait_in_flight(3)
    _write(container, api.org_id, run_id, "c000")
    cancelled = api.ok("POST", f"/api/v1/eval-runs/{run_id}/cancel")
    assert cancelled["status"] == "cancelled"
    assert _files(container, api.org_id, run_id) == [], "the cancel left the workspaces"
    # The three cases still running go on after the cancel, and write to their workspaces.
    for case_id in ("c000", "c001", "c002"):
        _write(container, api.org_id, run_id, case_id)
    assert len(_files(container, api.org_id, run_id)) == 3
    h.open()
    wait_for(lambda: container.orgs.get(api.org_id).in_flight == 0, what="the slots back")
    wait_for(lambda: _files(container, api.org_id, run_id) == [], what="the workspaces gone")
    assert api.ok("GET", f"/api/v1/eval-runs/{run_id}")["status"] == "cancelled"


def test_the_sweep_deletes_the_workspaces_of_a_run_it_fails(api, container, frozen):
    minutes = container.settings.eval_abandoned_after_minutes
    run_id = api.start(api.agent(sleepy_spec()), api.dataset(cases(4)))["run_id"]
    for case_id in ("c000", "c001", "c002"):
        _write(container, api.org_id, run_id, case_id)
    frozen.advance(minutes=minutes - 1)
    assert run_id not in sweep.sweep(container).failed
    assert len(_files(container, api.org_id, run_id)) == 3, "a run still standing lost its files"
    frozen.advance(minutes=1)
    assert run_id in sweep.sweep(container).failed
    assert api.ok("GET", f"/api/v1/eval-runs/{run_id}")["status"] == "failed"
    assert _files(container, api.org_id, run_id) == []


def test_deleting_a_run_deletes_whatever_is_left_of_its_workspaces(api, container, frozen, stack):
    run_id = api.start(api.agent(sleepy_spec()), api.dataset(cases(2)))["run_id"]
    q = Queue(stack)  # the pollers are paused: the run's cases are answered here, one by one
    while api.ok("GET", f"/api/v1/eval-runs/{run_id}/progress")["status"] != "completed":
        for d in q.receive(wait_s=1):
            run_case.handle_task(
                container, d.body, receive_count=d.receive_count, message_id=d.message_id
            )
            q.delete(d)
    assert _files(container, api.org_id, run_id) == []
    # What a delete that failed at the run's end would have left; and a run whose id starts with
    # this one's.
    _write(container, api.org_id, run_id, "c000")
    _write(container, api.org_id, run_id, "c001", "sub/f.txt")
    _write(container, api.org_id, f"{run_id}x", "c000")
    assert len(_files(container, api.org_id, run_id)) == 2
    api.ok("DELETE", f"/api/v1/eval-runs/{run_id}")
    assert api.call("GET", f"/api/v1/eval-runs/{run_id}")[0] == 404
    assert _files(container, api.org_id, run_id) == []
    assert len(_files(container, api.org_id, f"{run_id}x")) == 1, "another run's files went too"
