"""The review queue end to end through the HTTP API against the moto server
(docs/guides/review.md): what a run sends, a person's decision moving every number that rests on
the answer, Undo restoring them exactly, who may decide, and two people deciding at once."""

from __future__ import annotations

import threading

from tests.e2e.conftest import cases, sleepy_spec

BROKEN = {"c002": "7", "c005": "7", "c007": "7"}


def publish(api, agent_id: str, spec: dict) -> None:
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": spec})
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")


def regressed(api) -> tuple[str, str, dict]:
    """A dataset of 10 cases, an agent whose v2 breaks three that v1 passed, and the completed
    run of v2 against v1: (dataset id, agent id, run)."""
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec(answers=BROKEN))
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True)
    assert api.wait(run["run_id"])["status"] == "completed"
    return ds, agent, api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")


def waiting(api, ds: str) -> dict[str, dict]:
    body = api.ok("GET", f"/api/v1/datasets/{ds}/review?state=waiting")
    return {i["case_id"]: i for i in body["items"]}


def test_a_run_sends_its_confirmed_regressions_with_the_answer_and_what_the_case_expects(api):
    ds, agent, run = regressed(api)
    assert run["routed_to_review"] == 3
    assert run["routed_replacing"] == 0 and run["routing_error"] is None
    items = waiting(api, ds)
    assert sorted(items) == ["c002", "c005", "c007"]
    item = items["c005"]
    assert item["reason"] == "confirmed_regression" and item["state"] == "waiting"
    assert item["run_id"] == run["run_id"] and item["agent_id"] == agent
    assert item["answer"] == "7" and item["expected"] == {"reference": "42"}
    assert item["question"] == "question 5" and item["scored_state"] == "failed"
    assert item["scores"] and all(s["reason"] for s in item["scores"])
    assert item["arm_label"] == "v2" and item["attempt_key"] == "candidate#c005#001"
    listing = api.ok("GET", f"/api/v1/datasets/{ds}/review")
    assert listing["waiting"] == 3 and listing["next_cursor"] is None
    first = api.ok("GET", f"/api/v1/datasets/{ds}/review?limit=2")
    rest = api.ok("GET", f"/api/v1/datasets/{ds}/review?limit=2&cursor={first['next_cursor']}")
    paged = [i["item_id"] for i in first["items"] + rest["items"]]
    assert sorted(paged) == sorted(i["item_id"] for i in listing["items"])
    assert len(set(paged)) == 3


def test_a_decision_moves_the_runs_numbers_and_undo_restores_every_one(api):
    ds, _, run = regressed(api)
    run_id = run["run_id"]
    before = api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"]
    assert before["passed"] == 7 and before["comparison"]["confirmed_regressions"] == 3
    item = waiting(api, ds)["c005"]
    decided = api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/review/{item['item_id']}/decision",
        json={"verdict": "pass", "note": "7 is right for this phrasing"},
    )
    assert decided["item"]["state"] == "decided" and decided["item"]["corrected"] is True
    assert decided["item"]["decided_by"] == {"user_id": api.user_id, "name": api.user_id}
    audit = decided["audit"]
    assert (audit["state_before"], audit["state_after"]) == ("waiting", "decided")
    assert (audit["verdict_before"], audit["verdict_after"]) == (None, "pass")
    [moved] = audit["runs"]
    assert moved["run_id"] == run_id
    assert moved["before"]["passed"] == 7 and moved["after"]["passed"] == 8
    assert moved["before"]["confirmed_regressions"] == 3
    assert moved["after"]["confirmed_regressions"] == 2
    after = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    assert after["recomputing"] is False
    assert after["outcome"]["passed"] == 8 and after["outcome"]["pass_rate"] == 0.8
    comparison = api.ok("GET", f"/api/v1/eval-runs/{run_id}/comparison")
    assert sorted(f["case_id"] for f in comparison["flips"] if f["confirmed"]) == ["c002", "c007"]
    assert comparison["counts"]["regression"] == 2
    assert sorted(waiting(api, ds)) == ["c002", "c007"]
    [case] = api.ok("GET", f"/api/v1/eval-runs/{run_id}/cases?case_id=c005")["cases"]
    side = case["arms"]["candidate"]
    assert side["settled"] == "passed" and side["review"]["corrected"] is True
    assert side["review"]["by"] == {"user_id": api.user_id, "name": api.user_id}
    status, body = api.call(
        "POST", f"/api/v1/datasets/{ds}/review/{item['item_id']}/decision", json={"verdict": "fail"}
    )
    assert status == 409 and body["error"]["field"] == "item_id"
    undone = api.ok("POST", f"/api/v1/datasets/{ds}/review/{item['item_id']}/undo")
    assert undone["item"]["state"] == "waiting" and undone["item"]["verdict"] is None
    assert undone["audit"]["runs"][0]["after"]["passed"] == 7
    restored = api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"]
    assert restored == before
    history = api.ok("GET", f"/api/v1/datasets/{ds}/review/{item['item_id']}")["audit"]
    assert [a["action"] for a in history] == ["decide", "undo"]
    assert history[0]["note"] == "7 is right for this phrasing"


def test_a_viewer_is_refused_and_another_organization_sees_nothing(api, new_api):
    ds, _, _ = regressed(api)
    item = waiting(api, ds)["c002"]
    viewer = new_api(org_id=api.org_id, user_id="viewer@example.com", role="viewer")
    assert len(viewer.ok("GET", f"/api/v1/datasets/{ds}/review")["items"]) == 3
    status, body = viewer.call(
        "POST", f"/api/v1/datasets/{ds}/review/{item['item_id']}/decision", json={"verdict": "pass"}
    )
    assert status == 403 and body["error"]["permission"] == "datasets:edit"
    stranger = new_api()
    for method, path, kw in (
        ("GET", f"/api/v1/datasets/{ds}/review", {}),
        ("GET", f"/api/v1/datasets/{ds}/review/{item['item_id']}", {}),
        (
            "POST",
            f"/api/v1/datasets/{ds}/review/{item['item_id']}/decision",
            {"json": {"verdict": "pass"}},
        ),
    ):
        status, body = stranger.call(method, path, **kw)
        assert status == 404, (path, body)
    assert waiting(api, ds)["c002"]["state"] == "waiting"


def test_bad_decisions_name_the_field(api):
    ds, _, _ = regressed(api)
    item = waiting(api, ds)["c002"]["item_id"]
    path = f"/api/v1/datasets/{ds}/review/{item}/decision"
    status, body = api.call("POST", path, json={"verdict": "maybe"})
    assert status == 400 and body["error"]["field"] == "verdict"
    status, body = api.call("POST", path, json={"verdict": "pass", "note": "x" * 4001})
    assert status == 400 and body["error"]["field"] == "note"
    status, body = api.call(
        "POST", f"/api/v1/datasets/{ds}/review/ri-nope/decision", json={"verdict": "pass"}
    )
    assert status == 404 and body["error"]["field"] == "item_id"
    status, body = api.call("GET", f"/api/v1/datasets/{ds}/review?cursor=abc")
    assert status == 400 and body["error"]["field"] == "cursor"
    status, body = api.call("POST", f"/api/v1/datasets/{ds}/review/{item}/undo")
    assert status == 409 and body["error"]["field"] == "item_id"


def test_two_people_deciding_one_item_at_once_one_wins_and_the_other_gets_409(api):
    ds, _, run = regressed(api)
    item = waiting(api, ds)["c007"]["item_id"]
    path = f"/api/v1/datasets/{ds}/review/{item}/decision"
    barrier = threading.Barrier(2)
    statuses: list[int] = []

    def decide(verdict: str) -> None:
        barrier.wait()
        status, _ = api.call("POST", path, json={"verdict": verdict})
        statuses.append(status)

    threads = [threading.Thread(target=decide, args=(v,)) for v in ("pass", "fail")]
    for t in threads:
        t.start()
    for t in threads:
        t.join()
    assert sorted(statuses) == [200, 409]
    history = api.ok("GET", f"/api/v1/datasets/{ds}/review/{item}")["audit"]
    assert len(history) == 1
    outcome = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]
    assert outcome["passed"] == (8 if history[0]["verdict_after"] == "pass" else 7)


def test_send_failed_to_review_sends_the_rest_of_a_side_once(api):
    ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec(answers={"c001": "7", "c003": "9"}))
    run = api.start(agent, ds)
    assert api.wait(run["run_id"])["status"] == "completed"
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert full["routed_to_review"] == 0  # no baseline, no judge: nothing it stands behind
    sent = api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/review", json={"side": "candidate"})
    assert sent["routed_to_review"] == 2 and sent["not_sent"] == []
    items = waiting(api, ds)
    assert sorted(items) == ["c001", "c003"]
    assert items["c001"]["reason"] == "sent_by_hand"
    assert items["c001"]["sent_by"]["user_id"] == api.user_id
    again = api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/review", json={"side": "candidate"})
    assert again["routed_to_review"] == 0 and len(again["not_sent"]) == 2
    status, body = api.call(
        "POST", f"/api/v1/eval-runs/{run['run_id']}/review", json={"side": "baseline"}
    )
    assert status == 400 and body["error"]["field"] == "side"


def test_a_newer_answer_takes_the_place_of_the_one_waiting_and_another_agents_waits_beside(api):
    ds = api.dataset(cases(3))
    agent = api.agent(sleepy_spec(answers={"c001": "7"}))
    other = api.agent(sleepy_spec(answers={"c001": "8"}))
    first = api.start(agent, ds)
    assert api.wait(first["run_id"])["status"] == "completed"
    api.ok("POST", f"/api/v1/eval-runs/{first['run_id']}/review", json={})
    second = api.start(agent, ds)
    assert api.wait(second["run_id"])["status"] == "completed"
    sent = api.ok("POST", f"/api/v1/eval-runs/{second['run_id']}/review", json={})
    assert sent["routed_to_review"] == 1 and sent["routed_replacing"] == 1
    beside = api.start(other, ds)
    assert api.wait(beside["run_id"])["status"] == "completed"
    api.ok("POST", f"/api/v1/eval-runs/{beside['run_id']}/review", json={})
    items = api.ok("GET", f"/api/v1/datasets/{ds}/review")["items"]
    by_state = sorted((i["agent_id"] == agent, i["run_id"], i["state"]) for i in items)
    assert by_state == sorted(
        [
            (True, first["run_id"], "replaced"),
            (True, second["run_id"], "waiting"),
            (False, beside["run_id"], "waiting"),
        ]
    )
    older = api.ok("POST", f"/api/v1/eval-runs/{first['run_id']}/review", json={})
    assert older["routed_to_review"] == 0
    assert "older" in older["not_sent"][0]["why"] or "queue" in older["not_sent"][0]["why"]
    mine = api.ok("GET", f"/api/v1/datasets/{ds}/review?agent_id={agent}&state=waiting")
    assert [i["run_id"] for i in mine["items"]] == [second["run_id"]]


def test_a_full_queue_refuses_the_send_and_the_run_still_completes_saying_why(api, operator):
    operator(assay_review_queue_limit=1)
    ds, _, run = regressed(api)
    assert run["status"] == "completed"
    assert run["routed_to_review"] == 1, run["routing_error"]
    assert "holds 1 waiting" in run["routing_error"]
    assert len(waiting(api, ds)) == 1


def test_a_removed_members_decisions_show_no_stale_name(api, new_api):
    ds, _, run = regressed(api)
    editor = new_api(org_id=api.org_id, user_id="editor@example.com", role="editor")
    item = waiting(api, ds)["c002"]["item_id"]
    editor.ok("POST", f"/api/v1/datasets/{ds}/review/{item}/decision", json={"verdict": "pass"})
    shown = api.ok("GET", f"/api/v1/datasets/{ds}/review/{item}")
    assert shown["decided_by"] == {"user_id": "editor@example.com", "name": "editor@example.com"}
    api.ok("DELETE", "/api/v1/members/editor@example.com")
    shown = api.ok("GET", f"/api/v1/datasets/{ds}/review/{item}")
    assert shown["decided_by"] == {"user_id": "editor@example.com", "name": None}
    assert shown["audit"][0]["by"]["name"] is None
    [case] = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/cases?case_id=c002")["cases"]
    assert case["arms"]["candidate"]["review"]["by"]["name"] is None


def test_deleting_a_run_takes_its_answers_out_of_the_queue_and_the_dataset_takes_the_queue(api):
    ds, _, run = regressed(api)
    item = waiting(api, ds)["c002"]["item_id"]
    api.ok("POST", f"/api/v1/datasets/{ds}/review/{item}/decision", json={"verdict": "fail"})
    api.ok("DELETE", f"/api/v1/eval-runs/{run['run_id']}")
    listing = api.ok("GET", f"/api/v1/datasets/{ds}/review")
    assert listing["items"] == [] and listing["waiting"] == 0
    status, body = api.call("GET", f"/api/v1/datasets/{ds}/review/{item}")
    assert status == 404 and body["error"]["field"] == "item_id"
    api.ok("DELETE", f"/api/v1/datasets/{ds}")
    status, _ = api.call("GET", f"/api/v1/datasets/{ds}/review")
    assert status == 404
