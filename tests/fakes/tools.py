"""Fakes of the tool-isolation ports (`chalicelib.services.ports.tools`): connections, the
transport that makes calls (recording each), attempts' workspaces and the tool gateway's
sessions, in memory."""

from __future__ import annotations

from collections.abc import Callable, Mapping
from dataclasses import replace
from typing import Any

from chalicelib.domain.records import Connection, ToolSession
from chalicelib.errors import ConflictError, NotFoundError, PayloadTooLargeError
from chalicelib.services.ports.tools import ToolCallFailed


class FakeConnections:
    """`ports.tools.ConnectionStore` by (org_id, connection_id)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], Connection] = {}
        self.listed = 0
        """How often `list` was called."""

    def create(self, connection: Connection) -> None:
        key = (connection.org_id, connection.connection_id)
        if key in self.kept:
            raise ConflictError(
                f"connection {connection.connection_id} already exists", field="connection_id"
            )
        self.kept[key] = connection

    def get(self, org_id: str, connection_id: str, *, field: str = "connection_id") -> Connection:
        try:
            return self.kept[(org_id, connection_id)]
        except KeyError:
            raise NotFoundError(f"connection {connection_id} not found", field=field) from None

    def list(self, org_id: str) -> list[Connection]:
        self.listed += 1
        return [c for (org, _), c in sorted(self.kept.items()) if org == org_id]

    def delete(self, org_id: str, connection_id: str) -> None:
        self.kept.pop((org_id, connection_id), None)


class FakeToolTransport:
    """`ports.tools.ToolTransport`: every call is kept in `made` as `(connection_id, tool, args,
    headers)`; `answer(connection, tool, args)` gives the result (default `{"ok": tool}`), and
    raising `ToolCallFailed` from it fails the call. `check_url`: the URL check to apply (none by
    default)."""

    def __init__(
        self,
        answer: Callable[[Connection, str, Mapping[str, Any]], Any] | None = None,
        check_url: Callable[[str, str], None] | None = None,
    ) -> None:
        self.made: list[tuple[str, str, dict[str, Any], dict[str, str]]] = []
        self.listed: dict[str, list[dict[str, Any]]] = {}
        """What `list_tools` answers, by connection id (a connection absent here fails)."""
        self.answer = answer or (lambda _c, tool, _a: {"ok": tool})
        self._check_url = check_url

    def check_url(self, url: str, field: str) -> None:
        if self._check_url is not None:
            self._check_url(url, field)

    def call(
        self,
        connection: Connection,
        tool_name: str,
        arguments: Mapping[str, Any],
        headers: Mapping[str, str],
        timeout_s: float,
    ) -> Any:
        self.made.append((connection.connection_id, tool_name, dict(arguments), dict(headers)))
        return self.answer(connection, tool_name, arguments)

    def list_tools(
        self, connection: Connection, headers: Mapping[str, str], timeout_s: float
    ) -> list[dict[str, Any]]:
        if connection.connection_id not in self.listed:
            raise ToolCallFailed(f"connection {connection.connection_id!r} lists no tools")
        return self.listed[connection.connection_id]


class FakeWorkspaces:
    """`ports.tools.Workspaces` in memory, by (org_id, run_id, attempt_key, path), with the same
    cap rule (`max_bytes`); `broken` makes `release` raise, as a bucket that refuses the delete
    would."""

    def __init__(self, max_bytes: int = 1_048_576) -> None:
        self.files: dict[tuple[str, str, str, str], str] = {}
        self.max_bytes = max_bytes
        self.broken = False

    def read(self, org_id: str, run_id: str, attempt_key: str, path: str) -> str | None:
        return self.files.get((org_id, run_id, attempt_key, path))

    def write(self, org_id: str, run_id: str, attempt_key: str, path: str, content: str) -> None:
        where = (org_id, run_id, attempt_key)
        others = sum(
            len(text.encode())
            for key, text in self.files.items()
            if key[:3] == where and key[3] != path
        )
        if others + len(content.encode()) > self.max_bytes:
            raise PayloadTooLargeError("the workspace is full", field="arguments.content")
        self.files[(*where, path)] = content

    def list(self, org_id: str, run_id: str, attempt_key: str, prefix: str = "") -> list[str]:
        where = (org_id, run_id, attempt_key)
        return sorted(k[3] for k in self.files if k[:3] == where and k[3].startswith(prefix))

    def release(self, org_id: str, run_id: str) -> int:
        if self.broken:
            raise OSError("the bucket refused the delete")
        gone = [k for k in self.files if k[:2] == (org_id, run_id)]
        for key in gone:
            del self.files[key]
        return len(gone)


class FakeToolSessions:
    """The tool gateway's sessions by (org_id, run_id, session_id), each write honouring the
    store's conditions. `requests` counts reads and writes as the store's AWS requests;
    `before_append`, when set, runs once before the next `append` checks its condition (what a
    concurrent call or a close writes in between)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str, str], ToolSession] = {}
        self.requests: list[str] = []
        self.before_append: Callable[[], None] | None = None

    def create(self, session: ToolSession) -> None:
        self.requests.append("PutItem")
        key = (session.org_id, session.run_id, session.session_id)
        if key in self.kept:
            raise ConflictError(f"tool session {key[2]} already exists", field="session_id")
        self.kept[key] = session

    def get(self, org_id: str, run_id: str, session_id: str) -> ToolSession | None:
        self.requests.append("GetItem")
        found = self.kept.get((org_id, run_id, session_id))
        return replace(found, calls=()) if found is not None else None

    def append(self, session: ToolSession, call: str, consumed: frozenset[int]) -> bool:
        if self.before_append is not None:
            hook, self.before_append = self.before_append, None
            hook()
        self.requests.append("UpdateItem")
        key = (session.org_id, session.run_id, session.session_id)
        now = self.kept.get(key)
        if now is None or now.version != session.version or not now.open:
            return False
        self.kept[key] = replace(
            now,
            calls=(*now.calls, call),
            consumed=tuple(sorted(consumed)),
            kept_bytes=now.kept_bytes + len(call.encode("utf-8")),
            version=now.version + 1,
        )
        return True

    def restart(self, org_id: str, run_id: str, session_id: str) -> None:
        self.requests.append("UpdateItem")
        now = self.kept.get((org_id, run_id, session_id))
        if now is not None:
            self.kept[(org_id, run_id, session_id)] = replace(
                now, calls=(), consumed=(), kept_bytes=0, version=now.version + 1
            )

    def close(self, org_id: str, run_id: str, session_id: str) -> ToolSession | None:
        self.requests.append("UpdateItem")
        now = self.kept.get((org_id, run_id, session_id))
        if now is None:
            return None
        closed = self.kept[(org_id, run_id, session_id)] = replace(
            now, open=False, version=now.version + 1
        )
        return closed
