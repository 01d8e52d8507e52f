"""Who may do what in an organization: roles, grants, API keys (docs/reference/access.md).

Pure rules. A request's permissions are resolved when it is served from the member's current
role and grants (`services.access`), never from what a token claims; this module says what a role
holds, what a grant may add, what a key may be scoped to, and whether one resolved identity may do
one thing on one agent or dataset (`domain.identity.Identity.may`).
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field

from chalicelib.domain.display_names import BLANK_LOOKING, code_points, is_default_ignorable
from chalicelib.domain.ids import path_segment_problem
from chalicelib.errors import InvalidInputError

RUNS_VIEW = "runs:view"
AGENTS_VIEW = "agents:view"
AGENTS_RUN = "agents:run"
AGENTS_EDIT = "agents:edit"
DATASETS_VIEW = "datasets:view"
DATASETS_RUN = "datasets:run"
DATASETS_EDIT = "datasets:edit"
PROMOTIONS_OVERRIDE = "promotions:override"
MEMBERS_MANAGE = "members:manage"
SECRETS_MANAGE = "secrets:manage"
SETTINGS_MANAGE = "settings:manage"
"""The organization's budget, its environments and its concurrency: an administrator's."""

PERMISSIONS: tuple[str, ...] = (
    RUNS_VIEW,
    AGENTS_VIEW,
    AGENTS_RUN,
    AGENTS_EDIT,
    DATASETS_VIEW,
    DATASETS_RUN,
    DATASETS_EDIT,
    PROMOTIONS_OVERRIDE,
    MEMBERS_MANAGE,
    SECRETS_MANAGE,
    SETTINGS_MANAGE,
)
"""Every permission there is, in the order the API lists them."""

_VIEWER = frozenset({RUNS_VIEW, AGENTS_VIEW, DATASETS_VIEW})
_RUNNER = _VIEWER | {AGENTS_RUN, DATASETS_RUN}
_EDITOR = _RUNNER | {AGENTS_EDIT, DATASETS_EDIT}
ROLES: Mapping[str, frozenset[str]] = {
    "guest": frozenset(),
    "viewer": _VIEWER,
    "runner": _RUNNER,
    "editor": _EDITOR,
    "admin": frozenset(PERMISSIONS),
}
"""What each role holds across the organization: a guest nothing (only what grants on single
agents and datasets give them: an outside collaborator); a viewer reads runs, agents and datasets; a
runner also starts runs; an editor also changes agents and datasets (drafts, publishing, suites);
an admin holds everything, members, secrets and settings included."""

FIRST_MEMBER_ROLE = "admin"
"""The role of an organization's first member: whoever signs in first to an organization that has
no member yet (the bootstrap; `assay token` signs such a token in local use)."""

GRANTABLE: Mapping[str, frozenset[str]] = {
    "agent": frozenset({AGENTS_VIEW, AGENTS_RUN, AGENTS_EDIT}),
    "dataset": frozenset({DATASETS_VIEW, DATASETS_RUN, DATASETS_EDIT}),
}
"""What a grant on one agent or one dataset may add: that kind's own permissions only."""

_IMPLIES_VIEW = {
    AGENTS_RUN: AGENTS_VIEW,
    AGENTS_EDIT: AGENTS_VIEW,
    DATASETS_RUN: DATASETS_VIEW,
    DATASETS_EDIT: DATASETS_VIEW,
}

MAX_USER_ID_CHARS = 200
"""The longest user id (a token's `sub`), in characters."""

UNSEEN_CATEGORIES = frozenset({"Cc", "Cf", "Zl", "Zp"})
"""Unicode general categories a user id never holds: control characters (NUL, ESC, DEL, C1),
format characters (zero-width spaces and joiners, the bidirectional controls U+202A-U+202E and
U+2066-U+2069, a byte order mark) and line or paragraph separators."""


def user_id_problem(user_id: object) -> str | None:
    """Why `user_id` cannot be a member's user id (a token's `sub`), None when it can.

    Rule: a string of 1-`MAX_USER_ID_CHARS` characters, without spaces at either end and without a
    character of `UNSEEN_CATEGORIES` nor an invisible or blank-looking one (`_invisible_problem`:
    a variation selector, a Hangul filler, U+2800), so two user ids that read the same are the
    same string: `" tester@example.com "`, `"admin\u202e@x"` and `"tester@example.com\ufe0f"`
    are refused, `"Ana María"` is not. The message
    names a refused character as `U+XXXX`, never the character itself. And one that
    `/api/v1/members/{user_id}` can address (`ids.path_segment_problem`): no `/`, `#` or `%`, not
    `.` or `..` alone, so every member can be read, changed and removed.
    """
    if not isinstance(user_id, str) or not 1 <= len(user_id) <= MAX_USER_ID_CHARS:
        return f"must be a string of 1-{MAX_USER_ID_CHARS} characters"
    unseen = [ch for ch in user_id if unicodedata.category(ch) in UNSEEN_CATEGORIES]
    if unseen:
        return (
            "must not contain control, format or bidirectional characters (found "
            f"{code_points(unseen)}): "
            "a user id reads as it is"
        )
    invisible = _invisible_problem(user_id)
    if invisible is not None:
        return invisible
    if user_id != user_id.strip():
        return "must not start or end with a space"
    return path_segment_problem(user_id)


def _invisible_problem(user_id: str) -> str | None:
    """Why `user_id` does not read as it is for a character outside `UNSEEN_CATEGORIES`, None
    when it does: a default-ignorable code point (`display_names.is_default_ignorable`: a
    variation selector U+FE0F, U+034F, a Hangul filler U+3164 or U+115F, a tag or variation
    selector U+E0100) or a blank-looking one (`display_names.BLANK_LOOKING`: U+2800, U+FFFC).
    `"tester@example.com\ufe0f"` would read as `"tester@example.com"`."""
    found = [ch for ch in user_id if is_default_ignorable(ch) or ch in BLANK_LOOKING]
    if not found:
        return None
    return (
        f"must not contain invisible or blank characters (found {code_points(found)}): "
        "a user id reads as it is"
    )


API_KEY_PREFIX = "assay_"
"""An API key reads `assay_<org>.<key id>.<secret>`: the organization first, so the key's row is
found under the organization's own key, and a prefix secret scanners can be taught."""


def resource_name(kind: str, resource_id: str) -> str:
    """The name of one agent or dataset in grants: `agent:<id>` or `dataset:<id>`."""
    return f"{kind}:{resource_id}"


def agent(agent_id: str) -> str:
    """`resource_name("agent", agent_id)`."""
    return resource_name("agent", agent_id)


def dataset(dataset_id: str) -> str:
    """`resource_name("dataset", dataset_id)`."""
    return resource_name("dataset", dataset_id)


def with_implied(permissions: Iterable[str]) -> frozenset[str]:
    """`permissions` and the view each run or edit permission implies (whoever may run or change an
    agent may see it)."""
    held = set(permissions)
    held.update(_IMPLIES_VIEW[p] for p in list(held) if p in _IMPLIES_VIEW)
    return frozenset(held)


def role_permissions(role: str) -> frozenset[str]:
    """What `role` holds across the organization. Raises InvalidInputError (field `role`) for a role
    that is not one of `ROLES`."""
    if role not in ROLES:
        raise InvalidInputError(
            f"role must be one of {', '.join(ROLES)}, not {role!r}"[:300], field="role"
        )
    return ROLES[role]


def check_user_id(user_id: object) -> str:
    """A member's user id as given (`user_id_problem`). Raises InvalidInputError (field
    `user_id`)."""
    problem = user_id_problem(user_id)
    if problem is not None or not isinstance(user_id, str):
        raise InvalidInputError(f"user_id {problem}", field="user_id")
    return user_id


def check_permissions(permissions: Iterable[object], field_name: str) -> frozenset[str]:
    """Permissions a request names, each one of `PERMISSIONS`. Raises InvalidInputError naming
    `field_name` for anything else."""
    out = set()
    for p in permissions:
        if not isinstance(p, str) or p not in PERMISSIONS:
            raise InvalidInputError(
                f"{field_name}: {str(p)[:80]!r} is not a permission; "
                f"one of {', '.join(PERMISSIONS)}",
                field=field_name,
            )
        out.add(p)
    return frozenset(out)


def check_grant(kind: str, permissions: Iterable[object]) -> frozenset[str]:
    """The permissions of a grant on one `kind` ("agent" or "dataset"): at least one, each of that
    kind's (`GRANTABLE`). Raises InvalidInputError naming `kind` or `permissions`."""
    if kind not in GRANTABLE:
        raise InvalidInputError("kind must be 'agent' or 'dataset'", field="kind")
    held = check_permissions(permissions, "permissions")
    if not held:
        raise InvalidInputError("a grant adds at least one permission", field="permissions")
    foreign = sorted(held - GRANTABLE[kind])
    if foreign:
        raise InvalidInputError(
            f"a grant on {'an' if kind == 'agent' else 'a'} {kind} adds only "
            f"{', '.join(sorted(GRANTABLE[kind]))}, not {', '.join(foreign)}",
            field="permissions",
        )
    return held


@dataclass(frozen=True, slots=True)
class Member:
    """A person of an organization: their `role` and the `grants` that add permissions on single
    agents and datasets (`{"agent:<id>": permissions}`); times ISO-8601 UTC."""

    org_id: str
    user_id: str
    role: str
    grants: Mapping[str, frozenset[str]] = field(default_factory=dict)
    added_at: str = ""
    added_by: str = ""
    updated_at: str = ""


@dataclass(frozen=True, slots=True)
class ApiKey:
    """An API key: a program's credential, not a person. It acts for its creator with at most its
    `scopes` (a subset of what the creator held when it was made), and never more than the creator
    holds when it is used. `secret_sha256` is all that is kept of its secret (hex)."""

    org_id: str
    key_id: str
    name: str
    scopes: frozenset[str]
    created_by: str
    created_at: str
    secret_sha256: str
    revoked_at: str | None = None
    revoked_by: str | None = None


def parse_api_key(text: str) -> tuple[str, str, str] | None:
    """`(org_id, key_id, secret)` of a bearer value shaped as an API key (`assay_<org>.<id>.<s>`),
    None when it is not one (then it is a token)."""
    if not text.startswith(API_KEY_PREFIX):
        return None
    parts = text[len(API_KEY_PREFIX) :].rsplit(".", 2)
    if len(parts) != 3 or not all(parts):
        return None
    return parts[0], parts[1], parts[2]


def format_api_key(org_id: str, key_id: str, secret: str) -> str:
    """The bearer value of an API key (`parse_api_key` reads it back)."""
    return f"{API_KEY_PREFIX}{org_id}.{key_id}.{secret}"
