"""Who is asking: the organization and user a bearer token names, and what they may do.

An organization id goes into every key of tenant data: composite keys join parts with `#`
and Secrets Manager names with `/`, so an id holds neither (`ORG_ID`). Checking the claims of a
verified token is pure; verifying the token (signature, JWKS) is `adapters.tokens`.
"""

from __future__ import annotations

import re
from collections.abc import Mapping
from dataclasses import dataclass
from typing import Any

from chalicelib.errors import ForbiddenError, UnauthenticatedError

ORG_ID = re.compile(r"^(?!.*\.\.)[A-Za-z0-9][A-Za-z0-9_.@-]{0,99}$")
"""What an organization id may be: 1-100 characters, letters, digits and `_ . @ -`, not
starting with punctuation and without `..` (no `#`: composite keys; no `/` and no path step:
Secrets Manager names and S3 keys start with it)."""


def is_org_id(value: object) -> bool:
    """Whether `value` is a well-formed organization id (`ORG_ID`)."""
    return isinstance(value, str) and ORG_ID.fullmatch(value) is not None


@dataclass(frozen=True, slots=True)
class Identity:
    """The caller of an API request or the author of a queued event.

    `permissions` lists what the caller may do (e.g. `promotions:override`); None - a token with
    no `permissions` claim, or the service acting for a pipeline - may do everything.
    """

    org_id: str
    user_id: str
    permissions: frozenset[str] | None = None

    def may(self, permission: str) -> bool:
        return self.permissions is None or permission in self.permissions

    def require(self, permission: str, what: str) -> None:
        """Raises ForbiddenError (403) naming the missing permission."""
        if not self.may(permission):
            raise ForbiddenError(
                f"{what} needs the {permission} permission",
                field="permissions",
                permission=permission,
            )


def from_claims(claims: Mapping[str, Any], *, org_claim: str = "org") -> Identity:
    """The identity the verified claims of a token name.

    Args:
        claims: the token's payload, its signature, issuer, audience and times already checked.
        org_claim: the claim naming the organization (`org` for assay's own tokens; an identity
            provider's may be another, `ASSAY_OIDC_ORG_CLAIM`).
    Raises:
        UnauthenticatedError: no organization or user as a string, an organization id that is
            not `ORG_ID`, or permissions that are not a list of strings.
    """
    org, sub = claims.get(org_claim), claims.get("sub")
    if not isinstance(org, str) or not isinstance(sub, str) or not sub:
        raise UnauthenticatedError(
            f"token must name the organization ({org_claim}) and the user (sub) as strings",
            field="Authorization",
        )
    if not is_org_id(org):
        raise UnauthenticatedError(
            "token names no valid organization: an organization id is 1-100 letters, "
            "digits, '_', '.', '@' or '-', starting with a letter or digit",
            field="Authorization",
        )
    perms = claims.get("permissions")
    if perms is not None and not (
        isinstance(perms, list) and all(isinstance(p, str) for p in perms)
    ):
        raise UnauthenticatedError(
            "token permissions must be a list of strings", field="Authorization"
        )
    return Identity(
        org_id=org, user_id=sub, permissions=frozenset(perms) if perms is not None else None
    )
