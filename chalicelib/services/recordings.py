"""The organization's recordings: JSONL answers a `recorded` spec replays by id (issue 9 scope 2,
docs/reference/runtimes.md).

Uploaded through the API, stored in the results bucket under the organization's prefix, never
read from a server path. A recording is immutable while it exists: uploading the same id again
with the same content is a no-op, with other content a conflict, so a run that replays it
answers the same throughout.
"""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import access
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import MAX_RECORDING_BYTES, name_problem
from chalicelib.domain.recording_format import parse_jsonl, sha256_hex
from chalicelib.domain.records import Attempt
from chalicelib.domain.replay import Replay
from chalicelib.domain.tools import WORKSPACE_TOOLS
from chalicelib.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    PayloadTooLargeError,
)
from chalicelib.services import access as access_service
from chalicelib.services import finalize
from chalicelib.services.ports.objects import RecordingMeta


def check_id(recording_id: Any) -> str:
    """`recording_id` when it may name a recording.

    Raises:
        InvalidInputError: (field `recording_id`) see `domain.org_data.name_problem`.
    """
    problem = name_problem(recording_id)
    if problem is not None:
        raise InvalidInputError(f"recording_id: a recording id {problem}", field="recording_id")
    return str(recording_id)  # name_problem refuses anything but a string


def check_content(content: Any) -> int:
    """The number of non-blank lines of `content` when it is a recording.

    Each line is `{"case_id"?, "input"?, "answer" | "error" | "guardrail", "calls"?, ...}`
    (`adapters.runtimes.recorded`; `calls`: `[{"name", "arguments": {...}, "result"}]`).

    Raises:
        PayloadTooLargeError: (field `content`) over `MAX_RECORDING_BYTES` (5 MiB).
        InvalidInputError: (field `content`) not a string, no lines, or a bad line; the message
            names the line number, never what the line holds.
    """
    if not isinstance(content, str):
        raise InvalidInputError("content: a recording is JSONL text (a string)", field="content")
    size = len(content.encode("utf-8"))
    if size > MAX_RECORDING_BYTES:
        raise PayloadTooLargeError(
            f"content: a recording takes at most {MAX_RECORDING_BYTES} bytes (5 MiB); "
            f"this one has {size}",
            field="content",
        )
    try:
        parse_jsonl(content, "content")
    except ValueError as exc:
        raise InvalidInputError(str(exc), field="content") from None
    lines = sum(1 for line in content.splitlines() if line.strip())
    if not lines:
        raise InvalidInputError("content: a recording needs at least one line", field="content")
    return lines


def upload(
    c: Container, who: Identity, content: Any, recording_id: Any = None
) -> tuple[RecordingMeta, bool]:
    """Store a recording of the caller's organization; returns `(its metadata, created)`.

    Without `recording_id` the id is `rec-` and the first 20 hex digits of the content's sha256,
    so uploading the same text again finds the same recording.

    Raises:
        InvalidInputError: a bad `recording_id` or `content` (see `check_id`, `check_content`).
        PayloadTooLargeError: `content` over 5 MiB.
        ConflictError: (field `recording_id`) the id holds other content.
    """
    if recording_id is not None:
        check_id(recording_id)
    lines = check_content(content)
    rid = recording_id if recording_id is not None else f"rec-{sha256_hex(content)[:20]}"
    return c.recordings.put(who.org_id, rid, content, lines=lines, uploaded_by=who.user_id)


def get(c: Container, who: Identity, recording_id: str) -> RecordingMeta:
    """The metadata of one of the organization's recordings.

    Raises:
        InvalidInputError: (field `recording_id`) an id no recording can have.
        NotFoundError: (field `recording_id`) none of that id in this organization.
    """
    check_id(recording_id)
    meta = c.recordings.meta(who.org_id, recording_id)
    if meta is None:
        raise NotFoundError(f"no recording {recording_id}", field="recording_id")
    return meta


def list_recordings(c: Container, who: Identity) -> list[RecordingMeta]:
    """The organization's recordings, by id (a listing's metadata: no `lines`, `sha256` or
    `uploaded_by`)."""
    return c.recordings.list(who.org_id)


def delete(c: Container, who: Identity, recording_id: str) -> None:
    """Delete one of the organization's recordings for good; not while a queued or running run
    answers its tool calls from it (each of its cases would then run without it).

    Raises:
        InvalidInputError: (field `recording_id`) an id no recording can have.
        NotFoundError: (field `recording_id`) none of that id in this organization.
        ConflictError: (field `recording_id`) a queued or running run answers from it.
    """
    check_id(recording_id)
    if c.recordings.meta(who.org_id, recording_id) is None:
        raise NotFoundError(f"no recording {recording_id}", field="recording_id")
    for run in c.runs.active(who.org_id):
        if Replay.of_settings((run.settings or {}).get("isolation")).recording_id == recording_id:
            raise ConflictError(
                f"recording {recording_id} answers the tool calls of eval run {run.run_id} "
                "(queued or running): wait for it to end, or cancel it",
                field="recording_id",
            )
    c.recordings.delete(who.org_id, recording_id)


def replay_options(c: Container, org_id: str, body: Mapping[str, Any]) -> Replay:
    """The replay a start or a suite asks for (docs/guides/tools.md): `from_recordings` (default
    false), `recording_id` (required with it) and `live_reads` (default false; accepted without
    `from_recordings`, where it changes nothing). The recording's sha256 is kept as it is now.

    Raises:
        InvalidInputError: (field `recording_id`) `from_recordings` without a `recording_id`, a
            `recording_id` without `from_recordings`, or an id no recording can have.
        NotFoundError: (field `recording_id`) the organization has no recording of that id.
    """
    recording_id = body.get("recording_id")
    live_reads = bool(body.get("live_reads"))
    if not body.get("from_recordings"):
        if recording_id is not None:
            raise InvalidInputError(
                "recording_id answers tool calls from a recording only with from_recordings: "
                "true; set it, or leave recording_id out",
                field="recording_id",
            )
        return Replay(live_reads=live_reads)
    if recording_id is None:
        raise InvalidInputError(
            "from_recordings needs recording_id: the recording whose calls answer the tool calls",
            field="recording_id",
        )
    check_id(recording_id)
    meta = c.recordings.meta(org_id, recording_id)
    if meta is None:
        raise NotFoundError(f"no recording {recording_id}", field="recording_id")
    return Replay(
        from_recordings=True,
        recording_id=str(recording_id),
        recording_sha256=meta.sha256 or None,
        live_reads=live_reads,
    )


_WORKSPACE_NAMES = frozenset(tool.name for tool in WORKSPACE_TOOLS)

KEPT_CALLS = frozenset({"executed", "replayed", "unverified", "intended"})
"""The calls of an attempt a recording made from its run holds: those that returned (`executed`
without an error, `replayed`) and those the agent reported making itself. A call that was held
(`blocked`, `divergent`) or failed returned nothing to record."""


def _recorded_call(call: Any) -> dict[str, Any] | None:
    """One kept call as a recording line holds it, None when it is not recorded (`KEPT_CALLS`, the
    attempt's built-in workspace tools)."""
    if not isinstance(call, Mapping) or not isinstance(call.get("name"), str):
        return None
    if call["name"] in _WORKSPACE_NAMES or call.get("status", "executed") not in KEPT_CALLS:
        return None
    if call.get("error"):
        return None
    arguments = call.get("arguments")
    return {
        "name": call["name"],
        "arguments": dict(arguments) if isinstance(arguments, Mapping) else {},
        "result": call.get("result"),
    }


def _line(c: Container, row: Attempt, text: str | None) -> dict[str, Any]:
    """A recording line of one attempt: its case, answer (the whole kept answer, read from the
    results bucket when it is kept there), recorded calls, model, guardrail and tokens."""
    answer = c.bucket.get_text(row.answer_ref) if row.answer_ref else row.answer
    line: dict[str, Any] = {"case_id": row.case_id}
    if text is not None:
        line["input"] = text
    line["answer"] = answer
    line["calls"] = [
        call for call in (_recorded_call(raw) for raw in row.calls or []) if call is not None
    ]
    if row.model:
        line["model"] = row.model
    if row.guardrail:
        line["guardrail"] = row.guardrail
    line["usage"] = {
        "input_tokens": int(row.input_tokens or 0),
        "output_tokens": int(row.output_tokens or 0),
    }
    return line


def from_run(
    c: Container, who: Identity, run_id: str, recording_id: Any, arm_id: Any = "candidate"
) -> tuple[RecordingMeta, bool]:
    """`POST /recordings/from-run/{run_id}`: a recording of the organization made of a completed
    run's kept answers and tool calls (docs/guides/tools.md), one line per case of `arm_id`: the
    first attempt's answer (`case_id`, `input`, `answer`, `calls`, `model`, `guardrail`, `usage`).
    A case whose first attempt kept no answer has no line; the calls are those `KEPT_CALLS` names,
    each `{"name", "arguments", "result"}` with its result as the attempt kept it (cut past 16 KiB).
    Stored as `upload` stores one: the same id with the same content again is a no-op, with other
    content a conflict. Returns `(its metadata, created)`.

    Raises:
        ForbiddenError: no `runs:view` (reading the run) or `datasets:edit` (keeping a recording).
        NotFoundError: (field `run_id`) no such run the caller may read (another organization's
            too); (field `arm_id`) the run has no such arm.
        InvalidInputError: a bad `recording_id` or `arm_id`; (field `run_id`) no case of the arm
            kept an answer.
        ConflictError: (field `run_id`) the run is not completed; (field `recording_id`) the id
            holds other content.
        PayloadTooLargeError: (field `run_id`) the lines pass 5 MiB.
    """
    check_id(recording_id)
    if not isinstance(arm_id, str) or not arm_id:
        raise InvalidInputError("arm_id must name an arm of the run", field="arm_id")
    who.require(access.DATASETS_EDIT, "keeping a recording")
    run = access_service.readable_run(c, who, run_id)
    if run.status != RunStatus.COMPLETED:
        raise ConflictError(
            f"eval run {run_id} is {run.status}: only a completed run's answers make a recording",
            field="run_id",
        )
    if not any(a.arm_id == arm_id for a in run.arms):
        raise NotFoundError(
            f"eval run {run_id} has no arm {arm_id} (it has "
            f"{', '.join(a.arm_id for a in run.arms)})",
            field="arm_id",
        )
    first: dict[str, Attempt] = {}
    for row in finalize.all_attempts(c, run):
        if row.arm_id != arm_id or row.answer is None:
            continue
        kept = first.get(row.case_id)
        if kept is None or int(row.attempt) < int(kept.attempt):
            first[row.case_id] = row
    if not first:
        raise InvalidInputError(
            f"no case of arm {arm_id} of eval run {run_id} kept an answer to record",
            field="run_id",
        )
    inputs = {
        str(case.get("case_id")): case.get("input")
        for case in c.datasets.cases(run.org_id, run.dataset_id, int(run.dataset_version))
    }
    content = "".join(
        json.dumps(
            _line(c, first[case_id], _text(inputs.get(case_id))),
            ensure_ascii=False,
            separators=(",", ":"),
        )
        + "\n"
        for case_id in sorted(first)
    )
    size = len(content.encode("utf-8"))
    if size > MAX_RECORDING_BYTES:
        raise PayloadTooLargeError(
            f"the answers and calls of arm {arm_id} take {size} bytes, more than a recording may "
            f"hold ({MAX_RECORDING_BYTES} bytes, 5 MiB)",
            field="run_id",
        )
    lines = check_content(content)
    return c.recordings.put(
        who.org_id, str(recording_id), content, lines=lines, uploaded_by=who.user_id
    )


def _text(value: Any) -> str | None:
    return value if isinstance(value, str) else None
