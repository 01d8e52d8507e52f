"""S3 adapter: the organizations' recordings (issue 9, docs/architecture/tables.md,
docs/reference/security.md).

A recording is JSONL text an organization uploads (`POST /api/v1/recordings`) and a `recorded`
spec names by id. It lives in the results bucket at `<org>/recordings/<id>.jsonl`
(`chalicelib.names.recording_key`) with user metadata `sha256`, `lines`, `bytes` and `uploaded-by`;
its `uploaded_at` is the object's LastModified. Every method builds the key from the caller's
organization; an org id or id that could step out of that prefix owns nothing.

Recordings are immutable while they exist: the first upload is a conditional write
(`If-None-Match: *`), and a later one of the same id is a no-op with the same sha256 or a
`ConflictError` with another. So every answer of a run replays the same content.

`load` parses a recording once per process and keeps it in a cache bounded by total bytes
(least recently used dropped first), keyed by organization and id. After `revalidate_seconds`
(60 s) the next `load` asks S3 whether the object changed (GetObject `If-None-Match: <etag>`,
a 304 without a body when it did not), so a recording deleted or replaced elsewhere is seen
within that time; a `put` or `delete` in this process is seen at once.
"""

from __future__ import annotations

import hashlib
import threading
import time
from collections import OrderedDict
from collections.abc import Callable
from dataclasses import dataclass
from datetime import datetime
from typing import Any
from urllib.parse import quote, unquote

from chalicelib import names
from chalicelib.adapters.lazy import LazyClient
from chalicelib.clock import iso
from chalicelib.domain.identity import is_org_id
from chalicelib.domain.ids import is_valid_name
from chalicelib.domain.recording_format import Recording, parse_jsonl
from chalicelib.errors import ConflictError, InvalidInputError
from chalicelib.services.ports.objects import RecordingMeta

_SUFFIX = ".jsonl"
_MISSING = ("NoSuchKey", "404", "NotFound")
_NOT_MODIFIED = ("304", "NotModified")
_EXISTS = ("PreconditionFailed", "412", "ConditionalRequestConflict", "409")
_MAX_UPLOADED_BY = 256


def _code(exc: Exception) -> str:
    return str(getattr(exc, "response", {}).get("Error", {}).get("Code", ""))


def _when(value: Any) -> str:
    return iso(value) if isinstance(value, datetime) else ""


@dataclass
class _Cached:
    etag: str
    size: int
    recording: Recording
    checked_at: float


class OrgRecordings(LazyClient):
    """Per-organization recordings in the results bucket; the boto3 client is built on first use.

    Args:
        client_factory: builds the `s3` client.
        bucket: the results bucket's name.
        max_cached_bytes: bound of `load`'s cache, in bytes of recording text (default 64 MiB).
        revalidate_seconds: age after which a cached recording is checked against S3, seconds.
        monotonic: the cache's clock, seconds (tests pass their own).
    """

    def __init__(
        self,
        client_factory: Callable[[], Any],
        bucket: str,
        *,
        max_cached_bytes: int = 64 * 1024 * 1024,
        revalidate_seconds: float = 60.0,
        monotonic: Callable[[], float] = time.monotonic,
    ) -> None:
        super().__init__(client_factory)
        self.bucket = bucket
        self.max_cached_bytes = max_cached_bytes
        self.revalidate_seconds = revalidate_seconds
        self._now = monotonic
        self._lock = threading.Lock()
        self._cache: OrderedDict[tuple[str, str], _Cached] = OrderedDict()
        self._cached_bytes = 0

    def _key(self, org_id: str, recording_id: str) -> str | None:
        if not is_org_id(org_id) or not is_valid_name(recording_id):
            return None
        return names.recording_key(org_id, recording_id)

    # -- writes --------------------------------------------------------------------------------

    def put(
        self, org_id: str, recording_id: str, content: str, *, lines: int, uploaded_by: str
    ) -> tuple[RecordingMeta, bool]:
        """Store a recording once: `(meta, True)` when created, `(meta, False)` when the same
        content was already there.

        Args:
            org_id: the owning organization.
            recording_id: the id (`chalicelib.domain.ids.NAME_PATTERN`).
            content: the JSONL text, already checked by the service (`parse_jsonl`).
            lines: its non-blank lines.
            uploaded_by: the uploading user (kept percent-encoded in S3 metadata, clipped to 256).

        Raises:
            ConflictError: (field `recording_id`) the id holds other content (immutable).
            ValueError: the org id or id cannot own a recording (the service refuses these first).
        """
        key = self._key(org_id, recording_id)
        if key is None:
            raise ValueError(f"{recording_id!r} of {org_id!r} cannot name a recording")
        from botocore.exceptions import ClientError

        body = content.encode("utf-8")
        digest = hashlib.sha256(body).hexdigest()
        metadata = {
            "sha256": digest,
            "lines": str(lines),
            "bytes": str(len(body)),
            "uploaded-by": quote(uploaded_by[:_MAX_UPLOADED_BY], safe="@._-+"),
        }
        for _ in range(3):
            try:
                self.client.put_object(
                    Bucket=self.bucket,
                    Key=key,
                    Body=body,
                    IfNoneMatch="*",
                    ContentType="application/x-ndjson; charset=utf-8",
                    Metadata=metadata,
                )
            except ClientError as exc:
                if _code(exc) not in _EXISTS:
                    raise
                existing = self.meta(org_id, recording_id)
                if existing is None:
                    continue  # deleted meanwhile: write again
                if existing.sha256 != digest:
                    raise ConflictError(
                        f"recording {recording_id} exists with other content; recordings are "
                        "immutable: delete it first or upload under another recording_id",
                        field="recording_id",
                    ) from None
                return existing, False
            self._forget(org_id, recording_id)
            stored = self.meta(org_id, recording_id)
            if stored is None:  # deleted between the write and the read: say what was written
                return RecordingMeta(recording_id, len(body), "", lines, digest, uploaded_by), True
            return stored, True
        raise ConflictError(
            f"recording {recording_id} is being uploaded and deleted at once; try again",
            field="recording_id",
        )

    def delete(self, org_id: str, recording_id: str) -> None:
        """Delete the recording for good (the bucket keeps no versions); nothing when absent."""
        key = self._key(org_id, recording_id)
        if key is None:
            return
        self.client.delete_object(Bucket=self.bucket, Key=key)
        self._forget(org_id, recording_id)

    # -- reads ---------------------------------------------------------------------------------

    def meta(self, org_id: str, recording_id: str) -> RecordingMeta | None:
        """The recording's metadata (HeadObject), or None when the organization has no such id."""
        key = self._key(org_id, recording_id)
        if key is None:
            return None
        from botocore.exceptions import ClientError

        try:
            head = self.client.head_object(Bucket=self.bucket, Key=key)
        except ClientError as exc:
            if _code(exc) in _MISSING:
                return None
            raise
        meta = head.get("Metadata") or {}
        lines, size = meta.get("lines"), meta.get("bytes")
        # Our own `bytes` first: moto's server answers HEAD with Content-Length 0.
        return RecordingMeta(
            recording_id=recording_id,
            bytes=int(size) if size and size.isdigit() else int(head.get("ContentLength") or 0),
            uploaded_at=_when(head.get("LastModified")),
            lines=int(lines) if lines and lines.isdigit() else None,
            sha256=meta.get("sha256"),
            uploaded_by=unquote(meta["uploaded-by"]) if meta.get("uploaded-by") else None,
        )

    def list(self, org_id: str) -> list[RecordingMeta]:
        """Every recording of the organization by id (ListObjectsV2 under `<org>/recordings/`,
        paged)."""
        if not is_org_id(org_id):
            return []
        prefix = names.org_recordings_prefix(org_id)
        out: list[RecordingMeta] = []
        for page in self.client.get_paginator("list_objects_v2").paginate(
            Bucket=self.bucket, Prefix=prefix
        ):
            for obj in page.get("Contents", []):
                rest = str(obj.get("Key", ""))[len(prefix) :]
                if not rest.endswith(_SUFFIX):
                    continue
                recording_id = rest[: -len(_SUFFIX)]
                if is_valid_name(recording_id):
                    out.append(
                        RecordingMeta(
                            recording_id, int(obj.get("Size") or 0), _when(obj.get("LastModified"))
                        )
                    )
        return sorted(out, key=lambda m: m.recording_id)

    def load(self, org_id: str, recording_id: str) -> Recording | None:
        """The recording parsed (`domain.recordings.parse_jsonl`), or None when absent.

        Served from the per-process cache (module docstring); one GetObject on a cold cache and
        a conditional one (304, no body) every `revalidate_seconds`.

        Raises:
            InvalidInputError: (field `spec.recording_id`) the stored text no longer parses.
        """
        key = self._key(org_id, recording_id)
        if key is None:
            return None
        cache_key = (org_id, recording_id)
        with self._lock:
            cached = self._cache.get(cache_key)
            if cached is not None:
                self._cache.move_to_end(cache_key)
                if self._now() - cached.checked_at < self.revalidate_seconds:
                    return cached.recording
        from botocore.exceptions import ClientError

        kwargs: dict[str, Any] = {"Bucket": self.bucket, "Key": key}
        if cached is not None:
            kwargs["IfNoneMatch"] = cached.etag
        try:
            got = self.client.get_object(**kwargs)
        except ClientError as exc:
            code = _code(exc)
            if cached is not None and code in _NOT_MODIFIED:
                with self._lock:
                    cached.checked_at = self._now()
                return cached.recording
            if code in _MISSING:
                self._forget(org_id, recording_id)
                return None
            raise
        raw = got["Body"].read()
        try:
            recording = parse_jsonl(raw.decode("utf-8"), f"recording {recording_id}")
        except (ValueError, UnicodeDecodeError) as exc:
            raise InvalidInputError(str(exc), field="spec.recording_id") from None
        self._store(cache_key, _Cached(str(got.get("ETag", "")), len(raw), recording, self._now()))
        return recording

    # -- cache ---------------------------------------------------------------------------------

    def _store(self, cache_key: tuple[str, str], entry: _Cached) -> None:
        with self._lock:
            old = self._cache.pop(cache_key, None)
            if old is not None:
                self._cached_bytes -= old.size
            if entry.size > self.max_cached_bytes:
                return
            self._cache[cache_key] = entry
            self._cached_bytes += entry.size
            while self._cached_bytes > self.max_cached_bytes and self._cache:
                _, dropped = self._cache.popitem(last=False)
                self._cached_bytes -= dropped.size

    def _forget(self, org_id: str, recording_id: str) -> None:
        with self._lock:
            old = self._cache.pop((org_id, recording_id), None)
            if old is not None:
                self._cached_bytes -= old.size
