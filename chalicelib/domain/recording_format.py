"""Recordings: answers recorded per case, replayed by the `recorded` runtime
(docs/reference/runtimes.md).

A recording is JSONL text, one answer payload per line (the `http` runtime's shape plus
`case_id`/`input`), or the `inline` answers of a spec. A line's `calls` are the tool calls made
for the case, each `{"name", "arguments": {...}, "result": <any JSON>}`: a run that answers tool
calls from recordings replays them (`domain.tool_isolation`). Parsing is pure: the recordings
adapter parses an upload once, the runtime looks a case up in what was parsed.
"""

from __future__ import annotations

import hashlib
import json
from dataclasses import dataclass, field
from typing import Any

from chalicelib.domain.models import CaseRequest


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
    _check_calls(entry.get("calls"), where)
    # setdefault: the first line for a case id or an input wins.
    if case_id is not None:
        recording.by_case.setdefault(case_id, entry)
    if text is not None:
        recording.by_input.setdefault(text, entry)


def _check_calls(calls: Any, where: str) -> None:
    """A line's `calls`: absent, or a list of `{"name": str, "arguments"?: {...}, "result"?: any
    JSON}` (arguments default to `{}`). Raises ValueError naming `where` and the call's index, never
    what it holds."""
    if calls is None:
        return
    if not isinstance(calls, list):
        raise ValueError(f"{where}: calls must be a list of calls")
    for index, call in enumerate(calls):
        if not isinstance(call, dict):
            raise ValueError(f"{where}: calls[{index}] must be an object")
        if not isinstance(call.get("name"), str) or not call["name"]:
            raise ValueError(f"{where}: calls[{index}].name must be a non-empty string")
        if "arguments" in call and not isinstance(call["arguments"], dict):
            raise ValueError(f"{where}: calls[{index}].arguments must be an object")


def parse_jsonl(text: str, source: str) -> Recording:
    """Parse recording JSONL text.

    Raises:
        ValueError: a line that is not a JSON object with `case_id`/`input` and an `answer`
            (or `error`, or `guardrail`), or whose `calls` are not a list of
            `{"name": str, "arguments"?: object, "result"?: any}`;
            the message names the line number, never its content (it may be any file).
    """
    recording = Recording()
    for number, line in enumerate(text.splitlines(), start=1):
        if not line.strip():
            continue
        try:
            entry = json.loads(line)
        except (ValueError, RecursionError):
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


def sha256_hex(content: str) -> str:
    """Hex sha256 of `content`'s UTF-8 bytes (the recording's identity)."""
    return hashlib.sha256(content.encode("utf-8")).hexdigest()
