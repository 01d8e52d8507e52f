"""An `http` agent on 127.0.0.1 that answers each case with bytes chosen by the test, sent as they
are: JSON escapes of lone surrogates, NUL, bytes that are not UTF-8 - what a careless or hostile
agent can send and `json.dumps` never would."""

from __future__ import annotations

import json
import threading
from collections import Counter
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from types import TracebackType
from typing import Any


class RawAgent:
    """`with RawAgent({"c1": b'{"answer": "42 \\\\ud800"}'}) as agent:` serves `agent.url`; a case
    it has no bytes for gets `default`. `asked[case_id]` counts the requests per case."""

    def __init__(self, bodies: dict[str, bytes], default: bytes = b'{"answer": "42"}') -> None:
        self.bodies, self.default = bodies, default
        self.asked: Counter[str] = Counter()
        agent = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                raw = self.rfile.read(int(self.headers.get("content-length") or 0))
                case_id = str(json.loads(raw).get("case_id"))
                agent.asked[case_id] += 1
                data = agent.bodies.get(case_id, agent.default)
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.server.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.server.server_address[1]}/agent"

    def __enter__(self) -> RawAgent:
        threading.Thread(
            target=self.server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
        ).start()
        return self

    def __exit__(
        self, kind: type[BaseException] | None, exc: BaseException | None, tb: TracebackType | None
    ) -> None:
        self.server.shutdown()
        self.server.server_close()
