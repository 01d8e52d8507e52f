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
from tests.security import access_routes
from tests.security.access_routes import IMPLIES, ITEM, PERSON
from tests.support.e2e import Api, cases, sleepy_spec


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

    table = {(m, p.split("?")[0]) for m, p, *_ in access_routes.table(world["ids"])}
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
        for method, path, body, needs, person in access_routes.table(world["ids"])
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
    for method, path, body, _needs, person in access_routes.table(world["ids"]):
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
