"""The `lambda` runtime with a stub boto3 client (moto's Lambda needs Docker); only plain function
names under the operator's prefix are invoked."""

from __future__ import annotations

import io
import json
import time
from typing import Any

import pytest
from botocore.exceptions import ClientError, EndpointConnectionError

from chalicelib.adapters.runtimes.lambda_ import LambdaRuntime
from chalicelib.domain.models import CaseRequest
from chalicelib.errors import (
    AgentCrashError,
    InvalidInputError,
    ProviderError,
    is_retryable_status,
)
from chalicelib.services.ports import AskContext, ToolGateway

CTX = AskContext("org-1")


class StubLambda:
    """Answers `invoke` with a scripted response or exception; records the calls."""

    def __init__(
        self,
        result: Any = None,
        *,
        error: Exception | None = None,
        function_error: str | None = None,
        delay_s: float = 0,
    ) -> None:
        self.result, self.error = result, error
        self.function_error, self.delay_s = function_error, delay_s
        self.calls: list[dict[str, Any]] = []

    def invoke(self, **kwargs: Any) -> dict[str, Any]:
        self.calls.append(kwargs)
        if self.delay_s:
            time.sleep(self.delay_s)
        if self.error:
            raise self.error
        body = self.result if isinstance(self.result, bytes) else json.dumps(self.result).encode()
        response: dict[str, Any] = {"StatusCode": 200, "Payload": io.BytesIO(body)}
        if self.function_error:
            response["FunctionError"] = self.function_error
        return response


def client_error(code: str, status: int) -> ClientError:
    return ClientError(
        {
            "Error": {"Code": code, "Message": f"{code} happened"},
            "ResponseMetadata": {"HTTPStatusCode": status},
        },
        "Invoke",
    )


def request() -> CaseRequest:
    return CaseRequest(run_id="r", case_id="c1", attempt=1, input="2+2?")


SPEC = {"runtime": "lambda", "function_name": "assay-agent-mine"}


def ask(stub: StubLambda, spec: dict | None = None, timeout_s: float = 2):
    return LambdaRuntime(lambda: stub).ask(spec or SPEC, request(), timeout_s, CTX)


def test_answer_payload_and_invoke_arguments() -> None:
    stub = StubLambda({"answer": "4", "usage": {"input_tokens": 5, "output_tokens": 1}})
    answer = ask(stub, {**SPEC, "qualifier": "live"})
    assert answer.answer == "4" and answer.usage.input_tokens == 5
    [call] = stub.calls
    assert call["FunctionName"] == "assay-agent-mine"
    assert call["InvocationType"] == "RequestResponse"
    assert call["Qualifier"] == "live"
    assert json.loads(call["Payload"])["input"] == "2+2?"


def test_an_attempt_with_a_tool_gateway_sends_it_and_no_error_keeps_its_token() -> None:
    gateway = ToolGateway("https://assay.test/g/tools", "t" * 43, "https://assay.test/g/mcp")
    ctx = AskContext("org-1", gateway=gateway)
    stub = StubLambda({"answer": "4"})
    LambdaRuntime(lambda: stub).ask(SPEC, request(), 2, ctx)
    payload = json.loads(stub.calls[0]["Payload"])
    assert (payload["tools_url"], payload["tools_token"], payload["tools_mcp_url"]) == (
        gateway.url,
        gateway.token,
        gateway.mcp_url,
    )
    echo = StubLambda({"errorMessage": f"bad {gateway.token}"}, function_error="Unhandled")
    with pytest.raises(AgentCrashError) as err:
        LambdaRuntime(lambda: echo).ask(SPEC, request(), 2, ctx)
    assert gateway.token not in str(err.value) and "[REDACTED:tool_token]" in str(err.value)


def test_string_payload_is_the_answer() -> None:
    assert ask(StubLambda("four")).answer == "four"


def test_proxy_style_response() -> None:
    ok = {"statusCode": 200, "body": json.dumps({"answer": "proxied"})}
    assert ask(StubLambda(ok)).answer == "proxied"
    with pytest.raises(ProviderError) as info:
        ask(StubLambda({"statusCode": 502, "body": "bad gateway"}))
    assert info.value.status == 502


def test_guardrail_block_is_an_answer() -> None:
    answer = ask(StubLambda({"answer": "I can't help with that.", "guardrail": "jailbreak"}))
    assert (answer.answer, answer.guardrail) == ("I can't help with that.", "jailbreak")
    proxied = {"statusCode": 200, "body": json.dumps({"guardrail": {"blocked": True}})}
    answer = ask(StubLambda(proxied))
    assert (answer.answer, answer.guardrail) == ("Blocked by guardrail: unspecified", "unspecified")
    assert ask(StubLambda({"answer": "4", "guardrail": {"blocked": False}})).guardrail is None
    with pytest.raises(AgentCrashError, match="malformed"):
        ask(StubLambda({"answer": "4", "guardrail": {"blocked": 1}}))


def test_function_error_is_a_crash() -> None:
    payload = {"errorMessage": "division by zero", "errorType": "ZeroDivisionError"}
    with pytest.raises(AgentCrashError, match="ZeroDivisionError: division by zero"):
        ask(StubLambda(payload, function_error="Unhandled"))


def test_agent_reported_crash() -> None:
    with pytest.raises(AgentCrashError, match="loop"):
        ask(StubLambda({"error": "loop detected", "crash": True}))


@pytest.mark.parametrize(
    ("error", "status"),
    [
        (client_error("TooManyRequestsException", 429), 429),
        (client_error("ServiceException", 500), 500),
        (client_error("EC2ThrottledException", 502), 502),
        (EndpointConnectionError(endpoint_url="http://lambda"), None),
    ],
)
def test_throttling_5xx_and_transport_errors_are_retryable(
    error: Exception, status: int | None
) -> None:
    with pytest.raises(ProviderError) as info:
        ask(StubLambda(error=error))
    assert info.value.status == status
    assert is_retryable_status(info.value.status)


def test_access_denied_is_credentials_rejected() -> None:
    with pytest.raises(ProviderError, match="credentials rejected") as info:
        ask(StubLambda(error=client_error("AccessDeniedException", 403)))
    assert not is_retryable_status(info.value.status)


def test_other_4xx_is_a_crash() -> None:
    with pytest.raises(AgentCrashError, match="ResourceNotFoundException"):
        ask(StubLambda(error=client_error("ResourceNotFoundException", 404)))


def test_timeout_is_a_provider_error() -> None:
    with pytest.raises(ProviderError, match="timed out"):
        ask(StubLambda("late", delay_s=0.5), timeout_s=0.05)


def test_empty_payload_is_no_answer() -> None:
    with pytest.raises(ProviderError, match="no answer"):
        ask(StubLambda(b""))


def test_client_is_built_lazily_once() -> None:
    built: list[StubLambda] = []

    def factory() -> StubLambda:
        built.append(StubLambda("ok"))
        return built[-1]

    rt = LambdaRuntime(factory)
    rt.validate(SPEC)
    assert built == []
    rt.ask(SPEC, request(), 1, CTX)
    rt.ask(SPEC, request(), 1, CTX)
    assert len(built) == 1


@pytest.mark.parametrize(
    ("spec", "field"),
    [
        ({}, "spec.function_name"),
        ({"function_name": " "}, "spec.function_name"),
        ({"function_name": "assay-agent-f", "qualifier": 1}, "spec.qualifier"),
        ({"function_name": "assay-agent-f", "qualifier": "live:1"}, "spec.qualifier"),
        ({"function_name": "assay-agent-f", "qualifier": "x" * 129}, "spec.qualifier"),
    ],
)
def test_validate(spec: dict, field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        LambdaRuntime().validate({"runtime": "lambda", **spec})
    assert info.value.field == field


@pytest.mark.parametrize(
    "name",
    [
        "my-agent",  # not under the prefix
        "assay-agent",  # the prefix without its dash
        # an ARN, even under the prefix
        "arn:aws:lambda:us-east-1:123456789012:function:assay-agent-x",
        "123456789012:function:assay-agent-x",  # a partial ARN (another account)
        "arn:aws:lambda:eu-west-1:999999999999:function:assay-agent-x:live",
        "assay-agent-x:live",  # a qualifier in the name
        "assay-agent-" + "x" * 60,  # longer than 64
        "assay-agent-x/../y",
        "assay-agent-x\n",  # a trailing newline ($ matches before it)
    ],
)
def test_only_plain_names_under_the_prefix_are_invoked(name: str) -> None:
    stub = StubLambda("should never run")
    runtime = LambdaRuntime(lambda: stub)
    with pytest.raises(InvalidInputError) as info:
        runtime.validate({"runtime": "lambda", "function_name": name})
    assert info.value.field == "spec.function_name"
    with pytest.raises(InvalidInputError):
        runtime.ask({"runtime": "lambda", "function_name": name}, request(), 1, CTX)
    assert stub.calls == []


def test_the_prefix_is_the_operators_and_read_when_asked() -> None:
    prefix = ["team-a-"]
    stub = StubLambda("ok")
    runtime = LambdaRuntime(lambda: stub, prefix=lambda: prefix[0])
    runtime.validate({"runtime": "lambda", "function_name": "team-a-bot", "qualifier": "$LATEST"})
    with pytest.raises(InvalidInputError, match="must start with team-a-"):
        runtime.validate(SPEC)
    prefix[0] = ""
    with pytest.raises(InvalidInputError) as info:
        runtime.ask({"runtime": "lambda", "function_name": "team-a-bot"}, request(), 1, CTX)
    assert info.value.field == "spec.runtime"
    assert "ASSAY_LAMBDA_FUNCTION_PREFIX" in info.value.message
    assert stub.calls == []
