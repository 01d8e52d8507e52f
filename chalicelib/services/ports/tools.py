"""Ports of tool isolation (docs/guides/tools.md): the organization's connections, the transport
that makes a call on one, and the disposable workspaces of eval attempts."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any, Protocol

from chalicelib.domain.records import Connection, ToolSession


class ToolCallFailed(Exception):
    """A call made on a connection failed: the tool answered an error status or no JSON, timed out,
    or its address is one egress refuses. The message is safe to keep and show (no header, no
    secret); the call stays `executed`, with this as its error, and the agent is told."""


class ConnectionStore(Protocol):
    """An organization's connections (table `connections`, keyed by organization)."""

    def create(self, connection: Connection) -> None:
        """Keep a new connection. Raises ConflictError (field `connection_id`) when the
        organization has one of that id."""

    def get(self, org_id: str, connection_id: str, *, field: str = "connection_id") -> Connection:
        """One of the organization's connections. Raises NotFoundError naming `field`."""

    def list(self, org_id: str) -> list[Connection]:
        """The organization's connections, by id."""

    def delete(self, org_id: str, connection_id: str) -> None:
        """Remove one of the organization's connections (nothing when it has none)."""


class ToolTransport(Protocol):
    """Makes calls on connections, every address checked by egress first (and after DNS, and on
    every redirect)."""

    def check_url(self, url: str, field: str) -> None:
        """Raise InvalidInputError (naming `field`) unless `url` is an http(s) URL whose address
        egress allows."""

    def call(
        self,
        connection: Connection,
        tool_name: str,
        arguments: Mapping[str, Any],
        headers: Mapping[str, str],
        timeout_s: float,
    ) -> Any:
        """Run one call on `connection` and return its result (any JSON value).

        `http`: `POST {url}/{tool_name}` with `arguments` as the JSON body and `headers`, the
        JSON reply the result. `mcp`: a `tools/call` of `tool_name` on the MCP server at `url`.

        Raises:
            ToolCallFailed: the call failed (see `ToolCallFailed`).
        """

    def list_tools(
        self, connection: Connection, headers: Mapping[str, str], timeout_s: float
    ) -> list[dict[str, Any]]:
        """The tools an `mcp` connection's server lists: `[{"name", "description", "inputSchema",
        "annotations"}]`.

        Raises:
            ToolCallFailed: the server could not be reached or did not answer the protocol.
        """


class Workspaces(Protocol):
    """The disposable workspace of each eval attempt: text files under
    `<org>/workspaces/<run_id>/<attempt_key>/` in the results bucket, never shared between
    attempts or runs."""

    def read(self, org_id: str, run_id: str, attempt_key: str, path: str) -> str | None:
        """A file's text, None when the attempt's workspace has no such file."""

    def write(self, org_id: str, run_id: str, attempt_key: str, path: str, content: str) -> None:
        """Write (replace) a file. Raises PayloadTooLargeError when the workspace would pass its
        size cap (`ASSAY_WORKSPACE_MAX_BYTES`)."""

    def list(self, org_id: str, run_id: str, attempt_key: str, prefix: str = "") -> list[str]:
        """The paths of the attempt's files under `prefix`, sorted."""

    def release(self, org_id: str, run_id: str) -> int:
        """Delete every workspace of the run; how many files were deleted."""


class ToolSessions(Protocol):
    """The eval attempts' sessions at the tool gateway (table `tool_sessions`, keyed by
    `<org_id>#<run_id>` and the session's id): one item each, every write but the first
    conditional."""

    def create(self, session: ToolSession) -> None:
        """Keep a new session (a PutItem). Raises ConflictError (field `session_id`) when the run
        has one of that id."""

    def get(self, org_id: str, run_id: str, session_id: str) -> ToolSession | None:
        """The session (one consistent GetItem) without its calls (`calls` empty: `close` returns
        them), None when there is none."""

    def append(self, session: ToolSession, call: str, consumed: frozenset[int]) -> bool:
        """Keep one more call (its JSON text) and the consumed recorded calls, `version` + 1: one
        UpdateItem, conditional on the session being open at `session.version`. False when
        either changed since `session` was read (nothing written)."""

    def restart(self, org_id: str, run_id: str, session_id: str) -> None:
        """Forget the calls kept and the recorded calls consumed (a try that failed is asked
        again), `version` + 1: one UpdateItem; nothing when the session is gone."""

    def close(self, org_id: str, run_id: str, session_id: str) -> ToolSession | None:
        """Close the session (one UpdateItem) and return it as closed, with every call kept;
        None when there is none."""
