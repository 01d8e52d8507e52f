"""The model judge end to end: a local OpenAI-compatible server process returns scripted grades
(docs/concepts/verdicts.md, docs/guides/judges.md, grading again).

The agent is the `sleepy` python agent answering per case; the judge is asked through the
`openai` runtime on a model profile whose `base_url` is the fake server.
"""

from __future__ import annotations

import uuid
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import sleepy_spec
from tests.support.agents import held_spec, hold
from tests.support.fake_openai import FakeOpenAI
from tests.support.judges import grader_profile

USAGE = {"prompt_tokens": 1000, "completion_tokens": 100}
"""Every judge reply's usage: at 1 and 2 USD per 1M tokens, 1000 + 200 = 1200 micro-USD a call."""


def grades(correct: int, polite: int = 5) -> dict[str, Any]:
    return {
        "grades": [
            {"criterion_id": "correct", "score": correct, "reason": f"correct {correct}"},
            {"criterion_id": "polite", "score": polite, "reason": "tone"},
        ]
    }


SCRIPT = {
    "rules": [
        {"contains": "ANSWER:\nbad", "answer": grades(2), "usage": USAGE},
        {"contains": "ANSWER:\nbroken", "answer": "I would rather not grade this.", "usage": USAGE},
        {"contains": "ANSWER:\ndown", "status": 503, "error": "overloaded"},
    ],
    "default": {"answer": grades(5), "usage": USAGE},
}

ANSWERS = {"c0": "good", "c1": "bad", "c2": "broken", "c3": "good", "c4": "down"}
CASES = [
    {
        "case_id": f"c{i}",
        "input": f"question {i}",
        "reference": "good",
        "tags": ["tone"] if i == 3 else [],
    }
    for i in range(5)
]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(SCRIPT) as server:
        yield server


@pytest.fixture
def judge_setup(api, fake):
    """A judge (criteria `correct` for every case, `polite` for cases tagged `tone`) on the fake's
    model, and a dataset graded by it (latest version)."""
    fake.set_script(SCRIPT)
    fake.reset()
    grader_profile(
        api, fake.base_url, price={"input_per_mtok_usd": "1", "output_per_mtok_usd": "2"}
    )
    judge = api.ok("POST", "/api/v1/judges", json={"name": "quality"})["judge_id"]
    publish_judge(api, judge)
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "judged"})["dataset_id"]
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["judge"], "settings": {"judge": {"judge_id": judge}}},
            "cases": CASES,
        },
    )
    return judge, ds


def publish_judge(api, judge: str, **extra: Any) -> dict[str, Any]:
    return api.ok(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={
            "model_profile_id": "grader",
            "threshold": 4,
            "prompt_version": "1",
            "criteria": [
                {"criterion_id": "correct", "text": "The answer says what the reference says."},
                {"criterion_id": "polite", "text": "The answer is polite.", "tags": ["tone"]},
            ],
            **extra,
        },
    )


def by_case(view: dict[str, Any], arm: str = "candidate") -> dict[str, dict[str, Any]]:
    return {r["case_id"]: r for r in view["results"] if r["arm_id"] == arm and r["attempt"] == 1}


def judge_score(attempt: dict[str, Any]) -> dict[str, Any]:
    return next(s for s in attempt["scores"] if s["scorer"] == "judge")


def test_the_judge_grades_with_its_fingerprint_and_a_failure_stays_its_own_case(
    api, fake, judge_setup
):
    judge, ds = judge_setup
    agent = api.agent(sleepy_spec(answers=ANSWERS))
    est = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, "candidate": "draft"},
    )
    # No history: the judge at its own price, 2000 in x 1 + 400 out x 2 = 2800 micro-USD a call, 5
    # cases; the unpriced agent at $0.05 a case.
    assert est["judge"]["basis"] == "fallback" and est["judge"]["per_call_usd"] == 0.0028
    assert est["judge"]["first_pass_usd"] == 0.014 and est["judged_cases"] == 5
    assert est["first_pass_usd"] == 0.264  # 5 x 0.05 + 0.014

    run = api.start(agent, ds)
    api.wait(run["run_id"])
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    got = by_case(view)
    assert {cid: a["state"] for cid, a in got.items()} == {
        "c0": "passed",
        "c1": "failed",
        "c2": "incomplete",
        "c3": "passed",
        "c4": "incomplete",
    }
    fp = judge_score(got["c0"])["fingerprint"]
    assert fp["judge_id"] == judge and fp["judge_version"] == 1 and fp["model"] == "judge-model"
    assert fp["prompt_version"] == "1" and len(fp["rubric_hash"]) == 64
    assert (
        judge_score(got["c1"])["passed"] is False
        and "correct: 2/5" in judge_score(got["c1"])["reason"]
    )
    assert (
        judge_score(got["c2"])["passed"] is None
        and "judge failed" in judge_score(got["c2"])["reason"]
    )
    assert (
        "503" in judge_score(got["c4"])["reason"]
        or "overloaded" in judge_score(got["c4"])["reason"]
    )
    assert view["ungraded_score_ids"] == [
        f"{run['run_id']}:candidate#c2#001:judge",
        f"{run['run_id']}:candidate#c4#001:judge",
    ]
    # Asked at temperature 0 on the judge's model; `polite` only reaches the case tagged `tone`.
    asked = [r["body"] for r in fake.requests()]
    assert {b["model"] for b in asked} == {"judge-model"} and {b["temperature"] for b in asked} == {
        0
    }
    by_question = {
        b["messages"][-1]["content"].split("\n")[1]: b["messages"][-1]["content"] for b in asked
    }
    assert "- polite:" in by_question["question 3"] and "- polite:" not in by_question["question 0"]
    # 4 replies priced (c0, c1, c2, c3: the 503 costs nothing) x 1200 micro-USD.
    assert view["judge_calls"] == 4 and view["judge_cost_usd"] == 0.0048
    assert api.ok("GET", f"/api/v1/agents/{agent}/budget")["spent_usd"] == 0.0048
    # A judge that failed (a reply it could not read, a 503) leaves its answer incomplete, not
    # ungraded: that is only for an answer no required scorer applies to
    # (docs/concepts/verdicts.md).
    quality = view["summaries"]["candidate"]["quality"]
    assert (quality["incomplete"], quality["ungraded"]) == (2, 0)


def test_grading_again_reads_the_kept_answer_and_recomputes_the_outcome(
    api, fake, judge_setup, stack
):
    from bench import agents as bench_agents

    _, ds = judge_setup
    probe = f"judge-{api.org_id}"
    agent = api.agent(sleepy_spec(answers=ANSWERS, probe=probe))
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    before = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert before["outcome"]["passed"] == 2 and before["outcome"]["incomplete"] == 2
    assert before["progress"]["incomplete"] == 2 and before["progress"]["ungraded"] == 0
    agent_calls = bench_agents.calls(probe)

    fake.set_script(
        {
            "rules": [{"contains": "ANSWER:\nbad", "answer": grades(2), "usage": USAGE}],
            "default": {"answer": grades(4), "usage": USAGE},
        }
    )
    status, body = api.call("POST", f"/api/v1/eval-runs/{run['run_id']}/grade-again")
    assert status == 200, body
    assert body["graded"] == 2 and body["changed"] == 2 and body["still_ungraded"] == []
    assert {s["score_id"].split(":")[1]: s["state"] for s in body["scores"]} == {
        "candidate#c2#001": "passed",
        "candidate#c4#001": "passed",
    }
    assert bench_agents.calls(probe) == agent_calls  # the agent was not asked again
    after = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert after["outcome"]["passed"] == 4 and after["outcome"]["incomplete"] == 0
    assert after["progress"]["passed"] == 4 and after["progress"]["incomplete"] == 0
    assert after["gradings"][-1]["by"] == api.user_id and after["gradings"][-1]["changed"] == 2
    c2 = by_case(after)["c2"]
    assert (
        c2["regraded"][-1]["by"] == api.user_id
        and c2["regraded"][-1]["state_before"] == "incomplete"
    )
    assert c2["answer"] == "broken"
    assert after["judge_calls"] == 6  # 4 first + 2 again

    # The dataset's rescore names scores of any run over it; a score it does not know is a 404.
    sid = f"{run['run_id']}:candidate#c1#001:judge"
    fake.set_script({"default": {"answer": grades(5), "usage": USAGE}})
    done = api.ok("POST", f"/api/v1/datasets/{ds}/scores/rescore", json={"score_ids": [sid]})
    assert done["graded"] == 1 and done["runs"][0]["scores"][0]["state"] == "passed"
    assert api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]["passed"] == 5
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/scores/rescore",
        json={"score_ids": [f"{run['run_id']}:candidate#zz#001:judge"]},
    )
    assert status == 404 and body["error"]["field"] == "score_ids[0]"
    status, body = api.call("POST", f"/api/v1/datasets/{ds}/scores/rescore", json={})
    assert status == 400 and body["error"]["field"] == "score_ids"
    for bad in ("", "nocolon", ":x:judge"):
        status, body = api.call(
            "POST", f"/api/v1/datasets/{ds}/scores/rescore", json={"score_ids": [bad]}
        )
        assert status == 400 and body["error"]["field"] == "score_ids.0", (bad, body)

    # Grading the same answer again and again works; a judge that fails now keeps the earlier grade.
    again = api.ok(
        "POST", f"/api/v1/eval-runs/{run['run_id']}/grade-again", json={"score_ids": [sid, sid]}
    )
    assert again["graded"] == 1 and again["scores"][0]["state"] == "passed"
    fake.set_script({"default": {"status": 400, "error": "model gone"}})
    kept = api.ok(
        "POST", f"/api/v1/eval-runs/{run['run_id']}/grade-again", json={"score_ids": [sid]}
    )
    assert kept["graded"] == 0 and kept["scores"][0]["kept"] == "passed"
    assert "earlier grade is kept" in kept["scores"][0]["reason"]
    final = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert final["outcome"]["passed"] == 5 and final["progress"]["passed"] == 5
    assert len(by_case(final)["c1"]["regraded"]) == 2


def test_two_people_grading_one_run_again_never_ask_the_judge_twice(api, fake, judge_setup):
    import concurrent.futures

    _, ds = judge_setup
    agent = api.agent(sleepy_spec(answers={f"c{i}": "broken" for i in range(5)}))
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    fake.set_script({"default": {"answer": grades(5), "usage": USAGE, "delay_ms": 200}})
    fake.reset()
    url = f"/api/v1/eval-runs/{run['run_id']}/grade-again"
    with concurrent.futures.ThreadPoolExecutor(2) as pool:
        replies = list(pool.map(lambda _: api.call("POST", url), range(2)))
    statuses = sorted(status for status, _ in replies)
    assert statuses in ([200, 200], [200, 409]), replies
    graded = sum(body["graded"] for status, body in replies if status == 200)
    assert graded == 5 and len(fake.requests()) == 5  # each answer graded, and paid for, once
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert view["judge_calls"] == 5 + 5 and view["outcome"]["passed"] == 5
    assert sum(g["graded"] for g in view["gradings"]) == 5


def test_a_different_judge_makes_the_comparison_invalid_and_is_never_reused(api, fake, judge_setup):
    judge, ds = judge_setup
    agent = api.agent(sleepy_spec(answers=ANSWERS), publish=1)
    first = api.start(agent, ds, candidate="version", version=1)
    api.wait(first["run_id"])
    # Same answers graded under another rubric (a new criterion): the judge changed.
    publish_judge(api, judge, instructions="Be lenient with spelling.")
    api.ok(
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        json={"spec": sleepy_spec(answers={**ANSWERS, "c1": "good"})},
    )
    api.ok("POST", f"/api/v1/agents/{agent}/versions")

    compared = api.start(agent, ds, candidate="version", version=2, baseline_run_id=first["run_id"])
    api.wait(compared["run_id"])
    comparison = api.ok("GET", f"/api/v1/eval-runs/{compared['run_id']}/comparison")
    assert comparison["verdict"] == "invalid"
    assert "different judges" in comparison["invalid_reason"]
    assert "@1|" in comparison["invalid_reason"] and "@2|" in comparison["invalid_reason"]

    # A paired baseline never borrows answers graded by the earlier judge: it answers here.
    paired = api.start(agent, ds, candidate="version", version=2, paired_baseline=True)
    assert paired["reused_baseline_run_id"] is None
    api.wait(paired["run_id"])
    comparison = api.ok("GET", f"/api/v1/eval-runs/{paired['run_id']}/comparison")
    assert comparison["verdict"] != "invalid" and comparison["invalid_reason"] is None
    fixed = [c["case_id"] for c in comparison["cases"] if c["outcome"] == "fixed"]
    assert fixed == ["c1"]


def test_judge_warnings_and_bad_judges(api, fake, judge_setup):
    judge, ds = judge_setup
    publish_judge(api, judge, temperature=0.7)
    agent = api.agent({**sleepy_spec(answers=ANSWERS), "model": "judge-model"})
    run = api.start(agent, ds)
    assert any("temperature 0.7" in w for w in run["warnings"])
    assert any("the model being tested" in w for w in run["warnings"])
    assert api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["warnings"] == run["warnings"]
    api.wait(run["run_id"])
    assert {b["body"]["temperature"] for b in fake.requests()} >= {0.7}

    status, body = api.call(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={
            "model_profile_id": "grader",
            "threshold": 9,
            "criteria": [{"criterion_id": "x", "text": "y"}],
        },
    )
    assert status == 400 and body["error"]["field"] == "threshold", body
    status, body = api.call(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={
            "model_profile_id": "grader",
            "criteria": [{"criterion_id": "x", "text": "y"}, {"criterion_id": "x", "text": "z"}],
        },
    )
    assert status == 400 and body["error"]["field"] == "criteria", body
    status, body = api.call(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={"model_profile_id": "nope", "criteria": [{"criterion_id": "x", "text": "y"}]},
    )
    assert status == 404 and body["error"]["field"] == "model_profile_id"
    status, body = api.call(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={
            "model_profile_id": "grader",
            "prompt_version": "9",
            "criteria": [{"criterion_id": "x", "text": "y"}],
        },
    )
    assert status == 400 and body["error"]["field"] == "prompt_version"
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["judge"], "settings": {"judge": {"judge_id": "ghost"}}},
            "cases": CASES,
        },
    )
    assert status == 404 and body["error"]["field"] == "scoring.settings.judge.judge_id"
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["judge"]}, "cases": CASES},
    )
    assert status == 400 and body["error"]["field"] == "scoring.settings.judge"
    fresh = api.ok("POST", "/api/v1/judges", json={"name": "unpublished"})["judge_id"]
    status, body = api.call(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["judge"], "settings": {"judge": {"judge_id": fresh}}},
            "cases": CASES,
        },
    )
    assert status == 400 and "no published version" in body["error"]["message"]
    view = api.ok("GET", f"/api/v1/judges/{judge}")
    assert [v["version"] for v in view["versions"]] == [1, 2] and view["latest_version"] == 2


def test_criteria_scoped_to_tags_leave_unmatched_cases_ungraded(api, fake, judge_setup):
    judge, _ = judge_setup
    scoped = api.ok("POST", "/api/v1/judges", json={"name": "tone only"})["judge_id"]
    api.ok(
        "POST",
        f"/api/v1/judges/{scoped}/versions",
        json={
            "model_profile_id": "grader",
            "criteria": [{"criterion_id": "polite", "text": "polite", "tags": ["tone", "style"]}],
        },
    )
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "scoped"})["dataset_id"]
    cases = [
        {"case_id": "a", "input": "q", "tags": ["tone", "style"]},
        {"case_id": "b", "input": "q"},
    ]
    version = api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {
                "required": ["judge"],
                "settings": {"judge": {"judge_id": scoped, "version": 1}},
            },
            "cases": cases,
        },
    )["version"]
    assert version["ungraded_cases"] == 1
    agent = api.agent(sleepy_spec(answer="good"))
    est = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, "candidate": "draft"},
    )
    assert est["judged_cases"] == 1 and est["ungraded_cases"] == 1
    fake.reset()
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    got = by_case(api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}"))
    assert got["a"]["state"] == "passed" and got["b"]["state"] == "ungraded"
    # Two matching tags, one criterion, one judge call: counted once.
    assert len(fake.requests()) == 1
    assert fake.requests()[0]["body"]["messages"][-1]["content"].count("- polite:") == 1


def test_a_judge_republished_during_a_run_makes_its_comparison_invalid(
    api, fake, judge_setup, limits
):
    limits(1, 1)  # one case at a time
    judge, ds = judge_setup
    h = hold(f"judged-{uuid.uuid4().hex}")
    agent = api.agent(held_spec(h.name, answers=ANSWERS), publish=1)
    api.ok(
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        json={"spec": held_spec(h.name, answers={**ANSWERS, "c1": "good"})},
    )
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True)
    h.release(2)  # two answers graded, then the run waits on the agent: the change lands mid-run
    api.wait(run["run_id"], until=lambda p: p["recorded"] >= 2)
    publish_judge(api, judge, instructions="A second opinion.")
    h.open()
    api.wait(run["run_id"])
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    versions = {
        judge_score(r)["fingerprint"]["judge_version"]
        for r in view["results"]
        if judge_score(r)["fingerprint"]
    }
    assert versions == {1, 2}
    comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
    assert comparison["verdict"] == "invalid"
    assert comparison["invalid_reason"] == "the judge changed while the run's cases were graded"
    assert comparison["overall"] is None
