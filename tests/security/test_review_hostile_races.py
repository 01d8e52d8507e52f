"""A hostile tenant against the review queue's writes racing each other and what they rest on:
two Undos at once, an Undo racing decisions, every answer of a run decided at once, a run deleted
or graded between a decision's planning and its write, numbers put in place late, and a dataset
deleted under its queue (`tests/security/test_review_hostile.py` has the access attacks).

Through the HTTP API on the embedded stack (127.0.0.1 only); races are ordered with barriers and
hooks around the process's own review store (`bootstrap.override`), never with sleeps.
"""

from __future__ import annotations

import json
import threading
import uuid
from typing import Any

import pytest

from chalicelib import bootstrap
from chalicelib.domain.identity import Identity
from chalicelib.services import review_decisions as decisions
from chalicelib.services import run_deletion
from tests.security.test_review_hostile import _call, _stored, item_paths, passed, regressed
from tests.support.e2e import Api, cases, sleepy_spec

# --- races -------------------------------------------------------------------------------------


def _at_once(*calls: Any) -> list[tuple[int, Any]]:
    """Run each `(api, method, path, json)` in its own thread, all let go together: their
    answers in the order given."""
    barrier = threading.Barrier(len(calls), timeout=60)
    out: list[tuple[int, Any] | None] = [None] * len(calls)

    def one(i: int, who: Api, method: str, path: str, body: Any) -> None:
        barrier.wait()
        out[i] = _call(who, method, path, **({"json": body} if body is not None else {}))

    threads = [threading.Thread(target=one, args=(i, *c)) for i, c in enumerate(calls)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(300)
    assert all(o is not None for o in out), out
    return [o for o in out if o is not None]


def test_two_undos_at_once_one_wins_and_the_numbers_are_the_scorers_again(api, new_api):
    w = regressed(api)
    ds, run_id, item = w["ds"], w["run_id"], w["items"]["c005"]["item_id"]
    before = api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"]
    api.ok("POST", f"/api/v1/datasets/{ds}/review/{item}/decision", json={"verdict": "pass"})
    other = new_api(org_id=api.org_id, user_id="editor@example.com", role="editor")
    undo = f"/api/v1/datasets/{ds}/review/{item}/undo"
    answers = _at_once((api, "POST", undo, None), (other, "POST", undo, None))
    assert sorted(s for s, _ in answers) == [200, 409], answers
    assert [b for s, b in answers if s == 409][0]["error"]["field"] == "item_id"
    shown = api.ok("GET", f"/api/v1/datasets/{ds}/review/{item}")
    assert shown["state"] == "waiting" and [a["action"] for a in shown["audit"]] == [
        "decide",
        "undo",
    ]
    assert api.ok("GET", f"/api/v1/datasets/{ds}/review")["waiting"] == 3
    assert api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"] == before


def test_an_undo_racing_a_decision_leaves_the_item_the_audit_and_the_numbers_agreeing(api):
    w = regressed(api)
    ds, run_id, item = w["ds"], w["run_id"], w["items"]["c002"]["item_id"]
    base = passed(api, run_id)
    api.ok("POST", f"/api/v1/datasets/{ds}/review/{item}/decision", json={"verdict": "pass"})
    path = f"/api/v1/datasets/{ds}/review/{item}"
    answers = _at_once(
        (api, "POST", f"{path}/undo", None),
        (api, "POST", f"{path}/decision", {"verdict": "pass"}),
        (api, "POST", f"{path}/decision", {"verdict": "fail"}),
    )
    won = [s for s, _ in answers if s == 200]
    assert answers[0][0] == 200 and all(s in (200, 409) for s, _ in answers), answers
    shown = api.ok("GET", path)
    assert len(shown["audit"]) == 1 + len(won)
    last = shown["audit"][-1]
    assert (shown["state"], shown["verdict"]) == (last["state_after"], last["verdict_after"])
    assert passed(api, run_id) == base + (1 if shown["verdict"] == "pass" else 0)
    assert shown["recomputing"] is False
    waiting_now = api.ok("GET", f"/api/v1/datasets/{ds}/review")["waiting"]
    assert waiting_now == (3 if shown["state"] == "waiting" else 2)


def test_decisions_on_every_item_of_one_run_at_once_all_count(api, new_api):
    w = regressed(api)
    ds, run_id = w["ds"], w["run_id"]
    base = passed(api, run_id)
    people = [api] + [
        new_api(org_id=api.org_id, user_id=f"editor{i}@example.com", role="editor")
        for i in range(2)
    ]
    calls = [
        (who, "POST", f"/api/v1/datasets/{ds}/review/{i['item_id']}/decision", {"verdict": "pass"})
        for who, i in zip(people, w["items"].values(), strict=True)
    ]
    answers = _at_once(*calls)
    assert [s for s, _ in answers] == [200, 200, 200], answers
    run = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    assert run["outcome"]["passed"] == base + 3 and run["recomputing"] is False
    assert run["outcome"]["comparison"]["confirmed_regressions"] == 0


# --- what goes away under a decision -----------------------------------------------------------


class _Around:
    """The review store with `hook` run once around the next `decide`: `"before"` it writes (the
    decision has planned and read what it rests on) or `"after"` it wrote and before the caller
    puts the planned numbers in place."""

    def __init__(self, inner: Any, when: str, hook: Any) -> None:
        self.inner, self.when, self.hook = inner, when, hook

    def __getattr__(self, name: str) -> Any:
        return getattr(self.inner, name)

    def decide(self, decision: Any) -> bool:
        hook = self.hook if self.when == "before" else None
        if hook is not None:
            self.hook = None
            hook()
        written = bool(self.inner.decide(decision))
        if written and self.when == "after" and self.hook is not None:
            hook, self.hook = self.hook, None
            hook()
        return written


@pytest.fixture
def around(container):
    """`around(when, hook)` installs `_Around` on the process's review store for this test."""
    original = container.review

    def install(when: str, hook: Any) -> None:
        bootstrap.override(review=_Around(original, when, hook))

    yield install
    bootstrap.override(review=original)


def test_an_item_goes_with_its_run_and_nothing_can_decide_it_after(api):
    w = regressed(api)
    ds, run_id, item = w["ds"], w["run_id"], w["items"]["c005"]["item_id"]
    api.ok("DELETE", f"/api/v1/eval-runs/{run_id}")
    status, body = _call(
        api, "POST", f"/api/v1/datasets/{ds}/review/{item}/decision", json={"verdict": "pass"}
    )
    assert status == 404 and body["error"]["field"] == "item_id"
    assert api.ok("GET", f"/api/v1/datasets/{ds}/review")["waiting"] == 0


def test_a_run_deleted_between_planning_and_writing_is_not_half_decided(api, container, around):
    w = regressed(api)
    ds, run_id, item = w["ds"], w["run_id"], w["items"]["c005"]["item_id"]

    def delete_the_run() -> None:
        run_deletion.forget(container, container.runs.get(api.org_id, run_id))

    around("before", delete_the_run)
    status, body = _call(
        api, "POST", f"/api/v1/datasets/{ds}/review/{item}/decision", json={"verdict": "pass"}
    )
    # The run took its item with it before the decision's write: nothing was written.
    assert status == 404 and body["error"]["field"] == "item_id", body
    assert _call(api, "GET", f"/api/v1/eval-runs/{run_id}")[0] == 404
    assert container.runs.attempts(api.org_id, run_id) == []
    assert container.review.audit(api.org_id, ds, item) == []


def test_a_run_graded_between_planning_and_writing_is_planned_again(api, container, around):
    """Another person decides another answer of the same run after this decision read the run:
    this decision's write is refused, planned again over the other verdict, and both count."""
    w = regressed(api)
    ds, run_id = w["ds"], w["run_id"]
    base = passed(api, run_id)
    first, second = w["items"]["c002"]["item_id"], w["items"]["c005"]["item_id"]
    other = Identity(org_id=api.org_id, user_id="other@example.com")

    around("before", lambda: decisions.decide(container, other, ds, second, "pass"))
    decided = api.ok(
        "POST", f"/api/v1/datasets/{ds}/review/{first}/decision", json={"verdict": "pass"}
    )
    [moved] = decided["audit"]["runs"]
    assert (moved["before"]["passed"], moved["after"]["passed"]) == (base + 1, base + 2)
    assert passed(api, run_id) == base + 2


def test_numbers_put_in_place_late_never_overwrite_a_later_decisions(api, container, around):
    """A decision's planned outcome is put in place after its write; a second decision on another
    answer of the same run written and put in place meanwhile must not be undone by the first's
    older numbers (the outcome must count both verdicts)."""
    w = regressed(api)
    ds, run_id = w["ds"], w["run_id"]
    base = passed(api, run_id)
    first, second = w["items"]["c002"]["item_id"], w["items"]["c005"]["item_id"]
    other = Identity(org_id=api.org_id, user_id="other@example.com")

    around("after", lambda: decisions.decide(container, other, ds, second, "pass"))
    api.ok("POST", f"/api/v1/datasets/{ds}/review/{first}/decision", json={"verdict": "pass"})
    run = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    assert run["outcome"]["passed"] == base + 2, run["outcome"]
    assert run["outcome"]["comparison"]["confirmed_regressions"] == 1
    [case] = api.ok("GET", f"/api/v1/eval-runs/{run_id}/cases?case_id=c005")["cases"]
    assert case["arms"]["candidate"]["settled"] == "passed"


def test_a_decision_while_the_dataset_is_being_deleted_is_refused(api, container):
    w = regressed(api)
    ds, item = w["ds"], w["items"]["c005"]["item_id"]
    container.datasets.start_deleting(api.org_id, ds, "2026-12-01T00:00:00Z")
    try:
        for method, path, body in item_paths(ds, item):
            status, resp = _call(api, method, path, **({"json": body} if body else {}))
            assert status == 404 and resp["error"]["field"] == "dataset_id", (path, resp)
        status, resp = _call(api, "GET", f"/api/v1/datasets/{ds}/review")
        assert status == 404
    finally:
        container.datasets.stop_deleting(api.org_id, ds)
    assert api.ok("GET", f"/api/v1/datasets/{ds}/review/{item}")["state"] == "waiting"


def test_a_deleted_dataset_takes_its_queue_and_audit_with_it(api, stack):
    shared = f"again-{uuid.uuid4().hex[:6]}"
    w = regressed(api, dataset_id=shared)
    item = w["items"]["c005"]["item_id"]
    api.ok(
        "POST",
        f"/api/v1/datasets/{shared}/review/{item}/decision",
        json={"verdict": "pass", "note": "OLD-NOTE-of-the-deleted-dataset"},
    )
    api.ok("DELETE", f"/api/v1/datasets/{shared}")
    assert _stored(stack, api.org_id) == []
    # A new dataset under the same id starts with an empty queue.
    api.ok("POST", "/api/v1/datasets", json={"name": "new", "dataset_id": shared})
    fresh = api.ok("GET", f"/api/v1/datasets/{shared}/review")
    assert fresh == {"items": [], "next_cursor": None, "waiting": 0}
    status, resp = _call(api, "GET", f"/api/v1/datasets/{shared}/review/{item}")
    assert status == 404 and "OLD-NOTE" not in json.dumps(resp)


def test_a_deleted_agent_takes_its_answers_out_of_every_queue(api, new_api):
    """The agent's answers (waiting, decided, replaced) and their audit leave the queue with it;
    another agent's stay. A new agent under the same id shows nobody the old one's answers."""
    w = regressed(api)
    ds, agent = w["ds"], w["agent"]
    other = api.agent(sleepy_spec(answers={"c001": "8"}))
    run = api.start(other, ds)
    assert api.wait(run["run_id"])["status"] == "completed"
    api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/review", json={})
    decided = w["items"]["c002"]["item_id"]
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/review/{decided}/decision",
        json={"verdict": "pass", "note": "OLD-AGENT-NOTE"},
    )
    assert api.ok("GET", f"/api/v1/datasets/{ds}/review")["waiting"] == 3
    api.ok("DELETE", f"/api/v1/agents/{agent}")
    left = api.ok("GET", f"/api/v1/datasets/{ds}/review")
    assert [i["agent_id"] for i in left["items"]] == [other] and left["waiting"] == 1
    for item in w["items"].values():
        assert _call(api, "GET", f"/api/v1/datasets/{ds}/review/{item['item_id']}")[0] == 404
    # The same id again: its first answer waits alone, nothing of the old agent's in sight.
    api.ok(
        "POST",
        "/api/v1/agents",
        json={"name": "again", "agent_id": agent, "spec": sleepy_spec(answers={"c002": "9"})},
    )
    again = api.start(agent, ds)
    assert api.wait(again["run_id"])["status"] == "completed"
    sent = api.ok("POST", f"/api/v1/eval-runs/{again['run_id']}/review", json={})
    assert sent["routed_to_review"] == 1 and sent["routed_replacing"] == 0, sent
    guest = new_api(org_id=api.org_id, user_id="guest@example.com", role="guest")
    api.ok(
        "PUT",
        f"/api/v1/members/{guest.user_id}/grants/agent/{agent}",
        json={"permissions": ["agents:view"]},
    )
    api.ok(
        "PUT",
        f"/api/v1/members/{guest.user_id}/grants/dataset/{ds}",
        json={"permissions": ["datasets:view"]},
    )
    seen = guest.ok("GET", f"/api/v1/datasets/{ds}/review")
    assert [i["run_id"] for i in seen["items"]] == [again["run_id"]], seen
    assert "OLD-AGENT-NOTE" not in json.dumps(seen) and seen["waiting"] == 1


BORROWERS = 100
"""More runs than one DynamoDB transaction can mark (it takes 100 writes)."""


def test_a_decision_on_an_answer_a_hundred_baselines_borrowed_moves_every_one(api):
    """A tenant starts `BORROWERS` runs whose baseline borrows one run's first answers, then
    decides that answer: every run resting on it follows (no 500 from an oversized
    transaction), and Undo takes every one back."""
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec(answers={"c000": "7"}))
    source = api.start(agent, ds)["run_id"]
    assert api.wait(source)["status"] == "completed"
    api.ok("POST", f"/api/v1/eval-runs/{source}/review", json={})
    borrowers = [api.start(agent, ds, baseline_run_id=source)["run_id"] for _ in range(BORROWERS)]
    for run_id in borrowers:
        assert api.wait(run_id)["status"] == "completed"
    before = {r: api.ok("GET", f"/api/v1/eval-runs/{r}")["outcome"] for r in borrowers[::33]}
    [item] = api.ok("GET", f"/api/v1/datasets/{ds}/review")["items"]
    decided = api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/review/{item['item_id']}/decision",
        json={"verdict": "pass"},
    )
    moved = {r["run_id"]: r for r in decided["audit"]["runs"]}
    assert set(moved) == {source, *borrowers}
    assert decided["item"]["recomputing"] is False
    for run_id in [source, *borrowers[::33], borrowers[-1]]:
        run = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
        assert run["recomputing"] is False, run_id
        assert run["outcome"]["verdict"] == moved[run_id]["after"]["verdict"], run_id
    # The first and last borrowers' baselines now pass the case their candidates fail: a
    # regression in each (the newest runs are marked in the decision's transaction, the oldest
    # right after it).
    for run_id in (borrowers[0], borrowers[-1]):
        flips = api.ok("GET", f"/api/v1/eval-runs/{run_id}/comparison")["flips"]
        assert [(f["case_id"], f["outcome"]) for f in flips] == [("c000", "regression")], flips
    api.ok("POST", f"/api/v1/datasets/{ds}/review/{item['item_id']}/undo")
    for run_id, outcome in before.items():
        assert api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"] == outcome, run_id
    for run_id in (borrowers[0], borrowers[-1]):
        assert api.ok("GET", f"/api/v1/eval-runs/{run_id}/comparison")["flips"] == []


def test_undo_after_the_answers_run_was_deleted_still_restores_the_runs_that_borrowed_it(api):
    """A baseline that borrowed the answer keeps a copy of it when the answer's run is deleted;
    a decision taken back afterwards must take it back there too."""
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec(answers={"c000": "7"}))
    source = api.start(agent, ds)["run_id"]
    assert api.wait(source)["status"] == "completed"
    api.ok("POST", f"/api/v1/eval-runs/{source}/review", json={})
    borrower = api.start(agent, ds, baseline_run_id=source)["run_id"]
    assert api.wait(borrower)["status"] == "completed"
    before = api.ok("GET", f"/api/v1/eval-runs/{borrower}")["outcome"]
    [item] = api.ok("GET", f"/api/v1/datasets/{ds}/review")["items"]
    path = f"/api/v1/datasets/{ds}/review/{item['item_id']}"
    api.ok("POST", f"{path}/decision", json={"verdict": "pass"})
    flips = api.ok("GET", f"/api/v1/eval-runs/{borrower}/comparison")["flips"]
    assert [f["outcome"] for f in flips] == ["regression"]
    api.ok("DELETE", f"/api/v1/eval-runs/{source}")
    undone = api.ok("POST", f"{path}/undo")
    assert undone["item"]["state"] == "waiting"
    assert api.ok("GET", f"/api/v1/eval-runs/{borrower}/comparison")["flips"] == []
    after = api.ok("GET", f"/api/v1/eval-runs/{borrower}")["outcome"]
    # Every number is back; only the noise lost the run it rested on (deleted): it is measured
    # on this run's own tries now.
    assert {k: v for k, v in after.items() if k != "noise"} == {
        k: v for k, v in before.items() if k != "noise"
    }
    assert (before["noise"]["basis"], after["noise"]["basis"]) == ("history", "this_run")
    assert [r["run_id"] for r in undone["audit"]["runs"]] == [borrower]
