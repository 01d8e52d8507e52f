"""Reading runs back (docs/guides/by-hand.md, docs/architecture/run-lifecycle.md): a run with every
attempt it kept, listings newest first and paged, progress, live updates by cursor, and deleting a
run."""

from __future__ import annotations

import threading
import time
import uuid
from typing import Any

import pytest

from tests.e2e.conftest import cases, sleepy_spec
from tests.support import agents

PRICE = {"input_per_mtok_usd": "1.00", "output_per_mtok_usd": "2.00"}


def tool_spec(**options: Any) -> dict[str, Any]:
    return {
        "runtime": "python",
        "entrypoint": "tests.support.agents:tool_agent",
        "options": options,
        "price": PRICE,
    }


def completed(api, agent: str, ds: str, **body: Any) -> dict[str, Any]:
    run = api.start(agent, ds, **body)
    assert api.wait(run["run_id"])["status"] == "completed"
    return run


# --- one run ---------------------------------------------------------------------------------


def test_a_run_reads_back_with_every_attempt_it_kept(api):
    ds = api.dataset(cases(3))
    agent = api.agent(tool_spec(wrong=["c001"]))
    run = completed(api, agent, ds)
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")

    assert (full["run_id"], full["agent_id"], full["dataset_id"], full["dataset_version"]) == (
        run["run_id"],
        agent,
        ds,
        1,
    )
    assert (full["status"], full["draft"], full["resolved_version"], full["created_by"]) == (
        "completed",
        True,
        None,
        api.user_id,
    )
    assert full["started_at"] <= full["completed_at"]
    # 100 input tokens at $1/M + 20 output tokens at $2/M = 140 micro-USD per answer, 3 answers.
    assert full["cost_usd"] == pytest.approx(0.00042)
    assert full["tokens"] == {"input": 300, "output": 60}
    assert full["progress"]["recorded"] == full["progress"]["expected"] == 3
    assert (full["outcome"]["total"], full["outcome"]["passed"], full["outcome"]["failed"]) == (
        3,
        2,
        1,
    )
    assert full["outcome"]["verdict"] == "partial"
    assert full["outcome"]["pass_rate"] == pytest.approx(2 / 3)

    results = {r["case_id"]: r for r in full["results"]}
    assert sorted(results) == ["c000", "c001", "c002"]
    for case_id, r in results.items():
        assert (r["arm_id"], r["attempt"]) == ("candidate", 1)
        assert r["calls"] == [
            {"name": "lookup", "arguments": {"case": case_id}, "status": "intended", "result": None}
        ]
        assert r["cost_usd"] == pytest.approx(0.00014)
        assert r["tokens"] == {"input": 100, "output": 20}
        assert r["latency_ms"] >= 0 and r["model"] == "tool-model-1"
        assert r["recorded_at"].endswith("Z") and r["crash"] is False and r["error"] is None
        (score,) = r["scores"]
        assert score["scorer"] == "equals"
    ok, bad = results["c000"], results["c001"]
    assert (ok["state"], ok["passed"], ok["answer"], ok["score"]) == ("passed", True, "42", 1.0)
    assert (ok["scores"][0]["passed"], ok["scores"][0]["score"]) == (True, 1.0)
    assert ok["scores"][0]["reason"] == "answer equals '42'"
    assert (bad["state"], bad["passed"], bad["answer"], bad["score"]) == (
        "failed",
        False,
        "41",
        0.0,
    )
    assert (bad["scores"][0]["passed"], bad["scores"][0]["score"]) == (False, 0.0)
    assert bad["scores"][0]["reason"] == "expected '42', got '41'"


def test_a_run_that_crashed_on_a_case_keeps_the_error(api):
    ds = api.dataset(cases(1))
    agent = api.agent(
        {
            "runtime": "python",
            "entrypoint": "tests.support.agents:tool_agent",
            "options": {"sleep_ms": "not a number"},
        }
    )
    run = completed(api, agent, ds)
    (r,) = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["results"]
    assert (r["state"], r["crash"], r["answer"]) == ("failed", True, None)
    assert "ValueError" in r["error"] and r["reason"].startswith("agent crashed")


# --- listings --------------------------------------------------------------------------------


def test_an_agent_s_runs_are_listed_newest_first(api):
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec(), publish=1)
    other = api.agent(sleepy_spec())
    ids = [
        completed(api, agent, ds)["run_id"],
        completed(api, agent, ds, candidate="version", version=1)["run_id"],
        completed(api, other, ds)["run_id"],
        completed(api, agent, ds)["run_id"],
    ]
    runs = api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"]
    assert [r["run_id"] for r in runs] == [ids[3], ids[1], ids[0]]
    assert [r["created_at"] for r in runs] == sorted((r["created_at"] for r in runs), reverse=True)
    assert all(r["status"] == "completed" and r["outcome"]["verdict"] == "pass" for r in runs)
    assert "spec" not in runs[0]["arms"][0]
    assert [r["run_id"] for r in api.ok("GET", f"/api/v1/agents/{other}/eval-runs")["runs"]] == [
        ids[2]
    ]


def test_the_organization_s_runs_page_by_limit_and_next_cursor(new_api):
    api = new_api()
    ds = api.dataset(cases(1))
    a, b = api.agent(sleepy_spec()), api.agent(sleepy_spec())
    ids = [completed(api, agent, ds)["run_id"] for agent in (a, b, a, b, a)]
    newest_first = ids[::-1]

    pages, cursor = [], None
    while True:
        body = api.ok(
            "GET",
            "/api/v1/eval-runs",
            params={"limit": 2, **({"cursor": cursor} if cursor else {})},
        )
        pages.append([r["run_id"] for r in body["runs"]])
        cursor = body["next_cursor"]
        if cursor is None:
            break
        assert len(pages) < 5, pages
    assert pages[:3] == [newest_first[0:2], newest_first[2:4], newest_first[4:5]]
    assert [x for page in pages for x in page] == newest_first
    assert [r["run_id"] for r in api.ok("GET", "/api/v1/eval-runs")["runs"]] == newest_first

    # A cursor belongs to its listing and its organization.
    first = api.ok("GET", "/api/v1/eval-runs", params={"limit": 2})
    status, body = new_api().call(
        "GET", "/api/v1/eval-runs", params={"cursor": first["next_cursor"]}
    )
    assert status == 400 and body["error"]["field"] == "cursor", body
    status, body = api.call(
        "GET", f"/api/v1/agents/{a}/eval-runs", params={"cursor": first["next_cursor"]}
    )
    assert status == 400 and body["error"]["field"] == "cursor", body


def test_an_agent_s_runs_page_too(api):
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec())
    ids = [completed(api, agent, ds)["run_id"] for _ in range(3)]
    page1 = api.ok("GET", f"/api/v1/agents/{agent}/eval-runs", params={"limit": 2})
    page2 = api.ok(
        "GET",
        f"/api/v1/agents/{agent}/eval-runs",
        params={"limit": 2, "cursor": page1["next_cursor"]},
    )
    assert [r["run_id"] for r in page1["runs"] + page2["runs"]] == ids[::-1]


def test_a_dataset_s_runs_are_listed_newest_first(api):
    ds_a, ds_b = api.dataset(cases(1)), api.dataset(cases(1))
    agent = api.agent(sleepy_spec())
    on_a1 = completed(api, agent, ds_a)["run_id"]
    on_b = completed(api, agent, ds_b)["run_id"]
    on_a2 = completed(api, agent, ds_a)["run_id"]
    assert [r["run_id"] for r in api.ok("GET", f"/api/v1/datasets/{ds_a}/eval-runs")["runs"]] == [
        on_a2,
        on_a1,
    ]
    assert [r["run_id"] for r in api.ok("GET", f"/api/v1/datasets/{ds_b}/eval-runs")["runs"]] == [
        on_b
    ]


def test_draft_runs_filter_by_the_draft_as_it_is_now(api):
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec(), publish=1)
    old_draft = completed(api, agent, ds)["run_id"]
    completed(api, agent, ds, candidate="version", version=1)  # a version run: in neither list
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answer="0")})
    new_draft = completed(api, agent, ds)["run_id"]

    def listed(which: str) -> list[str]:
        return [
            r["run_id"]
            for r in api.ok("GET", f"/api/v1/agents/{agent}/eval-runs?draft={which}")["runs"]
        ]

    assert listed("current") == [new_draft]
    assert listed("earlier") == [old_draft]
    # Put back the spec the first run tested: that run is current again.
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec()})
    assert listed("current") == [old_draft]
    assert listed("earlier") == [new_draft]


def test_a_filter_applies_before_the_limit_and_the_cursor_follows_what_was_handed_out(api):
    """The publish dialog asks `?draft=current&limit=1`: newer runs of versions must not leave
    that page empty (issue 15)."""
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec(), publish=1)
    drafts = [completed(api, agent, ds)["run_id"]]
    for _ in range(2):
        completed(api, agent, ds, candidate="version", version=1)
    drafts.append(completed(api, agent, ds)["run_id"])
    completed(api, agent, ds, candidate="version", version=1)
    path = f"/api/v1/agents/{agent}/eval-runs"
    first = api.ok("GET", path, params={"draft": "current", "limit": 1})
    assert [r["run_id"] for r in first["runs"]] == [drafts[1]] and first["next_cursor"]
    second = api.ok(
        "GET", path, params={"draft": "current", "limit": 1, "cursor": first["next_cursor"]}
    )
    assert [r["run_id"] for r in second["runs"]] == [drafts[0]]
    if second["next_cursor"]:  # the index may not know yet that nothing follows
        rest = api.ok(
            "GET", path, params={"draft": "current", "limit": 1, "cursor": second["next_cursor"]}
        )
        assert rest == {"runs": [], "next_cursor": None}
    # unfiltered pages still hold `limit` runs each, every run once
    seen, cursor = [], None
    while True:
        page = api.ok("GET", path, params={"limit": 2, **({"cursor": cursor} if cursor else {})})
        assert len(page["runs"]) <= 2
        seen += [r["run_id"] for r in page["runs"]]
        if not (cursor := page["next_cursor"]):
            break
    assert len(seen) == len(set(seen)) == 5


# --- progress and live updates ---------------------------------------------------------------


def test_progress_counts_recorded_results_on_both_paths(api):
    ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec(answers={"c003": "no"}))
    run = api.start(agent, ds)
    early = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/progress")
    assert early["expected"] == early["total"] == 4 and 0 <= early["recorded"] <= 4
    api.wait(run["run_id"])
    evaluation_route = api.ok("GET", f"/api/evaluations/progress/{run['run_id']}")
    ours = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/progress")
    assert evaluation_route == ours
    assert ours == {
        "run_id": run["run_id"],
        "status": "completed",
        "phase": "done",
        "recorded": 4,
        "expected": 4,
        "total": 4,
        "fraction": 1.0,
        "passed": 3,
        "failed": 1,
        "incomplete": 0,
        "ungraded": 0,
        "in_flight": 0,
    }


def follow(
    api, path: str, wait: float = 2.0, deadline_s: float = 30.0
) -> tuple[list[dict], list[dict]]:
    """Long-poll `path` from the start until `done`; (events, responses)."""
    events: list[dict] = []
    responses: list[dict] = []
    cursor = ""
    deadline = time.monotonic() + deadline_s
    while True:
        body = api.ok("GET", path, params={"after": cursor, "wait": wait})
        responses.append(body)
        events += body["events"]
        if body["events"]:
            assert body["cursor"] == body["events"][-1]["cursor"]
        else:
            assert body["cursor"] == cursor
        cursor = body["cursor"]
        if body["done"]:
            return events, responses
        assert time.monotonic() < deadline, responses[-1]


def test_live_updates_deliver_every_attempt_once_in_recorded_order(api):
    ds = api.dataset(cases(6))
    agent = api.agent(sleepy_spec(sleep_ms=150, answers={"c002": "x"}))
    run = api.start(agent, ds)
    events, responses = follow(api, f"/api/v1/eval-runs/{run['run_id']}/events")

    assert sorted(e["case_id"] for e in events) == [f"c{i:03d}" for i in range(6)]  # each once
    cursors = [e["cursor"] for e in events]
    assert cursors == sorted(cursors) and len(set(cursors)) == 6
    assert all(e["type"] == "attempt_recorded" for e in events)
    assert {e["case_id"]: e["state"] for e in events}["c002"] == "failed"
    assert len(responses) >= 2  # it was live: some events came before the run ended
    last = responses[-1]
    assert (last["status"], last["done"], last["progress"]["recorded"]) == ("completed", True, 6)

    # Read again afterwards, the evaluation route gives the same events in the same order...
    again, _ = follow(api, f"/api/evaluations/stream/{run['run_id']}", wait=0)
    assert [(e["cursor"], e["case_id"]) for e in again] == [
        (e["cursor"], e["case_id"]) for e in events
    ]
    # ...and from any cursor, only what came after it.
    mid = api.ok(
        "GET", f"/api/evaluations/stream/{run['run_id']}", params={"after": cursors[2], "wait": 0}
    )
    assert [e["cursor"] for e in mid["events"]] == cursors[3:]
    end = api.ok(
        "GET", f"/api/v1/eval-runs/{run['run_id']}/events", params={"after": cursors[-1], "wait": 5}
    )
    assert (end["events"], end["cursor"], end["done"]) == ([], cursors[-1], True)


def test_a_long_poll_returns_when_the_wait_is_over_with_nothing_new(api):
    # The attempt cannot land until the gate opens: a short wait comes back empty, well before the
    # default wait (20 s) a poll that ignored `wait` would take.
    name = f"long-poll-{uuid.uuid4().hex[:8]}"
    ds = api.dataset(cases(1))
    agent = api.agent(
        {"runtime": "python", "entrypoint": "tests.support.agents:gated", "options": {"gate": name}}
    )
    run = api.start(agent, ds)
    started = time.monotonic()
    body = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/events", params={"wait": 0.3})
    assert time.monotonic() - started < 20
    assert (body["events"], body["cursor"], body["done"]) == ([], "", False)
    assert body["status"] in ("queued", "running")
    # ...and the longest wait (25 s) returns as soon as the attempt lands: the gate opens while it
    # waits.
    opener = threading.Timer(0.5, agents.gate(name).set)
    opener.start()
    started = time.monotonic()
    body = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/events", params={"wait": 25})
    opener.join()
    assert [e["case_id"] for e in body["events"]] == ["c000"]
    assert time.monotonic() - started < 25
    status, err = api.call(
        "GET", f"/api/v1/eval-runs/{run['run_id']}/events", params={"wait": "soon"}
    )
    assert status == 400 and err["error"]["field"] == "wait", err
    api.wait(run["run_id"])


# --- deleting --------------------------------------------------------------------------------


def test_deleting_an_ended_run_removes_it_and_its_attempts(api, container):
    ds = api.dataset(cases(3))
    agent = api.agent(sleepy_spec())
    keep = completed(api, agent, ds)["run_id"]
    gone = completed(api, agent, ds)["run_id"]
    assert len(container.runs.attempts(api.org_id, gone)) == 3

    assert api.ok("DELETE", f"/api/v1/eval-runs/{gone}") == {"run_id": gone, "deleted": True}
    for path in (
        f"/api/v1/eval-runs/{gone}",
        f"/api/v1/eval-runs/{gone}/progress",
        f"/api/evaluations/progress/{gone}",
    ):
        status, body = api.call("GET", path)
        assert status == 404 and body["error"]["field"] == "run_id", (path, body)
    assert container.runs.attempts(api.org_id, gone) == []
    assert [r["run_id"] for r in api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"]] == [
        keep
    ]
    assert len(api.ok("GET", f"/api/v1/eval-runs/{keep}")["results"]) == 3
    status, body = api.call("DELETE", f"/api/v1/eval-runs/{gone}")
    assert status == 404, body


def test_deleting_a_running_run_is_409_until_it_has_ended(api, container):
    ds = api.dataset(cases(4))
    h = agents.hold(f"delete-{uuid.uuid4().hex}")
    agent = api.agent(agents.held_spec(h.name))
    run = api.start(agent, ds)
    h.wait_in_flight(3)  # its cases are held: it cannot end before the test lets it
    status, body = api.call("DELETE", f"/api/v1/eval-runs/{run['run_id']}")
    assert status == 409 and body["error"]["code"] == "conflict", body
    assert api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["status"] == "running"

    api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/cancel")
    h.open()
    api.wait(run["run_id"], until=lambda p: p["in_flight"] == 0)
    api.ok("DELETE", f"/api/v1/eval-runs/{run['run_id']}")
    assert api.call("GET", f"/api/v1/eval-runs/{run['run_id']}")[0] == 404
    assert container.runs.attempts(api.org_id, run["run_id"]) == []
