"""Ports of what is kept outside the tables: the organizations' secrets (Secrets Manager), their
recordings and long answers (the results bucket)."""

from __future__ import annotations

from dataclasses import dataclass
from typing import NamedTuple, Protocol

from chalicelib.domain.recording_format import Recording


class SecretMeta(NamedTuple):
    """What may be shown of a secret: its name and when its value last changed (never the value)."""

    name: str
    updated_at: str
    """UTC ISO-8601 with `Z` (Secrets Manager's LastChangedDate, second precision)."""


@dataclass(frozen=True)
class RecordingMeta:
    """What is shown of a recording (never its content).

    A listing gives `recording_id`, `bytes` and `uploaded_at` only (`lines`, `sha256`,
    `uploaded_by` None): S3 lists no user metadata.
    """

    recording_id: str
    bytes: int
    """Size of the JSONL text, UTF-8 bytes."""
    uploaded_at: str
    """UTC ISO-8601 with `Z` (S3 LastModified, second precision)."""
    lines: int | None = None
    """Non-blank lines of the upload."""
    sha256: str | None = None
    """Hex sha256 of the UTF-8 bytes."""
    uploaded_by: str | None = None
    """The user who uploaded it (the token's `sub`)."""


class Secrets(Protocol):
    """The organizations' secrets by name; values are written and used, never shown (issue 9)."""

    def put(self, org_id: str, name: str, value: str) -> str:
        """Keep a secret's value (creating or replacing it); returns when it changed (ISO-8601
        `Z`)."""

    def delete(self, org_id: str, name: str) -> None:
        """Forget a secret. Raises NotFoundError when the organization has none of that name."""

    def get(self, org_id: str, name: str) -> str | None:
        """The value, None when the organization has no secret of that name."""

    def meta(self, org_id: str, name: str) -> SecretMeta | None:
        """What may be shown of one secret, None when absent."""

    def list(self, org_id: str) -> list[SecretMeta]:
        """What may be shown of every secret of the organization."""

    def values(self, org_id: str) -> tuple[str, ...]:
        """Every value of the organization's secrets (what redaction hides)."""


class Recordings(Protocol):
    """The organizations' uploaded recordings (immutable JSONL, `<org>/recordings/<id>.jsonl`)."""

    def put(
        self, org_id: str, recording_id: str, content: str, *, lines: int, uploaded_by: str
    ) -> tuple[RecordingMeta, bool]:
        """Keep a recording once: `(meta, True)` created, `(meta, False)` the same content was
        there.

        Raises:
            ConflictError: the id holds other content (recordings are immutable).
        """

    def delete(self, org_id: str, recording_id: str) -> None:
        """Forget a recording. Raises NotFoundError when absent."""

    def meta(self, org_id: str, recording_id: str) -> RecordingMeta | None:
        """What is shown of one recording, None when absent."""

    def list(self, org_id: str) -> list[RecordingMeta]:
        """What is shown of every recording of the organization."""

    def load(self, org_id: str, recording_id: str) -> Recording | None:
        """The recording, parsed; None when absent."""


class AnswerBucket(Protocol):
    """Long answers kept beside their attempt (the results bucket)."""

    def put_text(self, key: str, text: str) -> str:
        """Keep `text` under `key`; returns the pointer an attempt stores."""

    def get_text(self, pointer: str) -> str:
        """The text a pointer names."""

    def url(self, pointer: str, expires_s: int) -> str:
        """A presigned GET URL of the text a pointer names, valid `expires_s` seconds."""

    def delete_prefix(self, prefix: str) -> int:
        """Delete every text whose key starts with `prefix` (e.g. `<org>/answers/<run_id>/`);
        returns how many there were."""
