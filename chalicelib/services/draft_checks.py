"""What a draft names, checked against the access of whoever acts on it: its starter before it
runs or is priced, its publisher before it becomes a version (docs/guides/agents.md, "Running the
draft").

A draft is whatever its last editor saved, and the person starting or publishing it may be
somebody else, or the organization may have changed since: so the references it names - secrets,
connections, recordings, a model profile - are checked again, as that person, before anything is
planned or published. Both use the one rule of `problems` and the one refusal of `check`, so what
a start refuses a publish refuses too. A published version is not checked again when it runs: its
publish checked it.

A model profile laid over a run replaces the spec's keys, its URL and headers among them, so it is
held to the same rule of a secret (docs/guides/agents.md, "Model profiles and secrets"): saving
one that names a secret (`check_profile_settings`), laying profiles over a start's arms
(`check_profiles`, as the starter, for every secret they send elsewhere than the spec does) and
asking a judge on one. A secret is vetted - checked before, so needing no permission again - only
where it was sent: the same key or header to the same URL (`SecretRef.aim`).

A connection sends its `auth_secret` to its URL on every tool call, so it is held to the same
rule (docs/guides/tools.md, "Connections and secrets"): saving one that names a secret
(`check_connection_secret`), mapping an environment's connections to test connections
(`check_test_connections`), and, for a connection saved before that was checked
(`Connection.secrets_vetted` False), every start and publish that would call it
(`check_connections`, `problems`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import access, tools
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Connection, ModelProfile
from chalicelib.errors import ForbiddenError, InvalidInputError, NotFoundError

REFUSAL = "the draft cannot be evaluated"
"""The first words of every refusal of a draft's references when it is started or priced."""

PROFILES_REFUSAL = "the model profiles cannot be laid over this run"
"""The first words of a refusal of the model profiles a start or an estimate lays over its arms."""

SAVE_PROFILE_REFUSAL = "the model profile cannot be saved"
"""The first words of a refusal of a model profile's settings when it is created."""

SAVE_CONNECTION_REFUSAL = "the connection cannot be saved"
"""The first words of a refusal of a connection's `auth_secret` when it is created."""

TEST_CONNECTIONS_REFUSAL = "the test connections cannot be saved"
"""The first words of a refusal of an environment's test connections."""

CONNECTIONS_REFUSAL = "the connections cannot be used in this run"
"""The first words of a refusal of the connections a start's arms (or its environment's test
connections) would send a secret through."""

Vetted = frozenset[tuple[Any, ...]]
"""References checked before, so needing no permission again: `("connection", id)` and
`SecretRef.aim` (`("secret", name, sent_as, url)`)."""


@dataclass(frozen=True)
class SecretRef:
    """One secret a spec (or a model profile's settings) sends, and where it sends it."""

    field: str
    """Where it is named: `spec.api_key_secret`, `spec.headers.<name>`,
    `settings.extra_headers.<name>`."""
    name: str
    """The secret's name."""
    sent_as: str
    """How it is sent: `api_key_secret`, `headers.<name>` or `extra_headers.<name>` (a header name
    in lower case: headers are the same whatever their case)."""
    url: str | None
    """Where it is sent: the spec's `url` for `headers` (the `http` runtime), its `base_url` for
    `api_key_secret` and `extra_headers` (the `openai` runtime); None when the spec has none."""

    @property
    def aim(self) -> tuple[str, str, str, str | None]:
        """`("secret", name, sent_as, url)`: what `vetted` holds of a secret checked before."""
        return ("secret", self.name, self.sent_as, self.url)


def _url(spec: Mapping[str, Any], key: str) -> str | None:
    value = spec.get(key)
    return value if isinstance(value, str) else None


def secret_refs(spec: Any, prefix: str = "spec") -> list[SecretRef]:
    """Every secret `spec` names, in its order: `api_key_secret` and each header
    `{"secret": name}` of `headers` and `extra_headers`, with where each is sent. `prefix` starts
    each `field` ("spec", or "settings" for a model profile's settings). Nothing for what is not
    a mapping."""
    if not isinstance(spec, Mapping):
        return []
    out: list[SecretRef] = []
    name = spec.get("api_key_secret")
    if isinstance(name, str):
        out.append(
            SecretRef(f"{prefix}.api_key_secret", name, "api_key_secret", _url(spec, "base_url"))
        )
    for key, url_key in (("headers", "url"), ("extra_headers", "base_url")):
        headers = spec.get(key)
        if not isinstance(headers, Mapping):
            continue
        for header, value in headers.items():
            if isinstance(value, Mapping) and isinstance(value.get("secret"), str):
                out.append(
                    SecretRef(
                        f"{prefix}.{key}.{header}",
                        value["secret"],
                        f"{key}.{str(header).lower()}",
                        _url(spec, url_key),
                    )
                )
    return out


def aims(spec: Any) -> frozenset[tuple[str, str, str, str | None]]:
    """`SecretRef.aim` of every secret `spec` names: where it sends each."""
    return frozenset(ref.aim for ref in secret_refs(spec))


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


class _Found:
    """The problems found so far, each `{"field", "message", "permission"?}`."""

    def __init__(self) -> None:
        self.items: list[dict[str, str]] = []

    def missing(self, field: str, message: str) -> None:
        self.items.append({"field": field, "message": f"{field}: {message}"})

    def refused(self, field: str, message: str, permission: str) -> None:
        self.items.append(
            {
                "field": field,
                "message": f"{field}: {message} needs the {permission} permission",
                "permission": permission,
            }
        )

    def unique(self) -> list[dict[str, str]]:
        """The problems, each message once (the same problem found for two arms is one)."""
        kept: dict[str, dict[str, str]] = {}
        for item in self.items:
            kept.setdefault(item["message"], item)
        return list(kept.values())


def _secret_problems(
    c: Container,
    who: Identity,
    refs: Sequence[SecretRef],
    vetted: Vetted,
    found: _Found,
    *,
    using: str,
    field: str | None = None,
    exists: bool = True,
) -> None:
    """The one rule of a secret sent by what is checked (a draft, a profile laid over a run, a
    profile's settings): a secret sent where it was checked before (its `aim` in `vetted`) needs
    only to exist; any other needs `secrets:manage` of `who`, since what sends a secret sends it
    where its author chose. Whoever lacks the permission is refused whether or not the
    organization has the secret: they may not list secrets, so the answer tells them nothing of
    which exist. With `exists` False a secret is not looked for (what is saved, not run).

    Each problem names `field` (the reference's own without one) and says `using` ("using secret
    X in a draft"); with `field` the message names the reference's own field after it."""
    known: set[str] | None = None
    checked_names = {aim[1] for aim in vetted if aim[0] == "secret"}
    for ref in refs:
        at = field or ref.field
        named = f"{ref.field}: " if field else ""
        if ref.aim not in vetted and not who.may(access.SECRETS_MANAGE):
            moved = (
                f" (sent as {ref.sent_as} to {ref.url or 'an address it does not fix'}, not where "
                "it was checked)"
                if ref.name in checked_names
                else ""
            )
            found.refused(
                at, f"{named}{using.format(secret=ref.name)}{moved}", access.SECRETS_MANAGE
            )
            continue
        if not exists:
            continue
        if known is None:
            known = {m.name for m in c.secrets.list(who.org_id)}
        if ref.name not in known:
            found.missing(
                at,
                f"{named}secret {ref.name} not found: store it first "
                f"(PUT /api/v1/secrets/{ref.name})",
            )


def problems(
    c: Container, who: Identity, spec: Any, vetted: Vetted = frozenset()
) -> list[dict[str, str]]:
    """Every problem of what the draft `spec` names, as `who` may use it now: the person (or key)
    starting, pricing or publishing it, called the starter below.

    The rule, per reference:
      - a secret (`spec.api_key_secret`, a header `{"secret": ...}`): the starter holds
        `secrets:manage` (a spec that sends a secret sends it where its author chose, so only who
        may manage secrets may aim one), and the organization has it. A starter without the
        permission is refused whether or not the secret exists (they may not list secrets);
      - a connection (`spec.tools[i].connection_id`, `spec.mcp_connections[i]`): the
        organization has it (an MCP server's is of kind `mcp`), and the starter holds
        `settings:manage` (who manages connections);
      - a recording (`spec.recording_id`): the organization has it, and the starter may see it
        (`datasets:view`);
      - a model profile (`spec.model_profile_id`): the organization has it.
    A reference in `vetted` (what the agent's latest published version names, checked when it was
    published) needs no permission again, only to exist: an editor may change the prompt of an
    agent that uses the organization's key. A secret is vetted only where it was sent: the same
    secret as the same header (or `api_key_secret`) to the same `url`/`base_url`; a draft that
    sends it to another address, or as another header, is checked as a new secret.

    The service itself acting for a pipeline (`who.permissions` None) is refused nothing.

    Returns:
        `[{"field", "message", "permission"?}]`, in the spec's order; `permission` names what
        the starter lacks (a problem without it is a reference that does not exist).
    """
    if not isinstance(spec, Mapping) or who.permissions is None:
        return []
    found = _Found()
    _secret_problems(
        c, who, secret_refs(spec), vetted, found, using="using secret {secret} in a draft"
    )
    named = _connection_refs(spec)
    if named:
        known = {r.connection_id: r for r in c.connections.list(who.org_id)}
        for field, connection_id, mcp in named:
            row = known.get(connection_id)
            if row is None:
                found.missing(field, f"connection {connection_id} not found: create it first")
            elif mcp and row.kind != "mcp":
                found.missing(field, f"connection {connection_id} is of kind {row.kind!r}, not mcp")
            elif ("connection", connection_id) not in vetted and not who.may(
                access.SETTINGS_MANAGE
            ):
                found.refused(
                    field, f"using connection {connection_id} in a draft", access.SETTINGS_MANAGE
                )
            else:
                _connection_secret_problems(c, who, [(field, row)], found)
    recording_id = spec.get("recording_id")
    if isinstance(recording_id, str):
        if c.recordings.meta(who.org_id, recording_id) is None:
            found.missing(
                "spec.recording_id", f"recording {recording_id} not found: upload it first"
            )
        elif not who.may(access.DATASETS_VIEW):
            found.refused(
                "spec.recording_id", f"using recording {recording_id}", access.DATASETS_VIEW
            )
    profile_id = spec.get("model_profile_id")
    if isinstance(profile_id, str):
        try:
            c.model_profiles.get(who.org_id, profile_id, field="spec.model_profile_id")
        except NotFoundError:
            found.missing("spec.model_profile_id", f"model profile {profile_id} not found")
    return found.items


def _refuse(found: list[dict[str, str]], refusal: str, field: str) -> None:
    """The one refusal of every check here: 403 when every problem is a permission the actor
    lacks (`permission` the first), else 400; both say `refusal`, then each problem's message,
    and carry `problems`."""
    if not found:
        return
    message = f"{refusal}: " + "; ".join(p["message"] for p in found)
    if all("permission" in p for p in found):
        raise ForbiddenError(
            message, field=field, permission=found[0]["permission"], problems=found
        )
    raise InvalidInputError(message, field=field, problems=found)


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
    _refuse(problems_for_agent(c, who, agent_id, spec), refusal, field)


def problems_for_agent(
    c: Container, who: Identity, agent_id: str, spec: Any
) -> list[dict[str, str]]:
    """`problems`, with what the agent's latest published version names counted as checked (its
    secrets where it sends them, its connections).

    Raises NotFoundError for an unknown agent."""
    agent = c.agents.get(who.org_id, agent_id)
    latest = int(agent.latest_version or 0)
    row = c.agents.get_version(who.org_id, agent_id, latest) if latest else None
    vetted: set[Any] = set()
    if row is not None and isinstance(row.spec, Mapping):
        vetted |= aims(row.spec)
        vetted |= {("connection", cid) for _, cid, _ in _connection_refs(row.spec)}
    return problems(c, who, spec, frozenset(vetted))


# --- model profiles ------------------------------------------------------------------------------


def check_profile_settings(c: Container, who: Identity, settings: Mapping[str, Any]) -> None:
    """Refuse model profile `settings` naming a secret unless `who` holds `secrets:manage`: the
    rule of a secret in a draft (`problems`), since a profile laid over a run sends its secrets to
    the `url`/`base_url` it names. Whether the secret exists is checked when the profile is used.

    Raises:
        ForbiddenError: (403, field `settings`, `permission` "secrets:manage", with `problems`
            naming each `settings.<key>`) "the model profile cannot be saved: ...".
    """
    _check_saving(c, who, secret_refs(settings, "settings"), "a model profile", "settings")


def profile_aims(profile: ModelProfile) -> frozenset[Any]:
    """Where `profile` itself sends the secrets its settings name, when somebody who held
    `secrets:manage` saved it (`ModelProfile.secrets_vetted`): each `SecretRef.aim` of its
    settings, the URL being the one the settings fix (a secret of a profile that fixes no URL is
    sent where the spec points, so it is vetted for no address). Empty for a profile saved before
    that was checked."""
    return aims(profile.settings) if profile.secrets_vetted else frozenset()


def profile_problems(
    c: Container,
    who: Identity,
    laid: Sequence[tuple[str, Mapping[str, Any], ModelProfile]],
    *,
    exists: bool = True,
) -> list[dict[str, str]]:
    """Every problem of model profiles laid over specs, as `who` may use them now.

    `laid` is `(field, spec, profile)` per arm the profile runs: `field` names the profile in the
    request (`model_profile_ids[0]`), `spec` is what it is laid over (a published version was
    checked by its publish, a draft by `check`). A profile's settings replace the spec's keys, so
    what is checked is every secret the arm sends that the spec alone does not send to the same
    place: a secret the profile names, or one of the spec's own now sent to the profile's URL.
    Each is vetted (needs only to exist) where the profile itself sends it (`profile_aims`);
    anything else is the rule of a secret in a draft: `secrets:manage`. With `exists` False a
    secret is not looked for (a judge's, asked later). The service acting for a pipeline
    (`who.permissions` None) is refused nothing.

    Returns:
        `[{"field", "message", "permission"?}]`, each `field` the profile's, each message naming
        the settings or spec key (`model_profile_ids[0]: spec.headers.X-Key: ...`); the same
        problem found for two arms is listed once.
    """
    if who.permissions is None:
        return []
    found = _Found()
    for field, spec, profile in laid:
        before = aims(spec)
        settings = profile.settings or {}
        refs = [
            _as_setting(ref) if ref.field.split(".")[1] in settings else ref
            for ref in secret_refs({**spec, **settings})
            if ref.aim not in before
        ]
        _secret_problems(
            c,
            who,
            refs,
            profile_aims(profile),
            found,
            using=f"sending secret {{secret}} where model profile {profile.model_profile_id} "
            "points",
            field=field,
            exists=exists,
        )
    return found.unique()


def _as_setting(ref: SecretRef) -> SecretRef:
    """`ref` named by the profile's settings rather than the spec."""
    return SecretRef("settings." + ref.field.removeprefix("spec."), ref.name, ref.sent_as, ref.url)


def check_profiles(
    c: Container,
    who: Identity,
    laid: Sequence[tuple[str, Mapping[str, Any], ModelProfile]],
    *,
    field: str = "model_profile_ids",
    refusal: str = PROFILES_REFUSAL,
    exists: bool = True,
) -> None:
    """Refuse the model profiles a start or an estimate lays over its arms (`profile_problems`);
    a judge's publish calls it for the profile it is asked on (`field="model_profile_id"`,
    `exists=False`).

    Raises:
        ForbiddenError: (403, field `field`) every problem is a permission the starter lacks.
        InvalidInputError: (400, field `field`) a secret they send does not exist.
        Both say `refusal` ("the model profiles cannot be laid over this run" by default), then
        each problem, and carry `problems`.
    """
    _refuse(profile_problems(c, who, laid, exists=exists), refusal, field)


# --- connections ---------------------------------------------------------------------------------


def connection_ref(field: str, auth_secret: str, url: str) -> SecretRef:
    """The secret a connection sends: `auth_secret` as its `Authorization` header to `url`."""
    return SecretRef(field, auth_secret, "authorization", url)


def check_connection_secret(c: Container, who: Identity, auth_secret: str | None, url: str) -> None:
    """Refuse a new connection naming a secret (`auth_secret`) unless `who` holds
    `secrets:manage`: the rule of a secret in a draft (`problems`), since every tool call on the
    connection sends the secret to the `url` its saver chose. Whether the secret exists is
    checked when a tool call is made.

    Raises:
        ForbiddenError: (403, field `auth_secret`, `permission` "secrets:manage", with
            `problems`) "the connection cannot be saved: auth_secret: naming secret X in a
            connection needs the secrets:manage permission".
    """
    if auth_secret is not None:
        refs = [connection_ref("auth_secret", auth_secret, url)]
        _check_saving(c, who, refs, "a connection", "auth_secret")


_SAVE_REFUSALS = {"a model profile": SAVE_PROFILE_REFUSAL, "a connection": SAVE_CONNECTION_REFUSAL}


def _check_saving(
    c: Container, who: Identity, refs: Sequence[SecretRef], thing: str, field: str
) -> None:
    """Refuse saving `thing` (a model profile, a connection) whose secrets `refs` would go where
    its saver chose, unless `who` holds `secrets:manage` (`_secret_problems`, nothing vetted;
    whether a secret exists is checked when it is used). The service acting for a pipeline
    (`who.permissions` None) is refused nothing.

    Raises:
        ForbiddenError: (403, field `field`, with `problems`) `_SAVE_REFUSALS[thing]`.
    """
    if who.permissions is None or not refs:
        return
    found = _Found()
    _secret_problems(
        c, who, refs, frozenset(), found, using=f"naming secret {{secret}} in {thing}", exists=False
    )
    _refuse(found.items, _SAVE_REFUSALS[thing], field)


def _connection_secret_problems(
    c: Container, who: Identity, named: Sequence[tuple[str, Connection]], found: _Found
) -> None:
    """Add to `found` the secret of every connection in `named` (`(field, connection)`) that
    `who` may not have sent: a connection sends its `auth_secret` to its `url`, vetted there when
    whoever saved it held `secrets:manage` (`Connection.secrets_vetted`); a connection saved
    before that was checked is held to the rule of a secret in a draft (`_secret_problems`)."""
    for field, row in named:
        if not row.auth_secret:
            continue
        ref = connection_ref(field, row.auth_secret, row.url)
        _secret_problems(
            c,
            who,
            [ref],
            frozenset({ref.aim}) if row.secrets_vetted else frozenset(),
            found,
            using=f"sending secret {{secret}} through connection {row.connection_id} (saved "
            "before its secret was checked: re-create it as somebody who holds secrets:manage)",
            exists=False,
        )


def connection_problems(
    c: Container,
    who: Identity,
    specs: Sequence[tuple[str, Any]],
    test_connections: Mapping[str, str],
) -> list[dict[str, str]]:
    """Every secret the connections of `specs` (`(field, spec)`: the arms a start runs) would send
    that `who` may not send: each connection a spec's tools or MCP servers name, and the test
    connection `test_connections` maps it to (the run's environment's), checked by
    `_connection_secret_problems`. A connection the organization does not have is left to the
    spec's own checks. The service acting for a pipeline (`who.permissions` None) is refused
    nothing.

    Returns:
        `[{"field", "message", "permission"}]`, each `field` the spec's reference
        (`candidate.tools[0].connection_id`), listed once."""
    if who.permissions is None:
        return []
    named = [
        (f"{where}.{field.removeprefix('spec.')}", connection_id)
        for where, spec in specs
        if isinstance(spec, Mapping)
        for field, connection_id, _ in _connection_refs(spec)
    ]
    if not named:
        return []
    known = {r.connection_id: r for r in c.connections.list(who.org_id)}
    rows: list[tuple[str, Connection]] = []
    for field, connection_id in named:
        for cid, at in ((connection_id, field), (test_connections.get(connection_id), field)):
            if cid is not None and cid in known:
                at = at if cid == connection_id else f"{field} (test connection {cid})"
                rows.append((at, known[cid]))
    found = _Found()
    _connection_secret_problems(c, who, rows, found)
    return found.unique()


def check_connections(
    c: Container,
    who: Identity,
    specs: Sequence[tuple[str, Any]],
    test_connections: Mapping[str, str],
) -> None:
    """Refuse a start whose arms would send a secret through a connection `who` may not send it
    through (`connection_problems`).

    Raises:
        ForbiddenError: (403, field `candidate`, permission `secrets:manage`, with `problems`)
            "the connections cannot be used in this run: ...".
    """
    _refuse(connection_problems(c, who, specs, test_connections), CONNECTIONS_REFUSAL, "candidate")


def check_test_connections(
    c: Container, who: Identity, mapped: Mapping[str, str], field: str = "test_connections"
) -> None:
    """Refuse an environment's test connections mapping a connection to one that sends a secret
    `who` may not send (`_connection_secret_problems`): during an eval run in the environment
    every call on the key is made on the value, with the value's secret.

    Raises:
        ForbiddenError: (403, field `field`, permission `secrets:manage`, with `problems` naming
            `<field>.<key>`) "the test connections cannot be saved: ...".
    """
    if who.permissions is None or not mapped:
        return
    known = {r.connection_id: r for r in c.connections.list(who.org_id)}
    found = _Found()
    _connection_secret_problems(
        c,
        who,
        [(f"{field}.{key}", known[value]) for key, value in mapped.items() if value in known],
        found,
    )
    _refuse(found.items, TEST_CONNECTIONS_REFUSAL, field)
