"""An agent's answer bounded once where it is received: every value it holds is a JSON value that
can be serialised, measured, redacted and kept; what cannot be kept faithfully is named as the
problem that makes the answer malformed."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.domain import agent_output
from chalicelib.domain.agent_output import (
    MAX_CALLS_BYTES,
    MAX_NAME_CHARS,
    MAX_NESTING,
    MAX_VALUE_BYTES,
    NOT_JSON,
    TOO_DEEP,
    bound_answer,
    bound_call,
    bound_calls,
    bound_value,
)
from chalicelib.domain.bounds import tokens_over_bound
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import AgentAnswer, ToolCall, Usage


def _nested(levels: int) -> Any:
    """A list nested `levels` levels deep (1: `[]`)."""
    return json.loads("[" * levels + "]" * levels)


def _kept_json(answer: AgentAnswer) -> str:
    """What writing the answer does: its JSON, encoded."""
    text = json.dumps(answer.model_dump(mode="json"), ensure_ascii=False)
    text.encode("utf-8")
    return text


def test_a_value_nesting_exactly_the_bound_is_kept_as_it_is():
    value = _nested(MAX_NESTING)
    assert bound_value(value) == (value, None)


def test_a_value_nesting_one_level_deeper_is_kept_with_a_marker_and_named():
    kept, problem = bound_value(_nested(MAX_NESTING + 1))
    assert problem == f"nests deeper than {MAX_NESTING} levels"
    inner = kept
    for _ in range(MAX_NESTING - 1):
        inner = inner[0]
    assert inner == [TOO_DEEP]


def test_a_result_nested_900_deep_makes_the_answer_malformed_and_what_is_kept_serialises():
    answer = AgentAnswer(answer="42", calls=[ToolCall(name="t", result=_nested(900))])
    bounded = bound_answer(answer)
    assert bounded.problem == f"call 1 (t) result nests deeper than {MAX_NESTING} levels"
    assert TOO_DEEP in _kept_json(bounded.answer)


def test_arguments_nested_900_deep_are_named_as_the_arguments():
    deep = {"a": _nested(900)}
    answer = AgentAnswer(
        answer="42", calls=[ToolCall(name="ok"), ToolCall(name="s", arguments=deep)]
    )
    bounded = bound_answer(answer)
    assert bounded.problem == f"call 2 (s) arguments nests deeper than {MAX_NESTING} levels"
    assert bounded.answer.calls[0].arguments == {}
    _kept_json(bounded.answer)


def test_integers_past_38_digits_become_floats_and_past_a_float_are_malformed():
    assert bound_value(10**38 - 1) == (10**38 - 1, None)
    assert bound_value({"x": 10**60}) == ({"x": 1e60}, None)
    kept, problem = bound_value([10**400])
    assert kept == [NOT_JSON] and problem == "holds an integer too large to keep"


def test_non_finite_floats_are_kept_as_null_and_strings_are_cleaned_keys_too():
    value = {"n": float("nan"), "i": float("-inf"), "s\ud800": "a\x00", "t": ("x",)}
    assert bound_value(value) == ({"n": None, "i": None, "s\ufffd": "a\ufffd", "t": ["x"]}, None)


def test_integer_keys_are_kept_as_text_and_other_keys_are_malformed():
    assert bound_value({1: "a", -2: "b"}) == ({"1": "a", "-2": "b"}, None)
    kept, problem = bound_value({(1, 2): "a", "k": 1})
    assert kept == {"k": 1} and problem == "holds a key that is a tuple, not a string"
    kept, problem = bound_value({True: 1})
    assert kept == {} and problem == "holds a key that is a bool, not a string"


def test_a_value_that_is_not_json_is_kept_as_a_marker_and_named():
    kept, problem = bound_value({"s": {1, 2}, "b": b"x"})
    assert kept == {"s": NOT_JSON, "b": NOT_JSON}
    assert problem == "holds a set, which is not a JSON value"


def test_a_large_value_is_kept_cut_and_is_not_a_failure():
    kept, problem = bound_value({"text": "é" * MAX_VALUE_BYTES})
    assert problem is None
    assert kept["_truncated"] is True
    assert len(kept["text"].encode("utf-8")) <= MAX_VALUE_BYTES
    assert kept["text"].startswith('{"text": "éé')


def test_a_value_just_within_the_size_is_kept_whole():
    value = "x" * (MAX_VALUE_BYTES - 2)  # its JSON adds the two quotes
    assert bound_value(value) == (value, None)


def test_a_call_keeps_arguments_as_an_object_and_its_texts_cut():
    call = ToolCall.model_construct(
        name="n" * 1000,
        arguments=[1, 2],
        status=CallStatus.EXECUTED,
        result=None,
        connection_id=None,
        error="e" * 5000,
        reason=None,
    )
    kept, problem = bound_call(call)
    assert problem is None
    assert kept.arguments == {"_value": [1, 2]}
    assert len(kept.name) == MAX_NAME_CHARS and len(kept.error or "") == agent_output.MAX_TEXT_CHARS


def test_the_calls_together_drop_results_then_arguments_then_are_left_out():
    big = "r" * (MAX_VALUE_BYTES - 100)
    calls = [
        bound_call(ToolCall(name=f"t{i}", arguments={"a": big}, result=big))[0] for i in range(40)
    ]
    kept = bound_calls(calls)
    sizes = [len(json.dumps(call.model_dump(mode="json"))) for call in kept]
    assert sum(sizes) <= MAX_CALLS_BYTES
    assert kept[0].result == big and kept[0].arguments == {"a": big}
    dropped = [call for call in kept if "_dropped" in (call.result or {})]
    assert dropped, "past the bound, results are dropped"
    assert "_dropped" in kept[-1].arguments and len(kept) <= 40


def test_calls_past_the_bound_even_when_dropped_are_left_out():
    calls = [ToolCall(name="t" * MAX_NAME_CHARS) for _ in range(5000)]
    kept = bound_calls(calls)
    assert 0 < len(kept) < 5000
    assert sum(len(json.dumps(call.model_dump(mode="json"))) for call in kept) <= MAX_CALLS_BYTES


def test_an_answer_is_cleaned_and_its_model_and_guardrail_cut():
    answer = AgentAnswer(
        answer="42\ud800",
        model="m" * 100_000,
        guardrail="g\x00" * 5000,
        usage=Usage(input_tokens=10**40, output_tokens=1),
        cost_micros=7,
    )
    bounded = bound_answer(answer)
    assert bounded.problem is None
    kept = bounded.answer
    assert kept.answer == "42\ufffd" and kept.model == "m" * MAX_NAME_CHARS
    assert kept.guardrail is not None and len(kept.guardrail) == agent_output.MAX_TEXT_CHARS
    assert kept.usage.input_tokens == 10**40 and kept.cost_micros == 7
    _kept_json(kept)


def test_a_well_formed_answer_is_kept_equal():
    answer = AgentAnswer(
        answer="42",
        calls=[ToolCall(name="t", arguments={"a": [1, {"b": 2.5}]}, result={"ok": True})],
        model="gpt",
    )
    bounded = bound_answer(answer)
    assert bounded.problem is None and bounded.answer == answer


def test_a_token_count_too_long_to_print_is_said_in_scientific_form():
    reason = tokens_over_bound(10**5000, 1, 1_000, "the agent")
    assert reason is not None and "1E+5000 tokens" in reason


def test_an_answer_is_cleaned_in_its_text_calls_model_and_guardrail():
    answer = AgentAnswer(
        answer="42\ud800",
        calls=[ToolCall(name="look\x00up", arguments={"q": "\udc80"}, result=["r\ud800"])],
        model="m\ud800",
        guardrail="g\x00",
    )
    bounded = bound_answer(answer)
    assert bounded.problem is None
    cleaned = bounded.answer
    assert cleaned.answer == "42\ufffd" and cleaned.model == "m\ufffd"
    assert cleaned.guardrail == "g\ufffd"
    assert cleaned.calls[0].name == "look\ufffdup"
    assert cleaned.calls[0].arguments == {"q": "\ufffd"} and cleaned.calls[0].result == ["r\ufffd"]
    _kept_json(cleaned)


class _Unprintable:
    def __str__(self) -> str:
        raise RuntimeError("no")


def test_what_cannot_be_printed_is_described_instead():
    assert agent_output.printed("tool failed") == "tool failed"
    assert agent_output.printed(10**5000) == "a int that cannot be printed"
    assert agent_output.printed(_Unprintable()) == "a _Unprintable that cannot be printed"
