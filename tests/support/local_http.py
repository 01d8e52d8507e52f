"""A stdlib threaded HTTP server on 127.0.0.1 answering POSTs, shared by the tests' agents and tool
servers: `answer(path, body bytes) -> (status, reply)` decides each reply, a JSON value sent as
JSON, or bytes sent as they are."""

from __future__ import annotations

import json
import threading
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any, Self


class LocalServer:
    """`with LocalServer(answer) as s:` serves `s.base` (`http://127.0.0.1:<port>`) until the
    block ends; `s.request_log` keeps the path and headers of every request, in order (header
    names in lower case)."""

    def __init__(self, answer: Callable[[str, bytes], tuple[int, Any]]) -> None:
        request_log: list[tuple[str, dict[str, str]]] = []
        self.request_log = request_log

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"
            disable_nagle_algorithm = True  # headers and body are separate sends

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                request_log.append((self.path, {k.lower(): v for k, v in self.headers.items()}))
                status, body = answer(self.path, raw)
                data = body if isinstance(body, bytes) else json.dumps(body).encode()
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.base = f"http://127.0.0.1:{self.server.server_address[1]}"

    def __enter__(self) -> Self:
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.server.shutdown()
        self.server.server_close()
