"""Agent runs and usage over HTTP (docs/reference/usage.md): every case of an eval is an agent
run of the surface `eval`, production runs reported by the platform spend from the same budgets,
and the month's usage counts production with the eval traffic beside it.

The `sleepy` agent reports 100 input and 20 output tokens per answer; with a price of $10 and
$50 per million tokens an answer costs 100 x 10 + 20 x 50 = 2000 micro-USD ($0.002).
"""

from __future__ import annotations

from tests.e2e.test_agents_and_publishing import AgentEvents
from tests.e2e.test_judge import ANSWERS, USAGE, fake, grades, judge_setup  # noqa: F401 - fixtures
from tests.support.e2e import Api, cases, sleepy_spec, wait_for


def priced(**kw) -> dict:
    return {**sleepy_spec(**kw), "price": {"input_per_mtok_usd": "10", "output_per_mtok_usd": "50"}}


def runs_of(api: Api, agent: str, **query) -> list[dict]:
    out, before = [], None
    while True:
        page = api.ok(
            "GET",
            f"/api/v1/agents/{agent}/runs",
            params={**query, "limit": 2, **({"before": before} if before else {})},
        )
        out += page["runs"]
        before = page["next"]
        if not before:
            return out


def test_every_case_of_an_eval_is_an_agent_run_on_the_eval_surface(api):
    agent = api.agent(priced(answer="42"))
    ds = api.dataset(cases(3))
    run = api.start(agent, ds)
    api.wait(run["run_id"])

    listed = runs_of(api, agent)  # pages of 2, newest first
    assert len(listed) == 3
    assert {r["surface"] for r in listed} == {"eval"} and {r["label"] for r in listed} == {"Eval"}
    assert [r["started_at"] for r in listed] == sorted(
        (r["started_at"] for r in listed), reverse=True
    )
    assert sorted(r["eval_case"]["case_id"] for r in listed) == ["c000", "c001", "c002"]
    assert {r["eval_case"]["run_id"] for r in listed} == {run["run_id"]}
    assert {r["asked"] for r in listed} == {"question 0", "question 1", "question 2"}
    assert {(r["cost_usd"], r["input_tokens"], r["output_tokens"]) for r in listed} == {
        (0.002, 100, 20)
    }
    assert {r["ran_as"] for r in listed} == {api.user_id}

    one = api.ok("GET", f"/api/v1/runs/{listed[0]['agent_run_id']}")
    assert one["request"]["input"] == one["asked"]  # what the model saw
    assert one["request"]["case_id"] == one["eval_case"]["case_id"]

    usage = api.ok("GET", "/api/v1/usage")
    # Eval traffic beside production, never folded in: 3 answers x $0.002.
    assert usage["cost"] == {"production_usd": 0, "eval_usd": 0.006, "grader_usd": 0}
    assert usage["runs"] == {"production": 0, "eval": 3, "grader": 0}
    assert usage["tokens"]["eval"] == {"input": 300, "output": 60}
    assert [a["agent_id"] for a in usage["agents"]] == [agent]
    assert usage["agents"][0]["cost"]["eval_usd"] == sum(r["cost_usd"] for r in listed)


def test_a_reader_who_may_not_see_the_dataset_sees_no_eval_case(api, new_api):
    agent = api.agent(sleepy_spec())
    run = api.start(agent, api.dataset(cases(1)))
    api.wait(run["run_id"])
    made = api.ok(
        "POST", "/api/v1/api-keys", json={"name": "ro", "scopes": ["runs:view", "agents:view"]}
    )
    key = Api(api.http.base_url, api.org_id, api.user_id, made["key"])
    [seen] = key.ok("GET", f"/api/v1/agents/{agent}/runs")["runs"]
    assert "eval_case" not in seen and seen["surface"] == "eval"
    assert seen["asked"] is None  # the case's question is the dataset's
    one = key.ok("GET", f"/api/v1/runs/{seen['agent_run_id']}")
    assert "eval_case" not in one and "request" not in one  # the case's question is the dataset's
    assert "eval_case" in api.ok("GET", f"/api/v1/runs/{seen['agent_run_id']}")


def test_production_usage_counts_once_per_key_and_spends_from_the_budget_an_eval_checks(api):
    agent = api.agent(priced())
    ds = api.dataset(cases(1))
    api.ok("PUT", f"/api/v1/agents/{agent}/budget", json={"monthly_usd": "3.00"})
    # The estimate of one case (2000 in x 10 + 400 out x 50 per 1M = $0.04) fits $3.00.
    estimate = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, "candidate": "draft"},
    )
    assert estimate["within_budget"] is True

    report = {"runs": [{"key": "req-1", "agent_id": agent, "cost_usd": "2.98", "model": "m"}]}
    assert api.ok("POST", "/api/v1/usage/runs", json=report) == {"accepted": 1, "duplicates": 0}
    assert api.ok("POST", "/api/v1/usage/runs", json=report) == {"accepted": 0, "duplicates": 1}

    usage = api.ok("GET", "/api/v1/usage")
    assert usage["cost"]["production_usd"] == 2.98 and usage["runs"]["production"] == 1
    assert usage["cost"]["eval_usd"] == 0
    estimate = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, "candidate": "draft"},
    )
    assert estimate["agent_after_usd"] == -0.02 and estimate["within_budget"] is False
    status, body = api.call(
        "POST", f"/api/v1/agents/{agent}/eval-runs", json={"dataset_id": ds, "candidate": "draft"}
    )
    assert status == 402 and body["error"]["field"] == "budget"

    [prod] = api.ok("GET", f"/api/v1/agents/{agent}/runs", params={"surface": "production"})["runs"]
    assert (prod["label"], prod["cost_usd"], prod["model"]) == ("Production", 2.98, "m")


def test_exclude_surface_leaves_the_eval_traffic_out(api):
    agent = api.agent(sleepy_spec())
    run = api.start(agent, api.dataset(cases(2)))
    api.wait(run["run_id"])
    api.ok(
        "POST",
        "/api/v1/usage/runs",
        json={"runs": [{"key": k, "agent_id": agent, "cost_usd": 0.5} for k in ("a", "b", "c")]},
    )
    assert len(runs_of(api, agent)) == 5
    kept = runs_of(api, agent, exclude_surface="eval")
    assert [r["surface"] for r in kept] == ["production"] * 3
    assert {r["surface"] for r in runs_of(api, agent, surface="eval")} == {"eval"}
    usage = api.ok("GET", "/api/v1/usage")
    assert usage["cost"]["production_usd"] == sum(r["cost_usd"] for r in kept) == 1.5


def test_bad_reports_and_queries_name_their_field(api, new_api):
    agent = api.agent(sleepy_spec())
    for body, field in [
        ({"runs": []}, "runs"),
        ({"runs": [{"agent_id": agent, "cost_usd": 1}]}, "runs[0].key"),
        ({"runs": [{"key": "k", "agent_id": agent, "cost_usd": -1}]}, "runs[0].cost_usd"),
        ({"runs": [{"key": "k", "agent_id": agent, "cost_usd": "NaN"}]}, "runs[0].cost_usd"),
        ({"runs": [{"key": "k", "agent_id": "nope", "cost_usd": 1}]}, "runs[0].agent_id"),
        ({"runs": [{"key": "k", "agent_id": agent}] * 501}, "runs"),
        (
            {"runs": [{"key": "k", "agent_id": agent, "cost_usd": 1, "input_tokens": 1.5}]},
            "runs[0].input_tokens",
        ),
    ]:
        status, error = api.call("POST", "/api/v1/usage/runs", json=body)
        assert status in (400, 404) and error["error"]["field"] == field, (body, error)
    assert (
        api.call("GET", "/api/v1/usage", params={"month": "2026-13"})[1]["error"]["field"]
        == "month"
    )
    status, error = api.call("GET", f"/api/v1/agents/{agent}/runs", params={"surface": "web"})
    assert status == 400 and error["error"]["field"] == "surface"
    assert api.call("GET", "/api/v1/runs/ar_000000000000000000000000")[0] == 404
    viewer = new_api(org_id=api.org_id, user_id="viewer@example.com", role="viewer")
    status, error = viewer.call(
        "POST",
        "/api/v1/usage/runs",
        json={"runs": [{"key": "k", "agent_id": agent, "cost_usd": 1}]},
    )
    assert status == 403 and error["error"]["permission"] == "settings:manage"
    other = new_api()
    assert other.call("GET", f"/api/v1/agents/{agent}/runs")[0] == 404
    assert other.ok("GET", "/api/v1/usage")["agents"] == []


def test_deletes_leave_no_agent_run(api):
    agent = api.agent(sleepy_spec())
    ds = api.dataset(cases(2))
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    api.ok(
        "POST",
        "/api/v1/usage/runs",
        json={"runs": [{"key": "p", "agent_id": agent, "cost_usd": 1}]},
    )
    ids = [r["agent_run_id"] for r in runs_of(api, agent, surface="eval")]
    assert len(ids) == 2

    api.ok("DELETE", f"/api/v1/eval-runs/{run['run_id']}")
    assert runs_of(api, agent, surface="eval") == []
    assert {api.call("GET", f"/api/v1/runs/{i}")[0] for i in ids} == {404}
    [prod] = runs_of(api, agent)
    assert prod["surface"] == "production"

    api.ok("DELETE", f"/api/v1/agents/{agent}")
    assert api.call("GET", f"/api/v1/runs/{prod['agent_run_id']}")[0] == 404


def test_the_judge_s_gradings_are_agent_runs_on_the_grader_surface(api, fake, judge_setup):  # noqa: F811 - test_judge's fixtures, imported
    _, ds = judge_setup
    agent = api.agent(sleepy_spec(answers=ANSWERS))
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    graders = runs_of(api, agent, surface="grader")
    # The judge was asked on 4 answers (c4's provider was down: no grading came back, 0 cost).
    assert {r["label"] for r in graders} == {"Grader"}
    assert sum(r["cost_usd"] for r in graders) == view["judge_cost_usd"] == 0.0048
    assert all(r["asked"].startswith("Graded the answer to case ") for r in graders)
    assert {r["model"] for r in graders} == {"judge-model"}
    usage = api.ok("GET", "/api/v1/usage")
    assert usage["cost"]["grader_usd"] == 0.0048 and usage["runs"]["grader"] == len(graders)
    assert usage["runs"]["eval"] == len(runs_of(api, agent, surface="eval")) == 5
    assert usage["cost"]["eval_usd"] == 0  # the agent is unpriced

    # Grading again asks the judge again: each answer graded is one more grader run.
    fake.set_script({"rules": [], "default": {"answer": grades(4), "usage": USAGE}})
    again = api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/grade-again")
    assert again["graded"] == 2  # c2 and c4, which the judge had not graded
    graders = runs_of(api, agent, surface="grader")
    regraded = [r for r in graders if r["asked"].startswith("Graded again")]
    assert sorted(r["eval_case"]["case_id"] for r in regraded) == ["c2", "c4"]
    usage = api.ok("GET", "/api/v1/usage")
    assert usage["runs"]["grader"] == len(graders) == 6
    assert usage["cost"]["grader_usd"] == round(sum(r["cost_usd"] for r in graders), 6) == 0.0072

    api.ok("DELETE", f"/api/v1/eval-runs/{run['run_id']}")
    assert runs_of(api, agent) == []


def test_the_platform_reports_production_runs_on_the_signed_agent_events_queue(api, stack):
    agent = api.agent(sleepy_spec())
    events = AgentEvents(stack)
    events.trust(api)
    event = {
        "type": "run_completed",
        "org_id": api.org_id,
        "agent_id": agent,
        "version": 1,
        "surface": "production",
        "key": "conv-7#turn-3",
        "cost_usd": "0.25",
        "input_tokens": 812,
        "output_tokens": 95,
        "asked": "What is my balance?",
    }
    events.send(event)
    events.send(event)  # a redelivery, or the platform sending twice
    usage = wait_for(
        lambda: (u := api.ok("GET", "/api/v1/usage"))["runs"]["production"] and u,
        what="the production run counted",
    )
    assert usage["cost"]["production_usd"] == 0.25
    assert usage["tokens"]["production"] == {"input": 812, "output": 95}
    [run] = runs_of(api, agent)
    assert (run["surface"], run["asked"], run["version"]) == (
        "production",
        "What is my balance?",
        1,
    )
    # An eval surface is never reported (assay writes those itself); unsigned does nothing.
    events.send({**event, "key": "x-eval", "surface": "eval"})
    events.send({**event, "key": "x-unsigned"}, sign=False)
    assert len(events.dead("x-eval", timeout_s=60)) == 1
    assert len(events.dead("x-unsigned", timeout_s=60)) == 1
    assert api.ok("GET", "/api/v1/usage")["runs"]["production"] == 1


def test_activity_lists_every_agent_s_runs_with_a_source_filter(api, new_api):
    seen = api.agent(sleepy_spec())
    hidden = api.agent(sleepy_spec())
    ds = api.dataset(cases(1))
    for agent in (seen, hidden):
        api.wait(api.start(agent, ds)["run_id"])
        api.ok(
            "POST",
            "/api/v1/usage/runs",
            json={"runs": [{"key": f"p-{agent}", "agent_id": agent, "cost_usd": 0.1}]},
        )
    everything = api.ok("GET", "/api/v1/runs")["runs"]
    assert sorted((r["agent_id"], r["surface"]) for r in everything) == sorted(
        (a, s) for a in (seen, hidden) for s in ("eval", "production")
    )
    assert [r["started_at"] for r in everything] == sorted(
        (r["started_at"] for r in everything), reverse=True
    )
    evals = api.ok("GET", "/api/v1/runs", params={"surface": "eval"})["runs"]
    assert {r["label"] for r in evals} == {"Eval"} and len(evals) == 2
    # Activity is a runs:view reader's: a guest (whatever agents it was granted) has none.
    guest = new_api(org_id=api.org_id, user_id="guest@example.com", role="guest")
    status, body = guest.call("GET", "/api/v1/runs")
    assert status == 403 and body["error"]["permission"] == "runs:view"
