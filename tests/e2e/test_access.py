"""Members, roles, grants, API keys and who a run runs as, over HTTP (issue 14,
docs/reference/access.md)."""

from __future__ import annotations

import time

import jwt

from chalicelib import bootstrap
from chalicelib.api.common import issue_token
from tests.e2e.test_suites import CASES, agent_with_versions, environment, results, suite_view
from tests.support.e2e import Api, cases, sleepy_spec, wait_for


def _token(org: str, user: str, **claims) -> str:
    s = bootstrap.container().settings
    now = int(time.time())
    body = {"sub": user, "org": org, "iss": s.assay_jwt_issuer, "aud": s.assay_jwt_audience}
    return jwt.encode(
        {**body, "iat": now, "exp": now + 600, **claims}, s.assay_jwt_secret, algorithm="HS256"
    )


def test_the_first_person_is_the_admin_and_everyone_else_is_added(api, new_api):
    me = api.ok("GET", "/api/v1/me")
    assert (me["role"], me["person"], me["api_key_id"]) == ("admin", True, None)
    assert "members:manage" in me["permissions"]
    agent = api.agent(sleepy_spec(), publish=1)

    stranger = new_api(org_id=api.org_id, user_id="stranger@example.com", role=None)
    assert stranger.ok("GET", "/api/v1/me")["member"] is False
    status, body = stranger.call(
        "POST", "/api/v1/agents", json={"name": "x", "spec": sleepy_spec()}
    )
    assert status == 403 and body["error"]["permission"] == "agents:edit"
    status, body = stranger.call("GET", f"/api/v1/agents/{agent}")
    assert status == 404 and "permission" not in body["error"]
    assert stranger.ok("GET", "/api/v1/agents") == {"agents": []}

    added = api.ok(
        "POST", "/api/v1/members", json={"user_id": "stranger@example.com", "role": "viewer"}
    )
    assert (added["role"], added["added_by"]) == ("viewer", api.user_id)
    seen = stranger.ok("GET", f"/api/v1/agents/{agent}")
    assert seen["draft"]["spec"] is None and seen["draft"]["spec_hash"]  # editors' work
    assert api.ok("GET", f"/api/v1/agents/{agent}")["draft"]["spec"] is not None
    status, body = stranger.call("GET", f"/api/v1/agents/{agent}/draft")
    assert status == 403 and body["error"]["permission"] == "agents:edit"
    # the role changes at once, for the next request
    api.ok("PATCH", "/api/v1/members/stranger@example.com", json={"role": "editor"})
    assert stranger.ok("GET", f"/api/v1/agents/{agent}/draft")["spec"] is not None
    api.ok("DELETE", "/api/v1/members/stranger@example.com")
    assert stranger.call("GET", f"/api/v1/agents/{agent}")[0] == 404
    status, body = api.call(
        "POST", "/api/v1/members", json={"user_id": "x@example.com", "role": "owner"}
    )
    assert status == 400 and body["error"]["field"] == "role"


def test_the_last_admin_stays_and_a_token_claims_no_permissions(api, new_api):
    for change in (("PATCH", {"role": "viewer"}), ("DELETE", None)):
        status, body = api.call(change[0], f"/api/v1/members/{api.user_id}", json=change[1])
        assert status == 409 and "last admin" in body["error"]["message"], body
    # what a token says it may do is not read: membership decides
    viewer = new_api(org_id=api.org_id, user_id="viewer@example.com", role="viewer")
    boasting = Api(
        viewer.http.base_url,
        api.org_id,
        viewer.user_id,
        _token(api.org_id, viewer.user_id, permissions=["agents:edit", "members:manage"]),
    )
    status, body = boasting.call(
        "POST", "/api/v1/agents", json={"name": "x", "spec": sleepy_spec()}
    )
    assert status == 403 and body["error"]["permission"] == "agents:edit"
    modest = Api(
        viewer.http.base_url,
        api.org_id,
        api.user_id,
        _token(api.org_id, api.user_id, permissions=[]),
    )
    assert (
        modest.call("POST", "/api/v1/agents", json={"name": "x", "spec": sleepy_spec()})[0] == 201
    )


def test_a_grant_opens_one_agent_and_one_dataset_and_a_start_still_needs_runs_view(api, new_api):
    shown = api.agent(sleepy_spec(), publish=1)
    hidden = api.agent(sleepy_spec(), publish=1)
    ds = api.dataset(cases(2))
    other_ds = api.dataset(cases(2))
    guest = new_api(org_id=api.org_id, user_id="guest@example.com", role="guest")
    api.ok(
        "PUT",
        f"/api/v1/members/{guest.user_id}/grants/agent/{shown}",
        json={"permissions": ["agents:run"]},
    )
    api.ok(
        "PUT",
        f"/api/v1/members/{guest.user_id}/grants/dataset/{ds}",
        json={"permissions": ["datasets:run"]},
    )
    assert [a["agent_id"] for a in guest.ok("GET", "/api/v1/agents")["agents"]] == [shown]
    assert [d["dataset_id"] for d in guest.ok("GET", "/api/v1/datasets")["datasets"]] == [ds]
    assert guest.call("GET", f"/api/v1/agents/{hidden}")[0] == 404
    status, body = api.call(
        "PUT",
        f"/api/v1/members/{guest.user_id}/grants/agent/{shown}",
        json={"permissions": ["datasets:run"]},
    )
    assert status == 400 and body["error"]["field"] == "permissions"
    start = {"dataset_id": ds, "candidate": "version"}
    status, body = guest.call("POST", f"/api/v1/agents/{shown}/eval-runs", json=start)
    assert status == 403 and body["error"]["permission"] == "runs:view"  # whatever grants they hold
    api.ok("PATCH", f"/api/v1/members/{guest.user_id}", json={"role": "viewer"})
    run = guest.ok("POST", f"/api/v1/agents/{shown}/eval-runs", json=start)
    assert run["created_by"] == guest.user_id
    status, body = guest.call(
        "POST", f"/api/v1/agents/{hidden}/eval-runs", json={**start, "dataset_id": ds}
    )
    assert status == 403 and body["error"]["permission"] == "agents:run"  # a viewer sees it
    status, body = guest.call(
        "POST", f"/api/v1/agents/{shown}/eval-runs", json={**start, "candidate": "draft"}
    )
    assert status == 403 and body["error"]["permission"] == "agents:edit"
    status, body = guest.call(
        "POST", f"/api/v1/agents/{shown}/eval-runs", json={**start, "dataset_id": other_ds}
    )
    assert status == 403 and body["error"]["permission"] == "datasets:run"
    guest.wait(run["run_id"])
    # the viewer may cancel or delete only what they started
    admins_run = api.ok("POST", f"/api/v1/agents/{shown}/eval-runs", json=start)
    api.wait(admins_run["run_id"])
    status, body = guest.call("DELETE", f"/api/v1/eval-runs/{admins_run['run_id']}")
    assert status == 403 and body["error"]["permission"] == "agents:edit"
    guest.ok("DELETE", f"/api/v1/eval-runs/{run['run_id']}")
    # taking the grant away closes the agent again, runs included
    api.ok("DELETE", f"/api/v1/members/{guest.user_id}/grants/agent/{shown}")
    api.ok("PATCH", f"/api/v1/members/{guest.user_id}", json={"role": "guest"})
    assert guest.call("GET", f"/api/v1/agents/{shown}")[0] == 404


def test_an_api_key_acts_within_its_scopes_and_its_creator_s_role_until_revoked(api, new_api):
    editor = new_api(org_id=api.org_id, user_id="ci-owner@example.com", role="editor")
    status, body = editor.call("POST", "/api/v1/api-keys", json={"scopes": ["members:manage"]})
    assert status == 403 and body["error"]["permission"] == "members:manage"
    made = editor.ok(
        "POST",
        "/api/v1/api-keys",
        json={"name": "ci", "scopes": ["runs:view", "agents:view", "agents:edit"]},
    )
    assert made["key"].startswith(f"assay_{api.org_id}.") and made["created_by"] == editor.user_id
    listed = editor.ok("GET", "/api/v1/api-keys")["api_keys"]
    assert [k["key_id"] for k in listed] == [made["key_id"]] and "key" not in listed[0]
    key = Api(editor.http.base_url, api.org_id, editor.user_id, made["key"])
    me = key.ok("GET", "/api/v1/me")
    assert (me["api_key_id"], me["person"]) == (made["key_id"], False)
    assert me["permissions"] == ["runs:view", "agents:view", "agents:edit"]
    agent = key.ok("POST", "/api/v1/agents", json={"name": "k", "spec": sleepy_spec()})["agent_id"]
    status, body = key.call("POST", "/api/v1/datasets", json={"name": "x"})
    assert status == 403 and body["error"]["permission"] == "datasets:edit"  # not in its scopes
    status, body = key.call("POST", "/api/v1/api-keys", json={"scopes": ["runs:view"]})
    assert status == 403 and body["error"]["permission"] == "person"  # a key makes no keys
    # never more than its creator holds now
    api.ok("PATCH", f"/api/v1/members/{editor.user_id}", json={"role": "viewer"})
    status, body = key.call("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec()})
    assert status == 403 and body["error"]["permission"] == "agents:edit"
    # somebody else is told there is no such key; its creator revokes it, and it stops at once
    other = new_api(org_id=api.org_id, user_id="other@example.com", role="editor")
    assert other.call("DELETE", f"/api/v1/api-keys/{made['key_id']}")[0] == 404
    revoked = editor.ok("DELETE", f"/api/v1/api-keys/{made['key_id']}")
    assert revoked["revoked_by"] == editor.user_id
    status, body = key.call("GET", "/api/v1/me")
    assert status == 401 and "revoked" in body["error"]["message"]
    # a mistyped secret, or a key naming another organization, is refused the same way
    forged = made["key"][:-4] + "AAAA"
    assert Api(editor.http.base_url, api.org_id, "x", forged).call("GET", "/api/v1/me")[0] == 401
    assert made["key"] not in str(api.ok("GET", "/api/v1/api-keys"))


def test_a_key_cannot_read_or_change_what_is_its_creator_s_own(api, new_api, container):
    """A key scoped `runs:view agents:view` reads runs and agents, never its creator's notices or
    notice settings: those are the person's own, beyond every scope (issue 35)."""
    from chalicelib.services import notifications

    assert api.ok("PUT", "/api/v1/notifications/settings", json={"email": False})["email"] is False
    notice = notifications.notify(
        container, api.org_id, api.user_id, kind="test", title="t", body="b", links={}
    )
    made = api.ok("POST", "/api/v1/api-keys", json={"scopes": ["runs:view", "agents:view"]})
    key = Api(api.http.base_url, api.org_id, api.user_id, made["key"])
    assert key.ok("GET", "/api/v1/agents") == {"agents": []}  # within its scopes
    for method, path, body in (
        ("PUT", "/api/v1/notifications/settings", {"email": True}),
        ("POST", f"/api/v1/notifications/{notice.notification_id}/read", None),
        ("GET", "/api/v1/notifications", None),
    ):
        status, answer = key.call(method, path, json=body)
        assert status == 403, (path, answer)
        error = answer["error"]
        assert (error["permission"], error["field"]) == ("person", "Authorization"), error
        assert "not an API key" in error["message"], error
    # nothing changed: email stays off, the notice unread
    assert container.notifications.email_preference(api.org_id, api.user_id) is False
    [kept] = api.ok("GET", "/api/v1/notifications")["notifications"]
    assert kept["notification_id"] == notice.notification_id and kept["read"] is False
    api.ok("POST", f"/api/v1/notifications/{notice.notification_id}/read")  # the person may
    # an administrator acting as a member sees the member's notices, as the member would
    editor = new_api(org_id=api.org_id, user_id="ed@example.com", role="editor")
    secret = container.settings.assay_jwt_secret
    acting = Api(
        api.http.base_url,
        api.org_id,
        editor.user_id,
        issue_token(api.org_id, editor.user_id, secret=secret, actor=api.user_id),
    )
    assert acting.ok("GET", "/api/v1/notifications") == {"notifications": []}


def test_an_admin_acting_as_somebody_cannot_save_a_suite_and_only_an_admin_may_act(api, new_api):
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    ds = api.dataset(CASES)
    editor = new_api(org_id=api.org_id, user_id="ed@example.com", role="editor")
    acting = Api(
        editor.http.base_url,
        api.org_id,
        editor.user_id,
        issue_token(
            api.org_id,
            editor.user_id,
            secret=bootstrap.container().settings.assay_jwt_secret,
            actor=api.user_id,
        ),
    )
    me = acting.ok("GET", "/api/v1/me")
    assert (me["user_id"], me["actor"], me["person"], me["role"]) == (
        editor.user_id,
        api.user_id,
        False,
        "editor",
    )
    status, body = acting.call("POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": ds})
    assert status == 403 and body["error"]["permission"] == "person", body
    assert "acting as" in body["error"]["message"]
    editor.ok("POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": ds})
    impostor = Api(
        editor.http.base_url,
        api.org_id,
        api.user_id,
        _token(api.org_id, api.user_id, act={"sub": editor.user_id}),
    )
    status, body = impostor.call("GET", "/api/v1/me")
    assert status == 401 and "members:manage" in body["error"]["message"]


def test_a_run_stops_when_its_starter_can_no_longer_run_it(api, new_api):
    agent = api.agent(sleepy_spec(sleep_ms=300), publish=1)
    ds = api.dataset(cases(30))
    runner = new_api(org_id=api.org_id, user_id="runner@example.com", role="runner")
    run = runner.ok(
        "POST", f"/api/v1/agents/{agent}/eval-runs", json={"dataset_id": ds, "candidate": "version"}
    )
    runner.wait(run["run_id"], until=lambda p: p["recorded"] >= 1)
    api.ok("PATCH", f"/api/v1/members/{runner.user_id}", json={"role": "viewer"})
    progress = runner.wait(run["run_id"])
    ended = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert ended["status"] == "failed", ended["status"]
    assert ended["reason"] == f"stopped: {runner.user_id} can no longer run it (no datasets:run)"
    assert progress["recorded"] < 30  # the remaining cases never asked the agent


def test_a_suite_whose_owner_left_pauses_saying_why_until_saved_again(api, new_api):
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    ds = api.dataset(CASES)
    owner = new_api(org_id=api.org_id, user_id="owner@example.com", role="editor")
    sid = owner.ok(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={"dataset_id": ds, "triggers": {"on_publish": True}},
    )["suite_id"]
    api.ok("DELETE", f"/api/v1/members/{owner.user_id}")
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec()})
    api.ok("POST", f"/api/v1/agents/{agent}/versions")  # the publish triggers the suite
    view = wait_for(lambda: (v := suite_view(api, agent, sid))["paused"] and v)
    reason = f"its owner {owner.user_id} is no longer a member of the organization"
    assert view["paused_reason"] == reason
    assert [(r["result"], r["reasons"]) for r in results(api, agent, sid)] == [
        ("not_run", [reason])
    ]
    assert api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"] == []
    saved = api.ok("PATCH", f"/api/v1/agents/{agent}/suites/{sid}", json={"name": "mine"})
    assert (saved["owner"], saved["paused"], saved["paused_reason"]) == (api.user_id, False, None)


def test_a_member_whose_id_needs_percent_encoding_is_reached_by_path(api):
    from urllib.parse import quote

    user = "zoë smith+ci@example.com"
    api.ok("POST", "/api/v1/members", json={"user_id": user, "role": "viewer"})
    path = f"/api/v1/members/{quote(user, safe='')}"
    assert api.ok("GET", path)["user_id"] == user
    assert api.ok("PATCH", path, json={"role": "runner"})["role"] == "runner"
    api.ok("DELETE", path)
    assert api.call("GET", path)[0] == 404
