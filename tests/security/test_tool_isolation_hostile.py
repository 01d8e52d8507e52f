"""A hostile organization against tool isolation (docs/guides/tools.md): connections, test
connections, specs' tools and MCP connections, the tool gateway, workspaces and recordings,
through the HTTP API on the embedded stack.

Only 127.0.0.1 is ever contacted: every name that should lead to a private or metadata address is
answered by the `resolver` stub, and every refusal here is checked before anything connects.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import httpx
import pytest

from tests.e2e.conftest import cases, sleepy_spec
from tests.support.e2e import Api
from tests.support.local_http import LocalServer

READ_TOOL = {
    "name": "lookup",
    "parameters": {
        "type": "object",
        "properties": {"order_id": {"type": "string"}},
        "required": ["order_id"],
    },
    "effect": "read",
    "connection_id": "shop",
}
WRITE_TOOL = {"name": "refund", "effect": "write", "connection_id": "shop"}


def connect(api: Api, connection_id: str, url: str, **extra: Any) -> tuple[int, Any]:
    return api.call(
        "POST",
        "/api/v1/connections",
        json={"connection_id": connection_id, "kind": "http", "url": url, **extra},
    )


def connection_ids(api: Api) -> list[str]:
    return [c["connection_id"] for c in api.ok("GET", "/api/v1/connections")["connections"]]


def save_spec(api: Api, spec: dict[str, Any]) -> tuple[int, Any]:
    return api.call("POST", "/api/v1/agents", json={"name": "hostile", "spec": spec})


def openai_spec(**extra: Any) -> dict[str, Any]:
    return {"runtime": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m", **extra}


def field_of(body: Any) -> str | None:
    return body.get("error", {}).get("field") if isinstance(body, dict) else None


# --- connections across organizations ----------------------------------------------------------


def test_another_organizations_connection_is_not_found_wherever_it_is_named(new_api):
    a, b = new_api(), new_api()
    assert connect(a, "shop", "http://127.0.0.1:9/tools")[0] == 201
    assert connect(a, "shop-test", "http://127.0.0.1:9/test", kind="mcp")[0] == 201
    # read, delete
    for method in ("GET", "DELETE"):
        status, body = b.call(method, "/api/v1/connections/shop")
        assert (status, field_of(body)) == (404, "connection_id"), (method, body)
    assert connection_ids(b) == []
    assert connection_ids(a) == ["shop", "shop-test"]
    # in a spec's tools, in mcp_connections
    status, body = save_spec(b, openai_spec(tools=[READ_TOOL]))
    assert (status, field_of(body)) == (404, "spec.tools[0].connection_id")
    status, body = save_spec(b, openai_spec(mcp_connections=["shop-test"]))
    assert (status, field_of(body)) == (404, "spec.mcp_connections[0]")
    # as a test connection, on either side of the map
    b.ok("POST", "/api/v1/environments", json={"environment_id": "staging"})
    assert connect(b, "mine", "http://127.0.0.1:9/mine")[0] == 201
    for mapping, where in (({"mine": "shop"}, "mine"), ({"shop": "mine"}, "shop")):
        status, body = b.call(
            "PUT",
            "/api/v1/environments/staging/test-connections",
            json={"test_connections": mapping},
        )
        assert (status, field_of(body)) == (404, f"test_connections.{where}"), body
    status, body = b.call(
        "PUT",
        "/api/v1/environments/staging/test-connections",
        json={"test_connections": {"mine": "mine"}},
    )
    assert (status, field_of(body)) == (400, "test_connections.mine"), body
    status, body = b.call(
        "POST",
        "/api/v1/environments",
        json={"environment_id": "prod", "test_connections": {"shop": "mine"}},
    )
    assert (status, field_of(body)) == (404, "test_connections.shop")
    assert b.ok("GET", "/api/v1/environments/staging").get("test_connections") in (None, {})
    # A still has both, untouched
    assert a.ok("GET", "/api/v1/connections/shop")["url"] == "http://127.0.0.1:9/tools"


def test_an_mcp_connection_list_naming_an_http_connection_is_refused(api):
    assert connect(api, "shop", "http://127.0.0.1:9/tools")[0] == 201
    status, body = save_spec(api, openai_spec(mcp_connections=["shop"]))
    assert (status, field_of(body)) == (400, "spec.mcp_connections[0]")


@pytest.mark.parametrize(
    "connection_id",
    ["a#b", "a/b", "", "../shop"],
)
def test_connection_ids_with_separators_are_refused(api, connection_id):
    status, body = connect(api, connection_id, "http://127.0.0.1:9/tools")
    assert (status, field_of(body)) == (400, "connection_id"), body
    assert connection_ids(api) == []


def test_a_very_long_or_unicode_connection_id_is_a_clear_answer(api):
    status, body = connect(api, "x" * 5000, "http://127.0.0.1:9/tools")
    assert status == 400 and field_of(body) == "connection_id", body
    assert connection_ids(api) == []
    for odd in ("caf\u00e9-\u2603", "shop\n", "shop\u0000", "sh op"):
        status, body = connect(api, odd, "http://127.0.0.1:9/tools")
        assert (status, field_of(body)) == (400, "connection_id"), (odd, body)
    assert connection_ids(api) == []
    status, body = api.call("GET", "/api/v1/connections/" + "y" * 5000)
    assert status in (400, 404) and field_of(body) == "connection_id", body


# --- egress: connection URLs --------------------------------------------------------------------

REFUSED_URLS = [
    "http://169.254.169.254/latest/meta-data",
    "http://[::ffff:169.254.169.254]/",
    "http://[::ffff:a9fe:a9fe]/",
    "http://2852039166/",
    "http://0251.0376.0251.0376/",
    "http://0xa9.0xfe.0xa9.0xfe/",
    "http://169.254.1.1/",
    "http://[fe80::1]/",
    "http://[fd00:ec2::254]/",
    "http://0.0.0.0/",
    "http://[::]/",
    "http://a@169.254.169.254/",
    "http://a:b@127.0.0.1/",
    "http://metadata.test/",
    "http://METADATA.test./",
    "http://sneaky.test/",
    "file:///etc/passwd",
    "gopher://127.0.0.1:70/",
    "http:///nohost",
    "http://[64:ff9b::a9fe:a9fe]/",
    "http://[2002:a9fe:a9fe::]/",
]


@pytest.mark.parametrize("kind", ["http", "mcp"])
def test_connection_urls_leading_to_metadata_or_link_local_are_refused_before_any_connection(
    api, resolver, kind
):
    stub = resolver(
        {"metadata.test": ["169.254.169.254"], "sneaky.test": ["93.184.216.34", "fd00:ec2::254"]}
    )
    for url in REFUSED_URLS:
        status, body = connect(api, f"c-{uuid.uuid4().hex[:6]}", url, kind=kind)
        assert (status, field_of(body)) == (400, "url"), (url, body)
    assert connection_ids(api) == []
    # only the stub was asked, never a real resolver
    assert {host for host, _ in stub.asked} <= {"metadata.test", "sneaky.test"}


def test_private_addresses_are_refused_when_the_operator_does_not_allow_them(
    api, resolver, operator
):
    operator(assay_allow_private_network=False)
    resolver({"intranet.test": ["10.0.0.5"]})
    for url in (
        "http://127.0.0.1:9/",
        "http://localhost/",
        "http://LOCALHOST./",
        "http://api.localhost/",
        "http://[::1]/",
        "http://[::ffff:127.0.0.1]/",
        "http://10.1.2.3/",
        "http://192.168.1.1/",
        "http://intranet.test/",
        "http://2130706433/",
    ):
        for kind in ("http", "mcp"):
            status, body = connect(api, f"c-{uuid.uuid4().hex[:6]}", url, kind=kind)
            assert (status, field_of(body)) == (400, "url"), (url, body)
    assert connection_ids(api) == []


def test_a_connection_url_or_description_holding_a_secret_value_is_refused(api):
    api.ok("PUT", "/api/v1/secrets/shop-token", json={"value": "s3cr3t-value-for-the-shop"})
    status, body = connect(api, "shop", "http://127.0.0.1:9/?k=s3cr3t-value-for-the-shop")
    assert status == 400 and "s3cr3t" not in json.dumps(body)
    status, body = connect(
        api, "shop", "http://127.0.0.1:9/", description="key s3cr3t-value-for-the-shop"
    )
    assert status == 400 and "s3cr3t" not in json.dumps(body)
    assert connection_ids(api) == []


@pytest.mark.parametrize("name", ["../other", "a/b", "a#b", "x" * 65, "", "sp ace", "nl\n"])
def test_an_auth_secret_that_no_secret_can_be_named_is_refused(api, name):
    status, body = connect(api, "shop", "http://127.0.0.1:9/", auth_secret=name)
    assert (status, field_of(body)) == (400, "auth_secret"), body
    assert connection_ids(api) == []


# --- specs: tools and schemas -------------------------------------------------------------------


def _tool(**over: Any) -> dict[str, Any]:
    return {"name": "lookup", "effect": "read", **over}


@pytest.mark.parametrize(
    ("tools", "field"),
    [
        ([_tool(parameters={"$ref": "https://evil.example/schema.json"})], "parameters"),
        ([_tool(parameters={"$ref": "file:///etc/passwd"})], "parameters"),
        (
            [
                _tool(
                    parameters={
                        "type": "object",
                        "properties": {"a": {"$ref": "other.json#/x"}},
                    }
                )
            ],
            "parameters",
        ),
        (
            [
                _tool(
                    parameters={
                        "type": "object",
                        "properties": {"a": {"$dynamicRef": "https://evil.example/x"}},
                    }
                )
            ],
            "parameters",
        ),
        (
            [_tool(parameters={"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}})],
            "parameters",
        ),
        ([_tool(parameters={"type": "array"})], "parameters"),
        ([_tool(parameters="not a schema")], "parameters"),
        (
            [_tool(parameters={"type": "object", "description": "x" * 40_000})],
            "parameters",
        ),
        ([_tool(name="workspace_read")], "name"),
        ([_tool(name="workspace_write")], "name"),
        (
            [{"type": "function", "function": {"name": "workspace_list"}, "effect": "read"}],
            "name",
        ),
        ([{"type": "function", "function": {"name": "x", "parameters": []}}], "parameters"),
        ([_tool(name="refund\n")], "name"),
        ([_tool(name="a" * 65)], "name"),
        ([_tool(name="../x")], "name"),
        ([_tool(name="caf\u00e9")], "name"),
        ([_tool(), _tool()], "name"),
        ([_tool(effect="delete")], "effect"),
        ([_tool(connection_id="a#b")], "connection_id"),
        ([_tool(connection_id=["shop"])], "connection_id"),
    ],
)
def test_hostile_tool_declarations_are_refused_naming_the_field(api, tools, field):
    status, body = save_spec(api, openai_spec(tools=tools))
    assert status == 400, body
    assert field in (field_of(body) or ""), body
    assert api.ok("GET", "/api/v1/agents")["agents"] == []


def test_129_tools_and_a_max_steps_out_of_range_are_refused(api):
    many = [_tool(name=f"t{i}") for i in range(129)]
    status, body = save_spec(api, openai_spec(tools=many))
    assert (status, field_of(body)) == (400, "spec.tools")
    for steps in (0, 51, 10**9, -1, True, "5", 2.5, None):
        status, body = save_spec(api, openai_spec(tools=[_tool()], max_steps=steps))
        assert (status, field_of(body)) == (400, "spec.max_steps"), (steps, body)
    status, body = save_spec(api, openai_spec(mcp_connections=[f"m{i}" for i in range(9)]))
    assert status == 400 and field_of(body) == "spec.mcp_connections", body
    assert api.ok("GET", "/api/v1/agents")["agents"] == []


# --- recordings ---------------------------------------------------------------------------------


def test_another_organizations_run_and_recording_are_not_found_for_replay(new_api):
    a, b = new_api(), new_api()
    run = a.start(a.agent(sleepy_spec()), a.dataset(cases(1)))
    assert a.wait(run["run_id"])["status"] == "completed"
    status, body = b.call(
        "POST", f"/api/v1/recordings/from-run/{run['run_id']}", json={"recording_id": "stolen"}
    )
    assert status == 404, body
    assert b.ok("GET", "/api/v1/recordings") == {"recordings": []}
    a.ok("POST", f"/api/v1/recordings/from-run/{run['run_id']}", json={"recording_id": "a-calls"})
    agent_b, ds_b = b.agent(sleepy_spec()), b.dataset(cases(1))
    status, body = b.call(
        "POST",
        f"/api/v1/agents/{agent_b}/eval-runs",
        json={
            "dataset_id": ds_b,
            "candidate": "draft",
            "from_recordings": True,
            "recording_id": "a-calls",
        },
    )
    assert (status, field_of(body)) == (404, "recording_id"), body
    assert b.ok("GET", "/api/v1/eval-runs").get("eval_runs", []) == []


def test_a_recording_from_a_run_still_running_is_a_conflict(api):
    run = api.start(api.agent(sleepy_spec(sleep_ms=3000)), api.dataset(cases(2)))
    status, body = api.call(
        "POST", f"/api/v1/recordings/from-run/{run['run_id']}", json={"recording_id": "early"}
    )
    assert (status, field_of(body)) == (409, "run_id"), body
    assert api.ok("GET", "/api/v1/recordings") == {"recordings": []}
    api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/cancel")


@pytest.mark.parametrize(
    "calls",
    [
        [{"name": "lookup", "arguments": [1, 2], "result": {}}],
        [{"name": "lookup", "arguments": "text", "result": {}}],
        [{"name": "", "arguments": {}, "result": {}}],
        "not a list",
        [{"name": "lookup", "arguments": {}, "result": "x" * 6_000_000}],
    ],
)
def test_a_recording_whose_calls_are_malformed_or_huge_is_refused(api, calls):
    line = {"case_id": "c000", "input": "q", "answer": "42", "calls": calls}
    status, body = api.call(
        "POST", "/api/v1/recordings", json={"recording_id": "bad", "content": json.dumps(line)}
    )
    assert status in (400, 413), body
    assert "xxxxxxxxxx" not in json.dumps(body)
    assert api.ok("GET", "/api/v1/recordings") == {"recordings": []}


# --- the tool gateway ---------------------------------------------------------------------------


class HeaderServer:
    """A tool server on 127.0.0.1 keeping the path and Authorization header of every request."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.received: list[tuple[str, str | None]] = []
        self.redirect_to = ""
        self.lock = threading.Lock()
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                self.rfile.read(int(self.headers.get("content-length") or 0))
                with outer.lock:
                    outer.received.append((self.path, self.headers.get("authorization")))
                if self.path.startswith("/bounce/"):
                    self.send_response(307)
                    self.send_header("location", outer.redirect_to)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                data = b'{"ok": true}'
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.port = self.http.server_address[1]
        self.base = f"http://127.0.0.1:{self.port}"

    def __enter__(self) -> HeaderServer:
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()


class ProbingAgent(LocalServer):
    """An `http` agent that, asked a case, runs `probe(payload, post)` against its gateway and
    answers "42"; `seen[case_id]` is what the probe returned, `payloads[case_id]` the payload."""

    def __init__(self, probe: Any) -> None:
        self.probe = probe
        self.payloads: dict[str, dict[str, Any]] = {}
        self.seen: dict[str, Any] = {}
        self._lock = threading.Lock()
        super().__init__(self._answer)
        self.url = f"{self.base}/agent"

    def _answer(self, path: str, raw: bytes) -> tuple[int, Any]:
        payload = json.loads(raw)
        with self._lock:
            self.payloads[payload["case_id"]] = payload
        try:
            seen = self.probe(payload)
        except Exception as exc:  # noqa: BLE001 - the test reads what failed
            seen = {"probe_failed": repr(exc)}
        with self._lock:
            self.seen[payload["case_id"]] = seen
        return 200, {"answer": "42"}


def _post(payload: dict[str, Any], tool: str, body: Any = None, **kw: Any) -> httpx.Response:
    headers = kw.pop("headers", {"Authorization": f"Bearer {payload['tools_token']}"})
    url = kw.pop("url", payload["tools_url"])
    with httpx.Client(timeout=60) as http:
        if isinstance(body, bytes):
            return http.post(f"{url}/{tool}", content=body, headers=headers)
        if body is None:
            return http.post(f"{url}/{tool}", headers=headers)
        return http.post(f"{url}/{tool}", json=body, headers=headers)


def _seen(reply: httpx.Response) -> tuple[int, Any]:
    try:
        body = reply.json()
    except ValueError:
        return reply.status_code, reply.text
    if isinstance(body, dict) and "error" in body and isinstance(body["error"], dict):
        return reply.status_code, body["error"].get("field")
    return reply.status_code, body.get("status") if isinstance(body, dict) else body


def _gateway_org(api: Api, tools_url: str) -> None:
    for connection_id, where in (("shop", "prod"), ("shop-test", "test")):
        assert connect(api, connection_id, f"{tools_url}/{where}")[0] == 201
    api.ok(
        "POST",
        "/api/v1/environments",
        json={
            "environment_id": "production",
            "default": True,
            "test_connections": {"shop": "shop-test"},
        },
    )


def test_the_gateway_refuses_hostile_requests_and_keeps_nothing_for_them(api):
    def probe(payload: dict[str, Any]) -> dict[str, Any]:
        token = payload["tools_token"]
        out: dict[str, Any] = {}
        # authorization variants
        for label, header in (
            ("none", {}),
            ("basic", {"Authorization": f"Basic {token}"}),
            ("bare", {"Authorization": token}),
            ("empty_bearer", {"Authorization": "Bearer"}),
            ("wrong", {"Authorization": "Bearer " + "A" * 43}),
            ("prefix", {"Authorization": f"Bearer {token[:-1]}"}),
            ("suffix", {"Authorization": f"Bearer {token}x"}),
        ):
            out[f"auth_{label}"] = _seen(
                _post(payload, "lookup", {"order_id": "A1"}, headers=header)
            )
        # tool names
        out["unknown_tool"] = _seen(_post(payload, "delete_everything", {}))
        out["unicode_tool"] = _seen(_post(payload, "caf%C3%A9", {}))
        out["newline_tool"] = _seen(_post(payload, "lookup%0A", {"order_id": "A1"}))
        out["hash_tool"] = _seen(_post(payload, "lookup%23x", {"order_id": "A1"}))
        out["slash_tool"] = _seen(_post(payload, "lookup%2Fx", {"order_id": "A1"}))
        out["long_tool"] = _seen(_post(payload, "t" * 300, {}))
        # arguments
        for label, body in (
            ("array", [1]),
            ("string", b'"text"'),
            ("number", b"3"),
            ("null", b"null"),
            ("not_json", b"{nope"),
            ("deep", b"[" * 100_000),
            ("nan", b'{"order_id": NaN}'),
            ("schema", {"order_id": 5}),
            ("missing", {}),
            ("latin1", '{"order_id": "\xe9"}'.encode("latin-1")),
        ):
            out[f"args_{label}"] = _seen(_post(payload, "lookup", body))
        out["too_big"] = _seen(_post(payload, "lookup", b"x" * (256 * 1024 + 1)))
        # workspace paths through the gateway
        for label, path in (
            ("dotdot", "../other/secret.txt"),
            ("abs", "/etc/passwd"),
            ("encoded", "%2e%2e/x"),
            ("newline", "note.txt\n"),
            ("nul", "a\u0000b"),
            ("long", "a" * 300),
            ("empty", ""),
            ("backslash", "..\\x"),
        ):
            reply = _post(payload, "workspace_write", {"path": path, "content": "x"})
            body = reply.json()
            out[f"ws_{label}"] = (reply.status_code, body.get("status"), "error" in body)
        reply = _post(payload, "workspace_write", {"path": "ok.txt", "content": "fine"})
        out["ws_ok"] = reply.json().get("status")
        out["ws_list"] = _post(payload, "workspace_list", {}).json()
        out["ws_list_up"] = _post(payload, "workspace_list", {"prefix": "../"}).json()
        out["ws_list_long"] = _seen(_post(payload, "workspace_list", {"prefix": "p" * 5000}))
        return out

    with HeaderServer() as tools, ProbingAgent(probe) as agent:
        _gateway_org(api, tools.base)
        agent_id = api.agent(
            {"runtime": "http", "url": agent.url, "tools": [READ_TOOL, WRITE_TOOL]}
        )
        run = api.start(agent_id, api.dataset(cases(1)))
        assert api.wait(run["run_id"])["status"] == "completed"
        seen = agent.seen["c000"]
        assert "probe_failed" not in seen, seen
        for label in ("none", "basic", "bare", "empty_bearer", "wrong", "prefix", "suffix"):
            assert seen[f"auth_{label}"] == (401, "Authorization"), (label, seen)
        assert seen["unknown_tool"] == (404, "tool_name")
        assert seen["unicode_tool"] == (404, "tool_name")
        assert seen["newline_tool"] == (404, "tool_name")
        assert seen["hash_tool"] == (400, "tool_name")
        assert seen["slash_tool"][0] in (400, 404), seen["slash_tool"]
        assert seen["long_tool"] == (400, "tool_name")
        for label in (
            "array",
            "string",
            "number",
            "null",
            "not_json",
            "deep",
            "nan",
            "schema",
            "missing",
            "latin1",
        ):
            assert seen[f"args_{label}"] == (400, "arguments"), (label, seen[f"args_{label}"])
        assert seen["too_big"] == (413, "arguments")
        for label in ("dotdot", "abs", "encoded", "newline", "nul", "long", "empty", "backslash"):
            status, call_status, has_error = seen[f"ws_{label}"]
            assert status in (200, 400), (label, seen[f"ws_{label}"])
            assert status == 400 or has_error, (label, seen[f"ws_{label}"])
        assert seen["ws_ok"] == "executed"
        assert seen["ws_list"]["result"] == {"paths": ["ok.txt"]}
        assert seen["ws_list_up"].get("result") in (None, {"paths": []}), seen["ws_list_up"]
        assert seen["ws_list_long"][0] in (200, 400), seen["ws_list_long"]
        # the lookups refused above reached no connection
        assert tools.received == []
    # nothing refused was kept: only the workspace calls that were decided
    [attempt] = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["results"]
    names = [c["name"] for c in attempt["calls"]]
    assert "lookup" not in names and "delete_everything" not in names, names
    assert set(names) <= {"workspace_write", "workspace_list"}, names


def test_gateway_answers_for_unknown_organization_run_or_session_are_identical(api, new_api):
    other = new_api()

    def probe(payload: dict[str, Any]) -> dict[str, Any]:
        url = payload["tools_url"]
        head, session = url.rsplit("/", 2)[0], url.rsplit("/", 2)[1]
        org_id, run_id = head.split("/")[-2], head.split("/")[-1]
        base = head.rsplit("/", 2)[0]
        wrong = {
            "org": f"{base}/{other.org_id}/{run_id}/{session}/tools",
            "missing_org": f"{base}/org_nobody/{run_id}/{session}/tools",
            "run": f"{base}/{org_id}/run_0000000000000000/{session}/tools",
            "session": f"{base}/{org_id}/{run_id}/{'0' * 24}/tools",
            "dots": f"{base}/{org_id}/{run_id}/..%2F..%2F{session}/tools",
        }
        out = {}
        for label, where in wrong.items():
            reply = _post(payload, "lookup", {"order_id": "A1"}, url=where)
            body = reply.json()
            body.get("error", {}).pop("request_id", None)
            out[label] = (reply.status_code, body)
        return out

    with HeaderServer() as tools, ProbingAgent(probe) as agent:
        _gateway_org(api, tools.base)
        agent_id = api.agent({"runtime": "http", "url": agent.url, "tools": [READ_TOOL]})
        run = api.start(agent_id, api.dataset(cases(1)))
        assert api.wait(run["run_id"])["status"] == "completed"
        seen = agent.seen["c000"]
        assert "probe_failed" not in seen, seen
        answers = {label: seen[label] for label in ("org", "missing_org", "run", "session")}
        assert len({json.dumps(a, sort_keys=True) for a in answers.values()}) == 1, answers
        assert answers["org"][0] == 401
        assert seen["dots"][0] in (400, 401), seen["dots"]
        assert tools.received == []


def test_concurrent_duplicate_calls_are_each_made_once_and_kept_once(api):
    def probe(payload: dict[str, Any]) -> dict[str, Any]:
        replies: list[Any] = [None] * 4
        barrier = threading.Barrier(4)

        def one(i: int) -> None:
            barrier.wait()
            tool, args = (("lookup", {"order_id": "A1"}), ("refund", {"order_id": "A1"}))[i % 2]
            replies[i] = _seen(_post(payload, tool, args))

        threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        return {"replies": replies}

    with HeaderServer() as tools, ProbingAgent(probe) as agent:
        _gateway_org(api, tools.base)
        agent_id = api.agent(
            {"runtime": "http", "url": agent.url, "tools": [READ_TOOL, WRITE_TOOL]}
        )
        run = api.start(agent_id, api.dataset(cases(1)))
        assert api.wait(run["run_id"])["status"] == "completed"
        seen = agent.seen["c000"]
        assert "probe_failed" not in seen, seen
        assert sorted(seen["replies"]) == [(200, "executed")] * 4, seen
        paths = sorted(p for p, _ in tools.received)
        # each call made once, on the test connection that stands in for `shop`
        assert paths == ["/test/lookup", "/test/lookup", "/test/refund", "/test/refund"], paths
    [attempt] = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["results"]
    kept = sorted((c["name"], c["status"], c.get("connection_id")) for c in attempt["calls"])
    assert kept == [
        ("lookup", "executed", "shop-test"),
        ("lookup", "executed", "shop-test"),
        ("refund", "executed", "shop-test"),
        ("refund", "executed", "shop-test"),
    ], kept


def _calls_probe(*calls: tuple[str, dict[str, Any]]) -> Any:
    def probe(payload: dict[str, Any]) -> dict[str, Any]:
        return {"replies": [_post(payload, tool, args).json() for tool, args in calls]}

    return probe


@pytest.mark.parametrize(
    "target",
    ["http://meta.test/latest/meta-data/", "http://[::ffff:169.254.169.254]/", "file:///etc/x"],
)
def test_a_connection_redirected_or_re_pointed_at_metadata_is_refused_before_connecting(
    api, resolver, target
):
    stub = resolver({"meta.test": ["169.254.169.254"], "rebind.test": ["127.0.0.1"]})
    tools_declared = [
        {**READ_TOOL, "connection_id": "bouncy"},
        {"name": "find", "effect": "read", "connection_id": "rebound"},
    ]
    probe = _calls_probe(("lookup", {"order_id": "A1"}), ("find", {"q": "x"}))
    with HeaderServer() as tools, ProbingAgent(probe) as agent:
        tools.redirect_to = target
        assert connect(api, "bouncy", f"{tools.base}/bounce")[0] == 201
        assert connect(api, "rebound", f"http://rebind.test:{tools.port}/prod")[0] == 201
        stub.names["rebind.test"] = ["169.254.169.254"]  # re-pointed after it was saved
        agent_id = api.agent({"runtime": "http", "url": agent.url, "tools": tools_declared})
        run = api.start(agent_id, api.dataset(cases(1)))
        assert api.wait(run["run_id"])["status"] == "completed"
        replies = agent.seen["c000"]["replies"]
        assert [r["status"] for r in replies] == ["executed", "executed"], replies
        assert all("result" not in r for r in replies), replies
        assert "redirect" in replies[0]["error"] or "egress" in replies[0]["error"], replies
        assert "egress refused" in replies[1]["error"], replies
        # the only request that reached anything: the bounce on 127.0.0.1
        assert tools.received == [("/bounce/lookup", None)]
    assert {host for host, _ in stub.asked} <= {"meta.test", "rebind.test"}


def test_an_mcp_connection_re_pointed_at_metadata_leaves_the_case_undecided(api, resolver):
    stub = resolver({"mcp.test": ["127.0.0.1"]})
    with HeaderServer() as tools, ProbingAgent(_calls_probe()) as agent:
        status, body = connect(api, "hub", f"http://mcp.test:{tools.port}/mcp", kind="mcp")
        assert status == 201, body
        stub.names["mcp.test"] = ["169.254.169.254"]
        agent_id = api.agent({"runtime": "http", "url": agent.url, "mcp_connections": ["hub"]})
        run = api.start(agent_id, api.dataset(cases(1)))
        assert api.wait(run["run_id"])["status"] == "completed"
        [attempt] = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["results"]
        assert attempt["state"] == "incomplete", attempt
        assert "hub" in (attempt.get("error") or ""), attempt
        assert agent.payloads == {}  # never asked without its tools
        assert tools.received == []


def test_connection_secrets_stay_in_their_organization_and_are_never_echoed(new_api, stack):
    import boto3

    from chalicelib import names

    a, b = new_api(), new_api()
    a_value, b_value = f"a-secret-{uuid.uuid4().hex}", f"b-secret-{uuid.uuid4().hex}"
    a.ok("PUT", "/api/v1/secrets/shop-token", json={"value": a_value})
    b.ok("PUT", "/api/v1/secrets/own-token", json={"value": b_value})
    declared = [
        {"name": "stolen_read", "effect": "read", "connection_id": "stolen"},
        {"name": "own_read", "effect": "read", "connection_id": "own"},
        {"name": "ghost_read", "effect": "read", "connection_id": "ghost"},
    ]
    probe = _calls_probe(
        ("stolen_read", {"echo": "x"}), ("own_read", {"echo": "y"}), ("ghost_read", {})
    )
    with HeaderServer() as tools, ProbingAgent(probe) as agent:
        # B names A's secret, and one nobody has: saved (a name only), but never A's value
        assert connect(b, "stolen", f"{tools.base}/stolen", auth_secret="shop-token")[0] == 201
        assert connect(b, "own", f"{tools.base}/own", auth_secret="own-token")[0] == 201
        assert connect(b, "ghost", f"{tools.base}/ghost", auth_secret="no-such-secret")[0] == 201
        agent_id = b.agent({"runtime": "http", "url": agent.url, "tools": declared})
        run = b.start(agent_id, b.dataset(cases(1)))
        assert b.wait(run["run_id"])["status"] == "completed"
        replies = agent.seen["c000"]["replies"]
        assert [r["status"] for r in replies] == ["executed"] * 3, replies
        assert "no secret 'shop-token'" in replies[0]["error"]
        assert replies[1]["result"] == {"ok": True}
        assert "no secret 'no-such-secret'" in replies[2]["error"]
        # only B's own connection was called, with B's own value
        assert tools.received == [("/own/own_read", b_value)]
        token = agent.payloads["c000"]["tools_token"]
    b.ok("POST", f"/api/v1/recordings/from-run/{run['run_id']}", json={"recording_id": "rec"})
    s3 = boto3.session.Session().client(
        "s3",
        endpoint_url=stack.endpoint_url,
        region_name=stack.settings.aws_default_region,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    recording = (
        s3.get_object(Bucket=names.RESULTS_BUCKET, Key=f"{b.org_id}/recordings/rec.jsonl")["Body"]
        .read()
        .decode()
    )
    seen_by_b = [
        json.dumps(b.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")),
        json.dumps(b.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/cases")),
        json.dumps(b.ok("GET", "/api/v1/connections")),
        json.dumps(b.ok("GET", "/api/v1/connections/own")),
        json.dumps(b.ok("GET", "/api/v1/recordings/rec")),
        recording,
    ]
    for text in seen_by_b:
        for secret in (a_value, b_value, token):
            assert secret not in text
    assert '"own_read"' in recording  # the recording holds the call, not what authorized it


HOSTILE_LISTING = [
    {"name": "workspace_write", "inputSchema": {"type": "object"}},
    {"name": "refund\n", "inputSchema": {"type": "object"}},
    {"name": "../etc", "inputSchema": {"type": "object"}},
    {"name": "x" * 65, "inputSchema": {"type": "object"}},
    {"name": "remote", "inputSchema": {"$ref": "https://evil.example/schema"}},
    {
        "name": "dangling",
        "inputSchema": {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}},
    },
    {"name": "not_object", "inputSchema": {"type": "string"}},
    {"name": 7, "inputSchema": {"type": "object"}},
    "not a tool",
    {"name": "dup", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {"name": "dup", "inputSchema": {"type": "object"}, "annotations": {"readOnlyHint": True}},
    {
        "name": "sly_write",
        "inputSchema": {"type": "object"},
        "annotations": {"readOnlyHint": "yes"},
    },
    {"name": "plain_write", "inputSchema": {"type": "object"}},
]


class HostileMcpServer:
    """A raw MCP server (JSON replies) on 127.0.0.1 listing `HOSTILE_LISTING`; `methods` keeps the
    JSON-RPC method of every request it received."""

    def __init__(self) -> None:
        from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer

        self.methods: list[str] = []
        outer = self

        class Handler(BaseHTTPRequestHandler):
            protocol_version = "HTTP/1.1"

            def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
                pass

            def do_POST(self) -> None:  # noqa: N802 - stdlib name
                message = json.loads(self.rfile.read(int(self.headers.get("content-length") or 0)))
                method = message.get("method")
                outer.methods.append(method)
                if "id" not in message:
                    self.send_response(202)
                    self.send_header("content-length", "0")
                    self.end_headers()
                    return
                if method == "initialize":
                    result: Any = {
                        "protocolVersion": message["params"]["protocolVersion"],
                        "capabilities": {"tools": {}},
                        "serverInfo": {"name": "hostile", "version": "1"},
                    }
                elif method == "tools/list":
                    result = {"tools": HOSTILE_LISTING}
                else:
                    result = {"content": [{"type": "text", "text": "done"}]}
                data = json.dumps({"jsonrpc": "2.0", "id": message["id"], "result": result})
                self.send_response(200)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data.encode())))
                self.end_headers()
                self.wfile.write(data.encode())

        self.http = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
        self.http.daemon_threads = True
        self.url = f"http://127.0.0.1:{self.http.server_address[1]}/mcp"

    def __enter__(self) -> HostileMcpServer:
        threading.Thread(target=self.http.serve_forever, daemon=True).start()
        return self

    def __exit__(self, *exc: object) -> None:
        self.http.shutdown()
        self.http.server_close()


def test_a_server_listing_hostile_tools_gives_the_attempt_only_the_declarable_ones(api):
    def probe(payload: dict[str, Any]) -> dict[str, Any]:
        out = {
            name: _seen(_post(payload, name, {}))
            for name in ("remote", "dangling", "not_object", "x" * 65, "refund%0A", "7")
        }
        out["dup"] = _post(payload, "dup", {}).json()
        out["sly"] = _post(payload, "sly_write", {}).json()
        out["plain"] = _post(payload, "plain_write", {}).json()
        out["ws"] = _post(payload, "workspace_write", {"path": "a.txt", "content": "x"}).json()
        return out

    with HostileMcpServer() as server, ProbingAgent(probe) as agent:
        assert connect(api, "hub", server.url, kind="mcp")[0] == 201
        agent_id = api.agent({"runtime": "http", "url": agent.url, "mcp_connections": ["hub"]})
        run = api.start(agent_id, api.dataset(cases(1)))
        assert api.wait(run["run_id"])["status"] == "completed"
        seen = agent.seen["c000"]
        assert "probe_failed" not in seen, seen
        # what no spec could declare is not a tool of the attempt
        for name in ("remote", "dangling", "not_object", "x" * 65, "refund%0A", "7"):
            assert seen[name] == (404, "tool_name"), (name, seen[name])
        # the read listed twice is the first listing, made once
        assert (seen["dup"]["status"], seen["dup"]["result"]) == ("executed", "done")
        # a hint that is not `true` is no read-only hint: both writes are blocked, never made
        assert (seen["sly"]["status"], seen["plain"]["status"]) == ("blocked", "blocked")
        # the server's `workspace_write` is not the built-in's stand-in
        assert seen["ws"]["status"] == "executed" and seen["ws"]["result"]["written"] is True
        assert server.methods.count("tools/call") == 1, server.methods


def test_a_workspace_holds_no_more_than_its_cap_even_when_written_at_once(api, operator):
    operator(assay_workspace_max_bytes=1000)

    def probe(payload: dict[str, Any]) -> dict[str, Any]:
        out: dict[str, Any] = {}
        out["big"] = _post(payload, "workspace_write", {"path": "big", "content": "x" * 1001})
        replies: list[Any] = [None] * 6
        barrier = threading.Barrier(6)

        def one(i: int) -> None:
            barrier.wait()
            body = {"path": f"f{i}", "content": "y" * 600}
            replies[i] = _post(payload, "workspace_write", body).json()

        threads = [threading.Thread(target=one, args=(i,)) for i in range(6)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()
        out["written"] = [r for r in replies if "result" in r]
        listed = _post(payload, "workspace_list", {}).json()["result"]["paths"]
        out["sizes"] = {
            p: len(_post(payload, "workspace_read", {"path": p}).json()["result"]["content"])
            for p in listed
        }
        return {"big": out["big"].json(), "written": out["written"], "sizes": out["sizes"]}

    with ProbingAgent(probe) as agent:
        agent_id = api.agent({"runtime": "http", "url": agent.url})
        run = api.start(agent_id, api.dataset(cases(1)))
        assert api.wait(run["run_id"])["status"] == "completed"
        seen = agent.seen["c000"]
        assert "probe_failed" not in seen, seen
        assert "at most 1000 bytes" in seen["big"]["error"]
        assert len(seen["written"]) <= 1, seen["written"]
        assert sum(seen["sizes"].values()) <= 1000, seen["sizes"]


def test_one_recorded_call_is_replayed_once_when_asked_twice_at_once(api):
    line = {
        "case_id": "c000",
        "input": "question 0",
        "answer": "42",
        "calls": [{"name": "lookup", "arguments": {"order_id": "A1"}, "result": {"state": "paid"}}],
    }
    api.ok("POST", "/api/v1/recordings", json={"recording_id": "rec", "content": json.dumps(line)})

    def probe(payload: dict[str, Any]) -> dict[str, Any]:
        replies: list[Any] = [None] * 4
        barrier = threading.Barrier(4)

        def one(i: int) -> None:
            barrier.wait()
            replies[i] = _post(payload, "lookup", {"order_id": "A1"}).json()

        threads = [threading.Thread(target=one, args=(i,)) for i in range(4)]
        for t in threads:
            t.start()
        for t in threads:
            t.join()

        def chunks():
            for _ in range(40):
                yield b"x" * 8192

        with httpx.Client(timeout=60) as http:
            chunked = http.post(
                f"{payload['tools_url']}/lookup",
                content=chunks(),
                headers={"Authorization": f"Bearer {payload['tools_token']}"},
            )
        return {"replies": replies, "chunked": _seen(chunked)}

    with HeaderServer() as tools, ProbingAgent(probe) as agent:
        assert connect(api, "shop", f"{tools.base}/prod")[0] == 201
        agent_id = api.agent({"runtime": "http", "url": agent.url, "tools": [READ_TOOL]})
        run = api.start(agent_id, api.dataset(cases(1)), from_recordings=True, recording_id="rec")
        assert api.wait(run["run_id"])["status"] == "completed"
        seen = agent.seen["c000"]
        assert "probe_failed" not in seen, seen
        statuses = sorted(r["status"] for r in seen["replies"])
        assert statuses == ["divergent", "divergent", "divergent", "replayed"], seen
        assert seen["chunked"] in ((413, "arguments"), (400, "arguments")), seen["chunked"]
        assert tools.received == []  # held, never live (no live_reads)
    [attempt] = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["results"]
    kept = sorted(c["status"] for c in attempt["calls"])
    assert kept == ["divergent", "divergent", "divergent", "replayed"], attempt["calls"]
