"""Who is asking: the organization and user a bearer token names, and what they may do.

An organization id goes into every key of tenant data: composite keys join parts with `#`
and Secrets Manager names with `/`, so an id holds neither (`ORG_ID`). Checking the claims of a
verified token is pure; verifying the token (signature, JWKS) is `adapters.tokens`.
"""

from __future__ import annotations

import math
import re
from collections.abc import Iterable, Mapping
from dataclasses import dataclass, field
from typing import Any

from chalicelib.domain.access import resource_name, user_id_problem
from chalicelib.errors import ForbiddenError, NotFoundError, UnauthenticatedError

ORG_ID = re.compile(r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
"""What an organization id may be: 1-100 characters, letters, digits and `_ . @ -`, not
starting with punctuation and without `..` (no `#`: composite keys; no `/` and no path step:
Secrets Manager names and S3 keys start with it)."""


def is_org_id(value: object) -> bool:
    """Whether `value` is a well-formed organization id (`ORG_ID`)."""
    return isinstance(value, str) and ORG_ID.fullmatch(value) is not None


@dataclass(frozen=True, slots=True)
class Identity:
    """The caller of an API request or the author of a queued event, with what they may do.

    `permissions` are what the caller holds across the organization and `grants` what they hold
    on single agents and datasets (`{"agent:<id>": permissions}`, `access.resource_name`); both
    are resolved from the member's current role when a request is served (`services.access`),
    never taken from a token. None - the service itself acting for a pipeline or a sweep, or a
    service test - may do everything. `key_id` names the API key that made the request (a key is
    not a person; it acts for `user_id`, its creator, within `scopes`), and `actor` the
    administrator who signs in as `user_id` (a token's `act` claim). `member` is False for a
    person of no role here.
    """

    org_id: str
    user_id: str
    permissions: frozenset[str] | None = None
    grants: Mapping[str, frozenset[str]] = field(default_factory=dict)
    key_id: str | None = None
    actor: str | None = None
    scopes: frozenset[str] | None = None
    member: bool = True

    @property
    def is_person(self) -> bool:
        """A person signed in as themselves: no API key, nobody acting as them."""
        return self.key_id is None and self.actor is None

    def may(self, permission: str, on: str | None = None) -> bool:
        """Whether the caller holds `permission` across the organization or, with `on` (an agent or
        dataset, `domain.access.resource_name`), through a grant on it; an API key never beyond its
        scopes."""
        if self.permissions is None:
            return True
        if self.scopes is not None and permission not in self.scopes:
            return False
        return permission in self.permissions or (
            on is not None and permission in self.grants.get(on, ())
        )

    def first_missing(self, needed: Iterable[tuple[str, str | None]]) -> str | None:
        """The first of `needed` (`(permission, resource or None)`, in the order they are
        checked) the caller does not hold, None when they hold every one."""
        return next((p for p, on in needed if not self.may(p, on)), None)

    def require(self, permission: str, what: str, on: str | None = None) -> None:
        """Raises ForbiddenError (403) naming the missing permission."""
        if not self.may(permission, on):
            raise ForbiddenError(
                f"{what} needs the {permission} permission"
                + (f" on {on.replace(':', ' ', 1)}" if on else ""),
                field="permissions",
                permission=permission,
            )

    def sees(self, kind: str, resource_id: str) -> bool:
        """Whether the caller may see one agent or dataset (`kind` "agent" or "dataset"): the
        kind's view permission, across the organization or through a grant on it."""
        return self.may(f"{kind}s:view", resource_name(kind, resource_id))

    def require_sight(self, kind: str, resource_id: str, field_name: str | None = None) -> None:
        """Raises NotFoundError (404, as for another organization's, naming `field_name`, default
        `<kind>_id`) unless the caller may see it: an invisible resource tells nothing of what
        permission would show it."""
        if not self.sees(kind, resource_id):
            raise NotFoundError(f"{kind} {resource_id} not found", field=field_name or f"{kind}_id")

    def require_on(
        self,
        permission: str,
        kind: str,
        resource_id: str,
        what: str,
        field_name: str | None = None,
    ) -> None:
        """`require_sight`, then `require(permission, what)` on the resource (404, then 403)."""
        self.require_sight(kind, resource_id, field_name)
        self.require(permission, what, resource_name(kind, resource_id))

    def require_no_key(self, what: str) -> None:
        """Raises ForbiddenError (403, `permission` "person") when an API key asks for what is a
        person's own - their notices and their notice settings (docs/reference/access.md): a key
        acts only within its scopes, and no scope reaches a person's own things. The person signed
        in, or an administrator acting as them, may."""
        if self.permissions is None or self.key_id is None:
            return
        raise ForbiddenError(
            f"{what} is a person's own: it needs the person signed in, not an API key (a key "
            "acts only within its scopes, and no scope reaches what is a person's own)",
            field="Authorization",
            permission="person",
        )

    def require_person(self, what: str) -> None:
        """Raises ForbiddenError (403, `permission` "person") unless a person signed in as
        themselves asks: neither an API key nor an administrator acting as somebody
        (docs/reference/access.md: what spends as whoever saves it)."""
        if self.permissions is None or self.is_person:
            return
        by = "an API key" if self.key_id is not None else f"{self.actor} acting as {self.user_id}"
        raise ForbiddenError(
            f"{what} needs a person signed in as themselves, not {by}",
            field="Authorization",
            permission="person",
        )


TIME_CLAIMS = ("exp", "nbf", "iat")
"""The claims of a token that are times (RFC 7519 NumericDate: seconds since 1970, a number)."""


def _time_refused(claim: str, message: str) -> UnauthenticatedError:
    return UnauthenticatedError(message, field="Authorization", claim=claim)


def _numeric_date(claims: Mapping[str, Any], claim: str) -> float | None:
    """A time claim as seconds since 1970; None when the token does not carry it.

    Raises:
        UnauthenticatedError: (`claim` named) a value that is not a finite JSON number: a string
            (even "1700000000"), a boolean, null, NaN or an infinity, or an integer too large to
            be a time.
    """
    if claim not in claims:
        return None
    value = claims[claim]
    number: float | None = None
    if isinstance(value, int | float) and not isinstance(value, bool):
        try:
            number = float(value)
        except OverflowError:  # an integer of hundreds of digits
            number = None
    if number is None or not math.isfinite(number):
        raise _time_refused(
            claim,
            f"token {claim} claim is not a number: RFC 7519 times (exp, nbf, iat) are JSON "
            "numbers of seconds since 1970",
        )
    return number


def check_token_times(
    claims: Mapping[str, Any], *, now_s: float, leeway_s: float, max_lifetime_s: float
) -> None:
    """Check the times of a verified token's claims (pure; `adapters.tokens` calls it after the
    signature, issuer and audience verified).

    Rule: `exp` (required), and `nbf` and `iat` when present, are JSON numbers (RFC 7519
    NumericDate). The token is refused once `exp` is past (`exp <= now - leeway`), before `nbf`
    (`nbf > now + leeway`), and when it says it was issued in the future (`iat > now + leeway`).
    Its lifetime - `exp - iat`, or `exp - now` without `iat` - is at most `max_lifetime_s`
    (`ASSAY_JWT_MAX_LIFETIME_SECONDS`) plus the leeway: a token that never expires in practice
    (`exp` 1e14) is refused however it was signed.

    Args:
        claims: the token's payload.
        now_s: the time now, seconds since 1970.
        leeway_s: the clock skew allowed, seconds.
        max_lifetime_s: the longest lifetime accepted, seconds.
    Raises:
        UnauthenticatedError: (field `Authorization`, `claim` naming the claim at fault) a time
            claim missing (`exp`), not a number, past, in the future, or a lifetime too long.
    """
    exp, nbf, iat = (_numeric_date(claims, claim) for claim in TIME_CLAIMS)
    if exp is None:
        raise _time_refused("exp", "token has no exp claim: every token must say when it expires")
    if exp <= now_s - leeway_s:
        raise _time_refused("exp", "token has expired (exp)")
    if nbf is not None and nbf > now_s + leeway_s:
        raise _time_refused("nbf", "token is not valid yet (nbf is in the future)")
    if iat is not None and iat > now_s + leeway_s:
        raise _time_refused("iat", "token is not valid yet (iat is in the future)")
    lifetime = exp - (iat if iat is not None else now_s)
    if lifetime > max_lifetime_s + leeway_s:
        start = "iat" if iat is not None else "now"
        raise _time_refused(
            "exp",
            f"token lifetime (exp - {start}) is {_duration(lifetime)}, more than the "
            f"{_duration(max_lifetime_s)} this service accepts (ASSAY_JWT_MAX_LIFETIME_SECONDS): "
            "sign a token that expires sooner",
        )


def _duration(seconds: float) -> str:
    """A lifetime in seconds and, from a day on, days: `2,592,031 s (30 days)`; an absurd one as
    `over 1,000 years`."""
    if seconds >= 1000 * 365 * 86400:
        return "over 1,000 years"
    days = f" ({seconds / 86400:.4g} days)" if seconds >= 86400 else ""
    return f"{seconds:,.0f} s{days}"


def from_claims(claims: Mapping[str, Any], *, org_claim: str = "org") -> Identity:
    """The identity the verified claims of a token name.

    Args:
        claims: the token's payload, its signature, issuer, audience and times already checked.
        org_claim: the claim naming the organization (`org` for assay's own tokens; an identity
            provider's may be another, `ASSAY_OIDC_ORG_CLAIM`).
    Raises:
        UnauthenticatedError: no organization or user as a string, an organization id that is
            not `ORG_ID`, a `sub` that is no user id (`access.user_id_problem`: control, format or
            bidirectional characters, invisible or blank ones such as U+FE0F or U+3164, spaces at
            either end, what a URL path cannot name; `claim` "sub"), or an `act` claim
            (RFC 8693: an administrator signed in as `sub`) that names nobody (`claim` "act").
    """
    org, sub = claims.get(org_claim), claims.get("sub")
    if not isinstance(org, str) or not isinstance(sub, str) or not sub:
        raise UnauthenticatedError(
            f"token must name the organization ({org_claim}) and the user (sub) as strings",
            field="Authorization",
            claim=org_claim if not isinstance(org, str) else "sub",
        )
    if not is_org_id(org):
        raise UnauthenticatedError(
            "token names no valid organization: an organization id is 1-100 letters, "
            "digits, '_', '.', '@' or '-', starting with a letter or digit",
            field="Authorization",
            claim=org_claim,
        )
    problem = user_id_problem(sub)
    if problem is not None:
        raise UnauthenticatedError(
            f"token's user (sub) {problem}", field="Authorization", claim="sub"
        )
    act = claims.get("act")
    actor = act.get("sub") if isinstance(act, Mapping) else None
    actor_problem = user_id_problem(actor) if act is not None else None
    if actor_problem is not None:
        raise UnauthenticatedError(
            f"token act claim must name who acts: act.sub {actor_problem}",
            field="Authorization",
            claim="act",
        )
    # What the caller may do is resolved from their membership when the request is served
    # (`services.access`): a `permissions` claim is not read, and until then they may do nothing.
    return Identity(org_id=org, user_id=sub, permissions=frozenset(), actor=actor, member=False)
