"""The access rules of docs/reference/access.md on hand-built identities (`domain.access`,
`domain.identity`)."""

from __future__ import annotations

import pytest

from chalicelib.domain import access
from chalicelib.domain.identity import Identity
from chalicelib.errors import ForbiddenError, InvalidInputError, NotFoundError


def _who(role: str, grants=None, scopes=None, **kw) -> Identity:
    return Identity(
        "acme",
        "ana",
        permissions=access.with_implied(access.ROLES[role]),
        grants={k: access.with_implied(v) for k, v in (grants or {}).items()},
        scopes=None if scopes is None else access.with_implied(scopes),
        **kw,
    )


def test_each_role_holds_the_one_below_it_and_an_admin_everything():
    order = ["guest", "viewer", "runner", "editor", "admin"]
    for lower, higher in zip(order, order[1:], strict=False):
        assert access.ROLES[lower] < access.ROLES[higher]
    assert access.ROLES["viewer"] == {"runs:view", "agents:view", "datasets:view"}
    assert access.ROLES["runner"] - access.ROLES["viewer"] == {"agents:run", "datasets:run"}
    assert access.ROLES["admin"] == frozenset(access.PERMISSIONS)
    assert "settings:manage" not in access.ROLES["editor"]


def test_a_grant_adds_on_its_resource_only_and_running_implies_seeing():
    guest = _who("guest", {"agent:a": {"agents:run"}})
    assert guest.may("agents:run", "agent:a") and guest.sees("agent", "a")  # run implies view
    assert not guest.may("agents:run", "agent:b") and not guest.sees("agent", "b")
    assert not guest.may("agents:run")  # not across the organization
    with pytest.raises(NotFoundError) as seen:
        guest.require_on("agents:run", "agent", "b", "running")
    assert seen.value.field == "agent_id" and "permission" not in seen.value.details
    with pytest.raises(ForbiddenError) as refused:
        guest.require_on("agents:edit", "agent", "a", "editing")
    assert refused.value.details["permission"] == "agents:edit"
    assert "on agent a" in refused.value.message


def test_an_api_key_never_exceeds_its_scopes_nor_is_a_person():
    key = _who("admin", scopes={"runs:view", "agents:run"}, key_id="key_1")
    assert key.may("agents:run") and key.may("agents:view")  # run implies view
    assert not key.may("agents:edit") and not key.may("members:manage")
    assert not key.is_person
    with pytest.raises(ForbiddenError) as refused:
        key.require_person("saving a suite")
    assert refused.value.details["permission"] == "person" and "API key" in refused.value.message
    acting = _who("editor", actor="root")
    with pytest.raises(ForbiddenError, match="root acting as ana"):
        acting.require_person("saving a suite")
    _who("editor").require_person("saving a suite")  # a person as themselves


def test_a_person_s_own_things_refuse_a_key_with_every_scope_but_not_an_acting_admin():
    key = _who("admin", scopes=set(access.PERMISSIONS), key_id="key_1")
    with pytest.raises(ForbiddenError) as refused:
        key.require_no_key("reading notices")
    assert refused.value.details["permission"] == "person"
    assert refused.value.message.startswith("reading notices is a person's own")
    _who("viewer", actor="root").require_no_key("reading notices")  # acting as ana: ana's
    _who("guest").require_no_key("reading notices")
    Identity("acme", "pipeline").require_no_key("reading notices")  # the service itself


def test_the_service_may_do_everything_and_an_unresolved_token_nothing():
    assert Identity("acme", "pipeline").may("members:manage")
    nobody = Identity("acme", "x", permissions=frozenset(), member=False)
    assert not nobody.may("runs:view") and not nobody.sees("dataset", "d")


def test_grants_and_roles_and_keys_are_checked():
    assert access.check_grant("dataset", ["datasets:run"]) == {"datasets:run"}
    with pytest.raises(InvalidInputError, match="adds only") as bad:
        access.check_grant("agent", ["datasets:run"])
    assert bad.value.field == "permissions"
    with pytest.raises(InvalidInputError):
        access.check_grant("environment", ["agents:run"])
    with pytest.raises(InvalidInputError) as role:
        access.role_permissions("owner")
    assert role.value.field == "role"
    with pytest.raises(InvalidInputError, match="not a permission"):
        access.check_permissions(["runs:delete"], "scopes")
    bearer = access.format_api_key("org.with.dots", "key_ab", "s3cr-et_")
    assert access.parse_api_key(bearer) == ("org.with.dots", "key_ab", "s3cr-et_")
    assert access.parse_api_key("eyJhbGciOi.x.y") is None
    assert access.parse_api_key("assay_only.two") is None
