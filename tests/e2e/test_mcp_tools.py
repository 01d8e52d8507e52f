"""An agent whose tools live on an MCP server, evaluated isolated through the HTTP API
(docs/guides/tools.md, "MCP"): the spec names an `mcp` connection in `mcp_connections`, each
attempt lists the server's tools (a `readOnlyHint` tool is a read, anything else a write), and the
rule decides every call. The server is the MCP SDK's own (FastMCP over streamable HTTP on
127.0.0.1); the model is the scripted fake."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.e2e import Api
from tests.support.fake_openai import FakeOpenAI
from tests.support.mcp_servers import ShopServer, shop_server

SCRIPT = {
    "rules": [
        {
            "match": "refund order A1 and tell the customer",
            "turns": [
                {
                    "tool_calls": [
                        {"name": "lookup_order", "arguments": {"order_id": "A1"}},
                        {
                            "name": "send_email",
                            "arguments": {"to": "ann@example.com", "body": "refunded"},
                        },
                    ]
                },
                {"echo_tools": True},
            ],
        }
    ]
}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(SCRIPT) as server:
        yield server


@pytest.fixture(scope="module")
def production() -> Iterator[ShopServer]:
    with shop_server() as server:
        yield server


@pytest.fixture(scope="module")
def testing() -> Iterator[ShopServer]:
    with shop_server(json_response=True) as server:
        yield server


def connect(api: Api, connection_id: str, server: ShopServer) -> None:
    api.ok(
        "POST",
        "/api/v1/connections",
        json={"connection_id": connection_id, "kind": "mcp", "url": server.url},
    )


def evaluate(api: Api, fake: FakeOpenAI) -> list[dict[str, Any]]:
    spec = {
        "runtime": "openai",
        "base_url": fake.base_url,
        "model": "m",
        "mcp_connections": ["shop"],
    }
    cases = [
        {
            "case_id": "c1",
            "input": "refund order A1 and tell the customer",
            "expected_calls": [{"name": "send_email"}],
        }
    ]
    run_id = api.start(api.agent(spec), api.dataset(cases, required=["tool_calls"]))["run_id"]
    assert api.wait(run_id)["status"] == "completed"
    view = api.ok("GET", f"/api/v1/eval-runs/{run_id}/cases")
    (case,) = view["cases"]
    (attempt,) = case["arms"]["candidate"]["attempts"]
    assert attempt["state"] == "passed", attempt
    return attempt["calls"]


def test_an_mcp_servers_read_runs_and_its_unannotated_write_is_blocked(
    api: Api, fake: FakeOpenAI, production: ShopServer
):
    connect(api, "shop", production)
    api.ok("POST", "/api/v1/environments", json={"environment_id": "prod", "default": True})
    sent_before = len(production.sent)
    lookup, email = evaluate(api, fake)
    assert (lookup["name"], lookup["status"], lookup["connection_id"]) == (
        "lookup_order",
        "executed",
        "shop",
    )
    assert lookup["result"]["state"] == "paid"
    assert (email["name"], email["status"]) == ("send_email", "blocked")
    assert email["arguments"] == {"to": "ann@example.com", "body": "refunded"}
    assert len(production.sent) == sent_before  # no email sent by the eval


def test_with_a_test_connection_the_write_reaches_the_test_server_only(
    api: Api, fake: FakeOpenAI, production: ShopServer, testing: ShopServer
):
    connect(api, "shop", production)
    connect(api, "shop-test", testing)
    api.ok(
        "POST",
        "/api/v1/environments",
        json={"environment_id": "prod", "default": True, "test_connections": {"shop": "shop-test"}},
    )
    sent_before, test_before = len(production.sent), len(testing.sent)
    lookup, email = evaluate(api, fake)
    assert (lookup["status"], lookup["connection_id"]) == ("executed", "shop-test")
    assert (email["status"], email["connection_id"]) == ("executed", "shop-test")
    assert len(testing.sent) == test_before + 1
    assert len(production.sent) == sent_before


def test_a_spec_naming_an_http_connection_as_an_mcp_server_is_refused(api: Api, fake: FakeOpenAI):
    api.ok(
        "POST",
        "/api/v1/connections",
        json={"connection_id": "plain", "kind": "http", "url": "http://127.0.0.1:9/x"},
    )
    spec = {
        "runtime": "openai",
        "base_url": fake.base_url,
        "model": "m",
        "mcp_connections": ["plain"],
    }
    status, body = api.call("POST", "/api/v1/agents", json={"name": "a", "spec": spec})
    assert status == 400 and body["error"]["field"] == "spec.mcp_connections[0]", body
    spec["mcp_connections"] = ["missing"]
    status, body = api.call("POST", "/api/v1/agents", json={"name": "a", "spec": spec})
    assert status == 404 and body["error"]["field"] == "spec.mcp_connections[0]", body
