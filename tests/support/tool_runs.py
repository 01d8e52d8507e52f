"""A completed eval run whose attempts hold tool calls of every status, each decided, made and
kept by the attempts' own tools (`services.tool_calls.ToolBox`), for the tests of how calls are
shown (the API's counts, the console's case detail, `assay cases`, the JUnit report).

The run is started through the API with its pollers paused (the `frozen` fixture), so none of its
cases is answered by the service; each attempt is then asked here, its calls going through a
`ToolBox` with the isolation settings the case needs (a test connection standing in, a recording
to replay), and written through the ledger store as a worker writes it. Statuses are never
written by hand: the service's rule decides every one.

- `c000`: `lookup_order` executed on the test connection `shop-test` (a real HTTP tool server on
  127.0.0.1 standing in for `shop`), `send_email` blocked (a write without a connection), a
  `workspace_write` executed on the attempt's workspace, and a call of an unknown tool, blocked.
- `c001` (answered from a recording): `lookup_order` replayed, two `refund` calls divergent.
- `c002` (an `http` agent): a call it only reported, kept unverified.

Arguments and results carry markup (`IMG`, `SVG`): pages must show it as text.
"""

from __future__ import annotations

import json
import threading
from collections.abc import Iterator
from contextlib import contextmanager
from dataclasses import dataclass
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import ToolCall
from chalicelib.domain.records import Attempt, Connection
from chalicelib.domain.tool_isolation import IsolationSettings, RecordedCall
from chalicelib.domain.tools import tools_of
from chalicelib.services import finalize
from chalicelib.services.tool_calls import ToolBox, calls_json, kept_calls
from tests.support.e2e import Api, cases, sleepy_spec

IMG = '<img src=x onerror="window.__pwned=1">'
SVG = '"><svg onload="window.__pwned=2">'

TOOLS: list[dict[str, Any]] = [
    {
        "name": "lookup_order",
        "description": "Find an order",
        "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
        "effect": "read",
        "connection_id": "shop",
    },
    {
        "name": "refund",
        "parameters": {"type": "object"},
        "effect": "write",
        "connection_id": "shop",
    },
    {"name": "send_email", "parameters": {"type": "object"}},
]


class _Tools(BaseHTTPRequestHandler):
    """The test connection's tool server: `POST /<tool>` answers what it got, with markup."""

    def do_POST(self) -> None:  # noqa: N802 - the stdlib's name
        body = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)) or b"{}")
        reply = json.dumps({"tool": self.path.strip("/"), "got": body, "note": SVG}).encode()
        self.send_response(200)
        self.send_header("content-type", "application/json")
        self.send_header("content-length", str(len(reply)))
        self.end_headers()
        self.wfile.write(reply)

    def log_message(self, *_: Any) -> None:
        pass


@contextmanager
def tool_server() -> Iterator[str]:
    """A tool server on 127.0.0.1 for the length of the block; yields its URL."""
    server = ThreadingHTTPServer(("127.0.0.1", 0), _Tools)
    thread = threading.Thread(target=server.serve_forever, daemon=True)
    thread.start()
    try:
        yield f"http://127.0.0.1:{server.server_address[1]}"
    finally:
        server.shutdown()
        server.server_close()


@dataclass(frozen=True)
class DecidedRun:
    run_id: str
    agent_id: str
    dataset_id: str
    calls: dict[str, list[dict[str, Any]]]
    """Each case's calls as kept on its attempt."""
    workspace_files: list[str]
    """What the attempts wrote in their workspaces while asked (deleted when the run ended)."""


def decided_run(api: Api, container: Any, tool_url: str) -> DecidedRun:
    """Start a run of three cases and answer it here with the calls the module describes; the run
    is completed when this returns. Needs the pollers paused (`frozen`) and the operator's
    private network allowed (the tool server is on 127.0.0.1)."""
    org = api.org_id
    now = iso(container.clock.now())
    for connection_id, url in (("shop", "http://127.0.0.1:9/never"), ("shop-test", tool_url)):
        container.connections.create(
            Connection(
                org_id=org, connection_id=connection_id, kind="http", url=url, created_at=now
            )
        )
    spec = {**sleepy_spec(), "tools": TOOLS}
    dataset_id = api.dataset(cases(3))
    agent_id = api.agent(spec)
    run_id = api.start(agent_id, dataset_id)["run_id"]
    run = container.runs.get(org, run_id)
    arm = run.arms[0]

    def box(case_id: str, settings: IsolationSettings, recorded=()) -> ToolBox:
        key = f"{arm.arm_id}#{case_id}#001"
        return ToolBox(container, org, run_id, key, tools_of(arm.spec), settings, recorded)

    first = box("c000", IsolationSettings(test_connections={"shop": "shop-test"}))
    first.call("lookup_order", {"order_id": IMG})
    first.call("send_email", {"to": "someone@example.com", "body": f"sorry {SVG}"})
    first.call("workspace_write", {"path": "notes/refund.txt", "content": "refund A1"})
    first.call("delete_everything", {})
    files = container.workspaces.list(org, run_id, first.attempt_key)

    recording = (RecordedCall("lookup_order", {"order_id": "A1"}, {"status": "shipped"}),)
    second = box("c001", IsolationSettings(from_recordings=True), recording)
    second.call("lookup_order", {"order_id": "A1"})
    second.call("refund", {"order_id": "A1", "amount": 5})
    second.call("refund", {"order_id": "A1", "amount": 6})

    third = box("c002", IsolationSettings())
    reported = [ToolCall(name="refund", arguments={"order_id": "B2"}, result={"ok": True})]
    answered = {
        "c000": ("passed", calls_json(first.calls)),
        "c001": ("failed", calls_json(second.calls)),
        "c002": ("passed", calls_json(kept_calls(third, reported, {"runtime": "http"}))),
    }
    at = epoch_ms(container.clock.now())
    for case_id, (state, calls) in answered.items():
        key = f"{arm.arm_id}#{case_id}#001"
        attempt = Attempt(
            run_id=run_id,
            attempt_key=key,
            recorded_key=f"{at:013d}#{key}",
            arm_id=arm.arm_id,
            case_id=case_id,
            attempt=1,
            state=state,
            answer="42" if state == "passed" else "41",
            answer_bytes=2,
            calls=calls,
            recorded_at=now,
        )
        assert container.runs.put_attempt_counted(container.runs.get(org, run_id), attempt, at)
    finalize.advance_if_done(container, org, run_id)
    assert container.runs.get(org, run_id).status == "completed"
    statuses = {cid: [c["status"] for c in calls] for cid, (_, calls) in answered.items()}
    assert statuses == {
        "c000": [CallStatus.EXECUTED, CallStatus.BLOCKED, CallStatus.EXECUTED, CallStatus.BLOCKED],
        "c001": [CallStatus.REPLAYED, CallStatus.DIVERGENT, CallStatus.DIVERGENT],
        "c002": [CallStatus.UNVERIFIED],
    }, statuses
    return DecidedRun(
        run_id,
        agent_id,
        dataset_id,
        {cid: calls for cid, (_, calls) in answered.items()},
        files,
    )
