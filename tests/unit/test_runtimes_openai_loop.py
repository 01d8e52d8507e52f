"""The `openai` runtime's tool loop during an eval attempt (docs/guides/tools.md), with a scripted
transport in place of the provider and a recording `ToolCaller` in place of the attempt's tools:
every call made through the tools in order, results fed back, usage summed, the step and loop
limits as crashes, and without tools the single completion of before."""

from __future__ import annotations

import copy
import json
from collections.abc import Callable, Mapping
from typing import Any

import pytest

from chalicelib.adapters.runtimes.openai import OpenAIRuntime
from chalicelib.adapters.runtimes.openai_loop import run_tool_loop
from chalicelib.domain.enums import CallStatus, ToolEffect
from chalicelib.domain.models import AgentAnswer, CaseRequest, Usage
from chalicelib.domain.tool_isolation import call_loop
from chalicelib.domain.tools import WORKSPACE_TOOLS, ToolReply, ToolSpec
from chalicelib.errors import AgentCrashError, ProviderError
from chalicelib.services.ports import AskContext

Reply = dict[str, Any] | Callable[[dict[str, Any]], dict[str, Any]]


class ScriptedTransport:
    """Answers each POST with the next scripted completion (a dict, or a function of the request
    body); keeps what was sent as it was at the time it was sent."""

    def __init__(self, *replies: Reply, status: int = 200) -> None:
        self.replies = list(replies)
        self.status = status
        self.sent: list[dict[str, Any]] = []
        self.timeouts: list[float] = []

    def post_json(
        self,
        url: str,
        body: Any,
        headers: Mapping[str, str],
        timeout_s: float,
        source: str,
        *,
        secret_headers: frozenset[str] = frozenset(),
    ) -> tuple[int, bytes]:
        self.sent.append(copy.deepcopy(body))
        self.timeouts.append(timeout_s)
        assert self.replies, f"no scripted reply left for request {len(self.sent)}"
        reply = self.replies.pop(0)
        data = reply(body) if callable(reply) else reply
        status = data.pop("_status", self.status) if isinstance(data, dict) else self.status
        return status, json.dumps(data).encode()

    def close(self) -> None:
        pass


class RecordingTools:
    """A `ToolCaller` that keeps every call and answers from `results` (by tool name): executed
    with that result, blocked for a tool it has none for."""

    def __init__(
        self,
        tools: tuple[ToolSpec, ...],
        results: Mapping[str, Any] | None = None,
        max_steps: int = 10,
    ) -> None:
        self._tools = {tool.name: tool for tool in tools}
        self.results = dict(results or {})
        self._max_steps = max_steps
        self.calls: list[tuple[str, Any]] = []

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        return self._tools

    @property
    def max_steps(self) -> int:
        return self._max_steps

    def call(self, name: str, arguments: Any) -> ToolReply:
        self.calls.append((name, arguments))
        if name in self.results:
            return ToolReply(CallStatus.EXECUTED, result=self.results[name], connection_id="shop")
        return ToolReply(CallStatus.BLOCKED, reason="a write with no test connection")

    def loop_at(self) -> int | None:
        return call_loop(self.calls, 3)

    def reset(self) -> None:
        self.calls = []


LOOKUP = ToolSpec(
    "lookup_order",
    "Find an order",
    {"type": "object", "properties": {"order_id": {"type": "string"}}},
    ToolEffect.READ,
    "shop",
)
REFUND = ToolSpec("refund", parameters={"type": "object"}, connection_id="shop")
TOOLS = (LOOKUP, REFUND, *WORKSPACE_TOOLS)
SPEC = {"runtime": "openai", "base_url": "https://llm.test/v1", "model": "m", "system_prompt": "S"}
REQUEST = CaseRequest(run_id="r1", case_id="c1", attempt=1, input="refund order A1")


def completion(
    content: str | None = None,
    calls: list[tuple[str, Any]] | None = None,
    *,
    usage: tuple[int, int] = (10, 2),
    model: str = "m-2024",
    finish: str | None = None,
    ids: bool = True,
) -> dict[str, Any]:
    """A chat.completion: `calls` as `(name, arguments)`, arguments a dict or the raw text."""
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if calls:
        message["tool_calls"] = [
            {
                **({"id": f"call_{i}"} if ids else {}),
                "type": "function",
                "function": {
                    "name": name,
                    "arguments": args if isinstance(args, str) else json.dumps(args),
                },
            }
            for i, (name, args) in enumerate(calls)
        ]
    return {
        "model": model,
        "choices": [
            {
                "index": 0,
                "message": message,
                "finish_reason": finish or ("tool_calls" if calls else "stop"),
            }
        ],
        "usage": {"prompt_tokens": usage[0], "completion_tokens": usage[1]},
    }


def ask(
    transport: ScriptedTransport, tools: RecordingTools | None, spec: Mapping[str, Any] = SPEC
) -> AgentAnswer:
    runtime = OpenAIRuntime(transport=transport)  # type: ignore[arg-type]
    return runtime.ask(dict(spec), REQUEST, 30, AskContext("org-1", tools=tools))


def test_calls_are_made_in_order_and_their_results_fed_back() -> None:
    transport = ScriptedTransport(
        completion(
            "Let me look.",
            [("lookup_order", {"order_id": "A1"}), ("refund", {"order_id": "A1"})],
            usage=(100, 20),
            model="m-turn-1",
        ),
        completion("Refund requested.", usage=(150, 5), model="m-turn-2"),
    )
    tools = RecordingTools(TOOLS, {"lookup_order": {"order_id": "A1", "total": 30}})
    answer = ask(transport, tools)

    assert tools.calls == [("lookup_order", {"order_id": "A1"}), ("refund", {"order_id": "A1"})]
    assert answer.answer == "Refund requested."
    assert answer.calls == []  # the attempt's tools keep them
    assert answer.usage == Usage(input_tokens=250, output_tokens=25)
    assert answer.model == "m-turn-2"
    first, second = transport.sent
    assert first["tools"] == [tool.openai_tool() for tool in TOOLS]
    assert second["tools"] == first["tools"]
    assert first["messages"] == [
        {"role": "system", "content": "S"},
        {"role": "user", "content": "refund order A1"},
    ]
    assert second["messages"][:2] == first["messages"]
    assert second["messages"][2] == {
        "role": "assistant",
        "content": "Let me look.",
        "tool_calls": [
            {
                "id": "call_0",
                "type": "function",
                "function": {"name": "lookup_order", "arguments": '{"order_id": "A1"}'},
            },
            {
                "id": "call_1",
                "type": "function",
                "function": {"name": "refund", "arguments": '{"order_id": "A1"}'},
            },
        ],
    }
    assert second["messages"][3:] == [
        {
            "role": "tool",
            "tool_call_id": "call_0",
            "content": json.dumps(
                {"status": "executed", "result": {"order_id": "A1", "total": 30}}
            ),
        },
        {
            "role": "tool",
            "tool_call_id": "call_1",
            "content": json.dumps(
                {
                    "status": "blocked",
                    "note": "blocked: this call was not executed during the evaluation",
                }
            ),
        },
    ]


def test_more_turns_than_max_steps_is_a_crash_and_the_last_turns_calls_are_not_made() -> None:
    transport = ScriptedTransport(
        *(completion(None, [("lookup_order", {"order_id": f"A{n}"})]) for n in range(3))
    )
    tools = RecordingTools(TOOLS, {"lookup_order": {}}, max_steps=3)
    with pytest.raises(AgentCrashError, match="the agent took more than 3 steps") as info:
        ask(transport, tools)
    assert "lookup_order" in str(info.value)
    assert len(transport.sent) == 3
    assert tools.calls == [
        ("lookup_order", {"order_id": "A0"}),
        ("lookup_order", {"order_id": "A1"}),
    ]


def test_the_same_call_again_and_again_is_a_crash_naming_it() -> None:
    transport = ScriptedTransport(
        *(completion(None, [("refund", {"order_id": "A1", "amount": 3})]) for _ in range(5))
    )
    tools = RecordingTools(TOOLS)
    with pytest.raises(AgentCrashError, match="loop") as info:
        ask(transport, tools)
    assert 'refund {"amount": 3, "order_id": "A1"}' in str(info.value)
    assert len(transport.sent) == 3  # the third identical call ended it
    assert len(tools.calls) == 3


def test_a_loop_within_one_turn_stops_before_its_other_calls() -> None:
    same = ("workspace_list", {})
    transport = ScriptedTransport(completion(None, [same, same, same, ("refund", {"x": 1})]))
    tools = RecordingTools(TOOLS)
    with pytest.raises(AgentCrashError, match="workspace_list"):
        ask(transport, tools)
    assert [name for name, _ in tools.calls] == ["workspace_list"] * 3


def test_arguments_that_are_not_json_reach_the_tools_unparsed() -> None:
    transport = ScriptedTransport(
        completion(None, [("refund", "{not json"), ("refund", "[1, 2]")]), completion("ok")
    )
    tools = RecordingTools(TOOLS)
    assert ask(transport, tools).answer == "ok"
    assert tools.calls == [
        ("refund", {"_unparsed": "{not json"}),
        ("refund", {"_unparsed": "[1, 2]"}),
    ]
    # the model is shown the text it wrote
    assert transport.sent[1]["messages"][-3]["tool_calls"][0]["function"]["arguments"] == (
        "{not json"
    )


def test_a_content_filter_on_a_turn_ends_the_loop_with_that_answer() -> None:
    transport = ScriptedTransport(
        completion(None, [("lookup_order", {"order_id": "A1"})], usage=(5, 1)),
        completion(
            "Partial", [("refund", {"order_id": "A1"})], usage=(7, 1), finish="content_filter"
        ),
    )
    tools = RecordingTools(TOOLS, {"lookup_order": {}})
    answer = ask(transport, tools)
    assert (answer.answer, answer.guardrail) == ("Partial", "provider content filter")
    assert answer.usage == Usage(input_tokens=12, output_tokens=2)
    assert tools.calls == [("lookup_order", {"order_id": "A1"})]  # the filtered turn's not made


def test_calls_without_ids_get_ids_and_a_legacy_function_call_gets_a_function_message() -> None:
    legacy = completion("thinking")
    legacy["choices"][0]["message"]["function_call"] = {
        "name": "refund",
        "arguments": '{"order_id": "B2"}',
    }
    transport = ScriptedTransport(
        completion(None, [("lookup_order", {"order_id": "A1"})], ids=False),
        legacy,
        completion("done"),
    )
    tools = RecordingTools(TOOLS, {"lookup_order": {"ok": True}})
    assert ask(transport, tools).answer == "done"
    assert tools.calls == [("lookup_order", {"order_id": "A1"}), ("refund", {"order_id": "B2"})]
    second, third = transport.sent[1]["messages"], transport.sent[2]["messages"]
    assert second[-2]["tool_calls"][0]["id"] == "call_1_0"
    assert second[-1]["tool_call_id"] == "call_1_0"
    assert third[-2] == {
        "role": "assistant",
        "content": "thinking",
        "function_call": {"name": "refund", "arguments": '{"order_id": "B2"}'},
    }
    assert third[-1]["role"] == "function" and third[-1]["name"] == "refund"


def test_a_provider_error_on_a_later_turn_is_raised_as_is() -> None:
    transport = ScriptedTransport(
        completion(None, [("lookup_order", {"order_id": "A1"})]),
        {"_status": 503, "error": {"message": "overloaded"}},
    )
    with pytest.raises(ProviderError) as info:
        ask(transport, RecordingTools(TOOLS, {"lookup_order": {}}))
    assert info.value.status == 503


def test_every_turn_gets_only_the_seconds_left_of_one_deadline() -> None:
    now = [100.0]

    def turn(messages: list[dict[str, Any]], seconds: float) -> tuple[AgentAnswer, Any]:
        seen.append(seconds)
        now[0] += 4.0  # each turn takes 4 s
        calls = [("lookup_order", {"order_id": f"A{len(seen)}"})]
        data = completion(None, calls)
        answer = AgentAnswer(
            answer="", calls=[{"name": n, "arguments": a} for n, a in calls], usage=Usage()
        )
        return answer, data["choices"][0]["message"]

    seen: list[float] = []
    tools = RecordingTools(TOOLS, {"lookup_order": {}})
    with pytest.raises(ProviderError, match="timed out after 10s") as info:
        run_tool_loop(turn, [], tools, 10.0, clock=lambda: now[0])
    assert seen == [10.0, 6.0, 2.0]
    assert info.value.status is None


def test_without_tools_one_completion_is_asked_and_its_calls_only_recorded() -> None:
    flat = [
        {
            "name": "refund",
            "description": "Refund an order",
            "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            "effect": "write",
            "connection_id": "shop",
        }
    ]
    transport = ScriptedTransport(completion("", [("refund", {"order_id": "A1"})]))
    answer = ask(transport, None, {**SPEC, "tools": flat})
    assert len(transport.sent) == 1
    assert [(c.name, c.arguments, c.status) for c in answer.calls] == [
        ("refund", {"order_id": "A1"}, CallStatus.INTENDED)
    ]
    # the flat shape goes as an OpenAI function; effect and connection stay assay's
    assert transport.sent[0]["tools"] == [
        {
            "type": "function",
            "function": {
                "name": "refund",
                "description": "Refund an order",
                "parameters": {"type": "object", "properties": {"order_id": {"type": "string"}}},
            },
        }
    ]


def test_without_tools_and_none_declared_no_tools_are_sent() -> None:
    transport = ScriptedTransport(completion("4"))
    assert ask(transport, None).answer == "4"
    assert "tools" not in transport.sent[0]
