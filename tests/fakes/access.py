"""In-memory members and API keys (ports `chalicelib.services.ports.access`)."""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import replace

from chalicelib.domain.access import ApiKey, Member
from chalicelib.errors import ConflictError, NotFoundError


class FakeMembers:
    """Members by (org_id, user_id); `first` records each organization's first member."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], Member] = {}
        self.first: dict[str, str] = {}

    def get(self, org_id: str, user_id: str) -> Member | None:
        return self.kept.get((org_id, user_id))

    def lookup(self, org_id: str, user_id: str) -> tuple[Member | None, bool]:
        return self.get(org_id, user_id), org_id in self.first

    def list(self, org_id: str) -> list[Member]:
        return [m for (org, _), m in sorted(self.kept.items()) if org == org_id]

    def add_first(self, member: Member) -> bool:
        if member.org_id in self.first:
            return False
        self.first[member.org_id] = member.user_id
        self.kept[(member.org_id, member.user_id)] = member
        return True

    def put(self, member: Member, *, new: bool) -> None:
        if new and (member.org_id, member.user_id) in self.kept:
            raise ConflictError(f"{member.user_id} is a member already", field="user_id")
        self.kept[(member.org_id, member.user_id)] = member

    def _admin(self, org_id: str, user_id: str | None) -> bool:
        found = self.get(org_id, user_id) if user_id is not None else None
        return user_id is None or (found is not None and found.role == "admin")

    def change(
        self,
        org_id: str,
        user_id: str,
        change: Callable[[Member], Member | None],
        *,
        while_admin: str | None = None,
    ) -> Member:
        before = self.get(org_id, user_id)
        if before is None:
            raise NotFoundError(f"{user_id} is not a member", field="user_id")
        after = change(before)
        if after is None:
            return before
        if not self._admin(org_id, while_admin):  # every try would be lost: the store gives up
            raise ConflictError(f"member {user_id} kept changing", field="user_id")
        self.kept[(org_id, user_id)] = after
        return after

    def remove(self, org_id: str, user_id: str, *, while_admin: str | None = None) -> bool:
        if not self._admin(org_id, while_admin):
            return False
        self.kept.pop((org_id, user_id), None)
        return True


class FakeApiKeys:
    """API keys by (org_id, key_id)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], ApiKey] = {}

    def create(self, key: ApiKey) -> None:
        if (key.org_id, key.key_id) in self.kept:
            raise ConflictError(f"API key {key.key_id} exists already", field="key_id")
        self.kept[(key.org_id, key.key_id)] = key

    def get(self, org_id: str, key_id: str) -> ApiKey | None:
        return self.kept.get((org_id, key_id))

    def list(self, org_id: str) -> list[ApiKey]:
        return [k for (org, _), k in sorted(self.kept.items()) if org == org_id]

    def revoke(self, org_id: str, key_id: str, *, by: str, at: str) -> ApiKey:
        found = self.get(org_id, key_id)
        if found is None:
            raise NotFoundError(f"API key {key_id} not found", field="key_id")
        if found.revoked_at is None:
            found = self.kept[(org_id, key_id)] = replace(found, revoked_at=at, revoked_by=by)
        return found
