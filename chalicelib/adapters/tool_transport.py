"""Calls made on an organization's connections (docs/guides/tools.md).

An `http` connection answers a call as `POST {url}/{tool_name}` with the arguments as the JSON
body and the connection's auth header; its JSON reply is the result. Every hop goes through the
same egress-checked transport as the agents' own requests (`runtimes.transport.HttpTransport`): the
address is checked after DNS and on every redirect, before anything connects, so no tenant's
connection reaches a private, link-local or metadata address unless the operator allows it.
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any
from urllib.parse import quote

from chalicelib.adapters.egress import Egress
from chalicelib.adapters.runtimes.transport import HttpTransport, clip
from chalicelib.domain.records import Connection
from chalicelib.domain.text import json_of_bytes
from chalicelib.errors import AgentCrashError, ProviderError
from chalicelib.services.ports.tools import ToolCallFailed


class ConnectionTransport:
    """Makes calls on connections (port `ports.tools.ToolTransport`)."""

    def __init__(self, egress: Egress | None = None, transport: HttpTransport | None = None):
        """Args:
        egress: the egress policy every address is checked with.
        transport: the HTTP client holder; default one built on first call with `egress`.
        """
        self._transport = transport or HttpTransport(egress)

    @property
    def egress(self) -> Egress:
        """The egress policy URLs are checked with."""
        return self._transport.egress

    def check_url(self, url: str, field: str) -> None:
        """Raise InvalidInputError (naming `field`) unless egress allows `url` (its shape, a literal
        address, and what its name resolves to now)."""
        self.egress.check(url, field)

    def call(
        self,
        connection: Connection,
        tool_name: str,
        arguments: Mapping[str, Any],
        headers: Mapping[str, str],
        timeout_s: float,
    ) -> Any:
        """Run one call on `connection` (see the module docstring); its JSON result.

        Raises:
            ToolCallFailed: an address egress refuses, a transport error or timeout, a status
                that is not 2xx, or a reply that is not JSON; the message names the connection
                and never a header.
        """
        if connection.kind != "http":
            raise ToolCallFailed(
                f"connection {connection.connection_id!r} is of kind {connection.kind!r}, which "
                "this service cannot call"
            )
        source = f"connection {connection.connection_id!r}"
        url = connection.url.rstrip("/") + "/" + quote(tool_name, safe="")
        try:
            status, body = self._transport.post_json(
                url,
                dict(arguments),
                headers,
                timeout_s,
                source,
                secret_headers=frozenset(name.lower() for name in headers),
            )
        except (AgentCrashError, ProviderError) as exc:
            raise ToolCallFailed(clip(str(exc))) from None
        if not 200 <= status < 300:
            raise ToolCallFailed(f"{source} answered {tool_name} with status {status}")
        if not body.strip():
            return None
        try:
            return json_of_bytes(body)
        except ValueError:
            raise ToolCallFailed(
                f"{source} answered {tool_name} with a body that is not JSON"
            ) from None

    def list_tools(
        self, connection: Connection, headers: Mapping[str, str], timeout_s: float
    ) -> list[dict[str, Any]]:
        """An `http` connection lists no tools (the spec declares them).

        Raises:
            ToolCallFailed: always for a connection that is not `mcp`.
        """
        raise ToolCallFailed(
            f"connection {connection.connection_id!r} is of kind {connection.kind!r}: only an "
            "MCP server lists its tools"
        )

    def close(self) -> None:
        """Close the HTTP clients, if built."""
        self._transport.close()
