"""Messages from publish pipelines on the agent-events queue.

Schema (documented in the README):

    {"type": "version_published", "org_id": "...", "agent_id": "...", "version": 3,
     "spec": {...}, "published_by": "release-bot", "signature": "sha256=<hex>"}
    {"type": "dependency_changed", "org_id": "...", "agent_id": "...", "version": 3,
     "dependency": {"kind": "skill" | "context_file" | "knowledge_base", "id": "...",
                    "change": "edited" | "added" | "reingested" | "deleted"}}

    {"type": "run_completed", "org_id": "...", "agent_id": "...", "version": 3, "model": "...",
     "surface": "production", "key": "<idempotency key>", "cost_usd": "0.0042",
     "input_tokens": 812, "output_tokens": 95, "asked": "<first user turn>"}

(`version` of a dependency change is the version that binds it; absent, the change concerns
whatever version each suite checks. A completed run is a production agent run reported by the
platform that serves the agent, counted once per `key` and spent from the agent's and the
organization's monthly budgets, as `POST /api/v1/usage/runs` does: docs/reference/usage.md.)

Every message is signed with its organization's `SIGNING_SECRET` (`signature`): the queue is
shared by every organization, and an unsigned or wrongly signed one does nothing.

A malformed message is not retried: it goes straight to the DLQ with its reason, so a bad
message can never loop.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
from typing import Annotated, Any

from pydantic import (
    AfterValidator,
    BaseModel,
    ConfigDict,
    Field,
    StrictInt,
    ValidationError,
)

from chalicelib.bootstrap import Container
from chalicelib.domain.identity import Identity, is_org_id
from chalicelib.domain.spec import canonical_json
from chalicelib.errors import AssayError, ConflictError, invalid_input
from chalicelib.services import agents as agent_service
from chalicelib.services import suites, usage

log = logging.getLogger(__name__)


def _org_id(value: str) -> str:
    if not is_org_id(value):
        raise ValueError("not an organization id (1-100 letters, digits and _ . @ -, no '..')")
    return value


OrgId = Annotated[str, AfterValidator(_org_id)]


class _Signed(BaseModel):
    """What every event carries: its organization and the signature over the message."""

    model_config = ConfigDict(extra="forbid")

    org_id: OrgId
    signature: str = ""


class VersionPublished(_Signed):
    """A publish pipeline published `version` of `agent_id` with `spec`."""

    type: str = Field(pattern="^version_published$")
    agent_id: str = Field(min_length=1)
    version: StrictInt = Field(ge=1)
    """A JSON number: `true` or `"3"` is malformed, not version 1 or 3."""
    spec: dict[str, Any]
    published_by: str = "pipeline"


class Dependency(BaseModel):
    model_config = ConfigDict(extra="forbid")

    kind: str = Field(pattern="^(skill|context_file|knowledge_base)$")
    id: str = Field(min_length=1)
    change: str = Field("edited", pattern="^(edited|added|reingested|deleted)$")


class DependencyChanged(_Signed):
    """A skill, context file or knowledge-base document a version binds changed."""

    type: str = Field(pattern="^dependency_changed$")
    agent_id: str = Field(min_length=1)
    version: StrictInt | None = Field(None, ge=1)
    dependency: Dependency


class RunCompleted(_Signed):
    """A production run of `agent_id` the platform served (docs/reference/usage.md)."""

    type: str = Field(pattern="^run_completed$")
    agent_id: str = Field(min_length=1)
    surface: str = Field("production", pattern="^production$")
    """Only production runs are reported: assay writes the eval and grader runs itself."""
    key: str = Field(min_length=1)
    version: StrictInt | None = Field(None, ge=1)
    model: str | None = None
    cost_usd: Any = Field(...)
    input_tokens: StrictInt | None = None
    output_tokens: StrictInt | None = None
    asked: str | None = None


class MalformedEventError(Exception):
    """The message can never be processed; `reason` says why."""


SIGNING_SECRET = "pipeline-signing-key"
"""The organization's secret (`PUT /api/v1/secrets/pipeline-signing-key`, secrets:manage) its
publish pipeline signs its messages with: the queue is shared, so a message names its organization
and proves it with `signature`, `sha256=` and the hex HMAC-SHA256 of the message's canonical JSON
without `signature` (`assay.client.sign_event`)."""


def _signed[E: _Signed](c: Container, model: type[E], data: dict[str, Any]) -> E:
    """The message `data` as the event `model`, once it parsed and carries its organization's
    signature (`_check_signature`).

    Raises:
        MalformedEventError: it does not parse (naming the field), or its signature is wrong.
    """
    try:
        event = model.model_validate(data)
    except ValidationError as exc:
        raise MalformedEventError(invalid_input(exc).message) from None
    _check_signature(c, event.org_id, data, event.signature)
    return event


def _check_signature(c: Container, org_id: str, data: dict[str, Any], signature: str) -> None:
    """Raises MalformedEventError unless `signature` is the organization's pipeline secret's over
    the message: a sender who does not hold it acts for nobody (never for another organization)."""
    secret = c.secrets.get(org_id, SIGNING_SECRET)
    if not secret:
        raise MalformedEventError(
            f"organization {org_id} has no {SIGNING_SECRET} secret to check the message's "
            "signature with: an admin sets one (assay secrets set)"
        )
    unsigned = {k: v for k, v in data.items() if k != "signature"}
    expected = (
        "sha256="
        + hmac.new(secret.encode(), canonical_json(unsigned).encode(), hashlib.sha256).hexdigest()
    )
    if not hmac.compare_digest(signature.encode(), expected.encode()):
        raise MalformedEventError(
            f"the signature does not verify with organization {org_id}'s {SIGNING_SECRET}"
            if signature
            else "the message is not signed (signature): sign it with the organization's "
            f"{SIGNING_SECRET}"
        )


def handle(c: Container, body: str) -> dict[str, Any]:
    """Apply one agent event.

    Returns `{"agent_id", "version", "created"}`.
    Raises:
        MalformedEventError: bad JSON, an unknown type, missing fields, an unknown agent, a bad
            spec, or a version re-published with another spec — none of which a retry can fix.
    """
    try:
        data = json.loads(body)
    except (ValueError, RecursionError) as exc:
        raise MalformedEventError(f"not JSON: {exc}") from None
    kind = data.get("type") if isinstance(data, dict) else None
    if kind == "dependency_changed":
        return _dependency_changed(c, data)
    if kind == "run_completed":
        return _run_completed(c, data)
    if kind != "version_published":
        raise MalformedEventError(
            f"unknown event type {kind!r}; expected 'version_published', 'dependency_changed' "
            "or 'run_completed'"
        )
    event = _signed(c, VersionPublished, data)
    who = Identity(event.org_id, event.published_by)
    try:
        row, created = agent_service.publish(
            c, who, event.agent_id, version=event.version, spec=event.spec, source="pipeline"
        )
    except AssayError as exc:
        raise MalformedEventError(exc.message) from None
    log.info(
        "agent %s version %s published by pipeline (created=%s)",
        event.agent_id,
        event.version,
        created,
    )
    return {"agent_id": row.agent_id, "version": int(row.version), "created": created}


def _dependency_changed(c: Container, data: dict[str, Any]) -> dict[str, Any]:
    event = _signed(c, DependencyChanged, data)
    try:
        c.agents.get(event.org_id, event.agent_id)
    except AssayError as exc:
        raise MalformedEventError(exc.message) from None
    taken = suites.on_dependency_changed(c, event.org_id, event.agent_id, event.version)
    log.info(
        "agent %s dependency %s %s: %d suites due",
        event.agent_id,
        event.dependency.kind,
        event.dependency.change,
        taken,
    )
    return {"agent_id": event.agent_id, "version": event.version, "suites": taken}


def _run_completed(c: Container, data: dict[str, Any]) -> dict[str, Any]:
    """Count a production run once (`services.usage.report`), as the platform's key would."""
    event = _signed(c, RunCompleted, data)
    run = event.model_dump(exclude={"type", "org_id", "surface", "signature"}, exclude_none=True)
    try:
        counted = usage.report(c, Identity(event.org_id, "pipeline"), {"runs": [run]})
    except ConflictError:
        raise  # the month's counters were busy: delivered again, it counts once
    except AssayError as exc:
        raise MalformedEventError(exc.message) from None
    return {"agent_id": event.agent_id, "key": event.key, **counted}
