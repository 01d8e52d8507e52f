"""People's verdicts reach the suites end to end (docs/guides/review.md): a guard refuses a
version, its run sends the confirmed regressions to the queue, a person passes them, and the
gate's kept result turns passed (with who reviewed it) in the same call, its owner is told once,
nothing is promoted by itself, and an explicit promotion then serves without running the guard
again. Undo puts the result back as the scorers left it."""

from __future__ import annotations

import pytest

from chalicelib.services import suites
from tests.e2e.conftest import cases, wait_for
from tests.e2e.test_suites import agent_with_versions, environment, results, suite

CASES = cases(5)


@pytest.fixture(autouse=True)
def quiet_suites(api, container):
    """Pause this test's suites afterwards, so later ticks of the shared stack leave them alone."""
    yield
    for row in container.suites.of_org(api.org_id):
        suites.pause(container, row, "test over")


def _refused(api) -> tuple[str, str, str, dict]:
    """v2 gets three of five cases wrong; the guard (90%) refuses it. (dataset, agent, guard id,
    the refused promotion)."""
    agent = agent_with_versions(api, 0, 3)
    environment(api, agent, serving=1)
    ds = api.dataset(CASES)
    guard = suite(api, agent, ds, guards=True, threshold={"min_pass_rate": 0.9})["suite_id"]
    promo = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    done = wait_for(
        lambda: (
            (p := api.ok("GET", f"/api/v1/agents/{agent}/promotions/{promo['promotion_id']}"))[
                "status"
            ]
            != "waiting"
            and p
        )
    )
    assert done["status"] == "refused", done
    return ds, agent, guard, done


def test_passing_a_guards_regressions_in_review_corrects_its_result_and_permits_a_promotion(
    api, container
):
    ds, agent, guard, refused = _refused(api)
    [gate] = results(api, agent, guard)
    assert gate["result"] == "failed"
    run = api.ok("GET", f"/api/v1/eval-runs/{gate['run_id']}")
    assert run["routed_to_review"] == 3
    items = api.ok("GET", f"/api/v1/datasets/{ds}/review?state=waiting")["items"]
    assert sorted(i["case_id"] for i in items) == ["c000", "c001", "c002"]
    last = None
    for item in items:
        last = api.ok(
            "POST",
            f"/api/v1/datasets/{ds}/review/{item['item_id']}/decision",
            json={"verdict": "pass"},
        )
    assert last is not None
    assert last["audit"]["suite_results"] == [
        {"suite_id": guard, "run_id": gate["run_id"], "before": "failed", "after": "passed"}
    ]
    [corrected] = results(api, agent, guard)
    assert corrected["result"] == "passed" and corrected["result_before_review"] == "failed"
    assert corrected["reviewed_by"] == [{"user_id": api.user_id, "name": api.user_id}]
    assert api.ok("GET", f"/api/v1/eval-runs/{gate['run_id']}")["outcome"]["passed"] == 5
    notices = [
        n
        for n in api.ok("GET", "/api/v1/notifications")["notifications"]
        if n["kind"] == "suite_result_changed"
    ]
    assert len(notices) == 1 and "now passed (was failed)" in notices[0]["title"]
    # Nothing moved by itself, the tick included.
    suites.tick(container)
    again = api.ok("GET", f"/api/v1/agents/{agent}/promotions/{refused['promotion_id']}")
    assert again["status"] == "refused"
    assert api.ok("GET", "/api/v1/environments/production")["serving"] == {agent: 1}
    [env] = [
        e
        for e in api.ok("GET", f"/api/v1/agents/{agent}/guards")["environments"]
        if e["environment_id"] == "production"
    ]
    [state] = env["guards"]
    assert state["state"] == "corrected" and state["run_id"] == gate["run_id"]
    assert state["reviewed_by"] == [{"user_id": api.user_id, "name": api.user_id}]
    promoted = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    assert promoted["status"] == "promoted" and promoted["guards"][guard]["reused"] is True
    assert api.ok("GET", "/api/v1/environments/production")["serving"] == {agent: 2}


def test_undo_puts_a_suite_result_back_as_the_scorers_left_it_and_tells_the_owner_again(api):
    ds, agent, guard, _ = _refused(api)
    items = api.ok("GET", f"/api/v1/datasets/{ds}/review?state=waiting")["items"]
    for item in items:
        api.ok(
            "POST",
            f"/api/v1/datasets/{ds}/review/{item['item_id']}/decision",
            json={"verdict": "pass"},
        )
    assert results(api, agent, guard)[0]["result"] == "passed"
    undone = api.ok("POST", f"/api/v1/datasets/{ds}/review/{items[0]['item_id']}/undo")
    assert undone["audit"]["suite_results"][0]["after"] == "failed"
    [back] = results(api, agent, guard)
    assert back["result"] == "failed"
    assert back["result_before_review"] == "failed"  # two verdicts still stand under it
    for item in items[1:]:
        api.ok("POST", f"/api/v1/datasets/{ds}/review/{item['item_id']}/undo")
    [scorers] = results(api, agent, guard)
    assert scorers["result"] == "failed" and scorers["reviewed_by"] is None
    assert scorers["result_before_review"] is None
    kinds = [n["kind"] for n in api.ok("GET", "/api/v1/notifications")["notifications"]]
    assert kinds.count("suite_result_changed") == 2  # failed -> passed, then passed -> failed
