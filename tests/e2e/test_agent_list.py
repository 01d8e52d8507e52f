"""The list of agents (`GET /api/v1/agents`) as the console's Agents page reads it: beside each
agent, whether its draft differs from the latest version, the verdicts beside its live version and
its draft (the four words, `none` when nothing measured it), and its last completed run; nothing of
runs for a reader who may not read them."""

from __future__ import annotations

from tests.e2e.conftest import cases, sleepy_spec
from tests.support.e2e import Api


def listed(api) -> dict[str, dict]:
    return {a["agent_id"]: a for a in api.ok("GET", "/api/v1/agents")["agents"]}


def verdict(agent: dict, which: str) -> tuple | None:
    v = agent["verdicts"][which]
    return None if v is None else (v["version"], v["verdict"], v["passed"], v["total"])


def run(api, agent: str, ds: str, **body) -> str:
    started = api.start(agent, ds, **body)
    assert api.wait(started["run_id"])["status"] == "completed"
    return started["run_id"]


def test_each_agent_says_its_live_and_draft_verdicts_and_its_last_run(api):
    ds = api.dataset(cases(4))
    never_run = api.agent(sleepy_spec(), publish=1)
    measured = api.agent(sleepy_spec(answers={"c000": "x"}), publish=1)
    unpublished = api.agent(sleepy_spec())

    live_run = run(api, measured, ds, candidate="version", version=1)
    got = listed(api)
    assert got[measured]["draft_differs"] is False
    assert verdict(got[measured], "live") == (1, "partial", 3, 4)
    assert verdict(got[measured], "draft") == ("draft", "none", 0, 0)
    assert got[measured]["last_run"] == {
        "run_id": live_run,
        "dataset_id": ds,
        "completed_at": got[measured]["verdicts"]["live"]["last_completed_at"],
        "version": 1,
    }

    # a changed draft differs; measured, it is the agent's last run
    api.ok("PUT", f"/api/v1/agents/{measured}/draft", json={"spec": sleepy_spec(answer="0")})
    assert listed(api)[measured]["draft_differs"] is True
    draft_run = run(api, measured, ds)
    got = listed(api)
    assert verdict(got[measured], "draft") == ("draft", "fail", 0, 4)
    assert verdict(got[measured], "live") == (1, "partial", 3, 4)
    assert (got[measured]["last_run"]["run_id"], got[measured]["last_run"]["version"]) == (
        draft_run,
        "draft",
    )

    # nothing measured is `none`, never a failure; nothing published has no live verdict
    assert got[never_run]["draft_differs"] is False and got[never_run]["live_version"] == 1
    assert verdict(got[never_run], "live") == (1, "none", 0, 0)
    assert got[never_run]["last_run"] is None
    assert got[unpublished]["draft_differs"] is True and got[unpublished]["live_version"] is None
    assert verdict(got[unpublished], "live") is None
    assert verdict(got[unpublished], "draft") == ("draft", "none", 0, 0)


def test_a_reader_without_runs_view_sees_no_verdict_nor_run(api, new_api):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(), publish=1)
    run(api, agent, ds, candidate="version", version=1)
    guest = new_api(org_id=api.org_id, user_id="guest@example.com", role="guest")
    api.ok(
        "PUT",
        f"/api/v1/members/{guest.user_id}/grants/agent/{agent}",
        json={"permissions": ["agents:view"]},
    )
    (seen,) = guest.ok("GET", "/api/v1/agents")["agents"]
    assert seen["agent_id"] == agent and seen["draft_differs"] is False
    assert (seen["verdicts"], seen["last_run"]) == (None, None)
    assert listed(api)[agent]["verdicts"]["live"]["verdict"] == "pass"


def test_a_run_over_a_dataset_the_reader_may_not_open_is_neither_counted_nor_named(api):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(), publish=1)
    run(api, agent, ds, candidate="version", version=1)
    made = api.ok("POST", "/api/v1/api-keys", json={"scopes": ["runs:view", "agents:view"]})
    key = Api(api.http.base_url, api.org_id, api.user_id, made["key"])
    assert key.call("GET", f"/api/v1/datasets/{ds}")[0] == 404
    seen = listed(key)[agent]
    assert verdict(seen, "live") == (1, "none", 0, 0) and seen["last_run"] is None
    assert verdict(listed(api)[agent], "live") == (1, "pass", 2, 2)


def test_one_agent_reads_its_verdicts_as_the_list_does_with_evaluations_and_staleness(api):
    one, two = api.dataset(cases(2)), api.dataset(cases(3))
    agent = api.agent(sleepy_spec(answers={"c000": "x"}), publish=1)
    run(api, agent, one, candidate="version", version=1)
    run(api, agent, two, candidate="version", version=1)
    run(api, agent, one)  # the draft, as it is now

    read = api.ok("GET", f"/api/v1/agents/{agent}")
    live, draft = read["verdicts"]["live"], read["verdicts"]["draft"]
    # both evaluations of version 1 count: 1 of 2 and 2 of 3 passed
    assert (live["verdict"], live["passed"], live["failed"], live["total"]) == ("partial", 3, 2, 5)
    assert (live["evaluations"], live["stale"]) == (2, False)
    assert (draft["verdict"], draft["passed"], draft["total"], draft["evaluations"]) == (
        "partial",
        1,
        2,
        1,
    )
    assert draft["stale"] is False and read["draft_differs"] is False
    assert read["last_run"]["version"] == "draft"
    assert read == listed(api)[agent]

    # the draft changes: its verdict rests on runs of a draft that no longer exists
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answer="0")})
    read = api.ok("GET", f"/api/v1/agents/{agent}")
    assert (read["verdicts"]["draft"]["verdict"], read["verdicts"]["draft"]["stale"]) == (
        "partial",
        True,
    )
    assert read["verdicts"]["live"]["stale"] is False and read["draft_differs"] is True
    assert listed(api)[agent]["verdicts"] == read["verdicts"]


def test_one_agent_read_without_runs_view_carries_no_verdict(api, new_api):
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec(), publish=1)
    run(api, agent, ds, candidate="version", version=1)
    guest = new_api(org_id=api.org_id, user_id="guest@example.com", role="guest")
    api.ok(
        "PUT",
        f"/api/v1/members/{guest.user_id}/grants/agent/{agent}",
        json={"permissions": ["agents:view"]},
    )
    seen = guest.ok("GET", f"/api/v1/agents/{agent}")
    assert (seen["verdicts"], seen["last_run"], seen["draft"]["spec"]) == (None, None, None)
    assert api.ok("GET", f"/api/v1/agents/{agent}")["verdicts"]["live"]["verdict"] == "pass"
