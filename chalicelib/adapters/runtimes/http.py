"""The `http` runtime, and the answer shape every non-OpenAI runtime shares (DESIGN §8).

Spec::

    {"runtime": "http", "url": "https://agent.example/ask", "headers": {"X-Key": "..."}}

`ask` POSTs the case (`CaseRequest.model_dump(mode="json")`) as JSON to `url` with `headers`
and reads back the *answer payload*, the shape the `python`, `lambda` and `recorded` runtimes
also return::

    {"answer": "4",                                   # required, the final answer text
     "calls": [{"name": "calc", "arguments": {...},   # optional, tool calls the agent made
                "status": "executed", "result": ...}],  # status defaults to "executed"
     "usage": {"input_tokens": 12, "output_tokens": 3},  # optional
     "model": "gpt-4o-mini-2024-07-18",               # optional, the model that answered
     "cost_usd": "0.000021",                          # optional, USD (string or number)
     "guardrail": "pii detected"}                     # optional, see "Guardrail blocks" below

or an agent-reported error ``{"error": "tool search raised", "crash": true}``.

Guardrail blocks (seed 004 "Results": a guardrail block is graded as a refusal). A guardrail
(the agent's own, or its provider's filter) that blocked the answer is neither a crash nor a
provider error: the answer is the refusal text, graded by the scorers like any answer, and
`AgentAnswer.guardrail` names why. `guardrail` is one of:

- absent, null or "" → nothing blocked the answer;
- a non-empty string → blocked, the string is the reason;
- ``{"blocked": true, "reason": "pii detected"}`` → blocked (`reason` optional, default
  "unspecified"); ``{"blocked": false, ...}`` → nothing blocked it (`reason` ignored).

When blocked and `answer` is absent, null or blank, the answer is
``"Blocked by guardrail: <reason>"`` so the scorers have a refusal to grade; a non-blank
`answer` is kept as the refusal text. Any other `guardrail` value (a number, a list, an object
whose `blocked` is not a boolean or whose `reason` is not a string) makes the payload
malformed, like malformed `calls` or `usage` → `AgentCrashError`. An `error` in the same
payload wins over the guardrail.

Classification (seed 004 "Results"): the caller retries only `ProviderError`; each `ask` is one
try bounded by `timeout_s`.

- 2xx with an answer payload → `AgentAnswer` (with `guardrail` set when one blocked it).
- A body `{"error": ..., "crash": true}` (or `crash` absent), at any status → `AgentCrashError`:
  the agent said its own run failed. `{"error": ..., "crash": false}` → `ProviderError` (the
  agent says something upstream of it failed; worth retrying).
- 5xx, 408, 429, connection errors, timeouts, a 2xx without an answer → `ProviderError(status=)`.
- Any other 4xx (or 3xx: redirects are not followed) → `AgentCrashError` (the agent refused the
  request); 401/403 say "credentials rejected" in the message.
"""

from __future__ import annotations

import json
import re
import threading
from collections.abc import Callable, Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any, TypeVar

import httpx
from pydantic import ValidationError

from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import AgentAnswer, CaseRequest, ToolCall, Usage
from chalicelib.errors import AgentCrashError, InvalidInputError, ProviderError

T = TypeVar("T")

RETRYABLE_STATUSES = frozenset({408, 429})
"""Statuses below 500 that are still worth retrying (plus every 5xx and `status=None`)."""

CREDENTIAL_STATUSES = frozenset({401, 403})
"""Statuses that mean the provider rejected our credentials."""

_ERROR_TEXT_LIMIT = 500
"""Characters of a response body kept in an error message: enough to read, not a whole page."""

_URL_RE = re.compile(r"^https?://[^\s/]+", re.IGNORECASE)

GUARDRAIL_ANSWER_PREFIX = "Blocked by guardrail: "
"""The refusal text of a blocked payload without an answer is this prefix plus the reason."""

UNSPECIFIED_GUARDRAIL_REASON = "unspecified"
"""The reason of a `{"blocked": true}` guardrail that gives none."""


# --- shared helpers ------------------------------------------------------------------------------


def is_retryable_status(status: int | None) -> bool:
    """Whether a `ProviderError` with this status is worth retrying.

    Args:
        status: the HTTP-like status carried by the error; None for timeouts/connection errors.

    Returns:
        True for None, 408, 429 and every 5xx; False otherwise (e.g. 401 credentials rejected).
    """
    return status is None or status in RETRYABLE_STATUSES or 500 <= status <= 599


def run_with_timeout(fn: Callable[[], T], timeout_s: float, what: str) -> T:
    """Run `fn()` in a daemon thread and wait at most `timeout_s` seconds for it.

    Python threads cannot be killed: on timeout the call keeps running in the background
    (a daemon thread, so it never holds up interpreter exit) and its result is dropped. Callers
    give `fn` its own bound (e.g. an HTTP timeout) so such leftovers end by themselves.

    Args:
        fn: the work; its exceptions are re-raised here unchanged.
        timeout_s: bound in seconds; must be > 0.
        what: names the work in the timeout message, e.g. "agent http://x/ask".

    Returns:
        What `fn` returned.

    Raises:
        ProviderError: (status None) when `fn` did not finish within `timeout_s`.
        BaseException: whatever `fn` raised.
    """
    outcome: dict[str, Any] = {}
    done = threading.Event()

    def target() -> None:
        try:
            outcome["value"] = fn()
        except BaseException as exc:  # noqa: BLE001 - handed back to the waiting thread
            outcome["error"] = exc
        finally:
            done.set()

    threading.Thread(target=target, name=f"runtime:{what}"[:60], daemon=True).start()
    if not done.wait(timeout_s):
        raise ProviderError(f"{what} timed out after {timeout_s:g} s")
    if "error" in outcome:
        raise outcome["error"]
    return outcome["value"]


def check_timeout(timeout_s: Any) -> float:
    """Return `timeout_s` as a float, refusing non-positive or non-numeric values.

    Raises:
        InvalidInputError: (field "timeout_s") when it is not a number > 0.
    """
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise InvalidInputError("timeout_s must be a number of seconds > 0", field="timeout_s")
    return float(timeout_s)


def require_url(spec: Mapping[str, Any], key: str) -> str:
    """Return `spec[key]` if it is an http(s) URL.

    Raises:
        InvalidInputError: (field "spec.<key>") when missing or not an http(s) URL.
    """
    url = spec.get(key)
    if not isinstance(url, str) or not _URL_RE.match(url):
        raise InvalidInputError(
            f"spec.{key} must be an http:// or https:// URL", field=f"spec.{key}"
        )
    return url


def require_str_map(spec: Mapping[str, Any], key: str) -> dict[str, str]:
    """Return optional `spec[key]` as a str → str dict (empty when absent).

    Raises:
        InvalidInputError: (field "spec.<key>") when present and not an object of strings.
    """
    value = spec.get(key)
    if value is None:
        return {}
    if not isinstance(value, dict) or not all(
        isinstance(k, str) and isinstance(v, str) for k, v in value.items()
    ):
        raise InvalidInputError(
            f"spec.{key} must be an object of string values", field=f"spec.{key}"
        )
    return dict(value)


def clip(text: str, limit: int = _ERROR_TEXT_LIMIT) -> str:
    """`text` cut to `limit` characters, with an ellipsis when cut."""
    return text if len(text) <= limit else text[:limit] + "…"


def usd_to_micros(value: Any, *, what: str = "cost_usd") -> int:
    """Convert a USD amount (string, int or float) to integer micro-USD, rounding half up.

    Floats go through `str()` so 0.1 becomes Decimal("0.1"), never its binary expansion.

    Raises:
        ValueError: when `value` is not a finite, non-negative number.
    """
    if isinstance(value, bool) or not isinstance(value, str | int | float):
        raise ValueError(f"{what} must be a decimal number of USD")
    try:
        amount = Decimal(str(value).strip())
    except InvalidOperation as exc:
        raise ValueError(f"{what} must be a decimal number of USD") from exc
    if not amount.is_finite() or amount < 0:
        raise ValueError(f"{what} must be a finite, non-negative number of USD")
    return int((amount * 1_000_000).to_integral_value(rounding=ROUND_HALF_UP))


def answer_from_payload(
    payload: Any,
    *,
    source: str,
    default_call_status: CallStatus = CallStatus.EXECUTED,
    default_model: str | None = None,
) -> AgentAnswer:
    """Turn an answer payload (the shape in the module docstring) into an `AgentAnswer`.

    Unknown keys are ignored (a recording line also carries `case_id` and `input`).

    Args:
        payload: the decoded JSON the agent returned.
        source: names the agent in error messages.
        default_call_status: status of calls that carry none (`replayed` for recordings).
        default_model: model when the payload names none.

    Returns:
        The answer; when a `guardrail` blocked it, `guardrail` is the reason and `answer` the
        refusal text (the payload's answer, else "Blocked by guardrail: <reason>").

    Raises:
        AgentCrashError: the payload reports the agent's own failure, or is malformed
            (wrong types, an unknown call status, a malformed guardrail).
        ProviderError: the payload reports an upstream failure (`crash: false`) or holds no
            answer at all (and no guardrail block).
    """
    if not isinstance(payload, dict):
        raise AgentCrashError(f"{source} returned {type(payload).__name__}, not a JSON object")
    if payload.get("error") not in (None, "", False):
        message = f"{source} reported an error: {clip(str(payload['error']))}"
        if payload.get("crash", True) is False:
            raise ProviderError(message)
        raise AgentCrashError(message)
    try:
        guardrail = guardrail_from(payload.get("guardrail"))
    except (ValueError, TypeError) as exc:
        raise AgentCrashError(f"{source} returned a malformed answer: {clip(str(exc))}") from exc
    answer = payload.get("answer")
    blank = answer is None or (isinstance(answer, str) and not answer.strip())
    if guardrail is not None and blank:
        answer = GUARDRAIL_ANSWER_PREFIX + guardrail
    if answer is None:
        raise ProviderError(f"{source} returned no answer")
    if not isinstance(answer, str):
        raise AgentCrashError(f"{source} returned a non-string answer ({type(answer).__name__})")
    try:
        calls = [_call(raw, default_call_status) for raw in payload.get("calls") or []]
        usage = usage_from(payload.get("usage"))
        model = payload.get("model") or default_model
        if model is not None and not isinstance(model, str):
            raise ValueError("model must be a string")
        cost = payload.get("cost_usd")
        cost_micros = None if cost is None else usd_to_micros(cost)
    except (ValidationError, ValueError, TypeError) as exc:
        raise AgentCrashError(f"{source} returned a malformed answer: {clip(str(exc))}") from exc
    return AgentAnswer(
        answer=answer,
        calls=calls,
        usage=usage,
        model=model,
        cost_micros=cost_micros,
        guardrail=guardrail,
    )


def guardrail_from(raw: Any) -> str | None:
    """The reason a payload's `guardrail` value says the answer was blocked, or None.

    Args:
        raw: the payload's `guardrail`: None, a string (the reason; "" = not blocked) or
            `{"blocked": bool, "reason"?: str}`.

    Returns:
        The reason (stripped; "unspecified" for `{"blocked": true}` without one), or None
        when nothing blocked the answer.

    Raises:
        TypeError: any other value (wrong type, `blocked` not a boolean, `reason` not a
            string).
    """
    if raw is None:
        return None
    if isinstance(raw, str):
        return raw.strip() or None
    if isinstance(raw, dict):
        blocked = raw.get("blocked")
        if not isinstance(blocked, bool):
            raise TypeError("guardrail.blocked must be true or false")
        if not blocked:
            return None
        reason = raw.get("reason")
        if reason is not None and not isinstance(reason, str):
            raise TypeError("guardrail.reason must be a string")
        return (reason or "").strip() or UNSPECIFIED_GUARDRAIL_REASON
    raise TypeError(
        'guardrail must be a string (the reason) or an object {"blocked": bool, "reason": str}'
    )


def usage_from(raw: Any) -> Usage:
    """Token counts from `{input_tokens, output_tokens}` (or OpenAI's prompt/completion names).

    Other keys (`total_tokens`, cache details) are ignored; absent counts are 0.

    Raises:
        ValueError: counts that are not non-negative integers.
    """
    if raw is None:
        return Usage()
    if not isinstance(raw, dict):
        raise ValueError("usage must be an object {input_tokens, output_tokens}")
    counts = []
    for name, alias in (("input_tokens", "prompt_tokens"), ("output_tokens", "completion_tokens")):
        value = raw.get(name, raw.get(alias, 0))
        if value is None:
            value = 0
        if isinstance(value, bool) or not isinstance(value, int) or value < 0:
            raise ValueError(f"usage.{name} must be a non-negative integer")
        counts.append(value)
    return Usage(input_tokens=counts[0], output_tokens=counts[1])


def _call(raw: Any, default_status: CallStatus) -> ToolCall:
    if not isinstance(raw, dict):
        raise ValueError("each call must be an object {name, arguments, status?, result?}")
    data = {k: raw[k] for k in ("name", "arguments", "status", "result") if k in raw}
    if data.get("arguments") is None:
        data.pop("arguments", None)
    elif isinstance(data["arguments"], str):
        # Some agents forward the model's raw JSON argument string as is.
        data["arguments"] = json.loads(data["arguments"])
    data.setdefault("status", default_status)
    return ToolCall.model_validate(data)


def decode_json(body: bytes, source: str) -> Any:
    """Decode a response body as JSON.

    Raises:
        ProviderError: the body is not JSON (a proxy's HTML error page, a cut-off stream).
    """
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError) as exc:
        shown = clip(repr(body[:200]))
        raise ProviderError(f"{source} returned a body that is not JSON: {shown}") from exc


def raise_for_status(
    status: int, body: bytes, source: str, *, credentials_retry: bool = False
) -> None:
    """Raise the error a non-2xx status means; return for 2xx.

    Args:
        status: the HTTP status.
        body: the response body, quoted (cut) in the message.
        source: names the agent or provider.
        credentials_retry: True makes 401/403 a `ProviderError(status=)` (the caller sees a
            non-retryable status and names it "credentials rejected"); False makes them an
            `AgentCrashError` like any other 4xx.

    Raises:
        ProviderError: 5xx, 408, 429 (and 401/403 when `credentials_retry`).
        AgentCrashError: any other non-2xx.
    """
    if 200 <= status <= 299:
        return
    detail = _error_detail(body)
    if status in CREDENTIAL_STATUSES:
        message = f"{source}: credentials rejected (HTTP {status}): {detail}"
        if credentials_retry:
            raise ProviderError(message, status=status)
        raise AgentCrashError(message)
    message = f"{source} answered HTTP {status}: {detail}"
    if is_retryable_status(status):
        raise ProviderError(message, status=status)
    raise AgentCrashError(message)


def _error_detail(body: bytes) -> str:
    """The most readable part of an error body: OpenAI's `error.message`, else the text."""
    try:
        data = json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return clip(body.decode("utf-8", errors="replace").strip()) or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return clip(str(error["message"]))
        if error:
            return clip(str(error))
    return clip(json.dumps(data, ensure_ascii=False))


class HttpTransport:
    """A lazily built, thread-safe `httpx.Client` plus one strictly bounded POST.

    Shared by the `http` and `openai` runtimes; no connection is opened until the first call.
    """

    def __init__(self, client_factory: Callable[[], httpx.Client] | None = None) -> None:
        """Args:
        client_factory: builds the client (tests may inject one); default a plain client that
            does not follow redirects.
        """
        self._factory = client_factory or (lambda: httpx.Client(follow_redirects=False))
        self._client: httpx.Client | None = None
        self._lock = threading.Lock()

    def client(self) -> httpx.Client:
        """The shared client, built on first use."""
        with self._lock:
            if self._client is None:
                self._client = self._factory()
            return self._client

    def close(self) -> None:
        """Close the client if it was built."""
        with self._lock:
            if self._client is not None:
                self._client.close()
                self._client = None

    def post_json(
        self, url: str, body: Any, headers: Mapping[str, str], timeout_s: float, source: str
    ) -> tuple[int, bytes]:
        """POST `body` as JSON; return `(status, response body)` within `timeout_s` seconds.

        httpx's timeouts bound each phase (connect, each read), not the whole exchange, so the
        exchange also runs under `run_with_timeout` for a strict total bound; httpx's own
        timeout makes an abandoned exchange end soon after.

        Raises:
            ProviderError: (status None) on timeout or any transport error.
        """
        client = self.client()
        content = json.dumps(body, ensure_ascii=False).encode("utf-8")
        all_headers = {"content-type": "application/json", "accept": "application/json"}
        all_headers.update(headers)

        def exchange() -> tuple[int, bytes]:
            try:
                response = client.post(
                    url, content=content, headers=all_headers, timeout=httpx.Timeout(timeout_s)
                )
            except httpx.TimeoutException as exc:
                raise ProviderError(f"{source} timed out after {timeout_s:g} s") from exc
            except httpx.HTTPError as exc:
                raise ProviderError(f"{source} could not be reached: {clip(str(exc))}") from exc
            return response.status_code, response.content

        return run_with_timeout(exchange, timeout_s, source)


# --- the runtime ---------------------------------------------------------------------------------


class HttpRuntime:
    """Asks an agent that serves the case JSON over HTTP (`AgentRuntime`)."""

    def __init__(self, transport: HttpTransport | None = None) -> None:
        """Args:
        transport: the HTTP client holder; default one built lazily on first `ask`.
        """
        self._transport = transport or HttpTransport()

    def validate(self, spec: dict[str, Any]) -> None:
        """Check `url` (http/https) and optional `headers` (object of strings).

        Raises:
            InvalidInputError: naming `spec.url` or `spec.headers`.
        """
        require_url(spec, "url")
        require_str_map(spec, "headers")

    def ask(self, spec: dict[str, Any], request: CaseRequest, timeout_s: float) -> AgentAnswer:
        """POST `request` to `spec["url"]` and parse the answer payload; one try.

        Args:
            spec: an `http` spec (see the module docstring).
            request: the case.
            timeout_s: bound on the whole exchange, in seconds.

        Returns:
            The agent's answer (calls default to `executed`).

        Raises:
            ProviderError: 5xx/408/429, transport errors, timeouts, no answer.
            AgentCrashError: an agent-reported crash, other 4xx, a malformed payload.
        """
        timeout_s = check_timeout(timeout_s)
        url = require_url(spec, "url")
        headers = require_str_map(spec, "headers")
        source = f"agent {url}"
        status, body = self._transport.post_json(
            url, request.model_dump(mode="json"), headers, timeout_s, source
        )
        payload = _maybe_json(body)
        # An explicit crash report wins over the status: the agent told us its own run failed.
        if isinstance(payload, dict) and payload.get("error") and payload.get("crash") is True:
            raise AgentCrashError(f"{source} reported an error: {clip(str(payload['error']))}")
        raise_for_status(status, body, source)
        return answer_from_payload(decode_json(body, source), source=source)

    def close(self) -> None:
        """Close the HTTP client, if built."""
        self._transport.close()


def _maybe_json(body: bytes) -> Any:
    try:
        return json.loads(body)
    except (ValueError, UnicodeDecodeError):
        return None
