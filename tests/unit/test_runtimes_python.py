"""The `python` runtime: entrypoints written to a temporary module."""

from __future__ import annotations

import itertools
import textwrap
import time
from pathlib import Path

import pytest

from chalicelib.adapters.runtimes.python import PythonRuntime
from chalicelib.domain.enums import AttemptState, CallStatus
from chalicelib.domain.models import Case, CaseRequest, Check, ScoringConfig
from chalicelib.domain.scorers import grade
from chalicelib.errors import AgentCrashError, InvalidInputError, ProviderError

AGENT_SOURCE = '''
import time
from chalicelib.errors import ProviderError

def text_agent(request, options):
    return f"{options.get('prefix', '')}{request['input'].upper()}"

def dict_agent(request, options):
    return {
        "answer": "42",
        "calls": [{"name": "lookup", "arguments": {"q": request["case_id"]}}],
        "usage": {"input_tokens": 7, "output_tokens": 1},
        "model": "py-model",
        "cost_usd": 0.0003,
    }

def crashing_agent(request, options):
    raise KeyError("missing tool")

def provider_agent(request, options):
    raise ProviderError("upstream 503", status=503)

def mutating_agent(request, options):
    options["seen"] = True
    return "ok"

def slow_agent(request, options):
    time.sleep(options["sleep_s"])
    return "late"

def weird_agent(request, options):
    return 42

def guarded_agent(request, options):
    return {"guardrail": options["guardrail"], "model": "py-model"}

class Agents:
    @staticmethod
    def nested(request, options):
        return "nested"

NOT_CALLABLE = 3
'''

_counter = itertools.count()


@pytest.fixture()
def module(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> str:
    # A unique name per test: importlib caches modules by name.
    name = f"assay_test_agents_{next(_counter)}"
    (tmp_path / f"{name}.py").write_text(textwrap.dedent(AGENT_SOURCE))
    monkeypatch.syspath_prepend(str(tmp_path))
    return name


def request(text: str = "hello") -> CaseRequest:
    return CaseRequest(run_id="r", case_id="case-9", attempt=1, input=text)


def spec(module: str, function: str, **extra: object) -> dict:
    return {"runtime": "python", "entrypoint": f"{module}:{function}", **extra}


def test_returning_str_is_the_answer(module: str) -> None:
    rt = PythonRuntime()
    s = spec(module, "text_agent", options={"prefix": "> "})
    rt.validate(s)
    answer = rt.ask(s, request("hello"), timeout_s=2)
    assert answer.answer == "> HELLO"
    assert answer.calls == [] and answer.model is None


def test_returning_dict_is_an_answer_payload(module: str) -> None:
    answer = PythonRuntime().ask(spec(module, "dict_agent"), request(), timeout_s=2)
    assert answer.answer == "42"
    assert answer.calls[0].name == "lookup"
    assert answer.calls[0].arguments == {"q": "case-9"}
    assert answer.calls[0].status is CallStatus.EXECUTED
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (7, 1)
    assert answer.model == "py-model"
    assert answer.cost_micros == 300


def test_attribute_paths_resolve(module: str) -> None:
    assert PythonRuntime().ask(spec(module, "Agents.nested"), request(), 2).answer == "nested"


def test_raising_is_a_crash_with_the_text(module: str) -> None:
    with pytest.raises(AgentCrashError, match="KeyError: 'missing tool'"):
        PythonRuntime().ask(spec(module, "crashing_agent"), request(), timeout_s=2)


def test_provider_error_propagates(module: str) -> None:
    with pytest.raises(ProviderError) as info:
        PythonRuntime().ask(spec(module, "provider_agent"), request(), timeout_s=2)
    assert info.value.status == 503


def test_options_are_a_copy(module: str) -> None:
    s = spec(module, "mutating_agent", options={"a": 1})
    PythonRuntime().ask(s, request(), timeout_s=2)
    assert s["options"] == {"a": 1}


def test_timeout_is_a_provider_error(module: str) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out"):
        PythonRuntime().ask(
            spec(module, "slow_agent", options={"sleep_s": 1.0}), request(), timeout_s=0.1
        )
    assert time.monotonic() - started < 0.5


def test_a_guardrail_block_is_an_answer_graded_as_a_refusal(module: str) -> None:
    s = spec(module, "guarded_agent", options={"guardrail": {"blocked": True, "reason": "pii"}})
    answer = PythonRuntime().ask(s, request(), timeout_s=2)
    assert answer.guardrail == "pii"
    assert answer.answer == "Blocked by guardrail: pii"
    assert answer.model == "py-model"
    # A case that expects the agent to refuse passes on the refusal text.
    checks = [Check(scorer="icontains", value="blocked")]
    case = Case(case_id="case-9", input="leak it", checks=checks)
    graded = grade(case, answer, ScoringConfig(required=["icontains"]))
    assert graded.state is AttemptState.PASSED


def test_a_malformed_guardrail_is_a_crash(module: str) -> None:
    s = spec(module, "guarded_agent", options={"guardrail": 7})
    with pytest.raises(AgentCrashError, match="malformed"):
        PythonRuntime().ask(s, request(), timeout_s=2)


def test_a_non_answer_return_is_a_crash(module: str) -> None:
    with pytest.raises(AgentCrashError, match="int"):
        PythonRuntime().ask(spec(module, "weird_agent"), request(), timeout_s=2)


@pytest.mark.parametrize(
    "entrypoint",
    [
        "no_colon_here",
        "bad name:fn",
        "definitely_not_a_module_xyz:fn",
        "{module}:missing_function",
        "{module}:NOT_CALLABLE",
        None,
    ],
)
def test_bad_entrypoint_is_invalid_input(module: str, entrypoint: str | None) -> None:
    s = {"runtime": "python"}
    if entrypoint is not None:
        s["entrypoint"] = entrypoint.format(module=module)
    with pytest.raises(InvalidInputError) as info:
        PythonRuntime().validate(s)
    assert info.value.field == "spec.entrypoint"


def test_options_must_be_an_object(module: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        PythonRuntime().validate(spec(module, "text_agent", options=[1]))
    assert info.value.field == "spec.options"
