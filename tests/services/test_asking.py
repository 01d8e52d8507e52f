"""One model request on fakes (issue 11, scopes 6 and 7): what an agent sends is cleaned where it
enters, and figures past the operator's bounds are neither believed nor charged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib.config import Settings
from chalicelib.domain import agent_output
from chalicelib.domain.models import CaseRequest
from chalicelib.services import asking
from tests.fakes import FakeContainer
from tests.support import leaky_agent

MONTH = "2026-12"
REQUEST = CaseRequest(run_id="r1", case_id="c1", attempt=1, input="What is 6 x 7?")


@pytest.fixture
def c() -> FakeContainer:
    return FakeContainer(settings=Settings(assay_python_agent_modules="tests.support"))


def scripted(payload: dict[str, Any] | str, **extra: Any) -> dict[str, Any]:
    """A `python` agent answering the JSON text of `payload` (a str is sent as it is)."""
    text = payload if isinstance(payload, str) else json.dumps(payload)
    return {
        "runtime": "python",
        "entrypoint": "tests.support.agents:scripted",
        "options": {"payload": text},
        **extra,
    }


def spent(c: FakeContainer) -> int:
    return c.spend.read("acme", "a1", MONTH).org_spent_micros


def test_an_answer_with_lone_surrogates_and_nul_is_kept_with_replacement_characters(c):
    spec = scripted(
        '{"answer": "42 \\ud800 and \\u0000", "model": "m\\udfff",'
        ' "calls": [{"name": "look\\ud800", "arguments": {"q\\udc00": "\\ud800"}}]}'
    )
    asked = asking.ask(c, "acme", "a1", spec, REQUEST)
    assert asked.answer is not None
    assert asked.answer.answer == "42 \ufffd and \ufffd" and asked.answer.model == "m\ufffd"
    assert asked.answer.calls[0].name == "look\ufffd"
    assert asked.answer.calls[0].arguments == {"q\ufffd": "\ufffd"}


def test_a_crash_whose_message_holds_a_lone_surrogate_is_kept_with_a_replacement_character(c):
    asked = asking.ask(
        c, "acme", "a1", scripted('{"error": "boom \\ud800", "crash": true}'), REQUEST
    )
    assert asked.crash is not None and asked.answer is None
    assert "boom \ufffd" in str(asked.crash)
    str(asked.crash).encode("utf-8")


def test_a_reported_cost_past_the_bound_is_not_believed_and_nothing_is_charged(c):
    asked = asking.ask(c, "acme", "a1", scripted({"answer": "42", "cost_usd": "1e30"}), REQUEST)
    assert asked.answer is not None and asked.answer.answer == "42"
    assert asked.cost_micros == 0 and spent(c) == 0
    assert asked.over_bound == (
        "the agent reported a cost of $1E+30 for one request, over ASSAY_REQUEST_MAX_COST_USD "
        "($10.00): not believed, nothing charged"
    )


def test_a_cost_exactly_at_the_bound_is_charged(c):
    asked = asking.ask(c, "acme", "a1", scripted({"answer": "42", "cost_usd": "10"}), REQUEST)
    assert asked.over_bound is None
    assert asked.cost_micros == 10_000_000 and spent(c) == 10_000_000


def test_tokens_past_the_bound_are_not_believed_nor_priced(c):
    usage = {"input_tokens": 1_999_999, "output_tokens": 2}  # 2,000,001 > 2,000,000
    price = {"input_per_mtok_usd": "1", "output_per_mtok_usd": "1"}
    spec = scripted({"answer": "42", "usage": usage}, price=price)
    asked = asking.ask(c, "acme", "a1", spec, REQUEST)
    assert asked.over_bound == (
        "the agent reported 2,000,001 tokens for one request, over ASSAY_REQUEST_MAX_TOKENS "
        "(2,000,000): not believed, nothing charged"
    )
    assert asked.cost_micros == 0 and spent(c) == 0


def test_a_cost_priced_from_tokens_is_held_to_the_same_bound(c):
    # 1,000,000 input tokens at 11 USD per 1M: $11.00 > $10.00, though the tokens are within theirs.
    usage = {"input_tokens": 1_000_000, "output_tokens": 0}
    spec = scripted({"answer": "42", "usage": usage}, price={"input_per_mtok_usd": "11"})
    asked = asking.ask(c, "acme", "a1", spec, REQUEST, judge=True)
    assert asked.over_bound is not None
    assert asked.over_bound.startswith("the judge reported a cost of $11.00 for one request")
    assert spent(c) == 0


def test_the_bounds_are_the_operator_s(c):
    c.settings = Settings(
        assay_python_agent_modules="tests.support",
        assay_request_max_cost_usd="0.5",
        assay_request_max_tokens=100,
    )
    cheap = {"answer": "42", "cost_usd": "0.5", "usage": {"input_tokens": 60, "output_tokens": 40}}
    assert asking.ask(c, "acme", "a1", scripted(cheap), REQUEST).over_bound is None
    dear = {**cheap, "cost_usd": "0.500001"}
    assert "($0.50)" in str(asking.ask(c, "acme", "a1", scripted(dear), REQUEST).over_bound)
    wordy = {**cheap, "usage": {"input_tokens": 61, "output_tokens": 40}}
    assert "(100)" in str(asking.ask(c, "acme", "a1", scripted(wordy), REQUEST).over_bound)
    assert spent(c) == 500_000


def test_an_answer_nested_too_deeply_is_the_agent_s_crash_and_nothing_is_charged(c):
    deep = "[" * 900 + "]" * 900
    spec = scripted(
        '{"answer": "42", "cost_usd": "0.01", "calls": [{"name": "t", "result": ' + deep + "}]}"
    )
    asked = asking.ask(c, "acme", "a1", spec, REQUEST)
    assert asked.answer is None and asked.crash is not None
    assert str(asked.crash) == (
        "the agent returned a malformed answer: call 1 (t) result nests deeper than 24 levels"
    )
    assert asked.cost_micros == 0 and spent(c) == 0


def test_an_agent_s_own_error_with_a_huge_message_is_kept_cut(c):
    spec = {
        "runtime": "python",
        "entrypoint": "tests.support.leaky_agent:leaky",
        "options": {"payload_b64": leaky_agent.encode({"provider_error": "x" * 1_000_000})},
    }
    asked = asking.ask(c, "acme", "a1", spec, REQUEST)
    assert asked.provider_error is not None
    assert len(str(asked.provider_error)) == agent_output.MAX_ERROR_CHARS
    assert asked.provider_error.status == 503
