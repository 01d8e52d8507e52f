"""Fakes of `chalicelib.services.ports.tools`: the organizations' connections."""

from __future__ import annotations

from chalicelib.domain.records import Connection
from chalicelib.errors import ConflictError, NotFoundError


class FakeConnections:
    """`ports.tools.ConnectionStore` in a dict keyed by (org_id, connection_id)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], Connection] = {}

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
        return [r for (org, _), r in sorted(self.kept.items()) if org == org_id]

    def delete(self, org_id: str, connection_id: str) -> None:
        self.kept.pop((org_id, connection_id), None)
