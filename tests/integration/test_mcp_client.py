"""Calls on an `mcp` connection (`adapters.mcp_client` through `ConnectionTransport`) against a
REAL MCP server: the MCP SDK's FastMCP over streamable HTTP on 127.0.0.1, answering both as an
event stream and as JSON; then what a server that breaks the protocol comes to, from a scripted
stdlib server on 127.0.0.1. Private networks are allowed for 127.0.0.1 (as on `assay dev`); names
resolve through a stub resolver, never real DNS."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chalicelib.adapters.egress import Egress
from chalicelib.adapters.http_transport import HttpTransport
from chalicelib.adapters.mcp_client import sse_messages
from chalicelib.adapters.tool_transport import ConnectionTransport
from chalicelib.domain.enums import ToolEffect
from chalicelib.domain.records import Connection
from chalicelib.domain.tools import parse_tools, tools_from_mcp
from chalicelib.services.ports.tools import ToolCallFailed
from tests.support.egress import stub_egress
from tests.support.mcp_servers import ShopServer, shop_server

NAMES: dict[str, list[str]] = {"shop.test": ["127.0.0.1"], "meta.test": ["169.254.169.254"]}


def local_egress(private: bool = True) -> Egress:
    return stub_egress(NAMES, private)


def connection(url: str, connection_id: str = "shop") -> Connection:
    return Connection(
        org_id="org-1", connection_id=connection_id, kind="mcp", url=url, created_at="2026-12-01"
    )


@pytest.fixture(scope="module", params=["event-stream", "json"])
def shop(request: pytest.FixtureRequest) -> Iterator[ShopServer]:
    with shop_server(json_response=request.param == "json") as server:
        yield server


@pytest.fixture
def transport() -> Iterator[ConnectionTransport]:
    made = ConnectionTransport(local_egress())
    yield made
    made.close()


# --- against the SDK's server --------------------------------------------------------------------


def test_list_tools_gives_each_tool_with_its_schema_and_annotations(shop, transport):
    tools = transport.list_tools(connection(shop.url), {}, 10)
    assert [tool["name"] for tool in tools] == ["lookup_order", "send_email", "stock", "refuse"]
    lookup = tools[0]
    assert lookup["description"] == "Find an order by its id."
    assert lookup["inputSchema"]["required"] == ["order_id"]
    assert lookup["annotations"]["readOnlyHint"] is True
    assert tools[1]["annotations"].get("readOnlyHint") is None  # the write says nothing
    assert set(tools[1]) == {"name", "description", "inputSchema", "annotations"}


def test_the_listed_tools_become_a_spec_s_tools_reads_by_their_annotation(shop, transport):
    listed = transport.list_tools(connection(shop.url), {}, 10)
    overrides = parse_tools([{"name": "refuse", "effect": "read"}])
    tools = {tool.name: tool for tool in tools_from_mcp(listed, overrides, "shop")}
    assert {name: tool.effect for name, tool in tools.items()} == {
        "lookup_order": ToolEffect.READ,
        "send_email": ToolEffect.WRITE,
        "stock": ToolEffect.READ,
        "refuse": ToolEffect.READ,  # the server says it may write; the spec says it reads
    }
    assert tools["send_email"].parameters["required"] == ["to", "body"]
    assert tools["lookup_order"].connection_id == "shop"


def test_a_read_gives_its_structured_content(shop, transport):
    result = transport.call(connection(shop.url), "lookup_order", {"order_id": "A-7"}, {}, 10)
    assert result == {"order_id": "A-7", "state": "paid", "total": 12.5}


def test_a_write_gives_its_text_and_is_made_once(shop, transport):
    before = len(shop.sent)
    result = transport.call(
        connection(shop.url), "send_email", {"to": "a@example.com", "body": "hi"}, {}, 10
    )
    assert result == "sent to a@example.com"
    assert shop.sent[before:] == [{"to": "a@example.com", "body": "hi"}]


def test_a_single_text_item_that_is_json_gives_that_json(shop, transport):
    assert transport.call(connection(shop.url), "stock", {"sku": "X1"}, {}, 10) == {
        "sku": "X1",
        "left": 3,
    }


@pytest.mark.parametrize(
    ("tool", "arguments", "says"),
    [
        ("refuse", {"reason": "out of stock"}, "refuse failed: .*refused: out of stock"),
        ("lookup_order", {}, "lookup_order failed: .*order_id"),  # the server's own check
        ("no_such_tool", {}, "no_such_tool failed: Unknown tool"),
    ],
)
def test_a_tool_error_is_a_failed_call_with_the_server_s_text(
    shop, transport, tool, arguments, says
):
    with pytest.raises(ToolCallFailed, match=f"(?s)connection 'shop': {says}"):
        transport.call(connection(shop.url), tool, arguments, {}, 10)


def test_every_request_after_initialize_carries_the_session_and_the_version(shop, transport):
    start = len(shop.requests)
    transport.call(
        connection(shop.url), "stock", {"sku": "X2"}, {"authorization": "Bearer tok-1"}, 10
    )
    seen = shop.requests[start:]
    assert [method for method, _ in seen] == [
        "POST",
        "POST",
        "POST",
    ]  # initialize, initialized, call
    first, *rest = (headers for _, headers in seen)
    assert "mcp-session-id" not in first and "mcp-protocol-version" not in first
    session = rest[0]["mcp-session-id"]
    assert session and all(h["mcp-session-id"] == session for h in rest)
    assert all(h["mcp-protocol-version"] == "2025-06-18" for h in rest)
    for headers in (first, *rest):
        assert headers["accept"] == "application/json, text/event-stream"
        assert headers["content-type"] == "application/json"
        assert headers["authorization"] == "Bearer tok-1"  # the connection's auth, on each


def test_a_call_opens_a_session_of_its_own(shop, transport):
    start = len(shop.requests)
    for sku in ("a", "b"):
        transport.call(connection(shop.url), "stock", {"sku": sku}, {}, 10)
    sessions = {h.get("mcp-session-id") for _, h in shop.requests[start:]} - {None}
    assert len(sessions) == 2


def test_egress_refuses_a_private_server_when_private_networks_are_off(shop):
    refusing = ConnectionTransport(local_egress(private=False))
    start = len(shop.requests)
    with pytest.raises(ToolCallFailed, match="egress refused: 127.0.0.1 is a loopback address"):
        refusing.call(connection(shop.url), "send_email", {"to": "x", "body": "y"}, {}, 10)
    with pytest.raises(ToolCallFailed, match="egress refused"):
        refusing.list_tools(connection(shop.url), {}, 10)
    assert shop.requests[start:] == []  # nothing reached the server
    refusing.close()


def test_egress_refuses_a_name_that_resolves_to_the_metadata_address(shop, transport):
    start = len(shop.requests)
    url = f"http://meta.test:{shop.port}/mcp"
    with pytest.raises(ToolCallFailed, match="egress refused: meta.test resolves to a cloud meta"):
        transport.call(connection(url), "lookup_order", {"order_id": "1"}, {}, 10)
    assert shop.requests[start:] == []


# --- a server that breaks the protocol ----------------------------------------------------------


def rpc(ident: Any, result: Any = None, error: Any = None) -> dict[str, Any]:
    out: dict[str, Any] = {"jsonrpc": "2.0", "id": ident}
    if error is not None:
        out["error"] = error
    else:
        out["result"] = result
    return out


INIT = {"protocolVersion": "2025-06-18", "capabilities": {"tools": {}}, "serverInfo": {"name": "x"}}


class Scripted(BaseHTTPRequestHandler):
    """An MCP endpoint per path, each breaking the protocol one way (see `reply`)."""

    protocol_version = "HTTP/1.1"
    received: list[tuple[str, dict[str, str], Any]] = []
    release = threading.Event()

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def reply(self, path: str, message: dict[str, Any]) -> tuple[int, dict[str, str], bytes]:
        method, ident = message.get("method"), message.get("id")
        if "id" not in message:
            return 202, {}, b""
        if method == "initialize":
            version = "2024-11-05" if path == "/old" else "2025-03-26" if path == "/v0326" else None
            headers = {"mcp-session-id": "bad id" if path == "/badsession" else "s-1"}
            if path == "/nosession":
                headers = {}
            result = {**INIT, "protocolVersion": version or INIT["protocolVersion"]}
            return 200, headers, json.dumps(rpc(ident, result)).encode()
        if path == "/status500":
            return (
                500,
                {},
                json.dumps(rpc(ident, error={"code": -32603, "message": "boom"})).encode(),
            )
        if path == "/status404":
            return 404, {}, b"Session not found"
        if path == "/rpcerror":
            error = {"code": -32602, "message": "Unknown tool: x"}
            return 200, {}, json.dumps(rpc(ident, error=error)).encode()
        if path == "/wrongid":
            return 200, {}, json.dumps(rpc(ident + 100, {"content": []})).encode()
        if path == "/notjson":
            return 200, {"content-type": "application/json"}, b"<html>oops</html>"
        if path == "/noobject":
            return 200, {}, json.dumps(rpc(ident, [1, 2])).encode()
        if path == "/stall":
            Scripted.release.wait(30)
            return 200, {}, json.dumps(rpc(ident, {"content": []})).encode()
        if path == "/sse":
            note = {"jsonrpc": "2.0", "method": "notifications/progress", "params": {"progress": 1}}
            result = {
                "content": [{"type": "text", "text": "line one"}, {"type": "text", "text": "two"}]
            }
            body = (
                ": a comment\n\n"
                f"event: message\ndata: {json.dumps(note)}\n\n"
                "data: not json\n\n"
                f"event: message\nid: 9\ndata: {json.dumps(rpc(ident, result))}\r\n\r\n"
            )
            return 200, {"content-type": "text/event-stream"}, body.encode()
        if path == "/mixed":
            result = {
                "content": [
                    {"type": "text", "text": '{"a": 1}'},
                    {"type": "image", "data": "AAAA", "mimeType": "image/png"},
                    {"type": "resource", "resource": {"uri": "file:///r", "text": "inside"}},
                    {"type": "resource_link", "uri": "file:///l", "name": "l"},
                ]
            }
            return 200, {}, json.dumps(rpc(ident, result)).encode()
        if path == "/empty":
            return 200, {}, json.dumps(rpc(ident, {"content": []})).encode()
        if path == "/plaintext":
            result = {"content": [{"type": "text", "text": "not json at all"}]}
            return 200, {}, json.dumps(rpc(ident, result)).encode()
        if path == "/paged":
            cursor = (message.get("params") or {}).get("cursor")
            page = {
                None: {"tools": [{"name": "a"}, {"nameless": 1}], "nextCursor": "p2"},
                "p2": {"tools": [{"name": "b", "annotations": {"readOnlyHint": True}}]},
            }[cursor]
            return 200, {}, json.dumps(rpc(ident, page)).encode()
        return 200, {}, json.dumps(rpc(ident, {"content": [], "isError": True})).encode()

    def do_POST(self) -> None:  # noqa: N802
        message = json.loads(self.rfile.read(int(self.headers["content-length"])))
        headers = {k.lower(): v for k, v in self.headers.items()}
        Scripted.received.append((self.path, headers, message))
        status, extra, body = self.reply(self.path, message)
        try:
            self.send_response(status)
            extra.setdefault("content-type", "application/json")
            for name, value in extra.items():
                self.send_header(name, value)
            self.send_header("content-length", str(len(body)))
            self.end_headers()
            self.wfile.write(body)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture(scope="module")
def scripted() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Scripted)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    yield f"http://shop.test:{server.server_address[1]}"
    Scripted.release.set()
    server.shutdown()
    server.server_close()


@pytest.mark.parametrize(
    ("path", "says"),
    [
        ("/status500", "answered tools/call with status 500: boom"),
        ("/status404", "answered tools/call with status 404: Session not found"),
        ("/rpcerror", "answered tools/call with error -32602: Unknown tool: x"),
        ("/wrongid", "answered tools/call without a JSON-RPC response to it"),
        ("/notjson", "answered tools/call with a body that is not JSON"),
        ("/noobject", "answered tools/call with a result that is no object"),
        ("/old", "speaks MCP protocol version '2024-11-05'; this service speaks 2025-06-18"),
        ("/badsession", "gave a session id that is not visible ASCII"),
        ("/other", "connection 'shop': t failed: no message"),  # isError without text
    ],
)
def test_a_server_that_breaks_the_protocol_is_a_failed_call(scripted, transport, path, says):
    with pytest.raises(ToolCallFailed, match=says):
        transport.call(connection(scripted + path), "t", {"x": 1}, {}, 10)


@pytest.mark.parametrize(
    ("path", "result"),
    [
        ("/sse", "line one\ntwo"),  # the response among a comment, a notification and a bad event
        ("/mixed", '{"a": 1}\n[image image/png]\ninside\n[resource file:///l]'),
        ("/empty", None),
        ("/plaintext", "not json at all"),
    ],
)
def test_the_content_of_a_result_as_the_agent_gets_it(scripted, transport, path, result):
    assert transport.call(connection(scripted + path), "t", {}, {}, 10) == result


def test_a_server_at_2025_03_26_is_spoken_to_in_its_version(scripted, transport):
    start = len(Scripted.received)
    with pytest.raises(ToolCallFailed, match="t failed"):  # its tools/call answers isError
        transport.call(connection(scripted + "/v0326"), "t", {}, {}, 10)
    versions = [h.get("mcp-protocol-version") for _, h, _ in Scripted.received[start:]]
    assert versions == [None, "2025-03-26", "2025-03-26"]


def test_a_server_without_a_session_id_is_asked_without_one(scripted, transport):
    start = len(Scripted.received)
    with pytest.raises(ToolCallFailed):  # its tools/call answers isError
        transport.call(connection(scripted + "/nosession"), "t", {}, {}, 10)
    seen = Scripted.received[start:]
    assert [m.get("method") for _, _, m in seen] == [
        "initialize",
        "notifications/initialized",
        "tools/call",
    ]
    assert all("mcp-session-id" not in h for _, h, _ in seen)
    assert seen[2][2]["params"] == {"name": "t", "arguments": {}}
    assert seen[0][2]["params"]["protocolVersion"] == "2025-06-18"
    assert isinstance(seen[2][2]["id"], int) and "id" not in seen[1][2]


def test_list_tools_reads_every_page_and_leaves_out_nameless_entries(scripted, transport):
    tools = transport.list_tools(connection(scripted + "/paged"), {}, 10)
    assert tools == [
        {"name": "a", "description": "", "inputSchema": {}, "annotations": {}},
        {"name": "b", "description": "", "inputSchema": {}, "annotations": {"readOnlyHint": True}},
    ]


def test_a_server_that_does_not_answer_in_time_is_a_failed_call(scripted, transport):
    with pytest.raises(ToolCallFailed, match="connection 'shop' timed out after"):
        transport.call(connection(scripted + "/stall"), "t", {}, {}, 0.5)


def test_an_http_connection_still_lists_no_tools(scripted, transport):
    plain = Connection(org_id="o", connection_id="web", kind="http", url=scripted, created_at="x")
    with pytest.raises(ToolCallFailed, match="only an MCP server lists its tools"):
        transport.list_tools(plain, {}, 10)


def test_post_json_full_gives_the_response_headers_lower_cased(scripted):
    http = HttpTransport(local_egress())
    message = {"jsonrpc": "2.0", "id": 1, "method": "initialize", "params": {}}
    reply = http.post_json_full(scripted + "/any", message, {}, 10, "test")
    assert reply.status == 200
    assert reply.headers["mcp-session-id"] == "s-1"
    assert reply.headers["content-type"] == "application/json"
    assert json.loads(reply.body)["result"]["protocolVersion"] == "2025-06-18"
    assert http.post_json(scripted + "/any", message, {}, 10, "test") == (reply.status, reply.body)
    http.close()


def test_sse_messages_reads_each_event_s_data():
    body = b'data: {"a":\ndata: 1}\n\n: c\n\nevent: x\n\ndata: [2]\n\ndata: 3'
    assert sse_messages(body) == [{"a": 1}, [2], 3]
