"""Who asks, and what they may do: members, roles, grants and API keys (docs/reference/access.md).

Every request's identity is resolved here when it is served (`identify`): a token names an
organization and a person, and what that person may do is their membership's as it is now - their
role across the organization and their grants on single agents and datasets - never what a token
claims. An API key acts for the member who made it, with at most its scopes and never more than
that member holds now. An organization's first person to sign in becomes its admin (the
bootstrap, `domain.access.FIRST_MEMBER_ROLE`); everyone after is added by a `members:manage`
holder. The same resolution serves a run's cases and a suite's start (`as_member`): they run with
their starter's or owner's authority as it is when each one runs.
"""

from __future__ import annotations

import hashlib
import hmac
import secrets
from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import TYPE_CHECKING

from chalicelib.clock import iso
from chalicelib.domain import access
from chalicelib.domain.access import ApiKey, Member
from chalicelib.domain.chart import TrendRun
from chalicelib.domain.identity import Identity, is_org_id
from chalicelib.domain.records import BudgetReading, Run
from chalicelib.errors import (
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    UnauthenticatedError,
)

if TYPE_CHECKING:
    from chalicelib.bootstrap import Container

MAX_GRANTS = 200
"""Most grants one member holds: they live on the member's item (read once per request)."""


def identity_of(member: Member | None, org_id: str, user_id: str) -> Identity:
    """The identity of `user_id` as their membership resolves it now (no membership: nothing
    allowed, `member` False)."""
    if member is None:
        return Identity(org_id, user_id, permissions=frozenset(), member=False)
    return Identity(
        org_id,
        user_id,
        permissions=access.with_implied(access.role_permissions(member.role)),
        grants={k: access.with_implied(v) for k, v in member.grants.items()},
    )


def as_member(c: Container, org_id: str, user_id: str, key_id: str | None = None) -> Identity:
    """What `user_id` (through the API key `key_id`, when a key started it) may do now: for the
    work that runs as somebody without a request (a run's cases, a suite's start). A revoked or
    deleted key may do nothing."""
    key = c.api_keys.get(org_id, key_id) if key_id is not None else None
    return acting(c.members.get(org_id, user_id), key, org_id, user_id, key_id)


def acting(
    member: Member | None, key: ApiKey | None, org_id: str, user_id: str, key_id: str | None
) -> Identity:
    """The identity of `user_id` as `member` resolves it, through the API key `key_id` (`key`,
    as read; None when it is gone) when one acts for them."""
    who = identity_of(member, org_id, user_id)
    if key_id is None:
        return who
    if key is None or key.revoked_at is not None or key.created_by != user_id:
        return replace(who, permissions=frozenset(), grants={}, key_id=key_id)
    return replace(who, key_id=key_id, scopes=access.with_implied(key.scopes))


def run_as(run: Run) -> tuple[str, str | None] | None:
    """`(user_id, API key id or None)` a run's cases run as; None for a run the service started
    for a pipeline (nobody's authority to check)."""
    settings = run.settings or {}
    if not settings.get("runs_as_starter"):
        return None
    return run.created_by, settings.get("started_by_key")


def identify(c: Container, bearer: str) -> Identity:
    """The caller a bearer value names, with what they may do now: an API key
    (`assay_<org>.<id>.<secret>`) or a token (`adapters.tokens`).

    Raises:
        UnauthenticatedError: the token does not verify; an unknown, revoked or wrong key; an `act`
            claim naming somebody who may not manage members (only an administrator signs in as
            somebody else).
    """
    parsed = access.parse_api_key(bearer)
    if parsed is not None:
        return _identify_key(c, *parsed)
    who = c.tokens.identify(bearer)
    if who.actor is not None:
        actor = identity_of(c.members.get(who.org_id, who.actor), who.org_id, who.actor)
        if not actor.may(access.MEMBERS_MANAGE):
            raise UnauthenticatedError(
                "the token's act claim names somebody who may not sign in as another member "
                "(it needs members:manage)",
                field="Authorization",
            )
    member, had_first = c.members.lookup(who.org_id, who.user_id)
    if member is None and not had_first and who.actor is None:
        member = _bootstrap(c, who)
    return replace(identity_of(member, who.org_id, who.user_id), actor=who.actor)


def _bootstrap(c: Container, who: Identity) -> Member | None:
    """Make the first person to sign in to an organization its admin (once per organization); the
    member as it is now otherwise (None for a person of no role)."""
    now = iso(c.clock.now())
    first = Member(
        who.org_id,
        who.user_id,
        access.FIRST_MEMBER_ROLE,
        added_at=now,
        added_by=who.user_id,
        updated_at=now,
    )
    if c.members.add_first(first):
        return first
    return c.members.get(who.org_id, who.user_id)  # two first sign-ins at once: one won


def _refused_key() -> UnauthenticatedError:
    return UnauthenticatedError(
        "the API key is not valid (unknown, revoked or mistyped)", field="Authorization"
    )


def _identify_key(c: Container, org_id: str, key_id: str, secret: str) -> Identity:
    if not is_org_id(org_id) or len(key_id) > 64 or len(secret) > 200:
        raise _refused_key()
    key = c.api_keys.get(org_id, key_id)
    if key is None or not hmac.compare_digest(key.secret_sha256, _sha256(secret)):
        raise _refused_key()
    if key.revoked_at is not None:
        raise UnauthenticatedError(
            f"the API key {key_id} was revoked at {key.revoked_at}", field="Authorization"
        )
    return as_member(c, org_id, key.created_by, key_id)


def _sha256(text: str) -> str:
    return hashlib.sha256(text.encode()).hexdigest()


# --- what runs need ---------------------------------------------------------------------------


def check_start(who: Identity, agent_id: str, dataset_id: str, *, draft: bool) -> None:
    """What starting a run - or pricing one - needs, in this order (docs/reference/access.md):
    `runs:view` first (whoever could not read or cancel it may not start it, whatever grants they
    hold), then `datasets:run` on the dataset and `agents:run` on the agent, each with the
    resource's grants; the draft also `agents:edit`.

    Raises:
        ForbiddenError: a permission missing (403 naming it).
        NotFoundError: an agent or dataset the caller may not see (404, as another organization's).
    """
    who.require(access.RUNS_VIEW, "starting an eval run")
    who.require_on(access.DATASETS_RUN, "dataset", dataset_id, "running an eval on a dataset")
    who.require_on(access.AGENTS_RUN, "agent", agent_id, "running an eval of an agent")
    if draft:
        who.require(access.AGENTS_EDIT, "running the draft", access.agent(agent_id))


def starter_refusal(c: Container, run: Run, reading: BudgetReading | None = None) -> str | None:
    """Why the person a run runs as can no longer run it, None when they can (checked before each
    case asks: docs/reference/access.md - with their current role). A run the service
    started for a pipeline is never refused. `reading`: the budgets read for this case, holding
    the starter's member and key when they were read beside them (else they are read here)."""
    starter_of = run_as(run)
    if starter_of is None:
        return None
    user_id, key_id = starter_of
    if reading is not None and reading.starter is not None:
        who = acting(*reading.starter, run.org_id, user_id, key_id)
    else:
        who = as_member(c, run.org_id, user_id, key_id)
    if not who.member:
        return f"stopped: {user_id} is no longer a member of the organization"
    starter = f"{user_id}'s API key {key_id}" if key_id else user_id
    needed = [
        (access.RUNS_VIEW, None),
        (access.DATASETS_RUN, access.dataset(run.dataset_id)),
        (access.AGENTS_RUN, access.agent(run.agent_id)),
    ]
    # A baseline borrowed from a run of the draft (no version) reruns the draft's copy.
    runs_draft = run.draft or any(
        a.source_run_id is not None and a.version is None and a.rerun for a in run.arms
    )
    if runs_draft:
        needed.append((access.AGENTS_EDIT, access.agent(run.agent_id)))
    missing = who.first_missing(needed)
    return f"stopped: {starter} can no longer run it (no {missing})" if missing else None


def readable_run(c: Container, who: Identity, run_id: str) -> Run:
    """A run the caller may read: `runs:view`, and sight of both its agent and its dataset
    (docs/reference/access.md). Raises ForbiddenError without runs:view, NotFoundError for a run of
    another organization or over an agent or dataset the caller may not see (the same 404)."""
    who.require(access.RUNS_VIEW, "reading an eval run")
    run = c.runs.get_for_org(who.org_id, run_id)
    if not (who.sees("agent", run.agent_id) and who.sees("dataset", run.dataset_id)):
        raise NotFoundError(f"eval run {run_id} not found", field="run_id")
    return run


def may_read(who: Identity, run: Run | TrendRun) -> bool:
    """Whether a listing shows the run to the caller (sight of its agent and its dataset)."""
    return who.sees("agent", run.agent_id) and who.sees("dataset", run.dataset_id)


def check_own_or_edit(who: Identity, run: Run, what: str) -> None:
    """Cancelling or deleting a run: its starter, or an `agents:edit` holder on its agent. Raises
    ForbiddenError."""
    if run.created_by == who.user_id and who.key_id is None:
        return
    if who.key_id is not None and (run.settings or {}).get("started_by_key") == who.key_id:
        return
    who.require(access.AGENTS_EDIT, f"{what} somebody else's eval run", access.agent(run.agent_id))


# --- members and grants ------------------------------------------------------------------------


def list_members(c: Container, who: Identity) -> list[Member]:
    """Every member of the caller's organization. Raises ForbiddenError without members:manage."""
    who.require(access.MEMBERS_MANAGE, "listing members")
    return c.members.list(who.org_id)


def add_member(c: Container, who: Identity, user_id: str, role: str) -> Member:
    """Add `user_id` with `role`. Raises ForbiddenError without members:manage, InvalidInputError
    for an unknown role or a malformed user id, ConflictError when they are a member already."""
    who.require(access.MEMBERS_MANAGE, "adding a member")
    access.role_permissions(role)
    access.check_user_id(user_id)
    now = iso(c.clock.now())
    member = Member(who.org_id, user_id, role, added_at=now, added_by=who.user_id, updated_at=now)
    c.members.put(member, new=True)
    return member


KEEP_ADMIN_TRIES = 3
"""How many other admins a demotion or removal tries to keep in turn before giving up (409)."""


def _another_admin(c: Container, org_id: str, user_id: str) -> str:
    """An admin other than `user_id`, who must still be one when `user_id` is demoted or removed.
    Raises ConflictError when there is none: `user_id` is the last admin."""
    others = [
        m.user_id for m in c.members.list(org_id) if m.role == "admin" and m.user_id != user_id
    ]
    if not others:
        raise ConflictError(
            f"{user_id} is the organization's last admin: make somebody else admin first",
            field="user_id",
        )
    return others[0]


def _keeping_an_admin(
    c: Container, org_id: str, user_id: str, write: Callable[[str], bool]
) -> None:
    """Demote or remove `user_id` by `write(keeper)`, which writes only while `keeper` - another
    admin - still is one (one transaction; False when they were not). Two admins demoting each
    other at once would otherwise both pass a check read before either wrote, leaving none.
    Raises ConflictError for the last admin, or when the admins keep changing under it."""
    for _ in range(KEEP_ADMIN_TRIES):
        keeper = _another_admin(c, org_id, user_id)
        try:
            if write(keeper):
                return
        except ConflictError:
            pass  # lost to another change: read the admins again
    _another_admin(c, org_id, user_id)  # the last admin now: say so
    raise ConflictError(
        f"the organization's admins kept changing while {user_id} was changed: try again",
        field="user_id",
    )


def change_role(c: Container, who: Identity, user_id: str, role: str) -> Member:
    """Give a member another role (it applies to their next request, and to their runs' next
    cases). Raises ForbiddenError without members:manage, NotFoundError for a person who is not a
    member, ConflictError for the organization's last admin."""
    who.require(access.MEMBERS_MANAGE, "changing a member's role")
    access.role_permissions(role)
    now = iso(c.clock.now())

    def changed(m: Member) -> Member | None:
        return None if m.role == role else replace(m, role=role, updated_at=now)

    if role == "admin":
        return c.members.change(who.org_id, user_id, changed)
    if c.members.get(who.org_id, user_id) is None:
        raise NotFoundError(f"{user_id} is not a member", field="user_id")
    done: list[Member] = []

    def demote(keeper: str) -> bool:
        done.append(c.members.change(who.org_id, user_id, changed, while_admin=keeper))
        return True

    _keeping_an_admin(c, who.org_id, user_id, demote)
    return done[-1]


def remove_member(c: Container, who: Identity, user_id: str) -> None:
    """Remove a member: their requests, their runs' remaining cases and the suites they own stop,
    and their API keys are revoked.
    Raises ForbiddenError without members:manage, NotFoundError for a person who is not a member,
    ConflictError for the organization's last admin."""
    who.require(access.MEMBERS_MANAGE, "removing a member")
    if c.members.get(who.org_id, user_id) is None:
        raise NotFoundError(f"{user_id} is not a member", field="user_id")
    _keeping_an_admin(
        c,
        who.org_id,
        user_id,
        lambda keeper: c.members.remove(who.org_id, user_id, while_admin=keeper),
    )
    # A key acts for its creator: one who left takes their keys with them, and coming back
    # does not bring them back.
    now = iso(c.clock.now())
    for key in c.api_keys.list(who.org_id):
        if key.created_by == user_id and key.revoked_at is None:
            c.api_keys.revoke(who.org_id, key.key_id, by=who.user_id, at=now)


def set_grant(
    c: Container, who: Identity, user_id: str, kind: str, resource_id: str, permissions: list[str]
) -> Member:
    """Grant a member `permissions` on one agent or dataset (replacing that resource's grant).
    Raises ForbiddenError without members:manage, InvalidInputError for a permission of another
    kind, NotFoundError for an unknown member or resource."""
    who.require(access.MEMBERS_MANAGE, "granting permissions")
    held = access.check_grant(kind, permissions)
    if kind == "agent":
        c.agents.get(who.org_id, resource_id)
    else:
        c.datasets.get(who.org_id, resource_id)
    name = access.resource_name(kind, resource_id)
    now = iso(c.clock.now())

    def grant(m: Member) -> Member:
        if name not in m.grants and len(m.grants) >= MAX_GRANTS:
            raise ConflictError(
                f"{m.user_id} holds {MAX_GRANTS} grants already: give them a role instead",
                field="permissions",
            )
        return replace(m, grants={**m.grants, name: held}, updated_at=now)

    return c.members.change(who.org_id, user_id, grant)


def remove_grant(c: Container, who: Identity, user_id: str, kind: str, resource_id: str) -> Member:
    """Take a member's grant on one agent or dataset away (nothing when they hold none). Raises
    ForbiddenError without members:manage, NotFoundError for an unknown member."""
    who.require(access.MEMBERS_MANAGE, "removing a grant")
    name = access.resource_name(kind, resource_id)
    now = iso(c.clock.now())
    return c.members.change(who.org_id, user_id, lambda m: _without_grant(m, name, now))


def forget_resource(c: Container, org_id: str, kind: str, resource_id: str) -> None:
    """Take every grant on a deleted agent or dataset away, so one made later under the same id
    starts with none."""
    name = access.resource_name(kind, resource_id)
    now = iso(c.clock.now())
    for m in c.members.list(org_id):
        if name in m.grants:
            c.members.change(org_id, m.user_id, lambda m: _without_grant(m, name, now))


def _without_grant(m: Member, name: str, now: str) -> Member | None:
    """The member without their grant on `name` (None: they hold none, nothing to write)."""
    if name not in m.grants:
        return None
    return replace(m, grants={k: v for k, v in m.grants.items() if k != name}, updated_at=now)


# --- API keys ----------------------------------------------------------------------------------


def create_api_key(
    c: Container, who: Identity, name: str, scopes: Iterable[str]
) -> tuple[ApiKey, str]:
    """Issue an API key acting for the caller within `scopes` (a subset of what the caller holds
    now). Returns the key and its bearer value, shown this once; only its SHA-256 is kept.

    Raises:
        ForbiddenError: an API key or somebody acting as the caller asks (a key is made by a
            person), or a scope the caller does not hold (`permission` names it).
        InvalidInputError: a scope that is not a permission, or no scope.
    """
    who.require_person("creating an API key")
    held = access.check_permissions(scopes, "scopes")
    if not held:
        raise InvalidInputError("scopes: name at least one permission", field="scopes")
    for p in sorted(held):
        if not who.may(p) and not any(p in g for g in who.grants.values()):
            raise ForbiddenError(
                f"an API key's scopes are a subset of yours: you do not hold {p}",
                field="scopes",
                permission=p,
            )
    key_id = "key_" + secrets.token_hex(8)
    secret = secrets.token_urlsafe(32)
    key = ApiKey(
        org_id=who.org_id,
        key_id=key_id,
        name=name,
        scopes=held,
        created_by=who.user_id,
        created_at=iso(c.clock.now()),
        secret_sha256=_sha256(secret),
    )
    c.api_keys.create(key)
    return key, access.format_api_key(who.org_id, key_id, secret)


def list_api_keys(c: Container, who: Identity) -> list[ApiKey]:
    """The caller's own keys; every key of the organization for a members:manage holder."""
    keys = c.api_keys.list(who.org_id)
    if who.may(access.MEMBERS_MANAGE):
        return keys
    return [k for k in keys if k.created_by == who.user_id]


def revoke_api_key(c: Container, who: Identity, key_id: str) -> ApiKey:
    """Revoke a key at once (its next request is a 401). Its creator (signed in as themselves, not
    through a key) or a members:manage holder may; anybody else is told there is no such key
    (404)."""
    key = c.api_keys.get(who.org_id, key_id)
    own = key is not None and key.created_by == who.user_id and who.is_person
    if key is None or not (own or who.may(access.MEMBERS_MANAGE)):
        raise NotFoundError(f"API key {key_id} not found", field="key_id")
    return c.api_keys.revoke(who.org_id, key_id, by=who.user_id, at=iso(c.clock.now()))
