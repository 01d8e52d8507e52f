"""The `recorded` runtime: answers replayed from a recording, keyed by case (DESIGN §8).

Spec (exactly one of `recording` and `inline`)::

    {"runtime": "recorded",
     "recording": "demo/answers.jsonl",          # a JSONL file; relative to the runtime's base dir
     "inline": {"case-1": {"answer": "4"}, "case-2": "Paris"},   # or answers in the spec
     "model": "recorded-gpt",                    # optional, model of answers that name none
     "latency_ms": 20,                           # optional, simulated agent latency, ms
     "price": {...}}                             # optional, checked by `validate_spec`

Each JSONL line (blank lines skipped) is an answer payload of the `http` runtime plus its keys::

    {"case_id": "case-1", "input": "What is 2+2?", "answer": "4",
     "calls": [{"name": "calc", "arguments": {"expr": "2+2"}}],
     "usage": {"input_tokens": 12, "output_tokens": 1}, "model": "...", "cost_usd": "0.00001"}

A line needs `case_id` or `input`, and an `answer` unless it records an `error` or a
`guardrail` block (whose refusal text then defaults to "Blocked by guardrail: <reason>"; a
blocked line replays as a graded refusal, not a crash). An `inline` value is such a payload
or just the answer text; its key is the case id. Lookup is by `case_id`, else by the exact
`input` text; when a case id or input appears twice the first line wins. A case the recording
lacks raises `DivergentCallError` (the attempt fails with `crash: true`). Calls without a
status are `replayed`.

Recording files are parsed once per resolved path and cached (thread-safe); a file whose
modification time or size changed is parsed again.
"""

from __future__ import annotations

import json
import os
import threading
import time
from dataclasses import dataclass, field
from typing import Any

from chalicelib.adapters.runtimes.http import (
    answer_from_payload,
    check_timeout,
    clip,
)
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import AgentAnswer, CaseRequest
from chalicelib.errors import AgentCrashError, DivergentCallError, InvalidInputError, ProviderError


@dataclass(frozen=True)
class Recording:
    """A parsed recording: answer payloads by case id and by input text."""

    by_case: dict[str, dict[str, Any]] = field(default_factory=dict)
    by_input: dict[str, dict[str, Any]] = field(default_factory=dict)

    def find(self, request: CaseRequest) -> dict[str, Any] | None:
        """The payload for the case: by case id first, then by exact input text."""
        found = self.by_case.get(request.case_id)
        return found if found is not None else self.by_input.get(request.input)


def _add(recording: Recording, entry: dict[str, Any], where: str) -> None:
    case_id, text = entry.get("case_id"), entry.get("input")
    if case_id is None and text is None:
        raise ValueError(f"{where} has neither case_id nor input")
    if case_id is not None and not isinstance(case_id, str):
        raise ValueError(f"{where}: case_id must be a string")
    if text is not None and not isinstance(text, str):
        raise ValueError(f"{where}: input must be a string")
    if (
        not isinstance(entry.get("answer"), str)
        and not entry.get("error")
        and not entry.get("guardrail")
    ):
        # A guardrail value is checked when replayed (a malformed one fails that attempt).
        raise ValueError(f"{where}: answer must be a string")
    # setdefault: the first line for a case id or an input wins.
    if case_id is not None:
        recording.by_case.setdefault(case_id, entry)
    if text is not None:
        recording.by_input.setdefault(text, entry)


def parse_jsonl(text: str, source: str) -> Recording:
    """Parse recording JSONL text.

    Raises:
        ValueError: a line that is not a JSON object with `case_id`/`input` and an `answer`
            (or `error`, or `guardrail`);
            the message names the line number, never its content (it may be any file).
    """
    recording = Recording()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except ValueError:
            raise ValueError(f"{source} line {number} is not JSON") from None
        if not isinstance(entry, dict):
            raise ValueError(f"{source} line {number} is not a JSON object")
        _add(recording, entry, f"{source} line {number}")
    return recording


def parse_inline(inline: Any) -> Recording:
    """Parse an `inline` mapping `{case_id: payload | answer text}`.

    Raises:
        ValueError: not an object, or a value that is neither text nor a payload.
    """
    if not isinstance(inline, dict):
        raise ValueError("inline must be an object {case_id: answer}")
    recording = Recording()
    for case_id, value in inline.items():
        entry = {"answer": value} if isinstance(value, str) else value
        if not isinstance(entry, dict):
            raise ValueError(f"inline[{case_id!r}] must be answer text or an answer object")
        _add(recording, {**entry, "case_id": case_id}, f"inline[{case_id!r}]")
    return recording


class RecordedRuntime:
    """Replays recorded answers (`AgentRuntime`)."""

    def __init__(self, base_dir: str | None = None) -> None:
        """Args:
        base_dir: directory relative `recording` paths resolve against; None or "" means the
            working directory at call time.
        """
        self._base_dir = base_dir or None
        self._lock = threading.Lock()
        self._cache: dict[str, tuple[int, int, Recording]] = {}

    def resolve_path(self, path: str) -> str:
        """The absolute path of a recording: absolute as given, relative against the base dir."""
        expanded = os.path.expanduser(path)
        if os.path.isabs(expanded):
            return os.path.normpath(expanded)
        return os.path.abspath(os.path.join(self._base_dir or os.getcwd(), expanded))

    def validate(self, spec: dict[str, Any]) -> None:
        """Check the recording source parses, and `model`/`latency_ms`.

        Raises:
            InvalidInputError: naming `spec.recording`, `spec.inline`, `spec.model` or
                `spec.latency_ms`.
        """
        self._recording(spec)
        model = spec.get("model")
        if model is not None and (not isinstance(model, str) or not model):
            raise InvalidInputError("spec.model must be a non-empty string", field="spec.model")
        _latency_s(spec)

    def ask(self, spec: dict[str, Any], request: CaseRequest, timeout_s: float) -> AgentAnswer:
        """Replay the recorded answer for the case, after the simulated latency.

        Args:
            spec: a `recorded` spec (see the module docstring).
            request: the case; looked up by `case_id`, then by `input`.
            timeout_s: bound in seconds; a `latency_ms` past it times out.

        Returns:
            The recorded answer (calls default to `replayed`; model to the spec's).

        Raises:
            DivergentCallError: the recording holds no answer for the case.
            ProviderError: the simulated latency exceeds `timeout_s`, or the recorded line
                says `{"error": ..., "crash": false}`.
            AgentCrashError: the recorded line is a crash report.
            InvalidInputError: the spec's recording cannot be read.
        """
        timeout_s = check_timeout(timeout_s)
        recording = self._recording(spec)
        latency_s = _latency_s(spec)
        if latency_s > timeout_s:
            time.sleep(timeout_s)
            raise ProviderError(f"recorded agent timed out after {timeout_s:g} s")
        if latency_s:
            time.sleep(latency_s)
        entry = recording.find(request)
        if entry is None:
            raise DivergentCallError(
                f"the recording holds no answer for case {request.case_id} "
                f"(input {clip(request.input, 80)!r})"
            )
        source = f"recorded answer for case {request.case_id}"
        try:
            return answer_from_payload(
                entry,
                source=source,
                default_call_status=CallStatus.REPLAYED,
                default_model=spec.get("model"),
            )
        except ProviderError as exc:
            # "no answer" in a recording is a broken recording, not a flaky provider; an
            # explicit crash:false line is the one recorded provider failure we replay.
            if entry.get("error"):
                raise
            raise AgentCrashError(str(exc)) from exc

    def _recording(self, spec: dict[str, Any]) -> Recording:
        has_file, has_inline = spec.get("recording") is not None, spec.get("inline") is not None
        if has_file == has_inline:
            raise InvalidInputError(
                "a recorded spec needs exactly one of spec.recording and spec.inline",
                field="spec.recording",
            )
        if has_inline:
            try:
                return parse_inline(spec["inline"])
            except ValueError as exc:
                raise InvalidInputError(f"spec.{exc}", field="spec.inline") from exc
        path = spec["recording"]
        if not isinstance(path, str) or not path.strip():
            raise InvalidInputError(
                "spec.recording must be a path to a JSONL file", field="spec.recording"
            )
        return self.load(path)

    def load(self, path: str) -> Recording:
        """The parsed recording at `path` (resolved against the base dir), from the cache.

        Raises:
            InvalidInputError: (field "spec.recording") the file is missing, unreadable or
                not valid recording JSONL.
        """
        resolved = self.resolve_path(path)
        try:
            stat = os.stat(resolved)
        except OSError as exc:
            raise InvalidInputError(
                f"spec.recording: cannot read {path}: {exc.strerror}", field="spec.recording"
            ) from exc
        with self._lock:
            cached = self._cache.get(resolved)
            if cached is not None and cached[:2] == (stat.st_mtime_ns, stat.st_size):
                return cached[2]
        # Parsed outside the lock so one large file does not stall every other recording;
        # two threads may both parse on a cold cache, which is harmless.
        try:
            with open(resolved, encoding="utf-8") as handle:
                recording = parse_jsonl(handle.read(), f"spec.recording {path}")
        except OSError as exc:
            raise InvalidInputError(
                f"spec.recording: cannot read {path}: {exc.strerror}", field="spec.recording"
            ) from exc
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidInputError(str(exc), field="spec.recording") from exc
        with self._lock:
            self._cache[resolved] = (stat.st_mtime_ns, stat.st_size, recording)
        return recording


def _latency_s(spec: dict[str, Any]) -> float:
    latency = spec.get("latency_ms")
    if latency is None:
        return 0.0
    if (
        isinstance(latency, bool)
        or not isinstance(latency, int | float)
        or not 0 <= latency < 3_600_000
    ):
        raise InvalidInputError(
            "spec.latency_ms must be a number of milliseconds >= 0", field="spec.latency_ms"
        )
    return latency / 1000
