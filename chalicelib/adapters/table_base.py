"""What every table model shares (docs/architecture/tables.md): the composite key of an
organization's rows, the process's one DynamoDB client, and the base model. The models are in
`tables_catalog` (what an organization defines), `tables_runs` (eval runs and what they record) and
`tables` (access, and the list of every table).
"""

from __future__ import annotations

import threading
from typing import Any

from pynamodb.connection import Connection, TableConnection
from pynamodb.models import Model

from chalicelib.adapters import dynamo_parser, dynamo_serializer, dynamo_signing, local_http

KEY_SEPARATOR = "#"
"""Joins the parts of a composite key; no organization id and no id a tenant chooses contains it."""


def org_key(org_id: str, *parts: str | int) -> str:
    """The composite key `<org_id>#<part>#...` of a row of organization `org_id`.

    Args:
        org_id: the organization (never empty; never contains `#`).
        parts: the ids below it, in key order (e.g. an agent id, then a suite id); ints as decimals.
    Returns:
        e.g. `org_key("acme", "agt_1", "nightly")` -> `"acme#agt_1#nightly"`.
    Raises:
        ValueError: an empty organization id, or one with `#` (a bug: identities refuse those).
    """
    if not org_id or KEY_SEPARATOR in org_id:
        raise ValueError(f"not an organization id: {org_id!r}")
    return KEY_SEPARATOR.join([org_id, *(str(p) for p in parts)])


_CLIENTS: dict[tuple[str | None, str | None], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def share_client(connection: Connection) -> Connection:
    """Give `connection` the process's one DynamoDB client for its endpoint and region, made on
    first use, and return it.

    PynamoDB makes a botocore client per model (per table), about 60 ms of CPU each: a worker
    touching a dozen tables spent most of a second of its first case making clients. One client,
    thread-safe like every botocore client, serves them all. (`_client` is PynamoDB's own cache
    of it, read by `Connection.client`.) Its responses are parsed by `dynamo_parser`; against a
    loopback endpoint (the embedded stack, where the service's CPU per case is measured) its item
    requests are written by `dynamo_serializer`, signed by `dynamo_signing` and sent by
    `local_http`, while AWS and LocalStack keep botocore's own steps.
    """
    key = (connection.host, connection.region)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            connection.session.register_component(
                "response_parser_factory", dynamo_parser.DynamoParserFactory()
            )
            client = _CLIENTS[key] = connection.client
            if local_http.is_local(client):  # AWS and LocalStack keep botocore's own steps
                dynamo_serializer.install(client)
                dynamo_signing.install(client)
                local_http.install(client)
    connection._client = client
    return connection


class TableBase(Model):
    class Meta:
        abstract = True
        region = "us-east-1"
        table_name = "unset"
        billing_mode = "PAY_PER_REQUEST"

    @classmethod
    def _get_connection(cls) -> TableConnection:
        """PynamoDB's connection of the model, on the shared client (`share_client`)."""
        table = super()._get_connection()
        if table.connection._client is None:
            share_client(table.connection)
        return table
