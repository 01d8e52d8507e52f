"""Members, grants, API keys and the request's resolution on fakes (`services.access`)."""

from __future__ import annotations

from types import SimpleNamespace
from typing import Any, cast

import pytest

from chalicelib.domain.access import Member
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Run
from chalicelib.errors import ConflictError, ForbiddenError, NotFoundError, UnauthenticatedError
from chalicelib.services import access
from tests.fakes import FakeContainer


class Tokens:
    """Stands for the token verifier: the bearer value is `<org>/<user>[/<actor>]`."""

    def identify(self, bearer: str) -> Identity:
        org, user, *actor = bearer.split("/")
        return Identity(org, user, permissions=frozenset(), actor=actor[0] if actor else None)


@pytest.fixture
def c() -> FakeContainer:
    return FakeContainer(tokens=Tokens())


def test_the_first_sign_in_makes_an_admin_once(c):
    first = access.identify(c, "acme/ana")
    assert first.may("members:manage") and c.members.get("acme", "ana").role == "admin"
    second = access.identify(c, "acme/bob")
    assert not second.member and not second.may("runs:view")
    c.members.remove("acme", "ana")
    assert not access.identify(c, "acme/carl").member  # the bootstrap happens once


def test_a_role_is_read_at_every_request(c):
    admin = access.identify(c, "acme/ana")
    access.add_member(c, admin, "bob", "editor")
    assert access.identify(c, "acme/bob").may("agents:edit")
    access.change_role(c, admin, "bob", "viewer")
    bob = access.identify(c, "acme/bob")
    assert bob.may("runs:view") and not bob.may("agents:edit")
    with pytest.raises(ForbiddenError):
        access.add_member(c, bob, "carl", "admin")
    with pytest.raises(ConflictError):
        access.add_member(c, admin, "bob", "runner")
    with pytest.raises(ConflictError, match="last admin"):
        access.remove_member(c, admin, "ana")
    with pytest.raises(NotFoundError):
        access.remove_member(c, admin, "nobody")


def test_grants_on_a_deleted_resource_are_forgotten(c):
    admin = access.identify(c, "acme/ana")
    c.agents.seed("acme", "a")
    access.add_member(c, admin, "bob", "guest")
    access.set_grant(c, admin, "bob", "agent", "a", ["agents:run"])
    assert access.identify(c, "acme/bob").may("agents:run", "agent:a")
    with pytest.raises(NotFoundError):
        access.set_grant(c, admin, "bob", "agent", "missing", ["agents:run"])
    access.forget_resource(c, "acme", "agent", "a")
    assert not access.identify(c, "acme/bob").sees("agent", "a")


def test_acting_as_somebody_needs_members_manage(c):
    admin = access.identify(c, "acme/ana")
    access.add_member(c, admin, "bob", "editor")
    acting = access.identify(c, "acme/bob/ana")
    assert (acting.user_id, acting.actor, acting.is_person) == ("bob", "ana", False)
    assert acting.may("agents:edit") and not acting.may("members:manage")  # bob's authority
    with pytest.raises(UnauthenticatedError, match="members:manage"):
        access.identify(c, "acme/ana/bob")


def test_an_api_key_is_hashed_scoped_and_dies_with_its_creator_s_rights(c):
    admin = access.identify(c, "acme/ana")
    access.add_member(c, admin, "bob", "editor")
    bob = access.identify(c, "acme/bob")
    with pytest.raises(ForbiddenError) as refused:
        access.create_api_key(c, bob, "ci", ["settings:manage"])
    assert refused.value.details["permission"] == "settings:manage"
    key, bearer = access.create_api_key(c, bob, "ci", ["runs:view", "agents:run"])
    assert bearer.split(".")[-1] not in key.secret_sha256 and len(key.secret_sha256) == 64
    used = access.identify(c, bearer)
    assert (used.user_id, used.key_id) == ("bob", key.key_id)
    assert used.may("agents:run") and not used.may("agents:edit")
    with pytest.raises(UnauthenticatedError):
        access.identify(c, bearer[:-2] + "xx")
    c.members.put(Member("acme", "bob", "viewer"), new=False)
    assert not access.identify(c, bearer).may("agents:run")  # bob may no longer
    access.revoke_api_key(c, bob, key.key_id)
    with pytest.raises(UnauthenticatedError, match="revoked"):
        access.identify(c, bearer)
    with pytest.raises(ForbiddenError):
        access.create_api_key(c, used, "from a key", ["runs:view"])


def test_two_admins_demoting_each_other_on_the_same_read_leave_one(c, monkeypatch):
    ana = access.identify(c, "acme/ana")
    access.add_member(c, ana, "bob", "admin")
    bob = access.identify(c, "acme/bob")
    listed = c.members.list
    for second in (
        lambda: access.remove_member(c, bob, "ana"),
        lambda: access.change_role(c, bob, "ana", "editor"),
    ):
        as_read = [listed("acme")]  # the second reads the admins before the first writes
        access.change_role(c, ana, "bob", "viewer")
        monkeypatch.setattr(
            c.members,
            "list",
            lambda org_id, kept=as_read: kept.pop() if kept else listed(org_id),
        )
        with pytest.raises(ConflictError, match="last admin"):
            second()
        assert not as_read and c.members.get("acme", "ana").role == "admin"
        monkeypatch.setattr(c.members, "list", listed)
        access.change_role(c, ana, "bob", "admin")


def test_a_member_holds_at_most_max_grants(c, monkeypatch):
    admin = access.identify(c, "acme/ana")
    access.add_member(c, admin, "bob", "guest")
    monkeypatch.setattr(access, "MAX_GRANTS", 2)
    for agent_id in ("a", "b", "c"):
        c.agents.seed("acme", agent_id)
    access.set_grant(c, admin, "bob", "agent", "a", ["agents:view"])
    access.set_grant(c, admin, "bob", "agent", "b", ["agents:view"])
    access.set_grant(c, admin, "bob", "agent", "b", ["agents:run"])  # a change takes no more
    with pytest.raises(ConflictError, match="2 grants"):
        access.set_grant(c, admin, "bob", "agent", "c", ["agents:view"])


def _run(**fields: Any) -> Run:
    """What `starter_refusal` reads of a run."""
    base = {
        "org_id": "acme",
        "agent_id": "a",
        "dataset_id": "d",
        "created_by": "bob",
        "draft": False,
        "arms": (),
        "settings": {"runs_as_starter": True},
    }
    return cast(Run, SimpleNamespace(**{**base, **fields}))


def test_a_run_stops_for_a_revoked_key_and_for_a_runner_rerunning_the_draft(c):
    admin = access.identify(c, "acme/ana")
    access.add_member(c, admin, "bob", "editor")
    key, _ = access.create_api_key(
        c, access.identify(c, "acme/bob"), "ci", ["runs:view", "agents:run", "datasets:run"]
    )
    by_key = _run(settings={"runs_as_starter": True, "started_by_key": key.key_id})
    assert access.starter_refusal(c, by_key) is None
    access.revoke_api_key(c, admin, key.key_id)
    assert access.starter_refusal(c, by_key) == (
        f"stopped: bob's API key {key.key_id} can no longer run it (no runs:view)"
    )
    borrowed_draft = SimpleNamespace(source_run_id="r0", version=None, rerun=True)
    reruns_draft = _run(arms=(borrowed_draft,))
    assert access.starter_refusal(c, reruns_draft) is None  # an editor may run the draft
    access.change_role(c, admin, "bob", "runner")
    assert access.starter_refusal(c, reruns_draft) == (
        "stopped: bob can no longer run it (no agents:edit)"
    )
    assert access.starter_refusal(c, _run()) is None
