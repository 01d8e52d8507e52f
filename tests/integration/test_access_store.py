"""Members and API keys on moto, and a case's starter read beside its budgets (one request)."""

from __future__ import annotations

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib.adapters import stores
from chalicelib.adapters.stores.access import ApiKeyStore, MemberStore
from chalicelib.domain.access import ApiKey, Member
from chalicelib.errors import ConflictError, NotFoundError
from tests.integration.conftest import store_tables

pytestmark = pytest.mark.usefixtures("models_put_back")

T0 = "2026-12-01T08:00:00.000Z"


@pytest.fixture
def tables(moto: MotoHandle, monkeypatch: pytest.MonkeyPatch) -> MotoHandle:
    store_tables(moto, monkeypatch, "access-")
    stores.OrganizationStore().ensure("acme", concurrency_limit=3, now_iso=T0)
    return moto


def test_the_first_member_is_made_once_and_a_change_is_conditional(tables):
    members = MemberStore()
    assert members.lookup("acme", "ana") == (None, False)
    assert members.add_first(Member("acme", "ana", "admin", added_at=T0, updated_at=T0))
    assert not members.add_first(Member("acme", "bob", "admin"))
    assert members.get("acme", "bob") is None
    assert members.lookup("acme", "bob") == (None, True)  # a sign-in need not try the bootstrap
    assert members.lookup("acme", "ana")[0] == members.get("acme", "ana")
    members.remove("acme", "ana")
    assert not members.add_first(Member("acme", "carl", "admin"))  # once, whatever follows
    members.put(Member("acme", "bob", "viewer"), new=True)
    with pytest.raises(ConflictError):
        members.put(Member("acme", "bob", "admin"), new=True)
    changed = members.change(
        "acme",
        "bob",
        lambda m: Member(
            m.org_id, m.user_id, "guest", grants={"agent:a": frozenset({"agents:run"})}
        ),
    )
    assert members.get("acme", "bob") == changed and changed.role == "guest"
    assert [m.user_id for m in members.list("acme")] == ["bob"]  # the marker is not a member
    with pytest.raises(NotFoundError):
        members.change("acme", "nobody", lambda m: m)


def test_a_case_reads_its_starter_in_the_budgets_request(tables):
    MemberStore().put(Member("acme", "ana", "runner"), new=True)
    key = ApiKey("acme", "key_1", "ci", frozenset({"runs:view"}), "ana", T0, "0" * 64)
    ApiKeyStore().create(key)
    spend = stores.SpendStore()
    tables.reset_counts()
    reading = spend.read("acme", None, "2026-12", starter=("ana", "key_1"))
    assert tables.total_requests() == 1
    member, found = reading.starter
    assert (member.role, found) == ("runner", key)
    assert spend.read("acme", None, "2026-12", starter=("gone", None)).starter == (None, None)
    assert spend.read("acme", None, "2026-12").starter is None
    revoked = ApiKeyStore().revoke("acme", "key_1", by="ana", at=T0)
    assert revoked.revoked_at == T0 and ApiKeyStore().list("acme") == [revoked]


def test_a_demotion_or_removal_while_another_admin_writes_only_while_they_are_one(tables):
    members = MemberStore()
    for user in ("ana", "bob"):
        members.put(Member("acme", user, "admin"), new=True)

    def demoted(m: Member) -> Member:
        return Member(m.org_id, m.user_id, "viewer")

    members.change("acme", "bob", demoted, while_admin="ana")
    assert members.get("acme", "bob").role == "viewer"
    # bob is no admin now: nothing written while he must be one, however often it is tried
    with pytest.raises(ConflictError):
        members.change("acme", "ana", demoted, while_admin="bob")
    assert not members.remove("acme", "ana", while_admin="bob")
    assert not members.remove("acme", "ana", while_admin="nobody")
    assert members.get("acme", "ana").role == "admin"
    assert members.remove("acme", "bob", while_admin="ana")
    assert members.get("acme", "bob") is None
