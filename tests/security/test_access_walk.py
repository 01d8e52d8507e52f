"""Every route, asked by someone who lacks each permission it needs (issue 14,
docs/reference/access.md).

One organization holds one of everything (an agent, a dataset, a completed run, a suite, an
evaluation...). For each route the table below says, in the order the service checks them, what it
needs; the test asks it once per permission with a caller holding everything but that permission
(and what it implies) and expects a 403 naming the permission, or a 404 without a word of
permissions where that permission is what makes the route's agent, dataset or run visible. Routes
only a person may use (a suite's changes and issuing a key spend as one; a person's notices and
their settings are theirs) are also asked with an API key holding every scope, and refuse it. A
route missing from the table fails the test, so a new route must say what it needs.

Callers: an API key acts for its creator within its scopes, so "everything but p" is a key the
organization's admin issues with every scope but p. A person (for the routes a key may not use) is
built from a role and grants: a viewer, or a guest where `runs:view` or the sight of the agent or
the dataset must be missing, granted every agent and dataset permission but p on the organization's
agent and dataset.
"""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain import access
from tests.support.e2e import Api, cases, sleepy_spec

V = 404
"""Expected when the missing permission is the one that makes the resource visible."""

IMPLIES = {
    access.AGENTS_VIEW: {access.AGENTS_VIEW, access.AGENTS_RUN, access.AGENTS_EDIT},
    access.DATASETS_VIEW: {access.DATASETS_VIEW, access.DATASETS_RUN, access.DATASETS_EDIT},
}
"""Lacking a view permission means lacking what implies it: whoever may run or edit may see."""

ITEM = "ri0000000000001aaaaaaaaaaaaaaaa"
"""A review item id of the right shape that no queue holds."""

RUN_READ = [("runs:view", 403), ("agents:view", V), ("datasets:view", V)]
START = [
    ("runs:view", 403),
    ("datasets:view", V),
    ("datasets:run", 403),
    ("agents:view", V),
    ("agents:run", 403),
]
SUITE_CHANGE = [
    ("agents:view", V),
    ("agents:edit", 403),
    ("agents:run", 403),
    ("datasets:view", V),
    ("datasets:run", 403),
    ("runs:view", 403),
]
SUITE_READ = [("runs:view", 403), ("agents:view", V)]

PERSON = "person"
JUDGE = {"model_profile_id": "p1", "criteria": [{"criterion_id": "ok", "text": "It is right."}]}


def _table(w: dict[str, str]) -> list[tuple[str, str, Any, list[tuple[str, int]], bool]]:
    """`(method, path, json body, [(permission, expected status)], needs a person)` per route."""
    a, d, r, s, e = w["agent"], w["dataset"], w["run"], w["suite"], w["evaluation"]
    key = w["key"]
    start = {"dataset_id": d, "candidate": "version"}
    return [
        ("GET", "/api/v1/me", None, [], False),
        # the operator's: no permission of an organization reaches it
        # (test_the_operator_s_route_refuses_every_caller_of_an_organization)
        ("PUT", f"/api/v1/organizations/{w['org']}/limits", {"concurrency": 1}, [], False),
        ("GET", "/api/v1/members", None, [("members:manage", 403)], False),
        (
            "POST",
            "/api/v1/members",
            {"user_id": "new@example.com", "role": "viewer"},
            [("members:manage", 403)],
            False,
        ),
        ("GET", f"/api/v1/members/{w['admin']}", None, [("members:manage", 403)], False),
        (
            "PATCH",
            f"/api/v1/members/{w['admin']}",
            {"role": "viewer"},
            [("members:manage", 403)],
            False,
        ),
        ("DELETE", f"/api/v1/members/{w['admin']}", None, [("members:manage", 403)], False),
        (
            "PUT",
            f"/api/v1/members/{w['admin']}/grants/agent/{a}",
            {"permissions": ["agents:run"]},
            [("members:manage", 403)],
            False,
        ),
        (
            "DELETE",
            f"/api/v1/members/{w['admin']}/grants/agent/{a}",
            None,
            [("members:manage", 403)],
            False,
        ),
        ("POST", "/api/v1/api-keys", {"scopes": ["runs:view"]}, [("runs:view", 403)], True),
        ("GET", "/api/v1/api-keys", None, [], False),
        ("DELETE", f"/api/v1/api-keys/{key}", None, [("members:manage", V)], False),
        # agents
        (
            "POST",
            "/api/v1/agents",
            {"name": "x", "spec": sleepy_spec()},
            [("agents:edit", 403)],
            False,
        ),
        ("GET", "/api/v1/agents", None, [], False),
        ("GET", f"/api/v1/agents/{a}", None, [("agents:view", V)], False),
        ("DELETE", f"/api/v1/agents/{a}", None, [("agents:view", V), ("agents:edit", 403)], False),
        (
            "GET",
            f"/api/v1/agents/{a}/draft",
            None,
            [("agents:view", V), ("agents:edit", 403)],
            False,
        ),
        (
            "PUT",
            f"/api/v1/agents/{a}/draft",
            {"spec": sleepy_spec()},
            [("agents:view", V), ("agents:edit", 403)],
            False,
        ),
        (
            "POST",
            f"/api/v1/agents/{a}/versions",
            None,
            [("agents:view", V), ("agents:edit", 403)],
            False,
        ),
        ("GET", f"/api/v1/agents/{a}/versions", None, [("agents:view", V)], False),
        ("GET", f"/api/v1/agents/{a}/versions/1", None, [("agents:view", V)], False),
        # model profiles, environments, promotions
        (
            "POST",
            "/api/v1/model-profiles",
            {"model_profile_id": "p2", "model": "gpt-4o-mini"},
            [("agents:edit", 403)],
            False,
        ),
        ("GET", "/api/v1/model-profiles", None, [("agents:view", 403)], False),
        ("GET", f"/api/v1/model-profiles/{w['profile']}", None, [("agents:view", 403)], False),
        ("DELETE", f"/api/v1/model-profiles/{w['profile']}", None, [("agents:edit", 403)], False),
        (
            "POST",
            "/api/v1/environments",
            {"environment_id": "stage"},
            [("settings:manage", 403)],
            False,
        ),
        ("GET", "/api/v1/environments", None, [("agents:view", 403)], False),
        ("GET", "/api/v1/environments/production", None, [("agents:view", 403)], False),
        ("DELETE", "/api/v1/environments/production", None, [("settings:manage", 403)], False),
        (
            "PUT",
            "/api/v1/environments/production/test-connections",
            {"test_connections": {}},
            [("settings:manage", 403)],
            False,
        ),
        # connections
        (
            "POST",
            "/api/v1/connections",
            {"connection_id": "c2", "kind": "http", "url": "http://127.0.0.1:9/tools"},
            [("settings:manage", 403)],
            False,
        ),
        ("GET", "/api/v1/connections", None, [("agents:view", 403)], False),
        ("GET", f"/api/v1/connections/{w['connection']}", None, [("agents:view", 403)], False),
        (
            "DELETE",
            f"/api/v1/connections/{w['connection']}",
            None,
            [("settings:manage", 403)],
            False,
        ),
        (
            "POST",
            f"/api/v1/agents/{a}/promotions",
            {"environment_id": "production", "version": 1},
            [("agents:view", V), ("agents:edit", 403)],
            False,
        ),
        ("GET", f"/api/v1/agents/{a}/promotions", None, [("agents:view", V)], False),
        ("GET", f"/api/v1/agents/{a}/guards", None, [("agents:view", V)], False),
        (
            "GET",
            f"/api/v1/agents/{a}/promotions/{w['promotion']}",
            None,
            [("agents:view", V)],
            False,
        ),
        # suites
        ("POST", f"/api/v1/agents/{a}/suites", {"dataset_id": d}, SUITE_CHANGE, True),
        ("GET", f"/api/v1/agents/{a}/suites", None, SUITE_READ, False),
        ("GET", f"/api/v1/agents/{a}/suites/{s}", None, SUITE_READ, False),
        ("PATCH", f"/api/v1/agents/{a}/suites/{s}", {"name": "n"}, SUITE_CHANGE, True),
        ("DELETE", f"/api/v1/agents/{a}/suites/{s}", None, SUITE_CHANGE, True),
        ("POST", f"/api/v1/agents/{a}/suites/{s}/pause", None, SUITE_CHANGE, True),
        ("POST", f"/api/v1/agents/{a}/suites/{s}/resume", None, SUITE_CHANGE, True),
        ("POST", f"/api/v1/agents/{a}/suites/{s}/run", None, SUITE_CHANGE, True),
        ("GET", f"/api/v1/agents/{a}/suites/{s}/results", None, SUITE_READ, False),
        # a person's own notices: any member signed in (or acting as them), never a key
        ("GET", "/api/v1/notifications", None, [], True),
        ("POST", "/api/v1/notifications/n0/read", None, [], True),
        ("PUT", "/api/v1/notifications/settings", {"email": False}, [], True),
        # budgets
        ("GET", "/api/v1/budget", None, [("runs:view", 403)], False),
        ("PUT", "/api/v1/budget", {"monthly_usd": 10}, [("settings:manage", 403)], False),
        ("GET", f"/api/v1/agents/{a}/budget", None, [("agents:view", V)], False),
        (
            "PUT",
            f"/api/v1/agents/{a}/budget",
            {"monthly_usd": 10},
            [("agents:view", V), ("agents:edit", 403)],
            False,
        ),
        # usage and agent runs
        (
            "POST",
            "/api/v1/usage/runs",
            {"runs": [{"key": "walk", "agent_id": a, "cost_usd": 0}]},
            [("settings:manage", 403)],
            False,
        ),
        ("GET", "/api/v1/usage", None, [("runs:view", 403)], False),
        ("GET", "/api/v1/runs", None, [("runs:view", 403)], False),
        ("GET", f"/api/v1/agents/{a}/runs", None, [("runs:view", 403), ("agents:view", V)], False),
        (
            "GET",
            f"/api/v1/runs/{w['agent_run']}",
            None,
            [("runs:view", 403), ("agents:view", V)],
            False,
        ),
        # judges
        ("POST", "/api/v1/judges", {"name": "j"}, [("datasets:edit", 403)], False),
        ("GET", f"/api/v1/judges/{w['judge']}", None, [("datasets:view", 403)], False),
        (
            "POST",
            f"/api/v1/judges/{w['judge']}/versions",
            JUDGE,
            [("datasets:edit", 403)],
            False,
        ),
        ("GET", f"/api/v1/judges/{w['judge']}/versions/1", None, [("datasets:view", 403)], False),
        # datasets
        ("POST", "/api/v1/datasets", {"name": "x"}, [("datasets:edit", 403)], False),
        ("GET", "/api/v1/datasets", None, [], False),
        ("GET", f"/api/v1/datasets/{d}", None, [("datasets:view", V)], False),
        (
            "DELETE",
            f"/api/v1/datasets/{d}",
            None,
            [("datasets:view", V), ("datasets:edit", 403)],
            False,
        ),
        (
            "POST",
            f"/api/v1/datasets/{d}/versions",
            {"scoring": {"required": ["equals"]}, "cases": cases(1)},
            [("datasets:view", V), ("datasets:edit", 403)],
            False,
        ),
        ("GET", f"/api/v1/datasets/{d}/versions/1/cases", None, [("datasets:view", V)], False),
        (
            "GET",
            f"/api/v1/datasets/{d}/eval-runs",
            None,
            [("runs:view", 403), ("datasets:view", V)],
            False,
        ),
        (
            "GET",
            f"/api/v1/datasets/{d}/eval-runs/chart",
            None,
            [("runs:view", 403), ("datasets:view", V)],
            False,
        ),
        (
            "POST",
            f"/api/v1/datasets/{d}/criteria",
            {"note": "It names the refund window.", "tags": ["t"]},
            [("datasets:view", V), ("datasets:edit", 403)],
            False,
        ),
        ("GET", f"/api/v1/datasets/{d}/review", None, [("datasets:view", V)], False),
        ("GET", f"/api/v1/datasets/{d}/review/{ITEM}", None, [("datasets:view", V)], False),
        (
            "POST",
            f"/api/v1/datasets/{d}/review/{ITEM}/decision",
            {"verdict": "pass"},
            [("datasets:view", V), ("datasets:edit", 403)],
            False,
        ),
        (
            "POST",
            f"/api/v1/datasets/{d}/review/{ITEM}/undo",
            None,
            [("datasets:view", V), ("datasets:edit", 403)],
            False,
        ),
        (
            "POST",
            f"/api/v1/datasets/{d}/review/{ITEM}/criterion",
            {"tags": ["t"]},
            [("datasets:view", V), ("datasets:edit", 403)],
            False,
        ),
        (
            "POST",
            f"/api/v1/eval-runs/{r}/review",
            {"side": "candidate"},
            [*RUN_READ, ("datasets:edit", 403)],
            False,
        ),
        (
            "POST",
            f"/api/v1/datasets/{d}/scores/rescore",
            {"run_id": r},
            [("datasets:view", V), ("datasets:edit", 403)],
            False,
        ),
        # eval runs
        ("POST", f"/api/v1/agents/{a}/eval-runs/estimate", start, START, False),
        ("POST", f"/api/v1/agents/{a}/eval-runs", start, START, False),
        (
            "POST",
            f"/api/v1/agents/{a}/eval-runs",
            {"dataset_id": d, "candidate": "draft"},
            [*START, ("agents:edit", 403)],
            False,
        ),
        (
            "GET",
            f"/api/v1/agents/{a}/eval-runs",
            None,
            [("runs:view", 403), ("agents:view", V)],
            False,
        ),
        (
            "GET",
            f"/api/v1/agents/{a}/eval-runs/chart",
            None,
            [("runs:view", 403), ("agents:view", V)],
            False,
        ),
        ("GET", "/api/v1/eval-runs", None, [("runs:view", 403)], False),
        ("GET", f"/api/v1/eval-runs/{r}", None, RUN_READ, False),
        ("DELETE", f"/api/v1/eval-runs/{r}", None, [*RUN_READ, ("agents:edit", 403)], False),
        ("POST", f"/api/v1/eval-runs/{r}/cancel", None, [*RUN_READ, ("agents:edit", 403)], False),
        (
            "POST",
            f"/api/v1/eval-runs/{r}/grade-again",
            None,
            [*RUN_READ, ("datasets:run", 403), ("agents:run", 403)],
            False,
        ),
        ("GET", f"/api/v1/eval-runs/{r}/comparison", None, RUN_READ, False),
        ("GET", f"/api/v1/eval-runs/{r}/cases", None, RUN_READ, False),
        (
            "GET",
            f"/api/v1/eval-runs/{r}/answer?attempt_key=candidate%23c000%23001",
            None,
            RUN_READ,
            False,
        ),
        (
            "GET",
            f"/api/v1/eval-runs/{r}/arms/candidate/spec",
            None,
            [*RUN_READ, ("agents:edit", 403)],
            False,
        ),
        (
            "GET",
            f"/api/v1/eval-runs/{r}/spec-changes",
            None,
            [*RUN_READ, ("agents:edit", 403)],
            False,
        ),
        ("GET", f"/api/v1/eval-runs/{r}/progress", None, RUN_READ, False),
        ("GET", f"/api/v1/eval-runs/{r}/events?wait=0", None, RUN_READ, False),
        ("GET", f"/api/evaluations/progress/{r}", None, RUN_READ, False),
        ("GET", f"/api/evaluations/stream/{r}?wait=0", None, RUN_READ, False),
        # evaluations
        (
            "POST",
            "/api/evaluations",
            {"agent_id": a, "dataset_id": d},
            START,
            False,
        ),
        ("GET", "/api/evaluations", None, [("runs:view", 403)], False),
        ("GET", f"/api/evaluations/{e}", None, RUN_READ, False),
        (
            "PATCH",
            f"/api/evaluations/{e}",
            {"name": "n"},
            [*RUN_READ, ("datasets:run", 403), ("agents:run", 403), ("agents:edit", 403)],
            False,
        ),
        ("DELETE", f"/api/evaluations/{e}", None, [*RUN_READ, ("agents:edit", 403)], False),
        (
            "POST",
            f"/api/evaluations/{e}/runs",
            {},
            [*RUN_READ, ("datasets:run", 403), ("agents:run", 403)],
            False,
        ),
        ("GET", f"/api/evaluations/{e}/runs", None, RUN_READ, False),
        ("GET", f"/api/evaluations/{e}/runs/{r}", None, RUN_READ, False),
        (
            "DELETE",
            f"/api/evaluations/{e}/runs/{r}",
            None,
            [*RUN_READ, ("agents:edit", 403)],
            False,
        ),
        # verdicts
        (
            "POST",
            "/api/v1/agent-summaries",
            {"agents": [{"agentId": a, "version": 1}]},
            [("runs:view", 403), ("agents:view", V)],
            False,
        ),
        (
            "POST",
            "/api/evaluations/agent-summaries",
            {"agents": [{"agentId": a, "version": 1}]},
            [("runs:view", 403), ("agents:view", V)],
            False,
        ),
        # secrets, recordings
        ("GET", "/api/v1/secrets", None, [("secrets:manage", 403)], False),
        ("PUT", "/api/v1/secrets/openai", {"value": "sk-x"}, [("secrets:manage", 403)], False),
        ("GET", "/api/v1/secrets/openai", None, [("secrets:manage", 403)], False),
        ("DELETE", "/api/v1/secrets/openai", None, [("secrets:manage", 403)], False),
        (
            "POST",
            "/api/v1/recordings",
            {"content": '{"case_id": "c1", "input": "q", "answer": "a"}\n'},
            [("datasets:edit", 403)],
            False,
        ),
        ("GET", "/api/v1/recordings", None, [("datasets:view", 403)], False),
        ("GET", f"/api/v1/recordings/{w['recording']}", None, [("datasets:view", 403)], False),
        ("DELETE", f"/api/v1/recordings/{w['recording']}", None, [("datasets:edit", 403)], False),
        (
            "POST",
            f"/api/v1/recordings/from-run/{w['run']}",
            {"recording_id": "from-run-1"},
            [("datasets:edit", 403), ("runs:view", 403)],
            False,
        ),
    ]


@pytest.fixture(scope="module")
def world(stack, new_api_module) -> dict[str, Any]:
    """One organization with one of everything, its admin, and a caller per missing permission."""
    admin: Api = new_api_module()
    agent = admin.agent(sleepy_spec(), publish=1)
    dataset = admin.dataset(cases(2))
    evaluation = admin.ok(
        "POST", "/api/evaluations", json={"agent_id": agent, "dataset_id": dataset}
    )["evaluation_id"]
    run = admin.ok("POST", f"/api/evaluations/{evaluation}/runs", json={})["run_id"]
    admin.wait(run)
    admin.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    promotion = admin.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 1},
    )["promotion_id"]
    suite = admin.ok("POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": dataset})
    profile = admin.ok(
        "POST", "/api/v1/model-profiles", json={"model_profile_id": "p1", "model": "gpt-4o-mini"}
    )["model_profile_id"]
    judge = admin.ok("POST", "/api/v1/judges", json={"name": "j"})["judge_id"]
    connection = admin.ok(
        "POST",
        "/api/v1/connections",
        json={"connection_id": "c1", "kind": "http", "url": "http://127.0.0.1:9/tools"},
    )["connection_id"]
    recording = admin.ok(
        "POST",
        "/api/v1/recordings",
        json={"content": '{"case_id": "c1", "input": "q", "answer": "a"}\n'},
    )["recording_id"]
    key = admin.ok("POST", "/api/v1/api-keys", json={"scopes": ["runs:view"]})["key_id"]
    ids = {
        "org": admin.org_id,
        "admin": admin.user_id,
        "agent": agent,
        "dataset": dataset,
        "run": run,
        "suite": suite["suite_id"],
        "evaluation": evaluation,
        "profile": profile,
        "judge": judge,
        "connection": connection,
        "recording": recording,
        "promotion": promotion,
        "key": key,
        "agent_run": admin.ok("GET", f"/api/v1/agents/{agent}/runs")["runs"][0]["agent_run_id"],
    }
    keys = {}
    persons = {}
    for p in access.PERMISSIONS:
        lacking = IMPLIES.get(p, {p})
        scopes = [q for q in access.PERMISSIONS if q not in lacking]
        made = admin.ok("POST", "/api/v1/api-keys", json={"name": f"all but {p}", "scopes": scopes})
        keys[p] = Api(admin.http.base_url, admin.org_id, admin.user_id, made["key"])
        user = f"lacks-{p.replace(':', '-')}@example.com"
        # a viewer holds runs:view and sees every agent and dataset: lacking those needs a guest
        role = "guest" if p == "runs:view" or p in IMPLIES else "viewer"
        admin.ok("POST", "/api/v1/members", json={"user_id": user, "role": role})
        for kind, rid in (("agent", agent), ("dataset", dataset)):
            granted = sorted(access.GRANTABLE[kind] - lacking)
            if granted:
                admin.ok(
                    "PUT",
                    f"/api/v1/members/{user}/grants/{kind}/{rid}",
                    json={"permissions": granted},
                )
        persons[p] = new_api_module(org_id=admin.org_id, user_id=user, role=None)
    everything = admin.ok("POST", "/api/v1/api-keys", json={"scopes": list(access.PERMISSIONS)})
    return {
        "ids": ids,
        "admin": admin,
        "keys": keys,
        "persons": persons,
        "full_key": Api(admin.http.base_url, admin.org_id, admin.user_id, everything["key"]),
    }


@pytest.fixture(scope="module")
def new_api_module(stack):
    """`new_api` for a module-scoped world (the function-scoped fixture cannot serve one)."""
    from tests.conftest import make_api

    return lambda **kw: make_api(stack, **kw)


def test_the_table_names_every_route(world):
    import app

    table = {(m, p.split("?")[0]) for m, p, *_ in _table(world["ids"])}
    ids = world["ids"]
    templated = set()
    for path, views in app.app.routes.items():
        for method, entry in views.items():
            if entry.view_name.startswith("method_not_allowed") or not path.startswith("/api/"):
                continue  # /openapi.json and the console's pages and assets hold no tenant data
            if path.startswith("/api/v1/gateway/"):
                continue  # an attempt's tool token, never a person's or a key's: test_tool_gateway
            templated.add((method, path))
    concrete = set()
    for method, path in templated:
        filled = path
        for name, value in {
            "{agent_id}": ids["agent"],
            "{dataset_id}": ids["dataset"],
            "{run_id}": ids["run"],
            "{suite_id}": ids["suite"],
            "{evaluation_id}": ids["evaluation"],
            "{model_profile_id}": ids["profile"],
            "{judge_id}": ids["judge"],
            "{connection_id}": ids["connection"],
            "{recording_id}": ids["recording"],
            "{promotion_id}": ids["promotion"],
            "{key_id}": ids["key"],
            "{user_id}": ids["admin"],
            "{environment_id}": "production",
            "{version}": "1",
            "{arm_id}": "candidate",
            "{notification_id}": "n0",
            "{name}": "openai",
            "{kind}": "agent",
            "{resource_id}": ids["agent"],
            "{item_id}": ITEM,
            "{agent_run_id}": ids["agent_run"],
            "{org_id}": ids["org"],
        }.items():
            filled = filled.replace(name, value)
        concrete.add((method, filled))
    assert concrete - table == set(), "routes the access table does not name"
    assert table - concrete == set(), "the access table names routes the API does not have"


def _cases(world) -> list[tuple[str, str, Any, str, int, bool]]:
    return [
        (method, path, body, permission, status, person)
        for method, path, body, needs, person in _table(world["ids"])
        for permission, status in needs
    ]


def test_every_route_refuses_whoever_lacks_each_permission_it_needs(world):
    wrong = []
    for method, path, body, permission, status, person in _cases(world):
        caller = world["persons" if person else "keys"][permission]
        got, answer = caller.call(method, path, json=body)
        error = answer.get("error", {}) if isinstance(answer, dict) else {}
        if status == 403:
            ok = got == 403 and error.get("permission") == permission
        else:
            ok = got == 404 and "permission" not in error and "permission" not in str(answer)
        if not ok:
            wrong.append(f"{method} {path} without {permission}: {got} {answer}")
    assert wrong == [], "\n".join(wrong)


def test_routes_only_a_person_may_use_refuse_an_api_key_with_every_scope(world):
    wrong = []
    for method, path, body, _needs, person in _table(world["ids"]):
        if not person:
            continue
        got, answer = world["full_key"].call(method, path, json=body)
        if not (got == 403 and answer["error"].get("permission") == PERSON):
            wrong.append(f"{method} {path}: {got} {answer}")
    assert wrong == [], "\n".join(wrong)


OPERATOR_KEY = "op-" + "k" * 40


def test_the_operator_s_route_refuses_every_caller_of_an_organization(world, operator, container):
    """`PUT /api/v1/organizations/{id}/limits` is the operator's: the organization's admin, a key
    with every scope and every caller of the walk are refused (403 naming permission `operator`),
    for their own organization and another, and nothing changes; the operator key is taken."""
    operator(assay_operator_key=OPERATOR_KEY)
    org = world["ids"]["org"]
    callers = [world["admin"], world["full_key"], *world["keys"].values()]
    callers += list(world["persons"].values())
    wrong = []
    for caller in callers:
        for target in (org, "another-org"):
            path = f"/api/v1/organizations/{target}/limits"
            got, answer = caller.call("PUT", path, json={"concurrency": 1000})
            error = answer.get("error", {}) if isinstance(answer, dict) else {}
            if not (got == 403 and error.get("permission") == "operator"):
                wrong.append(f"{caller.user_id} PUT {path}: {got} {answer}")
    assert wrong == [], "\n".join(wrong)
    assert container.orgs.get(org).own_concurrency_limit is None
    assert container.orgs.get("another-org") is None
    admin = world["admin"]
    as_operator = Api(admin.http.base_url, org, "operator", OPERATOR_KEY)
    assert (
        as_operator.ok("PUT", f"/api/v1/organizations/{org}/limits", json={"concurrency": None})[
            "concurrency"
        ]
        is None
    )


def test_nothing_changed_for_the_refusals(world):
    """The refused deletes and changes left everything where it was."""
    admin, ids = world["admin"], world["ids"]
    assert admin.ok("GET", f"/api/v1/eval-runs/{ids['run']}")["status"] == "completed"
    assert (
        admin.ok("GET", f"/api/v1/agents/{ids['agent']}/suites/{ids['suite']}")["paused"] is False
    )
    assert [
        m["role"]
        for m in admin.ok("GET", "/api/v1/members")["members"]
        if m["user_id"] == ids["admin"]
    ] == ["admin"]
    assert admin.ok("GET", "/api/v1/secrets")["secrets"] == []
    assert admin.ok("GET", f"/api/v1/agents/{ids['agent']}")["agent_id"] == ids["agent"]
    assert admin.ok("GET", f"/api/v1/datasets/{ids['dataset']}")["dataset_id"] == ids["dataset"]
