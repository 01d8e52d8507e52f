"""A member's user id is one that `/api/v1/members/{user_id}` can address (docs/reference/access.md,
"User ids"), over HTTP: adding a member, a token's `sub` and its `act.sub` refuse a user id with
`/`, `#` or `%`, or one that is `.` or `..` alone, so every member can be read, changed and
removed; a member stored before that was refused is still reached by its percent-encoded id."""

from __future__ import annotations

import time
import uuid
from typing import Any
from urllib.parse import quote

import jwt
import pytest

from tests.conftest import add_member
from tests.support.e2e import Api, sleepy_spec

UNADDRESSABLE = ["mallory/x", "mallory#x", "mallory%2Fx", "a%x", ".", ".."]
"""User ids no `{user_id}` path could name as themselves."""


def _path(user_id: str) -> str:
    """`/api/v1/members/{user_id}`, the id percent-encoded as one path segment (dots too: a client
    resolves a bare `.` or `..` as a step)."""
    return "/api/v1/members/" + quote(user_id, safe="").replace(".", "%2E")


def _token(stack: Any, org_id: str, sub: str, **over: Any) -> str:
    s = stack.settings
    now = int(time.time())
    claims = {
        "sub": sub,
        "org": org_id,
        "iss": s.assay_jwt_issuer,
        "aud": s.assay_jwt_audience,
        "iat": now,
        "exp": now + 600,
        **over,
    }
    return jwt.encode(claims, s.assay_jwt_secret, algorithm="HS256")


@pytest.mark.parametrize("user_id", UNADDRESSABLE)
def test_a_member_whose_id_no_path_could_name_is_not_added(api, user_id):
    status, body = api.call("POST", "/api/v1/members", json={"user_id": user_id, "role": "admin"})
    assert status == 400, body
    error = body["error"]
    assert error["field"] == "user_id"
    assert "a URL path could not name it" in error["message"]
    assert [m["user_id"] for m in api.ok("GET", "/api/v1/members")["members"]] == [api.user_id]


@pytest.mark.parametrize("user_id", UNADDRESSABLE)
def test_a_token_whose_sub_or_act_sub_no_path_could_name_is_refused(api, stack, user_id):
    add_member(stack, api.org_id, user_id, "admin")  # stored before the rule
    for token, claim in (
        (_token(stack, api.org_id, user_id), "sub"),
        (_token(stack, api.org_id, api.user_id, act={"sub": user_id}), "act"),
    ):
        status, body = Api(stack.api_url, api.org_id, user_id, token).call(
            "DELETE", _path(api.user_id)
        )
        assert status == 401, body
        assert body["error"]["claim"] == claim
        assert "a URL path could not name it" in body["error"]["message"]
    assert api.ok("GET", _path(api.user_id))["role"] == "admin"


@pytest.mark.parametrize("user_id", ["mallory/x", "mallory#x", ".", ".."])
def test_a_member_stored_before_the_rule_is_read_changed_and_removed(api, stack, user_id):
    add_member(stack, api.org_id, user_id, "admin")
    path = _path(user_id)
    assert api.ok("GET", path)["user_id"] == user_id
    assert api.ok("PATCH", path, json={"role": "viewer"})["role"] == "viewer"
    grant = f"{path}/grants/agent/{api.agent(sleepy_spec())}"
    assert api.ok("PUT", grant, json={"permissions": ["agents:view"]})["user_id"] == user_id
    api.ok("DELETE", grant)
    assert api.ok("DELETE", path) == {"user_id": user_id, "deleted": True}
    assert api.call("GET", path)[0] == 404
    assert [m["user_id"] for m in api.ok("GET", "/api/v1/members")["members"]] == [api.user_id]


def test_an_encoded_id_naming_nobody_is_a_404_and_other_ids_still_refuse_slashes(api):
    status, body = api.call("DELETE", _path(f"nobody/{uuid.uuid4().hex[:6]}"))
    assert status == 404 and body["error"]["field"] == "user_id", body
    status, body = api.call("GET", "/api/v1/agents/a%2Fb")
    assert status == 400 and body["error"]["field"] == "agent_id", body
