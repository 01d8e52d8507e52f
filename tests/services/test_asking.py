"""One model request on fakes (issue 11, scopes 6 and 7): what an agent sends is cleaned where it
enters, and figures past the operator's bounds are neither believed nor charged."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib.config import Settings
from chalicelib.domain.models import CaseRequest
from chalicelib.services import asking
from tests.fakes import FakeContainer

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
