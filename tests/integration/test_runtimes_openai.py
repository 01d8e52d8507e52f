"""The `openai` runtime against the fake OpenAI server, run as a real subprocess on 127.0.0.1
(private networks allowed, as on `assay dev`); keys are the organization's secrets, read through the
`AskContext`."""

from __future__ import annotations

import json
import time
from collections.abc import Iterator

import pytest

from chalicelib.adapters.egress import Egress, EgressRefusedError
from chalicelib.adapters.runtimes.openai import OpenAIRuntime
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import CaseRequest
from chalicelib.errors import (
    AgentCrashError,
    InvalidInputError,
    ProviderError,
    is_retryable_status,
)
from chalicelib.services.ports import AskContext
from tests.support.egress import stub_egress
from tests.support.fake_openai import FakeOpenAI, at_turn, completion

SECRETS = {"fake-key": "sk-test-123", "gateway": "gw-456"}
CTX = AskContext("org-1", secret=SECRETS.get)


NAMES: dict[str, list[str]] = {"meta.test": ["169.254.169.254"], "api.example": ["8.8.8.8"]}


def local_egress(private: bool = True) -> Egress:
    return stub_egress(NAMES, private)


def completion_with(**message: object) -> dict:
    """A raw chat.completion whose only message has these fields (OpenAI always sends
    `refusal`, null unless the model refused)."""
    return {
        "id": "x",
        "model": "raw-model",
        "choices": [
            {"index": 0, "message": {"role": "assistant", **message}, "finish_reason": "stop"}
        ],
    }


SCRIPT = {
    "rules": [
        {
            "match": "What is 2+2?",
            "answer": "4",
            "usage": {"prompt_tokens": 21, "completion_tokens": 1},
            "model": "fake-4o-2024",
        },
        {
            "match": "weather?",
            "tool_calls": [
                {"name": "get_weather", "arguments": {"city": "Paris", "unit": "C"}},
                {"name": "broken", "arguments": "{not json"},
            ],
        },
        {"match": "boom500", "status": 500},
        {"match": "busy", "status": 429, "error": "rate limited"},
        {"match": "slowpoke", "status": 408},
        {"match": "badkey", "status": 401, "error": "Incorrect API key provided"},
        {"match": "badreq", "status": 400, "error": "context too long"},
        {"match": "flaky", "fail_status": 503, "fail_times": 1, "answer": "recovered"},
        {"match": "sleepy", "delay_ms": 1500, "answer": "too late"},
        {"match": "empty", "raw": {"id": "x", "choices": []}},
        {"contains": "grade this", "answer": {"passed": True, "score": 1.0, "reason": "ok"}},
        {"match": "filtered", "finish_reason": "content_filter", "answer": None},
        {"match": "filtered blank", "finish_reason": "content_filter", "answer": "  "},
        {"match": "filtered partial", "finish_reason": "content_filter", "answer": "Step one is"},
        {
            "match": "refused",
            "refusal": "I'm sorry, I can't help with that.",
            "usage": {"prompt_tokens": 9, "completion_tokens": 8},
        },
        {"match": "refused and filtered", "refusal": "No.", "finish_reason": "content_filter"},
        {"match": "null refusal", "raw": completion_with(content="fine", refusal=None)},
        {"match": "empty refusal", "raw": completion_with(content="fine", refusal="")},
        {"match": "bad refusal", "raw": completion_with(content=None, refusal=5)},
    ]
}


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(SCRIPT) as server:
        yield server


@pytest.fixture()
def runtime() -> Iterator[OpenAIRuntime]:
    rt = OpenAIRuntime(egress=local_egress())
    yield rt
    rt.close()


def spec(fake: FakeOpenAI, **extra: object) -> dict:
    return {"runtime": "openai", "base_url": fake.base_url, "model": "fake-4o", **extra}


def case(text: str, history: list | None = None) -> CaseRequest:
    return CaseRequest(run_id="r1", case_id="c1", attempt=1, input=text, history=history or [])


def test_answer_usage_and_model(fake: FakeOpenAI, runtime: OpenAIRuntime) -> None:
    answer = runtime.ask(spec(fake), case("What is 2+2?"), timeout_s=5, ctx=CTX)
    assert answer.answer == "4"
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (21, 1)
    assert answer.model == "fake-4o-2024"
    assert answer.calls == []


def test_outside_an_eval_attempt_tool_calls_are_recorded_as_intended(
    fake: FakeOpenAI, runtime: OpenAIRuntime
) -> None:
    tools = [
        {"type": "function", "function": {"name": "get_weather", "parameters": {}}},
        {
            "name": "broken",
            "description": "Never works",
            "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}},
            "effect": "read",
            "connection_id": "weather",
        },
    ]
    answer = runtime.ask(spec(fake, tools=tools), case("weather?"), timeout_s=5, ctx=CTX)
    assert answer.answer == ""
    assert [c.name for c in answer.calls] == ["get_weather", "broken"]
    assert all(c.status is CallStatus.INTENDED for c in answer.calls)
    assert answer.calls[0].arguments == {"city": "Paris", "unit": "C"}
    assert answer.calls[1].arguments == {"_unparsed": "{not json"}
    sent = fake.requests()[-1]["body"]
    # both shapes go as OpenAI functions; effect and connection are assay's, never sent
    assert sent["tools"] == [
        {
            "type": "function",
            "function": {"name": "get_weather", "parameters": {"type": "object", "properties": {}}},
        },
        {
            "type": "function",
            "function": {
                "name": "broken",
                "description": "Never works",
                "parameters": {"type": "object", "properties": {"x": {"type": "integer"}}},
            },
        },
    ]


@pytest.mark.parametrize(("text", "status"), [("boom500", 500), ("busy", 429), ("slowpoke", 408)])
def test_retryable_statuses_raise_provider_error(
    fake: FakeOpenAI, runtime: OpenAIRuntime, text: str, status: int
) -> None:
    with pytest.raises(ProviderError) as info:
        runtime.ask(spec(fake), case(text), timeout_s=5, ctx=CTX)
    assert info.value.status == status
    assert is_retryable_status(info.value.status)


def test_rejected_credentials_are_a_non_retryable_provider_error(
    fake: FakeOpenAI, runtime: OpenAIRuntime
) -> None:
    with pytest.raises(ProviderError) as info:
        runtime.ask(spec(fake, api_key_secret="fake-key"), case("badkey"), timeout_s=5, ctx=CTX)
    assert info.value.status == 401
    assert "credentials rejected" in str(info.value)
    assert "Incorrect API key" in str(info.value)
    assert not is_retryable_status(info.value.status)


def test_a_missing_secret_is_reported_as_credentials_missing(
    fake: FakeOpenAI, runtime: OpenAIRuntime
) -> None:
    fake.reset()
    with pytest.raises(ProviderError) as info:
        runtime.ask(
            spec(fake, api_key_secret="not-stored"), case("What is 2+2?"), timeout_s=5, ctx=CTX
        )
    assert info.value.status == 401
    assert str(info.value).endswith(
        "credentials missing: secret not-stored is not set in this organization"
    )
    assert "environment" not in str(info.value)
    assert fake.requests() == []  # nothing was sent without the key


def test_the_process_environment_is_never_read(
    fake: FakeOpenAI, runtime: OpenAIRuntime, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setenv("ASSAY_JWT_SECRET", "the-signing-secret-0123456789")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "aws-secret-key-material")
    fake.reset()
    with pytest.raises(InvalidInputError) as info:
        runtime.ask(
            spec(fake, api_key_env="ASSAY_JWT_SECRET"), case("What is 2+2?"), timeout_s=5, ctx=CTX
        )
    assert info.value.field == "spec.api_key_env"
    with pytest.raises(
        ProviderError, match="credentials missing"
    ):  # a secret name is not a variable name
        runtime.ask(
            spec(fake, api_key_secret="AWS_SECRET_ACCESS_KEY"),
            case("What is 2+2?"),
            timeout_s=5,
            ctx=CTX,
        )
    assert fake.requests() == []


def test_other_4xx_is_a_crash(fake: FakeOpenAI, runtime: OpenAIRuntime) -> None:
    with pytest.raises(AgentCrashError, match="context too long"):
        runtime.ask(spec(fake), case("badreq"), timeout_s=5, ctx=CTX)


def test_each_ask_is_one_try(fake: FakeOpenAI, runtime: OpenAIRuntime) -> None:
    fake.set_script(SCRIPT)  # fresh rule counters
    with pytest.raises(ProviderError) as info:
        runtime.ask(spec(fake), case("flaky"), timeout_s=5, ctx=CTX)
    assert info.value.status == 503
    assert runtime.ask(spec(fake), case("flaky"), timeout_s=5, ctx=CTX).answer == "recovered"


def test_delay_past_timeout_is_a_provider_error(fake: FakeOpenAI, runtime: OpenAIRuntime) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out") as info:
        runtime.ask(spec(fake), case("sleepy"), timeout_s=0.3, ctx=CTX)
    assert time.monotonic() - started < 1.2
    assert info.value.status is None


def test_no_choices_is_no_answer(fake: FakeOpenAI, runtime: OpenAIRuntime) -> None:
    with pytest.raises(ProviderError, match="no answer"):
        runtime.ask(spec(fake), case("empty"), timeout_s=5, ctx=CTX)


def test_connection_refused_is_a_provider_error(runtime: OpenAIRuntime) -> None:
    dead = {"runtime": "openai", "base_url": "http://127.0.0.1:9/v1", "model": "m"}
    with pytest.raises(ProviderError) as info:
        runtime.ask(dead, case("hi"), timeout_s=2, ctx=CTX)
    assert info.value.status is None


def test_system_prompt_history_temperature_and_key_are_sent(
    fake: FakeOpenAI, runtime: OpenAIRuntime
) -> None:
    fake.reset()
    history = [
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello! How can I help?"},
    ]
    s = spec(
        fake,
        system_prompt="You are terse.",
        max_tokens=64,
        api_key_secret="fake-key",
        extra_headers={"X-Team": "evals", "X-Gateway-Key": {"secret": "gateway", "prefix": "gw "}},
    )
    answer = runtime.ask(s, case("What is 2+2?", history), timeout_s=5, ctx=CTX)
    assert answer.answer == "4"
    [received] = fake.requests()
    body = received["body"]
    assert received["path"] == "/v1/chat/completions"
    assert body["model"] == "fake-4o"
    assert body["temperature"] == 0.0
    assert body["max_tokens"] == 64
    assert body["messages"] == [
        {"role": "system", "content": "You are terse."},
        *history,
        {"role": "user", "content": "What is 2+2?"},
    ]
    assert received["headers"]["authorization"] == "Bearer sk-test-123"
    assert received["headers"]["x-team"] == "evals"
    assert received["headers"]["x-gateway-key"] == "gw gw-456"


def test_explicit_temperature_is_sent(fake: FakeOpenAI, runtime: OpenAIRuntime) -> None:
    fake.reset()
    runtime.ask(spec(fake, temperature=0.7), case("anything"), timeout_s=5, ctx=CTX)
    assert fake.requests()[0]["body"]["temperature"] == 0.7
    assert "authorization" not in fake.requests()[0]["headers"]


def test_default_rule_echoes(fake: FakeOpenAI, runtime: OpenAIRuntime) -> None:
    answer = runtime.ask(spec(fake), case("hello there"), timeout_s=5, ctx=CTX)
    assert answer.answer == "echo: hello there"
    assert answer.model == "fake-4o"
    assert answer.usage.output_tokens == 3


def test_plain_answers_carry_no_guardrail(fake: FakeOpenAI, runtime: OpenAIRuntime) -> None:
    assert runtime.ask(spec(fake), case("What is 2+2?"), timeout_s=5, ctx=CTX).guardrail is None
    assert runtime.ask(spec(fake), case("weather?"), timeout_s=5, ctx=CTX).guardrail is None


def test_content_filter_without_content_is_a_refusal(
    fake: FakeOpenAI, runtime: OpenAIRuntime
) -> None:
    for text in ("filtered", "filtered blank"):
        answer = runtime.ask(spec(fake), case(text), timeout_s=5, ctx=CTX)
        assert answer.guardrail == "provider content filter"
        assert answer.answer == "Blocked by the provider's content filter"
        assert answer.model == "fake-4o"


def test_content_filter_keeps_the_content_it_let_through(
    fake: FakeOpenAI, runtime: OpenAIRuntime
) -> None:
    answer = runtime.ask(spec(fake), case("filtered partial"), timeout_s=5, ctx=CTX)
    assert (answer.answer, answer.guardrail) == ("Step one is", "provider content filter")


def test_model_refusal_is_the_answer(fake: FakeOpenAI, runtime: OpenAIRuntime) -> None:
    answer = runtime.ask(spec(fake), case("refused"), timeout_s=5, ctx=CTX)
    assert answer.guardrail == "model refusal"
    assert answer.answer == "I'm sorry, I can't help with that."
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (9, 8)


def test_content_filter_with_a_refusal_answers_the_refusal(
    fake: FakeOpenAI, runtime: OpenAIRuntime
) -> None:
    answer = runtime.ask(spec(fake), case("refused and filtered"), timeout_s=5, ctx=CTX)
    assert (answer.answer, answer.guardrail) == ("No.", "provider content filter")


@pytest.mark.parametrize("text", ["null refusal", "empty refusal"])
def test_null_or_empty_refusal_is_no_guardrail(
    fake: FakeOpenAI, runtime: OpenAIRuntime, text: str
) -> None:
    answer = runtime.ask(spec(fake), case(text), timeout_s=5, ctx=CTX)
    assert (answer.answer, answer.guardrail) == ("fine", None)


def test_malformed_refusal_is_a_crash(fake: FakeOpenAI, runtime: OpenAIRuntime) -> None:
    with pytest.raises(AgentCrashError, match="malformed"):
        runtime.ask(spec(fake), case("bad refusal"), timeout_s=5, ctx=CTX)


def test_fake_finish_reason_and_refusal_rule_keys() -> None:
    body = {"model": "m", "messages": [{"role": "user", "content": "hi"}]}
    refused = completion({"refusal": "No.", "answer": "ignored"}, body, 0)
    [choice] = refused["choices"]
    assert choice["message"]["content"] is None
    assert choice["message"]["refusal"] == "No."
    assert choice["finish_reason"] == "stop"
    filtered = completion({"finish_reason": "content_filter", "answer": None}, body, 1)
    assert filtered["choices"][0]["message"] == {"role": "assistant", "content": None}
    assert filtered["choices"][0]["finish_reason"] == "content_filter"
    calls = completion({"tool_calls": [{"name": "t"}], "finish_reason": "length"}, body, 2)
    assert calls["choices"][0]["finish_reason"] == "length"
    assert completion({}, body, 3)["choices"][0]["message"]["content"] == "echo: hi"


def test_fake_turns_follow_the_conversation() -> None:
    rule = {
        "turns": [
            {"tool_calls": [{"name": "t", "arguments": {"page": "{turn}", "q": "{input}"}}]},
            {"echo_tools": True},
        ]
    }
    first = [{"role": "user", "content": "hi"}]
    asked = completion(at_turn(rule, {"messages": first}), {"messages": first}, 0)
    [call] = asked["choices"][0]["message"]["tool_calls"]
    assert json.loads(call["function"]["arguments"]) == {"page": "0", "q": "hi"}
    later = [
        {"role": "user", "content": "earlier"},
        {"role": "assistant", "content": "old"},
        *first,
        {"role": "assistant", "content": None, "tool_calls": [call]},
        {"role": "tool", "tool_call_id": call["id"], "content": '{"status": "executed"}'},
        {"role": "tool", "tool_call_id": "x", "content": "second"},
    ]
    answered = completion(at_turn(rule, {"messages": later}), {"messages": later}, 1)
    assert answered["choices"][0]["message"]["content"] == '{"status": "executed"}\nsecond'
    past = [*later, {"role": "assistant", "content": "x"}]
    assert at_turn(rule, {"messages": past})["echo_tools"] is True  # the last entry holds


def test_judge_style_json_answer(fake: FakeOpenAI, runtime: OpenAIRuntime) -> None:
    answer = runtime.ask(spec(fake), case("Please grade this answer: 4"), timeout_s=5, ctx=CTX)
    assert json.loads(answer.answer) == {"passed": True, "score": 1.0, "reason": "ok"}


def test_script_file_on_the_command_line(tmp_path) -> None:
    script = tmp_path / "script.json"
    script.write_text(json.dumps({"default": {"answer": "from file", "model": "file-model"}}))
    with FakeOpenAI(script_file=script) as server:
        answer = OpenAIRuntime(egress=local_egress()).ask(
            spec(server), case("anything"), timeout_s=5, ctx=CTX
        )
    assert (answer.answer, answer.model) == ("from file", "file-model")


@pytest.mark.parametrize(
    ("extra", "field"),
    [
        ({"base_url": "ftp://x"}, "spec.base_url"),
        ({"model": ""}, "spec.model"),
        ({"api_key_env": "not a name"}, "spec.api_key_env"),
        ({"api_key_env": "OPENAI_API_KEY"}, "spec.api_key_env"),
        ({"api_key_secret": "has space"}, "spec.api_key_secret"),
        ({"api_key_secret": ""}, "spec.api_key_secret"),
        (
            {"extra_headers": {"Authorization": "Bearer sk-abcdefghijklmnopqrstuvwxyz"}},
            "spec.extra_headers",
        ),
        ({"extra_headers": {"X-Key": {"secret": "k", "prefix": 5}}}, "spec.extra_headers"),
        ({"base_url": "http://169.254.169.254/v1"}, "spec.base_url"),
        ({"base_url": "https://meta.test/v1"}, "spec.base_url"),
        ({"base_url": "http://[::ffff:a9fe:a9fe]/v1"}, "spec.base_url"),
        ({"temperature": 3}, "spec.temperature"),
        ({"temperature": True}, "spec.temperature"),
        ({"max_tokens": 0}, "spec.max_tokens"),
        ({"tools": [{"type": "function"}]}, "spec.tools[0]"),
        ({"tools": {"name": "x"}}, "spec.tools"),
        ({"tools": [{"name": "has space"}]}, "spec.tools[0].name"),
        ({"tools": [{"name": "t", "effect": "delete"}]}, "spec.tools[0].effect"),
        ({"tools": [{"name": "t", "parameters": {"type": "string"}}]}, "spec.tools[0].parameters"),
        ({"tools": [{"name": "workspace_read"}]}, "spec.tools[0].name"),
        ({"max_steps": 0}, "spec.max_steps"),
        ({"max_steps": 51}, "spec.max_steps"),
        ({"max_steps": "10"}, "spec.max_steps"),
        ({"extra_headers": {"X": 1}}, "spec.extra_headers"),
        ({"system_prompt": 5}, "spec.system_prompt"),
    ],
)
def test_validate_names_the_field(extra: dict, field: str) -> None:
    base = {"runtime": "openai", "base_url": "https://api.example/v1", "model": "m"}
    with pytest.raises(InvalidInputError) as info:
        OpenAIRuntime(egress=local_egress()).validate({**base, **extra})
    assert info.value.field == field


def test_a_base_url_that_now_resolves_to_metadata_is_refused_when_asked(fake: FakeOpenAI) -> None:
    names = {"llm.test": ["127.0.0.1"]}
    rt = OpenAIRuntime(egress=Egress(lambda: lambda host, port: names[host], lambda: True))
    s = spec(
        fake, base_url=fake.base_url.replace("127.0.0.1", "llm.test"), api_key_secret="fake-key"
    )
    rt.validate(s)
    fake.reset()
    assert rt.ask(s, case("What is 2+2?"), timeout_s=5, ctx=CTX).answer == "4"
    names["llm.test"] = ["169.254.169.254"]
    with pytest.raises(EgressRefusedError, match="cloud metadata address"):
        rt.ask(s, case("What is 2+2?"), timeout_s=5, ctx=CTX)
    assert len(fake.requests()) == 1
