"""A real MCP server for the tests: the MCP SDK's FastMCP over streamable HTTP, served by uvicorn in
a thread on 127.0.0.1 (a free port), with a shop's tools: one read (annotated `readOnlyHint`), one
write, one whose reply is JSON text and one that fails. Only the tests import the SDK (a `dev`
dependency); the service never does.
"""

from __future__ import annotations

import socket
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass, field
from typing import Any

import uvicorn
from mcp.server.fastmcp import FastMCP
from mcp.types import ToolAnnotations


@dataclass
class ShopServer:
    """A running shop MCP server.

    `url`: its MCP endpoint (`http://127.0.0.1:<port>/mcp`). `sent`: the emails `send_email`
    sent, in order. `requests`: `(HTTP method, headers)` of every request it received, header
    names lower-cased.
    """

    url: str
    sent: list[dict[str, str]] = field(default_factory=list)
    requests: list[tuple[str, dict[str, str]]] = field(default_factory=list)

    @property
    def port(self) -> int:
        return int(self.url.rsplit(":", 1)[1].split("/", 1)[0])


def shop_app(server: ShopServer, *, json_response: bool) -> Any:
    """The shop's ASGI app (FastMCP's streamable HTTP app), every request noted in
    `server.requests`. `json_response` answers `application/json`; else `text/event-stream`."""
    mcp = FastMCP("shop", json_response=json_response, log_level="WARNING")

    @mcp.tool(
        description="Find an order by its id.",
        annotations=ToolAnnotations(readOnlyHint=True),
    )
    def lookup_order(order_id: str) -> dict[str, Any]:
        return {"order_id": order_id, "state": "paid", "total": 12.5}

    @mcp.tool(description="Send an email.", structured_output=False)
    def send_email(to: str, body: str) -> str:
        server.sent.append({"to": to, "body": body})
        return f"sent to {to}"

    @mcp.tool(
        description="Stock of a product.",
        annotations=ToolAnnotations(readOnlyHint=True),
        structured_output=False,
    )
    def stock(sku: str) -> dict[str, Any]:
        return {"sku": sku, "left": 3}

    @mcp.tool(description="Always fails.", annotations=ToolAnnotations(readOnlyHint=False))
    def refuse(reason: str) -> str:
        raise ValueError(f"refused: {reason}")

    app = mcp.streamable_http_app()

    async def noted(scope: Any, receive: Any, send: Any) -> None:
        if scope["type"] == "http":
            headers = {
                k.decode("latin-1").lower(): v.decode("latin-1") for k, v in scope["headers"]
            }
            server.requests.append((scope["method"], headers))
        await app(scope, receive, send)

    return noted


@contextmanager
def serving(app: Any) -> Iterator[int]:
    """Serve the ASGI `app` with uvicorn in a thread on 127.0.0.1 (a free port) until the block
    ends; yields the port once the server accepts connections."""
    sock = socket.socket(socket.AF_INET, socket.SOCK_STREAM)
    sock.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
    sock.bind(("127.0.0.1", 0))
    port = sock.getsockname()[1]
    config = uvicorn.Config(app, log_level="warning", lifespan="on", access_log=False)
    server = uvicorn.Server(config)
    thread = threading.Thread(target=server.run, kwargs={"sockets": [sock]}, daemon=True)
    thread.start()
    for _ in range(2000):  # the server's state, looked at every 10 ms (at most 20 s)
        if server.started or not thread.is_alive():
            break
        time.sleep(0.01)
    if not server.started:
        raise RuntimeError("the MCP test server did not start")
    try:
        yield port
    finally:
        server.should_exit = True
        thread.join(30)
        sock.close()


@contextmanager
def shop_server(*, json_response: bool = False) -> Iterator[ShopServer]:
    """A running shop MCP server (see `ShopServer`)."""
    server = ShopServer(url="")
    with serving(shop_app(server, json_response=json_response)) as port:
        server.url = f"http://127.0.0.1:{port}/mcp"
        yield server
