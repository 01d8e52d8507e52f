"""Tenancy in every key (issue 9 scope 6), through the HTTP API on the embedded stack.

Organization A makes one of everything with ids of its choosing: a model profile, a judge, a
dataset, a published agent, an environment serving it (a promotion), a suite with a result (and
the owner's notice of it), a run, a secret and a recording. Organization B then

1. names A's ids on every route that takes one - in the path or in the body, reads and writes -
   and gets 404 every time: never 409, never A's data, no word of permissions, nothing changed;
2. creates the very same ids (201 each), runs its own, and neither side ever sees the other's:
   B's suite with A's suite id has B's results only, deleting it leaves A's, and A's
   agent-summaries do not move with B's runs under the same agent id.
"""

from __future__ import annotations

import json
import uuid
from typing import Any

import pytest

from tests.support.e2e import Api, wait_for

A_ORG = f"org_tenant_a_{uuid.uuid4().hex[:8]}"
B_ORG = f"org_tenant_b_{uuid.uuid4().hex[:8]}"
MARK = "A-ONLY-7f3c"
"""In A's names, answers and inputs: a response to B containing it leaked A's data."""
IDS = {
    "agent": "agent-1",
    "dataset": "ds-1",
    "judge": "judge-1",
    "suite": "suite-1",
    "environment": "env-1",
    "model_profile": "mp-1",
    "secret": "key-1",
    "recording": "rec-1",
}
CASES = [{"case_id": f"c{i}", "input": f"{MARK} question {i}", "reference": "42"} for i in range(3)]


def agent_spec(answer_of_c0: str) -> dict[str, Any]:
    """The `sleepy` python agent answering 42, except `answer_of_c0` on case c0."""
    return {
        "runtime": "python",
        "entrypoint": "bench.agents:sleepy",
        "options": {"answer": "42", "answers": {"c0": answer_of_c0}},
    }


def build(org: Api, *, mark: str, wrong_c0: bool) -> dict[str, Any]:
    """One of everything, with the shared ids; returns what the tests compare against."""
    i = IDS
    created = [
        org.call(
            "POST",
            "/api/v1/model-profiles",
            json={
                "model_profile_id": i["model_profile"],
                "model": f"model-{mark}",
                "name": mark,
                "settings": {"base_url": "http://127.0.0.1:9/v1"},
            },
        ),
        org.call("POST", "/api/v1/judges", json={"name": mark, "judge_id": i["judge"]}),
        org.call("POST", "/api/v1/datasets", json={"name": mark, "dataset_id": i["dataset"]}),
        org.call(
            "POST",
            "/api/v1/agents",
            json={
                "name": mark,
                "agent_id": i["agent"],
                "spec": agent_spec("41" if wrong_c0 else "42"),
            },
        ),
        org.call(
            "POST", "/api/v1/environments", json={"environment_id": i["environment"], "name": mark}
        ),
    ]
    assert [status for status, _ in created] == [201] * 5, created
    org.ok(
        "POST",
        f"/api/v1/judges/{i['judge']}/versions",
        json={
            "model_profile_id": i["model_profile"],
            "criteria": [{"criterion_id": "c", "text": f"{mark} graded"}],
        },
    )
    org.ok(
        "POST",
        f"/api/v1/datasets/{i['dataset']}/versions",
        json={
            "scoring": {"required": ["equals"]},
            "cases": [{**c, "input": c["input"].replace(MARK, mark)} for c in CASES],
        },
    )
    org.ok("POST", f"/api/v1/agents/{i['agent']}/versions")
    promotion = org.ok(
        "POST",
        f"/api/v1/agents/{i['agent']}/promotions",
        json={"environment_id": i["environment"], "version": 1},
    )
    status, suite = org.call(
        "POST",
        f"/api/v1/agents/{i['agent']}/suites",
        json={
            "suite_id": i["suite"],
            "name": mark,
            "dataset_id": i["dataset"],
            "environment_id": i["environment"],
            "threshold": {"min_pass_rate": 1.0},
        },
    )
    assert status == 201, suite
    org.ok("POST", f"/api/v1/agents/{i['agent']}/suites/{i['suite']}/run")
    [result] = wait_for(
        lambda: org.ok("GET", f"/api/v1/agents/{i['agent']}/suites/{i['suite']}/results")["results"]
    )
    # The suite is free again (and its owner told) once the run's follow-up is over.
    wait_for(
        lambda: (
            org.ok("GET", f"/api/v1/agents/{i['agent']}/suites/{i['suite']}")["active_run_id"]
            is None
        )
    )
    run = org.ok(
        "POST",
        f"/api/v1/agents/{i['agent']}/eval-runs",
        json={"dataset_id": i["dataset"], "candidate": "version", "version": 1},
    )
    org.wait(run["run_id"])
    asked = org.ok("GET", f"/api/v1/agents/{i['agent']}/runs", params={"surface": "eval"})
    return {
        "promotion_id": promotion["promotion_id"],
        "suite_result": result,
        "run_id": run["run_id"],
        "suite_run_id": result["run_id"],
        "agent_run_id": asked["runs"][0]["agent_run_id"],
    }


@pytest.fixture
def a(new_api) -> Api:
    return new_api(org_id=A_ORG, user_id="owner-a@example.com")


@pytest.fixture
def b(new_api) -> Api:
    return new_api(org_id=B_ORG, user_id="owner-b@example.com")


_WORLD: dict[str, Any] = {}


@pytest.fixture
def world(a) -> dict[str, Any]:
    """A's things, built once for the module (later tests reuse them)."""
    if not _WORLD:
        _WORLD.update(build(a, mark=MARK, wrong_c0=True))
        a.ok("PUT", f"/api/v1/secrets/{IDS['secret']}", json={"value": f"{MARK}-secret-value"})
        _WORLD["recording"] = a.call(
            "POST",
            "/api/v1/recordings",
            json={
                "recording_id": IDS["recording"],
                "content": json.dumps({"case_id": "c0", "answer": MARK}) + "\n",
            },
        )
        notices = a.ok("GET", "/api/v1/notifications")["notifications"]
        _WORLD["notification_id"] = notices[0]["notification_id"] if notices else None
        _WORLD["summary"] = summary(a)
    return _WORLD


def summary(org: Api) -> dict[str, Any]:
    [row] = org.ok(
        "POST",
        "/api/v1/agent-summaries",
        json={"agents": [{"agentId": IDS["agent"], "version": 1}]},
    )["summaries"]
    return row


def routes_naming_a(world: dict[str, Any]) -> list[tuple[str, str, Any]]:
    """Every route of `chalicelib/api/routes.py` that takes an id, each with A's ids."""
    i = IDS
    ag, ds, jd, st, env, mp = (
        i["agent"],
        i["dataset"],
        i["judge"],
        i["suite"],
        i["environment"],
        i["model_profile"],
    )
    run, prom, note = world["run_id"], world["promotion_id"], world["notification_id"] or "n0"
    spec = agent_spec("0")
    return [
        # agents
        ("GET", f"/api/v1/agents/{ag}", None),
        ("GET", f"/api/v1/agents/{ag}/draft", None),
        ("PUT", f"/api/v1/agents/{ag}/draft", {"spec": spec}),
        ("POST", f"/api/v1/agents/{ag}/versions", {}),
        ("GET", f"/api/v1/agents/{ag}/versions", None),
        ("GET", f"/api/v1/agents/{ag}/versions/1", None),
        # model profiles
        ("GET", f"/api/v1/model-profiles/{mp}", None),
        ("DELETE", f"/api/v1/model-profiles/{mp}", None),
        # environments and promotions
        ("GET", f"/api/v1/environments/{env}", None),
        ("DELETE", f"/api/v1/environments/{env}", None),
        ("POST", f"/api/v1/agents/{ag}/promotions", {"environment_id": env, "version": 1}),
        ("GET", f"/api/v1/agents/{ag}/promotions", None),
        ("GET", f"/api/v1/agents/{ag}/promotions/{prom}", None),
        # suites
        ("POST", f"/api/v1/agents/{ag}/suites", {"dataset_id": ds, "suite_id": "another"}),
        ("GET", f"/api/v1/agents/{ag}/suites", None),
        ("GET", f"/api/v1/agents/{ag}/suites/{st}", None),
        ("PATCH", f"/api/v1/agents/{ag}/suites/{st}", {"name": "taken over"}),
        ("POST", f"/api/v1/agents/{ag}/suites/{st}/pause", None),
        ("POST", f"/api/v1/agents/{ag}/suites/{st}/resume", None),
        ("POST", f"/api/v1/agents/{ag}/suites/{st}/run", None),
        ("GET", f"/api/v1/agents/{ag}/suites/{st}/results", None),
        ("DELETE", f"/api/v1/agents/{ag}/suites/{st}", None),
        # notifications
        ("POST", f"/api/v1/notifications/{note}/read", None),
        # budgets
        ("GET", f"/api/v1/agents/{ag}/budget", None),
        ("PUT", f"/api/v1/agents/{ag}/budget", {"monthly_usd": 1}),
        # judges
        ("GET", f"/api/v1/judges/{jd}", None),
        (
            "POST",
            f"/api/v1/judges/{jd}/versions",
            {"model_profile_id": mp, "criteria": [{"criterion_id": "c", "text": "x"}]},
        ),
        ("GET", f"/api/v1/judges/{jd}/versions/1", None),
        # datasets
        ("GET", f"/api/v1/datasets/{ds}", None),
        (
            "POST",
            f"/api/v1/datasets/{ds}/versions",
            {"scoring": {"required": ["equals"]}, "cases": CASES[:1]},
        ),
        ("GET", f"/api/v1/datasets/{ds}/versions/1/cases", None),
        ("GET", f"/api/v1/datasets/{ds}/versions/latest/cases", None),
        ("GET", f"/api/v1/datasets/{ds}/eval-runs", None),
        ("POST", f"/api/v1/datasets/{ds}/scores/rescore", {"run_id": run}),
        ("POST", f"/api/v1/datasets/{ds}/criteria", {"note": "Polite.", "tags": ["t"]}),
        # eval runs
        (
            "POST",
            f"/api/v1/agents/{ag}/eval-runs/estimate",
            {"dataset_id": ds, "candidate": "draft"},
        ),
        ("POST", f"/api/v1/agents/{ag}/eval-runs", {"dataset_id": ds, "candidate": "draft"}),
        ("GET", f"/api/v1/agents/{ag}/eval-runs", None),
        ("GET", f"/api/v1/eval-runs/{run}", None),
        ("POST", f"/api/v1/eval-runs/{run}/cancel", None),
        ("POST", f"/api/v1/eval-runs/{run}/grade-again", None),
        ("GET", f"/api/v1/eval-runs/{run}/comparison", None),
        ("GET", f"/api/v1/eval-runs/{run}/cases", None),
        ("GET", f"/api/v1/eval-runs/{run}/arms/candidate/spec", None),
        ("GET", f"/api/v1/eval-runs/{run}/spec-changes", None),
        ("GET", f"/api/v1/eval-runs/{run}/progress", None),
        ("GET", f"/api/v1/eval-runs/{run}/events?wait=0", None),
        ("GET", f"/api/evaluations/progress/{run}", None),
        ("GET", f"/api/evaluations/stream/{run}?wait=0", None),
        ("DELETE", f"/api/v1/eval-runs/{run}", None),
        # agent runs and usage
        ("GET", f"/api/v1/agents/{ag}/runs", None),
        ("GET", f"/api/v1/runs/{world['agent_run_id']}", None),
        ("POST", "/api/v1/usage/runs", {"runs": [{"key": "k", "agent_id": ag, "cost_usd": 1}]}),
        # verdicts
        ("POST", "/api/v1/agent-summaries", {"agents": [{"agentId": ag, "version": 1}]}),
        (
            "POST",
            "/api/evaluations/agent-summaries",
            {"agents": [{"agentId": ag, "version": "draft"}]},
        ),
        # the organization's secrets and recordings
        ("GET", f"/api/v1/secrets/{i['secret']}", None),
        ("DELETE", f"/api/v1/secrets/{i['secret']}", None),
        ("GET", f"/api/v1/recordings/{i['recording']}", None),
        ("DELETE", f"/api/v1/recordings/{i['recording']}", None),
    ]


def refusal_of(org: Api, method: str, path: str, body: Any) -> dict[str, Any]:
    """The 404 `org` gets, checked to tell nothing: no 409, no other organization's data or ids,
    no permission details."""
    status, resp = org.call(method, path, **({"json": body} if body is not None else {}))
    assert status == 404, (method, path, status, resp)
    assert isinstance(resp, dict) and set(resp) == {"error"}, (method, path, resp)
    error = resp["error"]
    text = json.dumps(resp)
    for leak in (MARK, A_ORG, "owner-a@example.com", "permission"):
        assert leak not in text, (method, path, leak, resp)
    return error


def test_another_organization_s_ids_are_404_on_every_route_that_takes_one(world, a, b):
    before = {
        path: a.ok("GET", path)
        for path in (
            f"/api/v1/agents/{IDS['agent']}",
            f"/api/v1/agents/{IDS['agent']}/suites/{IDS['suite']}",
            f"/api/v1/environments/{IDS['environment']}",
            f"/api/v1/model-profiles/{IDS['model_profile']}",
            f"/api/v1/judges/{IDS['judge']}",
            f"/api/v1/datasets/{IDS['dataset']}",
            f"/api/v1/agents/{IDS['agent']}/suites/{IDS['suite']}/results",
            f"/api/v1/eval-runs/{world['run_id']}",
            f"/api/v1/agents/{IDS['agent']}/promotions/{world['promotion_id']}",
            f"/api/v1/agents/{IDS['agent']}/budget",
        )
    }
    assert world["notification_id"], "A's failed suite result told its owner"
    for method, path, body in routes_naming_a(world):
        refusal_of(b, method, path, body)
    # Nothing B did moved anything of A's.
    for path, view in before.items():
        assert a.ok("GET", path) == view, path
    assert a.ok("GET", f"/api/v1/secrets/{IDS['secret']}")["name"] == IDS["secret"]
    assert a.ok("GET", f"/api/v1/recordings/{IDS['recording']}")["recording_id"] == IDS["recording"]
    assert not next(
        n
        for n in a.ok("GET", "/api/v1/notifications")["notifications"]
        if n["notification_id"] == world["notification_id"]
    )["read"]


def test_another_organization_s_ids_in_a_body_are_404_too(world, a, b):
    # B's own agent, dataset and judge, under ids A does not use: only the referenced ids are A's.
    own = f"b-own-{uuid.uuid4().hex[:6]}"
    b.ok("POST", "/api/v1/agents", json={"name": "b", "agent_id": own, "spec": agent_spec("42")})
    b.ok("POST", f"/api/v1/agents/{own}/versions")
    b.ok("POST", "/api/v1/datasets", json={"name": "b", "dataset_id": own})
    b.ok(
        "POST",
        f"/api/v1/datasets/{own}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": CASES[:1]},
    )
    start = f"/api/v1/agents/{own}/eval-runs"
    cases = [
        ("POST", start, {"dataset_id": IDS["dataset"], "candidate": "draft"}, "dataset_id"),
        (
            "POST",
            f"{start}/estimate",
            {"dataset_id": IDS["dataset"], "candidate": "draft"},
            "dataset_id",
        ),
        (
            "POST",
            start,
            {"dataset_id": own, "candidate": "draft", "environment_id": IDS["environment"]},
            "environment_id",
        ),
        (
            "POST",
            start,
            {"dataset_id": own, "candidate": "draft", "model_profile_ids": [IDS["model_profile"]]},
            "model_profile_ids[0]",
        ),
        (
            "POST",
            start,
            {"dataset_id": own, "candidate": "version", "baseline_run_id": world["run_id"]},
            "baseline_run_id",
        ),
        ("POST", f"/api/v1/agents/{own}/suites", {"dataset_id": IDS["dataset"]}, "dataset_id"),
        (
            "POST",
            f"/api/v1/agents/{own}/suites",
            {"dataset_id": own, "environment_id": IDS["environment"]},
            "environment_id",
        ),
        (
            "POST",
            f"/api/v1/agents/{own}/promotions",
            {"environment_id": IDS["environment"], "version": 1},
            "environment_id",
        ),
        (
            "POST",
            f"/api/v1/datasets/{own}/versions",
            {
                "scoring": {
                    "required": ["judge"],
                    "settings": {"judge": {"judge_id": IDS["judge"]}},
                },
                "cases": CASES[:1],
            },
            "scoring.settings.judge.judge_id",
        ),
        ("POST", f"/api/v1/datasets/{own}/scores/rescore", {"run_id": world["run_id"]}, "run_id"),
    ]
    for method, path, body, field in cases:
        error = refusal_of(b, method, path, body)
        assert error.get("field") == field, (path, body, error)
    # B may name an environment in its own runs once it has one; A's stays A's.
    assert a.ok("GET", f"/api/v1/environments/{IDS['environment']}")["serving"] == {IDS["agent"]: 1}


@pytest.mark.parametrize(
    ("path", "body", "field"),
    [
        ("/api/v1/agents", {"name": "x", "agent_id": "a#b", "spec": agent_spec("42")}, "agent_id"),
        ("/api/v1/agents", {"name": "x", "agent_id": "a/b", "spec": agent_spec("42")}, "agent_id"),
        ("/api/v1/datasets", {"name": "x", "dataset_id": "d#1"}, "dataset_id"),
        ("/api/v1/judges", {"name": "x", "judge_id": "j/1"}, "judge_id"),
        ("/api/v1/environments", {"environment_id": "e#1"}, "environment_id"),
        ("/api/v1/model-profiles", {"model_profile_id": "m#1", "model": "m"}, "model_profile_id"),
    ],
)
def test_an_id_with_a_key_separator_is_a_400_naming_the_field(b, path, body, field):
    status, resp = b.call("POST", path, json=body)
    assert status == 400 and resp["error"]["field"] == field, resp


def test_a_suite_or_reference_id_with_a_key_separator_is_a_400_naming_the_field(b):
    agent = f"sep-{uuid.uuid4().hex[:6]}"
    b.ok("POST", "/api/v1/agents", json={"name": "x", "agent_id": agent, "spec": agent_spec("42")})
    for body, field in (
        ({"dataset_id": "d", "suite_id": "s#1"}, "suite_id"),
        ({"dataset_id": "d#1"}, "dataset_id"),
        ({"dataset_id": "d", "environment_id": "e/1"}, "environment_id"),
    ):
        status, resp = b.call("POST", f"/api/v1/agents/{agent}/suites", json=body)
        assert status == 400 and resp["error"]["field"] == field, (body, resp)
    status, resp = b.call("POST", f"/api/v1/agents/{agent}/eval-runs", json={"dataset_id": "x#y"})
    assert status == 400 and resp["error"]["field"] == "dataset_id", resp


def test_the_same_ids_in_another_organization_are_its_own_things(world, a, b):
    a_results = a.ok("GET", f"/api/v1/agents/{IDS['agent']}/suites/{IDS['suite']}/results")[
        "results"
    ]
    a_runs = {r["run_id"] for r in a.ok("GET", f"/api/v1/agents/{IDS['agent']}/eval-runs")["runs"]}
    # B takes every id A chose: each a 201, none a 409.
    b.ok("PUT", f"/api/v1/secrets/{IDS['secret']}", json={"value": "b-secret-value"})
    status, body = b.call(
        "POST",
        "/api/v1/recordings",
        json={
            "recording_id": IDS["recording"],
            "content": json.dumps({"case_id": "c0", "answer": "b"}) + "\n",
        },
    )
    assert status == 201, body
    mine = build(b, mark="B-ONLY", wrong_c0=False)

    # Each side reads its own, under the same ids.
    i = IDS
    for org, mark in ((a, MARK), (b, "B-ONLY")):
        for path in (
            f"/api/v1/agents/{i['agent']}",
            f"/api/v1/datasets/{i['dataset']}",
            f"/api/v1/judges/{i['judge']}",
            f"/api/v1/model-profiles/{i['model_profile']}",
            f"/api/v1/environments/{i['environment']}",
            f"/api/v1/agents/{i['agent']}/suites/{i['suite']}",
        ):
            assert org.ok("GET", path)["name"] == mark, (org.org_id, path)
        cases = org.ok("GET", f"/api/v1/datasets/{i['dataset']}/versions/1/cases")["cases"]
        assert all(c["input"].startswith(mark) for c in cases)
        assert (
            org.ok("GET", f"/api/v1/judges/{i['judge']}/versions/1")["spec"]["criteria"][0]["text"]
            == f"{mark} graded"
        )
    assert a.ok("GET", f"/api/v1/agents/{i['agent']}/versions/1")["spec"]["options"]["answers"] == {
        "c0": "41"
    }
    assert b.ok("GET", f"/api/v1/agents/{i['agent']}/versions/1")["spec"]["options"]["answers"] == {
        "c0": "42"
    }

    # Runs and listings never mix: B's suite with A's suite id holds B's result only.
    b_runs = {r["run_id"] for r in b.ok("GET", f"/api/v1/agents/{i['agent']}/eval-runs")["runs"]}
    assert b_runs == {mine["run_id"], mine["suite_run_id"]} and not b_runs & a_runs
    assert {
        r["run_id"] for r in a.ok("GET", f"/api/v1/agents/{i['agent']}/eval-runs")["runs"]
    } == a_runs
    assert {
        r["run_id"] for r in b.ok("GET", f"/api/v1/datasets/{i['dataset']}/eval-runs")["runs"]
    } == b_runs
    assert {r["run_id"] for r in b.ok("GET", "/api/v1/eval-runs")["runs"]} >= b_runs
    assert not {r["run_id"] for r in b.ok("GET", "/api/v1/eval-runs")["runs"]} & a_runs
    b_results = b.ok("GET", f"/api/v1/agents/{i['agent']}/suites/{i['suite']}/results")["results"]
    assert [r["run_id"] for r in b_results] == [mine["suite_run_id"]]
    assert b_results[0]["result"] == "passed" and a_results[0]["result"] == "failed"
    for run_id in a_runs:
        refusal_of(b, "GET", f"/api/v1/eval-runs/{run_id}", None)
    refusal_of(b, "GET", f"/api/v1/agents/{i['agent']}/promotions/{world['promotion_id']}", None)
    assert [
        p["promotion_id"]
        for p in b.ok("GET", f"/api/v1/agents/{i['agent']}/promotions")["promotions"]
    ] == [mine["promotion_id"]]
    assert b.ok("GET", f"/api/v1/secrets/{i['secret']}")["name"] == i["secret"]

    # Deleting B's suite deletes B's results only.
    b.ok("DELETE", f"/api/v1/agents/{i['agent']}/suites/{i['suite']}")
    refusal_of(b, "GET", f"/api/v1/agents/{i['agent']}/suites/{i['suite']}", None)
    assert (
        a.ok("GET", f"/api/v1/agents/{i['agent']}/suites/{i['suite']}/results")["results"]
        == a_results
    )

    # A's verdict beside version 1 does not move with B's runs under the same agent id.
    assert summary(a) == world["summary"]
    assert summary(a)["run_ids"] == sorted(world["summary"]["run_ids"])
    assert set(summary(b)["run_ids"]) <= b_runs and summary(b)["passed"] == summary(b)["total"] == 3
    assert a.ok("GET", f"/api/v1/environments/{i['environment']}")["serving"] == {i["agent"]: 1}

    # Their agent runs under the same agent id, and a production run reported under the same key
    # by each, are each organization's own.
    report = {"runs": [{"key": "same-key", "agent_id": i["agent"], "cost_usd": "0.5"}]}
    assert a.ok("POST", "/api/v1/usage/runs", json=report)["accepted"] == 1
    assert b.ok("POST", "/api/v1/usage/runs", json=report)["accepted"] == 1
    seen = {
        org.org_id: {
            r["agent_run_id"] for r in org.ok("GET", f"/api/v1/agents/{i['agent']}/runs")["runs"]
        }
        for org in (a, b)
    }
    assert all(seen.values()) and not (seen[a.org_id] & seen[b.org_id])
    for org in (a, b):
        assert org.ok("GET", "/api/v1/usage")["runs"]["production"] == 1
