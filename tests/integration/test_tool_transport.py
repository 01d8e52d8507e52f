"""Calls on an `http` connection (`ConnectionTransport`) against a stdlib server on 127.0.0.1 in a
thread (private networks allowed, as on `assay dev`), and the egress refusals that happen before
any connection: names resolve through a stub resolver, never real DNS, and nothing but 127.0.0.1
is ever contacted."""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chalicelib.adapters.tool_transport import ConnectionTransport
from chalicelib.domain.records import Connection
from chalicelib.errors import InvalidInputError
from chalicelib.services.ports.tools import ToolCallFailed
from tests.support.egress import stub_egress

NAMES: dict[str, list[str]] = {
    "tools.test": ["127.0.0.1"],
    "meta.test": ["169.254.169.254"],
    "inside.test": ["10.0.0.7"],
}


class ToolServer:
    """POST /<tool>: records (path, body, authorization) and answers by tool name."""

    def __init__(self) -> None:
        self.received: list[tuple[str, Any, str | None]] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            def log_message(self, *_: Any) -> None:
                return None

            def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
                body = self.rfile.read(int(self.headers.get("content-length") or 0))
                outer.received.append(
                    (self.path, json.loads(body or b"null"), self.headers.get("authorization"))
                )
                if self.path == "/redirect":
                    self.send_response(307)
                    self.send_header("location", "http://meta.test/latest/meta-data")
                    self.end_headers()
                    return
                status, reply = {
                    "/lookup": (200, b'{"order": "A1", "state": "shipped"}'),
                    "/broken": (500, b'{"error": "down"}'),
                    "/text": (200, b"not json"),
                    "/empty": (200, b""),
                }.get(self.path, (404, b"{}"))
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.end_headers()
                self.wfile.write(reply)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.port = self.server.server_address[1]
        threading.Thread(target=self.server.serve_forever, daemon=True).start()


@pytest.fixture(scope="module")
def server() -> Iterator[ToolServer]:
    s = ToolServer()
    yield s
    s.server.shutdown()


def connection(url: str, kind: str = "http") -> Connection:
    return Connection(
        org_id="org-1", connection_id="shop", kind=kind, url=url, created_at="2026-12-01T00:00:00Z"
    )


def transport(private: bool = True) -> ConnectionTransport:
    return ConnectionTransport(stub_egress(NAMES, private))


def test_a_call_posts_the_arguments_and_returns_the_json_reply(server: ToolServer):
    t = transport()
    result = t.call(
        connection(f"http://tools.test:{server.port}/"),
        "lookup",
        {"order_id": "A1"},
        {"authorization": "Bearer k"},
        5,
    )
    assert result == {"order": "A1", "state": "shipped"}
    assert server.received[-1] == ("/lookup", {"order_id": "A1"}, "Bearer k")
    assert t.call(connection(f"http://tools.test:{server.port}"), "empty", {}, {}, 5) is None


@pytest.mark.parametrize(
    ("tool", "says"), [("broken", "status 500"), ("text", "not JSON"), ("missing", "status 404")]
)
def test_a_failing_tool_is_a_failed_call(server: ToolServer, tool: str, says: str):
    with pytest.raises(ToolCallFailed, match=says):
        transport().call(connection(f"http://tools.test:{server.port}"), tool, {}, {}, 5)


def test_a_redirect_to_the_metadata_address_is_refused_before_it_is_followed(server: ToolServer):
    before = len(server.received)
    with pytest.raises(ToolCallFailed, match="metadata"):
        transport().call(
            connection(f"http://tools.test:{server.port}"),
            "redirect",
            {},
            {"authorization": "Bearer k"},
            5,
        )
    assert len(server.received) == before + 1  # the first hop only


@pytest.mark.parametrize(
    ("url", "private"),
    [
        ("http://meta.test/x", True),  # a name that resolves to the metadata address
        ("http://169.254.169.254/latest", True),
        ("http://inside.test/x", False),  # private, and private networks are not allowed
        ("http://127.0.0.1:9/x", False),
    ],
)
def test_a_refused_address_fails_the_call_before_any_connection(url: str, private: bool):
    with pytest.raises(ToolCallFailed, match="address"):
        transport(private).call(connection(url), "lookup", {}, {}, 5)


def test_the_url_is_checked_when_a_connection_is_saved():
    t = transport(private=False)
    t.check_url("https://tools.example/api", "url")  # a name that does not resolve now passes
    for url in ("http://169.254.169.254/", "http://meta.test/", "http://10.1.2.3/", "ftp://x/"):
        with pytest.raises(InvalidInputError) as err:
            t.check_url(url, "url")
        assert err.value.field == "url"


def test_a_tool_name_cannot_leave_the_connections_path(server: ToolServer):
    with pytest.raises(ToolCallFailed, match="status 404"):
        transport().call(connection(f"http://tools.test:{server.port}/api"), "../lookup", {}, {}, 5)
    assert server.received[-1][0] == "/api/..%2Flookup"
