"""Tool gateway benchmark: what one tool call of an `http` or `lambda` agent costs through the
gateway (docs/guides/tools.md), in AWS requests and CPU.

On the embedded stack (moto server on 127.0.0.1, the HTTP routes; no pollers), one attempt's
session is opened as a case attempt opens it, then `--calls` calls are made through
`POST {tools_url}/{tool}` one after another, alternating a write that runs on its test connection
and a read that runs on its own, both served by a tool server on 127.0.0.1. Prints AWS requests
per call by operation (every request moto served while the calls were made; the tool's own
request is an HTTP request to the tool server, not an AWS one) and CPU ms per call over the
process tree (this process: the client, the routes, the tool server; and moto's), beside the same
calls made straight to the tool server, so the difference is the gateway's own.

Goal: at most 2 AWS requests per call beyond the tool's own (one read of the session, one write
of the call).

    python -m bench.gateway [--calls 200]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import threading
import time
from collections.abc import Callable
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

ORG = "org_bench_gateway"
TOOLS = [
    {
        "name": "refund",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
        "effect": "write",
        "connection_id": "shop",
    },
    {"name": "lookup", "effect": "read", "connection_id": "crm"},
]


def _tool_server() -> tuple[ThreadingHTTPServer, str]:
    """A tool server on 127.0.0.1 answering every POST with `{"ok": true}`."""

    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"
        disable_nagle_algorithm = True  # headers and body are separate sends

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            self.rfile.read(int(self.headers.get("content-length") or 0))
            data = b'{"ok": true}'
            self.send_response(200)
            self.send_header("content-type", "application/json")
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)

    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    threading.Thread(
        target=server.serve_forever, kwargs={"poll_interval": 0.05}, daemon=True
    ).start()
    return server, f"http://127.0.0.1:{server.server_address[1]}"


def _cpu(stack: Any) -> float:
    """CPU seconds used so far by this process and moto's."""
    t = os.times()
    return t.user + t.system + stack.moto.cpu_seconds()


def _open_session(base: str) -> Any:
    """Connections `shop` (its test connection `shop-test`) and `crm` on the tool server, and one
    attempt's open session at the gateway, as a case attempt of an `http` agent opens it."""
    from chalicelib import bootstrap
    from chalicelib.domain.enums import ArmRole
    from chalicelib.domain.records import Arm, Connection, Run
    from chalicelib.services import gateway, tool_calls

    c = bootstrap.container()
    for connection_id, path in (("shop", "prod/shop"), ("shop-test", "test/shop"), ("crm", "crm")):
        c.connections.create(
            Connection(
                org_id=ORG,
                connection_id=connection_id,
                kind="http",
                url=f"{base}/{path}",
                created_at="2026-12-05T00:00:00Z",
            )
        )
    arm = Arm(
        arm_id="candidate",
        role=ArmRole.CANDIDATE,
        version=None,
        draft=True,
        spec={"runtime": "http", "url": "https://agent.example/ask", "tools": TOOLS},
        spec_hash="h",
    )
    run = Run(
        run_id=f"bench-{time.time_ns()}",
        org_id=ORG,
        agent_id="agent",
        dataset_id="ds",
        dataset_version=1,
        created_at="2026-12-05T00:00:00Z",
        status="running",
        phase="answering",
        candidate="draft",
        spec_hash="h",
        arms=(arm,),
        case_ids_text="c1",
        scoring={"required": ["equals"]},
        settings={"isolation": {"test_connections": {"shop": "shop-test"}}},
        tasks_total=1,
        expected=1,
        heartbeat_at_ms=0,
    )
    box = tool_calls.toolbox_for(c, run, arm, "c1", "candidate#c1#001")
    return gateway.open(c, run, box, gateway.until(c))


def _timed(
    stack: Any, calls: int, one: Callable[[int], None]
) -> tuple[float, float, dict[str, int]]:
    """CPU seconds over the process tree and moto's alone, and moto's requests by operation, for
    `calls` calls."""
    from assay_local.moto_http import EMPTY_RECEIVE_KEY

    stack.moto.reset_counts()
    cpu0, moto0 = _cpu(stack), stack.moto.cpu_seconds()
    for i in range(calls):
        one(i)
    cpu, moto = _cpu(stack) - cpu0, stack.moto.cpu_seconds() - moto0
    counts = {k: v for k, v in stack.moto.requests().items() if k != EMPTY_RECEIVE_KEY}
    return cpu, moto, counts


def measure(calls: int) -> int:
    """Start a stack, open a session, time `calls` calls through it and straight to the tools;
    print the figures; 0 when every call was answered 200 and the goal is met."""
    import httpx

    from assay_local.stack import EmbeddedStack

    server, base = _tool_server()
    try:
        with EmbeddedStack(scheduler=False, pollers=False) as stack:
            session = _open_session(base)
            url, token = session.gateway.url, session.gateway.token
            statuses: list[int] = []
            with httpx.Client(headers={"Authorization": f"Bearer {token}"}, timeout=30) as http:

                def through_gateway(i: int) -> None:
                    if i % 2:
                        reply = http.post(f"{url}/lookup", json={"q": f"c{i}"})
                    else:
                        reply = http.post(f"{url}/refund", json={"order_id": f"o{i}"})
                    statuses.append(reply.status_code)

                def straight(i: int) -> None:
                    where = "crm/lookup" if i % 2 else "test/shop/refund"
                    http.post(f"{base}/{where}", json={"q": f"c{i}"}).raise_for_status()

                through_gateway(0)  # warm: the route's first request imports its modules
                statuses.clear()
                gw_cpu, gw_moto, counts = _timed(stack, calls, through_gateway)
                direct_cpu, _, _ = _timed(stack, calls, straight)
            from chalicelib import bootstrap
            from chalicelib.services import gateway

            kept = gateway.close(bootstrap.container(), session)
    finally:
        server.shutdown()
        server.server_close()
    total = sum(counts.values())
    per_call = total / calls
    print(f"command: python -m bench.gateway --calls {calls}")
    print(
        f"calls answered 200: {statuses.count(200)}/{calls}; calls kept on the attempt: "
        f"{len(kept)} (with the warm-up call)"
    )
    print(
        f"AWS requests per call through the gateway: {per_call:.2f} (total {total}; the tool's "
        "own request goes to the tool server, not to AWS; goal <= 2)"
    )
    for op, n in sorted(counts.items(), key=lambda kv: -kv[1]):
        print(f"  {op:<36} {n:>7}  {n / calls:6.2f}")
    gw_ms, direct_ms = gw_cpu * 1000 / calls, direct_cpu * 1000 / calls
    print(
        f"CPU per call over the process tree: {gw_ms:.1f} ms through the gateway, "
        f"{direct_ms:.1f} ms straight to the tool server: the gateway's own "
        f"{gw_ms - direct_ms:.1f} ms, of which moto's process (serving the 2 requests) "
        f"{gw_moto * 1000 / calls:.1f} ms"
    )
    print(
        json.dumps(
            {"aws_requests_per_call": round(per_call, 2), "cpu_ms_per_call": round(gw_ms, 1)}
        )
    )
    return 0 if statuses.count(200) == calls and per_call <= 2 else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--calls", type=int, default=200)
    args = parser.parse_args(argv)
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average {load}"
    )
    return measure(args.calls)


if __name__ == "__main__":
    sys.exit(main())
