"""The `lambda` runtime: an agent that is an AWS Lambda function (docs/reference/runtimes.md).

Spec::

    {"runtime": "lambda",
     "function_name": "assay-agent-mine",   # required: a plain name under the operator's prefix
     "qualifier": "live"}                   # optional: version or alias

Only functions the operator allows (docs/reference/security.md): a plain function name
(`^[A-Za-z0-9_-]{1,64}$`: no ARN, so no other account or region) that starts with
`ASSAY_LAMBDA_FUNCTION_PREFIX`, the prefix the IAM policy in `infra/` grants invoke on; with the
setting empty `runtime: lambda` is refused, naming it. A qualifier is `^[A-Za-z0-9$_-]{1,128}$`.

`ask` invokes the function synchronously (`RequestResponse`) with the case payload
(`case_payload`: the case, and the attempt's tool gateway when it has one) as the payload. The
function returns the `http` runtime's answer payload, or a string (the answer text), or an API
Gateway proxy response `{"statusCode": ..., "body": "<answer payload JSON>"}` whose status is
classified like the `http` runtime's.

Errors:

- `FunctionError` in the response (the function raised or timed out) → `AgentCrashError`
  with the function's `errorMessage`; likewise an agent-reported `{"error": ..., "crash": true}`.
- Throttling (`TooManyRequestsException`, 429), any 5xx from the Lambda service, connection
  errors and timeouts → `ProviderError(status=)` (retryable).
- 401/403 (`AccessDeniedException`, bad signature) → `ProviderError(status=403)` naming
  "credentials rejected": not retryable (same convention as the `openai` runtime).
- Any other 4xx (`ResourceNotFoundException`, payload too large) → `AgentCrashError`.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable
from typing import Any

from chalicelib.adapters.runtimes.answer_payload import answer_from_payload
from chalicelib.adapters.runtimes.case_payload import case_payload, without_token
from chalicelib.adapters.runtimes.transport import (
    CREDENTIAL_STATUSES,
    check_timeout,
    clip,
    raise_for_status,
    run_with_timeout,
)
from chalicelib.domain.models import AgentAnswer, CaseRequest
from chalicelib.domain.text import clean_text, json_of_bytes
from chalicelib.errors import (
    AgentCrashError,
    InvalidInputError,
    ProviderError,
    is_retryable_status,
)
from chalicelib.services.ports import AskContext

PREFIX_SETTING = "ASSAY_LAMBDA_FUNCTION_PREFIX"
"""The operator setting every invoked function name must start with."""

DEFAULT_PREFIX = "assay-agent-"
"""`Settings.assay_lambda_function_prefix`'s default."""

_NAME_RE = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
_QUALIFIER_RE = re.compile(r"^[A-Za-z0-9$_-]{1,128}$")

_THROTTLE_CODES = frozenset(
    {"TooManyRequestsException", "ThrottlingException", "Throttling", "RequestLimitExceeded"}
)


def _default_client() -> Any:
    import boto3  # imported here so importing the runtimes never needs AWS configuration

    return boto3.client("lambda")


class LambdaRuntime:
    """Invokes a Lambda function as the agent (`AgentRuntime`)."""

    def __init__(
        self,
        client_factory: Callable[[], Any] | None = None,
        prefix: Callable[[], str] | None = None,
    ) -> None:
        """Args:
        client_factory: builds the boto3 Lambda client on first `ask` (bootstrap passes one
            with the stack's endpoint and timeouts); default `boto3.client("lambda")`.
        prefix: returns the allowed function-name prefix now
            (`Settings.assay_lambda_function_prefix`, read at call time); default `DEFAULT_PREFIX`.
        """
        self._factory = client_factory or _default_client
        self._prefix = prefix or (lambda: DEFAULT_PREFIX)
        self._client: Any = None
        self._lock = threading.Lock()

    def client(self) -> Any:
        """The Lambda client, built on first use."""
        with self._lock:
            if self._client is None:
                self._client = self._factory()
            return self._client

    def validate(self, spec: dict[str, Any]) -> None:
        """Check `function_name` (a plain name under the operator's prefix) and optional
        `qualifier`.

        Raises:
            InvalidInputError: naming `spec.runtime` (no prefix configured), `spec.function_name`
                or `spec.qualifier`.
        """
        prefix = self._prefix()
        if not prefix:
            raise InvalidInputError(
                "runtime lambda is not enabled on this service: the operator allows no functions "
                f"({PREFIX_SETTING} is empty)",
                field="spec.runtime",
                setting=PREFIX_SETTING,
            )
        name = spec.get("function_name")
        if not isinstance(name, str) or not _NAME_RE.fullmatch(name):
            raise InvalidInputError(
                "spec.function_name must be a plain Lambda function name (letters, digits, '-', "
                "'_'; at most 64; no ARN)",
                field="spec.function_name",
            )
        if not name.startswith(prefix):
            raise InvalidInputError(
                f"spec.function_name must start with {prefix}: this service invokes only the "
                f"functions under {PREFIX_SETTING}",
                field="spec.function_name",
                setting=PREFIX_SETTING,
            )
        qualifier = spec.get("qualifier")
        if qualifier is not None and (
            not isinstance(qualifier, str) or not _QUALIFIER_RE.fullmatch(qualifier)
        ):
            raise InvalidInputError(
                "spec.qualifier must be a version or alias name", field="spec.qualifier"
            )

    def ask(
        self, spec: dict[str, Any], request: CaseRequest, timeout_s: float, ctx: AskContext
    ) -> AgentAnswer:
        """Invoke the function with the case; one try, bounded by `timeout_s` seconds.

        Returns:
            The answer (calls default to `executed`).

        Raises:
            ProviderError: throttling, 5xx, transport errors, timeout, credentials rejected
                (status 401/403), no answer.
            AgentCrashError: a function error, an agent-reported crash, other 4xx.
        """
        timeout_s = check_timeout(timeout_s)
        self.validate(spec)
        try:
            return self._ask(spec, request, timeout_s, ctx)
        except (ProviderError, AgentCrashError) as exc:
            without_token(exc, ctx)
            raise

    def _ask(
        self, spec: dict[str, Any], request: CaseRequest, timeout_s: float, ctx: AskContext
    ) -> AgentAnswer:
        name = spec["function_name"]
        source = f"lambda agent {name}"
        kwargs: dict[str, Any] = {
            "FunctionName": name,
            "InvocationType": "RequestResponse",
            "Payload": json.dumps(case_payload(request, ctx)).encode("utf-8"),
        }
        if spec.get("qualifier"):
            kwargs["Qualifier"] = spec["qualifier"]
        client = self.client()

        def invoke() -> tuple[dict[str, Any], bytes]:
            try:
                response = client.invoke(**kwargs)
            except Exception as exc:  # noqa: BLE001 - classified below, never swallowed
                raise _classify(exc, source) from exc
            payload = response.get("Payload")
            body = payload.read() if hasattr(payload, "read") else (payload or b"")
            return response, body if isinstance(body, bytes) else str(body).encode("utf-8")

        response, body = run_with_timeout(invoke, timeout_s, source)
        if response.get("FunctionError"):
            raise AgentCrashError(f"{source} failed: {_function_error(body)}")
        status = response.get("StatusCode", 200)
        if not 200 <= status <= 299:
            raise_for_status(status, body, source)
        if not body.strip():
            raise ProviderError(f"{source} returned no answer")
        try:
            result = json_of_bytes(body)  # a byte that is not UTF-8 is U+FFFD, not a crash
        except (ValueError, RecursionError) as exc:
            raise AgentCrashError(f"{source} returned a payload that is not JSON") from exc
        if isinstance(result, str):
            return AgentAnswer(answer=result)
        if isinstance(result, dict) and "statusCode" in result and "answer" not in result:
            return _proxy_answer(result, source)
        return answer_from_payload(result, source=source)


def _proxy_answer(result: dict[str, Any], source: str) -> AgentAnswer:
    """An API Gateway proxy response: classify its status like HTTP, parse its body."""
    body = result.get("body") or ""
    # A proxy body is text the function made: one lone surrogate in it must not fail the encode.
    body_bytes = (
        clean_text(body).encode("utf-8") if isinstance(body, str) else json.dumps(body).encode()
    )
    status = result.get("statusCode")
    if not isinstance(status, int):
        raise AgentCrashError(f"{source} returned a non-integer statusCode")
    try:
        parsed = json.loads(body_bytes) if body_bytes.strip() else None
    except (ValueError, RecursionError):
        parsed = None
    if isinstance(parsed, dict) and parsed.get("error") and parsed.get("crash") is True:
        raise AgentCrashError(f"{source} reported an error: {clip(str(parsed['error']))}")
    raise_for_status(status, body_bytes, source)
    if parsed is None:
        raise ProviderError(f"{source} returned no answer")
    return answer_from_payload(parsed, source=source)


def _function_error(body: bytes) -> str:
    """The function's `errorType: errorMessage`, else the raw payload (cut)."""
    try:
        data = json.loads(body)
    except (RecursionError, ValueError, UnicodeDecodeError):
        return clip(body.decode("utf-8", errors="replace")) or "(no details)"
    if isinstance(data, dict) and data.get("errorMessage"):
        kind = data.get("errorType")
        return clip(f"{kind}: {data['errorMessage']}" if kind else str(data["errorMessage"]))
    return clip(json.dumps(data))


def _classify(exc: Exception, source: str) -> Exception:
    """Map a boto3/botocore exception to `ProviderError` or `AgentCrashError`.

    Duck-typed on `exc.response` so tests can raise botocore's `ClientError` from a stub.
    """
    response = getattr(exc, "response", None)
    if isinstance(response, dict):
        error = response.get("Error") or {}
        code = str(error.get("Code", ""))
        message = clip(str(error.get("Message") or exc))
        status = (response.get("ResponseMetadata") or {}).get("HTTPStatusCode")
        if code in _THROTTLE_CODES:
            return ProviderError(f"{source} throttled ({code}): {message}", status=429)
        if isinstance(status, int) and status in CREDENTIAL_STATUSES:
            return ProviderError(
                f"{source}: credentials rejected ({code}): {message}", status=status
            )
        if isinstance(status, int) and is_retryable_status(status):
            return ProviderError(
                f"{source} failed ({code}, HTTP {status}): {message}", status=status
            )
        if isinstance(status, int) and 400 <= status <= 499:
            return AgentCrashError(f"{source} was refused ({code}, HTTP {status}): {message}")
        return ProviderError(f"{source} failed ({code or type(exc).__name__}): {message}")
    # No service response: connection errors, read timeouts, credential lookup failures.
    if type(exc).__name__ in {"NoCredentialsError", "PartialCredentialsError"}:
        return ProviderError(
            f"{source}: credentials missing: {exc}", status=401, credentials_missing=True
        )
    return ProviderError(f"{source} could not be invoked: {clip(f'{type(exc).__name__}: {exc}')}")
