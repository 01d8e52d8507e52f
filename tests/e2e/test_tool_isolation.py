"""Tool isolation through the HTTP API (docs/guides/tools.md): an `openai` agent whose model asks
for tool calls is evaluated, and no call of an eval attempt is ever a production write.

A local tool server stands for the organization's systems: a production endpoint and a test
endpoint on 127.0.0.1 (the embedded stack lets the service reach private addresses, as
`assay dev` does), each keeping every call it received. The model is the scripted fake
(`tests/support/fake_openai.py`), whose `turns` ask for tool calls on the first turn and answer
on a later one.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.support.e2e import Api
from tests.support.fake_openai import FakeOpenAI
from tests.support.tool_agent import ToolServer


@pytest.fixture(scope="module")
def tool_server() -> Iterator[ToolServer]:
    with ToolServer() as server:
        yield server


REFUND_TURNS = [
    {
        "answer": "Let me check the order.",
        "tool_calls": [
            {"name": "lookup_order", "arguments": {"order_id": "A1"}},
            {"name": "refund", "arguments": {"order_id": "A1", "amount": 30}},
        ],
    },
    {"answer": "Refund requested for A1."},
]

SCRIPT = {
    "rules": [
        {"match": "refund order A1", "turns": REFUND_TURNS},
        # look the order up, then answer with what the tool returned
        {
            "match": "look up order A1",
            "turns": [
                {"tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "A1"}}]},
                {"echo_tools": True},
            ],
        },
        # a different call every turn: only the step limit ends it
        {
            "match": "keep looking",
            "tool_calls": [{"name": "lookup_order", "arguments": {"order_id": "page-{turn}"}}],
        },
        # the same call every turn: a loop
        {
            "match": "refund again and again",
            "tool_calls": [{"name": "refund", "arguments": {"order_id": "A1", "amount": 30}}],
        },
        # list the workspace, write a note, read it back, then say what the tools returned
        {
            "contains": "workspace note",
            "turns": [
                {
                    "tool_calls": [
                        {"name": "workspace_list", "arguments": {}},
                        {
                            "name": "workspace_write",
                            "arguments": {"path": "note.txt", "content": "{input}"},
                        },
                    ]
                },
                {"tool_calls": [{"name": "workspace_read", "arguments": {"path": "note.txt"}}]},
                {"echo_tools": True},
            ],
        },
    ]
}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(SCRIPT) as server:
        yield server


TOOLS = [
    {
        "name": "lookup_order",
        "description": "Find an order",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
        "effect": "read",
        "connection_id": "shop",
    },
    {
        "name": "refund",
        "description": "Refund an order",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
            "required": ["order_id"],
        },
        "effect": "write",
        "connection_id": "shop",
    },
]


def agent_spec(fake: FakeOpenAI, **extra: Any) -> dict[str, Any]:
    return {"runtime": "openai", "base_url": fake.base_url, "model": "m", "tools": TOOLS, **extra}


def add_connection(api: Api, connection_id: str, url: str) -> None:
    """The organization's connection `connection_id` (an http one at `url`), through the API."""
    api.ok(
        "POST",
        "/api/v1/connections",
        json={"connection_id": connection_id, "kind": "http", "url": url},
    )


def use_test_connections(api: Api, environment_id: str, test_connections: dict[str, str]) -> None:
    """Make `environment_id` the organization's default environment, with `test_connections`
    (`{connection_id: test_connection_id}`), through the API."""
    api.ok(
        "POST",
        "/api/v1/environments",
        json={
            "environment_id": environment_id,
            "default": True,
            "test_connections": test_connections,
        },
    )


def attempts(api: Api, run_id: str) -> dict[str, list[dict[str, Any]]]:
    """Every attempt of the run's candidate, by case id, through `GET /eval-runs/{id}/cases`."""
    view = api.ok("GET", f"/api/v1/eval-runs/{run_id}/cases")
    return {c["case_id"]: c["arms"]["candidate"]["attempts"] for c in view["cases"]}


def run(api: Api, spec: dict[str, Any], cases: list[dict[str, Any]], required: list[str]) -> str:
    run_id = api.start(api.agent(spec), api.dataset(cases, required=required))["run_id"]
    assert api.wait(run_id)["status"] == "completed"
    return run_id


@pytest.fixture
def scope(api: Api, tool_server: ToolServer) -> str:
    """This test's own paths on the tool server; `shop` is the organization's production
    connection."""
    name = uuid.uuid4().hex[:12]
    add_connection(api, "shop", tool_server.url("prod", name))
    return name


REFUND_CASE = {
    "case_id": "refund",
    "input": "refund order A1",
    "expected_calls": [{"name": "refund", "arguments": {"order_id": "A1"}}],
}


def test_a_write_without_a_test_connection_is_blocked_kept_and_scored(
    api: Api, fake: FakeOpenAI, tool_server: ToolServer, scope: str
) -> None:
    run_id = run(api, agent_spec(fake), [REFUND_CASE], ["tool_calls"])

    # The read ran on its normal connection; the write reached nothing.
    assert tool_server.calls("prod", scope) == [("lookup_order", {"order_id": "A1"})]
    [attempt] = attempts(api, run_id)["refund"]
    lookup, refund = attempt["calls"]
    assert (lookup["name"], lookup["status"], lookup["connection_id"]) == (
        "lookup_order",
        "executed",
        "shop",
    )
    assert lookup["result"] == {
        "tool": "lookup_order",
        "where": "prod",
        "arguments": {"order_id": "A1"},
    }
    assert (refund["name"], refund["status"], refund["arguments"]) == (
        "refund",
        "blocked",
        {"order_id": "A1", "amount": 30},
    )
    assert refund["result"] is None and "connection_id" not in refund
    # A blocked call is still the call the agent meant: the tool_calls scorer passes it.
    assert attempt["state"] == "passed", attempt
    assert attempt["answer"] == "Refund requested for A1."


def test_with_a_test_connection_the_writes_go_there_and_never_to_production(
    api: Api, fake: FakeOpenAI, tool_server: ToolServer, scope: str
) -> None:
    add_connection(api, "shop-test", tool_server.url("test", scope))
    use_test_connections(api, "staging", {"shop": "shop-test"})
    run_id = run(api, agent_spec(fake), [REFUND_CASE], ["tool_calls"])

    assert tool_server.calls("prod", scope) == []
    assert tool_server.calls("test", scope) == [
        ("lookup_order", {"order_id": "A1"}),
        ("refund", {"order_id": "A1", "amount": 30}),
    ]
    [attempt] = attempts(api, run_id)["refund"]
    assert [(c["name"], c["status"], c["connection_id"]) for c in attempt["calls"]] == [
        ("lookup_order", "executed", "shop-test"),
        ("refund", "executed", "shop-test"),
    ]
    assert attempt["calls"][1]["result"]["where"] == "test"
    assert attempt["state"] == "passed", attempt


def test_a_read_runs_on_its_normal_connection_and_the_agent_gets_its_result(
    api: Api, fake: FakeOpenAI, tool_server: ToolServer, scope: str
) -> None:
    case = {"case_id": "look", "input": "look up order A1", "reference": '"where": "prod"'}
    run_id = run(api, agent_spec(fake), [case], ["contains"])

    assert tool_server.calls("prod", scope) == [("lookup_order", {"order_id": "A1"})]
    [attempt] = attempts(api, run_id)["look"]
    assert [(c["status"], c["connection_id"]) for c in attempt["calls"]] == [("executed", "shop")]
    # the fake answers with what the tool returned, as the agent was given it
    assert json.loads(attempt["answer"]) == {
        "status": "executed",
        "result": {"tool": "lookup_order", "where": "prod", "arguments": {"order_id": "A1"}},
    }
    assert attempt["state"] == "passed"


def test_running_past_the_step_limit_is_a_crash(
    api: Api, fake: FakeOpenAI, tool_server: ToolServer, scope: str
) -> None:
    case = {"case_id": "steps", "input": "keep looking", "reference": "x"}
    run_id = run(api, agent_spec(fake, max_steps=3), [case], ["contains"])

    [attempt] = attempts(api, run_id)["steps"]
    assert (attempt["state"], attempt["crash"]) == ("failed", True)
    assert "the agent took more than 3 steps" in attempt["reason"]
    # turns 1 and 2 made their calls; turn 3's would need a fourth turn, so it was not made
    assert [c["arguments"] for c in attempt["calls"]] == [
        {"order_id": "page-0"},
        {"order_id": "page-1"},
    ]
    assert tool_server.calls("prod", scope) == [
        ("lookup_order", {"order_id": "page-0"}),
        ("lookup_order", {"order_id": "page-1"}),
    ]


def test_the_same_call_again_and_again_is_a_crash(
    api: Api, fake: FakeOpenAI, tool_server: ToolServer, scope: str
) -> None:
    case = {"case_id": "loop", "input": "refund again and again", "reference": "x"}
    run_id = run(api, agent_spec(fake), [case], ["contains"])

    [attempt] = attempts(api, run_id)["loop"]
    assert (attempt["state"], attempt["crash"]) == ("failed", True)
    assert "loop" in attempt["reason"] and "refund" in attempt["reason"]
    assert [c["status"] for c in attempt["calls"]] == ["blocked"] * 3
    assert tool_server.calls("prod", scope) == []


def test_each_attempt_has_its_own_workspace(api: Api, fake: FakeOpenAI, limits: Any) -> None:
    limits(1, 1)  # one case at a time: whichever runs second would see the first's file if shared
    cases = [
        {"case_id": f"w{i}", "input": f"workspace note {i}", "reference": f"workspace note {i}"}
        for i in (1, 2)
    ]
    run_id = run(api, agent_spec(fake, tools=[]), cases, ["contains"])

    for case_id, text in (("w1", "workspace note 1"), ("w2", "workspace note 2")):
        [attempt] = attempts(api, run_id)[case_id]
        listed, written, read = (json.loads(line) for line in attempt["answer"].splitlines())
        assert listed == {"status": "executed", "result": {"paths": []}}, attempt
        assert written["result"] == {"path": "note.txt", "written": True}
        assert read == {"status": "executed", "result": {"path": "note.txt", "content": text}}
        assert [(c["name"], c["connection_id"]) for c in attempt["calls"]] == [
            ("workspace_list", "workspace"),
            ("workspace_write", "workspace"),
            ("workspace_read", "workspace"),
        ]
        assert attempt["state"] == "passed"
