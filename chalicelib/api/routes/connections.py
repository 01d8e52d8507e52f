"""Routes of the organization's connections (where its agents' tools run) and environments' test
connections (docs/guides/tools.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalice import Response

from chalicelib.api.common import api_view
from chalicelib.api.lazy import LazyModule
from chalicelib.api.routes.base import bp
from chalicelib.api.schemas import CreateConnection, SetTestConnections

if TYPE_CHECKING:
    from chalicelib.api import views
    from chalicelib.services import connections as connection_service
    from chalicelib.services import environments as environment_service
else:  # imported by the first request that needs each (`chalicelib.api.lazy`)
    views = LazyModule("chalicelib.api.views")
    connection_service = LazyModule("chalicelib.services.connections")
    environment_service = LazyModule("chalicelib.services.environments")


# --- connections -----------------------------------------------------------------------------


@bp.route("/api/v1/connections", methods=["POST"])
@api_view(bp, body=CreateConnection, needs=("settings:manage",))
def create_connection(c, who, body):
    """Create a connection: its URL is checked by egress (400 naming `url`), its id is new (409)."""
    row = connection_service.create(c, who, **body.model_dump())
    return views.connection_view(row), 201


@bp.route("/api/v1/connections", methods=["GET"])
@api_view(bp, needs=("agents:view",))
def list_connections(c, who):
    return {
        "connections": [
            views.connection_view(r) for r in connection_service.list_connections(c, who)
        ]
    }


@bp.route("/api/v1/connections/{connection_id}", methods=["GET"])
@api_view(bp, needs=("agents:view",))
def get_connection(c, who, connection_id):
    return views.connection_view(connection_service.get(c, who, connection_id))


@bp.route("/api/v1/connections/{connection_id}", methods=["DELETE"])
@api_view(bp, needs=("settings:manage",))
def delete_connection(c, who, connection_id):
    """Delete a connection: 409 while a queued or running eval run uses it, or an environment's
    test connections map to or from it."""
    connection_service.delete(c, who, connection_id)
    return Response(body="", status_code=204)


# --- environments' test connections ----------------------------------------------------------


@bp.route("/api/v1/environments/{environment_id}/test-connections", methods=["PUT"])
@api_view(bp, body=SetTestConnections, needs=("settings:manage",))
def set_test_connections(c, who, environment_id, body):
    """Replace an environment's test connections: 409 while a queued or running eval run uses
    the environment."""
    row = environment_service.set_test_connections(c, who, environment_id, body.test_connections)
    return views.environment_view(row, environment_service.default_id(c, who.org_id))
