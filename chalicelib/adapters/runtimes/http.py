"""The `http` runtime, and the answer shape every non-OpenAI runtime shares
(docs/reference/runtimes.md).

Spec::

    {"runtime": "http", "url": "https://agent.example/ask",
     "headers": {"X-Team": "evals",                                   # a literal value, or
                 "Authorization": {"secret": "agent-key", "prefix": "Bearer "}}}  # a secret's

A header value is a literal string or a reference to one of the organization's secrets, read
through the `AskContext` when asked (a missing one is "credentials missing", status 401). A
literal that is a credential is refused when the spec is saved (`check_headers`). The URL's
address is checked by `chalicelib.adapters.egress` when the spec is saved and again on every
connection (docs/reference/security.md).

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

Guardrail blocks (docs/reference/runtimes.md: a guardrail block is graded as a refusal). A guardrail
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

Classification (docs/reference/runtimes.md): the caller retries only `ProviderError`; each `ask` is
one try bounded by `timeout_s`.

- 2xx with an answer payload → `AgentAnswer` (with `guardrail` set when one blocked it).
- A body `{"error": ..., "crash": true}` (or `crash` absent), at any status → `AgentCrashError`:
  the agent said its own run failed. `{"error": ..., "crash": false}` → `ProviderError` (the
  agent says something upstream of it failed; worth retrying).
- 5xx, 408, 429, connection errors, timeouts, a 2xx without an answer → `ProviderError(status=)`.
- Any other 4xx (or a 3xx that is not followed) → `AgentCrashError` (the agent refused the
  request); 401/403 say "credentials rejected" in the message.
- Redirects 301/302/307/308 are followed up to `MAX_REDIRECTS` times with the same POST body, each
  hop checked before it is connected to; a hop to a refused address is `EgressRefusedError` (an
  `AgentCrashError`, never retried), and a hop to another origin drops the credential headers.
"""

from __future__ import annotations

import json
import re
from collections.abc import Mapping
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from pydantic import ValidationError

from chalicelib.adapters.egress import Egress, parse_target
from chalicelib.adapters.http_transport import CREDENTIAL_HEADERS, HttpTransport, clip
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import AgentAnswer, CaseRequest, ToolCall, Usage
from chalicelib.domain.redaction import redact
from chalicelib.domain.text import json_of_bytes
from chalicelib.errors import (
    AgentCrashError,
    InvalidInputError,
    ProviderError,
    is_retryable_status,
)
from chalicelib.services.ports import AskContext

CREDENTIAL_STATUSES = frozenset({401, 403})
"""Statuses that mean the provider rejected our credentials."""

_URL_RE = re.compile(r"^https?://[^\s/]+", re.IGNORECASE)

SECRET_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
"""A secret's name, as `PUT /api/v1/secrets/{name}` accepts it."""

_SERVICE_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_HEADER_NAME_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_BAD_HEADER_CHARS = re.compile(r"[\r\n\x00]")

GUARDRAIL_ANSWER_PREFIX = "Blocked by guardrail: "
"""The refusal text of a blocked payload without an answer is this prefix plus the reason."""

UNSPECIFIED_GUARDRAIL_REASON = "unspecified"
"""The reason of a `{"blocked": true}` guardrail that gives none."""


# --- shared helpers ------------------------------------------------------------------------------


def check_timeout(timeout_s: Any) -> float:
    """Return `timeout_s` as a float, refusing non-positive or non-numeric values.

    Raises:
        InvalidInputError: (field "timeout_s") when it is not a number > 0.
    """
    if isinstance(timeout_s, bool) or not isinstance(timeout_s, int | float) or not timeout_s > 0:
        raise InvalidInputError("timeout_s must be a number of seconds > 0", field="timeout_s")
    return float(timeout_s)


def require_url(spec: Mapping[str, Any], key: str, *, prefix: str = "spec") -> str:
    """Return `spec[key]` if it is a URL the service may connect to, by its shape (http/https, a
    host, no `user:pass@`); the address is checked by `Egress`.

    Raises:
        InvalidInputError: (field "<prefix>.<key>") when missing or not such a URL.
    """
    field = f"{prefix}.{key}"
    url = spec.get(key)
    if not isinstance(url, str) or not _URL_RE.match(url):
        raise InvalidInputError(f"{field} must be an http:// or https:// URL", field=field)
    try:
        parse_target(url)
    except ValueError as exc:
        raise InvalidInputError(f"{field} {exc}", field=field) from None
    return url


def check_secret_name(value: Any, field: str) -> str:
    """Return `value` if it names a secret (`^[A-Za-z0-9_.-]{1,64}$`).

    Raises:
        InvalidInputError: (field `field`) when it does not.
    """
    if not isinstance(value, str) or not SECRET_NAME_RE.fullmatch(value):
        raise InvalidInputError(
            f"{field} must name one of the organization's secrets "
            "(letters, digits, '_', '.', '-'; at most 64)",
            field=field,
        )
    return value


def refuse_api_key_env(spec: Mapping[str, Any], prefix: str = "spec") -> None:
    """Refuse `api_key_env` (no tenant input names an environment variable,
    docs/reference/security.md) and `api_key` (no key is written into a spec: it names a secret with
    `api_key_secret`).

    Raises:
        InvalidInputError: (field "<prefix>.api_key_env" or "<prefix>.api_key") when one is present.
    """
    if "api_key_env" in spec:
        field = f"{prefix}.api_key_env"
        raise InvalidInputError(
            f"{field} is not accepted: credentials are the organization's secrets, not the "
            "service's environment. Store the key with PUT /api/v1/secrets/{name} and write "
            '"api_key_secret": "<name>"',
            field=field,
        )
    if "api_key" in spec:  # a key written into a spec would be kept and shown with it
        field = f"{prefix}.api_key"
        raise InvalidInputError(
            f"{field} is not accepted: a key is never written into a spec (it is stored and shown "
            'as written). Store it with PUT /api/v1/secrets/{name} and write "api_key_secret": '
            '"<name>"',
            field=field,
        )


def check_headers(value: Any, field: str) -> dict[str, str | dict[str, str]]:
    """Return optional headers (`spec.headers`, `spec.extra_headers`, a profile's) after checking
    them.

    A value is a literal string or a secret reference
    ``{"secret": "<name>", "prefix"?: "Bearer "}``. A literal that is a credential (an
    `Authorization`, `Proxy-Authorization` or `Cookie` value, or text the redaction recognizes as a
    secret) is refused: it would be stored and shown with the spec. `Host`, `Content-Length`,
    `Transfer-Encoding` and `Connection` are the service's own.

    Raises:
        InvalidInputError: (field `field`) naming the header at fault.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"{field} must be an object of header values (a string or "
            '{"secret": "<name>", "prefix"?: "..."})',
            field=field,
        )
    out: dict[str, str | dict[str, str]] = {}
    for name, raw in value.items():
        if not isinstance(name, str) or not _HEADER_NAME_RE.fullmatch(name):
            raise InvalidInputError(
                f"{field}: {clip(repr(name), 80)} is not a header name", field=field
            )
        if name.lower() in _SERVICE_HEADERS:
            raise InvalidInputError(f"{field}.{name} is set by the service itself", field=field)
        if isinstance(raw, str):
            if _BAD_HEADER_CHARS.search(raw):
                raise InvalidInputError(f"{field}.{name} must not contain line breaks", field=field)
            if name.lower() in CREDENTIAL_HEADERS or redact(raw) != raw:
                raise InvalidInputError(
                    f"{field}.{name} holds a credential in plain text: store it as a secret "
                    '(PUT /api/v1/secrets/{name}) and write {"secret": "<name>", "prefix"?: '
                    '"Bearer "}',
                    field=field,
                )
            out[name] = raw
            continue
        if not isinstance(raw, dict) or "secret" not in raw or set(raw) - {"secret", "prefix"}:
            raise InvalidInputError(
                f'{field}.{name} must be a string or {{"secret": "<name>", "prefix"?: "..."}}',
                field=field,
            )
        check_secret_name(raw["secret"], field)
        prefix = raw.get("prefix", "")
        if not isinstance(prefix, str) or len(prefix) > 256 or _BAD_HEADER_CHARS.search(prefix):
            raise InvalidInputError(
                f"{field}.{name}.prefix must be a short string without line breaks", field=field
            )
        if prefix and redact(prefix) != prefix:
            raise InvalidInputError(
                f"{field}.{name}.prefix holds a credential in plain text", field=field
            )
        out[name] = {"secret": raw["secret"], "prefix": prefix}
    return out


def secret_value(ctx: AskContext, name: str, source: str) -> str:
    """The value of the organization's secret `name`, read through `ctx` when asked.

    Raises:
        ProviderError: (status 401, not retried) the organization has no such secret.
        AgentCrashError: the value cannot be sent in a header (a line break).
    """
    value = ctx.secret(name)
    if not value:
        raise ProviderError(
            f"{source}: credentials missing: secret {name} is not set in this organization",
            status=401,
            credentials_missing=True,
        )
    if _BAD_HEADER_CHARS.search(value):
        raise AgentCrashError(
            f"{source}: secret {name} holds a line break and cannot be sent in a header"
        )
    return value


def resolve_headers(
    headers: Mapping[str, str | dict[str, str]], ctx: AskContext, source: str
) -> tuple[dict[str, str], frozenset[str]]:
    """Header values to send: literals as written, secret references read through `ctx`.

    Returns:
        (headers, the lower-cased names whose values came from secrets: dropped on a redirect to
        another origin).

    Raises:
        ProviderError / AgentCrashError: see `secret_value`.
    """
    out: dict[str, str] = {}
    secret_names: set[str] = set()
    for name, value in headers.items():
        if isinstance(value, str):
            out[name] = value
        else:
            out[name] = value.get("prefix", "") + secret_value(ctx, value["secret"], source)
            secret_names.add(name.lower())
    return out, frozenset(secret_names)


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
    try:
        return int((amount * 1_000_000).to_integral_value(rounding=ROUND_HALF_UP))
    except ArithmeticError as exc:  # "1e999999": past what Decimal holds, so past any bound too
        raise ValueError(f"{what} is too large to be a cost") from exc


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
        try:
            data["arguments"] = json.loads(data["arguments"])
        except RecursionError:
            raise ValueError("a call's arguments nest too deeply to read") from None
    data.setdefault("status", default_status)
    return ToolCall.model_validate(data)


def decode_json(body: bytes, source: str) -> Any:
    """Decode a response body as JSON.

    Raises:
        ProviderError: the body is not JSON (a proxy's HTML error page, a cut-off stream).
    """
    try:
        return json_of_bytes(body)  # a byte that is not UTF-8 is U+FFFD, not a refused body
    except (RecursionError, ValueError) as exc:
        shown = repr(clip(body.decode("utf-8", errors="replace"), 200))  # redacted before it is cut
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
    except (RecursionError, ValueError, UnicodeDecodeError):
        return clip(body.decode("utf-8", errors="replace").strip()) or "(empty body)"
    if isinstance(data, dict):
        error = data.get("error")
        if isinstance(error, dict) and error.get("message"):
            return clip(str(error["message"]))
        if error:
            return clip(str(error))
    return clip(json.dumps(data, ensure_ascii=False))


# --- the runtime ---------------------------------------------------------------------------------


class HttpRuntime:
    """Asks an agent that serves the case JSON over HTTP (`AgentRuntime`)."""

    def __init__(
        self, transport: HttpTransport | None = None, egress: Egress | None = None
    ) -> None:
        """Args:
        transport: the HTTP client holder; default one built lazily on first `ask`.
        egress: the egress policy of the default transport (ignored with `transport`).
        """
        self._transport = transport or HttpTransport(egress)

    @property
    def egress(self) -> Egress:
        """The egress policy URLs are checked with."""
        return self._transport.egress

    def validate(self, spec: dict[str, Any]) -> None:
        """Check `url` (its shape and, through `Egress`, its address) and optional `headers`.

        Raises:
            InvalidInputError: naming `spec.url` or `spec.headers`.
        """
        _check_shape(spec)
        self.egress.check(spec["url"], "spec.url")

    def ask(
        self, spec: dict[str, Any], request: CaseRequest, timeout_s: float, ctx: AskContext
    ) -> AgentAnswer:
        """POST `request` to `spec["url"]` and parse the answer payload; one try.

        Args:
            spec: an `http` spec (see the module docstring).
            request: the case.
            timeout_s: bound on the whole exchange, in seconds.
            ctx: where secret header values are read.

        Returns:
            The agent's answer (calls default to `executed`).

        Raises:
            ProviderError: 5xx/408/429, transport errors, timeouts, no answer, a missing secret
                (status 401).
            AgentCrashError: an agent-reported crash, other 4xx, a malformed payload, an address
                egress refuses (`EgressRefusedError`).
            InvalidInputError: the spec no longer passes its checks.
        """
        timeout_s = check_timeout(timeout_s)
        headers = _check_shape(spec)
        url = spec["url"]
        source = f"agent {url}"
        values, secret_names = resolve_headers(headers, ctx, source)
        status, body = self._transport.post_json(
            url,
            request.model_dump(mode="json"),
            values,
            timeout_s,
            source,
            secret_headers=secret_names,
        )
        payload = _maybe_json(body)
        # An explicit crash report wins over the status: the agent told us its own run failed.
        if isinstance(payload, dict) and payload.get("error") and payload.get("crash") is True:
            raise AgentCrashError(f"{source} reported an error: {clip(str(payload['error']))}")
        raise_for_status(status, body, source)
        return answer_from_payload(decode_json(body, source), source=source)

    def close(self) -> None:
        """Close the HTTP clients, if built."""
        self._transport.close()


def _check_shape(spec: Mapping[str, Any]) -> dict[str, str | dict[str, str]]:
    refuse_api_key_env(spec)
    require_url(spec, "url")
    return check_headers(spec.get("headers"), "spec.headers")


def _maybe_json(body: bytes) -> Any:
    try:
        return json_of_bytes(body)
    except (RecursionError, ValueError):
        return None
