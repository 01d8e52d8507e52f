"""The organization's secrets: credentials a spec names, stored write-only (issue 9 scope 1,
docs/reference/runtimes.md).

A spec or model profile names a secret (`"api_key_secret": "openai"`, a header
`{"secret": "gateway", "prefix": "Bearer "}`); only the runtimes read a value, through
`AskContext.secret` for their own organization. No route ever returns a value: these use cases
answer with the name and `updated_at` only.
"""

from __future__ import annotations

from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import MAX_SECRET_VALUE_BYTES, name_problem
from chalicelib.errors import InvalidInputError, NotFoundError
from chalicelib.services.ports.objects import SecretMeta


def check_name(name: Any) -> str:
    """`name` when it may name a secret.

    Raises:
        InvalidInputError: (field `name`) see `domain.org_data.name_problem` (`/`, `#`, `..`, ...).
    """
    problem = name_problem(name)
    if problem is not None:
        raise InvalidInputError(f"name: a secret name {problem}", field="name")
    return str(name)  # name_problem refuses anything but a string


def check_value(value: Any) -> str:
    """`value` when it may be stored: a non-empty string of at most 16 KiB (UTF-8).

    Raises:
        InvalidInputError: (field `value`) not a string, empty, or too large. The message never
            repeats the value.
    """
    if not isinstance(value, str) or not value:
        raise InvalidInputError("value: a secret value must be a non-empty string", field="value")
    size = len(value.encode("utf-8"))
    if size > MAX_SECRET_VALUE_BYTES:
        raise InvalidInputError(
            f"value: a secret value takes at most {MAX_SECRET_VALUE_BYTES} bytes "
            f"(16 KiB); this one has {size}",
            field="value",
        )
    return value


def put(c: Container, who: Identity, name: str, value: Any) -> SecretMeta:
    """Create or replace the caller's organization's secret `name`; returns its name and
    `updated_at`.

    Raises:
        InvalidInputError: a bad name (field `name`) or value (field `value`).
    """
    check_name(name)
    check_value(value)
    return SecretMeta(name, c.secrets.put(who.org_id, name, value))


def get(c: Container, who: Identity, name: str) -> SecretMeta:
    """The metadata of the organization's secret `name`.

    Raises:
        InvalidInputError: (field `name`) a name no secret can have.
        NotFoundError: (field `name`) the organization has no secret of that name (another
            organization's secret of the same name is not seen).
    """
    check_name(name)
    meta = c.secrets.meta(who.org_id, name)
    if meta is None:
        raise NotFoundError(f"no secret named {name}", field="name")
    return meta


def list_secrets(c: Container, who: Identity) -> list[SecretMeta]:
    """Every secret of the caller's organization (name and `updated_at`), by name."""
    return c.secrets.list(who.org_id)


def delete(c: Container, who: Identity, name: str) -> None:
    """Delete the organization's secret `name` at once (no recovery window).

    Raises:
        InvalidInputError: (field `name`) a name no secret can have.
        NotFoundError: (field `name`) the organization has no secret of that name.
    """
    check_name(name)
    if c.secrets.meta(who.org_id, name) is None:
        raise NotFoundError(f"no secret named {name}", field="name")
    c.secrets.delete(who.org_id, name)
