"""An organization's connections: where its agents' tools run (docs/guides/tools.md)."""

from __future__ import annotations

from pynamodb.exceptions import DoesNotExist

from chalicelib.adapters.stores.base import record_of, row_of, save_new
from chalicelib.adapters.tables import ConnectionRow
from chalicelib.domain.records import Connection
from chalicelib.errors import NotFoundError


class ConnectionStore:
    """The organizations' connections (port `ports.tools.ConnectionStore`), keyed by
    organization."""

    def create(self, connection: Connection) -> None:
        """Raises ConflictError (field `connection_id`) when the id is taken in the
        organization."""
        save_new(
            row_of(connection, ConnectionRow),
            ConnectionRow.connection_id.does_not_exist(),
            f"connection {connection.connection_id} already exists",
            field="connection_id",
        )

    def get(self, org_id: str, connection_id: str, *, field: str = "connection_id") -> Connection:
        """Raises NotFoundError (naming `field`) for an unknown connection."""
        try:
            return record_of(
                ConnectionRow.get(org_id, connection_id, consistent_read=True), Connection
            )
        except DoesNotExist:
            raise NotFoundError(f"connection {connection_id} not found", field=field) from None

    def list(self, org_id: str) -> list[Connection]:
        return [
            record_of(row, Connection) for row in ConnectionRow.query(org_id, consistent_read=True)
        ]

    def delete(self, org_id: str, connection_id: str) -> None:
        ConnectionRow(org_id, connection_id).delete()
