"""The tool gateway's MCP dispatcher (`services.mcp_gateway.answer`) with a fake toolbox: the
protocol's methods, what a call comes to, and every malformed message answered with its JSON-RPC
error."""

from __future__ import annotations

import json
from collections.abc import Mapping
from dataclasses import dataclass, field
from typing import Any

import pytest

from chalicelib.domain.enums import CallStatus, ToolEffect
from chalicelib.domain.tools import WORKSPACE_TOOLS, ToolReply, ToolSpec, argument_problem
from chalicelib.errors import InvalidInputError, NotFoundError
from chalicelib.services.mcp_gateway import (
    INSTRUCTIONS,
    PROTOCOL_VERSIONS,
    answer,
)

SCHEMA = {"type": "object", "properties": {"id": {"type": "integer"}}, "required": ["id"]}
LOOKUP = ToolSpec("lookup", "Find an order", SCHEMA, ToolEffect.READ, "shop")
REFUND = ToolSpec("refund", "", {}, None, "shop")  # no effect declared: a write


@dataclass
class FakeToolbox:
    """Answers each tool from `replies` and keeps what it was asked (a ToolBox's surface)."""

    replies: dict[str, ToolReply]
    tools: dict[str, ToolSpec] = field(
        default_factory=lambda: {t.name: t for t in (LOOKUP, REFUND, *WORKSPACE_TOOLS)}
    )
    made: list[tuple[str, dict[str, Any]]] = field(default_factory=list)

    def check(self, name: str, arguments: Any) -> ToolSpec:
        tool = self.tools.get(name)
        if tool is None:
            raise NotFoundError(f"this eval attempt has no tool named {name!r}", field="tool_name")
        problem = argument_problem(tool, arguments)
        if problem is not None:
            raise InvalidInputError(f"{name}: {problem}", field="arguments")
        return tool

    def call_checked(self, tool: ToolSpec, arguments: Mapping[str, Any]) -> ToolReply:
        self.made.append((tool.name, dict(arguments)))
        return self.replies[tool.name]


def box(**replies: ToolReply) -> FakeToolbox:
    return FakeToolbox(dict(replies))


def request(method: str, params: Any = None, ident: Any = 1) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
    if params is not None:
        out["params"] = params
    return out


def result_of(reply: tuple[int, Any, dict[str, str]]) -> Any:
    status, body, _ = reply
    assert status == 200 and "error" not in body, body
    return body["result"]


def error_of(reply: tuple[int, Any, dict[str, str]]) -> tuple[int, int, str, Any]:
    status, body, headers = reply
    assert headers == {} and body["jsonrpc"] == "2.0" and "result" not in body
    return status, body["error"]["code"], body["error"]["message"], body["id"]


# --- initialize, ping, notifications -------------------------------------------------------------


@pytest.mark.parametrize(
    ("asked", "given"),
    [
        ("2025-06-18", "2025-06-18"),
        ("2025-03-26", "2025-03-26"),
        ("2025-11-25", PROTOCOL_VERSIONS[0]),  # newer than the gateway: its own newest
        ("2024-11-05", PROTOCOL_VERSIONS[0]),
        (None, PROTOCOL_VERSIONS[0]),
    ],
)
def test_initialize_names_the_gateway_and_its_tools_capability(asked, given):
    params = {"protocolVersion": asked, "capabilities": {}, "clientInfo": {"name": "agent"}}
    status, body, headers = answer(request("initialize", params, ident="init-1"), box())
    assert (status, headers) == (200, {})
    assert body == {
        "jsonrpc": "2.0",
        "id": "init-1",
        "result": {
            "protocolVersion": given,
            "capabilities": {"tools": {}},
            "serverInfo": {"name": "assay tool gateway", "version": "1"},
            "instructions": INSTRUCTIONS,
        },
    }


def test_initialize_gives_the_session_id_it_is_handed_as_a_header():
    params = {"protocolVersion": "2025-06-18"}
    status, _, headers = answer(request("initialize", params), box(), session_id="s-1")
    assert (status, headers) == (200, {"Mcp-Session-Id": "s-1"})
    assert answer(request("ping"), box(), session_id="s-1")[2] == {}  # only initialize gives it


def test_ping_answers_an_empty_result():
    assert answer(request("ping", ident=7), box()) == (
        200,
        {"jsonrpc": "2.0", "id": 7, "result": {}},
        {},
    )


@pytest.mark.parametrize(
    "message",
    [
        {"jsonrpc": "2.0", "method": "notifications/initialized"},
        {"jsonrpc": "2.0", "method": "notifications/cancelled", "params": {"requestId": 1}},
        {"jsonrpc": "2.0", "method": "notifications/whatever"},
        {"jsonrpc": "2.0", "id": 4, "result": {}},  # a response to no request of the gateway's
        {"jsonrpc": "2.0", "id": 4, "error": {"code": -1, "message": "no"}},
    ],
)
def test_notifications_and_responses_are_accepted_with_no_body(message):
    toolbox = box()
    assert answer(message, toolbox) == (202, None, {})
    assert toolbox.made == []


# --- tools/list ----------------------------------------------------------------------------------


def test_tools_list_gives_every_tool_of_the_attempt_read_tools_hinted_read_only():
    tools = result_of(answer(request("tools/list", {}), box()))["tools"]
    assert [t["name"] for t in tools] == [
        "lookup",
        "refund",
        "workspace_read",
        "workspace_write",
        "workspace_list",
    ]
    assert tools[0] == {
        "name": "lookup",
        "description": "Find an order",
        "inputSchema": SCHEMA,
        "annotations": {"readOnlyHint": True},
    }
    assert tools[1] == {
        "name": "refund",
        "description": "",
        "inputSchema": {"type": "object", "properties": {}},  # none declared: any object
        "annotations": {"readOnlyHint": False},  # no effect declared is a write
    }
    hints = {t["name"]: t["annotations"]["readOnlyHint"] for t in tools}
    assert hints["workspace_read"] and hints["workspace_list"] and not hints["workspace_write"]


def test_tools_list_takes_a_cursor_and_gives_one_page():
    page = result_of(answer(request("tools/list", {"cursor": "x"}), box()))
    assert set(page) == {"tools"} and len(page["tools"]) == 5


# --- tools/call ----------------------------------------------------------------------------------


def call(toolbox: FakeToolbox, name: Any, arguments: Any = None, **more: Any) -> Any:
    params: dict[str, Any] = {"name": name, **more}
    if arguments is not None:
        params["arguments"] = arguments
    return answer(request("tools/call", params, ident=9), toolbox)


def test_a_call_made_gives_its_result_as_text_and_structured_content():
    reply = ToolReply(CallStatus.EXECUTED, result={"order": 7, "state": "paid"}, connection_id="s")
    toolbox = box(lookup=reply)
    result = result_of(call(toolbox, "lookup", {"id": 7}))
    agent = {"status": "executed", "result": {"order": 7, "state": "paid"}}
    assert result == {
        "content": [{"type": "text", "text": json.dumps(agent)}],
        "structuredContent": agent,
        "isError": False,
    }
    assert toolbox.made == [("lookup", {"id": 7})]


def test_a_replayed_call_gives_the_recorded_result():
    toolbox = box(lookup=ToolReply(CallStatus.REPLAYED, result="Ada"))
    result = result_of(call(toolbox, "lookup", {"id": 1}))
    assert result["structuredContent"] == {"status": "replayed", "result": "Ada"}
    assert not result["isError"]


@pytest.mark.parametrize(
    ("status", "word"), [(CallStatus.BLOCKED, "blocked"), (CallStatus.DIVERGENT, "held")]
)
def test_a_blocked_or_held_call_is_a_normal_result_that_says_so(status, word):
    toolbox = box(refund=ToolReply(status, reason="a write without a test connection"))
    result = result_of(call(toolbox, "refund", {"amount": 5}))
    assert result["isError"] is False
    assert result["structuredContent"]["status"] == str(status)
    assert result["structuredContent"]["note"].startswith(f"{word}: this call was not executed")
    assert json.loads(result["content"][0]["text"]) == result["structuredContent"]
    assert toolbox.made == [("refund", {"amount": 5})]  # kept as the intended call


def test_a_call_whose_tool_failed_is_an_error_result_naming_the_failure():
    failed = ToolReply(CallStatus.EXECUTED, error="connection 'shop' answered lookup with 500")
    result = result_of(call(box(lookup=failed), "lookup", {"id": 7}))
    assert result["isError"] is True
    assert result["structuredContent"] == {
        "status": "executed",
        "error": "connection 'shop' answered lookup with 500",
    }


def test_a_call_without_arguments_is_a_call_with_an_empty_object():
    toolbox = box(refund=ToolReply(CallStatus.BLOCKED))
    result_of(call(toolbox, "refund"))
    assert toolbox.made == [("refund", {})]


@pytest.mark.parametrize(
    ("name", "arguments", "says"),
    [
        ("delete_everything", {}, "no tool named 'delete_everything'"),
        ("lookup", {"id": "seven"}, "lookup: arguments.id: 'seven' is not of type 'integer'"),
        ("lookup", {}, "lookup: arguments: 'id' is a required property"),
        ("lookup", [7], "lookup: arguments must be a JSON object"),
        (7, {}, "tools/call needs params.name"),
        (None, {}, "tools/call needs params.name"),
    ],
)
def test_an_unknown_tool_or_bad_arguments_are_invalid_params_and_nothing_is_made(
    name, arguments, says
):
    toolbox = box(lookup=ToolReply(CallStatus.EXECUTED, result=1))
    params: dict[str, Any] = {"arguments": arguments}
    if name is not None:
        params["name"] = name
    status, code, message, ident = error_of(answer(request("tools/call", params), toolbox))
    assert (status, code, ident) == (200, -32602, 1)
    assert says in message
    assert toolbox.made == []


# --- what is not served, and malformed messages --------------------------------------------------


@pytest.mark.parametrize("method", ["resources/list", "prompts/get", "tools/destroy", "sampling"])
def test_an_unknown_method_is_method_not_found(method):
    status, code, message, ident = error_of(answer(request(method, ident="q"), box()))
    assert (status, code, ident) == (200, -32601, "q")
    assert method in message


@pytest.mark.parametrize(
    ("body", "code", "says"),
    [
        (b"{not json", -32700, "not JSON"),
        ("", -32700, "not JSON"),
        (b"[" * 100_000, -32700, "not JSON"),  # nested past what the parser follows
        ([request("ping")], -32600, "batches are not accepted"),
        (b'[{"jsonrpc": "2.0", "id": 1, "method": "ping"}]', -32600, "batches are not accepted"),
        ([], -32600, "batches are not accepted"),
        ("42", -32600, "JSON-RPC 2.0"),
        (None, -32600, "JSON-RPC 2.0"),
        ({"id": 1, "method": "ping"}, -32600, "JSON-RPC 2.0"),  # no jsonrpc
        ({"jsonrpc": "1.0", "id": 1, "method": "ping"}, -32600, "JSON-RPC 2.0"),
        ({"jsonrpc": "2.0", "id": 1}, -32600, "method must be a string"),
        ({"jsonrpc": "2.0", "id": 1, "method": 5}, -32600, "method must be a string"),
        ({"jsonrpc": "2.0", "method": ["ping"]}, -32600, "method must be a string"),
        ({"jsonrpc": "2.0", "id": None, "method": "ping"}, -32600, "id must be"),
        ({"jsonrpc": "2.0", "id": True, "method": "ping"}, -32600, "id must be"),
        ({"jsonrpc": "2.0", "id": 1.5, "method": "ping"}, -32600, "id must be"),
        ({"jsonrpc": "2.0", "id": {"a": 1}, "method": "ping"}, -32600, "id must be"),
    ],
)
def test_a_malformed_message_is_refused_with_400_and_its_json_rpc_error(body, code, says):
    toolbox = box()
    status, got, message, ident = error_of(answer(body, toolbox))
    assert (status, got) == (400, code)
    assert says in message
    assert ident in (None, 1)
    assert toolbox.made == []


@pytest.mark.parametrize("params", [[1, 2], "x", 3])
def test_params_that_are_no_object_are_invalid_params(params):
    status, code, _, ident = error_of(answer(request("tools/list", params, ident=3), box()))
    assert (status, code, ident) == (200, -32602, 3)


def test_a_body_given_as_bytes_or_text_is_read_as_json():
    for body in (json.dumps(request("ping")).encode(), json.dumps(request("ping"))):
        assert answer(body, box()) == (200, {"jsonrpc": "2.0", "id": 1, "result": {}}, {})
