"""The disposable workspace of each eval attempt, in the results bucket (docs/guides/tools.md).

Files of one attempt live under `<org>/workspaces/<run_id>/<attempt>/`, where `<attempt>` is a
hash of the attempt's key: a case id is the tenant's text, and a prefix built from it could
reach into another attempt's files (case `x` writing `y#001/f` would be case `x#001/y`'s `f`).
A path is checked before it is used: no `..`, no leading `/`, no control characters.
"""

from __future__ import annotations

import hashlib
import re
from collections.abc import Callable
from typing import Any

from chalicelib.adapters.bucket import ResultsBucket
from chalicelib.errors import InvalidInputError, PayloadTooLargeError

_PATH = re.compile(r"^[A-Za-z0-9._\-][A-Za-z0-9._\-/ ]{0,255}$")


def check_path(path: str, field: str = "arguments.path") -> str:
    """`path` when it can name a file of a workspace.

    Raises:
        InvalidInputError: (field `field`) empty, longer than 256 characters, starting with `/`,
            holding `..` as a part, or a character other than letters, digits, `._-/` and space.
    """
    if not _PATH.fullmatch(path) or ".." in path.split("/") or "//" in path or path.endswith("/"):
        raise InvalidInputError(
            f"{field} must be a relative path of letters, digits, '._-/' and spaces, without '..'",
            field=field,
        )
    return path


class BucketWorkspaces:
    """Attempts' workspaces in the results bucket (port `ports.tools.Workspaces`)."""

    def __init__(self, bucket: ResultsBucket, max_bytes: Callable[[], int]) -> None:
        """Args:
        bucket: the results bucket.
        max_bytes: the size cap of one attempt's workspace in bytes, read at each write.
        """
        self._bucket = bucket
        self._max_bytes = max_bytes

    @staticmethod
    def run_prefix(org_id: str, run_id: str) -> str:
        """The prefix of every workspace of the run."""
        return f"{org_id}/workspaces/{run_id}/"

    def _prefix(self, org_id: str, run_id: str, attempt_key: str) -> str:
        digest = hashlib.sha256(attempt_key.encode("utf-8")).hexdigest()[:32]
        return f"{self.run_prefix(org_id, run_id)}{digest}/"

    def _objects(self, prefix: str) -> list[dict[str, Any]]:
        pages = self._bucket.client.get_paginator("list_objects_v2").paginate(
            Bucket=self._bucket.bucket, Prefix=prefix
        )
        return [item for page in pages for item in page.get("Contents", [])]

    def read(self, org_id: str, run_id: str, attempt_key: str, path: str) -> str | None:
        """A file's text, None when the attempt's workspace has none of that path.

        Raises:
            InvalidInputError: a path `check_path` refuses.
        """
        key = self._prefix(org_id, run_id, attempt_key) + check_path(path)
        client = self._bucket.client
        try:
            body = client.get_object(Bucket=self._bucket.bucket, Key=key)["Body"].read()
        except client.exceptions.NoSuchKey:
            return None
        return bytes(body).decode("utf-8", errors="replace")

    def write(self, org_id: str, run_id: str, attempt_key: str, path: str, content: str) -> None:
        """Write (replace) a file: one listing, the put, and one listing more (plus one read of
        the file it replaces, if any).

        The cap is checked before the put and again after it: writes of one attempt made at
        once (the tool gateway serves them concurrently) each see the others' bytes only once
        written, so a write that finds the workspace over the cap after its put undoes it (the
        file removed, or the one it replaced put back) and is refused. Writes at once may then
        all be refused; the workspace never stays over the cap.

        Raises:
            InvalidInputError: a path `check_path` refuses.
            PayloadTooLargeError: the attempt's files would pass the cap (nothing kept).
        """
        prefix = self._prefix(org_id, run_id, attempt_key)
        key = prefix + check_path(path)
        data = content.encode("utf-8")
        cap = self._max_bytes()
        objects = self._objects(prefix)
        others = sum(int(o["Size"]) for o in objects if o["Key"] != key)
        if others + len(data) > cap:
            raise PayloadTooLargeError(
                f"the workspace holds at most {cap} bytes; writing {path!r} ({len(data)} bytes) "
                f"beside {others} bytes would pass it",
                field="arguments.content",
            )
        replaced = self._body(key) if any(o["Key"] == key for o in objects) else None
        self._put(key, data)
        total = sum(int(o["Size"]) for o in self._objects(prefix))
        if total > cap:  # another write of this attempt went in at the same time: undo ours
            if replaced is None:
                self._bucket.client.delete_object(Bucket=self._bucket.bucket, Key=key)
            else:
                self._put(key, replaced)
            raise PayloadTooLargeError(
                f"the workspace holds at most {cap} bytes; writing {path!r} ({len(data)} bytes) "
                "at the same time as the attempt's other writes would pass it",
                field="arguments.content",
            )

    def _body(self, key: str) -> bytes | None:
        client = self._bucket.client
        try:
            return bytes(client.get_object(Bucket=self._bucket.bucket, Key=key)["Body"].read())
        except client.exceptions.NoSuchKey:
            return None

    def _put(self, key: str, data: bytes) -> None:
        self._bucket.client.put_object(
            Bucket=self._bucket.bucket,
            Key=key,
            Body=data,
            ContentType="text/plain; charset=utf-8",
        )

    def list(self, org_id: str, run_id: str, attempt_key: str, prefix: str = "") -> list[str]:
        """The attempt's file paths under `prefix`, sorted."""
        root = self._prefix(org_id, run_id, attempt_key)
        return sorted(
            o["Key"][len(root) :] for o in self._objects(root + prefix) if o["Key"].startswith(root)
        )

    def release(self, org_id: str, run_id: str) -> int:
        """Delete every workspace of the run; how many files were deleted."""
        return self._bucket.delete_prefix(self.run_prefix(org_id, run_id))
