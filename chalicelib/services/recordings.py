"""The organization's recordings: JSONL answers a `recorded` spec replays by id (issue 9 scope 2,
docs/reference/runtimes.md).

Uploaded through the API, stored in the results bucket under the organization's prefix, never
read from a server path. A recording is immutable while it exists: uploading the same id again
with the same content is a no-op, with other content a conflict, so a run that replays it
answers the same throughout.
"""

from __future__ import annotations

from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import MAX_RECORDING_BYTES, name_problem
from chalicelib.domain.recording_format import parse_jsonl, sha256_hex
from chalicelib.errors import InvalidInputError, NotFoundError, PayloadTooLargeError
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

    Each line is `{"case_id"?, "input"?, "answer" | "error" | "guardrail", ...}`
    (`adapters.runtimes.recorded`).

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
    """Delete one of the organization's recordings for good.

    Raises:
        InvalidInputError: (field `recording_id`) an id no recording can have.
        NotFoundError: (field `recording_id`) none of that id in this organization.
    """
    check_id(recording_id)
    if c.recordings.meta(who.org_id, recording_id) is None:
        raise NotFoundError(f"no recording {recording_id}", field="recording_id")
    c.recordings.delete(who.org_id, recording_id)
