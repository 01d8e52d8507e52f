"""Environments: each serves a version of an agent; promotions move what it serves
(docs/guides/suites.md); its test connections are where eval runs in it make their tool calls
instead of production (docs/guides/tools.md)."""

from __future__ import annotations

from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain.events import EnvironmentRemoved
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import check_tenant_id
from chalicelib.domain.records import Environment
from chalicelib.errors import ConflictError, NotFoundError
from chalicelib.services import connections, draft_checks, messagebus


def create(
    c: Container,
    who: Identity,
    *,
    environment_id: str,
    name: str = "",
    default: bool = False,
    test_connections: dict[str, str] | None = None,
) -> Environment:
    """Create an environment; the organization's first is its default, and `default` makes it so.
    `test_connections`: `{connection_id: test_connection_id}` (see `set_test_connections`).

    Raises:
        InvalidInputError: an id with `#` or `/`; test connections that are not a map of
            connection ids, or map one to itself (field `test_connections.<key>`).
        NotFoundError: (field `test_connections.<key>`) a connection the organization does not
            have.
        ForbiddenError: (field `test_connections`, permission `secrets:manage`) a test
            connection that sends a secret and was saved before its secret was checked, mapped by
            somebody without `secrets:manage` (`draft_checks.check_test_connections`).
        ConflictError: an id the organization has already.
    """
    check_tenant_id(environment_id, "environment_id")
    mapped = connections.check_test_connections(c, who.org_id, test_connections or {})
    draft_checks.check_test_connections(c, who, mapped)
    now = iso(c.clock.now())
    row = Environment(
        org_id=who.org_id,
        environment_id=environment_id,
        name=name or environment_id,
        serving={},
        created_at=now,
        created_by=who.user_id,
        test_connections=mapped,
    )
    c.environments.create(row)
    org = c.orgs.ensure(who.org_id, now_iso=now)
    if default or not org.default_environment_id:
        # One attribute on the organization names the default: concurrent creates leave exactly one.
        c.orgs.set_default_environment(who.org_id, environment_id, only_if_unset=not default)
    return row


def default_id(c: Container, org_id: str) -> str | None:
    org = c.orgs.get(org_id)
    return org.default_environment_id if org is not None else None


def default_of(c: Container, org_id: str) -> Environment | None:
    """The organization's default environment, None when it has none."""
    env_id = default_id(c, org_id)
    if env_id is None:
        return None
    try:
        return c.environments.get(org_id, env_id)
    except NotFoundError:
        return None


def resolve(c: Container, org_id: str, environment_id: str | None) -> Environment:
    """The named environment, or the default one for None. Raises NotFoundError."""
    if environment_id is None:
        row = default_of(c, org_id)
        if row is None:
            raise NotFoundError(
                "the organization has no default environment: create one (assay environments "
                "create production --default, or POST /api/v1/environments with default true) "
                "or pass environment_id",
                field="environment_id",
            )
        return row
    return c.environments.get(org_id, environment_id)


def served(c: Container, org_id: str, environment_id: str | None, agent_id: str) -> int | None:
    """The version of `agent_id` an environment serves, None when it serves none."""
    version = (resolve(c, org_id, environment_id).serving or {}).get(agent_id)
    return int(version) if version is not None else None


def active_runs_using(
    c: Container,
    org_id: str,
    *,
    environment_id: str | None = None,
    model_profile_id: str | None = None,
) -> list[str]:
    """Queued or running runs that name the environment or run an arm on the model profile."""
    out = []
    default = default_id(c, org_id) if environment_id is not None else None
    for run in c.runs.active(org_id):
        if environment_id is not None and (
            run.environment_id == environment_id
            or (run.environment_id in (None, "default") and environment_id == default)
        ):
            out.append(run.run_id)
        elif model_profile_id is not None and any(
            a.model_profile_id == model_profile_id for a in run.arms
        ):
            out.append(run.run_id)
    return out


def delete(c: Container, who: Identity, environment_id: str) -> None:
    """Remove an environment: refused (409) while a run uses it; its suites pause, saying why.

    Raises NotFoundError for an unknown one.
    """
    c.environments.get(who.org_id, environment_id)
    was_default = default_id(c, who.org_id) == environment_id
    busy = active_runs_using(c, who.org_id, environment_id=environment_id)
    if busy:
        raise ConflictError(
            f"environment {environment_id} is used by eval run {busy[0]} (queued or running): "
            "wait for it or cancel it",
            field="environment_id",
            run_ids=busy,
        )
    c.environments.delete(who.org_id, environment_id)
    if was_default:
        c.orgs.set_default_environment(who.org_id, None)
    messagebus.publish(c, EnvironmentRemoved(who.org_id, environment_id, was_default))


def set_test_connections(
    c: Container, who: Identity, environment_id: str, test_connections: Any
) -> Environment:
    """Replace an environment's test connections: `{connection_id: test_connection_id}`. During an
    eval run in the environment a tool whose connection is a key runs on the test connection
    instead (docs/guides/tools.md); `{}` removes them all.

    Returns:
        The environment as it now is.
    Raises:
        NotFoundError: (field `environment_id`) no such environment; (field
            `test_connections.<key>`) a key or value the organization has no connection of.
        InvalidInputError: (field `test_connections` or `test_connections.<key>`) not a map of
            connection ids, or a connection mapped to itself.
        ForbiddenError: (field `test_connections`, permission `secrets:manage`) as `create`.
        ConflictError: (field `environment_id`) a queued or running eval run uses the environment
            (`run_ids`): it keeps the test connections it started with.
    """
    c.environments.get(who.org_id, environment_id)
    mapped = connections.check_test_connections(c, who.org_id, test_connections)
    draft_checks.check_test_connections(c, who, mapped)
    busy = active_runs_using(c, who.org_id, environment_id=environment_id)
    if busy:
        raise ConflictError(
            f"environment {environment_id} is used by eval run {busy[0]} (queued or running): "
            "its test connections change when it ends; wait for it or cancel it",
            field="environment_id",
            run_ids=busy,
        )
    return c.environments.set_test_connections(who.org_id, environment_id, mapped)
