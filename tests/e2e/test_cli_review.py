"""`assay review list|show|decide|undo|send|criterion`, the review queue from the command line, run
in-process through the real entry point (`assay_local.cli.main`) against the embedded stack: what
each prints, `--json` (the API's answer as it is), and what an error prints (exit 3, one line that
names what fixes it). The data is made through the HTTP API as `tests/e2e/test_review.py` makes
it: a dataset of 10 cases and a run of v2 (which breaks c002, c005 and c007) against v1."""

from __future__ import annotations

import json
import re

import pytest

from chalicelib.services import suites
from tests.e2e.conftest import cases, sleepy_spec
from tests.e2e.test_review import regressed, waiting
from tests.e2e.test_review_suites import _refused
from tests.support.fake_openai import FakeOpenAI

ME = "tester@example.com"


def _rows(out: str) -> list[list[str]]:
    """A table's lines split on its column gaps (two spaces or more)."""
    return [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]


def _token(who) -> str:
    return who.http.headers["Authorization"].removeprefix("Bearer ")


def _one_error_line(done) -> str:
    assert done.code == 3, done
    assert done.out == ""
    [line] = done.err.splitlines()
    assert line.startswith("assay: "), line
    return line


def test_the_list_shows_each_item_and_the_waiting_count_and_json_is_the_api_s_document(cli, api):
    ds, agent, run = regressed(api)
    done = cli("review", "list", ds)
    assert done.code == 0, done.err
    header, columns, *rows = done.out.splitlines()
    assert header == f"dataset {ds}: 3 answers waiting for review"
    assert _rows(columns)[0] == ["ITEM", "CASE", "ANSWERED BY", "WHY", "STATE"]
    items = waiting(api, ds)
    listed = {r[1]: r for r in _rows("\n".join(rows))}
    assert sorted(listed) == ['c002 "question 2"', 'c005 "question 5"', 'c007 "question 7"']
    assert listed['c005 "question 5"'] == [
        items["c005"]["item_id"],
        'c005 "question 5"',
        f"{agent} v2",
        "confirmed regression",
        "waiting",
    ]
    assert "None" not in done.out

    as_json = json.loads(cli("review", "list", ds, "--json").out)
    assert (as_json["waiting"], as_json["next_cursor"]) == (3, None)
    assert {i["case_id"]: i for i in as_json["items"]} == items

    first = cli("review", "list", ds, "--limit", "2")
    assert len(_rows(first.out)) == 2 + 2 + 1  # the header, the columns, two items, the rest
    assert first.out.splitlines()[-1] == "(the first 2; --all lists every item)"
    every = cli("review", "list", ds, "--limit", "2", "--all")
    assert len(_rows(every.out)) == 2 + 3 and "--all lists" not in every.out
    paged = json.loads(cli("review", "list", ds, "--limit", "2", "--all", "--json").out)
    assert sorted(i["item_id"] for i in paged["items"]) == sorted(
        i["item_id"] for i in items.values()
    )
    assert paged["next_cursor"] is None
    one_page = json.loads(cli("review", "list", ds, "--limit", "2", "--json").out)
    assert len(one_page["items"]) == 2 and one_page["next_cursor"]

    decided = cli("review", "list", ds, "--state", "decided")
    assert decided.out.splitlines() == [
        f"dataset {ds}: 3 answers waiting for review",
        "no items (--state decided): assay review send RUN sends a run's failed answers to review",
    ]
    mine = json.loads(cli("review", "list", ds, "--agent", agent, "--json").out)
    assert len(mine["items"]) == 3
    other = json.loads(cli("review", "list", ds, "--agent", "agt_other", "--json").out)
    assert other["items"] == []
    assert json.loads(cli("review", "list", ds, "--tag", "refunds", "--json").out)["items"] == []
    assert run["routed_to_review"] == 3


def test_a_decision_prints_what_it_changed_show_gives_the_audit_and_undo_puts_it_back(cli, api):
    ds, _, run = regressed(api)
    run_id = run["run_id"]
    item = waiting(api, ds)["c005"]["item_id"]

    shown = cli("review", "show", ds, item)
    assert shown.code == 0, shown.err
    assert shown.out.splitlines() == [
        f"review item {item} of dataset {ds} v1: case c005, answered by {run['agent_id']} v2 in "
        f"run {run_id} (confirmed regression); waiting",
        "question:",
        "  question 5",
        "answer:",
        "  7",
        "expects:",
        "  reference: 42",
        "scorers (failed):",
        "  equals failed (score 0): expected '42', got '7'",
        "audit: nobody has decided it yet",
    ]

    done = cli("review", "decide", ds, item, "pass", "--note", "7 is right\nfor this phrasing")
    assert done.code == 0, done.err
    assert done.out.splitlines() == [
        f'review item {item} (c005 "question 5"): decided pass, corrected by {ME}',
        f"  run {run_id}: passed 7 -> 8 of 10; verdict partial; confirmed regressions 3 -> 2",
    ]
    assert api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"]["passed"] == 8
    cases = cli("cases", run_id, "--outcome", "unchanged").out
    assert f"  candidate: corrected by {ME} (pass)" in cases.splitlines()
    rows = {r[0]: r for r in _rows(cli("review", "list", ds).out)[2:]}
    assert rows[item][-1] == f"decided pass, corrected by {ME}"
    assert cli("review", "list", ds).out.startswith(f"dataset {ds}: 2 answers waiting")

    again = cli("review", "decide", ds, item, "fail")
    line = _one_error_line(again)
    assert "409 conflict" in line and f"review item {item} is decided already (pass)" in line
    assert line.endswith(f"-- take the decision back first: assay review undo {ds} {item}")

    audited = cli("review", "show", ds, item).out.splitlines()
    assert "note: 7 is right for this phrasing" in audited
    at = api.ok("GET", f"/api/v1/datasets/{ds}/review/{item}")["audit"][0]["at"]
    assert audited[-3:] == [
        "audit:",
        f'  {at} {ME} decided pass (waiting -> decided): "7 is right for this phrasing"',
        f"    run {run_id}: passed 7 -> 8 of 10; verdict partial; confirmed regressions 3 -> 2",
    ]

    undone = cli("review", "undo", ds, item)
    assert undone.code == 0, undone.err
    assert undone.out.splitlines() == [
        f'took back the decision on review item {item} (c005 "question 5"): it waits again; '
        "the scorers' word stands",
        f"  run {run_id}: passed 8 -> 7 of 10; verdict partial; confirmed regressions 2 -> 3",
    ]
    assert api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"]["passed"] == 7
    line = _one_error_line(cli("review", "undo", ds, item))
    assert "409 conflict" in line and "is not decided: nothing to undo" in line
    assert line.endswith(f"-- assay review show {ds} {item} shows where it stands")

    history = json.loads(cli("review", "show", ds, item, "--json").out)
    assert [a["action"] for a in history["audit"]] == ["decide", "undo"]
    assert history["state"] == "waiting" and history["item_id"] == item
    lines = cli("review", "show", ds, item).out.splitlines()
    assert f"  {history['audit'][1]['at']} {ME} took back pass (decided -> waiting)" in lines

    as_json = json.loads(cli("review", "decide", ds, item, "fail", "--json").out)
    assert as_json["item"]["verdict"] == "fail" and as_json["item"]["corrected"] is False
    [moved] = as_json["audit"]["runs"]
    assert moved["before"]["passed"] == moved["after"]["passed"] == 7
    upheld = cli("review", "list", ds, "--state", "decided").out
    assert f"decided fail by {ME}" in upheld
    back = json.loads(cli("review", "undo", ds, item, "--json").out)
    assert back["audit"]["action"] == "undo" and back["item"]["state"] == "waiting"


def test_a_removed_member_s_decision_reads_a_former_member(cli, api, new_api):
    ds, _, _ = regressed(api)
    item = waiting(api, ds)["c002"]["item_id"]
    editor = new_api(org_id=api.org_id, user_id="ed@example.com", role="editor")
    editor.ok("POST", f"/api/v1/datasets/{ds}/review/{item}/decision", json={"verdict": "pass"})
    rows = {r[0]: r for r in _rows(cli("review", "list", ds).out)[2:]}
    assert rows[item][-1] == "decided pass, corrected by ed@example.com"
    api.ok("DELETE", "/api/v1/members/ed@example.com")
    rows = {r[0]: r for r in _rows(cli("review", "list", ds).out)[2:]}
    assert rows[item][-1] == "decided pass, corrected by a former member"
    shown = cli("review", "show", ds, item).out
    assert "ed@example.com" not in shown
    assert " a former member decided pass (waiting -> decided)" in shown


def test_errors_are_exit_3_and_one_line_naming_what_fixes_them(cli, api, new_api):
    ds, _, run = regressed(api)
    item = waiting(api, ds)["c007"]["item_id"]

    line = _one_error_line(cli("review", "show", ds, "ri-nope"))
    assert "404 not_found: review item ri-nope not found (field item_id)" in line
    assert line.endswith(f"-- assay review list {ds} --all lists the items of the dataset's queue")
    missing = cli("review", "decide", ds, "ri-nope", "pass", "--json")
    assert missing.code == 3
    error = json.loads(missing.out)["error"]
    assert (error["status"], error["field"]) == (404, "item_id")
    assert error["fix"].startswith(f"assay review list {ds}")

    bad = cli("review", "decide", ds, item, "passs")
    assert bad.code == 3 and bad.out == ""
    assert bad.err.splitlines()[-1] == (
        "assay review decide: error: argument verdict: invalid choice: 'passs' (choose from "
        "'pass', 'fail'); did you mean pass?"
    )
    long_note = _one_error_line(cli("review", "decide", ds, item, "pass", "--note", "x" * 4001))
    assert "(field note)" in long_note
    assert long_note.endswith("-- shorten --note to 4000 characters or fewer")
    blank = _one_error_line(cli("review", "decide", ds, item, "pass", "--note", "  "))
    assert blank.startswith("assay: --note is empty")
    limit = cli("review", "list", ds, "--limit", "500")
    assert limit.code == 3 and limit.err.splitlines()[-1].endswith(
        "argument --limit: '500' is not a whole number of items from 1 to 200"
    )

    viewer = new_api(org_id=api.org_id, user_id="vi@example.com", role="viewer")
    as_viewer = ("--token", _token(viewer))
    assert cli("review", "list", ds, *as_viewer).code == 0  # datasets:view is enough to read
    refused = _one_error_line(cli("review", "decide", ds, item, "pass", *as_viewer))
    assert "403 forbidden" in refused and "datasets:edit" in refused
    error = json.loads(cli("review", "undo", ds, item, *as_viewer, "--json").out)["error"]
    assert (error["status"], error["permission"]) == (403, "datasets:edit")
    refused = _one_error_line(cli("review", "send", run["run_id"], *as_viewer))
    assert "403 forbidden" in refused and "datasets:edit" in refused
    assert waiting(api, ds)["c007"]["state"] == "waiting"

    no_tag = _one_error_line(cli("review", "criterion", ds, item))
    assert no_tag.startswith("assay: no --tag: name the case tags")
    no_note = _one_error_line(cli("review", "criterion", ds, item, "--tag", "refunds"))
    assert "400 invalid_input" in no_note and "(field note)" in no_note
    assert no_note.endswith(
        f"-- take the decision back (assay review undo {ds} {item}), then decide it again "
        "with --note TEXT"
    )
    cli("review", "decide", ds, item, "fail", "--note", "7 is never right")
    no_judge = _one_error_line(cli("review", "criterion", ds, item, "--tag", "refunds"))
    assert "grades with no judge" in no_judge and "(field scoring.settings.judge)" in no_judge


def test_send_sends_a_side_s_failed_answers_once_and_says_why_the_others_did_not(cli, api):
    ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec(answers={"c001": "7", "c003": "9"}))
    run_id = api.start(agent, ds)["run_id"]
    assert api.wait(run_id)["status"] == "completed"

    sent = cli("review", "send", run_id)
    assert sent.code == 0, sent.err
    assert sent.out.splitlines() == [f"sent 2 failed answers of run {run_id} (candidate) to review"]
    items = waiting(api, ds)
    rows = {r[0]: r for r in _rows(cli("review", "list", ds).out)[2:]}
    assert rows[items["c001"]["item_id"]][3] == f"sent by {ME}"

    again = cli("review", "send", run_id, "--side", "candidate")
    assert again.code == 0, again.err
    head, count, *why = again.out.splitlines()
    assert head == f"sent 0 failed answers of run {run_id} (candidate) to review"
    assert count == "not sent: 2 answers"
    assert [w.split(":")[0] for w in why] == ["  c001", "  c003"]
    assert all(items[w.split(":")[0].strip()]["item_id"] in w for w in why), why

    as_json = json.loads(cli("review", "send", run_id, "--json").out)
    assert as_json["routed_to_review"] == 0 and len(as_json["not_sent"]) == 2
    no_side = _one_error_line(cli("review", "send", run_id, "--side", "baseline"))
    assert f"eval run {run_id} has no baseline side (field side)" in no_side
    assert no_side.endswith("-- name the side it has with --side (candidate or baseline)")

    ds, _, run = regressed(api)
    clean = cli("review", "send", run["run_id"], "--side", "baseline")
    assert clean.out.splitlines() == [
        f"sent 0 failed answers of run {run['run_id']} (baseline) to review",
        "nothing to send: the baseline has no failed first answer",
    ]


NOTE = "The reply names the 30-day refund window."
LOW = {"grades": [{"criterion_id": "correct", "score": 1, "reason": "misses the point"}]}


def test_a_decision_s_note_becomes_a_judge_criterion(cli, api):
    with FakeOpenAI({"rules": [], "default": {"answer": LOW}}) as fake:
        api.ok(
            "POST",
            "/api/v1/model-profiles",
            json={
                "model_profile_id": "grader",
                "model": "m",
                "settings": {"base_url": fake.base_url},
            },
        )
        judge = api.ok("POST", "/api/v1/judges", json={"name": "quality"})["judge_id"]
        api.ok(
            "POST",
            f"/api/v1/judges/{judge}/versions",
            json={
                "model_profile_id": "grader",
                "criteria": [{"criterion_id": "correct", "text": "The answer is right."}],
            },
        )
        ds = api.ok("POST", "/api/v1/datasets", json={"name": "judged"})["dataset_id"]
        api.ok(
            "POST",
            f"/api/v1/datasets/{ds}/versions",
            json={
                "scoring": {"required": ["judge"], "settings": {"judge": {"judge_id": judge}}},
                "cases": [
                    {"case_id": "c0", "input": "refund?", "reference": "good", "tags": ["refunds"]},
                    {"case_id": "c1", "input": "hello", "reference": "good", "tags": ["tone"]},
                ],
            },
        )
        run_id = api.start(api.agent(sleepy_spec(answer="meh")), ds)["run_id"]
        assert api.wait(run_id)["status"] == "completed"
    sent = cli("review", "send", run_id)
    assert (
        sent.out.splitlines()[0] == f"sent 2 failed answers of run {run_id} (candidate) to review"
    )
    item = waiting(api, ds)["c0"]["item_id"]
    shown = cli("review", "show", ds, item).out.splitlines()
    assert "tags: refunds" in shown
    assert any(
        line.startswith("  judge failed") and "misses the point" in line for line in shown
    ), shown
    cli("review", "decide", ds, item, "fail", "--note", NOTE)

    unknown = _one_error_line(cli("review", "criterion", ds, item, "--tag", "billing"))
    assert "(field tags[0])" in unknown
    assert unknown.endswith("-- name a tag the dataset's cases carry with --tag (repeatable)")
    added = cli("review", "criterion", ds, item, "--tag", "refunds", "--criterion-id", "window")
    assert added.code == 0, added.err
    [message] = added.out.splitlines()
    assert message.startswith(f"judge {judge} v2 grades criterion window")
    criteria = api.ok("GET", f"/api/v1/judges/{judge}/versions/2")["spec"]["criteria"]
    assert [k["criterion_id"] for k in criteria] == ["correct", "window"]
    again = json.loads(
        cli(
            "review",
            "criterion",
            ds,
            item,
            "--tag",
            "refunds",
            "--criterion-id",
            "window",
            "--json",
        ).out
    )
    assert (again["published"], again["version"]) == (False, 2)
    assert again["criterion"]["source"] == f"review item {item} (case c0)"
    assert again["criterion"]["text"] == NOTE and again["criterion"]["tags"] == ["refunds"]


@pytest.fixture
def quiet_suites(api, container):
    """Pause the test's suites afterwards, so later ticks of the shared stack leave them alone."""
    yield
    for row in container.suites.of_org(api.org_id):
        suites.pause(container, row, "test over")


def test_decide_and_undo_say_what_they_did_to_a_guard_s_result(cli, api, quiet_suites):
    ds, _, guard, _ = _refused(api)
    items = sorted(waiting(api, ds).values(), key=lambda i: i["case_id"])
    for item in items[:2]:
        cli("review", "decide", ds, item["item_id"], "pass")
    last = items[2]["item_id"]
    run_id = items[2]["run_id"]
    done = cli("review", "decide", ds, last, "pass")
    assert done.code == 0, done.err
    assert done.out.splitlines() == [
        f'review item {last} (c002 "question 2"): decided pass, corrected by {ME}',
        f"  run {run_id}: passed 4 -> 5 of 5; verdict partial -> pass; "
        "confirmed regressions 1 -> 0",
        f"  suite {guard} (run {run_id}): failed -> passed",
    ]
    undone = cli("review", "undo", ds, last)
    assert undone.out.splitlines()[1:] == [
        f"  run {run_id}: passed 5 -> 4 of 5; verdict pass -> partial; "
        "confirmed regressions 0 -> 1",
        f"  suite {guard} (run {run_id}): passed -> failed",
    ]
    shown = cli("review", "show", ds, last).out.splitlines()
    assert shown.count(f"    suite {guard} (run {run_id}): failed -> passed") == 1
    assert shown.count(f"    suite {guard} (run {run_id}): passed -> failed") == 1
