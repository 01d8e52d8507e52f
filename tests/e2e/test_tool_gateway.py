"""The tool gateway through the HTTP API (docs/guides/tools.md): an `http` agent on 127.0.0.1
calls its tools through the gateway its case payload names; every call is decided by the
isolation rule, made on a test connection or not at all for a write, kept on the attempt; what
the agent only reports is kept `unverified`; what the gateway refuses changes nothing."""

from __future__ import annotations

import json

import httpx
import pytest

from chalicelib.domain import records
from tests.e2e.conftest import cases
from tests.support.tool_agent import GatewayAgent, McpAgent, ToolServer

TOOLS = [
    {
        "name": "refund",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
        "effect": "write",
        "connection_id": "shop",
    },
    {"name": "send_email", "effect": "write", "connection_id": "mail"},
    {"name": "lookup_customer", "effect": "read", "connection_id": "crm"},
]

CALLS = [
    ("refund", {"order_id": "A1"}),
    ("send_email", {"to": "customer@example.com"}),
    ("lookup_customer", {"customer_id": "C1"}),
]


@pytest.fixture
def tool_server():
    with ToolServer() as server:
        yield server


@pytest.fixture
def agent():
    with GatewayAgent(CALLS) as served:
        yield served


def _connections(container, org_id: str, server: ToolServer) -> None:
    """Production connections `shop`, `mail`, `crm` and the test connection `shop-test`, which
    stands in for `shop` on the organization's default environment."""
    for connection_id, where, named in (
        ("shop", "prod", "shop"),
        ("shop-test", "test", "shop"),
        ("mail", "prod", "mail"),
        ("crm", "prod", "crm"),
    ):
        container.connections.create(
            records.Connection(
                org_id=org_id,
                connection_id=connection_id,
                kind="http",
                url=server.url(where, named),
                created_at="2026-12-05T00:00:00Z",
            )
        )
    container.environments.set_test_connections(org_id, "production", {"shop": "shop-test"})


def test_an_http_agents_calls_through_the_gateway_are_isolated_kept_and_refused_when_wrong(
    api, container, tool_server, agent
):
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production", "default": True})
    _connections(container, api.org_id, tool_server)
    agent_id = api.agent({"runtime": "http", "url": agent.url, "tools": TOOLS})
    run = api.start(agent_id, api.dataset(cases(2)))
    assert api.wait(run["run_id"])["status"] == "completed"

    # Production received no write: the refund ran on the test connection, the email on none.
    assert dict(tool_server.received) == {
        ("test", "shop", "refund"): 2,
        ("prod", "crm", "lookup_customer"): 2,
    }
    # What the agent was answered for each call.
    for made in agent.made.values():
        assert [(m["status_code"], m["status"]) for m in made] == [
            (200, "executed"),
            (200, "blocked"),
            (200, "executed"),
        ]
        assert made[0]["result"] == {
            "where": "test",
            "tool": "refund",
            "arguments": {"order_id": "A1"},
        }
        assert "not executed" in made[1]["note"]
    # Each refusal, during the attempt.
    assert sorted(agent.refusals) == ["c000", "c001"]
    for refused in agent.refusals.values():
        assert {k: v for k, v in refused.items() if k != "other_token"} == {
            "no_token": (401, "Authorization"),
            "unknown_tool": (404, "tool_name"),
            "bad_arguments": (400, "arguments"),
            "not_an_object": (400, "arguments"),
            "not_json": (400, "arguments"),
        }
    crossed_during = [r.get("other_token") for r in agent.refusals.values()]
    assert (401, "Authorization") in crossed_during

    # The calls kept on each attempt: those made through the gateway first, then the reported one.
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    attempts = {r["case_id"]: r for r in view["results"]}
    for case_id in ("c000", "c001"):
        calls = attempts[case_id]["calls"]
        assert [(c["name"], c["status"], c.get("connection_id")) for c in calls] == [
            ("refund", "executed", "shop-test"),
            ("send_email", "blocked", None),
            ("lookup_customer", "executed", "crm"),
            ("notify_slack", "unverified", None),
        ]
        assert calls[1]["arguments"] == {"to": "customer@example.com"}
        assert "test connection" in calls[0]["reason"]
    # The tokens are nowhere in what the run keeps.
    kept = json.dumps(view)
    for payload in agent.payloads.values():
        assert payload["tools_token"] not in kept
        assert payload["tools_mcp_url"] == payload["tools_url"].removesuffix("/tools") + "/mcp"

    # After the run: an attempt's own token is refused (403: its attempt ended), another's is 401.
    first, second = agent.payloads["c000"], agent.payloads["c001"]
    own = httpx.post(
        f"{first['tools_url']}/refund",
        json={"order_id": "A2"},
        headers={"Authorization": f"Bearer {first['tools_token']}"},
    )
    assert own.status_code == 403 and own.json()["error"]["field"] == "Authorization"
    crossed = httpx.post(
        f"{first['tools_url']}/refund",
        json={"order_id": "A2"},
        headers={"Authorization": f"Bearer {second['tools_token']}"},
    )
    assert crossed.status_code == 401
    # Nothing more was sent, and nothing more kept.
    assert sum(tool_server.received.values()) == 4
    again = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert [r["calls"] for r in again["results"]] == [r["calls"] for r in view["results"]]


def test_the_refusals_name_what_is_wrong_and_an_unknown_session_reveals_nothing(
    api, container, tool_server, agent
):
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production", "default": True})
    _connections(container, api.org_id, tool_server)
    agent_id = api.agent({"runtime": "http", "url": agent.url, "tools": TOOLS})
    run = api.start(agent_id, api.dataset(cases(1)))
    assert api.wait(run["run_id"])["status"] == "completed"
    payload = agent.payloads["c000"]
    url, token = payload["tools_url"], payload["tools_token"]
    auth = {"Authorization": f"Bearer {token}"}
    # Another session, run or organization: 401, as a wrong token.
    for wrong in (
        url.replace(f"/{run['run_id']}/", "/run-nope/"),
        url.replace(f"/{api.org_id}/", "/org_nope/"),
        url.rsplit("/", 2)[0] + "/0123456789abcdef01234567/tools",
    ):
        answer = httpx.post(f"{wrong}/refund", json={"order_id": "A1"}, headers=auth)
        assert answer.status_code == 401, wrong
        assert "opens no tool session" in answer.json()["error"]["message"]
    # Arguments over the limit: 413 naming them.
    big = httpx.post(f"{url}/refund", content=b"x" * (256 * 1024 + 1), headers=auth)
    assert big.status_code == 413 and big.json()["error"]["field"] == "arguments"
    assert sum(tool_server.received.values()) == 2
    # The session goes with its run.
    session_id = url.rsplit("/", 2)[1]
    assert container.tool_sessions.get(api.org_id, run["run_id"], session_id) is not None
    api.ok("DELETE", f"/api/v1/agents/{agent_id}")
    assert container.tool_sessions.get(api.org_id, run["run_id"], session_id) is None


def test_the_same_call_three_times_in_a_row_through_the_gateway_is_a_loop_and_a_crash(
    api, container, tool_server
):
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production", "default": True})
    _connections(container, api.org_id, tool_server)
    looping = [("lookup_customer", {"customer_id": "C1"})] * 3
    with GatewayAgent(looping) as agent:
        agent_id = api.agent({"runtime": "http", "url": agent.url, "tools": TOOLS})
        run = api.start(agent_id, api.dataset(cases(1)))
        assert api.wait(run["run_id"])["status"] == "completed"
    [attempt] = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["results"]
    assert (attempt["state"], attempt["crash"]) == ("failed", True)
    assert "lookup_customer 3 times in a row" in attempt["error"]
    assert [c["name"] for c in attempt["calls"]] == ["lookup_customer"] * 3


def test_an_answer_quoting_the_attempts_tool_token_is_kept_with_the_token_redacted(
    api, container, tool_server
):
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production", "default": True})
    _connections(container, api.org_id, tool_server)
    with GatewayAgent(CALLS[:1], answer=lambda p: f"42, called with {p['tools_token']}") as agent:
        agent_id = api.agent({"runtime": "http", "url": agent.url, "tools": TOOLS})
        run = api.start(agent_id, api.dataset(cases(1), required=["contains"]))
        assert api.wait(run["run_id"])["status"] == "completed"
    [attempt] = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["results"]
    assert attempt["answer"] == "42, called with [REDACTED:tool_token]"
    assert agent.payloads["c000"]["tools_token"] not in json.dumps(attempt)


def test_an_agent_taking_its_tools_from_mcp_is_isolated_with_no_code_change(
    api, container, tool_server
):
    """The agent points the MCP SDK's client at `tools_mcp_url`: it lists the attempt's tools
    and calls them there, each decided, made and kept as through `tools_url`."""
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production", "default": True})
    _connections(container, api.org_id, tool_server)
    with McpAgent(CALLS) as agent:
        agent_id = api.agent({"runtime": "http", "url": agent.url, "tools": TOOLS})
        run = api.start(agent_id, api.dataset(cases(1)))
        assert api.wait(run["run_id"])["status"] == "completed"
    assert agent.listed["c000"] == [
        "refund",
        "send_email",
        "lookup_customer",
        "workspace_read",
        "workspace_write",
        "workspace_list",
    ]
    refund, email, lookup = agent.results["c000"]
    assert refund["status"] == "executed" and refund["result"]["where"] == "test"
    assert email["status"] == "blocked"
    assert lookup["status"] == "executed"
    assert dict(tool_server.received) == {
        ("test", "shop", "refund"): 1,
        ("prod", "crm", "lookup_customer"): 1,
    }
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    (result,) = view["results"]
    assert [(c["name"], c["status"], c.get("connection_id")) for c in result["calls"]] == [
        ("refund", "executed", "shop-test"),
        ("send_email", "blocked", None),
        ("lookup_customer", "executed", "crm"),
    ]
