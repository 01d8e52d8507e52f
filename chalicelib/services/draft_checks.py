"""What a draft names, checked against the access of whoever acts on it: its starter before it
runs or is priced, its publisher before it becomes a version (docs/guides/agents.md, "Running the
draft").

A draft is whatever its last editor saved, and the person starting or publishing it may be
somebody else, or the organization may have changed since: so the references it names - secrets,
connections, recordings, a model profile - are checked again, as that person, before anything is
planned or published. Both use the one rule of `problems` and the one refusal of `check`, so what
a start refuses a publish refuses too. A published version is not checked again when it runs: its
publish checked it.
"""

from __future__ import annotations

from collections.abc import Iterator, Mapping
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import access, tools
from chalicelib.domain.identity import Identity
from chalicelib.errors import ForbiddenError, InvalidInputError, NotFoundError

REFUSAL = "the draft cannot be evaluated"
"""The first words of every refusal of a draft's references when it is started or priced."""


def _secret_refs(spec: Mapping[str, Any]) -> Iterator[tuple[str, str]]:
    """`(field, secret name)` of every secret the spec names: `api_key_secret` and each header
    `{"secret": name}` of `headers` and `extra_headers`."""
    name = spec.get("api_key_secret")
    if isinstance(name, str):
        yield "spec.api_key_secret", name
    for key in ("headers", "extra_headers"):
        headers = spec.get(key)
        if not isinstance(headers, Mapping):
            continue
        for header, value in headers.items():
            if isinstance(value, Mapping) and isinstance(value.get("secret"), str):
                yield f"spec.{key}.{header}", value["secret"]


def _connection_refs(spec: Mapping[str, Any]) -> list[tuple[str, str, bool]]:
    """`(field, connection id, must be mcp)` of every connection the spec's tools and MCP servers
    name (none when they are malformed: the runtime's check names that)."""
    try:
        declared = tools.parse_tools(spec.get("tools"), "spec.tools")
        servers = tools.parse_mcp_connections(spec.get("mcp_connections"), "spec.mcp_connections")
    except InvalidInputError:
        return []
    return [
        (f"spec.tools[{i}].connection_id", t.connection_id, False)
        for i, t in enumerate(declared)
        if t.connection_id
    ] + [(f"spec.mcp_connections[{i}]", s, True) for i, s in enumerate(servers)]


def problems(
    c: Container, who: Identity, spec: Any, vetted: frozenset[tuple[str, str]] = frozenset()
) -> list[dict[str, str]]:
    """Every problem of what the draft `spec` names, as `who` may use it now: the person (or key)
    starting, pricing or publishing it, called the starter below.

    The rule, per reference:
      - a secret (`spec.api_key_secret`, a header `{"secret": ...}`): the organization has it,
        and the starter holds `secrets:manage` (a spec that sends a secret sends it where its
        author chose, so only who may manage secrets may aim one);
      - a connection (`spec.tools[i].connection_id`, `spec.mcp_connections[i]`): the
        organization has it (an MCP server's is of kind `mcp`), and the starter holds
        `settings:manage` (who manages connections);
      - a recording (`spec.recording_id`): the organization has it, and the starter may see it
        (`datasets:view`);
      - a model profile (`spec.model_profile_id`): the organization has it.
    A reference in `vetted` (`("secret" | "connection", name)`: what the agent's latest published
    version names, checked when it was published) needs no permission again, only to exist: an
    editor may change the prompt of an agent that uses the organization's key.

    The service itself acting for a pipeline (`who.permissions` None) is refused nothing.

    Returns:
        `[{"field", "message", "permission"?}]`, in the spec's order; `permission` names what
        the starter lacks (a problem without it is a reference that does not exist).
    """
    if not isinstance(spec, Mapping) or who.permissions is None:
        return []
    out: list[dict[str, str]] = []

    def missing(field: str, message: str) -> None:
        out.append({"field": field, "message": f"{field}: {message}"})

    def refused(field: str, message: str, permission: str) -> None:
        out.append(
            {
                "field": field,
                "message": f"{field}: {message} needs the {permission} permission",
                "permission": permission,
            }
        )

    published = vetted
    secrets = _secret_refs(spec)
    known_secrets: set[str] | None = None
    for field, name in secrets:
        if known_secrets is None:
            known_secrets = {m.name for m in c.secrets.list(who.org_id)}
        if name not in known_secrets:
            missing(field, f"secret {name} not found: store it first (PUT /api/v1/secrets/{name})")
        elif ("secret", name) not in published and not who.may(access.SECRETS_MANAGE):
            refused(field, f"using secret {name} in a draft", access.SECRETS_MANAGE)
    named = _connection_refs(spec)
    if named:
        known = {r.connection_id: r for r in c.connections.list(who.org_id)}
        for field, connection_id, mcp in named:
            row = known.get(connection_id)
            if row is None:
                missing(field, f"connection {connection_id} not found: create it first")
            elif mcp and row.kind != "mcp":
                missing(field, f"connection {connection_id} is of kind {row.kind!r}, not mcp")
            elif ("connection", connection_id) not in published and not who.may(
                access.SETTINGS_MANAGE
            ):
                refused(
                    field, f"using connection {connection_id} in a draft", access.SETTINGS_MANAGE
                )
    recording_id = spec.get("recording_id")
    if isinstance(recording_id, str):
        if c.recordings.meta(who.org_id, recording_id) is None:
            missing("spec.recording_id", f"recording {recording_id} not found: upload it first")
        elif not who.may(access.DATASETS_VIEW):
            refused("spec.recording_id", f"using recording {recording_id}", access.DATASETS_VIEW)
    profile_id = spec.get("model_profile_id")
    if isinstance(profile_id, str):
        try:
            c.model_profiles.get(who.org_id, profile_id, field="spec.model_profile_id")
        except NotFoundError:
            missing("spec.model_profile_id", f"model profile {profile_id} not found")
    return out


def check(
    c: Container,
    who: Identity,
    agent_id: str,
    spec: Any,
    *,
    refusal: str = REFUSAL,
    field: str = "candidate",
) -> None:
    """Refuse a draft whose references the actor `who` may not use (`problems_for_agent`).

    A start or an estimate of the draft calls it with the defaults; a publish of the draft with
    `refusal="the draft cannot be published", field="draft"`. Same rule, same problems, same
    statuses.

    Raises:
        ForbiddenError: (403, field `field`) every problem is a permission the actor lacks;
            `permission` names the first, `problems` lists them all.
        InvalidInputError: (400, field `field`) a reference does not exist (with any
            permission problems beside it in `problems`).
        Both say `refusal` ("the draft cannot be evaluated" by default), then each problem's
        message, and carry `problems`: `[{"field", "message", "permission"?}]`.
    """
    found = problems_for_agent(c, who, agent_id, spec)
    if not found:
        return
    message = f"{refusal}: " + "; ".join(p["message"] for p in found)
    if all("permission" in p for p in found):
        raise ForbiddenError(
            message, field=field, permission=found[0]["permission"], problems=found
        )
    raise InvalidInputError(message, field=field, problems=found)


def problems_for_agent(
    c: Container, who: Identity, agent_id: str, spec: Any
) -> list[dict[str, str]]:
    """`problems`, with what the agent's latest published version names counted as checked.

    Raises NotFoundError for an unknown agent."""
    agent = c.agents.get(who.org_id, agent_id)
    latest = int(agent.latest_version or 0)
    row = c.agents.get_version(who.org_id, agent_id, latest) if latest else None
    vetted: set[tuple[str, str]] = set()
    if row is not None and isinstance(row.spec, Mapping):
        vetted |= {("secret", name) for _, name in _secret_refs(row.spec)}
        vetted |= {("connection", cid) for _, cid, _ in _connection_refs(row.spec)}
    return problems(c, who, spec, frozenset(vetted))
