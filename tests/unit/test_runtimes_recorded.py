"""The `recorded` runtime: replay by case id and input from an organization's recording (read
through the `AskContext`) or inline answers, divergence, latency; a path is never opened."""

from __future__ import annotations

import builtins
import json
import time
from pathlib import Path
from typing import Any

import pytest

from chalicelib.adapters.runtimes.recorded import RecordedRuntime
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import CaseRequest
from chalicelib.domain.recording_format import Recording, parse_jsonl
from chalicelib.errors import (
    AgentCrashError,
    DivergentCallError,
    InvalidInputError,
    ProviderError,
)
from chalicelib.services.ports import AskContext

LINES = [
    {
        "case_id": "c1",
        "input": "What is 2+2?",
        "answer": "4",
        "calls": [{"name": "calc", "arguments": {"expr": "2+2"}, "result": 4}],
        "usage": {"input_tokens": 10, "output_tokens": 1},
    },
    {"input": "Capital of France?", "answer": "Paris", "model": "line-model"},
    {"case_id": "c1", "answer": "a later duplicate, ignored"},
    {"case_id": "c3", "answer": "blocked one", "calls": [{"name": "rm", "status": "blocked"}]},
    {"case_id": "crashy", "error": "tool raised", "crash": True},
    {"case_id": "guarded", "guardrail": {"blocked": True, "reason": "pii"}},
    {"case_id": "guarded-text", "answer": "I won't share that.", "guardrail": "pii"},
    {"case_id": "bad-guard", "guardrail": 3},
]

UPLOADED = {
    "answers": parse_jsonl(
        "\n".join(json.dumps(line) for line in LINES) + "\n\n", "recording answers"
    )
}


class Uploads:
    """The organization's recordings as `AskContext.recording` reads them; `asked` lists every id
    read."""

    def __init__(self, recordings: dict[str, Recording]) -> None:
        self.recordings, self.asked = recordings, []

    def __call__(self, recording_id: str) -> Recording | None:
        self.asked.append(recording_id)
        return self.recordings.get(recording_id)


@pytest.fixture()
def uploads() -> Uploads:
    return Uploads(UPLOADED)


@pytest.fixture()
def ctx(uploads: Uploads) -> AskContext:
    return AskContext("org-1", recording=uploads)


def request(case_id: str, text: str = "?") -> CaseRequest:
    return CaseRequest(run_id="r", case_id=case_id, attempt=1, input=text)


def spec(**extra: object) -> dict:
    return {"runtime": "recorded", "recording_id": "answers", **extra}


def test_by_case_id(ctx: AskContext, uploads: Uploads) -> None:
    rt = RecordedRuntime()
    rt.validate(spec())
    assert uploads.asked == []  # saving a spec reads no recording
    answer = rt.ask(spec(model="rec-model"), request("c1", "anything else"), 1, ctx)
    assert answer.answer == "4"
    assert answer.calls[0].status is CallStatus.REPLAYED
    assert answer.calls[0].result == 4
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (10, 1)
    assert answer.model == "rec-model"
    assert uploads.asked == ["answers"]


def test_explicit_call_status_is_kept(ctx: AskContext) -> None:
    answer = RecordedRuntime().ask(spec(), request("c3"), 1, ctx)
    assert answer.calls[0].status is CallStatus.BLOCKED


def test_by_input_when_case_id_is_unknown(ctx: AskContext) -> None:
    answer = RecordedRuntime().ask(
        spec(model="rec-model"), request("new-id", "Capital of France?"), 1, ctx
    )
    assert answer.answer == "Paris"
    assert answer.model == "line-model"  # the line's model wins over the spec's


def test_missing_case_is_divergent(ctx: AskContext) -> None:
    with pytest.raises(DivergentCallError, match="c404") as info:
        RecordedRuntime().ask(spec(), request("c404", "Unseen"), 1, ctx)
    # not the agent's failure: the attempt is incomplete (divergent), never a crash
    assert not isinstance(info.value, AgentCrashError)


def test_a_recording_the_organization_lacks_fails_the_attempt(ctx: AskContext) -> None:
    with pytest.raises(AgentCrashError, match="recording other not found"):
        RecordedRuntime().ask(spec(recording_id="other"), request("c1"), 1, ctx)
    with pytest.raises(
        AgentCrashError, match="not found"
    ):  # a context of another organization sees none
        RecordedRuntime().ask(spec(), request("c1"), 1, AskContext("org-2"))


def test_recorded_crash_replays_as_crash(ctx: AskContext) -> None:
    with pytest.raises(AgentCrashError, match="tool raised"):
        RecordedRuntime().ask(spec(), request("crashy"), 1, ctx)


def test_recorded_guardrail_block_replays_as_a_refusal(ctx: AskContext) -> None:
    rt = RecordedRuntime()
    answer = rt.ask(spec(), request("guarded"), 1, ctx)
    assert (answer.answer, answer.guardrail) == ("Blocked by guardrail: pii", "pii")
    answer = rt.ask(spec(), request("guarded-text"), 1, ctx)
    assert (answer.answer, answer.guardrail) == ("I won't share that.", "pii")
    assert rt.ask(spec(), request("c1"), 1, ctx).guardrail is None


def test_recorded_malformed_guardrail_is_a_crash(ctx: AskContext) -> None:
    with pytest.raises(AgentCrashError, match="malformed"):
        RecordedRuntime().ask(spec(), request("bad-guard"), 1, ctx)


def test_latency_is_simulated(ctx: AskContext) -> None:
    started = time.monotonic()
    RecordedRuntime().ask(spec(latency_ms=50), request("c1"), 1, ctx)
    assert time.monotonic() - started >= 0.05


def test_latency_past_the_timeout_times_out(ctx: AskContext) -> None:
    with pytest.raises(ProviderError, match="timed out"):
        RecordedRuntime().ask(spec(latency_ms=5000), request("c1"), 0.05, ctx)


def test_inline_answers(ctx: AskContext) -> None:
    s = {
        "runtime": "recorded",
        "inline": {
            "c1": "just text",
            "c2": {"answer": "obj", "input": "Q2", "usage": {"output_tokens": 3}},
        },
    }
    rt = RecordedRuntime()
    rt.validate(s)
    assert rt.ask(s, request("c1"), 1, ctx).answer == "just text"
    answer = rt.ask(s, request("other", "Q2"), 1, ctx)
    assert (answer.answer, answer.usage.output_tokens) == ("obj", 3)
    assert answer.guardrail is None
    guarded = {"runtime": "recorded", "inline": {"c1": {"guardrail": "self-harm"}}}
    rt.validate(guarded)
    answer = rt.ask(guarded, request("c1"), 1, ctx)
    assert (answer.answer, answer.guardrail) == ("Blocked by guardrail: self-harm", "self-harm")
    with pytest.raises(DivergentCallError):
        rt.ask(s, request("c9"), 1, ctx)


@pytest.mark.parametrize(
    ("s", "field"),
    [
        ({}, "spec.recording_id"),
        ({"recording_id": "a", "inline": {}}, "spec.recording_id"),
        ({"recording_id": ""}, "spec.recording_id"),
        ({"recording_id": "a/b"}, "spec.recording_id"),
        ({"recording_id": "../x"}, "spec.recording_id"),
        ({"recording_id": 5}, "spec.recording_id"),
        ({"inline": ["x"]}, "spec.inline"),
        ({"inline": {"c1": 5}}, "spec.inline"),
        ({"inline": {"c1": "x"}, "latency_ms": -1}, "spec.latency_ms"),
        ({"inline": {"c1": "x"}, "model": 3}, "spec.model"),
    ],
)
def test_validate_names_the_field(s: dict, field: str) -> None:
    with pytest.raises(InvalidInputError) as info:
        RecordedRuntime().validate({"runtime": "recorded", **s})
    assert info.value.field == field


@pytest.fixture()
def no_file_is_opened(monkeypatch: pytest.MonkeyPatch) -> list[Any]:
    opened: list[Any] = []
    real_open = builtins.open

    def spy(file: Any, *args: Any, **kwargs: Any) -> Any:
        opened.append(file)
        return real_open(file, *args, **kwargs)

    monkeypatch.setattr(builtins, "open", spy)
    return opened


def test_a_recording_path_is_refused_the_same_whether_the_file_exists(
    tmp_path: Path, ctx: AskContext, no_file_is_opened: list[Any]
) -> None:
    real = tmp_path / "answers.jsonl"
    real.write_text('{"case_id": "c1", "answer": "4"}\n')
    messages = set()
    for path in (str(real), str(tmp_path / "missing.jsonl"), "/etc/passwd", "../../x", "", 5):
        for s in (
            {"runtime": "recorded", "recording": path},
            {"runtime": "recorded", "recording": path, "recording_id": "answers"},
        ):
            with pytest.raises(InvalidInputError) as info:
                RecordedRuntime().validate(s)
            assert info.value.field == "spec.recording"
            messages.add(info.value.message)
            with pytest.raises(InvalidInputError):
                RecordedRuntime().ask(s, request("c1"), 1, ctx)
    assert messages == {
        "spec.recording (a path) is not accepted: upload it with POST /api/v1/recordings and "
        "name it by recording_id"
    }
    assert no_file_is_opened == []


def test_parse_errors_name_the_line_never_its_content() -> None:
    with pytest.raises(ValueError, match="line 2") as info:
        parse_jsonl('{"case_id": "c1", "answer": "x"}\nsecret stuff\n', "recording r1")
    assert "secret stuff" not in str(info.value)
    with pytest.raises(ValueError, match="line 1"):
        parse_jsonl('{"case_id": "c1"}\n', "recording r1")
