"""The `openai` runtime's tool loop during an eval attempt (docs/guides/tools.md).

During an eval attempt the `openai` runtime is the agent's loop: it sends the attempt's tools
(the spec's and the built-in workspace tools) with the messages, and while the model's message
calls tools it makes each call through the attempt's `ToolCaller` (which decides, makes if
allowed, and keeps it) and asks the model again with the results:

1. ask the model (one turn);
2. a message that carries a guardrail (content filter, refusal), or calls no tool, ends the
   loop: its text is the answer;
3. otherwise the assistant message (with its `tool_calls`) is appended, then for each call, in
   order, `{"role": "tool", "tool_call_id": id, "content": json of ToolReply.for_agent()}`
   (a legacy `function_call` gets `{"role": "function", "name": name, "content": ...}`);
   arguments that are not a JSON object are passed as `{"_unparsed": text}`, which the
   `ToolCaller` keeps blocked as failing the schema;
4. back to 1.

Bounds (each an `AgentCrashError`: the attempt fails with `crash: true`):

- `max_steps` model turns: a turn numbered `max_steps` that still calls tools means the agent
  needs more; its calls are not made (no turn would read their results).
- a loop: after each call, `ToolCaller.loop_at()` not None (the same call with equal arguments
  several times in a row) stops the attempt, naming the call.

The whole loop runs within one deadline, `timeout_s` from its start: every turn is sent with the
seconds left, and none is sent once they are spent (`ProviderError`, status None, as any timeout).

The answer's usage is the sum of every turn's, its model the last turn's, and it carries no calls:
the `ToolCaller` keeps them (in the order made).
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable, Mapping
from typing import Any

from chalicelib.domain.models import AgentAnswer, ToolCall, Usage
from chalicelib.errors import AgentCrashError, ProviderError
from chalicelib.services.ports import ToolCaller

AskTurn = Callable[[list[dict[str, Any]], float], tuple[AgentAnswer, Mapping[str, Any]]]
"""`ask_turn(messages, seconds_left) -> (answer, message)`: one chat completion of `messages`.

`answer` is the turn parsed (its calls `intended`, in the message's order: every `tool_calls`
entry, then a legacy `function_call`, arguments that are not a JSON object as
`{"_unparsed": text}`); `message` is the response's `choices[0].message` as received."""


def run_tool_loop(
    ask_turn: AskTurn,
    messages: list[dict[str, Any]],
    tools: ToolCaller,
    timeout_s: float,
    *,
    clock: Callable[[], float] = time.monotonic,
) -> AgentAnswer:
    """Run the agent's tool loop (see the module docstring) from `messages` (system prompt,
    history, the case input; extended in place with every turn and tool result).

    Args:
        ask_turn: sends one turn (see `AskTurn`).
        messages: the conversation so far.
        tools: the attempt's tools; every call goes through `tools.call`.
        timeout_s: bound on the whole loop, in seconds.
        clock: monotonic seconds (tests give their own).

    Returns:
        The last turn's answer (text, model, guardrail) with the usage of every turn summed and no
        calls.

    Raises:
        AgentCrashError: more than `tools.max_steps` turns needed, a loop of identical calls, or
            whatever `ask_turn` raises as a crash.
        ProviderError: the deadline passed before a turn could be sent, or `ask_turn`'s own.
    """
    deadline = clock() + timeout_s
    max_steps = tools.max_steps
    input_tokens = output_tokens = 0
    for step in range(1, max_steps + 1):
        left = deadline - clock()
        if left <= 0:
            raise ProviderError(
                f"the agent's tool loop timed out after {timeout_s:g}s ({step - 1} model turns)"
            )
        answer, message = ask_turn(messages, left)
        input_tokens += answer.usage.input_tokens
        output_tokens += answer.usage.output_tokens
        usage = Usage(input_tokens=input_tokens, output_tokens=output_tokens)
        if answer.guardrail is not None or not answer.calls:
            return answer.model_copy(update={"calls": [], "usage": usage})
        if step == max_steps:
            names = ", ".join(call.name for call in answer.calls)
            raise AgentCrashError(
                f"the agent took more than {max_steps} steps: model turn {max_steps} still "
                f"called tools ({names[:200]})"
            )
        ids = _call_ids(message, len(answer.calls), step)
        messages.append(_assistant_message(message, answer.calls, ids))
        for call, call_id in zip(answer.calls, ids, strict=True):
            reply = tools.call(call.name, call.arguments)
            content = json.dumps(reply.for_agent(), ensure_ascii=False, default=str)
            if call_id is None:  # the legacy function_call
                messages.append({"role": "function", "name": call.name, "content": content})
            else:
                messages.append({"role": "tool", "tool_call_id": call_id, "content": content})
            if tools.loop_at() is not None:
                raise AgentCrashError(
                    f"the agent is in a loop: it called {call.name} "
                    f"{_arguments_text(call)} again and again with the same arguments"
                )
    raise AssertionError("unreachable: the last allowed turn returns or raises")  # pragma: no cover


def _call_ids(message: Mapping[str, Any], count: int, step: int) -> list[str | None]:
    """Each call's id, in the answer's order: a `tool_calls` entry's own id (one made up when it
    has none), None for a legacy `function_call`."""
    raw_calls = message.get("tool_calls") or []
    ids: list[str | None] = []
    for i, raw in enumerate(raw_calls):
        given = raw.get("id") if isinstance(raw, Mapping) else None
        ids.append(given if isinstance(given, str) and given else f"call_{step}_{i}")
    ids.extend([None] * (count - len(ids)))
    return ids


def _assistant_message(
    message: Mapping[str, Any], calls: list[ToolCall], ids: list[str | None]
) -> dict[str, Any]:
    """The model's message as sent back in the next turn: its content and its calls, each with its
    id and its arguments as the text the model wrote."""
    out: dict[str, Any] = {"role": "assistant", "content": message.get("content")}
    raw_calls = list(message.get("tool_calls") or [])
    tool_calls = []
    for raw, call_id in zip(raw_calls, ids, strict=False):
        function = raw["function"]
        tool_calls.append(
            {
                "id": call_id,
                "type": "function",
                "function": {"name": function["name"], "arguments": _arguments_sent(function)},
            }
        )
    if tool_calls:
        out["tool_calls"] = tool_calls
    if len(calls) > len(raw_calls):  # the legacy function_call
        function = message["function_call"]
        out["function_call"] = {"name": function["name"], "arguments": _arguments_sent(function)}
    return out


def _arguments_sent(function: Mapping[str, Any]) -> str:
    """A call's arguments as the text sent back to the model (some servers send an object)."""
    raw = function.get("arguments")
    if isinstance(raw, str):
        return raw
    return json.dumps(raw if raw is not None else {}, ensure_ascii=False)


def _arguments_text(call: ToolCall) -> str:
    """A call's arguments for a message, cut to 200 characters."""
    text = json.dumps(call.arguments, ensure_ascii=False, sort_keys=True, default=str)
    return text if len(text) <= 200 else text[:199] + "…"
