"""Guard results that passed through review, end to end against the embedded stack
(docs/guides/suites.md, "Results that passed through review" and "Guard status"): a refused
promotion whose gate review turns into a pass stays refused (the tick included); an explicit
promotion then serves at once without running the guard; `GET /agents/{id}/guards` reads each
guard's state with its run and names reviewers from the members as they are now.

The review queue is not part of this: a test writes the reviewed result as the review work does,
through the suites store's `replace_result`.
"""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from chalicelib.services import suites
from tests.e2e.conftest import Api, cases, wait_for
from tests.e2e.test_suites import agent_with_versions, environment, results, runs_of, suite

CASES = cases(5)
REVIEWER = "rui@example.com"


@pytest.fixture(autouse=True)
def quiet_suites(api, container):
    """Pause this test's suites afterwards, so later ticks of the shared stack leave them alone."""
    yield
    for row in container.suites.of_org(api.org_id):
        suites.pause(container, row, "test over")


def _decided(api: Api, agent: str, promotion_id: str) -> dict[str, Any]:
    return wait_for(
        lambda: (
            (p := api.ok("GET", f"/api/v1/agents/{agent}/promotions/{promotion_id}"))["status"]
            != "waiting"
            and p
        )
    )


def _guards(api: Api, agent: str) -> dict[str, dict[str, Any]]:
    """The guards of `production` by suite id, as `GET .../guards` reads them."""
    body = api.ok("GET", f"/api/v1/agents/{agent}/guards")
    [env] = [e for e in body["environments"] if e["environment_id"] == "production"]
    return {g["suite_id"]: {**g, "serving": env["serving"]} for g in env["guards"]}


def _refused_then_reviewed(api: Api, new_api, container) -> tuple[str, str, dict[str, Any]]:
    """v2 (three of five cases wrong) is refused by a guard asking 90%; then rui's verdicts turn
    the gate's failure into a pass. Returns (agent, guard id, the refused promotion)."""
    new_api(org_id=api.org_id, user_id=REVIEWER, role="editor")
    agent = agent_with_versions(api, 0, 3)
    environment(api, agent, serving=1)
    guard = suite(api, agent, api.dataset(CASES), guards=True, threshold={"min_pass_rate": 0.9})
    promo = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    refused = _decided(api, agent, promo["promotion_id"])
    assert refused["status"] == "refused", refused
    [gate] = results(api, agent, guard["suite_id"])
    assert gate["result"] == "failed" and gate["version"] == 2
    measured = gate["measured"]
    assert (measured["dataset_id"], measured["dataset_version"], measured["baseline_version"]) == (
        guard["dataset_id"],
        1,
        1,
    )
    assert len(measured["scoring_hash"]) == 64 and len(measured["threshold_hash"]) == 64
    [kept] = container.suites.results(api.org_id, agent, guard["suite_id"])
    assert container.suites.replace_result(
        kept,
        replace(
            kept,
            result="passed",
            result_before_review="failed",
            reviewed_by=[REVIEWER],
            reasons=["people's verdicts passed the 3 cases the scorers failed"],
        ),
    )
    return agent, guard["suite_id"], refused


def test_a_reviewed_pass_moves_nothing_until_somebody_promotes_and_then_serves_at_once(
    api, new_api, container
):
    agent, guard, refused = _refused_then_reviewed(api, new_api, container)
    suites.tick(container)
    # The gate run's end delivered again (a retried event) decides nothing again either.
    suites.run_ended(container, api.org_id, results(api, agent, guard)[0]["run_id"])
    suites.tick(container)
    again = api.ok("GET", f"/api/v1/agents/{agent}/promotions/{refused['promotion_id']}")
    assert again == refused  # still refused, decided once
    assert api.ok("GET", "/api/v1/environments/production")["serving"] == {agent: 1}
    state = _guards(api, agent)[guard]
    assert (state["state"], state["result"], state["result_before_review"]) == (
        "corrected",
        "passed",
        "failed",
    )
    assert state["reviewed_by"] == [{"user_id": REVIEWER, "name": REVIEWER}]
    assert state["run_id"] == results(api, agent, guard)[0]["run_id"] and state["version"] == 2

    runs_before = len(runs_of(api, agent))
    status, done = api.call(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    assert status == 201 and done["status"] == "promoted", done
    assert done["guards"] == {
        guard: {
            "result": "passed",
            "run_id": state["run_id"],
            "reasons": ["people's verdicts passed the 3 cases the scorers failed"],
            "reviewed_by": [REVIEWER],
            "reused": True,
        }
    }
    assert api.ok("GET", "/api/v1/environments/production")["serving"] == {agent: 2}
    assert len(runs_of(api, agent)) == runs_before  # the guard did not run again
    assert len(results(api, agent, guard)) == 1
    # Now prod serves the very version the reviewed pass checked: it holds.
    assert _guards(api, agent)[guard]["state"] == "corrected"


def test_an_out_of_date_result_keeps_its_run_and_a_removed_reviewer_has_no_name(
    api, new_api, container, cli
):
    agent, guard, _ = _refused_then_reviewed(api, new_api, container)
    run_id = results(api, agent, guard)[0]["run_id"]
    shown = cli("suites", "guards", agent)
    assert shown.code == 0 and f"corrected by {REVIEWER} (failed -> passed)" in shown.out
    api.ok("DELETE", f"/api/v1/members/{REVIEWER}")
    state = _guards(api, agent)[guard]
    assert state["reviewed_by"] == [{"user_id": REVIEWER, "name": None}]
    shown = cli("suites", "guards", agent)
    assert "corrected by a former member (failed -> passed)" in shown.out and REVIEWER not in (
        shown.out.replace(run_id, "")
    )
    api.ok(
        "PATCH",
        f"/api/v1/agents/{agent}/suites/{guard}",
        json={"threshold": {"min_pass_rate": 0.95}},
    )
    state = _guards(api, agent)[guard]
    assert (state["state"], state["run_id"], state["why_out_of_date"]) == (
        "out_of_date",
        run_id,
        "the threshold changed since",
    )
    shown = cli("suites", "guards", agent)
    assert "out of date: the threshold changed since" in shown.out and run_id in shown.out
    # A pass that no longer holds is no shortcut: the guard runs again (and fails again).
    promo = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    assert promo["status"] == "waiting" and promo["guards"] == {guard: {"result": None}}
    assert _decided(api, agent, promo["promotion_id"])["status"] == "refused"
    assert api.ok("GET", "/api/v1/environments/production")["serving"] == {agent: 1}


def test_the_guard_status_needs_agents_view_and_another_org_finds_no_agent(api, new_api):
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    suite(api, agent, api.dataset(CASES), guards=True, threshold={"min_pass_rate": 0.9})
    viewer = new_api(org_id=api.org_id, user_id="vi@example.com", role="viewer")
    [env] = viewer.ok("GET", f"/api/v1/agents/{agent}/guards")["environments"]
    [g] = env["guards"]
    assert (env["environment_id"], env["serving"]) == ("production", 1)
    assert (g["state"], g["run_id"], g["result"], g["reviewed_by"]) == (
        "not_checked",
        None,
        None,
        [],
    )
    other = new_api()
    other.ok("GET", "/api/v1/agents")  # its first request makes the organization
    outsider = new_api(org_id=other.org_id, user_id="vi@example.com", role="viewer")
    status, body = outsider.call("GET", f"/api/v1/agents/{agent}/guards")
    assert status == 404 and body["error"]["field"] == "agent_id", body
    # A person who may not view the agent finds none, as with the agent itself.
    nobody = new_api(org_id=api.org_id, user_id="nobody@example.com", role=None)
    status, body = nobody.call("GET", f"/api/v1/agents/{agent}/guards")
    assert status == 404 and "permission" not in body["error"], body
