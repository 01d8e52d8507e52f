"""The `openai` runtime: any OpenAI-compatible chat-completions endpoint
(docs/reference/runtimes.md).

OpenAI, vLLM, Ollama, LiteLLM or a gateway. Spec::

    {"runtime": "openai",
     "base_url": "https://api.openai.com/v1",   # required; POST {base_url}/chat/completions
     "model": "gpt-4o-mini",                     # required
     "api_key_secret": "openai",                 # optional: the organization's secret holding
                                                 #   the key, sent as `Authorization: Bearer <key>`;
                                                 #   absent = no Authorization header
     "system_prompt": "You are ...",             # optional
     "temperature": 0.0,                         # optional, 0..2, default 0.0
     "max_tokens": 512,                          # optional, > 0
     "tools": [{"name": "refund",                # optional: see docs/guides/tools.md (the
                "parameters": {...},             #   OpenAI shape {"type": "function", ...}
                "effect": "write",               #   is accepted too)
                "connection_id": "shop"}],
     "max_steps": 10,                            # optional, 1..50, default 10: model turns of
                                                 #   the tool loop of an eval attempt
     "extra_headers": {"X-Gateway": "...",       # optional: literal strings, or secrets'
                       "X-Key": {"secret": "gw", "prefix": ""}}}   #   values (see `http`)

`api_key_env` (an environment variable of the service) is refused: no tenant input names one
(docs/reference/security.md). `base_url`'s address is checked when the spec is saved and again
on every connection and redirect (`chalicelib.adapters.egress`).

Messages sent: the system prompt (if any), the case history as given, then the case input as
the last user turn; `tools` go as OpenAI functions (`ToolSpec.openai_tool`).

During an eval attempt (`AskContext.tools` set) the runtime runs the agent's tool loop itself
(`openai_loop`): it sends the attempt's tools (the spec's and the built-in workspace tools),
makes every call the model asks for through `AskContext.tools` (which decides whether it is
replayed, held, executed on a test or normal connection, or blocked, and keeps it) and feeds the
results back until a message calls no tool; more than `max_steps` model turns, or the same call
repeated in a loop, is an `AgentCrashError`. The answer then carries no calls of its own (the
attempt's tools keep them), its usage is summed over every turn and its model is the last turn's.

Outside an eval attempt (a judge, a check) one completion is asked and no tool is ever executed:
the answer is `choices[0].message.content` ("" when the model only called tools); each tool call
becomes `ToolCall(status="intended")` with its JSON arguments parsed.

Usage comes from `usage.prompt_tokens/completion_tokens`, the model from the response's `model`
(else the spec's).

Guardrail blocks (docs/reference/runtimes.md: graded as a refusal, neither a crash nor a provider
error) set `AgentAnswer.guardrail`:

- `choices[0].finish_reason == "content_filter"` → guardrail "provider content filter"; the
  answer is the (possibly partial) content when it is not blank, else the message's `refusal`,
  else "Blocked by the provider's content filter".
- otherwise a message with a non-empty `refusal` string (OpenAI structured outputs) →
  guardrail "model refusal"; the answer is the refusal text.

A `refusal` that is neither a string nor null makes the completion malformed.

Errors — the caller retries a `ProviderError` only when its status is None, 408, 429 or 5xx
(`http.is_retryable_status`):

- 5xx, 408, 429, connection errors, timeouts, a response without choices → `ProviderError`
  (retryable).
- 401/403 → `ProviderError(status=401|403)` whose message says "credentials rejected": not
  retryable, and the service names it so (docs/reference/runtimes.md). A secret the organization
  does not have is reported the same way (status 401, "credentials missing").
- Any other 4xx (bad request, unknown model, context too long) → `AgentCrashError`: the
  provider refused the request, so the attempt fails with `crash: true`.
- An address egress refuses → `EgressRefusedError` (an `AgentCrashError`, never retried).
"""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping
from typing import Any

from chalicelib.adapters.egress import Egress
from chalicelib.adapters.runtimes.answer_payload import usage_from
from chalicelib.adapters.runtimes.openai_loop import run_tool_loop
from chalicelib.adapters.runtimes.spec_fields import (
    check_headers,
    check_secret_name,
    refuse_api_key_env,
    require_url,
    resolve_headers,
    secret_value,
)
from chalicelib.adapters.runtimes.transport import (
    HttpTransport,
    check_timeout,
    clip,
    decode_json,
    raise_for_status,
)
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import AgentAnswer, CaseRequest, ToolCall
from chalicelib.domain.tools import ToolSpec, check_max_steps, parse_tools
from chalicelib.errors import AgentCrashError, InvalidInputError, ProviderError
from chalicelib.services.ports import AskContext

DEFAULT_TEMPERATURE = 0.0
"""Temperature sent when the spec sets none (judges rely on 0 for repeatable grades)."""

CONTENT_FILTER_GUARDRAIL = "provider content filter"
"""`AgentAnswer.guardrail` when the provider's content filter stopped the completion."""

CONTENT_FILTER_ANSWER = "Blocked by the provider's content filter"
"""The answer of a content-filtered completion that carries no text."""

REFUSAL_GUARDRAIL = "model refusal"
"""`AgentAnswer.guardrail` when the model refused (the message's `refusal` field)."""


class OpenAIRuntime:
    """Asks an OpenAI-compatible chat-completions endpoint (`AgentRuntime`)."""

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
        """Check every field of an `openai` spec, and `base_url`'s address.

        Raises:
            InvalidInputError: naming the field at fault (`spec.base_url`, `spec.model`,
                `spec.api_key_env` (always refused), `spec.api_key_secret`, `spec.system_prompt`,
                `spec.temperature`, `spec.max_tokens`, `spec.tools...`, `spec.max_steps`,
                `spec.extra_headers`).
        """
        check_spec(spec)
        self.egress.check(spec["base_url"], "spec.base_url")

    def ask(
        self, spec: dict[str, Any], request: CaseRequest, timeout_s: float, ctx: AskContext
    ) -> AgentAnswer:
        """Ask the case: one chat completion, or during an eval attempt (`ctx.tools`) the
        agent's whole tool loop (see the module docstring); one try either way.

        Args:
            spec: an `openai` spec (see the module docstring).
            request: the case; its history and input become the messages.
            timeout_s: bound on the whole exchange (every turn of a tool loop), in seconds.
            ctx: where `api_key_secret` and secret header values are read, and the attempt's
                tools.

        Returns:
            The answer: with a tool loop, no calls (`ctx.tools` keeps them); without, the tool
            calls recorded as `intended`.

        Raises:
            ProviderError: retryable failures, and 401/403 credentials rejected or missing (see
                module docstring for statuses).
            AgentCrashError: other 4xx, a malformed response, an address egress refuses, more than
                `max_steps` model turns or a loop of identical calls.
            InvalidInputError: the spec no longer passes its checks.
        """
        timeout_s = check_timeout(timeout_s)
        extra = check_spec(spec)
        url = spec["base_url"].rstrip("/") + "/chat/completions"
        source = f"provider {spec['base_url']}"
        headers, secret_names = resolve_headers(extra, ctx, source)
        if spec.get("api_key_secret"):
            headers = {k: v for k, v in headers.items() if k.lower() != "authorization"}
            headers["authorization"] = "Bearer " + secret_value(ctx, spec["api_key_secret"], source)
            secret_names |= {"authorization"}

        def complete(body: dict[str, Any], seconds: float) -> Any:
            status, raw = self._transport.post_json(
                url, body, headers, seconds, source, secret_headers=secret_names
            )
            raise_for_status(status, raw, source, credentials_retry=True)
            return decode_json(raw, source)

        tools = ctx.tools
        if tools is None:
            data = complete(build_chat_body(spec, request), timeout_s)
            return parse_chat_response(data, source, default_model=spec["model"])
        body = build_chat_body(spec, request, tools=tools.tools.values())

        def ask_turn(messages: list[dict[str, Any]], seconds: float) -> tuple[AgentAnswer, Any]:
            data = complete({**body, "messages": messages}, seconds)
            answer = parse_chat_response(data, source, default_model=spec["model"])
            return answer, data["choices"][0]["message"]  # parse_chat_response checked both

        return run_tool_loop(ask_turn, body["messages"], tools, timeout_s)

    def close(self) -> None:
        """Close the HTTP clients, if built."""
        self._transport.close()


def check_spec(spec: Mapping[str, Any]) -> dict[str, str | dict[str, str]]:
    """Check an `openai` spec's fields (not `base_url`'s address: see `Egress.check`).

    Returns:
        Its `extra_headers`, checked (see `http.check_headers`).

    Raises:
        InvalidInputError: naming the field at fault.
    """
    refuse_api_key_env(spec)
    require_url(spec, "base_url")
    model = spec.get("model")
    if not isinstance(model, str) or not model.strip():
        raise InvalidInputError("spec.model must be a non-empty string", field="spec.model")
    if spec.get("api_key_secret") is not None:
        check_secret_name(spec["api_key_secret"], "spec.api_key_secret")
    check_system_prompt(spec.get("system_prompt"), "spec.system_prompt")
    temperature = spec.get("temperature")
    if temperature is not None and (
        isinstance(temperature, bool)
        or not isinstance(temperature, int | float)
        or not 0 <= temperature <= 2
    ):
        raise InvalidInputError(
            "spec.temperature must be a number from 0 to 2", field="spec.temperature"
        )
    check_max_tokens(spec.get("max_tokens"), "spec.max_tokens")
    parse_tools(spec.get("tools"))
    check_max_steps(spec)
    return check_headers(spec.get("extra_headers"), "spec.extra_headers")


def check_system_prompt(value: Any, field: str) -> None:
    """Raise `InvalidInputError` (field `field`) unless `value` is None or a string."""
    if value is not None and not isinstance(value, str):
        raise InvalidInputError(f"{field} must be a string", field=field)


def check_max_tokens(value: Any, field: str) -> None:
    """Raise `InvalidInputError` (field `field`) unless `value` is None or a positive integer."""
    if value is not None and (isinstance(value, bool) or not isinstance(value, int) or value < 1):
        raise InvalidInputError(f"{field} must be a positive integer", field=field)


def build_chat_body(
    spec: Mapping[str, Any], request: CaseRequest, *, tools: Iterable[ToolSpec] | None = None
) -> dict[str, Any]:
    """The chat-completions request body for one case.

    Args:
        spec: a validated `openai` spec.
        request: the case.
        tools: the tools to send (an eval attempt's); None sends the spec's own `tools`. Either
            way they go as OpenAI functions, and `tools` is left out when there are none.

    Returns:
        `{"model", "messages", "temperature", "max_tokens"?, "tools"?}`.
    """
    messages: list[dict[str, Any]] = []
    if spec.get("system_prompt"):
        messages.append({"role": "system", "content": spec["system_prompt"]})
    messages.extend(dict(turn) for turn in request.history)
    messages.append({"role": "user", "content": request.input})
    temperature = spec.get("temperature")
    body: dict[str, Any] = {
        "model": spec["model"],
        "messages": messages,
        "temperature": DEFAULT_TEMPERATURE if temperature is None else temperature,
    }
    if spec.get("max_tokens") is not None:
        body["max_tokens"] = spec["max_tokens"]
    sent = [
        tool.openai_tool() for tool in (parse_tools(spec.get("tools")) if tools is None else tools)
    ]
    if sent:
        body["tools"] = sent
    return body


def parse_chat_response(data: Any, source: str, *, default_model: str | None = None) -> AgentAnswer:
    """Turn a chat-completions response into an `AgentAnswer`.

    Args:
        data: the decoded response JSON.
        source: names the provider in error messages.
        default_model: model when the response names none.

    Returns:
        The answer; a content-filtered or refused completion sets `guardrail` (see the
        module docstring) and its answer is the refusal text.

    Raises:
        ProviderError: no choices (some gateways answer 200 with only an `error`).
        AgentCrashError: a malformed choice, refusal or usage.
    """
    if not isinstance(data, dict) or not data.get("choices"):
        error = data.get("error") if isinstance(data, dict) else None
        detail = f": {clip(str(error))}" if error else ""
        raise ProviderError(f"{source} returned no answer{detail}")
    try:
        choice = data["choices"][0]
        message = choice["message"]
        answer = _content_text(message.get("content"))
        refusal = message.get("refusal")
        if refusal is not None and not isinstance(refusal, str):
            raise TypeError(f"message.refusal is {type(refusal).__name__}")
        refusal = (refusal or "").strip()
        guardrail: str | None = None
        if choice.get("finish_reason") == "content_filter":
            guardrail = CONTENT_FILTER_GUARDRAIL
            if not answer.strip():
                answer = refusal or CONTENT_FILTER_ANSWER
        elif refusal:
            guardrail, answer = REFUSAL_GUARDRAIL, refusal
        calls = [_tool_call(raw) for raw in message.get("tool_calls") or []]
        if message.get("function_call"):  # the pre-tools API some servers still speak
            calls.append(_tool_call({"function": message["function_call"]}))
        usage = usage_from(data.get("usage"))
    except (KeyError, IndexError, TypeError, ValueError, AttributeError) as exc:
        raise AgentCrashError(
            f"{source} returned a malformed completion: {clip(str(exc))}"
        ) from exc
    model = data.get("model") if isinstance(data.get("model"), str) else None
    return AgentAnswer(
        answer=answer,
        calls=calls,
        usage=usage,
        model=model or default_model,
        guardrail=guardrail,
    )


def _content_text(content: Any) -> str:
    """Message content as text: a string, None (tool calls only), or a list of text parts."""
    if content is None:
        return ""
    if isinstance(content, str):
        return content
    if isinstance(content, list):
        return "".join(part.get("text", "") for part in content if isinstance(part, dict))
    raise ValueError(f"message.content is {type(content).__name__}")


def _tool_call(raw: Any) -> ToolCall:
    function = raw["function"]
    arguments_text = function.get("arguments")
    arguments: Any
    if isinstance(arguments_text, dict):
        arguments = arguments_text
    elif not arguments_text:
        arguments = {}
    else:
        try:
            arguments = json.loads(arguments_text)
        except (ValueError, RecursionError):
            arguments = None
        if not isinstance(arguments, dict):
            # Models do emit broken JSON; keep the text so the scorer and a person can see it
            # (it will not match an expected call) instead of crashing the attempt.
            arguments = {"_unparsed": str(arguments_text)}
    return ToolCall(name=str(function["name"]), arguments=arguments, status=CallStatus.INTENDED)
