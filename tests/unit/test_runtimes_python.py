"""The `python` runtime: entrypoints written to a temporary module, allowed by the operator's
prefixes."""

from __future__ import annotations

import itertools
import sys
import textwrap
import time
from pathlib import Path

import pytest

from chalicelib.adapters.runtimes.python import PythonRuntime
from chalicelib.domain.enums import AttemptState, CallStatus
from chalicelib.domain.models import Case, CaseRequest, Check, ScoringConfig
from chalicelib.domain.scorers import grade
from chalicelib.domain.tools import ToolReply
from chalicelib.errors import AgentCrashError, InvalidInputError, ProviderError
from chalicelib.services.ports import AskContext

CTX = AskContext("org-1")

AGENT_SOURCE = """
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

def tools_agent(request, options, tools=None):
    if tools is None:
        return "no tools"
    reply = tools.call("lookup", {"q": request["case_id"]})
    return f"{','.join(tools.names)}: {reply['status']} {reply.get('result')}"

def keyword_agent(request, options, **more):
    return ",".join(sorted(more))

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

def huge_error_agent(request, options):
    raise ValueError(10 ** 5000)

def huge_reported_error_agent(request, options):
    return {"error": 10 ** 5000}

def _private_agent(request, options):
    return "private"

from os import getcwd
from os.path import join as joined
import subprocess

def guarded_agent(request, options):
    return {"guardrail": options["guardrail"], "model": "py-model"}

class Agents:
    @staticmethod
    def nested(request, options):
        return "nested"

NOT_CALLABLE = 3
"""

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


def rt(*prefixes: str) -> PythonRuntime:
    """A runtime whose operator allows `prefixes` (ASSAY_PYTHON_AGENT_MODULES)."""
    return PythonRuntime(lambda: ",".join(prefixes))


def test_returning_str_is_the_answer(module: str) -> None:
    runtime = rt(module)
    s = spec(module, "text_agent", options={"prefix": "> "})
    runtime.validate(s)
    answer = runtime.ask(s, request("hello"), timeout_s=2, ctx=CTX)
    assert answer.answer == "> HELLO"
    assert answer.calls == [] and answer.model is None


def test_returning_dict_is_an_answer_payload(module: str) -> None:
    answer = rt(module).ask(spec(module, "dict_agent"), request(), timeout_s=2, ctx=CTX)
    assert answer.answer == "42"
    assert answer.calls[0].name == "lookup"
    assert answer.calls[0].arguments == {"q": "case-9"}
    assert answer.calls[0].status is CallStatus.EXECUTED
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (7, 1)
    assert answer.model == "py-model"
    assert answer.cost_micros == 300


def test_attribute_paths_are_refused(module: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        rt(module).validate(spec(module, "Agents.nested"))
    assert info.value.field == "spec.entrypoint"


def test_raising_is_a_crash_with_the_text(module: str) -> None:
    with pytest.raises(AgentCrashError, match="KeyError: 'missing tool'"):
        rt(module).ask(spec(module, "crashing_agent"), request(), timeout_s=2, ctx=CTX)


@pytest.mark.parametrize("function", ["huge_error_agent", "huge_reported_error_agent"])
def test_an_error_too_large_to_print_is_a_crash_saying_so(module: str, function: str) -> None:
    with pytest.raises(AgentCrashError, match="a .* that cannot be printed"):
        rt(module).ask(spec(module, function), request(), timeout_s=2, ctx=CTX)


def test_provider_error_propagates(module: str) -> None:
    with pytest.raises(ProviderError) as info:
        rt(module).ask(spec(module, "provider_agent"), request(), timeout_s=2, ctx=CTX)
    assert info.value.status == 503


def test_options_are_a_copy(module: str) -> None:
    s = spec(module, "mutating_agent", options={"a": 1})
    rt(module).ask(s, request(), timeout_s=2, ctx=CTX)
    assert s["options"] == {"a": 1}


def test_timeout_is_a_provider_error(module: str) -> None:
    started = time.monotonic()
    with pytest.raises(ProviderError, match="timed out"):
        rt(module).ask(
            spec(module, "slow_agent", options={"sleep_s": 1.0}), request(), timeout_s=0.1, ctx=CTX
        )
    assert time.monotonic() - started < 0.5


def test_a_guardrail_block_is_an_answer_graded_as_a_refusal(module: str) -> None:
    s = spec(module, "guarded_agent", options={"guardrail": {"blocked": True, "reason": "pii"}})
    answer = rt(module).ask(s, request(), timeout_s=2, ctx=CTX)
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
        rt(module).ask(s, request(), timeout_s=2, ctx=CTX)


def test_a_non_answer_return_is_a_crash(module: str) -> None:
    with pytest.raises(AgentCrashError, match="int"):
        rt(module).ask(spec(module, "weird_agent"), request(), timeout_s=2, ctx=CTX)


@pytest.mark.parametrize(
    "entrypoint",
    [
        "no_colon_here",
        "bad name:fn",
        "definitely_not_a_module_xyz:fn",
        "{module}:missing_function",
        "{module}:NOT_CALLABLE",
        "{module}:_private_agent",
        "{module}:__import__",
        "{module}:__builtins__",
        "{module}:getcwd",
        "{module}:joined",
        "{module}:subprocess",
        "{module}:subprocess.run",
        "{module}.sub:text_agent",
        "{module}:text_agent\n",
        None,
    ],
)
def test_bad_entrypoint_is_invalid_input(module: str, entrypoint: str | None) -> None:
    s = {"runtime": "python"}
    if entrypoint is not None:
        s["entrypoint"] = entrypoint.format(module=module)
    with pytest.raises(InvalidInputError) as info:
        rt(module).validate(s)
    assert info.value.field == "spec.entrypoint"


def test_options_must_be_an_object(module: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        rt(module).validate(spec(module, "text_agent", options=[1]))
    assert info.value.field == "spec.options"


def test_with_no_allowed_modules_python_is_refused_naming_the_setting(module: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        PythonRuntime().validate(spec(module, "text_agent"))
    assert info.value.field == "spec.runtime"
    assert "ASSAY_PYTHON_AGENT_MODULES" in info.value.message
    with pytest.raises(InvalidInputError):
        rt(" ", "").ask(spec(module, "text_agent"), request(), timeout_s=2, ctx=CTX)


@pytest.mark.parametrize(
    "entrypoint",
    [
        "os:getcwd",
        "subprocess:run",
        "builtins:eval",
        "importlib:import_module",
        "chalicelib.config:get_settings",
    ],
)
def test_a_module_outside_the_prefixes_is_refused(module: str, entrypoint: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        rt(module).validate({"runtime": "python", "entrypoint": entrypoint})
    assert info.value.field == "spec.entrypoint"
    assert "ASSAY_PYTHON_AGENT_MODULES" in info.value.message


def test_a_module_outside_the_prefixes_is_never_imported(
    tmp_path: Path, monkeypatch: pytest.MonkeyPatch, module: str
) -> None:
    name = f"assay_unlisted_{next(_counter)}"
    marker = tmp_path / "imported"
    (tmp_path / f"{name}.py").write_text(
        f"open({str(marker)!r}, 'w').close()\ndef agent(r, o):\n    return 'x'\n"
    )
    monkeypatch.syspath_prepend(str(tmp_path))
    with pytest.raises(InvalidInputError):
        rt(module).validate({"runtime": "python", "entrypoint": f"{name}:agent"})
    assert name not in sys.modules and not marker.exists()


def test_the_refusal_reads_the_same_whether_an_unlisted_module_exists(module: str) -> None:
    messages = []
    for unlisted in ("json", "no_such_module_xyz_123"):
        with pytest.raises(InvalidInputError) as info:
            rt(module).validate({"runtime": "python", "entrypoint": f"{unlisted}:loads"})
        messages.append(info.value.message.replace(unlisted, "<m>"))
    assert messages[0] == messages[1]


def test_a_prefix_allows_its_submodules_only_at_a_dot(module: str) -> None:
    assert rt(module).prefixes() == (module,)
    with pytest.raises(InvalidInputError) as info:
        rt(module[:-1]).validate(
            spec(module, "text_agent")
        )  # "assay_test_agents_1" is not under "..._"
    assert "ASSAY_PYTHON_AGENT_MODULES" in info.value.message
    rt("json", module).validate(spec(module, "text_agent"))


def test_the_setting_is_read_when_asked(module: str) -> None:
    allowed = [module]
    runtime = PythonRuntime(lambda: ",".join(allowed))
    s = spec(module, "text_agent")
    runtime.validate(s)
    allowed.clear()
    with pytest.raises(InvalidInputError) as info:
        runtime.ask(s, request(), timeout_s=2, ctx=CTX)
    assert info.value.field == "spec.runtime"


class _Tools:
    """An attempt's tools as a runtime sees them (`ToolCaller`): one `lookup` that answers from a
    recording, every call kept."""

    def __init__(self) -> None:
        self.calls: list[tuple[str, object]] = []

    @property
    def tools(self) -> dict[str, object]:
        return {"lookup": object(), "workspace_read": object()}

    @property
    def max_steps(self) -> int:
        return 10

    def call(self, name: str, arguments: object) -> ToolReply:
        self.calls.append((name, arguments))
        return ToolReply(CallStatus.REPLAYED, result={"found": 1}, reason="answered from call 0")

    def loop_at(self) -> int | None:
        return None

    def reset(self) -> None:
        self.calls = []


def test_a_function_taking_tools_calls_them_through_the_attempts_tools(module: str) -> None:
    tools = _Tools()
    ctx = AskContext("org-1", tools=tools)  # type: ignore[arg-type]
    answer = rt(module).ask(spec(module, "tools_agent"), request(), timeout_s=2, ctx=ctx)
    assert answer.answer == "lookup,workspace_read: replayed {'found': 1}"
    assert tools.calls == [("lookup", {"q": "case-9"})]
    # outside an eval attempt (no tools) it gets None; one taking any keyword gets `tools` too
    assert rt(module).ask(spec(module, "tools_agent"), request(), 2, CTX).answer == "no tools"
    assert rt(module).ask(spec(module, "keyword_agent"), request(), 2, ctx).answer == "tools"
    # a function of two arguments is called with two, as always
    assert rt(module).ask(spec(module, "text_agent"), request("x"), 2, ctx).answer == "X"
