"""Who is asking: the organization and user a bearer token names, and what they may do."""

from __future__ import annotations

from dataclasses import dataclass

from chalicelib.errors import ForbiddenError


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
            raise ForbiddenError(f"{what} needs the {permission} permission", field="permissions",
                                 permission=permission)
