"""Calls made on an `mcp` connection: a small client of an MCP server over streamable HTTP
(docs/guides/tools.md, "MCP").

Each call opens a session of its own, in at most three POSTs to the connection's `url`, every one
through the egress-checked `HttpTransport` (the address checked after DNS and on every redirect,
before anything connects)::

    initialize                   -> the server's protocol version and its Mcp-Session-Id (if any)
    notifications/initialized    -> 202
    tools/list | tools/call      -> the result

JSON-RPC 2.0; protocol versions 2025-06-18 (asked for) and 2025-03-26 (accepted when the server
offers it instead). Every request after `initialize` carries the `Mcp-Session-Id` the server gave
and `MCP-Protocol-Version`. A reply is `application/json` (one JSON-RPC message) or
`text/event-stream` whose events carry the response (notifications the server sends before it are
skipped). The whole call, all its POSTs together, is bounded by the caller's `timeout_s`; a call is
never retried. The session is left for the server to expire (no DELETE is sent).

The MCP SDK is not imported here: it would weigh on the Lambdas' cold start.
"""

from __future__ import annotations

import itertools
import json
import time
from collections.abc import Mapping
from typing import Any

from chalicelib.adapters.http_transport import HttpReply, HttpTransport, clip
from chalicelib.domain.text import json_of_bytes
from chalicelib.errors import AgentCrashError, ProviderError
from chalicelib.services.ports.tools import ToolCallFailed

PROTOCOL_VERSION = "2025-06-18"
"""The protocol version this client asks for."""

ACCEPTED_VERSIONS = frozenset({"2025-06-18", "2025-03-26"})
"""Versions a server may answer `initialize` with (both speak streamable HTTP)."""

CLIENT_INFO = {"name": "assay", "version": "1"}
"""How this client names itself in `initialize`."""

MAX_LIST_PAGES = 16
"""Pages of `tools/list` read at most (a server that pages past it is cut there)."""

_ACCEPT = "application/json, text/event-stream"
_SESSION_ID_CHARS = frozenset(chr(c) for c in range(0x21, 0x7F))  # visible ASCII, as MCP says


class McpSession:
    """One session with the MCP server of a connection, for one call.

    Args:
        transport: the egress-checked transport every POST goes through.
        url: the server's MCP endpoint (the connection's `url`).
        headers: sent on every request (the connection's `authorization`); never quoted in errors.
        timeout_s: bound on everything this session does, in seconds.
        source: names the connection in messages, e.g. "connection 'shop'".
    """

    def __init__(
        self,
        transport: HttpTransport,
        url: str,
        headers: Mapping[str, str],
        timeout_s: float,
        source: str,
    ) -> None:
        self._transport = transport
        self._url = url
        self._headers = {name.lower(): value for name, value in headers.items()}
        self._secret = frozenset(self._headers)
        self._deadline = time.monotonic() + timeout_s
        self._timeout_s = timeout_s
        self._source = source
        self._ids = itertools.count(1)
        self._session_id: str | None = None
        self._version: str | None = None

    def open(self) -> None:
        """`initialize`, then `notifications/initialized`.

        Raises:
            ToolCallFailed: the server refused, answered no protocol version this client speaks,
                or gave a session id that is not visible ASCII.
        """
        result = self.request(
            "initialize",
            {"protocolVersion": PROTOCOL_VERSION, "capabilities": {}, "clientInfo": CLIENT_INFO},
        )
        version = result.get("protocolVersion")
        if version not in ACCEPTED_VERSIONS:
            raise ToolCallFailed(
                f"{self._source} speaks MCP protocol version {clip(str(version), 40)!r}; this "
                f"service speaks {', '.join(sorted(ACCEPTED_VERSIONS, reverse=True))}"
            )
        self._version = str(version)
        self.notify("notifications/initialized")

    def request(self, method: str, params: Mapping[str, Any] | None = None) -> dict[str, Any]:
        """Send one JSON-RPC request; its `result` (an object).

        Raises:
            ToolCallFailed: egress refused the address, the server could not be reached or timed
                out, answered a status that is not 2xx, no response to the request, a JSON-RPC
                error, or a result that is not an object.
        """
        ident = next(self._ids)
        message: dict[str, Any] = {"jsonrpc": "2.0", "id": ident, "method": method}
        if params is not None:
            message["params"] = dict(params)
        reply = self._post(message, method)
        if method == "initialize":
            self._session_id = _session_id(reply, self._source)
        response = _response_in(reply, ident, method, self._source)
        error = response.get("error")
        if error is not None:
            text = error.get("message") if isinstance(error, Mapping) else error
            code = error.get("code") if isinstance(error, Mapping) else None
            raise ToolCallFailed(
                f"{self._source} answered {method} with error {code}: {clip(str(text), 300)}"
            )
        result = response.get("result")
        if not isinstance(result, dict):
            raise ToolCallFailed(
                f"{self._source} answered {method} with a result that is no object"
            )
        return result

    def notify(self, method: str, params: Mapping[str, Any] | None = None) -> None:
        """Send one JSON-RPC notification (the server answers 202 and no body).

        Raises:
            ToolCallFailed: as `request`, for the transport and the status.
        """
        message: dict[str, Any] = {"jsonrpc": "2.0", "method": method}
        if params is not None:
            message["params"] = dict(params)
        self._post(message, method)

    def _post(self, message: Mapping[str, Any], method: str) -> HttpReply:
        left = self._deadline - time.monotonic()
        if left <= 0:
            raise ToolCallFailed(f"{self._source} timed out after {self._timeout_s:g} s")
        headers = {**self._headers, "accept": _ACCEPT}
        if self._session_id is not None:
            headers["mcp-session-id"] = self._session_id
        if self._version is not None:
            headers["mcp-protocol-version"] = self._version
        try:
            reply = self._transport.post_json_full(
                self._url, message, headers, left, self._source, secret_headers=self._secret
            )
        except (AgentCrashError, ProviderError) as exc:
            raise ToolCallFailed(clip(str(exc))) from None
        if not 200 <= reply.status < 300:
            detail = _error_text(reply.body)
            raise ToolCallFailed(
                f"{self._source} answered {method} with status {reply.status}"
                + (f": {detail}" if detail else "")
            )
        return reply


def _session_id(reply: HttpReply, source: str) -> str | None:
    value = reply.headers.get("mcp-session-id")
    if value is None:
        return None
    if not value or len(value) > 512 or not set(value) <= _SESSION_ID_CHARS:
        raise ToolCallFailed(f"{source} gave a session id that is not visible ASCII")
    return value


def _error_text(body: bytes) -> str:
    """The readable part of an error reply: a JSON-RPC error's message, else the text, cut."""
    try:
        data = json_of_bytes(body)
    except (RecursionError, ValueError):
        return clip(body.decode("utf-8", errors="replace").strip(), 200)
    if isinstance(data, Mapping) and isinstance(data.get("error"), Mapping):
        return clip(str(data["error"].get("message", "")), 200)
    return clip(json.dumps(data, ensure_ascii=False), 200)


def sse_messages(body: bytes) -> list[Any]:
    """The JSON of every event's data in a `text/event-stream` body, in order.

    An event's `data:` lines are joined with newlines (the SSE rule); events without data, and
    data that is not JSON, are skipped; comments (`:`), `event:`, `id:` and `retry:` are ignored.
    """
    messages: list[Any] = []
    data: list[str] = []
    text = body.decode("utf-8", errors="replace").replace("\r\n", "\n").replace("\r", "\n")
    for line in [*text.split("\n"), ""]:
        if line == "":
            if data:
                try:
                    messages.append(json.loads("\n".join(data)))
                except (RecursionError, ValueError):
                    pass
                data = []
            continue
        name, _, value = line.partition(":")
        if name == "data":
            data.append(value[1:] if value.startswith(" ") else value)
    return messages


def _response_in(reply: HttpReply, ident: int, method: str, source: str) -> Mapping[str, Any]:
    """The JSON-RPC response to request `ident` in `reply` (JSON or an event stream)."""
    kind = reply.headers.get("content-type", "").split(";", 1)[0].strip().lower()
    if kind == "text/event-stream":
        found: list[Any] = sse_messages(reply.body)
    else:
        try:
            parsed = json_of_bytes(reply.body)
        except (RecursionError, ValueError):
            raise ToolCallFailed(
                f"{source} answered {method} with a body that is not JSON"
            ) from None
        found = parsed if isinstance(parsed, list) else [parsed]
    for message in found:
        if (
            isinstance(message, Mapping)
            and message.get("id") == ident
            and not isinstance(message.get("id"), bool)
            and ("result" in message or "error" in message)
        ):
            return message
    raise ToolCallFailed(f"{source} answered {method} without a JSON-RPC response to it")


def _text_of(item: Any) -> str | None:
    """The text of one content item: a text item's text, an embedded text resource's text, else a
    short note of what it is (an image, audio, a link to a resource)."""
    if not isinstance(item, Mapping):
        return None
    kind = item.get("type")
    if kind == "text" and isinstance(item.get("text"), str):
        return str(item["text"])
    if kind == "resource" and isinstance(item.get("resource"), Mapping):
        resource = item["resource"]
        if isinstance(resource.get("text"), str):
            return str(resource["text"])
        return f"[resource {clip(str(resource.get('uri', '')), 200)}]"
    if kind == "resource_link":
        return f"[resource {clip(str(item.get('uri', '')), 200)}]"
    if kind in ("image", "audio"):
        return f"[{kind} {clip(str(item.get('mimeType', '')), 80)}]"
    return None


def call_result(result: Mapping[str, Any], tool_name: str, source: str) -> Any:
    """What a `tools/call` result gives the agent.

    `structuredContent` when present; else the content items' text: a single text item that is
    JSON is that JSON value, any other text as it is (several items joined by newlines); None
    when there is no content.

    Raises:
        ToolCallFailed: `isError: true` (the message is the content's text).
    """
    content = result.get("content")
    items = content if isinstance(content, list) else []
    texts = [text for text in (_text_of(item) for item in items) if text is not None]
    if result.get("isError") is True:
        raise ToolCallFailed(
            f"{source}: {tool_name} failed: {clip(chr(10).join(texts) or 'no message', 400)}"
        )
    if result.get("structuredContent") is not None:
        return result["structuredContent"]
    if not texts:
        return None
    if len(items) == 1 and isinstance(items[0], Mapping) and items[0].get("type") == "text":
        try:
            return json.loads(texts[0])
        except (RecursionError, ValueError):
            return texts[0]
    return "\n".join(texts)


def call_tool(
    transport: HttpTransport,
    url: str,
    tool_name: str,
    arguments: Mapping[str, Any],
    headers: Mapping[str, str],
    timeout_s: float,
    source: str,
) -> Any:
    """Run `tools/call` of `tool_name` with `arguments` on the MCP server at `url` (a session of
    its own); the result as `call_result` gives it.

    Raises:
        ToolCallFailed: the server could not be reached (egress, transport, timeout), did not
            answer the protocol, or the tool reported an error.
    """
    session = McpSession(transport, url, headers, timeout_s, source)
    session.open()
    result = session.request("tools/call", {"name": tool_name, "arguments": dict(arguments)})
    return call_result(result, tool_name, source)


def list_tools(
    transport: HttpTransport,
    url: str,
    headers: Mapping[str, str],
    timeout_s: float,
    source: str,
) -> list[dict[str, Any]]:
    """The tools the MCP server at `url` lists, every page (at most `MAX_LIST_PAGES`):
    `[{"name": str, "description": str, "inputSchema": dict, "annotations": dict}]` (a missing
    description "", schema or annotations {}); entries without a string name are left out.

    Raises:
        ToolCallFailed: the server could not be reached or did not answer the protocol.
    """
    session = McpSession(transport, url, headers, timeout_s, source)
    session.open()
    tools: list[dict[str, Any]] = []
    cursor: Any = None
    for _ in range(MAX_LIST_PAGES):
        result = session.request("tools/list", {} if cursor is None else {"cursor": cursor})
        listed = result.get("tools")
        if not isinstance(listed, list):
            raise ToolCallFailed(f"{source} answered tools/list without a list of tools")
        for raw in listed:
            if not isinstance(raw, Mapping) or not isinstance(raw.get("name"), str):
                continue
            description = raw.get("description")
            schema = raw.get("inputSchema")
            annotations = raw.get("annotations")
            tools.append(
                {
                    "name": raw["name"],
                    "description": description if isinstance(description, str) else "",
                    "inputSchema": dict(schema) if isinstance(schema, Mapping) else {},
                    "annotations": dict(annotations) if isinstance(annotations, Mapping) else {},
                }
            )
        cursor = result.get("nextCursor")
        if not isinstance(cursor, str) or not cursor:
            break
    return tools
