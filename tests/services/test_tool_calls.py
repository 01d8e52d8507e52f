"""The ToolBox of an eval attempt on in-memory fakes: each call decided by the isolation rule, made
only where the rule allows (never on production for a write), and kept with its status."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib.domain import agent_output
from chalicelib.domain.enums import CallStatus, ToolEffect
from chalicelib.domain.models import ToolCall
from chalicelib.domain.records import Connection
from chalicelib.domain.tool_isolation import IsolationSettings, RecordedCall
from chalicelib.domain.tools import DEFAULT_MAX_STEPS, check_max_steps, tools_of
from chalicelib.errors import InvalidInputError, NotFoundError
from chalicelib.services import tool_calls
from chalicelib.services.ports.tools import ToolCallFailed
from chalicelib.services.tool_calls import ToolBox
from tests.fakes import FakeContainer

ORG = "org_tools"
SPEC: dict[str, Any] = {
    "runtime": "openai",
    "tools": [
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
        {"name": "lookup", "effect": "read", "connection_id": "shop"},
        {"name": "notify", "connection_id": "mail"},
    ],
}


@pytest.fixture
def c() -> FakeContainer:
    c = FakeContainer()
    for connection_id, secret in (("shop", "shop-key"), ("shop-test", None), ("mail", None)):
        c.connections.create(
            Connection(
                org_id=ORG,
                connection_id=connection_id,
                kind="http",
                url=f"https://{connection_id}.example",
                auth_secret=secret,
                created_at="2026-12-01T00:00:00Z",
            )
        )
    c.secrets.kept[(ORG, "shop-key")] = "Bearer s3cret"
    return c


def box(
    c: FakeContainer,
    settings: IsolationSettings | None = None,
    recorded: tuple[RecordedCall, ...] = (),
    attempt_key: str = "candidate#q1#001",
) -> ToolBox:
    return ToolBox(
        c,  # type: ignore[arg-type]
        ORG,
        "run_1",
        attempt_key,
        tools_of(SPEC),
        settings or IsolationSettings(),
        recorded,
    )


def test_a_write_without_a_test_connection_is_blocked_and_kept_with_its_arguments(c):
    tools = box(c)
    reply = tools.call("refund", {"order_id": "A1"})
    assert reply.status is CallStatus.BLOCKED
    assert c.tool_transport.made == []
    assert tools.calls == [
        ToolCall(
            name="refund",
            arguments={"order_id": "A1"},
            status=CallStatus.BLOCKED,
            reason="tool 'refund' may write and its connection has no test connection",
        )
    ]
    assert reply.for_agent()["note"].startswith("blocked")


def test_a_tool_without_an_effect_is_a_write(c):
    assert box(c).call("notify", {"to": "x"}).status is CallStatus.BLOCKED
    assert c.tool_transport.made == []


def test_a_write_runs_on_the_test_connection_never_production(c):
    tools = box(c, IsolationSettings(test_connections={"shop": "shop-test"}))
    reply = tools.call("refund", {"order_id": "A1"})
    assert (reply.status, reply.connection_id) == (CallStatus.EXECUTED, "shop-test")
    assert [(m[0], m[1]) for m in c.tool_transport.made] == [("shop-test", "refund")]
    assert reply.result == {"ok": "refund"}
    assert tools.calls[0].connection_id == "shop-test"


def test_a_read_runs_on_its_connection_with_the_secret_as_its_auth_header(c):
    reply = box(c).call("lookup", {"order_id": "A1"})
    assert (reply.status, reply.connection_id) == (CallStatus.EXECUTED, "shop")
    assert c.tool_transport.made == [
        ("shop", "lookup", {"order_id": "A1"}, {"authorization": "Bearer s3cret"})
    ]


def test_a_missing_secret_fails_the_call_without_making_it(c):
    del c.secrets.kept[(ORG, "shop-key")]
    reply = box(c).call("lookup", {})
    assert reply.status is CallStatus.EXECUTED
    assert "no secret 'shop-key'" in (reply.error or "")
    assert c.tool_transport.made == []


def test_a_tool_failure_is_an_executed_call_with_its_error(c):
    def fail(*_: Any) -> Any:
        raise ToolCallFailed("connection 'shop' answered lookup with status 500")

    c.tool_transport.answer = fail
    reply = box(c).call("lookup", {})
    assert reply.status is CallStatus.EXECUTED
    assert reply.for_agent() == {
        "status": "executed",
        "error": "connection 'shop' answered lookup with status 500",
    }


def test_replay_answers_from_the_recording_and_holds_what_it_lacks(c):
    recorded = (RecordedCall("refund", {"order_id": "A1"}, {"refunded": True}),)
    tools = box(c, IsolationSettings(from_recordings=True), recorded)
    first = tools.call("refund", {"order_id": "A1"})
    again = tools.call("refund", {"order_id": "A1"})
    read = tools.call("lookup", {})
    assert (first.status, first.result) == (CallStatus.REPLAYED, {"refunded": True})
    assert again.status is CallStatus.DIVERGENT  # the recorded call was used once already
    assert read.status is CallStatus.DIVERGENT
    assert c.tool_transport.made == []
    assert [call.status for call in tools.calls] == [
        CallStatus.REPLAYED,
        CallStatus.DIVERGENT,
        CallStatus.DIVERGENT,
    ]


def test_live_reads_let_an_unrecorded_read_through_but_never_a_write(c):
    tools = box(c, IsolationSettings(from_recordings=True, live_reads=True))
    assert tools.call("lookup", {}).status is CallStatus.EXECUTED
    assert tools.call("refund", {"order_id": "A1"}).status is CallStatus.DIVERGENT
    assert [m[1] for m in c.tool_transport.made] == ["lookup"]


def test_an_unknown_tool_or_bad_arguments_are_blocked_saying_why(c):
    tools = box(c)
    unknown = tools.call("drop_tables", {})
    bad = tools.call("refund", {"order_id": 7})
    assert unknown.status is bad.status is CallStatus.BLOCKED
    assert "no tool named 'drop_tables'" in unknown.reason
    assert "arguments.order_id" in bad.reason
    with pytest.raises(NotFoundError) as missing:
        tools.check("drop_tables", {})
    assert missing.value.field == "tool_name"
    with pytest.raises(InvalidInputError) as wrong:
        tools.check("refund", {})
    assert wrong.value.field == "arguments"
    assert c.tool_transport.made == []


def test_a_connection_that_is_gone_blocks_the_call(c):
    c.connections.delete(ORG, "shop")
    reply = box(c).call("lookup", {})
    assert reply.status is CallStatus.BLOCKED
    assert "does not exist" in reply.reason


def test_the_workspace_belongs_to_its_attempt(c):
    mine, other = box(c), box(c, attempt_key="candidate#q2#001")
    written = mine.call("workspace_write", {"path": "notes/a.txt", "content": "hello"})
    assert (written.status, written.connection_id) == (CallStatus.EXECUTED, "workspace")
    assert mine.call("workspace_read", {"path": "notes/a.txt"}).result == {
        "path": "notes/a.txt",
        "content": "hello",
    }
    assert mine.call("workspace_list", {}).result == {"paths": ["notes/a.txt"]}
    assert other.call("workspace_list", {}).result == {"paths": []}
    assert "no file" in (other.call("workspace_read", {"path": "notes/a.txt"}).error or "")
    assert c.tool_transport.made == []


def test_a_full_workspace_refuses_the_write_and_tells_the_agent(c):
    c.workspaces.max_bytes = 10
    reply = box(c).call("workspace_write", {"path": "big", "content": "x" * 11})
    assert reply.status is CallStatus.EXECUTED and reply.error


def test_three_identical_calls_in_a_row_are_a_loop_and_a_retry_starts_afresh(c):
    tools = box(c)
    for _ in range(2):
        tools.call("lookup", {"q": 1})
    assert tools.loop_at() is None
    tools.call("lookup", {"q": 1.0})
    assert tools.loop_at() == 2
    tools.reset()
    assert (tools.calls, tools.loop_at()) == ([], None)


def test_a_large_result_is_kept_cut_but_given_whole_to_the_agent(c):
    c.tool_transport.answer = lambda *_: {"rows": "x" * 40_000}
    tools = box(c)
    reply = tools.call("lookup", {})
    assert reply.result == {"rows": "x" * 40_000}
    kept = tools.calls[0].result
    assert kept["_truncated"] is True
    assert len(kept["text"]) <= agent_output.MAX_VALUE_BYTES


def test_a_result_nested_too_deeply_is_kept_with_a_marker_and_serialises(c):
    deep = json.loads("[" * 900 + "]" * 900)
    c.tool_transport.answer = lambda *_: deep
    tools = box(c)
    reply = tools.call("lookup", {})
    assert reply.result is deep  # the agent gets what the tool said
    [kept] = tool_calls.calls_json(tools.calls)
    assert agent_output.TOO_DEEP in json.dumps(kept["result"])


@pytest.mark.parametrize(
    ("runtime", "status"),
    [("http", CallStatus.UNVERIFIED), ("lambda", CallStatus.UNVERIFIED), ("python", None)],
)
def test_calls_an_agent_only_reports_are_kept_after_the_decided_ones(c, runtime, status):
    tools = box(c)
    tools.call("refund", {"order_id": "A1"})
    reported = [ToolCall(name="search", arguments={"q": "x"}, status=CallStatus.EXECUTED)]
    kept = tool_calls.kept_calls(tools, reported, {"runtime": runtime})
    assert [call.name for call in kept] == ["refund", "search"]
    assert kept[1].status is (status or CallStatus.EXECUTED)
    if status is not None:
        assert "reported by the agent as executed" in (kept[1].reason or "")


def test_calls_are_kept_in_the_attempts_old_shape_with_what_is_set():
    kept = tool_calls.calls_json(
        [
            ToolCall(name="a", arguments={}, status=CallStatus.EXECUTED, result=1),
            ToolCall(name="b", status=CallStatus.BLOCKED, reason="why", connection_id=None),
        ]
    )
    assert kept == [
        {"name": "a", "arguments": {}, "status": "executed", "result": 1},
        {"name": "b", "arguments": {}, "status": "blocked", "result": None, "reason": "why"},
    ]


def test_max_steps_defaults_and_is_bounded():
    assert check_max_steps({}) == DEFAULT_MAX_STEPS
    assert check_max_steps({"max_steps": 3}) == 3
    for bad in (0, 51, "5", True):
        with pytest.raises(InvalidInputError) as err:
            check_max_steps({"max_steps": bad})
        assert err.value.field == "spec.max_steps"


def test_read_effect_comes_from_the_declaration():
    tools = tools_of(SPEC)
    assert tools["lookup"].effect is ToolEffect.READ
    assert tools["notify"].effect is None and not tools["notify"].declaration().is_read


def test_an_mcp_servers_tools_join_the_declared_ones_and_the_spec_overrides(c):
    c.connections.create(
        Connection(
            org_id=ORG,
            connection_id="gh",
            kind="mcp",
            url="https://mcp.example",
            created_at="2026-12-01T00:00:00Z",
        )
    )
    c.tool_transport.listed["gh"] = [
        {"name": "search_issues", "annotations": {"readOnlyHint": True}},
        {"name": "create_issue", "inputSchema": {"type": "object"}},
        {"name": "lookup", "annotations": {"readOnlyHint": False}},
    ]
    merged = tool_calls._with_listed(c, ORG, tools_of(SPEC), ["gh"])
    assert list(merged) == [
        "refund",
        "lookup",
        "notify",
        "search_issues",
        "create_issue",
        "workspace_read",
        "workspace_write",
        "workspace_list",
    ]
    assert merged["search_issues"].effect is ToolEffect.READ
    assert merged["create_issue"].effect is ToolEffect.WRITE
    assert merged["create_issue"].connection_id == "gh"
    # the spec declares lookup as a read on shop: its declaration wins over the server's hint
    assert (merged["lookup"].effect, merged["lookup"].connection_id) == (ToolEffect.READ, "shop")


def test_a_server_that_cannot_list_its_tools_fails_the_toolbox(c):
    with pytest.raises(ToolCallFailed, match="'nope' does not exist"):
        tool_calls._with_listed(c, ORG, tools_of(SPEC), ["nope"])
    with pytest.raises(ToolCallFailed, match="lists no tools"):
        tool_calls._with_listed(c, ORG, tools_of(SPEC), ["shop"])
