"""The answer payload: the shape the `http`, `python`, `lambda` and `recorded` runtimes read an
agent's answer from (docs/reference/runtimes.md)::

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
"""

from __future__ import annotations

import json
from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

from pydantic import ValidationError

from chalicelib.adapters.runtimes.transport import clip
from chalicelib.domain.agent_output import printed
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import AgentAnswer, ToolCall, Usage
from chalicelib.errors import AgentCrashError, ProviderError

GUARDRAIL_ANSWER_PREFIX = "Blocked by guardrail: "
"""The refusal text of a blocked payload without an answer is this prefix plus the reason."""

UNSPECIFIED_GUARDRAIL_REASON = "unspecified"
"""The reason of a `{"blocked": true}` guardrail that gives none."""


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
        message = f"{source} reported an error: {clip(printed(payload['error']))}"
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
