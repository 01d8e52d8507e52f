"""Agents, drafts and published versions; the publish pipeline's `version_published` events."""

from __future__ import annotations

import json
import uuid
from dataclasses import replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain.events import VersionPublished
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import check_tenant_id
from chalicelib.domain.limits import MAX_SPEC_BYTES
from chalicelib.domain.records import Agent, AgentVersion
from chalicelib.domain.spec import spec_hash
from chalicelib.errors import InvalidInputError, NotFoundError, PayloadTooLargeError
from chalicelib.services import connections, draft_checks, messagebus, redacting


def _validate_spec(c: Container, who: Identity, spec: Any, field: str = "spec") -> dict[str, Any]:
    """`spec` when it may be an agent's: a JSON object of at most `MAX_SPEC_BYTES` that its
    runtime accepts, that holds no secret and whose tools name connections of the organization.
    Raises InvalidInputError, PayloadTooLargeError (413) naming `field` for a spec too large to
    keep, or NotFoundError naming `<field>.tools[i].connection_id` for a tool whose connection
    the organization does not have."""
    if not isinstance(spec, dict):
        raise InvalidInputError(f"{field} must be a JSON object", field=field)
    size = len(json.dumps(spec, ensure_ascii=False).encode())
    if size > MAX_SPEC_BYTES:
        raise PayloadTooLargeError(
            f"{field} is {size:,} bytes of JSON; a spec holds at most {MAX_SPEC_BYTES:,}",
            field=field,
        )
    c.runtimes.validate_spec(spec)
    redacting.refuse_secrets(c, who.org_id, spec, field)
    connections.check_spec_connections(c, who.org_id, spec, field)
    return spec


def create_agent(
    c: Container, who: Identity, *, name: str, spec: dict[str, Any], agent_id: str | None = None
) -> Agent:
    """Create an agent whose draft is `spec`.

    An agent id is unique within the organization only: another organization may have the same
    one, which is another agent.
    Raises:
        InvalidInputError: the spec names an unknown runtime or misses a field it needs; an
            `agent_id` with `#` or `/`.
        ConflictError: `agent_id` is taken in the organization.
    """
    if agent_id is not None:
        check_tenant_id(agent_id, "agent_id")
    spec = _validate_spec(c, who, spec)
    now = iso(c.clock.now())
    agent_id = agent_id or f"agt_{uuid.uuid4().hex[:12]}"
    row = Agent(
        org_id=who.org_id,
        agent_id=agent_id,
        name=name,
        draft_spec=spec,
        draft_spec_hash=spec_hash(spec),
        draft_updated_at=now,
        latest_version=0,
        created_at=now,
        created_by=who.user_id,
    )
    c.agents.create(row)
    return row


def list_versions(c: Container, who: Identity, agent_id: str) -> list[AgentVersion]:
    """The agent's published versions, newest first. Raises NotFoundError for an unknown agent."""
    c.agents.get(who.org_id, agent_id)
    return c.agents.list_versions(who.org_id, agent_id)


def update_draft(
    c: Container,
    who: Identity,
    agent_id: str,
    *,
    spec: dict[str, Any] | None,
    name: str | None = None,
) -> Agent:
    """Replace the draft spec (and/or rename); `spec_hash` and `updated_at` follow.

    Saving the same spec again keeps `updated_at` and the hash, so it never makes a verdict stale.
    Raises NotFoundError for an unknown agent, InvalidInputError for a spec that cannot run.
    """
    row = c.agents.get(who.org_id, agent_id)
    edited = row if name is None else replace(row, name=name)
    if spec is not None:
        spec = _validate_spec(c, who, spec)
        h = spec_hash(spec)
        if h != row.draft_spec_hash:
            edited = replace(
                edited, draft_spec=spec, draft_spec_hash=h, draft_updated_at=iso(c.clock.now())
            )
    if edited is not row:
        c.agents.edit_draft(row, edited)
    return c.agents.get(who.org_id, agent_id)


def publish(
    c: Container,
    who: Identity,
    agent_id: str,
    *,
    version: int | None = None,
    spec: dict[str, Any] | None = None,
    source: str = "api",
) -> tuple[AgentVersion, bool]:
    """Publish `spec` (default: the draft) as `version` (default: latest + 1).

    What the published spec names is checked against `who`'s own access by the rule a start of
    the draft uses (`draft_checks.check`): the same problems refuse both, so a person who may
    edit the agent cannot publish, and so have run as a version, a secret or connection they
    could not run in the draft. The service acting for a pipeline (`who.permissions` None) is
    refused nothing there; its signed message is its authority.

    Returns:
        (the version row, created) — created is False when the same version with the same spec
        existed already (re-publishing is a no-op).
    Raises:
        ForbiddenError / InvalidInputError: (field `draft`, with `problems`) "the draft cannot
            be published": a reference `who` may not use (403 when every problem is a
            permission) or one that does not exist (400); "the spec ...", field `spec`, for a
            spec given.
        NotFoundError: unknown agent, or (field `spec.tools[i].connection_id`) a tool naming a
            connection the organization does not have. InvalidInputError: bad spec or
            version < 1.
        ConflictError: the version exists with another spec (versions are immutable).
    """
    agent = c.agents.get(who.org_id, agent_id)
    if spec is None:  # the draft passed `_validate_spec` when saved; it is checked again below
        spec, field = agent.draft_spec, "draft"
    else:
        spec, field = _validate_spec(c, who, spec), "spec"
    draft_checks.check(
        c, who, agent_id, spec, refusal=f"the {field} cannot be published", field=field
    )
    if field == "draft":  # a connection may have gone since it was saved (the service acting too)
        connections.check_spec_connections(c, who.org_id, spec)
    if version is None:
        version = int(agent.latest_version or 0) + 1
    if version < 1:
        raise InvalidInputError("version must be a positive integer", field="version")
    row = AgentVersion(
        org_id=who.org_id,
        agent_id=agent_id,
        version=version,
        spec=spec,
        spec_hash=spec_hash(spec),
        model_profile_id=spec.get("model_profile_id"),
        published_at=iso(c.clock.now()),
        published_by=who.user_id,
        source=source,
    )
    created = c.agents.publish(row)
    # Suites on publish check every new version; a redelivered publish finds them triggered already.
    messagebus.publish(c, VersionPublished(who.org_id, agent_id, version))
    # Not created: the same spec was published as that version before, which is what it returns.
    return (row if created else c.agents.get_version(who.org_id, agent_id, version) or row), created


def get_version(c: Container, who: Identity, agent_id: str, version: int) -> AgentVersion:
    """One published version of the organization's agent. Raises NotFoundError (agent or
    version)."""
    c.agents.get(who.org_id, agent_id)
    row = c.agents.get_version(who.org_id, agent_id, version)
    if row is None:
        raise NotFoundError(f"version {version} of agent {agent_id} not found", field="version")
    return row
