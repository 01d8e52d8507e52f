"""Cost before it is spent: the estimate over HTTP, the 402 at a budget's edge, and a run that
runs out of budget (docs/guides/costs.md, docs/reference/access.md).

Every figure is hand-computed in the comment beside it. The `sleepy` agent reports 100 input
and 20 output tokens per answer, so a spec's `price` gives each answer an exact cost.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import cases, sleepy_spec
from tests.support.agents import held_spec, hold


def priced(input_per_mtok: str, output_per_mtok: str, **kw) -> dict:
    return {
        **sleepy_spec(**kw),
        "price": {"input_per_mtok_usd": input_per_mtok, "output_per_mtok_usd": output_per_mtok},
    }


def estimate(api, agent_id: str, dataset_id: str, **body) -> dict:
    return api.ok(
        "POST",
        f"/api/v1/agents/{agent_id}/eval-runs/estimate",
        json={"dataset_id": dataset_id, "candidate": "draft", **body},
    )


def test_no_history_is_priced_as_a_typical_case_at_the_models_price(api):
    agent = api.agent(priced("0.15", "0.60"))
    ds = api.dataset(cases(10))
    est = estimate(api, agent, ds)
    # 2000 in x 0.15 + 400 out x 0.60 per 1M tokens = 300 + 240 = 540 micro-USD a case; x 10 cases.
    assert est["arms"][0]["per_case_usd"] == 0.00054
    assert est["first_pass_usd"] == 0.0054
    assert est["rerun_ceiling_usd"] == 0  # no baseline: nothing can flip
    assert est["total_usd"] == 0.0054
    assert est["basis"] == "fallback" and est["arms"][0]["basis"] == "fallback"
    assert est["missing_baseline_version"] is None and est["judge"] is None
    # Nothing was written: no run exists.
    assert api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"] == []


def test_an_unpriced_model_is_estimated_at_the_fallback_case_cost(api):
    agent = api.agent(sleepy_spec())
    est = estimate(api, agent, api.dataset(cases(7)))
    assert est["total_usd"] == 0.35  # 7 cases x $0.05
    assert est["basis"] == "fallback"


def test_an_unpriced_model_stays_at_the_fallback_after_runs_that_cost_nothing(api):
    # Its answers were priced by nothing (no price, no cost reported), so they cost nothing as
    # charged: that is no history of what it costs, and the next estimate is the first one again.
    agent = api.agent(sleepy_spec())
    ds = api.dataset(cases(20))
    first = estimate(api, agent, ds)
    assert (first["total_usd"], first["basis"]) == (1.0, "fallback")  # 20 cases x $0.05
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    assert api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["cost_usd"] == 0
    again = estimate(api, agent, ds)
    assert (again["total_usd"], again["basis"]) == (1.0, "fallback")
    assert again["arms"][0]["per_case_usd"] == first["arms"][0]["per_case_usd"] == 0.05
    assert again["arms"][0]["basis"] == "fallback"


def test_history_prices_by_the_agents_average_cost_per_case_and_a_reused_baseline_is_free(api):
    agent = api.agent(priced("10", "50", answer="42"), publish=1)
    ds = api.dataset(cases(4))
    first = api.start(agent, ds, candidate="version", version=1)
    api.wait(first["run_id"])
    # 100 in x 10 + 20 out x 50 = 1000 + 1000 = 2000 micro-USD an answer, 4 answers.
    assert api.ok("GET", f"/api/v1/eval-runs/{first['run_id']}")["cost_usd"] == 0.008

    est = estimate(api, agent, ds)
    assert est["arms"][0]["basis"] == "history" and est["arms"][0]["runs_sampled"] == 1
    assert est["first_pass_usd"] == 0.008  # 4 cases x 2000
    assert est["basis"] == "history"

    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": priced("10", "50", answer="43")})
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    est = estimate(api, agent, ds, candidate="version", version=2, paired_baseline=True, reruns=2)
    assert est["reused_baseline_run_id"] == first["run_id"]
    base = next(a for a in est["arms"] if a["role"] == "baseline")
    assert (
        base["basis"] == "reused"
        and base["first_pass_usd"] == 0
        and base["reused_run_id"] == first["run_id"]
    )
    assert (
        est["first_pass_usd"] == 0.008
    )  # the candidate's 4 x 2000; the baseline's answers are free
    # Every case flipping: candidate 4 x 2 reruns x 2000 + the (reused) baseline's 4 x 2 x 2000.
    assert est["rerun_ceiling_usd"] == 0.032
    assert est["total_usd"] == 0.04


def test_the_402_boundary_is_exact(api):
    ds = api.dataset(cases(1))
    # 2000 in x 1000 + 400 out x 2500 per 1M tokens = 2.00 + 1.00 = $3.00 for the one case.
    exact = api.agent(priced("1000", "2500"))
    # 2000 x 1000 + 400 x 2525 = 2.00 + 1.01 = $3.01.
    over = api.agent(priced("1000", "2525"))
    for agent in (exact, over):
        api.ok("PUT", f"/api/v1/agents/{agent}/budget", json={"monthly_usd": "3.00"})

    est = estimate(api, exact, ds)
    assert est["total_usd"] == 3.0 and est["agent_after_usd"] == 0 and est["within_budget"] is True
    assert est["org_after_usd"] is None  # the organization has no budget
    started = api.start(exact, ds)
    assert started["status"] in ("queued", "running")

    est = estimate(api, over, ds)
    assert (
        est["total_usd"] == 3.01
        and est["agent_after_usd"] == -0.01
        and est["within_budget"] is False
    )
    status, body = api.call(
        "POST", f"/api/v1/agents/{over}/eval-runs", json={"dataset_id": ds, "candidate": "draft"}
    )
    assert status == 402, body
    assert body["error"]["field"] == "budget"
    assert body["error"]["message"] == (
        "the run could cost up to $3.01 (first pass $3.01 plus reruns up to $0.00), "
        "more than is left of the agent's monthly budget"
    )
    assert body["error"]["estimate"]["total_usd"] == 3.01
    assert [r["agent_id"] for r in api.ok("GET", "/api/v1/eval-runs")["runs"]] == [exact]
    api.wait(started["run_id"])


def test_the_organizations_budget_counts_what_its_other_agents_spent(api):
    spender = api.agent(priced("10", "50"))
    ds = api.dataset(cases(5))
    api.wait(api.start(spender, ds)["run_id"])  # spends 5 x 2000 = $0.01
    assert api.ok("GET", "/api/v1/budget")["spent_usd"] == 0.01
    api.ok("PUT", "/api/v1/budget", json={"monthly_usd": 0.26})
    other = api.agent(sleepy_spec())
    est = estimate(api, other, ds)  # 5 x $0.05 = $0.25; $0.26 - $0.01 spent - $0.25 = 0
    assert est["total_usd"] == 0.25 and est["org_after_usd"] == 0 and est["within_budget"]
    api.ok("PUT", "/api/v1/budget", json={"monthly_usd": "0.259999"})
    status, body = api.call(
        "POST", f"/api/v1/agents/{other}/eval-runs", json={"dataset_id": ds, "candidate": "draft"}
    )
    assert status == 402 and body["error"]["message"].endswith("the organization's monthly budget")


def test_a_run_that_exhausts_a_budget_ends_budget_exceeded_and_spends_no_further(api, limits):
    limits(1, 1)
    h = hold(f"budget-{api.org_id}")
    price = {"input_per_mtok_usd": "10", "output_per_mtok_usd": "50"}
    agent = api.agent({**held_spec(h.name), "price": price})
    ds = api.dataset(cases(30))
    run = api.start(agent, ds)
    h.release(1)  # one answer, then the run waits on the agent: the budget changes mid-run
    api.wait(run["run_id"], until=lambda p: p["recorded"] >= 1)
    # Lowered while it runs: $0.006 is three answers of 2000 micro-USD.
    api.ok("PUT", f"/api/v1/agents/{agent}/budget", json={"monthly_usd": "0.006"})
    h.open()
    progress = api.wait(run["run_id"])
    assert progress["status"] == "budget_exceeded"
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert view["reason"].startswith(
        "budget exceeded: the agent's monthly budget of $0.006 is spent"
    )
    answered = [r for r in view["results"] if r["answer"] is not None]
    # The agent was asked exactly as often as answers were kept, and never past the budget
    # (a case already running when it ran out may finish: at most one over).
    assert h.calls == h.answered == len(answered), h.seen()
    assert 3 <= len(answered) <= 4
    budget = api.ok("GET", f"/api/v1/agents/{agent}/budget")
    assert budget["spent_usd"] == pytest.approx(0.002 * len(answered), abs=1e-9)
    assert sum(r["cost_usd"] for r in view["results"]) == pytest.approx(
        budget["spent_usd"], abs=1e-9
    )
    # The rest of the cases are incomplete, never passed or failed.
    quality = view["summaries"]["candidate"]["quality"]
    assert quality["passed"] == len(answered) and quality["incomplete"] == 30 - len(answered)
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, "candidate": "draft"},
    )
    assert status == 200 and body["within_budget"] is False and body["agent_after_usd"] < 0


@pytest.mark.parametrize(
    "value",
    [
        "abc",
        -1,
        True,
        [],
        {"usd": 1},
        "1e22",
        1e308,
        10**40,
        "١٢",
        "1_000",
        4e-07,
        "0.0000001",
        "NaN",
        "Infinity",
    ],
)
def test_a_bad_budget_is_a_400_naming_the_field(api, value):
    status, body = api.call("PUT", "/api/v1/budget", json={"monthly_usd": value})
    assert status == 400 and body["error"]["field"] == "monthly_usd", body


def test_budgets_of_unknown_agents_are_404_and_null_removes_a_budget(api):
    assert api.call("PUT", "/api/v1/agents/nope/budget", json={"monthly_usd": 1})[0] == 404
    assert api.call("GET", "/api/v1/agents/nope/budget")[0] == 404
    agent = api.agent(sleepy_spec())
    assert (
        api.ok("PUT", f"/api/v1/agents/{agent}/budget", json={"monthly_usd": 12.5})["monthly_usd"]
        == 12.5
    )
    cleared = api.ok("PUT", f"/api/v1/agents/{agent}/budget", json={"monthly_usd": None})
    assert cleared["monthly_usd"] is None and cleared["remaining_usd"] is None


def test_refusals_come_before_the_estimate(api):
    never = api.agent(sleepy_spec())
    ds = api.dataset(cases(2))
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{never}/eval-runs/estimate",
        json={"dataset_id": ds, "candidate": "version"},
    )
    assert status == 400 and "draft" in body["error"]["message"]
    first = api.agent(sleepy_spec(), publish=1)
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{first}/eval-runs/estimate",
        json={"dataset_id": ds, "candidate": "version", "version": 1, "paired_baseline": True},
    )
    assert status == 400 and body["error"]["field"] == "paired_baseline"
    nothing = api.dataset(
        [{"case_id": "x", "input": "q"}]
    )  # `equals` needs a reference: nothing grades it
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{first}/eval-runs/estimate",
        json={"dataset_id": nothing, "candidate": "draft"},
    )
    assert status == 400 and "no required scorer" in body["error"]["message"]
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{first}/eval-runs/estimate",
        json={"dataset_id": ds, "candidate": "draft", "environment_id": "staging"},
    )
    assert status == 404 and body["error"]["field"] == "environment_id"
    some = api.dataset(
        [{"case_id": "x", "input": "q"}, {"case_id": "y", "input": "q", "reference": "42"}]
    )
    est = estimate(api, first, some)
    assert est["ungraded_cases"] == 1
    assert est["warnings"] == ["1 case has nothing to grade it. The result will be inconclusive."]


def test_runs_already_started_count_against_the_budget(api, frozen):
    # Pollers paused: the first run is queued and has spent nothing yet.
    agent = api.agent(sleepy_spec())
    ds = api.dataset(cases(4))
    api.ok("PUT", f"/api/v1/agents/{agent}/budget", json={"monthly_usd": "0.30"})
    first = api.start(agent, ds)  # 4 x $0.05 = $0.20 of $0.30
    est = estimate(api, agent, ds)
    assert est["agent_committed_usd"] == 0.2 and est["org_committed_usd"] == 0.2
    assert est["agent_after_usd"] == -0.1 and est["within_budget"] is False  # 0.30 - 0.20 - 0.20
    status, body = api.call(
        "POST", f"/api/v1/agents/{agent}/eval-runs", json={"dataset_id": ds, "candidate": "draft"}
    )
    assert status == 402, body
    api.ok("POST", f"/api/v1/eval-runs/{first['run_id']}/cancel")
    assert estimate(api, agent, ds)["within_budget"] is True  # a cancelled run commits nothing


def test_a_spent_budget_admits_not_even_a_free_run(api):
    agent = api.agent(priced("0", "0"))
    api.ok("PUT", f"/api/v1/agents/{agent}/budget", json={"monthly_usd": 0})
    ds = api.dataset(cases(2))
    est = estimate(api, agent, ds)
    assert est["total_usd"] == 0 and est["within_budget"] is False
    assert (
        api.call(
            "POST",
            f"/api/v1/agents/{agent}/eval-runs",
            json={"dataset_id": ds, "candidate": "draft"},
        )[0]
        == 402
    )


@pytest.mark.parametrize(
    "price",
    [
        {"input_per_mtok_usd": "1e30", "output_per_mtok_usd": "0"},
        {"input_per_mtok_usd": "NaN", "output_per_mtok_usd": "0"},
    ],
)
def test_an_absurd_price_is_refused_when_the_spec_is_saved(api, price):
    status, body = api.call(
        "POST", "/api/v1/agents", json={"name": "a", "spec": {**sleepy_spec(), "price": price}}
    )
    assert status == 400 and body["error"]["field"] == "spec.price.input_per_mtok_usd", body
    status, body = api.call(
        "POST",
        "/api/v1/model-profiles",
        json={"model_profile_id": "p", "model": "m", "price": price},
    )
    assert status == 400 and body["error"]["field"] == "price", body


def test_an_empty_model_profile_id_is_a_400(api):
    agent = api.agent(sleepy_spec())
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": api.dataset(cases(1)), "candidate": "draft", "model_profile_ids": [""]},
    )
    assert status == 400 and body["error"]["field"] == "model_profile_ids.0", body
