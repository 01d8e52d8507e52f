"""What a spec's connection fields may be, shared by the runtimes that connect somewhere
(docs/reference/runtimes.md, docs/reference/security.md): a URL by its shape, headers whose values
are literals or the organization's secrets by name, and no credential written into a spec.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from typing import Any

from chalicelib.adapters.egress import parse_target
from chalicelib.adapters.runtimes.transport import CREDENTIAL_HEADERS, clip
from chalicelib.domain.redaction import redact
from chalicelib.errors import AgentCrashError, InvalidInputError, ProviderError
from chalicelib.services.ports import AskContext

_URL_RE = re.compile(r"^https?://[^\s/]+", re.IGNORECASE)

SECRET_NAME_RE = re.compile(r"^[A-Za-z0-9_.-]{1,64}$")
"""A secret's name, as `PUT /api/v1/secrets/{name}` accepts it."""

_SERVICE_HEADERS = frozenset({"host", "content-length", "transfer-encoding", "connection"})
_HEADER_NAME_RE = re.compile(r"^[!#$%&'*+.^_`|~0-9A-Za-z-]{1,128}$")
_BAD_HEADER_CHARS = re.compile(r"[\r\n\x00]")


def require_url(spec: Mapping[str, Any], key: str, *, prefix: str = "spec") -> str:
    """Return `spec[key]` if it is a URL the service may connect to, by its shape (http/https, a
    host, no `user:pass@`); the address is checked by `Egress`.

    Raises:
        InvalidInputError: (field "<prefix>.<key>") when missing or not such a URL.
    """
    field = f"{prefix}.{key}"
    url = spec.get(key)
    if not isinstance(url, str) or not _URL_RE.match(url):
        raise InvalidInputError(f"{field} must be an http:// or https:// URL", field=field)
    try:
        parse_target(url)
    except ValueError as exc:
        raise InvalidInputError(f"{field} {exc}", field=field) from None
    return url


def check_secret_name(value: Any, field: str) -> str:
    """Return `value` if it names a secret (`^[A-Za-z0-9_.-]{1,64}$`).

    Raises:
        InvalidInputError: (field `field`) when it does not.
    """
    if not isinstance(value, str) or not SECRET_NAME_RE.fullmatch(value):
        raise InvalidInputError(
            f"{field} must name one of the organization's secrets "
            "(letters, digits, '_', '.', '-'; at most 64)",
            field=field,
        )
    return value


def refuse_api_key_env(spec: Mapping[str, Any], prefix: str = "spec") -> None:
    """Refuse `api_key_env` (no tenant input names an environment variable,
    docs/reference/security.md) and `api_key` (no key is written into a spec: it names a secret with
    `api_key_secret`).

    Raises:
        InvalidInputError: (field "<prefix>.api_key_env" or "<prefix>.api_key") when one is present.
    """
    if "api_key_env" in spec:
        field = f"{prefix}.api_key_env"
        raise InvalidInputError(
            f"{field} is not accepted: credentials are the organization's secrets, not the "
            "service's environment. Store the key with PUT /api/v1/secrets/{name} and write "
            '"api_key_secret": "<name>"',
            field=field,
        )
    if "api_key" in spec:  # a key written into a spec would be kept and shown with it
        field = f"{prefix}.api_key"
        raise InvalidInputError(
            f"{field} is not accepted: a key is never written into a spec (it is stored and shown "
            'as written). Store it with PUT /api/v1/secrets/{name} and write "api_key_secret": '
            '"<name>"',
            field=field,
        )


def check_headers(value: Any, field: str) -> dict[str, str | dict[str, str]]:
    """Return optional headers (`spec.headers`, `spec.extra_headers`, a profile's) after checking
    them.

    A value is a literal string or a secret reference
    ``{"secret": "<name>", "prefix"?: "Bearer "}``. A literal that is a credential (an
    `Authorization`, `Proxy-Authorization` or `Cookie` value, or text the redaction recognizes as a
    secret) is refused: it would be stored and shown with the spec. `Host`, `Content-Length`,
    `Transfer-Encoding` and `Connection` are the service's own.

    Raises:
        InvalidInputError: (field `field`) naming the header at fault.
    """
    if value is None:
        return {}
    if not isinstance(value, dict):
        raise InvalidInputError(
            f"{field} must be an object of header values (a string or "
            '{"secret": "<name>", "prefix"?: "..."})',
            field=field,
        )
    out: dict[str, str | dict[str, str]] = {}
    for name, raw in value.items():
        if not isinstance(name, str) or not _HEADER_NAME_RE.fullmatch(name):
            raise InvalidInputError(
                f"{field}: {clip(repr(name), 80)} is not a header name", field=field
            )
        if name.lower() in _SERVICE_HEADERS:
            raise InvalidInputError(f"{field}.{name} is set by the service itself", field=field)
        if isinstance(raw, str):
            if _BAD_HEADER_CHARS.search(raw):
                raise InvalidInputError(f"{field}.{name} must not contain line breaks", field=field)
            if name.lower() in CREDENTIAL_HEADERS or redact(raw) != raw:
                raise InvalidInputError(
                    f"{field}.{name} holds a credential in plain text: store it as a secret "
                    '(PUT /api/v1/secrets/{name}) and write {"secret": "<name>", "prefix"?: '
                    '"Bearer "}',
                    field=field,
                )
            out[name] = raw
            continue
        if not isinstance(raw, dict) or "secret" not in raw or set(raw) - {"secret", "prefix"}:
            raise InvalidInputError(
                f'{field}.{name} must be a string or {{"secret": "<name>", "prefix"?: "..."}}',
                field=field,
            )
        check_secret_name(raw["secret"], field)
        prefix = raw.get("prefix", "")
        if not isinstance(prefix, str) or len(prefix) > 256 or _BAD_HEADER_CHARS.search(prefix):
            raise InvalidInputError(
                f"{field}.{name}.prefix must be a short string without line breaks", field=field
            )
        if prefix and redact(prefix) != prefix:
            raise InvalidInputError(
                f"{field}.{name}.prefix holds a credential in plain text", field=field
            )
        out[name] = {"secret": raw["secret"], "prefix": prefix}
    return out


def secret_value(ctx: AskContext, name: str, source: str) -> str:
    """The value of the organization's secret `name`, read through `ctx` when asked.

    Raises:
        ProviderError: (status 401, not retried) the organization has no such secret.
        AgentCrashError: the value cannot be sent in a header (a line break).
    """
    value = ctx.secret(name)
    if not value:
        raise ProviderError(
            f"{source}: credentials missing: secret {name} is not set in this organization",
            status=401,
            credentials_missing=True,
        )
    if _BAD_HEADER_CHARS.search(value):
        raise AgentCrashError(
            f"{source}: secret {name} holds a line break and cannot be sent in a header"
        )
    return value


def resolve_headers(
    headers: Mapping[str, str | dict[str, str]], ctx: AskContext, source: str
) -> tuple[dict[str, str], frozenset[str]]:
    """Header values to send: literals as written, secret references read through `ctx`.

    Returns:
        (headers, the lower-cased names whose values came from secrets: dropped on a redirect to
        another origin).

    Raises:
        ProviderError / AgentCrashError: see `secret_value`.
    """
    out: dict[str, str] = {}
    secret_names: set[str] = set()
    for name, value in headers.items():
        if isinstance(value, str):
            out[name] = value
        else:
            out[name] = value.get("prefix", "") + secret_value(ctx, value["secret"], source)
            secret_names.add(name.lower())
    return out, frozenset(secret_names)
