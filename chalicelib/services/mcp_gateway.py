"""The tool gateway as an MCP server, one per eval attempt (docs/guides/tools.md, "MCP").

An agent that takes its tools from MCP points at the attempt's `tools_mcp_url` and calls them
there with no change to its code: `answer` reads one JSON-RPC 2.0 message of the streamable HTTP
transport (protocol versions 2025-06-18 and 2025-03-26) and says what to answer. The route that
serves the URL (its per-attempt token, the HTTP method and headers) is not here; it POSTs each
message body to `answer` with the attempt's `ToolBox`, and sends back the status, the JSON body
(`application/json`) and the headers `answer` gives.

Methods::

    initialize                 -> protocolVersion, capabilities {"tools": {}}, serverInfo
    ping                       -> {}
    tools/list                 -> every tool of the attempt (its declared and workspace tools)
    tools/call                 -> the call decided, made if allowed and kept by the ToolBox
    any notification           -> 202, no body (notifications/initialized among them)
    a response (to no request) -> 202, no body

A `tools/call` result carries the agent's view of the call (`ToolReply.for_agent`) both as one
text item (its JSON) and as `structuredContent`; a call the isolation rule held or blocked is a
normal result whose text says so, and a call whose tool failed has `isError: true`. An unknown
tool or arguments that fail its schema are the JSON-RPC error -32602 naming the problem (the call
is not kept: the agent asked for nothing the attempt has).

Errors: a body that is not JSON -32700, a batch (an array) or anything that is not a JSON-RPC 2.0
message -32600 (both HTTP 400); an unknown method -32601 and bad params -32602 (HTTP 200, the
JSON-RPC error in the body).
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any, Protocol

from chalicelib.domain.enums import CallStatus, ToolEffect
from chalicelib.domain.tools import ToolReply, ToolSpec
from chalicelib.errors import InvalidInputError, NotFoundError

PROTOCOL_VERSIONS = ("2025-06-18", "2025-03-26")
"""Protocol versions the gateway speaks, newest first: a client asking for one gets it, any
other client gets the first."""

SERVER_INFO = {"name": "assay tool gateway", "version": "1"}
"""How the gateway names itself in `initialize`."""

INSTRUCTIONS = (
    "The tools of one eval attempt. Every call runs isolated: on a test connection, from a "
    "recording, or not at all; a call that was not made says so in its result."
)
"""The `instructions` of `initialize`, for the agent."""

PARSE_ERROR = -32700
INVALID_REQUEST = -32600
METHOD_NOT_FOUND = -32601
INVALID_PARAMS = -32602

Answer = tuple[int, dict[str, Any] | None, dict[str, str]]
"""(HTTP status, JSON body or None for no body, response headers)."""


class GatewayToolbox(Protocol):
    """What the gateway needs of an attempt's tools (`services.tool_calls.ToolBox` is one)."""

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        """Every tool the attempt may call, by name."""

    def check(self, name: str, arguments: Any) -> ToolSpec:
        """The tool `name` when `arguments` can be a call of it; raises NotFoundError (no such
        tool) or InvalidInputError (arguments that fail its schema)."""

    def call_checked(self, tool: ToolSpec, arguments: Mapping[str, Any]) -> ToolReply:
        """Decide, make if allowed, and keep one call `check` accepted."""


def _error(status: int, ident: Any, code: int, message: str) -> Answer:
    body = {"jsonrpc": "2.0", "id": ident, "error": {"code": code, "message": message}}
    return status, body, {}


def _result(ident: Any, result: dict[str, Any], headers: dict[str, str] | None = None) -> Answer:
    return 200, {"jsonrpc": "2.0", "id": ident, "result": result}, headers or {}


def listed_tool(tool: ToolSpec) -> dict[str, Any]:
    """One tool as `tools/list` gives it: `{"name", "description", "inputSchema",
    "annotations": {"readOnlyHint": bool}}` (readOnlyHint true only for a `read` tool)."""
    return {
        "name": tool.name,
        "description": tool.description,
        "inputSchema": dict(tool.parameters) or {"type": "object", "properties": {}},
        "annotations": {"readOnlyHint": tool.effect is ToolEffect.READ},
    }


def call_content(reply: ToolReply) -> dict[str, Any]:
    """A `tools/call` result of `reply`: `{"content": [{"type": "text", "text": <JSON of
    for_agent>}], "structuredContent": for_agent, "isError": bool}`; `isError` is true only for
    a call made whose tool failed (a held or blocked call is no error: its note says so)."""
    agent = reply.for_agent()
    return {
        "content": [{"type": "text", "text": json.dumps(agent, ensure_ascii=False)}],
        "structuredContent": agent,
        "isError": reply.status in (CallStatus.EXECUTED, CallStatus.REPLAYED)
        and reply.error is not None,
    }


def _initialize(ident: Any, params: Mapping[str, Any], session_id: str | None) -> Answer:
    asked = params.get("protocolVersion")
    version = asked if asked in PROTOCOL_VERSIONS else PROTOCOL_VERSIONS[0]
    result: dict[str, Any] = {
        "protocolVersion": version,
        "capabilities": {"tools": {}},
        "serverInfo": dict(SERVER_INFO),
        "instructions": INSTRUCTIONS,
    }
    return _result(ident, result, {"Mcp-Session-Id": session_id} if session_id else None)


def _call(ident: Any, params: Mapping[str, Any], toolbox: GatewayToolbox) -> Answer:
    name = params.get("name")
    if not isinstance(name, str):
        return _error(200, ident, INVALID_PARAMS, "tools/call needs params.name, a tool's name")
    arguments = params.get("arguments")
    if arguments is None:
        arguments = {}
    try:
        tool = toolbox.check(name, arguments)
    except (NotFoundError, InvalidInputError) as exc:
        return _error(200, ident, INVALID_PARAMS, exc.message)
    return _result(ident, call_content(toolbox.call_checked(tool, arguments)))


def answer(message: Any, toolbox: GatewayToolbox, *, session_id: str | None = None) -> Answer:
    """What the gateway answers one message POSTed to an attempt's MCP URL.

    Args:
        message: the request body: bytes or text (parsed here as JSON), or already parsed JSON.
        toolbox: the attempt's tools (a `ToolBox`).
        session_id: when given, `initialize` answers it as the `Mcp-Session-Id` header (visible
            ASCII); None answers without one (a client then sends none).

    Returns:
        (HTTP status, JSON body or None, response headers): 200 and a JSON-RPC response for a
        request; 202 and None for a notification or a response; 400 and a JSON-RPC error for a
        body that is not JSON (-32700) or not one JSON-RPC 2.0 message (-32600, a batch too).
        See the module docstring for the methods.

    Raises:
        Whatever the toolbox raises making a call (a store that fails): never for what the client
        sent.
    """
    if isinstance(message, bytes | bytearray | str):
        try:
            message = json.loads(message)
        except (RecursionError, ValueError):
            return _error(400, None, PARSE_ERROR, "the body is not JSON")
    if isinstance(message, list):
        return _error(400, None, INVALID_REQUEST, "batches are not accepted: send one message")
    if not isinstance(message, dict) or message.get("jsonrpc") != "2.0":
        return _error(400, None, INVALID_REQUEST, 'not a JSON-RPC 2.0 message ("jsonrpc": "2.0")')
    ident = message.get("id")
    method = message.get("method")
    has_id = "id" in message
    if has_id and (isinstance(ident, bool) or not isinstance(ident, str | int)):
        return _error(400, None, INVALID_REQUEST, "id must be a string or an integer")
    if method is None and has_id and ("result" in message or "error" in message):
        return 202, None, {}  # a response: the gateway sends no request, so nothing awaits it
    if not isinstance(method, str):
        return _error(400, ident, INVALID_REQUEST, "method must be a string")
    if not has_id:
        return 202, None, {}  # a notification: notifications/initialized, cancelled, ...
    params = message.get("params", {})
    if params is None:
        params = {}
    if not isinstance(params, dict):
        return _error(200, ident, INVALID_PARAMS, "params must be an object")
    if method == "initialize":
        return _initialize(ident, params, session_id)
    if method == "ping":
        return _result(ident, {})
    if method == "tools/list":
        return _result(ident, {"tools": [listed_tool(tool) for tool in toolbox.tools.values()]})
    if method == "tools/call":
        return _call(ident, params, toolbox)
    return _error(200, ident, METHOD_NOT_FOUND, f"method {method[:80]!r} is not served here")
