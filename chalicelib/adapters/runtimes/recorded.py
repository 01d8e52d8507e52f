"""The `recorded` runtime: answers replayed from a recording, keyed by case
(docs/reference/runtimes.md).

Spec (exactly one of `recording_id` and `inline`)::

    {"runtime": "recorded",
     "recording_id": "gsm8k-gpt",                # one of the organization's uploaded recordings
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
lacks raises `DivergentCallError`: the attempt is `incomplete` (not graded), its reason saying it
is divergent. Calls without a status are `replayed`.

Recordings are the organization's data (docs/reference/security.md): uploaded with
`POST /api/v1/recordings` (parsed there with `domain.recordings.parse_jsonl`, kept under the
organization's prefix) and read when asked through `AskContext.recording`; never a path, so nothing
here reads a file. A spec naming a `recording` (a path) is refused the same way whatever the path,
and a `recording_id` the organization lacks fails the attempt when asked ("recording <id> not
found").
"""

from __future__ import annotations

import time
from typing import Any

from chalicelib.adapters.runtimes.answer_payload import answer_from_payload
from chalicelib.adapters.runtimes.transport import check_timeout, clip
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.ids import is_valid_name
from chalicelib.domain.models import AgentAnswer, CaseRequest
from chalicelib.domain.recording_format import Recording, parse_inline
from chalicelib.errors import (
    AgentCrashError,
    DivergentCallError,
    InvalidInputError,
    ProviderError,
)
from chalicelib.services.ports import AskContext

_UPLOAD_IT = (
    "spec.recording (a path) is not accepted: upload it with POST /api/v1/recordings and name it "
    "by recording_id"
)


class RecordedRuntime:
    """Replays recorded answers (`AgentRuntime`): an uploaded recording or `inline` answers."""

    def validate(self, spec: dict[str, Any]) -> None:
        """Check the recording source (its shape: an upload is read only when asked), `model`
        and `latency_ms`.

        Raises:
            InvalidInputError: naming `spec.recording` (always refused), `spec.recording_id`,
                `spec.inline`, `spec.model` or `spec.latency_ms`.
        """
        _source(spec)
        model = spec.get("model")
        if model is not None and (not isinstance(model, str) or not model):
            raise InvalidInputError("spec.model must be a non-empty string", field="spec.model")
        _latency_s(spec)

    def ask(
        self, spec: dict[str, Any], request: CaseRequest, timeout_s: float, ctx: AskContext
    ) -> AgentAnswer:
        """Replay the recorded answer for the case, after the simulated latency.

        Args:
            spec: a `recorded` spec (see the module docstring).
            request: the case; looked up by `case_id`, then by `input`.
            timeout_s: bound in seconds; a `latency_ms` past it times out.
            ctx: where the organization's recording is read.

        Returns:
            The recorded answer (calls default to `replayed`; model to the spec's).

        Raises:
            DivergentCallError: the recording holds no answer for the case.
            ProviderError: the simulated latency exceeds `timeout_s`, or the recorded line
                says `{"error": ..., "crash": false}`.
            AgentCrashError: the recorded line is a crash report, or the organization has no
                recording of that id.
            InvalidInputError: the spec no longer passes its checks.
        """
        timeout_s = check_timeout(timeout_s)
        recording = _source(spec)
        if recording is None:
            recording_id = spec["recording_id"]
            recording = ctx.recording(recording_id)
            if recording is None:
                raise AgentCrashError(f"recording {recording_id} not found")
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


def _source(spec: dict[str, Any]) -> Recording | None:
    """The `inline` answers parsed, or None for a `recording_id` (read when asked).

    Raises:
        InvalidInputError: a `recording` path; not exactly one of `recording_id` and `inline`;
            a malformed id or inline answers.
    """
    if "recording" in spec:
        raise InvalidInputError(_UPLOAD_IT, field="spec.recording")
    has_id, has_inline = spec.get("recording_id") is not None, spec.get("inline") is not None
    if has_id == has_inline:
        raise InvalidInputError(
            "a recorded spec needs exactly one of spec.recording_id and spec.inline",
            field="spec.recording_id",
        )
    if has_id:
        if not is_valid_name(spec["recording_id"]):
            raise InvalidInputError(
                "spec.recording_id must name an uploaded recording (letters, digits, '_', '.', "
                "'-'; at most 64)",
                field="spec.recording_id",
            )
        return None
    try:
        return parse_inline(spec["inline"])
    except ValueError as exc:
        raise InvalidInputError(f"spec.{exc}", field="spec.inline") from exc


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
