"""A hostile tenant against access control (issue 14, docs/reference/access.md): crafted bearers and
claims, ids that try to escape their key, the last admin demoted twice at once, listings and reads
of runs over what the reader may not see, the draft's spec through every read, baselines that would
run the draft, and a key's run after its revoke.

Every answer here is checked by `_call`: never a 500, and a 404 never says what permission would
have shown the thing.
"""

from __future__ import annotations

import json
import threading
import time
from typing import Any
from urllib.parse import quote

import jwt
import pytest

from assay.client import AssayClient
from chalicelib import bootstrap
from chalicelib.api.common import issue_token
from tests.e2e.test_suites import environment
from tests.support.e2e import Api, cases, sleepy_spec

MARKER = "DRAFT-SECRET-7f3a"
"""Only the draft's spec holds it: a read showing it leaked the editors' work in progress."""


def _call(api: Api, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    status, body = api.call(method, path, **kw)
    assert status != 500 and status < 600, f"{method} {path} -> {status}: {body}"
    if status == 404 and isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        assert "permission" not in error and "permission" not in error["message"], body
    return status, body


def _as(api: Api, token: str, user: str | None = None) -> Api:
    return Api(api.http.base_url, api.org_id, user or api.user_id, token)


def _jwt(org: str, sub: Any, **claims: Any) -> str:
    s = bootstrap.container().settings
    now = int(time.time())
    body = {"sub": sub, "org": org, "iss": s.assay_jwt_issuer, "aud": s.assay_jwt_audience}
    return jwt.encode(
        {**body, "iat": now, "exp": now + 600, **claims}, s.assay_jwt_secret, algorithm="HS256"
    )


def _key(api: Api, *scopes: str) -> tuple[str, Api]:
    made = api.ok("POST", "/api/v1/api-keys", json={"name": "k", "scopes": list(scopes)})
    return made["key_id"], _as(api, made["key"])


# --- bearers -----------------------------------------------------------------------------------


def test_crafted_api_keys_and_mixed_bearers_are_refused_401(api, new_api):
    other = new_api()
    key_id, _ = _key(other, "runs:view")
    bearers = [
        f"assay_{api.org_id}.{key_id}.whatever",  # org B's key id under org A
        f"assay_{other.org_id}.{key_id}.",  # no secret
        f"assay_{other.org_id}#x.{key_id}.s",
        f"assay_../{other.org_id}.{key_id}.s",
        f"assay_{other.org_id}.{'k' * 5000}.s",
        f"assay_{other.org_id}.{key_id}.{'s' * 5000}",
        "assay_örg.kéy.sécret",
        f"assay_{other.org_id}.key#1.s",
        f"assay_{other.org_id}.{key_id}/../x.s",
        "assay_",
        "assay_...",
        "assay_a.b.c\u2028",
        "x" * 7000,
    ]
    for bearer in bearers:
        r = api.http.get("/api/v1/me", headers={"Authorization": f"Bearer {bearer}".encode()})
        assert r.status_code == 401, (bearer[:60], r.text)
        assert r.json()["error"]["field"] == "Authorization"
    # a token of org A and a key of org B in one header: neither is read as the other
    token = issue_token(
        api.org_id, api.user_id, secret=bootstrap.container().settings.assay_jwt_secret
    )
    _, key = _key(other, "runs:view")
    key_bearer = key.http.headers["Authorization"].removeprefix("Bearer ")
    for header in (f"Bearer {token} {key_bearer}", f"Bearer {key_bearer}, Bearer {token}"):
        r = api.http.get("/api/v1/me", headers={"Authorization": header})
        assert r.status_code == 401, (header[:40], r.text)
    # a key names its own organization, whatever a path or body says
    agent = api.agent(sleepy_spec())
    assert _call(key, "GET", f"/api/v1/agents/{agent}")[0] == 404
    assert key.ok("GET", "/api/v1/me")["org_id"] == other.org_id


def test_a_removed_member_s_keys_are_revoked_and_stay_so_when_they_come_back(api, new_api):
    api.ok("GET", "/api/v1/me")  # the first sign-in: the admin
    editor = new_api(org_id=api.org_id, user_id="keymaker@example.com", role="editor")
    key_id, key = _key(editor, "runs:view", "agents:view", "agents:edit")
    agent = api.agent(sleepy_spec())
    api.ok("DELETE", f"/api/v1/members/{editor.user_id}")
    for method, path in (("GET", "/api/v1/me"), ("GET", f"/api/v1/agents/{agent}")):
        status, body = _call(key, method, path)
        assert status == 401 and "revoked" in body["error"]["message"], body
    # Re-added, they do not get the key back: leaving revoked it
    api.ok("POST", "/api/v1/members", json={"user_id": editor.user_id, "role": "editor"})
    status, body = _call(key, "GET", "/api/v1/me")
    assert status == 401 and "revoked" in body["error"]["message"]
    [listed] = [k for k in api.ok("GET", "/api/v1/api-keys")["api_keys"] if k["key_id"] == key_id]
    assert listed["revoked_by"] == api.user_id


def test_act_claims_only_an_admin_acts_only_as_a_member_and_never_through_a_key(api, new_api):
    api.ok("GET", "/api/v1/me")  # the first sign-in: the admin
    viewer = new_api(org_id=api.org_id, user_id="v@example.com", role="viewer")
    editor = new_api(org_id=api.org_id, user_id="e@example.com", role="editor")
    refused = [
        _jwt(api.org_id, editor.user_id, act={"sub": viewer.user_id}),  # not an admin
        _jwt(api.org_id, editor.user_id, act={"sub": "nobody@example.com"}),
        _jwt(api.org_id, editor.user_id, act="tester@example.com"),  # not an object
        _jwt(api.org_id, editor.user_id, act={"sub": 7}),
        _jwt(api.org_id, editor.user_id, act={"sub": "a\x00b"}),
        _jwt(api.org_id, editor.user_id, act={}),
        # an admin elsewhere acts in no other organization, a fresh one included
        _jwt(new_api().org_id, "x@example.com", act={"sub": api.user_id}),
    ]
    for token in refused:
        status, body = _call(_as(api, token), "GET", "/api/v1/me")
        assert status == 401, (jwt.decode(token, options={"verify_signature": False}), body)
    # acting as a person of no role takes no bootstrap and gives nothing
    ghost = _as(api, _jwt(api.org_id, "ghost@example.com", act={"sub": api.user_id}))
    me = ghost.ok("GET", "/api/v1/me")
    assert (me["member"], me["permissions"], me["person"]) == (False, [], False)
    # nested act: only the outermost actor counts, and it must manage members
    nested = _as(
        api,
        _jwt(api.org_id, editor.user_id, act={"sub": viewer.user_id, "act": {"sub": api.user_id}}),
    )
    assert _call(nested, "GET", "/api/v1/me")[0] == 401
    acting = _as(api, _jwt(api.org_id, editor.user_id, act={"sub": api.user_id}), editor.user_id)
    me = acting.ok("GET", "/api/v1/me")
    assert (me["role"], me["actor"], me["person"]) == ("editor", api.user_id, False)
    assert "members:manage" not in me["permissions"]  # the editor's rights, not the admin's
    status, body = _call(acting, "POST", "/api/v1/api-keys", json={"scopes": ["runs:view"]})
    assert status == 403 and body["error"]["permission"] == "person"
    # a permissions claim beside act changes nothing
    boasting = _as(
        api, _jwt(api.org_id, viewer.user_id, permissions=["members:manage"], role="admin")
    )
    status, body = _call(boasting, "GET", "/api/v1/members")
    assert status == 403 and body["error"]["permission"] == "members:manage"


def test_subs_out_of_shape_are_refused_and_none_takes_the_bootstrap(new_api):
    fresh = new_api()
    fresh.ok("GET", "/api/v1/me")  # its first sign-in: the admin
    for sub in ("a\x00b", "a\nb", "x" * 201, "", 7, None, ["a"]):
        status, body = _call(_as(fresh, _jwt(fresh.org_id, sub)), "GET", "/api/v1/me")
        assert status == 401, (repr(sub)[:30], body)
    ok = _as(fresh, _jwt(fresh.org_id, "x" * 200))
    assert ok.ok("GET", "/api/v1/me")["member"] is False  # the bootstrap happened once
    for org in ("a#b", "a/b", "../x", "x" * 101, ".x", "a..b", "ö"):
        status, _ = _call(_as(fresh, _jwt(org, "p@example.com")), "GET", "/api/v1/me")
        assert status == 401, org


def test_two_first_sign_ins_at_once_make_one_admin(new_api):
    fresh = new_api(token=None)  # an organization nobody signed in to yet
    people = [f"p{i}@example.com" for i in range(4)]
    barrier = threading.Barrier(len(people), timeout=60)
    seen: dict[str, Any] = {}

    def sign_in(user: str) -> None:
        client = _as(fresh, _jwt(fresh.org_id, user), user)
        barrier.wait()
        seen[user] = client.ok("GET", "/api/v1/me")

    threads = [threading.Thread(target=sign_in, args=(u,)) for u in people]
    for t in threads:
        t.start()
    for t in threads:
        t.join(120)
    assert sorted(seen) == people
    assert sorted(m["role"] or "-" for m in seen.values()) == ["-", "-", "-", "admin"]
    admin = next(u for u, m in seen.items() if m["role"] == "admin")
    members = _as(fresh, _jwt(fresh.org_id, admin)).ok("GET", "/api/v1/members")["members"]
    assert [m["user_id"] for m in members] == [admin]


# --- members by path ---------------------------------------------------------------------------


@pytest.mark.parametrize("user_id", ["ana@example.com", "a+b@example.com", "ü@x", "a b", "first"])
def test_every_member_can_be_read_changed_and_removed_by_the_client(api, user_id):
    client = AssayClient(
        str(api.http.base_url), api.http.headers["Authorization"].removeprefix("Bearer ")
    )
    client.add_member(user_id=user_id, role="viewer")
    assert client.get_member(user_id)["user_id"] == user_id
    assert client.change_member(user_id, role="editor")["role"] == "editor"
    client.remove_member(user_id)
    status, _ = _call(api, "GET", f"/api/v1/members/{quote(user_id, safe='')}")
    assert status == 404


def test_member_paths_that_try_to_escape_their_key(api, new_api):
    api.ok("GET", "/api/v1/me")  # the first sign-in: the admin
    victim = new_api(org_id=api.org_id, user_id="victim@example.com", role="editor")
    for path in ("victim%40example.com%23x", "u%23victim%40example.com", "%23", "a%2Fb", "%2523"):
        for method, body in (("GET", None), ("PATCH", {"role": "guest"}), ("DELETE", None)):
            status, answer = _call(api, method, f"/api/v1/members/{path}", json=body)
            assert status in (400, 404), (method, path, answer)
    assert api.ok("GET", f"/api/v1/members/{victim.user_id}")["role"] == "editor"
    status, _ = _call(api, "GET", "/api/v1/members/first")  # the bootstrap's marker is no member
    assert status == 404
    status, _ = _call(api, "GET", f"/api/v1/members/{'x' * 201}")
    assert status == 400


def test_grants_on_what_is_not_there_or_not_theirs(api, new_api):
    api.ok("GET", "/api/v1/me")  # the first sign-in: the admin
    foreign_agent = new_api().agent(sleepy_spec())
    agent = api.agent(sleepy_spec())
    guest = new_api(org_id=api.org_id, user_id="g@example.com", role="guest")
    base = f"/api/v1/members/{guest.user_id}/grants"
    cases_ = [
        (f"{base}/agent/{foreign_agent}", ["agents:view"], 404),
        (f"{base}/agent/nope", ["agents:view"], 404),
        (f"{base}/agent/{agent}", ["members:manage"], 400),
        (f"{base}/agent/{agent}", ["runs:view"], 400),  # runs:view is a role's, never a grant's
        (f"{base}/agent/{agent}", ["datasets:run"], 400),
        (f"{base}/agent/{agent}", [], 400),
        (f"{base}/secret/{agent}", ["agents:view"], 400),
        (f"{base}/agent/a%23b", ["agents:view"], 400),
        (f"/api/v1/members/nobody%40example.com/grants/agent/{agent}", ["agents:view"], 404),
    ]
    for path, permissions, expected in cases_:
        status, body = _call(api, "PUT", path, json={"permissions": permissions})
        assert status == expected, (path, permissions, body)
    assert api.ok("GET", f"/api/v1/members/{guest.user_id}")["grants"] == []
    # a guest holding a grant grants nothing
    api.ok("PUT", f"{base}/agent/{agent}", json={"permissions": ["agents:edit"]})
    status, body = _call(
        guest, "PUT", f"{base}/agent/{agent}", json={"permissions": ["agents:edit"]}
    )
    assert status == 403 and body["error"]["permission"] == "members:manage"


# --- the last admin ----------------------------------------------------------------------------


class _ListedTogether:
    """The members store, its first `n` `list` calls held until all `n` were made: every demotion
    reads the admins before any of them writes."""

    def __init__(self, inner: Any, n: int) -> None:
        self.inner, self.barrier, self.left = inner, threading.Barrier(n, timeout=60), n
        self.lock = threading.Lock()

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def list(self, org_id: str) -> Any:
        listed = self.inner.list(org_id)
        with self.lock:
            hold, self.left = self.left > 0, self.left - 1
        if hold:
            self.barrier.wait()
        return listed


@pytest.mark.parametrize("how", ["demote", "remove", "mixed"])
def test_two_admins_taking_each_other_away_at_once_leave_one(api, new_api, container, how):
    api.ok("GET", "/api/v1/me")  # the first sign-in: the admin
    other = new_api(org_id=api.org_id, user_id="second-admin@example.com", role="admin")
    original = container.members
    bootstrap.override(members=_ListedTogether(original, 2))
    answers: dict[str, tuple[int, Any]] = {}

    def take(by: Api, target: str, remove: bool) -> None:
        path = f"/api/v1/members/{target}"
        answers[target] = (
            _call(by, "DELETE", path)
            if remove
            else _call(by, "PATCH", path, json={"role": "viewer"})
        )

    jobs = [
        (api, other.user_id, how in ("remove", "mixed")),
        (other, api.user_id, how == "remove"),
    ]
    threads = [threading.Thread(target=take, args=job) for job in jobs]
    try:
        for t in threads:
            t.start()
        for t in threads:
            t.join(120)
    finally:
        bootstrap.override(members=original)
    statuses = sorted(status for status, _ in answers.values())
    assert statuses == [200, 409], answers
    admins = [m for m in original.list(api.org_id) if m.role == "admin"]
    assert len(admins) == 1, admins
    refused = next(body for status, body in answers.values() if status == 409)
    assert "last admin" in refused["error"]["message"]


# --- what a reader may not see -----------------------------------------------------------------


def _world(api: Api) -> dict[str, Any]:
    """An agent with a published version and a draft holding `MARKER`, two datasets, a completed run
    of the version and one of the draft on the first, and an evaluation over the second."""
    agent = api.agent(sleepy_spec(), publish=1)
    api.ok(
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        json={"spec": sleepy_spec(answers={"no-such-case": MARKER})},
    )
    ds, hidden = api.dataset(cases(3)), api.dataset(cases(3))
    version_run = api.start(agent, ds, candidate="version")["run_id"]
    draft_run = api.start(agent, ds)["run_id"]
    hidden_run = api.start(agent, hidden, candidate="version")["run_id"]
    for run in (version_run, draft_run, hidden_run):
        api.wait(run)
    evaluation = api.ok(
        "POST",
        "/api/evaluations",
        json={"name": "e", "agent_id": agent, "dataset_id": hidden, "version": "latest"},
    )["evaluation_id"]
    return {
        "agent": agent,
        "ds": ds,
        "hidden": hidden,
        "version_run": version_run,
        "draft_run": draft_run,
        "hidden_run": hidden_run,
        "evaluation": evaluation,
    }


def _run_reads(run_id: str) -> list[tuple[str, str, Any]]:
    return [
        ("GET", f"/api/v1/eval-runs/{run_id}", None),
        ("GET", f"/api/v1/eval-runs/{run_id}/cases", None),
        ("GET", f"/api/v1/eval-runs/{run_id}/comparison", None),
        ("GET", f"/api/v1/eval-runs/{run_id}/progress", None),
        ("GET", f"/api/v1/eval-runs/{run_id}/events?wait=0", None),
        ("GET", f"/api/v1/eval-runs/{run_id}/answer?attempt_key=candidate%23c000%231", None),
        ("GET", f"/api/v1/eval-runs/{run_id}/arms/candidate/spec", None),
        ("GET", f"/api/v1/eval-runs/{run_id}/spec-changes", None),
        ("GET", f"/api/evaluations/progress/{run_id}", None),
        ("GET", f"/api/evaluations/stream/{run_id}?wait=0", None),
        ("POST", f"/api/v1/eval-runs/{run_id}/grade-again", None),
        ("POST", f"/api/v1/eval-runs/{run_id}/cancel", None),
        ("DELETE", f"/api/v1/eval-runs/{run_id}", None),
    ]


def test_a_reader_who_cannot_open_the_dataset_finds_its_runs_nowhere(api):
    w = _world(api)
    agent, hidden = w["agent"], w["hidden"]
    # an admin's key that sees the agent and runs, not the datasets
    _, key = _key(api, "runs:view", "agents:view", "agents:run", "agents:edit")
    for method, path, body in _run_reads(w["hidden_run"]):
        status, answer = _call(key, method, path, json=body)
        assert status == 404, (method, path, answer)
    for path in (
        "/api/v1/eval-runs",
        f"/api/v1/agents/{agent}/eval-runs",
        f"/api/v1/agents/{agent}/eval-runs?draft=current",
    ):
        assert key.ok("GET", path)["runs"] == [], path
    assert _call(key, "GET", f"/api/v1/datasets/{hidden}/eval-runs")[0] == 404
    assert key.ok("GET", "/api/evaluations")["evaluations"] == []
    implied = f"implied~{agent}~{hidden}"
    for path in (
        f"/api/evaluations/{w['evaluation']}",
        f"/api/evaluations/{w['evaluation']}/runs",
        f"/api/evaluations/{w['evaluation']}/runs/{w['hidden_run']}",
        f"/api/evaluations/{quote(implied, safe='')}",
    ):
        status, answer = _call(key, "GET", path)
        assert status in (400, 404), (path, answer)
    # the verdict of the agent counts none of the runs the key may not read, nor names them
    (summary,) = key.ok(
        "POST", "/api/v1/agent-summaries", json={"agents": [{"agentId": agent, "version": 1}]}
    )["summaries"]
    assert (summary["total"], summary["evaluations"]) == (0, 0), summary
    assert w["hidden_run"] not in json.dumps(summary)
    # an evaluation over the dataset, named by a start, tells nothing of itself
    for route in ("eval-runs/estimate", "eval-runs"):
        status, answer = _call(
            key,
            "POST",
            f"/api/v1/agents/{api.agent(sleepy_spec(), publish=1)}/{route}",
            json={"dataset_id": hidden, "evaluation_id": w["evaluation"]},
        )
        assert status == 404 and hidden not in json.dumps(answer), answer
        assert agent not in json.dumps(answer), answer
    # a baseline named by id: the start's own checks refuse the dataset first (a baseline is of
    # the same agent and dataset, which the starter may run, so may see)
    status, answer = _call(
        key,
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": hidden, "candidate": "version", "baseline_run_id": w["hidden_run"]},
    )
    assert status == 404, answer
    assert api.ok("GET", f"/api/v1/eval-runs/{w['hidden_run']}")["status"] == "completed"


def test_no_read_shows_the_draft_to_a_viewer(api, new_api):
    w = _world(api)
    agent, run = w["agent"], w["draft_run"]
    viewer = new_api(org_id=api.org_id, user_id="viewer@example.com", role="viewer")
    reads = [
        f"/api/v1/agents/{agent}",
        "/api/v1/agents",
        f"/api/v1/agents/{agent}/versions",
        f"/api/v1/agents/{agent}/eval-runs",
        f"/api/v1/agents/{agent}/eval-runs?draft=current",
        "/api/v1/eval-runs",
        f"/api/v1/datasets/{w['ds']}/eval-runs",
        f"/api/v1/eval-runs/{run}",
        f"/api/v1/eval-runs/{run}/cases",
        f"/api/v1/eval-runs/{run}/comparison",
        f"/api/v1/eval-runs/{run}/events?wait=0",
        f"/api/v1/eval-runs/{run}/answer?attempt_key=candidate%23c000%231",
        f"/api/evaluations/implied~{agent}~{w['ds']}/runs",
        f"/api/evaluations/implied~{agent}~{w['ds']}/runs/{run}",
        "/api/v1/notifications",
        "/api/v1/me",
    ]
    for path in reads:
        status, body = _call(viewer, "GET", path)
        # a draft run has no baseline to compare with, and its short answers no stored one
        no_such = status == 404 and ("/comparison" in path or "/answer" in path)
        assert status == 200 or no_such, (path, body)
        assert MARKER not in json.dumps(body), path
    assert MARKER in json.dumps(api.ok("GET", f"/api/v1/eval-runs/{run}/arms/candidate/spec"))
    status, body = _call(viewer, "GET", f"/api/v1/eval-runs/{run}/arms/candidate/spec")
    assert status == 403 and body["error"]["permission"] == "agents:edit"
    status, body = _call(viewer, "GET", f"/api/v1/agents/{agent}/draft")
    assert status == 403 and body["error"]["permission"] == "agents:edit"


def test_a_runner_cannot_run_the_draft_by_naming_its_run_as_the_baseline(api, new_api):
    w = _world(api)
    runner = new_api(org_id=api.org_id, user_id="runner@example.com", role="runner")
    start = {"dataset_id": w["ds"], "candidate": "version", "baseline_run_id": w["draft_run"]}
    for route in ("eval-runs/estimate", "eval-runs"):
        status, body = _call(runner, "POST", f"/api/v1/agents/{w['agent']}/{route}", json=start)
        assert status == 403 and body["error"]["permission"] == "agents:edit", body
    # a run of a version is the runner's to compare with
    runner.ok(
        "POST",
        f"/api/v1/agents/{w['agent']}/eval-runs/estimate",
        json={**start, "baseline_run_id": w["version_run"]},
    )


def test_a_guest_with_one_agent_lists_nothing_else(api, new_api):
    w = _world(api)
    other_agent = api.agent(sleepy_spec(), publish=1)
    guest = new_api(org_id=api.org_id, user_id="guest@example.com", role="guest")
    api.ok(
        "PUT",
        f"/api/v1/members/{guest.user_id}/grants/agent/{w['agent']}",
        json={"permissions": ["agents:edit"]},
    )
    assert [a["agent_id"] for a in guest.ok("GET", "/api/v1/agents")["agents"]] == [w["agent"]]
    assert guest.ok("GET", "/api/v1/datasets") == {"datasets": []}
    assert guest.ok("GET", "/api/v1/notifications") == {"notifications": []}
    for path in (
        "/api/v1/eval-runs",
        f"/api/v1/agents/{w['agent']}/eval-runs",
        f"/api/v1/agents/{w['agent']}/suites",
        "/api/evaluations",
        f"/api/v1/eval-runs/{w['version_run']}",
    ):
        status, body = _call(guest, "GET", path)
        assert status == 403 and body["error"]["permission"] == "runs:view", (path, body)
    for path in (f"/api/v1/agents/{other_agent}", f"/api/v1/datasets/{w['ds']}"):
        assert _call(guest, "GET", path)[0] == 404, path
    status, _ = _call(
        guest,
        "POST",
        "/api/v1/agent-summaries",
        json={"agents": [{"agentId": w["agent"], "version": 1}]},
    )
    assert status == 403


# --- suites and runs that outlive a right ------------------------------------------------------


def test_a_suite_cannot_be_moved_onto_a_dataset_its_saver_may_not_run(api, new_api):
    agent = api.agent(sleepy_spec(), publish=1)
    environment(api, agent, serving=1)
    mine, theirs = api.dataset(cases(2)), api.dataset(cases(2))
    saver = new_api(org_id=api.org_id, user_id="saver@example.com", role="viewer")
    base = f"/api/v1/members/{saver.user_id}/grants"
    api.ok("PUT", f"{base}/agent/{agent}", json={"permissions": ["agents:edit", "agents:run"]})
    api.ok("PUT", f"{base}/dataset/{mine}", json={"permissions": ["datasets:run"]})
    sid = saver.ok("POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": mine})["suite_id"]
    path = f"/api/v1/agents/{agent}/suites/{sid}"
    status, body = _call(saver, "PATCH", path, json={"dataset_id": theirs})
    assert status == 403 and body["error"]["permission"] == "datasets:run", body
    status, body = _call(saver, "PATCH", path, json={"dataset_id": "no-such-dataset"})
    assert status in (403, 404), body  # a viewer sees every dataset id, none of them runnable
    status, body = _call(
        saver, "POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": theirs}
    )
    assert status == 403 and body["error"]["permission"] == "datasets:run", body
    assert saver.ok("GET", path)["dataset_id"] == mine
    # a key of the saver, every scope its creator holds, saves nothing
    _, key = _key(saver, "runs:view", "agents:edit", "agents:run", "datasets:run")
    status, body = _call(key, "PATCH", path, json={"name": "by key"})
    assert status == 403 and body["error"]["permission"] == "person", body


def test_a_run_started_by_a_key_stops_at_its_next_case_once_the_key_is_revoked(api, new_api):
    agent = api.agent(sleepy_spec(sleep_ms=300), publish=1)
    ds = api.dataset(cases(30))
    key_id, key = _key(
        api, "runs:view", "agents:view", "agents:run", "datasets:view", "datasets:run"
    )
    run = key.ok(
        "POST", f"/api/v1/agents/{agent}/eval-runs", json={"dataset_id": ds, "candidate": "version"}
    )
    api.wait(run["run_id"], until=lambda p: p["recorded"] >= 1)
    api.ok("DELETE", f"/api/v1/api-keys/{key_id}")
    assert _call(key, "GET", f"/api/v1/eval-runs/{run['run_id']}")[0] == 401
    progress = api.wait(run["run_id"])
    ended = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert ended["status"] == "failed", ended["status"]
    assert ended["reason"].startswith(f"stopped: {api.user_id}'s API key {key_id} "), ended[
        "reason"
    ]
    assert progress["recorded"] < 30  # the remaining cases never asked the agent


def test_an_evaluation_is_moved_only_by_whoever_may_run_it_on_both_agents(api, new_api):
    first = api.agent(sleepy_spec(), publish=1)
    second = api.agent(sleepy_spec(), publish=1)
    ds = api.dataset(cases(1))
    evaluation = api.ok("POST", "/api/evaluations", json={"agent_id": first, "dataset_id": ds})
    mover = new_api(org_id=api.org_id, user_id="mover@example.com", role="viewer")
    for kind, rid, perm in (("agent", second, "agents:run"), ("dataset", ds, "datasets:run")):
        api.ok(
            "PUT",
            f"/api/v1/members/{mover.user_id}/grants/{kind}/{rid}",
            json={"permissions": [perm]},
        )
    path = f"/api/evaluations/{evaluation['evaluation_id']}"
    status, body = _call(mover, "PATCH", path, json={"agent_id": second})
    assert status == 403 and body["error"]["permission"] == "agents:run", body
    assert api.ok("GET", path)["agent_id"] == first
