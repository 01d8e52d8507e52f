"""The `recorded` runtime: replay by case id and input, divergence, paths, cache, latency."""

from __future__ import annotations

import json
import os
import threading
import time
from pathlib import Path

import pytest

from chalicelib.adapters.runtimes.recorded import RecordedRuntime
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import CaseRequest
from chalicelib.errors import AgentCrashError, DivergentCallError, InvalidInputError, ProviderError

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


def write(path: Path, lines: list) -> Path:
    path.write_text("\n".join(json.dumps(line) for line in lines) + "\n\n")
    return path


def request(case_id: str, text: str = "?") -> CaseRequest:
    return CaseRequest(run_id="r", case_id=case_id, attempt=1, input=text)


@pytest.fixture()
def recordings(tmp_path: Path) -> Path:
    (tmp_path / "sub").mkdir()
    write(tmp_path / "sub" / "answers.jsonl", LINES)
    return tmp_path


def spec(**extra: object) -> dict:
    return {"runtime": "recorded", "recording": "sub/answers.jsonl", **extra}


def test_by_case_id(recordings: Path) -> None:
    rt = RecordedRuntime(str(recordings))
    rt.validate(spec())
    answer = rt.ask(spec(model="rec-model"), request("c1", "anything else"), timeout_s=1)
    assert answer.answer == "4"
    assert answer.calls[0].status is CallStatus.REPLAYED
    assert answer.calls[0].result == 4
    assert (answer.usage.input_tokens, answer.usage.output_tokens) == (10, 1)
    assert answer.model == "rec-model"


def test_explicit_call_status_is_kept(recordings: Path) -> None:
    answer = RecordedRuntime(str(recordings)).ask(spec(), request("c3"), timeout_s=1)
    assert answer.calls[0].status is CallStatus.BLOCKED


def test_by_input_when_case_id_is_unknown(recordings: Path) -> None:
    answer = RecordedRuntime(str(recordings)).ask(
        spec(model="rec-model"), request("new-id", "Capital of France?"), timeout_s=1
    )
    assert answer.answer == "Paris"
    assert answer.model == "line-model"  # the line's model wins over the spec's


def test_missing_case_is_divergent(recordings: Path) -> None:
    with pytest.raises(DivergentCallError, match="c404") as info:
        RecordedRuntime(str(recordings)).ask(spec(), request("c404", "Unseen"), timeout_s=1)
    assert isinstance(info.value, AgentCrashError)  # a crash: the attempt fails


def test_recorded_crash_replays_as_crash(recordings: Path) -> None:
    with pytest.raises(AgentCrashError, match="tool raised"):
        RecordedRuntime(str(recordings)).ask(spec(), request("crashy"), timeout_s=1)


def test_recorded_guardrail_block_replays_as_a_refusal(recordings: Path) -> None:
    rt = RecordedRuntime(str(recordings))
    answer = rt.ask(spec(), request("guarded"), timeout_s=1)
    assert (answer.answer, answer.guardrail) == ("Blocked by guardrail: pii", "pii")
    answer = rt.ask(spec(), request("guarded-text"), timeout_s=1)
    assert (answer.answer, answer.guardrail) == ("I won't share that.", "pii")
    assert rt.ask(spec(), request("c1"), timeout_s=1).guardrail is None


def test_recorded_malformed_guardrail_is_a_crash(recordings: Path) -> None:
    with pytest.raises(AgentCrashError, match="malformed"):
        RecordedRuntime(str(recordings)).ask(spec(), request("bad-guard"), timeout_s=1)


def test_relative_path_resolves_against_the_base_dir(
    recordings: Path, tmp_path_factory: pytest.TempPathFactory, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.chdir(tmp_path_factory.mktemp("elsewhere"))
    assert RecordedRuntime(str(recordings)).ask(spec(), request("c1"), 1).answer == "4"
    # Without a base dir, relative paths are the working directory's.
    with pytest.raises(InvalidInputError) as info:
        RecordedRuntime(None).validate(spec())
    assert info.value.field == "spec.recording"
    monkeypatch.chdir(recordings)
    assert RecordedRuntime(None).ask(spec(), request("c1"), 1).answer == "4"


def test_absolute_path(recordings: Path) -> None:
    s = spec(recording=str(recordings / "sub" / "answers.jsonl"))
    assert RecordedRuntime("/nonexistent").ask(s, request("c1"), 1).answer == "4"


def test_files_are_cached_and_reloaded_when_changed(recordings: Path) -> None:
    rt = RecordedRuntime(str(recordings))
    first = rt.load("sub/answers.jsonl")
    assert rt.load("./sub/../sub/answers.jsonl") is first  # one entry per resolved path
    path = recordings / "sub" / "answers.jsonl"
    write(path, [{"case_id": "c1", "answer": "five"}])
    os.utime(path, ns=(time.time_ns(), time.time_ns() + 1_000_000_000))
    assert rt.ask(spec(), request("c1"), 1).answer == "five"


def test_cache_is_thread_safe(recordings: Path) -> None:
    rt = RecordedRuntime(str(recordings))
    answers: list[str] = []
    threads = [
        threading.Thread(target=lambda: answers.append(rt.ask(spec(), request("c1"), 1).answer))
        for _ in range(8)
    ]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert answers == ["4"] * 8


def test_latency_is_simulated(recordings: Path) -> None:
    rt = RecordedRuntime(str(recordings))
    started = time.monotonic()
    rt.ask(spec(latency_ms=50), request("c1"), timeout_s=1)
    assert time.monotonic() - started >= 0.05


def test_latency_past_the_timeout_times_out(recordings: Path) -> None:
    with pytest.raises(ProviderError, match="timed out"):
        RecordedRuntime(str(recordings)).ask(spec(latency_ms=5000), request("c1"), timeout_s=0.05)


def test_inline_answers() -> None:
    s = {
        "runtime": "recorded",
        "inline": {
            "c1": "just text",
            "c2": {"answer": "obj", "input": "Q2", "usage": {"output_tokens": 3}},
        },
    }
    rt = RecordedRuntime()
    rt.validate(s)
    assert rt.ask(s, request("c1"), 1).answer == "just text"
    answer = rt.ask(s, request("other", "Q2"), 1)
    assert (answer.answer, answer.usage.output_tokens) == ("obj", 3)
    assert answer.guardrail is None
    guarded = {"runtime": "recorded", "inline": {"c1": {"guardrail": "self-harm"}}}
    rt.validate(guarded)
    answer = rt.ask(guarded, request("c1"), 1)
    assert (answer.answer, answer.guardrail) == ("Blocked by guardrail: self-harm", "self-harm")
    with pytest.raises(DivergentCallError):
        rt.ask(s, request("c9"), 1)


@pytest.mark.parametrize(
    ("s", "field"),
    [
        ({}, "spec.recording"),
        ({"recording": "a.jsonl", "inline": {}}, "spec.recording"),
        ({"recording": ""}, "spec.recording"),
        ({"recording": "missing.jsonl"}, "spec.recording"),
        ({"recording": "bad.jsonl"}, "spec.recording"),
        ({"recording": "noanswer.jsonl"}, "spec.recording"),
        ({"inline": ["x"]}, "spec.inline"),
        ({"inline": {"c1": 5}}, "spec.inline"),
        ({"inline": {"c1": "x"}, "latency_ms": -1}, "spec.latency_ms"),
        ({"inline": {"c1": "x"}, "model": 3}, "spec.model"),
    ],
)
def test_validate_names_the_field(tmp_path: Path, s: dict, field: str) -> None:
    (tmp_path / "bad.jsonl").write_text('{"case_id": "c1", "answer": "x"}\nnot json\n')
    (tmp_path / "noanswer.jsonl").write_text('{"case_id": "c1"}\n')
    with pytest.raises(InvalidInputError) as info:
        RecordedRuntime(str(tmp_path)).validate({"runtime": "recorded", **s})
    assert info.value.field == field


def test_parse_errors_name_the_line(tmp_path: Path) -> None:
    (tmp_path / "bad.jsonl").write_text('{"case_id": "c1", "answer": "x"}\nsecret stuff\n')
    with pytest.raises(InvalidInputError, match="line 2") as info:
        RecordedRuntime(str(tmp_path)).validate({"runtime": "recorded", "recording": "bad.jsonl"})
    assert "secret stuff" not in info.value.message
