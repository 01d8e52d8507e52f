"""The tool gateway's MCP dispatcher (`services.mcp_gateway.answer`) spoken to by the MCP SDK's own
client: `answer` served by a stdlib HTTP server on 127.0.0.1, the attempt's tools a real `ToolBox`
whose tools an MCP server lists (the SDK's FastMCP on 127.0.0.1, reached through the egress-checked
`ConnectionTransport`). An agent that takes its tools from MCP initializes, lists and calls them
with no code of assay's; the isolation rule decides every call: the read runs on the shop, the
writes are blocked and never reach it."""

from __future__ import annotations

import asyncio
import concurrent.futures
import json
import threading
from collections.abc import Iterator
from dataclasses import dataclass, field
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import httpx
import pytest
from mcp import ClientSession
from mcp.client.streamable_http import streamable_http_client
from mcp.shared.exceptions import McpError

from chalicelib.adapters.egress import Egress
from chalicelib.adapters.tool_transport import ConnectionTransport
from chalicelib.domain.records import Connection
from chalicelib.domain.tool_isolation import IsolationSettings
from chalicelib.domain.tools import WORKSPACE_TOOLS, tools_from_mcp
from chalicelib.errors import NotFoundError
from chalicelib.services.mcp_gateway import answer
from chalicelib.services.tool_calls import ToolBox
from tests.support.mcp_servers import ShopServer, shop_server

SESSION = "gw-session-1"


@dataclass
class Connections:
    """The organization's connections (`c.connections`)."""

    kept: dict[str, Connection]

    def get(self, org_id: str, connection_id: str, *, field: str = "connection_id") -> Connection:
        if connection_id not in self.kept:
            raise NotFoundError(f"no connection {connection_id}", field=field)
        return self.kept[connection_id]


class NoSecrets:
    def get(self, org_id: str, name: str) -> str | None:
        return None


@dataclass
class Workspaces:
    """Attempts' workspaces in memory (`c.workspaces`)."""

    files: dict[tuple[str, str, str, str], str] = field(default_factory=dict)

    def read(self, org_id: str, run_id: str, attempt_key: str, path: str) -> str | None:
        return self.files.get((org_id, run_id, attempt_key, path))

    def write(self, org_id: str, run_id: str, attempt_key: str, path: str, content: str) -> None:
        self.files[(org_id, run_id, attempt_key, path)] = content

    def list(self, org_id: str, run_id: str, attempt_key: str, prefix: str = "") -> list[str]:
        where = (org_id, run_id, attempt_key)
        return sorted(k[3] for k in self.files if k[:3] == where and k[3].startswith(prefix))


@dataclass
class Container:
    """What a `ToolBox` reaches through its container."""

    connections: Connections
    tool_transport: ConnectionTransport
    secrets: NoSecrets = field(default_factory=NoSecrets)
    workspaces: Workspaces = field(default_factory=Workspaces)


@dataclass
class Gateway:
    url: str
    toolbox: ToolBox
    posts: list[tuple[dict[str, str], Any]] = field(default_factory=list)
    others: list[str] = field(default_factory=list)


def gateway_handler(gateway: Gateway, lock: threading.Lock) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
            pass

        def do_POST(self) -> None:  # noqa: N802
            raw = self.rfile.read(int(self.headers.get("content-length") or 0))
            headers = {k.lower(): v for k, v in self.headers.items()}
            with lock:
                gateway.posts.append((headers, json.loads(raw)))
                status, body, extra = answer(raw, gateway.toolbox, session_id=SESSION)
            data = b"" if body is None else json.dumps(body).encode()
            self.send_response(status)
            for name, value in extra.items():
                self.send_header(name, value)
            if body is not None:
                self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

        def refuse(self) -> None:
            gateway.others.append(self.command)
            self.send_response(405)
            self.send_header("allow", "POST")
            self.send_header("content-length", "0")
            self.end_headers()

        do_GET = refuse  # noqa: N815 - no stream of the server's own: 405, as MCP allows
        do_DELETE = refuse  # noqa: N815

    return Handler


@pytest.fixture(scope="module")
def shop() -> Iterator[ShopServer]:
    with shop_server() as server:
        yield server


@pytest.fixture(scope="module")
def gateway(shop: ShopServer) -> Iterator[Gateway]:
    transport = ConnectionTransport(Egress(lambda: lambda host, port: ["127.0.0.1"], lambda: True))
    shop_connection = Connection(
        org_id="org-1", connection_id="shop", kind="mcp", url=shop.url, created_at="2026-12-01"
    )
    listed = transport.list_tools(shop_connection, {}, 10)
    tools = {t.name: t for t in (*tools_from_mcp(listed, (), "shop"), *WORKSPACE_TOOLS)}
    container = Container(Connections({"shop": shop_connection}), transport)
    toolbox = ToolBox(
        container,  # type: ignore[arg-type]
        "org-1",
        "run-1",
        "case-1#1",
        tools,
        IsolationSettings(test_connections={}),
    )
    made = Gateway("", toolbox)
    server = ThreadingHTTPServer(("127.0.0.1", 0), gateway_handler(made, threading.Lock()))
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    made.url = f"http://127.0.0.1:{server.server_address[1]}/api/v1/gateway/t/mcp"
    yield made
    server.shutdown()
    server.server_close()
    transport.close()


def run_apart(coroutine: Any) -> Any:
    """Run `coroutine` to its end with `asyncio.run` in a thread of its own: the test's thread may
    already run an event loop (another test's browser driver), where `asyncio.run` refuses."""
    with concurrent.futures.ThreadPoolExecutor(max_workers=1) as pool:
        return pool.submit(asyncio.run, coroutine).result()


async def agent_session(url: str, steps: Any) -> Any:
    """Run `steps(session)` in an SDK client session with the gateway at `url`."""
    async with httpx.AsyncClient(trust_env=False, timeout=20) as client:
        async with streamable_http_client(url, http_client=client) as (read, write, _):
            async with ClientSession(read, write) as session:
                return await steps(session)


def test_the_sdk_client_initializes_lists_and_calls_through_the_gateway(gateway, shop):
    async def steps(session: ClientSession) -> dict[str, Any]:
        init = await session.initialize()
        listed = await session.list_tools()
        read = await session.call_tool("lookup_order", {"order_id": "A-7"})
        write = await session.call_tool("send_email", {"to": "a@example.com", "body": "hi"})
        failing = await session.call_tool("refuse", {"reason": "x"})
        wrote = await session.call_tool("workspace_write", {"path": "n.txt", "content": "memo"})
        back = await session.call_tool("workspace_read", {"path": "n.txt"})
        await session.send_ping()
        return {
            "init": init,
            "listed": listed,
            "read": read,
            "write": write,
            "failing": failing,
            "wrote": wrote,
            "back": back,
        }

    start = len(gateway.posts)
    out = run_apart(agent_session(gateway.url, steps))

    init = out["init"]
    assert init.serverInfo.name == "assay tool gateway"
    assert init.protocolVersion == "2025-06-18"  # the SDK asks for a newer one: the gateway's own
    assert init.capabilities.tools is not None

    listed = {tool.name: tool for tool in out["listed"].tools}
    assert list(listed) == [
        "lookup_order",
        "send_email",
        "stock",
        "refuse",
        "workspace_read",
        "workspace_write",
        "workspace_list",
    ]
    assert listed["lookup_order"].annotations.readOnlyHint is True
    assert listed["send_email"].annotations.readOnlyHint is False
    assert listed["lookup_order"].inputSchema["required"] == ["order_id"]

    # The read ran on the shop (its own connection): the shop's structured result.
    read = out["read"]
    assert not read.isError
    assert read.structuredContent == {
        "status": "executed",
        "result": {"order_id": "A-7", "state": "paid", "total": 12.5},
    }
    assert json.loads(read.content[0].text) == read.structuredContent

    # The writes were blocked: a normal result saying so, and the shop sent nothing.
    for name in ("write", "failing"):
        result = out[name]
        assert not result.isError
        assert result.structuredContent["status"] == "blocked"
        assert result.structuredContent["note"].startswith("blocked: this call was not executed")
    assert shop.sent == []

    assert out["wrote"].structuredContent["result"] == {"path": "n.txt", "written": True}
    assert out["back"].structuredContent["result"] == {"path": "n.txt", "content": "memo"}

    kept = [(call.name, str(call.status)) for call in gateway.toolbox.calls]
    assert kept == [
        ("lookup_order", "executed"),
        ("send_email", "blocked"),
        ("refuse", "blocked"),
        ("workspace_write", "executed"),
        ("workspace_read", "executed"),
    ]
    assert gateway.toolbox.calls[1].arguments == {"to": "a@example.com", "body": "hi"}

    # Every POST after initialize carried the session the gateway gave, and the version.
    (first, asked), *others = gateway.posts[start:]
    assert asked["method"] == "initialize" and asked["params"]["protocolVersion"] > "2025-06-18"
    assert "mcp-session-id" not in first
    rest = [headers for headers, _ in others]
    assert rest and all(h.get("mcp-session-id") == SESSION for h in rest)
    assert all(h.get("mcp-protocol-version") == "2025-06-18" for h in rest)
    assert set(gateway.others) <= {"GET", "DELETE"}  # the SDK's stream and its goodbye: 405


def test_an_unknown_tool_or_bad_arguments_are_a_protocol_error_to_the_sdk(gateway):
    async def steps(session: ClientSession) -> list[str]:
        await session.initialize()
        messages = []
        for name, arguments in (("delete_all", {}), ("lookup_order", {"order_id": 7})):
            with pytest.raises(McpError) as info:
                await session.call_tool(name, arguments)
            assert info.value.error.code == -32602
            messages.append(info.value.error.message)
        return messages

    before = len(gateway.toolbox.calls)
    unknown, bad = run_apart(agent_session(gateway.url, steps))
    assert "no tool named 'delete_all'" in unknown
    assert bad == "lookup_order: arguments.order_id: 7 is not of type 'string'"
    assert len(gateway.toolbox.calls) == before  # nothing kept for what the attempt has not
