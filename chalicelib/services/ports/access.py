"""Ports of access: an organization's members (role and grants) and its API keys (implemented by
`chalicelib.adapters.stores.access`, docs/reference/access.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from chalicelib.domain.access import ApiKey, Member


class Members(Protocol):
    """The people of an organization, their roles and grants."""

    def get(self, org_id: str, user_id: str) -> Member | None:
        """The member (a consistent read: a removed member is refused at once), None for a person
        of no role here."""

    def lookup(self, org_id: str, user_id: str) -> tuple[Member | None, bool]:
        """The member (as `get`) and whether the organization has had its first member, in one
        request: what a request's sign-in needs."""

    def list(self, org_id: str) -> list[Member]:
        """Every member of the organization, by user id."""

    def add_first(self, member: Member) -> bool:
        """Make `member` the organization's first member, in one transaction with the record that
        the organization has had one; False when it already had (nothing written)."""

    def put(self, member: Member, *, new: bool) -> None:
        """Write a member. With `new`, raises ConflictError (field `user_id`) when they are one
        already."""

    def change(
        self,
        org_id: str,
        user_id: str,
        change: Callable[[Member], Member | None],
        *,
        while_admin: str | None = None,
    ) -> Member:
        """Apply `change` to the member as read and write the result conditionally on nothing else
        having changed it (retried); None from `change` writes nothing. With `while_admin`, the
        write also needs that member to be an admin still, in the same transaction (a demotion
        keeps one admin however many run at once). Raises NotFoundError (field `user_id`) for a
        person who is not a member, ConflictError (field `user_id`) when the writes keep being
        lost (`while_admin` no longer an admin among them)."""

    def remove(self, org_id: str, user_id: str, *, while_admin: str | None = None) -> bool:
        """Remove the member (nothing when they are not one). With `while_admin`, only while that
        member is an admin still, in the same transaction; False when they were not (nothing
        removed)."""


class ApiKeys(Protocol):
    """An organization's API keys (only a hash of each secret is kept)."""

    def create(self, key: ApiKey) -> None:
        """Write a new key (its id is random; a taken one raises ConflictError)."""

    def get(self, org_id: str, key_id: str) -> ApiKey | None:
        """The key (revoked ones too), None when there is none."""

    def list(self, org_id: str) -> list[ApiKey]:
        """Every key of the organization, revoked ones too, by id."""

    def revoke(self, org_id: str, key_id: str, *, by: str, at: str) -> ApiKey:
        """Mark the key revoked (kept, so its id says what it was); a revoked key stays as it was.
        Raises NotFoundError (field `key_id`)."""
