"""The organization's connections: where its agents' tools run (docs/guides/tools.md).

A connection is an address (`http`: a tool call is `POST {url}/{tool_name}`; `mcp`: an MCP server)
and optionally the name of one of the organization's secrets, sent as its `Authorization` header.
The URL is the tenant's and untrusted: egress checks it when it is saved (a literal private,
link-local or metadata address, or a name resolving to one, is refused) and again on every call.

What uses a connection keeps it: a queued or running eval run whose arms' tools name it (or whose
isolation settings map to or from it), and an environment whose test connections map to or from
it. Removing it then is a 409 naming what holds it.

An agent's spec names connections by id in its tools' `connection_id`; saving a spec checks each
names one of the organization's connections (`check_spec_connections`), and an environment's
test connections map connections to connections of the organization (`check_test_connections`).
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain import access, tools
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import check_tenant_id, name_problem
from chalicelib.domain.records import ActiveRun, Connection
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError
from chalicelib.services import draft_checks, redacting

KINDS = ("http", "mcp")
"""The kinds of connection: `http` (a call is a POST of its arguments) and `mcp` (an MCP server
over streamable HTTP)."""

MAX_URL_LENGTH = 2048
"""The longest URL a connection may have, in characters."""

MAX_DESCRIPTION_LENGTH = 1000
"""The longest description a connection may have, in characters."""

MAX_TEST_CONNECTIONS = 100
"""The most entries one environment's test connections may hold."""


def create(
    c: Container,
    who: Identity,
    *,
    connection_id: str,
    kind: str,
    url: str,
    auth_secret: str | None = None,
    description: str = "",
) -> Connection:
    """Keep a new connection of the caller's organization.

    Args:
        connection_id: its id, unique in the organization (no `#` or `/`).
        kind: one of `KINDS`.
        url: an http(s) URL egress allows (checked now, and again on every call).
        auth_secret: the name of the organization's secret sent as the `Authorization` header;
            None sends none. Only the name is kept, never a value.
        description: words for people.

    Raises:
        InvalidInputError: naming the field: an id with `#` or `/`, an unknown kind, a URL that is
            not http(s), too long, or whose address egress refuses (private, link-local,
            metadata; `url`), a secret name no secret can have (`auth_secret`), a URL or
            description that holds one of the organization's secret values.
        ForbiddenError: (403, field `auth_secret`, permission `secrets:manage`) a secret named
            by somebody without `secrets:manage` (`draft_checks.check_connection_secret`): every
            call sends it to `url`. The connection records that its saver held the permission
            (`secrets_vetted`).
        ConflictError: (field `connection_id`) the organization has a connection of that id.
    """
    check_tenant_id(connection_id, "connection_id")
    if kind not in KINDS:
        raise InvalidInputError(
            f"kind must be one of: {', '.join(KINDS)}", field="kind", allowed=list(KINDS)
        )
    if not isinstance(url, str) or len(url) > MAX_URL_LENGTH:
        raise InvalidInputError(
            f"url must be an http:// or https:// URL of at most {MAX_URL_LENGTH} characters",
            field="url",
        )
    if auth_secret is not None:
        problem = name_problem(auth_secret)
        if problem is not None:
            raise InvalidInputError(
                f"auth_secret must name one of the organization's secrets: a secret name {problem}",
                field="auth_secret",
            )
    if not isinstance(description, str) or len(description) > MAX_DESCRIPTION_LENGTH:
        raise InvalidInputError(
            f"description must be text of at most {MAX_DESCRIPTION_LENGTH} characters",
            field="description",
        )
    # Every call sends the secret to the URL: aiming a secret needs secrets:manage.
    draft_checks.check_connection_secret(c, who, auth_secret, url)
    # The URL and description are shown as written: a secret pasted in would be read back.
    redacting.refuse_secrets(c, who.org_id, {"url": url, "description": description}, "")
    # Last: egress may resolve the URL's name.
    c.tool_transport.check_url(url, "url")
    row = Connection(
        org_id=who.org_id,
        connection_id=connection_id,
        kind=kind,
        url=url,
        auth_secret=auth_secret,
        description=description,
        created_at=iso(c.clock.now()),
        created_by=who.user_id,
        secrets_vetted=who.may(access.SECRETS_MANAGE),
    )
    c.connections.create(row)
    return row


def get(c: Container, who: Identity, connection_id: str) -> Connection:
    """One of the caller's organization's connections. Raises NotFoundError (field
    `connection_id`); another organization's connection is not found either."""
    return c.connections.get(who.org_id, connection_id)


def list_connections(c: Container, who: Identity) -> list[Connection]:
    """The caller's organization's connections, by id."""
    return sorted(c.connections.list(who.org_id), key=lambda r: r.connection_id)


def _uses(run: ActiveRun, connection_id: str) -> bool:
    """Whether an active run's arms' tools name the connection, or its isolation settings map to
    or from it."""
    if any(connection_id in tools.connection_ids(arm.spec or {}) for arm in run.arms):
        return True
    settings = run.settings if isinstance(run.settings, Mapping) else {}
    isolation = settings.get("isolation")
    mapped = isolation.get("test_connections") if isinstance(isolation, Mapping) else None
    if isinstance(mapped, Mapping):
        return connection_id in mapped or connection_id in mapped.values()
    return False


def active_runs_using(c: Container, org_id: str, connection_id: str) -> list[str]:
    """The ids of the organization's queued or running runs that use the connection (see
    `_uses`), newest first."""
    return [run.run_id for run in c.runs.active(org_id) if _uses(run, connection_id)]


def environments_mapping(c: Container, org_id: str, connection_id: str) -> list[str]:
    """The ids of the organization's environments whose test connections map to or from the
    connection, sorted."""
    out = []
    for env in c.environments.list(org_id):
        mapped = env.test_connections if isinstance(env.test_connections, Mapping) else {}
        if connection_id in mapped or connection_id in mapped.values():
            out.append(env.environment_id)
    return sorted(out)


def delete(c: Container, who: Identity, connection_id: str) -> None:
    """Remove one of the organization's connections.

    Raises:
        NotFoundError: (field `connection_id`) the organization has no such connection.
        ConflictError: (field `connection_id`) a queued or running eval run uses it (`run_ids`),
            or an environment's test connections map to or from it (`environment_ids`); the
            message names the first.
    """
    c.connections.get(who.org_id, connection_id)
    busy = active_runs_using(c, who.org_id, connection_id)
    if busy:
        raise ConflictError(
            f"connection {connection_id} is used by eval run {busy[0]} (queued or running): "
            "wait for it or cancel it",
            field="connection_id",
            run_ids=busy,
        )
    mapping = environments_mapping(c, who.org_id, connection_id)
    if mapping:
        raise ConflictError(
            f"connection {connection_id} is a test connection of environment {mapping[0]}: "
            f"change its test connections first (assay environments test-connections {mapping[0]})",
            field="connection_id",
            environment_ids=mapping,
        )
    c.connections.delete(who.org_id, connection_id)


def check_test_connections(
    c: Container, org_id: str, raw: Any, field: str = "test_connections"
) -> dict[str, str]:
    """An environment's test connections, checked: `{connection_id: test_connection_id}`, where
    every key and value is one of the organization's connections and no key maps to itself.

    Raises:
        InvalidInputError: (field `field`) not an object or over `MAX_TEST_CONNECTIONS` entries;
            (field `<field>.<key>`) a value that is not an id, or a key mapped to itself.
        NotFoundError: (field `<field>.<key>`) a key or a value the organization has no
            connection of.
    """
    if not isinstance(raw, Mapping):
        raise InvalidInputError(
            f"{field} must be an object {{connection_id: test_connection_id}}", field=field
        )
    if len(raw) > MAX_TEST_CONNECTIONS:
        raise InvalidInputError(
            f"{field} may hold at most {MAX_TEST_CONNECTIONS} entries", field=field
        )
    mapped: dict[str, str] = {}
    for key, value in raw.items():
        where = f"{field}.{key}"
        check_tenant_id(key, where)
        if not isinstance(value, str):
            raise InvalidInputError(f"{where} must be a connection id", field=where)
        check_tenant_id(value, where)
        if key == value:
            raise InvalidInputError(
                f"{where} maps connection {key} to itself: a test connection is another "
                "connection, never production",
                field=where,
            )
        mapped[key] = value
    if mapped:
        known = {r.connection_id for r in c.connections.list(org_id)}
        for key, value in mapped.items():
            missing = key if key not in known else value if value not in known else None
            if missing is not None:
                raise NotFoundError(
                    f"connection {missing} not found (in {field}.{key}): create it first "
                    "(POST /api/v1/connections)",
                    field=f"{field}.{key}",
                )
    return mapped


def check_spec_connections(c: Container, org_id: str, spec: Any, field: str = "spec") -> None:
    """Check every tool of an agent's spec that names a connection names one of the
    organization's (a spec that passed `validate_spec`; malformed tools are left to it).

    Raises:
        NotFoundError: (field `<field>.tools[i].connection_id` or
            `<field>.mcp_connections[i]`) the first connection the organization does not have.
        InvalidInputError: (field `<field>.mcp_connections[i]`) a connection that is not `mcp`.
    """
    if not isinstance(spec, Mapping):
        return
    try:
        declared = tools.parse_tools(spec.get("tools"), f"{field}.tools")
    except InvalidInputError:
        return
    try:
        servers = tools.parse_mcp_connections(
            spec.get("mcp_connections"), f"{field}.mcp_connections"
        )
    except InvalidInputError:
        return
    named = [
        (f"{field}.tools[{i}].connection_id", t.connection_id)
        for i, t in enumerate(declared)
        if t.connection_id
    ] + [(f"{field}.mcp_connections[{i}]", s) for i, s in enumerate(servers)]
    if not named:
        return
    known = {r.connection_id: r for r in c.connections.list(org_id)}
    for where, connection_id in named:
        if connection_id not in known:
            raise NotFoundError(
                f"{where}: connection {connection_id} not found: create it first "
                "(POST /api/v1/connections, or assay connections create)",
                field=where,
            )
    for i, server in enumerate(servers):
        if known[server].kind != "mcp":
            where = f"{field}.mcp_connections[{i}]"
            raise InvalidInputError(
                f"{where}: connection {server} is of kind {known[server].kind!r}; only an mcp "
                "connection lists its tools",
                field=where,
            )
