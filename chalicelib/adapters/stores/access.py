"""Members and API keys on DynamoDB (ports `services.ports.access`)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pynamodb.exceptions import DoesNotExist, TransactWriteError
from pynamodb.expressions.update import Action

from chalicelib.adapters.stores.base import (
    TX,
    conditional_update,
    save_new,
    unless_condition_failed,
)
from chalicelib.adapters.tables import ApiKeyRow, MemberRow
from chalicelib.domain.access import ApiKey, Member
from chalicelib.errors import NotFoundError
from chalicelib.retrying import change as retry_change

FIRST_MEMBER_KEY = "first"
"""The members-table item that records the organization's first member: it exists once one was
made, so the bootstrap happens once whatever members are removed later. Member items are
`u#<user_id>`, so no user id can name it."""


def member_key(user_id: str) -> str:
    """The members-table sort key of a user's item."""
    return f"u#{user_id}"


def member_of(row: MemberRow) -> Member:
    """The member a row holds."""
    return Member(
        org_id=row.org_id,
        user_id=row.user_id,
        role=row.role,
        grants={k: frozenset(v) for k, v in (row.grants or {}).items()},
        added_at=row.added_at,
        added_by=row.added_by,
        updated_at=row.updated_at,
    )


def _row(m: Member) -> MemberRow:
    return MemberRow(
        m.org_id,
        member_key(m.user_id),
        user_id=m.user_id,
        role=m.role,
        grants={k: sorted(v) for k, v in m.grants.items()},
        added_at=m.added_at,
        added_by=m.added_by,
        updated_at=m.updated_at,
    )


class MemberStore:
    """An organization's members (port `ports.access.Members`)."""

    def get(self, org_id: str, user_id: str) -> Member | None:
        try:
            return member_of(MemberRow.get(org_id, member_key(user_id), consistent_read=True))
        except DoesNotExist:
            return None

    def lookup(self, org_id: str, user_id: str) -> tuple[Member | None, bool]:
        keys = [
            {"org_id": {"S": org_id}, "member_key": {"S": key}}
            for key in (member_key(user_id), FIRST_MEMBER_KEY)
        ]
        items = TX.batch_get({MemberRow.Meta.table_name: {"Keys": keys, "ConsistentRead": True}})
        rows = [MemberRow.from_raw_data(i) for i in items[MemberRow.Meta.table_name]]
        member = next((member_of(r) for r in rows if r.member_key != FIRST_MEMBER_KEY), None)
        return member, any(r.member_key == FIRST_MEMBER_KEY for r in rows)

    def list(self, org_id: str) -> list[Member]:
        return [
            member_of(r)
            for r in MemberRow.query(
                org_id, MemberRow.member_key.startswith("u#"), consistent_read=True
            )
        ]

    def add_first(self, member: Member) -> bool:
        # the marker names nobody: it must outlive its member without keeping who they were
        marker = MemberRow(member.org_id, FIRST_MEMBER_KEY, user_id="", added_at=member.added_at)
        try:
            with TX.write() as tx:
                tx.save(marker, condition=MemberRow.member_key.does_not_exist())
                tx.save(_row(member))
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            return False
        return True

    def put(self, member: Member, *, new: bool) -> None:
        if new:
            save_new(
                _row(member),
                MemberRow.member_key.does_not_exist(),
                f"{member.user_id} is a member already: change their role instead",
                field="user_id",
            )
        else:
            _row(member).save()

    def change(
        self,
        org_id: str,
        user_id: str,
        change: Callable[[Member], Member | None],
        *,
        while_admin: str | None = None,
    ) -> Member:
        read_revision = [0]  # the revision of the last read; each write is conditional on it

        def read() -> Member | None:
            try:
                row = MemberRow.get(org_id, member_key(user_id), consistent_read=True)
            except DoesNotExist:
                return None
            read_revision[0] = int(row.revision or 0)
            return member_of(row)

        def write(before: Member, after: Member) -> bool:
            revision = read_revision[0]
            actions: list[Action] = [
                MemberRow.role.set(after.role),
                MemberRow.grants.set({k: sorted(v) for k, v in after.grants.items()}),
                MemberRow.updated_at.set(after.updated_at),
                MemberRow.revision.set(revision + 1),
            ]
            unchanged = (
                (MemberRow.revision == revision)
                if revision
                else MemberRow.revision.does_not_exist() | (MemberRow.revision == 0)
            )
            if while_admin is None:
                return conditional_update(
                    MemberRow(org_id, member_key(user_id)), actions, unchanged
                )
            try:
                with TX.write() as tx:
                    tx.update(MemberRow(org_id, member_key(user_id)), actions, condition=unchanged)
                    _check_admin(tx, org_id, while_admin)
            except TransactWriteError as exc:
                unless_condition_failed(exc)
                return False
            return True

        done = retry_change(
            read, change, write, conflict=f"member {user_id} kept changing", field="user_id"
        )
        if done is None:
            raise NotFoundError(f"{user_id} is not a member", field="user_id")
        return done.after

    def remove(self, org_id: str, user_id: str, *, while_admin: str | None = None) -> bool:
        if while_admin is None:
            MemberRow(org_id, member_key(user_id)).delete()
            return True
        try:
            with TX.write() as tx:
                tx.delete(MemberRow(org_id, member_key(user_id)))
                _check_admin(tx, org_id, while_admin)
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            return False
        return True


def _check_admin(tx: Any, org_id: str, user_id: str) -> None:
    """Add to transaction `tx` a check that `user_id` is an admin of the organization: two
    demotions or removals at once each name another admin who must stay one, so DynamoDB's
    serializable transactions let at most one of a pair pass and an admin always remains."""
    tx.condition_check(MemberRow, org_id, member_key(user_id), condition=MemberRow.role == "admin")


def api_key_of(row: ApiKeyRow) -> ApiKey:
    """The API key a row holds."""
    return ApiKey(
        org_id=row.org_id,
        key_id=row.key_id,
        name=row.name,
        scopes=frozenset(str(s) for s in row.scopes or ()),
        created_by=row.created_by,
        created_at=row.created_at,
        secret_sha256=row.secret_sha256,
        revoked_at=row.revoked_at,
        revoked_by=row.revoked_by,
    )


class ApiKeyStore:
    """An organization's API keys (port `ports.access.ApiKeys`)."""

    def create(self, key: ApiKey) -> None:
        fields: dict[str, Any] = {
            "name": key.name,
            "scopes": sorted(key.scopes),
            "created_by": key.created_by,
            "created_at": key.created_at,
            "secret_sha256": key.secret_sha256,
        }
        save_new(
            ApiKeyRow(key.org_id, key.key_id, **fields),
            ApiKeyRow.key_id.does_not_exist(),
            f"API key {key.key_id} exists already",
            field="key_id",
        )

    def get(self, org_id: str, key_id: str) -> ApiKey | None:
        try:
            return api_key_of(ApiKeyRow.get(org_id, key_id, consistent_read=True))
        except DoesNotExist:
            return None

    def list(self, org_id: str) -> list[ApiKey]:
        return [api_key_of(r) for r in ApiKeyRow.query(org_id, consistent_read=True)]

    def revoke(self, org_id: str, key_id: str, *, by: str, at: str) -> ApiKey:
        found = self.get(org_id, key_id)
        if found is None:
            raise NotFoundError(f"API key {key_id} not found", field="key_id")
        if found.revoked_at is None:
            conditional_update(
                ApiKeyRow(org_id, key_id),
                [ApiKeyRow.revoked_at.set(at), ApiKeyRow.revoked_by.set(by)],
                ApiKeyRow.revoked_at.does_not_exist(),
            )
        return self.get(org_id, key_id) or found
