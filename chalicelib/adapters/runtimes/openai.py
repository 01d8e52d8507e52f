"""The `openai` runtime: any OpenAI-compatible chat-completions endpoint (DESIGN §8).

OpenAI, vLLM, Ollama, LiteLLM or a gateway. Spec::

    {"runtime": "openai",
     "base_url": "https://api.openai.com/v1",   # required; POST {base_url}/chat/completions
     "model": "gpt-4o-mini",                     # required
     "api_key_env": "OPENAI_API_KEY",            # optional: env var holding the key, read at
                                                 #   call time; absent = no Authorization header
     "system_prompt": "You are ...",             # optional
     "temperature": 0.0,                         # optional, 0..2, default 0.0
     "max_tokens": 512,                          # optional, > 0
     "tools": [{"type": "function", "function": {"name": ..., "parameters": {...}}}],
     "extra_headers": {"X-Gateway": "..."}}      # optional, object of strings

Messages sent: the system prompt (if any), the case history as given, then the case input as
the last user turn. The answer is `choices[0].message.content` ("" when the model only called
tools); each tool call becomes `ToolCall(status="intended")` with its JSON arguments parsed —
tools are never executed. Usage comes from `usage.prompt_tokens/completion_tokens`, the model
from the response's `model` (else the spec's).

Guardrail blocks (seed 004 "Results": graded as a refusal, neither a crash nor a provider
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
  retryable, and the service names it so (seed 004 "Results"). A missing `api_key_env`
  variable is reported the same way (status 401, "credentials missing").
- Any other 4xx (bad request, unknown model, context too long) → `AgentCrashError`: the
  provider refused the request, so the attempt fails with `crash: true`.
"""

from __future__ import annotations

import json
import os
import re
from collections.abc import Mapping
from typing import Any

from chalicelib.adapters.runtimes.http import (
    HttpTransport,
    check_timeout,
    clip,
    decode_json,
    raise_for_status,
    require_str_map,
    require_url,
    usage_from,
)
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import AgentAnswer, CaseRequest, ToolCall
from chalicelib.errors import AgentCrashError, InvalidInputError, ProviderError

DEFAULT_TEMPERATURE = 0.0
"""Temperature sent when the spec sets none (judges rely on 0 for repeatable grades)."""

CONTENT_FILTER_GUARDRAIL = "provider content filter"
"""`AgentAnswer.guardrail` when the provider's content filter stopped the completion."""

CONTENT_FILTER_ANSWER = "Blocked by the provider's content filter"
"""The answer of a content-filtered completion that carries no text."""

REFUSAL_GUARDRAIL = "model refusal"
"""`AgentAnswer.guardrail` when the model refused (the message's `refusal` field)."""

_ENV_NAME_RE = re.compile(r"^[A-Za-z_][A-Za-z0-9_]*$")


class OpenAIRuntime:
    """Asks an OpenAI-compatible chat-completions endpoint (`AgentRuntime`)."""

    def __init__(
        self,
        transport: HttpTransport | None = None,
        environ: Mapping[str, str] | None = None,
    ) -> None:
        """Args:
        transport: the HTTP client holder; default one built lazily on first `ask`.
        environ: where `api_key_env` is looked up at call time; default `os.environ`.
        """
        self._transport = transport or HttpTransport()
        self._environ = environ

    def validate(self, spec: dict[str, Any]) -> None:
        """Check every field of an `openai` spec.

        Raises:
            InvalidInputError: naming the field at fault (`spec.base_url`, `spec.model`,
                `spec.api_key_env`, `spec.system_prompt`, `spec.temperature`,
                `spec.max_tokens`, `spec.tools`, `spec.extra_headers`).
        """
        require_url(spec, "base_url")
        model = spec.get("model")
        if not isinstance(model, str) or not model.strip():
            raise InvalidInputError("spec.model must be a non-empty string", field="spec.model")
        env = spec.get("api_key_env")
        if env is not None and (not isinstance(env, str) or not _ENV_NAME_RE.match(env)):
            raise InvalidInputError(
                "spec.api_key_env must name an environment variable", field="spec.api_key_env"
            )
        prompt = spec.get("system_prompt")
        if prompt is not None and not isinstance(prompt, str):
            raise InvalidInputError(
                "spec.system_prompt must be a string", field="spec.system_prompt"
            )
        temperature = spec.get("temperature")
        if temperature is not None and (
            isinstance(temperature, bool)
            or not isinstance(temperature, int | float)
            or not 0 <= temperature <= 2
        ):
            raise InvalidInputError(
                "spec.temperature must be a number from 0 to 2", field="spec.temperature"
            )
        max_tokens = spec.get("max_tokens")
        if max_tokens is not None and (
            isinstance(max_tokens, bool) or not isinstance(max_tokens, int) or max_tokens < 1
        ):
            raise InvalidInputError(
                "spec.max_tokens must be a positive integer", field="spec.max_tokens"
            )
        _validate_tools(spec.get("tools"))
        require_str_map(spec, "extra_headers")

    def ask(self, spec: dict[str, Any], request: CaseRequest, timeout_s: float) -> AgentAnswer:
        """Send one chat completion for the case; one try.

        Args:
            spec: an `openai` spec (see the module docstring).
            request: the case; its history and input become the messages.
            timeout_s: bound on the whole exchange, in seconds.

        Returns:
            The answer, with tool calls recorded as `intended`.

        Raises:
            ProviderError: retryable failures, and 401/403 credentials rejected (see module
                docstring for statuses).
            AgentCrashError: other 4xx, a malformed response.
        """
        timeout_s = check_timeout(timeout_s)
        self.validate(spec)
        url = spec["base_url"].rstrip("/") + "/chat/completions"
        source = f"provider {spec['base_url']}"
        headers = dict(require_str_map(spec, "extra_headers"))
        headers.update(self._auth_header(spec, source))
        status, body = self._transport.post_json(
            url, build_chat_body(spec, request), headers, timeout_s, source
        )
        raise_for_status(status, body, source, credentials_retry=True)
        return parse_chat_response(decode_json(body, source), source, default_model=spec["model"])

    def close(self) -> None:
        """Close the HTTP client, if built."""
        self._transport.close()

    def _auth_header(self, spec: Mapping[str, Any], source: str) -> dict[str, str]:
        env = spec.get("api_key_env")
        if not env:
            return {}
        environ = os.environ if self._environ is None else self._environ
        key = environ.get(env)
        if not key:
            # Same status as a rejected key: retrying cannot help, the service names it.
            raise ProviderError(
                f"{source}: credentials missing: environment variable {env} is not set",
                status=401,
            )
        return {"authorization": f"Bearer {key}"}


def build_chat_body(spec: Mapping[str, Any], request: CaseRequest) -> dict[str, Any]:
    """The chat-completions request body for one case.

    Args:
        spec: a validated `openai` spec.
        request: the case.

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
    if spec.get("tools"):
        body["tools"] = spec["tools"]
    return body


def parse_chat_response(
    data: Any, source: str, *, default_model: str | None = None
) -> AgentAnswer:
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
        return "".join(
            part.get("text", "") for part in content if isinstance(part, dict)
        )
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
        except ValueError:
            arguments = None
        if not isinstance(arguments, dict):
            # Models do emit broken JSON; keep the text so the scorer and a person can see it
            # (it will not match an expected call) instead of crashing the attempt.
            arguments = {"_unparsed": str(arguments_text)}
    return ToolCall(name=str(function["name"]), arguments=arguments, status=CallStatus.INTENDED)


def _validate_tools(tools: Any) -> None:
    if tools is None:
        return
    if not isinstance(tools, list):
        raise InvalidInputError("spec.tools must be a list of tool schemas", field="spec.tools")
    for i, tool in enumerate(tools):
        function = tool.get("function") if isinstance(tool, dict) else None
        if (
            not isinstance(tool, dict)
            or tool.get("type", "function") != "function"
            or not isinstance(function, dict)
            or not isinstance(function.get("name"), str)
            or not function["name"]
        ):
            raise InvalidInputError(
                f"spec.tools[{i}] must be {{'type': 'function', 'function': {{'name': ...}}}}",
                field=f"spec.tools[{i}]",
            )
