"""The keep-alive server in front of moto (`assay_local.moto_http`) reads a request's headers
without the `email` package: the same headers, and the same answers to the same bytes, as the
standard library's own `parse_request` (a server of each on 127.0.0.1, fed raw requests)."""

from __future__ import annotations

import http.client
import http.server
import io
import json
import socket
import threading
from collections.abc import Iterator
from typing import Any

import pytest

from assay_local.moto_http import KeepAliveWSGIServer, _KeepAliveHandler

BLOCKS = [
    b"Host: h\r\nContent-Type: application/json\r\nX-Amz-Target: DynamoDB_20120810.GetItem\r\n\r\n",
    b"A: 1\r\na: 2\r\nEmpty:\r\nSpaced:   v  \r\nTabbed:\tt\r\n\r\n",  # repeats, blanks, spaces
    b"Folded: one\r\n two\r\nNext: x\r\n\r\n",  # a continuation line
    b"Bad Name: v\r\nOk: y\r\n\r\n",  # a name the email parser does not take
    b"Lone: a\rb\r\nUnicode: \xe9\x85\x0c\r\n\r\n",  # a lone CR, line-break-like bytes
    b"Bare: lf only\nX: y\n\n",
    b"\r\n",
]


class _Stdlib(_KeepAliveHandler):
    """Our handler with the standard library's `parse_request` put back."""

    parse_request = http.server.BaseHTTPRequestHandler.parse_request  # type: ignore[assignment]


class _Handler(_KeepAliveHandler):
    """Our handler on a stream of header lines (no socket), to read `_headers` alone."""

    def __init__(self, raw: bytes) -> None:
        self.rfile = io.BytesIO(raw)


def test_headers_are_read_as_the_email_parser_reads_them() -> None:
    for block in BLOCKS:
        ours = _Handler(block)._headers()
        theirs = http.client.parse_headers(io.BytesIO(block))
        assert ours.items() == theirs.items(), block
        assert [ours.get(k) for k in ("a", "HOST", "folded", "missing")] == [
            theirs.get(k) for k in ("a", "HOST", "folded", "missing")
        ]


def _echo(environ: dict[str, Any], start_response: Any) -> list[bytes]:
    length = int(environ.get("CONTENT_LENGTH") or 0)
    seen = {
        "method": environ["REQUEST_METHOD"],
        "path": environ["PATH_INFO"],
        "headers": sorted((k, v) for k, v in environ.items() if k.startswith(("HTTP_", "CONT"))),
        "body": environ["wsgi.input"].read(length).decode("latin-1"),
    }
    start_response("200 OK", [("Content-Type", "application/json")])
    return [json.dumps(seen).encode()]


@pytest.fixture
def servers() -> Iterator[list[tuple[str, int]]]:
    made = []
    for handler in (_KeepAliveHandler, _Stdlib):
        server = KeepAliveWSGIServer(("127.0.0.1", 0), _echo)
        server.RequestHandlerClass = handler
        threading.Thread(target=server.serve_forever, daemon=True).start()
        made.append(server)
    yield [s.server_address for s in made]  # type: ignore[misc]
    for s in made:
        s.shutdown()
        s.server_close()


def _exchange(address: tuple[str, int], raw: bytes) -> bytes:
    """Send `raw` on a new connection, half-close, and read everything the server says."""
    with socket.create_connection(address, timeout=10) as sock:
        sock.sendall(raw)
        sock.shutdown(socket.SHUT_WR)
        chunks = []
        while chunk := sock.recv(65536):
            chunks.append(chunk)
    said = b"".join(chunks)
    return b"\r\n".join(line for line in said.split(b"\r\n") if not line.startswith(b"Date: "))


REQUESTS = [
    # two requests on one connection, repeated headers, a body
    b"POST / HTTP/1.1\r\nHost: h\r\nX-A: 1\r\nx-a: 2\r\nContent-Length: 4\r\n\r\nbody"
    b"GET /p?q=1 HTTP/1.1\r\nHost: h\r\n\r\n",
    b"POST / HTTP/1.1\r\nExpect: 100-continue\r\nContent-Length: 2\r\n\r\nok",
    b"GET / HTTP/1.1\r\nConnection: close\r\n\r\nGET / HTTP/1.1\r\n\r\n",  # closed after one
    b"GET / HTTP/1.0\r\n\r\n",
    b"GET //twice HTTP/1.1\r\nFolded: a\r\n b\r\nConnection: close\r\n\r\n",
    b"GET / HTTP/2.0\r\n\r\n",  # 505
    b"GET / HTTX/1.1\r\n\r\n",  # 400, a bad version
    b"GET / HTTP/1.1 extra\r\n\r\n",  # 400, bad syntax
    b"POST /\r\n\r\n",  # 400, HTTP/0.9 with a method other than GET
    b"GET / HTTP/1.1\r\n" + b"".join(b"H%d: v\r\n" % i for i in range(101)) + b"\r\n",  # 431
    b"GET / HTTP/1.1\r\nLong: " + b"x" * 70000 + b"\r\n\r\n",  # 431, a line too long
]


def test_the_same_bytes_get_the_same_answers_as_the_standard_librarys(
    servers: list[tuple[str, int]],
) -> None:
    ours, theirs = servers
    for raw in REQUESTS:
        got = _exchange(ours, raw)
        assert got == _exchange(theirs, raw), raw[:60]
        assert got, raw[:60]  # each is answered (an HTTP/0.9-style error has no status line)
