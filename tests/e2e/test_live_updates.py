"""Live updates hand out every attempt exactly once, in recorded order, even when two workers
commit out of the order of their keys (docs/guides/by-hand.md, "Live updates")."""

from __future__ import annotations

from datetime import UTC, datetime

from chalicelib.api import run_views
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Attempt
from chalicelib.services import runs as run_service
from tests.e2e.conftest import cases, sleepy_spec


def _attempt(run_id: str, case_id: str, at_ms: int) -> Attempt:
    key = f"candidate#{case_id}#001"
    return Attempt(
        run_id=run_id,
        attempt_key=key,
        recorded_key=f"{at_ms:013d}#{key}",
        arm_id="candidate",
        case_id=case_id,
        attempt=1,
        state="passed",
        recorded_at=iso(datetime.fromtimestamp(at_ms / 1000, tz=UTC)),
    )


def test_an_attempt_that_commits_after_a_later_keyed_one_is_not_skipped(api, container, frozen):
    run = api.start(api.agent(sleepy_spec()), api.dataset(cases(5)))
    who = Identity(api.org_id, api.user_id)
    t0 = epoch_ms(frozen.at)
    # Worker B stamped its attempt at t0+100 ms and committed; worker A stamped t0+50 ms, still
    # committing.
    row = container.runs.get(api.org_id, run["run_id"])
    container.runs.put_attempt_counted(row, _attempt(run["run_id"], "c001", t0 + 100), t0)
    frozen.advance(milliseconds=150)
    first = run_views.events_view(
        run_service.events(container, who, run["run_id"], after="", wait_s=0)
    )
    assert first["events"] == [], (
        "handed out an attempt while an earlier-keyed one could still commit"
    )
    container.runs.put_attempt_counted(row, _attempt(run["run_id"], "c000", t0 + 50), t0)
    frozen.advance(seconds=2.5)
    second = run_views.events_view(
        run_service.events(container, who, run["run_id"], after=first["cursor"], wait_s=0)
    )
    assert [e["case_id"] for e in second["events"]] == ["c000", "c001"]
    third = run_views.events_view(
        run_service.events(container, who, run["run_id"], after=second["cursor"], wait_s=0)
    )
    assert third["events"] == [] and third["cursor"] == second["cursor"]


def test_the_events_of_a_finished_run_come_in_recorded_order_each_once(api):
    run = api.start(api.agent(sleepy_spec(sleep_ms=20)), api.dataset(cases(12)))
    api.wait(run["run_id"])
    seen, cursor = [], ""
    while True:
        page = api.ok(
            "GET", f"/api/v1/eval-runs/{run['run_id']}/events", params={"after": cursor, "limit": 5}
        )
        seen += [e["cursor"] for e in page["events"]]
        cursor = page["cursor"]
        if page["done"]:
            break
    assert len(seen) == 12 and seen == sorted(seen) and len(set(seen)) == 12
