"""A suite and the judge that grades its dataset, end to end (docs/guides/suites.md, "A judge
published again"): an unguarded suite follows the judge's latest publication, so a republish makes
its next comparison inconclusive once, tells its owner, and the run after that compares under the
new judge; a guard keeps the publication it was pinned to, and grades nothing when it is gone.

The judge is asked through the `openai` runtime on a model profile whose `base_url` is a local
scripted OpenAI-compatible server (`FakeOpenAI`); the agent is the `sleepy` python agent.
"""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.services import suites
from tests.e2e.conftest import Api, sleepy_spec, wait_for
from tests.support.fake_openai import FakeOpenAI
from tests.support.judges import grader_profile


def grades(score: int) -> dict[str, Any]:
    return {"grades": [{"criterion_id": "correct", "score": score, "reason": f"graded {score}"}]}


STRICT = "strictly"
"""Words only the second publication's criterion holds: the fake grades by them."""
SCRIPT = {
    "rules": [
        # The second publication grades the answer "fine" as failing; the first passed it.
        {"regex": rf"ANSWER:\nfine[\s\S]*{STRICT}", "answer": grades(2)},
    ],
    "default": {"answer": grades(5)},
}
ANSWERS = {"c0": "good", "c1": "fine", "c2": "good", "c3": "good", "c4": "good"}
CASES = [{"case_id": f"c{i}", "input": f"question {i}", "reference": "good"} for i in range(5)]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(SCRIPT) as server:
        yield server


@pytest.fixture(autouse=True)
def quiet_suites(api, container):
    """Pause this test's suites afterwards, so later ticks of the shared stack leave them alone."""
    yield
    for row in container.suites.of_org(api.org_id):
        suites.pause(container, row, "test over")


def publish_judge(api: Api, judge: str, text: str) -> int:
    return int(
        api.ok(
            "POST",
            f"/api/v1/judges/{judge}/versions",
            json={
                "model_profile_id": "grader",
                "threshold": 4,
                "criteria": [{"criterion_id": "correct", "text": text}],
            },
        )["version"]
    )


@pytest.fixture
def judged(api, fake) -> tuple[str, str, str]:
    """Judge `quality` v1 on the fake's model; a dataset graded by its latest publication; an agent
    with two published versions answering alike, version 2 served in production. Returns (judge,
    dataset, agent)."""
    fake.set_script(SCRIPT)
    grader_profile(api, fake.base_url)
    judge = api.ok("POST", "/api/v1/judges", json={"name": "quality"})["judge_id"]
    publish_judge(api, judge, "The answer says what the reference says.")
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "judged"})["dataset_id"]
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["judge"], "settings": {"judge": {"judge_id": judge}}},
            "cases": CASES,
        },
    )
    agent = api.agent(sleepy_spec(answers=ANSWERS), publish=1)
    api.ok(
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        json={"spec": sleepy_spec(answers=ANSWERS, sleep_ms=1)},
    )
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    return judge, ds, agent


def results(api: Api, agent: str, suite_id: str) -> list[dict[str, Any]]:
    return api.ok("GET", f"/api/v1/agents/{agent}/suites/{suite_id}/results")["results"]


def run_now(api: Api, agent: str, suite_id: str) -> dict[str, Any]:
    """Run the suite by hand and wait for its result (the newest)."""
    before = len(results(api, agent, suite_id))
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{suite_id}/run")
    return wait_for(lambda: (r := results(api, agent, suite_id)) and len(r) > before and r[0])


def notices(api: Api) -> list[dict[str, Any]]:
    return api.ok("GET", "/api/v1/notifications")["notifications"]


def cancelled_run(api: Api, stack, agent: str, suite_id: str) -> dict[str, Any]:
    """Run the suite by hand with the pollers paused, so the run is still queued, and cancel it;
    returns its result (inconclusive: cancelled)."""
    before = len(results(api, agent, suite_id))
    stack.pause_pollers()
    try:
        api.ok("POST", f"/api/v1/agents/{agent}/suites/{suite_id}/run")
        run_id = api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"][0]["run_id"]
        api.ok("POST", f"/api/v1/eval-runs/{run_id}/cancel")
    finally:
        stack.resume_pollers()
    latest = wait_for(lambda: (r := results(api, agent, suite_id)) and len(r) > before and r[0])
    assert latest["result"] == "inconclusive" and latest["run_id"] == run_id, latest
    return latest


def judge_versions(api: Api, run_id: str) -> dict[str, set[int]]:
    """The judge versions that graded each arm's answers in a run."""
    out: dict[str, set[int]] = {}
    for r in api.ok("GET", f"/api/v1/eval-runs/{run_id}")["results"]:
        for s in r["scores"]:
            if s["scorer"] == "judge" and s["fingerprint"] and s["passed"] is not None:
                out.setdefault(r["arm_id"], set()).add(s["fingerprint"]["judge_version"])
    return out


def test_a_republished_judge_makes_the_next_result_inconclusive_once_and_tells_the_owner(
    api, judged, stack
):
    judge, ds, agent = judged
    sid = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={"dataset_id": ds, "name": "nightly", "threshold": {"min_pass_rate": 0.6}},
    )["suite_id"]
    first = run_now(api, agent, sid)
    assert first["result"] == "passed", first
    # A bad result first: its owner is told, and a run of bad results on version 2 begins.
    cancelled_run(api, stack, agent, sid)
    assert [n["kind"] for n in notices(api)] == ["suite_result"]

    publish_judge(api, judge, f"The answer says {STRICT} what the reference says.")
    after = run_now(api, agent, sid)
    assert after["result"] == "inconclusive", after
    run = api.ok("GET", f"/api/v1/eval-runs/{after['run_id']}")
    assert run["reused_baseline_run_id"] == first["run_id"]  # compared with the last pass ...
    assert judge_versions(api, after["run_id"]) == {"candidate": {2}, "baseline": {1}}
    assert after["reasons"] == [
        f"the comparison is invalid: judge {judge} was published again since the run it is "
        "compared with (version 1 graded that run, version 2 grades now), so a flip would say "
        "something about the grading, not the agent; the next run compares under version 2"
    ]
    assert after["cases_broken"] == []  # ... whose flip (c1) says nothing about the agent
    # Told, although the owner was told of this run of bad results already: the judge is news.
    told = wait_for(lambda: [n for n in notices(api) if n["kind"] == "suite_judge_republished"])
    [notice] = told
    assert notice["title"] == (
        f"Suite nightly: inconclusive on version 2 - judge {judge} was published again"
    )
    assert notice["body"].startswith(
        f"Judge {judge} was published again: version 1 graded the run this result is compared "
        "with, version 2 grades now."
    )
    assert f"Eval run: {after['run_id']}" in notice["body"]
    assert notice["links"]["result_id"] == after["result_id"]

    # A run cancelled next is one more bad result of the same run of them: nobody is told again,
    # and it does not make the suite compare with the run graded by version 1 once more.
    cancelled_run(api, stack, agent, sid)
    assert len(notices(api)) == 2

    again = run_now(api, agent, sid)
    assert again["result"] == "passed", again
    paired = api.ok("GET", f"/api/v1/eval-runs/{again['run_id']}")
    assert [a["version"] for a in paired["arms"]] == [2, 1]  # the version before beside it
    assert paired["reused_baseline_run_id"] is None
    assert judge_versions(api, again["run_id"]) == {"candidate": {2}, "baseline": {2}}
    # ... and that pass is what the next run is compared with, under version 2.
    last = run_now(api, agent, sid)
    assert last["result"] == "passed", last
    ran = api.ok("GET", f"/api/v1/eval-runs/{last['run_id']}")
    assert ran["reused_baseline_run_id"] == again["run_id"]
    assert judge_versions(api, last["run_id"]) == {"candidate": {2}, "baseline": {2}}
    assert len(notices(api)) == 2


def test_a_guard_keeps_its_judge_and_a_missing_one_leaves_grading_incomplete(
    api, judged, stack, monkeypatch
):
    from chalicelib.adapters.table_base import org_key
    from chalicelib.adapters.tables_catalog import JudgeRow
    from chalicelib.services import judges

    judge, ds, agent = judged
    guard = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={"dataset_id": ds, "guards": True, "threshold": {"min_pass_rate": 0.6}},
    )
    sid = guard["suite_id"]
    assert guard["pins"]["judge_version"] == 1
    publish_judge(api, judge, f"The answer says {STRICT} what the reference says.")
    # Republishing the judge changes neither the guard's runs nor grading their answers again:
    # version 2 would fail c1's answer "fine"; version 1, the pinned one, passes it.
    first = run_now(api, agent, sid)
    assert first["result"] == "passed", first
    assert judge_versions(api, first["run_id"]) == {"candidate": {1}}
    c1 = f"{first['run_id']}:candidate#c1#001:judge"
    graded = api.ok(
        "POST", f"/api/v1/eval-runs/{first['run_id']}/grade-again", json={"score_ids": [c1]}
    )
    assert [s["state"] for s in graded["scores"]] == ["passed"]
    assert judge_versions(api, first["run_id"]) == {"candidate": {1}}

    # The pinned publication is gone by the time a run's answers are graded (and no process
    # remembers it): they are left incomplete, never graded by the latest publication.
    stack.pause_pollers()
    try:
        api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
        JudgeRow.get(org_key(api.org_id, judge), 1).delete()
        monkeypatch.setattr(judges, "_versions", {})
    finally:
        stack.resume_pollers()
    missing = wait_for(lambda: (r := results(api, agent, sid)) and len(r) == 2 and r[0])
    everything = ["c0", "c1", "c2", "c3", "c4"]
    assert missing["result"] == "inconclusive", missing
    assert missing["cases_undecided"] == everything
    assert missing["reasons"] == ["5 cases left undecided: c0, c1, c2, c3, c4"]
    run = api.ok("GET", f"/api/v1/eval-runs/{missing['run_id']}")
    candidate = [r for r in run["results"] if r["arm_id"] == "candidate"]
    assert {r["state"] for r in candidate} == {"incomplete"}
    assert {s["reason"] for r in candidate for s in r["scores"]} == {
        f"judge skipped: version 1 of judge {judge} not found"
    }
    assert judge_versions(api, missing["run_id"]) == {"baseline": {1}}  # the earlier pass's
    # Grading them again does not fall back either; nor does grading the first run's again.
    again = api.ok("POST", f"/api/v1/eval-runs/{missing['run_id']}/grade-again")
    assert again["still_ungraded"] == [
        f"{missing['run_id']}:candidate#{cid}#001:judge" for cid in everything
    ]
    assert {s["state"] for s in again["scores"]} == {"incomplete"}
    kept = api.ok(
        "POST", f"/api/v1/eval-runs/{first['run_id']}/grade-again", json={"score_ids": [c1]}
    )
    assert kept["scores"][0]["kept"] == "passed" and kept["graded"] == 0
    assert judge_versions(api, missing["run_id"]) == {"baseline": {1}}
    assert judge_versions(api, first["run_id"]) == {"candidate": {1}}

    # Missing before the run starts: the guard does not run, and says why.
    runs_before = len(api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"])
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
    not_run = results(api, agent, sid)[0]
    assert not_run["result"] == "not_run" and not_run["run_id"] is None, not_run
    assert not_run["reasons"] == [
        f"the judge it is pinned to, {judge} version 1, is missing: a guard never grades with "
        "another publication of it; moving its pins (needs promotions:override) grades with the "
        "latest"
    ]
    assert len(api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"]) == runs_before
