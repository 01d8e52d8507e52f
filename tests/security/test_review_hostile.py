"""A hostile tenant and under-privileged members against the review queue
(`/api/v1/datasets/{id}/review...`, `/api/v1/eval-runs/{id}/review`).

Another organization holding the very same dataset id names our item ids, guesses others and
replays our cursors; viewers, runners, narrow API keys, a guest with a grant on one dataset, and a
person who cannot see an item's agent try to read, decide, undo and send; path ids and bodies out
of shape; secrets and markup in notes; what the audit records and how the tables key it. The races
and deletions are `tests/security/test_review_hostile_races.py`.

Through the HTTP API on the embedded stack (127.0.0.1 only). Every answer goes through `_call`:
never a 500, and a 404 never names a permission.
"""

from __future__ import annotations

import json
import time
import uuid
from typing import Any
from urllib.parse import quote

import boto3
import jwt

from chalicelib import bootstrap
from chalicelib.adapters import tables
from chalicelib.adapters.tables import ReviewAuditRow, ReviewItemRow
from tests.support.e2e import Api, cases, sleepy_spec

BROKEN = {"c002": "7", "c005": "7", "c007": "7"}
"""The cases v2 of the agent gets wrong (v1 answers 42 everywhere): three confirmed regressions."""
OPENAI_KEY = "sk-proj-" + "Zx9" * 12
AWS_KEY = "AKIAIOSFODNN7EXAMPLE"
MARKUP = '<script>alert("x")</script><img src=x onerror=alert(1)>'


def _call(api: Api, method: str, path: str, **kw: Any) -> tuple[int, Any]:
    status, body = api.call(method, path, **kw)
    assert status < 500, f"{method} {path} -> {status}: {body}"
    if status == 404 and isinstance(body, dict) and isinstance(body.get("error"), dict):
        error = body["error"]
        assert "permission" not in error and "permission" not in error["message"], body
    return status, body


def _jwt(org: str, sub: str, **claims: Any) -> str:
    s = bootstrap.container().settings
    now = int(time.time())
    body = {"sub": sub, "org": org, "iss": s.assay_jwt_issuer, "aud": s.assay_jwt_audience}
    return jwt.encode(
        {**body, "iat": now, "exp": now + 600, **claims}, s.assay_jwt_secret, algorithm="HS256"
    )


def _key(api: Api, *scopes: str) -> Api:
    made = api.ok("POST", "/api/v1/api-keys", json={"name": "k", "scopes": list(scopes)})
    return Api(str(api.http.base_url), api.org_id, api.user_id, made["key"])


def _grant(api: Api, user: str, kind: str, rid: str, *permissions: str) -> None:
    api.ok(
        "PUT",
        f"/api/v1/members/{user}/grants/{kind}/{rid}",
        json={"permissions": list(permissions)},
    )


def regressed(
    api: Api, *, dataset_id: str | None = None, answers: dict[str, str] | None = None
) -> dict[str, Any]:
    """A dataset of 10 cases (id `dataset_id` when given), an agent whose v2 answers `answers`
    (default `BROKEN`) where v1 answered 42, and the completed run of v2 against v1, whose
    confirmed regressions wait in the queue: `{ds, agent, run_id, items: {case_id: item}}`."""
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "t", "dataset_id": dataset_id})
    ds_id = ds["dataset_id"]
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds_id}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": cases(10)},
    )
    agent = api.agent(sleepy_spec(), publish=1)
    api.ok(
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        json={"spec": sleepy_spec(answers=answers or BROKEN)},
    )
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    run = api.start(agent, ds_id, candidate="version", version=2, paired_baseline=True)
    assert api.wait(run["run_id"])["status"] == "completed"
    return {"ds": ds_id, "agent": agent, "run_id": run["run_id"], "items": waiting(api, ds_id)}


def waiting(api: Api, ds: str) -> dict[str, dict[str, Any]]:
    body = api.ok("GET", f"/api/v1/datasets/{ds}/review?state=waiting")
    return {i["case_id"]: i for i in body["items"]}


def item_paths(ds: str, item_id: str) -> list[tuple[str, str, Any]]:
    base = f"/api/v1/datasets/{ds}/review/{item_id}"
    return [
        ("GET", base, None),
        ("POST", f"{base}/decision", {"verdict": "pass", "note": "taken over"}),
        ("POST", f"{base}/undo", None),
        ("POST", f"{base}/criterion", {"tags": ["t"]}),
    ]


def passed(api: Api, run_id: str) -> int:
    return int(api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"]["passed"])


# --- another organization ----------------------------------------------------------------------


def test_another_organization_with_the_same_dataset_id_reaches_none_of_our_items(new_api):
    shared = f"shared-{uuid.uuid4().hex[:6]}"
    a, b = new_api(), new_api()
    w = regressed(a, dataset_id=shared)
    mine = regressed(b, dataset_id=shared, answers={"c001": "7"})
    item = w["items"]["c005"]
    decided = w["items"]["c002"]
    a.ok(
        "POST",
        f"/api/v1/datasets/{shared}/review/{decided['item_id']}/decision",
        json={"verdict": "pass", "note": "A-ONLY note"},
    )
    before = {
        "list": a.ok("GET", f"/api/v1/datasets/{shared}/review"),
        "item": a.ok("GET", f"/api/v1/datasets/{shared}/review/{item['item_id']}"),
        "decided": a.ok("GET", f"/api/v1/datasets/{shared}/review/{decided['item_id']}"),
        "run": a.ok("GET", f"/api/v1/eval-runs/{w['run_id']}")["outcome"],
    }
    for item_id in (item["item_id"], decided["item_id"]):
        for method, path, body in item_paths(shared, item_id):
            status, resp = _call(b, method, path, **({"json": body} if body is not None else {}))
            assert status == 404, (method, path, resp)
            assert resp["error"]["field"] == "item_id", resp
            assert "A-ONLY" not in json.dumps(resp) and a.org_id not in json.dumps(resp)
    for side in ("candidate", "baseline"):
        status, _ = _call(b, "POST", f"/api/v1/eval-runs/{w['run_id']}/review", json={"side": side})
        assert status == 404
    # B's own queue under the same dataset id: B's item only, whatever cursor B replays.
    own = b.ok("GET", f"/api/v1/datasets/{shared}/review")
    assert [i["case_id"] for i in own["items"]] == ["c001"] and own["waiting"] == 1
    assert own["items"][0]["run_id"] == mine["run_id"]
    first = a.ok("GET", f"/api/v1/datasets/{shared}/review?limit=1")
    for cursor in (first["next_cursor"], item["item_id"], decided["item_id"]):
        replayed = b.ok("GET", f"/api/v1/datasets/{shared}/review?cursor={cursor}")
        assert all(i["run_id"] == mine["run_id"] for i in replayed["items"]), replayed
        assert "A-ONLY" not in json.dumps(replayed)
    # Nothing of A's moved.
    assert a.ok("GET", f"/api/v1/datasets/{shared}/review") == before["list"]
    assert a.ok("GET", f"/api/v1/datasets/{shared}/review/{item['item_id']}") == before["item"]
    assert (
        a.ok("GET", f"/api/v1/datasets/{shared}/review/{decided['item_id']}") == before["decided"]
    )
    assert a.ok("GET", f"/api/v1/eval-runs/{w['run_id']}")["outcome"] == before["run"]


def test_guessed_item_ids_the_queues_own_rows_and_crafted_cursors_find_nothing(api):
    w = regressed(api)
    ds, agent = w["ds"], w["agent"]
    real = w["items"]["c005"]["item_id"]
    guesses = [
        "ri" + "0" * 13 + "0" * 16,  # the right shape, nobody's
        real[:-1] + ("0" if real[-1] != "0" else "1"),  # one digit off
        "count",  # the queue's counter row
        f"waiting%23c005%23{agent}",  # a waiting mark (`#` is refused before any store)
        "RI" + real[2:],
        quote("ri\u00e9\u4e2d\U0001f600"),
    ]
    for guess in guesses:
        for method, path, body in item_paths(ds, guess):
            status, resp = _call(api, method, path, **({"json": body} if body is not None else {}))
            assert status in (400, 404), (path, status, resp)
            assert resp["error"]["field"] == "item_id", resp
    assert sorted(waiting(api, ds)) == ["c002", "c005", "c007"]
    # Cursors: only a shape the listing gives; one of that shape past the end lists nothing.
    for bad in ("count", f"waiting%23c005%23{agent}", "ri1", "x" * 300, real + "0"):
        status, resp = _call(api, "GET", f"/api/v1/datasets/{ds}/review?cursor={bad}")
        assert status == 400 and resp["error"]["field"] == "cursor", (bad, resp)
    empty = api.ok("GET", f"/api/v1/datasets/{ds}/review?cursor=ri{'0' * 13}{'0' * 16}")
    assert empty["items"] == [] and empty["next_cursor"] is None


# --- members with less than it takes -----------------------------------------------------------


def test_viewers_runners_and_narrow_keys_may_read_but_not_decide_undo_or_send(api, new_api):
    w = regressed(api)
    ds, run_id = w["ds"], w["run_id"]
    item, decided = w["items"]["c005"]["item_id"], w["items"]["c002"]["item_id"]
    api.ok("POST", f"/api/v1/datasets/{ds}/review/{decided}/decision", json={"verdict": "pass"})
    before = passed(api, run_id)
    viewer = new_api(org_id=api.org_id, user_id="viewer@example.com", role="viewer")
    runner = new_api(org_id=api.org_id, user_id="runner@example.com", role="runner")
    readers = [
        viewer,
        runner,
        _key(api, "datasets:view", "runs:view", "agents:run", "datasets:run"),
    ]
    for who in readers:
        assert len(who.ok("GET", f"/api/v1/datasets/{ds}/review")["items"]) == 3
        who.ok("GET", f"/api/v1/datasets/{ds}/review/{item}")
        for path, body in (
            (f"/api/v1/datasets/{ds}/review/{item}/decision", {"verdict": "pass"}),
            (f"/api/v1/datasets/{ds}/review/{decided}/undo", None),
            (f"/api/v1/datasets/{ds}/review/{decided}/criterion", {"tags": ["t"]}),
            (f"/api/v1/eval-runs/{run_id}/review", {"side": "baseline"}),
        ):
            status, resp = _call(who, "POST", path, **({"json": body} if body else {}))
            assert status == 403, (who.user_id, path, resp)
            assert resp["error"]["permission"] == "datasets:edit", resp
    # A key without datasets:view reads nothing of the queue, even of an organization's editor.
    blind = _key(api, "runs:view")
    status, resp = _call(blind, "GET", f"/api/v1/datasets/{ds}/review")
    assert status in (403, 404), resp
    status, resp = _call(
        blind, "POST", f"/api/v1/datasets/{ds}/review/{item}/decision", json={"verdict": "fail"}
    )
    assert status in (403, 404), resp
    # An editor's key scoped to datasets:edit decides as its creator.
    editor_key = _key(api, "agents:view", "datasets:view", "datasets:edit")
    got = editor_key.ok(
        "POST", f"/api/v1/datasets/{ds}/review/{item}/decision", json={"verdict": "pass"}
    )
    assert got["audit"]["by"]["user_id"] == api.user_id
    assert passed(api, run_id) == before + 1
    assert waiting(api, ds).keys() == {"c007"}


def test_a_grant_on_one_dataset_reaches_no_other_queue(api, new_api):
    w = regressed(api)
    other = api.dataset(cases(2))
    guest = new_api(org_id=api.org_id, user_id="guest@example.com", role="guest")
    _grant(api, guest.user_id, "dataset", other, "datasets:view", "datasets:edit")
    _grant(api, guest.user_id, "agent", w["agent"], "agents:view")
    item = w["items"]["c005"]["item_id"]
    status, resp = _call(guest, "GET", f"/api/v1/datasets/{w['ds']}/review")
    assert status == 404 and resp["error"]["field"] == "dataset_id"
    for method, path, body in item_paths(w["ds"], item):
        status, resp = _call(guest, method, path, **({"json": body} if body is not None else {}))
        assert status == 404, (path, resp)
    # Naming its own dataset with our item id finds nothing either (a criterion changes the
    # organization's judge: it needs datasets:edit across the organization first).
    for method, path, body in item_paths(other, item):
        status, resp = _call(guest, method, path, **({"json": body} if body is not None else {}))
        if path.endswith("/criterion"):
            assert status == 403 and resp["error"]["permission"] == "datasets:edit", resp
        else:
            assert status == 404 and resp["error"]["field"] == "item_id", (path, resp)
    status, resp = _call(guest, "POST", f"/api/v1/eval-runs/{w['run_id']}/review", json={})
    assert status in (403, 404) and "run" in json.dumps(resp), resp
    assert sorted(waiting(api, w["ds"])) == ["c002", "c005", "c007"]


def test_a_run_the_caller_may_read_on_a_dataset_they_may_not_edit_sends_nothing(api, new_api):
    ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec(answers={"c001": "7", "c003": "9"}))
    run = api.start(agent, ds)
    assert api.wait(run["run_id"])["status"] == "completed"
    elsewhere = api.dataset(cases(1))
    viewer = new_api(org_id=api.org_id, user_id="viewer@example.com", role="viewer")
    _grant(api, viewer.user_id, "dataset", elsewhere, "datasets:edit")
    viewer.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")  # may read the run
    status, resp = _call(viewer, "POST", f"/api/v1/eval-runs/{run['run_id']}/review", json={})
    assert status == 403 and resp["error"]["permission"] == "datasets:edit", resp
    assert api.ok("GET", f"/api/v1/datasets/{ds}/review")["items"] == []


def test_items_of_an_agent_the_caller_cannot_see_are_not_listed_counted_read_or_decided(
    api, new_api
):
    ds = api.dataset(cases(4))
    seen = api.agent(sleepy_spec(answers={"c001": "7"}))
    hidden = api.agent(sleepy_spec(answers={"c001": "8", "c002": "8", "c003": "8"}))
    for agent in (seen, hidden):
        run = api.start(agent, ds)
        assert api.wait(run["run_id"])["status"] == "completed"
        api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/review", json={})
    every = api.ok("GET", f"/api/v1/datasets/{ds}/review")
    assert every["waiting"] == 4
    hidden_items = [i for i in every["items"] if i["agent_id"] == hidden]
    hidden_one = hidden_items[0]
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/review/{hidden_items[1]['item_id']}/decision",
        json={"verdict": "fail"},
    )
    guest = new_api(org_id=api.org_id, user_id="reviewer@example.com", role="guest")
    _grant(api, guest.user_id, "dataset", ds, "datasets:view", "datasets:edit")
    _grant(api, guest.user_id, "agent", seen, "agents:view")

    listing = guest.ok("GET", f"/api/v1/datasets/{ds}/review")
    assert [i["agent_id"] for i in listing["items"]] == [seen]
    text = json.dumps(listing)
    assert hidden not in text and all(i["item_id"] not in text for i in hidden_items)
    # Paging item by item never hands out a hidden item's id as a cursor.
    cursor, walked = None, []
    while True:
        page = guest.ok(
            "GET",
            f"/api/v1/datasets/{ds}/review?limit=1" + (f"&cursor={cursor}" if cursor else ""),
        )
        assert all(i["item_id"] not in json.dumps(page) for i in hidden_items), page
        walked += [i["item_id"] for i in page["items"]]
        cursor = page["next_cursor"]
        if cursor is None:
            break
    assert walked == [i["item_id"] for i in listing["items"]]
    assert listing["waiting"] == 1, "the count tells of answers the caller may not see"
    # Filtering by the hidden agent tells nothing either.
    status, by_agent = _call(guest, "GET", f"/api/v1/datasets/{ds}/review?agent_id={hidden}")
    assert status == 404 or (by_agent["items"] == [] and by_agent["next_cursor"] is None), by_agent
    for item in (hidden_one, hidden_items[1]):
        for method, path, body in item_paths(ds, item["item_id"]):
            status, resp = _call(guest, method, path, **({"json": body} if body else {}))
            if path.endswith("/criterion"):  # the organization's judge: needs more than a grant
                assert status == 403 and resp["error"]["permission"] == "datasets:edit", resp
            else:
                assert status == 404 and resp["error"]["field"] == "item_id", (path, resp)
    after = api.ok("GET", f"/api/v1/datasets/{ds}/review/{hidden_one['item_id']}")
    assert after["state"] == "waiting" and after["audit"] == []
    decided = api.ok("GET", f"/api/v1/datasets/{ds}/review/{hidden_items[1]['item_id']}")
    assert decided["state"] == "decided" and len(decided["audit"]) == 1


# --- path ids and bodies out of shape ----------------------------------------------------------


def test_path_ids_and_bodies_out_of_shape_are_4xx_naming_the_field(api):
    w = regressed(api)
    ds, item = w["ds"], w["items"]["c005"]["item_id"]
    for bad_item, field in (
        ("ri%23count", "item_id"),
        ("ri%2Fx", None),
        ("r" * 300, "item_id"),
        (quote("\u202eri\u0000x"), None),
        ("%F0%9F%98%80" * 60, "item_id"),
    ):
        for method, path, body in item_paths(ds, bad_item):
            status, resp = _call(api, method, path, **({"json": body} if body is not None else {}))
            assert status in (400, 404), (path, status, resp)
            if field is not None and isinstance(resp, dict) and "error" in resp:
                assert resp["error"].get("field") == field, (path, resp)
    for bad_ds in ("ds%23x", "d" * 300):
        status, resp = _call(api, "GET", f"/api/v1/datasets/{bad_ds}/review/{item}")
        assert status in (400, 404) and resp["error"]["field"] == "dataset_id", resp
    decision = f"/api/v1/datasets/{ds}/review/{item}/decision"
    for body, field in (
        ({"verdict": ["pass"]}, "verdict"),
        ({"verdict": "PASS"}, "verdict"),
        ({}, "verdict"),
        ({"verdict": "pass", "note": 7}, "note"),
        ({"verdict": "pass", "note": "x" * 4001}, "note"),
        ({"verdict": "pass", "by": "somebody-else@example.com"}, "by"),
    ):
        status, resp = _call(api, "POST", decision, json=body)
        assert status == 400 and resp["error"]["field"] == field, (body, resp)
    for raw, field in (
        (b"[]", None),
        (b"{", None),
        (b'"pass"', None),
        (b"null", None),
        (b'{"verdict": "pass", "note": "\\ud800"}', "note"),
    ):
        status, resp = _call(
            api, "POST", decision, content=raw, headers={"Content-Type": "application/json"}
        )
        assert status == 400, (raw, resp)
        assert field is None or resp["error"]["field"] == field, (raw, resp)
    status, resp = _call(api, "POST", decision, json={"verdict": "pass", "note": "x" * 2_000_000})
    assert status == 413 and resp["error"]["field"] == "body", resp
    criterion = f"/api/v1/datasets/{ds}/review/{item}/criterion"
    for body, field in (
        ({"tags": "t"}, "tags"),
        ({"tags": ["t"] * 51}, "tags"),
        ({"tags": ["x" * 201]}, "tags.0"),
        ({"tags": [""]}, "tags.0"),
        ({"tags": ["t"], "criterion_id": "a#b"}, "criterion_id"),
    ):
        status, resp = _call(api, "POST", criterion, json=body)
        assert status == 400 and resp["error"]["field"] == field, (body, resp)
    send = f"/api/v1/eval-runs/{w['run_id']}/review"
    for body in ({"side": "both"}, {"side": ["candidate"]}):
        status, resp = _call(api, "POST", send, json=body)
        assert status == 400 and resp["error"]["field"] == "side", resp
    for query, field in (
        ("state=lost", "state"),
        ("limit=0", "limit"),
        ("limit=100000", "limit"),
        ("tag=" + "t" * 201, "tag"),
        ("agent_id=a%23b", "agent_id"),
    ):
        status, resp = _call(api, "GET", f"/api/v1/datasets/{ds}/review?{query}")
        assert status == 400 and resp["error"]["field"] == field, (query, resp)
    assert waiting(api, ds)["c005"]["state"] == "waiting"
    assert api.ok("GET", f"/api/v1/datasets/{ds}/review/{item}")["audit"] == []


# --- what a decision keeps ---------------------------------------------------------------------


def _stored(stack: Any, org_id: str) -> list[dict[str, Any]]:
    """Every row of `review_items` and `review_audit` that names the organization in its key or
    in its `org_id`, as DynamoDB holds it."""
    dynamodb = boto3.client(
        "dynamodb", endpoint_url=stack.endpoint_url, region_name=stack.settings.aws_default_region
    )
    rows = []
    for model in (ReviewItemRow, ReviewAuditRow):
        for page in dynamodb.get_paginator("scan").paginate(
            TableName=tables.table_name(model),
            FilterExpression="begins_with(queue_key, :org) OR org_id = :id",
            ExpressionAttributeValues={":org": {"S": f"{org_id}#"}, ":id": {"S": org_id}},
        ):
            rows += [{"table": model.__name__, **item} for item in page["Items"]]
    return rows


def test_secrets_in_a_note_are_redacted_in_the_item_the_audit_and_the_tables(api, stack):
    w = regressed(api)
    ds, item = w["ds"], w["items"]["c005"]["item_id"]
    own = "tenant-own-value-7d1f9c2b"  # no key's shape: known by its value only
    api.ok("PUT", "/api/v1/secrets/partner-token", json={"value": own})
    note = f"the key {OPENAI_KEY} and {AWS_KEY} and {own} are fine here {MARKUP}"
    decided = api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/review/{item}/decision",
        json={"verdict": "pass", "note": note},
    )
    shown = api.ok("GET", f"/api/v1/datasets/{ds}/review/{item}")
    listed = api.ok("GET", f"/api/v1/datasets/{ds}/review")
    for text in (
        json.dumps(decided),
        json.dumps(shown),
        json.dumps(listed),
        json.dumps(_stored(stack, api.org_id)),
    ):
        assert OPENAI_KEY not in text and AWS_KEY not in text and own not in text
        assert OPENAI_KEY[:16] not in text and AWS_KEY[:12] not in text
    assert "are fine here" in shown["note"] and MARKUP in shown["note"]  # kept as text, in JSON
    assert shown["audit"][0]["note"] == shown["note"]


def test_markup_in_an_answer_comes_back_as_json_text_only(api):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(answers={"c001": MARKUP}))
    run = api.start(agent, ds)
    assert api.wait(run["run_id"])["status"] == "completed"
    api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/review", json={})
    r = api.http.get(f"/api/v1/datasets/{ds}/review")
    assert r.status_code == 200 and r.headers["content-type"].startswith("application/json")
    [item] = r.json()["items"]
    assert item["answer"] == MARKUP
    one = api.http.get(f"/api/v1/datasets/{ds}/review/{item['item_id']}")
    assert one.headers["content-type"].startswith("application/json")
    assert one.json()["answer"] == MARKUP


def test_audit_entries_say_who_what_before_and_after_and_every_key_begins_with_the_org(
    api, new_api, stack
):
    w = regressed(api)
    ds, run_id = w["ds"], w["run_id"]
    item = w["items"]["c007"]["item_id"]
    api.ok("GET", "/api/v1/me")  # the first sign-in: the admin
    editor = new_api(org_id=api.org_id, user_id="editor@example.com", role="editor")
    editor.ok("POST", f"/api/v1/datasets/{ds}/review/{item}/decision", json={"verdict": "pass"})
    key = _key(api, "agents:view", "datasets:view", "datasets:edit")
    key_id = api.ok("GET", "/api/v1/api-keys")["api_keys"][0]["key_id"]
    key.ok("POST", f"/api/v1/datasets/{ds}/review/{item}/undo")
    # The admin signed in as the editor: the editor decides, and the audit names the admin too.
    acting = Api(
        str(api.http.base_url),
        api.org_id,
        editor.user_id,
        _jwt(api.org_id, editor.user_id, act={"sub": api.user_id}),
    )
    acting.ok(
        "POST",
        f"/api/v1/datasets/{ds}/review/{item}/decision",
        json={"verdict": "fail", "note": "wrong after all"},
    )
    decide, undo, again = api.ok("GET", f"/api/v1/datasets/{ds}/review/{item}")["audit"]
    assert (decide["action"], decide["by"]["user_id"]) == ("decide", editor.user_id)
    assert (decide["api_key_id"], decide["actor"]) == (None, None)
    assert (undo["action"], undo["by"]["user_id"]) == ("undo", api.user_id)
    assert (undo["api_key_id"], undo["actor"]) == (key_id, None), undo
    assert again["by"]["user_id"] == editor.user_id and again["api_key_id"] is None
    assert again["actor"] == {"user_id": api.user_id, "name": api.user_id}, again
    assert (decide["state_before"], decide["state_after"]) == ("waiting", "decided")
    assert (decide["verdict_before"], decide["verdict_after"]) == (None, "pass")
    assert (undo["state_before"], undo["state_after"]) == ("decided", "waiting")
    assert (undo["verdict_before"], undo["verdict_after"]) == ("pass", None)
    assert (again["verdict_before"], again["verdict_after"]) == (None, "fail")
    assert again["note"] == "wrong after all" and undo["note"] is None
    [moved] = decide["runs"]
    assert moved["run_id"] == run_id
    assert (moved["before"]["passed"], moved["after"]["passed"]) == (7, 8)
    assert undo["runs"][0]["before"] == moved["after"]
    assert undo["runs"][0]["after"] == moved["before"]
    assert again["runs"][0]["after"]["passed"] == 7
    rows = _stored(stack, api.org_id)
    assert {r["table"] for r in rows} == {"ReviewItemRow", "ReviewAuditRow"}
    for row in rows:
        assert row["queue_key"]["S"].startswith(f"{api.org_id}#"), row
        assert row["org_id"]["S"] == api.org_id, row
        assert row["queue_key"]["S"] == f"{api.org_id}#{ds}", row
