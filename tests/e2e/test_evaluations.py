"""Evaluations over HTTP: an agent, a dataset and a version selector; each run pins the
agent and version it resolved; the run history newest first, one run, a delete; the verdicts sum
each evaluation's latest run; another organization sees none of it."""

from __future__ import annotations

from tests.e2e.conftest import cases, sleepy_spec

E = "/api/evaluations"


def publish(api, agent: str, spec: dict) -> int:
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": spec})
    return api.ok("POST", f"/api/v1/agents/{agent}/versions")["version"]


def run_of(api, evaluation_id: str, **body) -> dict:
    """Start a run of the evaluation and wait for it to complete; the run as read after."""
    status, started = api.call("POST", f"{E}/{evaluation_id}/runs", json=body)
    assert status == 201, started
    assert api.wait(started["run_id"])["status"] == "completed"
    return api.ok("GET", f"/api/v1/eval-runs/{started['run_id']}")


def summary(api, agent: str, version: int) -> dict:
    body = api.ok(
        "POST", f"{E}/agent-summaries", json={"agents": [{"agentId": agent, "version": version}]}
    )
    return body["summaries"][0]


def test_an_evaluation_pins_what_its_selector_picked_and_keeps_its_history_newest_first(api):
    ds = api.dataset(cases(3))
    agent = api.agent(sleepy_spec())
    assert publish(api, agent, sleepy_spec()) == 1
    assert publish(api, agent, sleepy_spec(answers={"c000": "no"})) == 2

    status, created = api.call(
        "POST", E, json={"evaluation_id": "nightly", "agent_id": agent, "dataset_id": ds}
    )
    assert status == 201, created
    assert (created["evaluation_id"], created["version"], created["implied"]) == (
        "nightly",
        "latest",
        False,
    )
    assert created["created_by"] == api.user_id
    status, dup = api.call(
        "POST", E, json={"evaluation_id": "nightly", "agent_id": agent, "dataset_id": ds}
    )
    assert status == 409 and dup["error"]["field"] == "evaluation_id"

    first = run_of(api, "nightly")
    second = run_of(api, "nightly")
    for run in (first, second):
        assert (run["evaluation_id"], run["agentId"], run["resolvedAgentVersion"]) == (
            "nightly",
            agent,
            2,
        )
        assert (run["agent_id"], run["resolved_version"]) == (agent, 2)

    history = api.ok("GET", f"{E}/nightly/runs")
    assert [r["run_id"] for r in history["runs"]] == [second["run_id"], first["run_id"]]
    assert history["next_cursor"] is None
    page1 = api.ok("GET", f"{E}/nightly/runs", params={"limit": 1})
    assert [r["run_id"] for r in page1["runs"]] == [second["run_id"]]
    page2 = api.ok("GET", f"{E}/nightly/runs", params={"limit": 1, "cursor": page1["next_cursor"]})
    assert [r["run_id"] for r in page2["runs"]] == [first["run_id"]]
    status, bad = api.call("GET", f"{E}/nightly/runs", params={"cursor": "garbage"})
    assert status == 400 and bad["error"]["field"] == "cursor"

    one = api.ok("GET", f"{E}/nightly/runs/{first['run_id']}")
    assert one["run_id"] == first["run_id"] and one["status"] == "completed"
    assert sorted(r["case_id"] for r in one["results"]) == ["c000", "c001", "c002"]
    assert one["results"] == first["results"]

    # The selector changes: the next run picks version 1, the past runs keep version 2.
    patched = api.ok("PATCH", f"{E}/nightly", json={"version": 1})
    assert patched["version"] == 1 and patched["updated_at"]
    third = run_of(api, "nightly")
    assert third["resolvedAgentVersion"] == 1
    kept = api.ok("GET", f"{E}/nightly/runs")["runs"]
    assert [(r["run_id"], r["resolvedAgentVersion"]) for r in kept] == [
        (third["run_id"], 1),
        (second["run_id"], 2),
        (first["run_id"], 2),
    ]
    assert api.ok("GET", f"{E}/nightly/runs/{first['run_id']}")["resolvedAgentVersion"] == 2

    # Deleting one run of it, as deleting a run does.
    assert api.ok("DELETE", f"{E}/nightly/runs/{first['run_id']}")["deleted"] is True
    assert api.call("GET", f"{E}/nightly/runs/{first['run_id']}")[0] == 404
    assert api.call("GET", f"/api/v1/eval-runs/{first['run_id']}")[0] == 404
    assert [r["run_id"] for r in api.ok("GET", f"{E}/nightly/runs")["runs"]] == [
        third["run_id"],
        second["run_id"],
    ]

    # A run that is not of this evaluation is not found under it.
    other = api.start(agent, ds, candidate="version", version=1)
    assert api.wait(other["run_id"])["status"] == "completed"
    status, missing = api.call("GET", f"{E}/nightly/runs/{other['run_id']}")
    assert status == 404 and missing["error"]["field"] == "run_id"
    assert api.call("DELETE", f"{E}/nightly/runs/{other['run_id']}")[0] == 404

    # Deleting the evaluation deletes its runs; the implied evaluation's run stays.
    gone = api.ok("DELETE", f"{E}/nightly")
    assert (gone["deleted"], gone["runs_deleted"]) == (True, 2)
    assert api.call("GET", f"{E}/nightly")[0] == 404
    assert api.call("GET", f"/api/v1/eval-runs/{second['run_id']}")[0] == 404
    assert api.ok("GET", f"/api/v1/eval-runs/{other['run_id']}")["status"] == "completed"


def test_creating_refuses_what_the_organization_does_not_have(api):
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec(), publish=1)
    for body, code, field in (
        ({"agent_id": "nobody", "dataset_id": ds}, 404, "agent_id"),
        ({"agent_id": agent, "dataset_id": "nothing"}, 404, "dataset_id"),
        ({"agent_id": agent, "dataset_id": ds, "version": 9}, 404, "version"),
        ({"agent_id": agent, "dataset_id": ds, "version": "draft"}, 400, "version"),
        ({"agent_id": agent, "dataset_id": ds, "evaluation_id": "progress"}, 400, "evaluation_id"),
        ({"agent_id": agent, "dataset_id": ds, "evaluation_id": "a~b"}, 400, "evaluation_id"),
    ):
        status, body_ = api.call("POST", E, json=body)
        assert (status, body_["error"]["field"]) == (code, field), body_
    created = api.ok("POST", E, json={"agent_id": agent, "dataset_id": ds, "version": "published"})
    assert created["evaluation_id"].startswith("evl_") and created["version"] == "published"
    listed = api.ok("GET", E)
    assert [e["evaluation_id"] for e in listed["evaluations"]] == [created["evaluation_id"]]


def test_the_evaluations_are_listed_by_id_a_page_at_a_time(api):
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec(), publish=1)
    for eid in ("e-c", "e-a", "e-b"):
        api.ok("POST", E, json={"evaluation_id": eid, "agent_id": agent, "dataset_id": ds})
    page1 = api.ok("GET", E, params={"limit": 2})
    assert [e["evaluation_id"] for e in page1["evaluations"]] == ["e-a", "e-b"]
    page2 = api.ok("GET", E, params={"limit": 2, "cursor": page1["next_cursor"]})
    assert [e["evaluation_id"] for e in page2["evaluations"]] == ["e-c"]
    assert page2["next_cursor"] is None


def test_a_run_naming_no_evaluation_belongs_to_the_one_its_agent_and_dataset_imply(api):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(), publish=1)
    run = api.start(agent, ds, candidate="version", version=1)
    implied = f"implied~{agent}~{ds}"
    assert run["evaluation_id"] == implied and "#" not in implied and "/" not in implied
    assert api.wait(run["run_id"])["status"] == "completed"

    shown = api.ok("GET", f"{E}/{implied}")
    assert (shown["implied"], shown["agent_id"], shown["dataset_id"]) == (True, agent, ds)
    assert [r["run_id"] for r in api.ok("GET", f"{E}/{implied}/runs")["runs"]] == [run["run_id"]]
    assert api.ok("GET", f"{E}/{implied}/runs/{run['run_id']}")["evaluation_id"] == implied
    for method, body in (("PATCH", {"version": 1}), ("DELETE", None)):
        status, refused = api.call(method, f"{E}/{implied}", json=body)
        assert status == 409 and refused["error"]["field"] == "evaluation_id"
    assert api.call("GET", f"{E}/implied~{agent}~nothing")[0] == 404


def test_the_ordinary_start_takes_an_evaluation_and_its_selector(api):
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec(), publish=2)
    other = api.agent(sleepy_spec(), publish=1)
    api.ok(
        "POST", E, json={"evaluation_id": "v1", "agent_id": agent, "dataset_id": ds, "version": 1}
    )
    path = f"/api/v1/agents/{agent}/eval-runs"
    status, run = api.call("POST", path, json={"dataset_id": ds, "evaluation_id": "v1"})
    assert status == 201, run
    assert (run["evaluation_id"], run["resolvedAgentVersion"]) == ("v1", 1)
    assert api.wait(run["run_id"])["status"] == "completed"
    assert [r["run_id"] for r in api.ok("GET", f"{E}/v1/runs")["runs"]] == [run["run_id"]]
    for agent_id, body, field in (
        (other, {"dataset_id": ds, "evaluation_id": "v1"}, "evaluation_id"),
        (agent, {"dataset_id": ds, "evaluation_id": "v1", "candidate": "draft"}, "candidate"),
        (agent, {"dataset_id": ds, "evaluation_id": "v1", "version": 2}, "version"),
    ):
        status, refused = api.call("POST", f"/api/v1/agents/{agent_id}/eval-runs", json=body)
        assert (status, refused["error"]["field"]) == (400, field), refused
    status, missing = api.call("POST", path, json={"dataset_id": ds, "evaluation_id": "nope"})
    assert status == 404 and missing["error"]["field"] == "evaluation_id"


def test_a_verdict_counts_each_evaluation_of_the_version_once(api):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(answers={"c000": "no"}), publish=1)
    implied_first = api.start(agent, ds, candidate="version", version=1)
    assert api.wait(implied_first["run_id"])["status"] == "completed"
    implied_again = api.start(agent, ds, candidate="version", version=1)
    assert api.wait(implied_again["run_id"])["status"] == "completed"
    s = summary(api, agent, 1)
    assert (s["verdict"], s["total"], s["passed"], s["evaluations"]) == ("partial", 2, 1, 1)

    for eid in ("ev-one", "ev-two"):
        api.ok("POST", E, json={"evaluation_id": eid, "agent_id": agent, "dataset_id": ds})
    one = run_of(api, "ev-one")
    run_of(api, "ev-one")  # its latest run replaces its first
    two = run_of(api, "ev-two")
    s = summary(api, agent, 1)
    assert (s["total"], s["passed"], s["evaluations"]) == (6, 3, 3)
    latest_one = api.ok("GET", f"{E}/ev-one/runs", params={"limit": 1})["runs"][0]["run_id"]
    assert s["run_ids"] == sorted([implied_again["run_id"], latest_one, two["run_id"]])
    assert one["run_id"] not in s["run_ids"]

    # Deleting an evaluation takes its contribution away.
    api.ok("DELETE", f"{E}/ev-two")
    s = summary(api, agent, 1)
    assert (s["total"], s["evaluations"]) == (4, 2)


def test_another_organization_sees_404_on_every_route(api, new_api):
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec(), publish=1)
    api.ok("POST", E, json={"evaluation_id": "mine", "agent_id": agent, "dataset_id": ds})
    run = run_of(api, "mine")
    implied = api.start(agent, ds, candidate="version", version=1)
    assert api.wait(implied["run_id"])["status"] == "completed"
    implied_id = f"implied~{agent}~{ds}"

    other = new_api()
    for method, path, body in (
        ("GET", f"{E}/mine", None),
        ("PATCH", f"{E}/mine", {"version": 1}),
        ("DELETE", f"{E}/mine", None),
        ("POST", f"{E}/mine/runs", {}),
        ("GET", f"{E}/mine/runs", None),
        ("GET", f"{E}/mine/runs/{run['run_id']}", None),
        ("DELETE", f"{E}/mine/runs/{run['run_id']}", None),
        ("GET", f"{E}/{implied_id}", None),
        ("POST", f"{E}/{implied_id}/runs", {}),
        ("GET", f"{E}/{implied_id}/runs", None),
        ("GET", f"{E}/{implied_id}/runs/{implied['run_id']}", None),
        ("DELETE", f"{E}/{implied_id}/runs/{implied['run_id']}", None),
    ):
        status, answer = other.call(method, path, json=body)
        assert status == 404, (method, path, answer)
    status, created = other.call("POST", E, json={"agent_id": agent, "dataset_id": ds})
    assert status == 404 and created["error"]["field"] == "agent_id"
    assert other.ok("GET", E)["evaluations"] == []
    # Nothing of the first organization moved.
    assert [r["run_id"] for r in api.ok("GET", f"{E}/mine/runs")["runs"]] == [run["run_id"]]


def test_changing_an_evaluation_needs_agents_edit_on_its_agent_and_on_the_one_it_moves_to(
    api, new_api
):
    """A runner may run an evaluation an admin made, not rename or move it (issue 35)."""
    ds = api.dataset(cases(2))
    first, second = api.agent(sleepy_spec(), publish=1), api.agent(sleepy_spec(), publish=1)
    api.ok(
        "POST",
        E,
        json={"evaluation_id": "admins", "name": "Admin's", "agent_id": first, "dataset_id": ds},
    )
    runner = new_api(org_id=api.org_id, user_id="runner@example.com", role="runner")
    status, body = runner.call("PATCH", f"{E}/admins", json={"name": "taken over"})
    assert status == 403, body
    assert (body["error"]["permission"], body["error"]["field"]) == ("agents:edit", "permissions")
    assert f"needs the agents:edit permission on agent {first}" in body["error"]["message"]
    run = runner.ok("POST", f"{E}/admins/runs", json={})  # running it is the runner's
    runner.wait(run["run_id"])
    # agents:edit on its agent only: moving it onto another needs the same there
    api.ok(
        "PUT",
        f"/api/v1/members/{runner.user_id}/grants/agent/{first}",
        json={"permissions": ["agents:edit"]},
    )
    status, body = runner.call("PATCH", f"{E}/admins", json={"agent_id": second})
    assert status == 403 and body["error"]["permission"] == "agents:edit", body
    assert f"on agent {second}" in body["error"]["message"]
    assert api.ok("GET", f"{E}/admins")["agent_id"] == first  # nothing changed
    assert api.ok("GET", f"{E}/admins")["name"] == "Admin's"
    renamed = runner.ok("PATCH", f"{E}/admins", json={"name": "the runner's now"})
    assert renamed["name"] == "the runner's now"
    api.ok(
        "PUT",
        f"/api/v1/members/{runner.user_id}/grants/agent/{second}",
        json={"permissions": ["agents:edit"]},
    )
    assert runner.ok("PATCH", f"{E}/admins", json={"agent_id": second})["agent_id"] == second
