"""The `http` runtime against a local stdlib HTTP server on 127.0.0.1 running in a thread (private
networks allowed, as on `assay dev`); names resolve through a stub resolver, never real DNS."""

from __future__ import annotations

import json
import threading
import time
from collections.abc import Iterator
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

import pytest

from chalicelib.adapters.egress import Egress, EgressRefusedError
from chalicelib.adapters.runtimes.http import HttpRuntime
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import CaseRequest
from chalicelib.errors import AgentCrashError, InvalidInputError, ProviderError
from chalicelib.services.ports import AskContext, ToolGateway

SECRETS = {"agent-key": "k-from-the-secret-store"}
CTX = AskContext("org-1", secret=SECRETS.get)
from tests.support.egress import stub_egress

NAMES: dict[str, list[str]] = {"agent.test": ["127.0.0.1"], "meta.test": ["169.254.169.254"]}


def local_egress(private: bool = True) -> Egress:
    return stub_egress(NAMES, private)


# input text → (status, body); the body is sent as JSON unless it is bytes.
REPLIES: dict[str, tuple[int, Any]] = {
    "answer": (
        200,
        {
            "answer": "4",
            "calls": [
                {"name": "calc", "arguments": {"expr": "2+2"}, "result": 4},
                {"name": "rm", "arguments": {"path": "/"}, "status": "blocked"},
            ],
            "usage": {"input_tokens": 30, "output_tokens": 2, "total_tokens": 32},
            "model": "agent-model-1",
            "cost_usd": "0.0000125",
        },
    ),
    "crash": (200, {"error": "tool search raised KeyError", "crash": True}),
    "crash500": (500, {"error": "step limit reached", "crash": True}),
    "upstream": (200, {"error": "model provider overloaded", "crash": False}),
    "unavailable": (503, b"<html>Service Unavailable</html>"),
    "throttled": (429, {"error": "slow down"}),
    "notfound": (404, b"nope"),
    "unauthorized": (401, {"error": "bad token"}),
    "noanswer": (200, {"calls": []}),
    "notjson": (200, b"plain text"),
    "badcalls": (200, {"answer": "x", "calls": [{"name": "t", "status": "exploded"}]}),
    # Guardrail blocks: answers graded as refusals, never crashes or provider errors.
    "guard_str": (200, {"guardrail": "pii detected", "usage": {"input_tokens": 5}}),
    "guard_str_answer": (200, {"answer": "I can't share that.", "guardrail": " pii detected "}),
    "guard_obj": (200, {"answer": None, "guardrail": {"blocked": True, "reason": "self-harm"}}),
    "guard_obj_answer": (
        200,
        {
            "answer": "Sorry, I can't help with that.",
            "guardrail": {"blocked": True, "reason": "self-harm"},
            "calls": [{"name": "moderate", "arguments": {}, "result": "flagged"}],
        },
    ),
    "guard_obj_blank": (200, {"answer": "  ", "guardrail": {"blocked": True}}),
    "guard_off": (200, {"answer": "4", "guardrail": {"blocked": False, "reason": "n/a"}}),
    "guard_off_noanswer": (200, {"guardrail": {"blocked": False}}),
    "guard_empty": (200, {"answer": "4", "guardrail": ""}),
    "guard_null": (200, {"answer": "4", "guardrail": None}),
    "guard_and_error": (200, {"error": "tool raised", "crash": True, "guardrail": "pii"}),
    "guard_bad_int": (200, {"answer": "x", "guardrail": 5}),
    "guard_bad_bool": (200, {"guardrail": True}),
    "guard_bad_list": (200, {"guardrail": ["pii"]}),
    "guard_bad_blocked": (200, {"guardrail": {"blocked": "yes", "reason": "pii"}}),
    "guard_no_blocked": (200, {"answer": "x", "guardrail": {"reason": "pii"}}),
    "guard_bad_reason": (200, {"guardrail": {"blocked": True, "reason": 3}}),
}


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"
    received: list[dict[str, Any]] = []

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002
        pass

    def do_POST(self) -> None:  # noqa: N802
        body = json.loads(self.rfile.read(int(self.headers["content-length"])))
        Handler.received.append({"headers": dict(self.headers), "body": body, "path": self.path})
        if self.path.startswith("/redirect"):
            target = self.path.partition("?to=")[2]
            self.send_response(307)
            self.send_header("location", target)
            self.send_header("content-length", "0")
            self.end_headers()
            return
        if body["input"] == "sleep":
            time.sleep(1.5)
        status, reply = REPLIES.get(body["input"], (200, {"answer": f"you said {body['input']}"}))
        data = reply if isinstance(reply, bytes) else json.dumps(reply).encode()
        try:
            self.send_response(status)
            self.send_header("content-length", str(len(data)))
            self.end_headers()
            self.wfile.write(data)
        except (BrokenPipeError, ConnectionResetError):
            pass


@pytest.fixture(scope="module")
def url() -> Iterator[str]:
    server = ThreadingHTTPServer(("127.0.0.1", 0), Handler)
    server.daemon_threads = True
    thread = threading.Thread(target=server.serve_forever, kwargs={"poll_interval": 0.05})
    thread.daemon = True
    thread.start()
    yield f"http://127.0.0.1:{server.server_address[1]}/ask"
    server.shutdown()
    server.server_close()


@pytest.fixture(scope="module")
def runtime() -> Iterator[HttpRuntime]:
    rt = HttpRuntime(egress=local_egress())
    yield rt
    rt.close()


def ask(runtime: HttpRuntime, url: str, text: str, timeout_s: float = 5, **spec: Any):
    request = CaseRequest(
        run_id="run-1", case_id="case-1", attempt=2, input=text, metadata={"tag": "math"}
    )
    return runtime.ask({"runtime": "http", "url": url, **spec}, request, timeout_s, CTX)


def test_answer_calls_usage_model_cost(runtime: HttpRuntime, url: str) -> None:
    answer = ask(runtime, url, "answer")
    assert answer.answer == "4"
    assert [(c.name, c.status) for c in answer.calls] == [
        ("calc", CallStatus.EXECUTED),
        ("rm", CallStatus.BLOCKED),
    ]
    assert answer.calls[0].result == 4
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (30, 2)
    assert answer.model == "agent-model-1"
    assert answer.cost_micros == 13  # 12.5 micro-USD rounds half up


def test_posts_the_case_json_and_headers(runtime: HttpRuntime, url: str) -> None:
    Handler.received.clear()
    assert ask(runtime, url, "hello", headers={"X-Agent-Key": "k1"}).answer == "you said hello"
    [received] = Handler.received
    assert received["body"] == {
        "run_id": "run-1",
        "case_id": "case-1",
        "attempt": 2,
        "input": "hello",
        "history": [],
        "metadata": {"tag": "math"},
    }
    assert received["headers"]["X-Agent-Key"] == "k1"


GATEWAY = ToolGateway("https://assay.test/g/tools", "tok-" + "x" * 40, "https://assay.test/g/mcp")


def test_an_attempt_with_a_tool_gateway_sends_it_in_the_case_payload(
    runtime: HttpRuntime, url: str
) -> None:
    Handler.received.clear()
    request = CaseRequest(run_id="run-1", case_id="case-1", attempt=1, input="hello")
    ctx = AskContext("org-1", gateway=GATEWAY)
    runtime.ask({"runtime": "http", "url": url}, request, 5, ctx)
    [received] = Handler.received
    assert {k: received["body"][k] for k in ("tools_url", "tools_token", "tools_mcp_url")} == {
        "tools_url": GATEWAY.url,
        "tools_token": GATEWAY.token,
        "tools_mcp_url": GATEWAY.mcp_url,
    }


def test_an_error_quoting_the_tool_token_keeps_it_redacted(runtime: HttpRuntime, url: str) -> None:
    REPLIES["echo_token"] = (200, {"error": f"I was given {GATEWAY.token}", "crash": True})
    request = CaseRequest(run_id="run-1", case_id="case-1", attempt=1, input="echo_token")
    with pytest.raises(AgentCrashError) as err:
        runtime.ask(
            {"runtime": "http", "url": url}, request, 5, AskContext("org-1", gateway=GATEWAY)
        )
    assert GATEWAY.token not in str(err.value) and "[REDACTED:tool_token]" in str(err.value)


@pytest.mark.parametrize("text", ["crash", "crash500"])
def test_agent_reported_crash(runtime: HttpRuntime, url: str, text: str) -> None:
    with pytest.raises(AgentCrashError, match="raised KeyError|step limit"):
        ask(runtime, url, text)


def test_reported_non_crash_error_is_retryable(runtime: HttpRuntime, url: str) -> None:
    with pytest.raises(ProviderError, match="overloaded"):
        ask(runtime, url, "upstream")


@pytest.mark.parametrize(("text", "status"), [("unavailable", 503), ("throttled", 429)])
def test_retryable_statuses(runtime: HttpRuntime, url: str, text: str, status: int) -> None:
    with pytest.raises(ProviderError) as info:
        ask(runtime, url, text)
    assert info.value.status == status


def test_other_4xx_is_a_crash(runtime: HttpRuntime, url: str) -> None:
    with pytest.raises(AgentCrashError, match="HTTP 404"):
        ask(runtime, url, "notfound")
    with pytest.raises(AgentCrashError, match="credentials rejected"):
        ask(runtime, url, "unauthorized")


def test_no_answer_and_non_json_are_provider_errors(runtime: HttpRuntime, url: str) -> None:
    with pytest.raises(ProviderError, match="no answer"):
        ask(runtime, url, "noanswer")
    with pytest.raises(ProviderError, match="not JSON"):
        ask(runtime, url, "notjson")


def test_malformed_calls_are_a_crash(runtime: HttpRuntime, url: str) -> None:
    with pytest.raises(AgentCrashError, match="malformed"):
        ask(runtime, url, "badcalls")


def test_answers_carry_no_guardrail_by_default(runtime: HttpRuntime, url: str) -> None:
    assert ask(runtime, url, "answer").guardrail is None
    assert ask(runtime, url, "hello").guardrail is None


def test_guardrail_string_without_answer_is_a_refusal(runtime: HttpRuntime, url: str) -> None:
    answer = ask(runtime, url, "guard_str")
    assert answer.guardrail == "pii detected"
    assert answer.answer == "Blocked by guardrail: pii detected"
    assert answer.usage.input_tokens == 5  # the rest of the payload is still read


def test_guardrail_string_keeps_the_refusal_text(runtime: HttpRuntime, url: str) -> None:
    answer = ask(runtime, url, "guard_str_answer")
    assert (answer.guardrail, answer.answer) == ("pii detected", "I can't share that.")


def test_guardrail_object_form(runtime: HttpRuntime, url: str) -> None:
    answer = ask(runtime, url, "guard_obj")
    assert answer.guardrail == "self-harm"
    assert answer.answer == "Blocked by guardrail: self-harm"
    answer = ask(runtime, url, "guard_obj_answer")
    assert answer.guardrail == "self-harm"
    assert answer.answer == "Sorry, I can't help with that."
    assert [c.name for c in answer.calls] == ["moderate"]
    answer = ask(runtime, url, "guard_obj_blank")  # blocked without a reason or text
    assert answer.guardrail == "unspecified"
    assert answer.answer == "Blocked by guardrail: unspecified"


@pytest.mark.parametrize("text", ["guard_off", "guard_empty", "guard_null"])
def test_guardrail_that_did_not_block(runtime: HttpRuntime, url: str, text: str) -> None:
    answer = ask(runtime, url, text)
    assert (answer.answer, answer.guardrail) == ("4", None)


def test_unblocked_guardrail_without_answer_is_no_answer(runtime: HttpRuntime, url: str) -> None:
    with pytest.raises(ProviderError, match="no answer"):
        ask(runtime, url, "guard_off_noanswer")


def test_an_error_wins_over_a_guardrail(runtime: HttpRuntime, url: str) -> None:
    with pytest.raises(AgentCrashError, match="tool raised"):
        ask(runtime, url, "guard_and_error")


@pytest.mark.parametrize(
    ("text", "detail"),
    [
        ("guard_bad_int", "guardrail must be"),
        ("guard_bad_bool", "guardrail must be"),
        ("guard_bad_list", "guardrail must be"),
        ("guard_bad_blocked", "guardrail.blocked"),
        ("guard_no_blocked", "guardrail.blocked"),
        ("guard_bad_reason", "guardrail.reason"),
    ],
)
def test_malformed_guardrail_is_a_crash(
    runtime: HttpRuntime, url: str, text: str, detail: str
) -> None:
    with pytest.raises(AgentCrashError, match="malformed") as info:
        ask(runtime, url, text)
    assert detail in str(info.value)


def test_timeout(runtime: HttpRuntime, url: str) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out") as info:
        ask(runtime, url, "sleep", timeout_s=0.3)
    assert time.monotonic() - started < 1.2
    assert info.value.status is None


def test_connection_refused(runtime: HttpRuntime) -> None:
    with pytest.raises(ProviderError, match="could not be reached"):
        ask(runtime, "http://127.0.0.1:9/ask", "hi", timeout_s=2)


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({}, "spec.url"),
        ({"url": "not a url"}, "spec.url"),
        ({"url": "http://x", "headers": {"a": 1}}, "spec.headers"),
        ({"url": "http://x", "headers": ["a"]}, "spec.headers"),
        ({"url": "http://x", "headers": {"Authorization": "Bearer literal"}}, "spec.headers"),
        (
            {"url": "http://x", "headers": {"X-Key": "sk-abcdefghijklmnopqrstuvwxyz"}},
            "spec.headers",
        ),
        ({"url": "http://x", "headers": {"X-Key": {"secret": "a/b"}}}, "spec.headers"),
        ({"url": "http://x", "headers": {"X-Key": {"secret": "k", "other": 1}}}, "spec.headers"),
        ({"url": "http://x", "headers": {"Host": "metadata.google.internal"}}, "spec.headers"),
        ({"url": "http://x", "headers": {"X-A": "a\r\nX-B: b"}}, "spec.headers"),
        ({"url": "http://x", "api_key_env": "AWS_SECRET_ACCESS_KEY"}, "spec.api_key_env"),
        ({"url": "http://169.254.169.254/latest"}, "spec.url"),
        ({"url": "http://meta.test/latest"}, "spec.url"),
        ({"url": "http://u:p@agent.test/"}, "spec.url"),
    ],
)
def test_validate(spec: dict, field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        HttpRuntime(egress=local_egress()).validate({"runtime": "http", **spec})
    assert info.value.field == field


def test_secret_headers_are_read_through_the_context(runtime: HttpRuntime, url: str) -> None:
    Handler.received.clear()
    headers = {
        "Authorization": {"secret": "agent-key", "prefix": "Bearer "},
        "X-Key": {"secret": "agent-key"},
    }
    HttpRuntime(egress=local_egress()).validate({"runtime": "http", "url": url, "headers": headers})
    assert ask(runtime, url, "hello", headers=headers).answer == "you said hello"
    [received] = Handler.received
    assert received["headers"]["Authorization"] == "Bearer k-from-the-secret-store"
    assert received["headers"]["X-Key"] == "k-from-the-secret-store"


def test_a_missing_secret_is_credentials_missing(runtime: HttpRuntime, url: str) -> None:
    Handler.received.clear()
    with pytest.raises(ProviderError) as info:
        ask(runtime, url, "hello", headers={"X-Key": {"secret": "not-stored"}})
    assert info.value.status == 401
    assert str(info.value).endswith(
        "credentials missing: secret not-stored is not set in this organization"
    )
    assert "environment" not in str(info.value)
    assert Handler.received == []


def test_a_name_is_connected_to_at_the_address_it_resolved_to(
    runtime: HttpRuntime, url: str
) -> None:
    Handler.received.clear()
    port = url.split(":")[2].split("/")[0]
    assert ask(runtime, f"http://agent.test:{port}/ask", "hello").answer == "you said hello"
    hosts = [v for k, v in Handler.received[0]["headers"].items() if k.lower() == "host"]
    assert hosts == [f"agent.test:{port}"]


def test_loopback_is_refused_without_the_operator_and_nothing_is_sent(url: str) -> None:
    Handler.received.clear()
    rt = HttpRuntime(egress=local_egress(private=False))
    with pytest.raises(InvalidInputError, match="ASSAY_ALLOW_PRIVATE_NETWORK"):
        rt.validate({"runtime": "http", "url": url})
    with pytest.raises(EgressRefusedError, match="loopback address"):
        ask(rt, url, "hello")
    assert Handler.received == []


@pytest.mark.parametrize(
    "to",
    [
        "http://169.254.169.254/latest/meta-data/",
        "http://meta.test/",
        "http://[::ffff:169.254.169.254]/",
        "http://[fd00:ec2::254]/",
    ],
)
def test_a_redirect_to_a_refused_address_is_not_followed(
    runtime: HttpRuntime, url: str, to: str
) -> None:
    Handler.received.clear()
    with pytest.raises(EgressRefusedError):
        ask(runtime, url.replace("/ask", f"/redirect?to={to}"), "hello")
    assert [r["path"] for r in Handler.received] == [f"/redirect?to={to}"]


def test_a_redirect_to_a_local_path_is_followed_with_the_same_body(
    runtime: HttpRuntime, url: str
) -> None:
    Handler.received.clear()
    assert (
        ask(runtime, url.replace("/ask", "/redirect?to=/ask"), "hello").answer == "you said hello"
    )
    assert [r["path"] for r in Handler.received] == ["/redirect?to=/ask", "/ask"]
    assert Handler.received[0]["body"] == Handler.received[1]["body"]
