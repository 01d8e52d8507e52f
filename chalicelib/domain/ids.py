"""Ids and names a tenant chooses (agent, dataset, judge, suite, environment, model profile, secret,
recording) (issue 9, docs/reference/security.md).

An id is unique within its organization only, and the stores key a tenant's rows by composite
strings `<org_id>#<id>...` (`adapters.tables.org_key`); Secrets Manager and S3 names use `/`. So
an id a tenant chooses never contains `#` or `/`: it could otherwise run into the next part of a
key or a name. A secret's name or a recording's id becomes part of a Secrets Manager name
(`assay/<org>/<name>`) or an S3 key (`<org>/recordings/<id>.jsonl`), so it is held to a stricter
rule (`NAME_PATTERN`): a single path segment that can never climb out of, or into, another
organization's prefix.
"""

from __future__ import annotations

import re

from chalicelib.errors import InvalidInputError

FORBIDDEN = ("#", "/")
"""Characters no tenant-chosen id may contain."""

PATTERN = r"^[^#/]+$"
"""A pydantic/JSON-schema pattern for an id that names something (a reference), whatever its
other characters."""


PATH_UNSAFE = ("/", "#", "%")
"""Characters a `{user_id}` route cannot take as themselves: `/` and `#` (refused in every path
id, also percent-encoded) and `%` (a route decodes what it is given, and a gateway may have
decoded it once already, so `a%2Fb` could reach it as `a/b`)."""

PATH_DOTS = (".", "..")
"""Path segments a URL cannot carry as themselves: clients and servers resolve them as steps
(`/members/..` is `/`), so no route is reached with them."""


def path_segment_problem(value: str) -> str | None:
    """Why `value` cannot be addressed as one `{id}` of a route's path (a member's user id in
    `/api/v1/members/{user_id}`), None when it can: it holds a character of `PATH_UNSAFE`, or is
    `.` or `..` alone (`PATH_DOTS`). Whatever else it holds is percent-encoded by the client and
    reaches the route as itself."""
    bad = [ch for ch in PATH_UNSAFE if ch in value]
    if bad:
        return (
            f"must not contain {' or '.join(repr(ch) for ch in bad)}: a URL path could not name it"
        )
    if value in PATH_DOTS:
        return f"must not be {value!r}: a URL path could not name it"
    return None


def check_tenant_id(value: str, field: str) -> str:
    """`value` if it can be a tenant-chosen id.

    Args:
        value: the id as given.
        field: the field it came in, named in the error (`agent_id`, `suite_id`, ...).
    Returns:
        `value`, unchanged.
    Raises:
        InvalidInputError: an empty id, or one containing `#` or `/` (400 naming `field`).
    """
    if not isinstance(value, str) or not value:
        raise InvalidInputError(f"{field} must be a non-empty string", field=field)
    bad = [ch for ch in FORBIDDEN if ch in value]
    if bad:
        raise InvalidInputError(
            f"{field} must not contain {' or '.join(repr(ch) for ch in bad)}", field=field
        )
    return value


NAME_PATTERN = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
"""A secret name or recording id: 1-64 of letters, digits, `_`, `.`, `-` (never `/` or `#`)."""

MAX_SECRET_VALUE_BYTES = 16 * 1024
"""Largest secret value, in UTF-8 bytes (16 KiB; Secrets Manager itself takes 64 KiB)."""

MAX_RECORDING_BYTES = 5 * 1024 * 1024
"""Largest recording upload request, in bytes: a Lambda behind API Gateway takes at most 6 MB of
request (API Gateway itself 10 MiB), so a deployed stage refuses larger ones with our 413 rather
than the gateway's error."""


def name_problem(name: object) -> str | None:
    """Why `name` cannot name a secret or a recording, or None when it can.

    Refused: not a string, outside `NAME_PATTERN` (so any `/`, `#`, space or non-ASCII letter),
    and names made of dots or holding `..` (they read as path steps).
    """
    if not isinstance(name, str) or not NAME_PATTERN.fullmatch(name):
        return "must be 1-64 characters of letters, digits, '_', '.' and '-'"
    if ".." in name or set(name) == {"."}:
        return "must not contain '..' or be made of dots only"
    return None


def is_valid_name(name: object) -> bool:
    """True when `name` may name a secret or a recording (`name_problem` is None)."""
    return name_problem(name) is None
