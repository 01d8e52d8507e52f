"""The access walk's table (`tests/security/test_access_walk.py`): every route, the body it is
asked with, and what it needs in the order the service checks it, each missing permission with
the status it answers (403 naming it, or 404 where it is what makes the resource visible)."""

from __future__ import annotations

from typing import Any

from chalicelib.domain import access
from tests.support.e2e import cases, sleepy_spec

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


def table(w: dict[str, str]) -> list[tuple[str, str, Any, list[tuple[str, int]], bool]]:
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
