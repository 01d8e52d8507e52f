"""Every `EVAL_*` setting at a value other than its default changes what assay does, through the
HTTP API on the embedded stack (docs/reference/settings.md). Each test sets the value for itself
(the `operator` fixture: the settings the stack's routes and workers read) and shows the
behaviour the default would not give; every figure is hand-computed beside it.

At other values elsewhere: `EVAL_RUN_CONCURRENCY` and `EVAL_ORG_CONCURRENCY` in
test_concurrency.py (2 and 3, 4 and 5) and test_org_limits.py (a default lowered to 1 for an
organization used before), `EVAL_HEARTBEAT_SECONDS` in test_attempts.py (0.3 s),
`EVAL_CASE_ERROR_TRIES` in test_delivery.py (2, and past the queue's `maxReceiveCount`).
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from chalicelib.domain import noise
from chalicelib.services import agent_events, suites, sweep
from tests.e2e.conftest import cases, sleepy_spec
from tests.support import leaky_agent
from tests.support.e2e import Api, signed

BROKEN = {"c002": "7", "c005": "7", "c007": "7"}
"""Three of ten cases a second version answers wrongly."""


def priced(input_per_mtok: str, output_per_mtok: str, **kw: Any) -> dict[str, Any]:
    """A `sleepy` spec (100 input and 20 output tokens an answer) at a price per 1M tokens."""
    return {
        **sleepy_spec(**kw),
        "price": {"input_per_mtok_usd": input_per_mtok, "output_per_mtok_usd": output_per_mtok},
    }


def estimate(api: Api, agent_id: str, dataset_id: str, **body: Any) -> dict[str, Any]:
    return api.ok(
        "POST",
        f"/api/v1/agents/{agent_id}/eval-runs/estimate",
        json={"dataset_id": dataset_id, "candidate": "draft", **body},
    )


def publish(api: Api, agent_id: str, spec: dict[str, Any]) -> None:
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": spec})
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")


def two_versions(api: Api, v1: dict[str, Any], v2: dict[str, Any]) -> str:
    agent = api.agent(v1)
    publish(api, agent, v1)
    publish(api, agent, v2)
    return agent


def compared(api: Api, agent: str, ds: str, **body: Any) -> dict[str, Any]:
    """Version 2 beside version 1 (a paired baseline), completed: its comparison."""
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True, **body)
    assert api.wait(run["run_id"])["status"] == "completed"
    return api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")


# --- estimates ---------------------------------------------------------------------------------


def test_eval_fallback_case_cost_usd_prices_a_model_nothing_prices(api, operator):
    agent, ds = api.agent(sleepy_spec()), api.dataset(cases(7))
    assert estimate(api, agent, ds)["total_usd"] == 0.35  # the default: 7 cases x $0.05
    operator(eval_fallback_case_cost_usd=0.2)
    est = estimate(api, agent, ds)
    assert (est["arms"][0]["per_case_usd"], est["total_usd"]) == (0.2, 1.4)  # 7 x $0.20
    assert est["basis"] == "fallback"


def test_eval_fallback_tokens_are_the_typical_case_of_a_priced_model(api, operator):
    agent, ds = api.agent(priced("0.15", "0.60")), api.dataset(cases(10))
    # the defaults: 2000 in x 0.15 + 400 out x 0.60 per 1M tokens = 300 + 240 = 540 micro-USD
    assert estimate(api, agent, ds)["arms"][0]["per_case_usd"] == 0.00054
    operator(eval_fallback_input_tokens=1000)
    # 1000 x 0.15 + 400 x 0.60 = 150 + 240 = 390 micro-USD a case
    assert estimate(api, agent, ds)["arms"][0]["per_case_usd"] == 0.00039
    operator(eval_fallback_input_tokens=1000, eval_fallback_output_tokens=100)
    # 1000 x 0.15 + 100 x 0.60 = 150 + 60 = 210 micro-USD a case, x 10 cases
    est = estimate(api, agent, ds)
    assert (est["arms"][0]["per_case_usd"], est["total_usd"]) == (0.00021, 0.0021)


def test_eval_estimate_sample_is_how_many_of_the_newest_runs_an_estimate_reads(api, operator):
    agent, ds = api.agent(priced("10", "50")), api.dataset(cases(4))
    for spec in (priced("10", "50"), priced("20", "50")):
        api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": spec})
        run = api.start(agent, ds)
        assert api.wait(run["run_id"])["status"] == "completed"
    # runs: 100 x 10 + 20 x 50 = 2000, then 100 x 20 + 20 x 50 = 3000 micro-USD an answer
    default = estimate(api, agent, ds)["arms"][0]
    assert (default["runs_sampled"], default["per_case_usd"]) == (2, 0.0025)  # (8000+12000)/8
    operator(eval_estimate_sample=1)
    newest = estimate(api, agent, ds)["arms"][0]
    assert (newest["runs_sampled"], newest["per_case_usd"]) == (1, 0.003)  # the newest only
    assert newest["basis"] == "history"


# --- reruns ------------------------------------------------------------------------------------


def test_eval_reruns_is_the_reruns_of_a_start_that_names_none(api, operator):
    operator(eval_reruns=1)
    ds = api.dataset(cases(4))
    agent = two_versions(api, priced("10", "50"), priced("10", "50", answer="43"))
    est = estimate(api, agent, ds, candidate="version", version=2, paired_baseline=True)
    # No history: a typical case, 2000 in x 10 + 400 out x 50 = 40000 micro-USD. Every case
    # flipping: 4 cases x 1 rerun x 40000 on each of the two sides (the default, 2 reruns: 0.64).
    assert (est["reruns"], est["rerun_ceiling_usd"]) == (1, 0.32)
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True)
    assert api.wait(run["run_id"])["status"] == "completed"
    read = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert read["reruns"] == 1
    # every case flipped (43 is wrong): one rerun each, on both sides - 4 first answers and 4
    # reruns a side
    attempts = [r for r in read["results"] if r["arm_id"] == "candidate"]
    assert len(attempts) == 8, attempts


def test_eval_max_luck_is_the_bound_reruns_auto_keeps_under(api, operator):
    operator(eval_max_luck=0.5, eval_reruns=3)
    ds = api.dataset(cases(10))
    agent = two_versions(api, sleepy_spec(), sleepy_spec(answers=BROKEN))
    paired = {"candidate": "version", "version": 2, "paired_baseline": True}
    first = estimate(api, agent, ds, reruns="auto", **paired)
    # nothing measured yet: EVAL_RERUNS (3 here), under the bound set
    assert (first["reruns"], first["reruns_auto"]["bound"]) == (3, 0.5)
    measured = compared(api, agent, ds, reruns=2)
    run = api.ok("GET", f"/api/v1/eval-runs/{measured['run_id']}")
    luck = run["outcome"]["noise"]["luck_by_reruns"]
    est = estimate(api, agent, ds, reruns="auto", **paired)
    chosen = noise.reruns_under(luck, 0.5)
    assert chosen is not None and est["reruns_auto"]["chosen"] == chosen == est["reruns"]
    at_default = noise.reruns_under(luck, 0.01)
    assert chosen < (at_default if at_default is not None else noise.MAX_RERUNS), luck


# --- comparisons -------------------------------------------------------------------------------


def test_eval_significance_is_the_level_under_which_confirmed_flips_tell_sides_apart(api, operator):
    ds = api.dataset(cases(10))
    agent = two_versions(api, sleepy_spec(), sleepy_spec(answers=BROKEN))
    # 3 confirmed regressions, no fix: the exact McNemar test gives p = 2 x 0.5^3 = 0.25
    default = compared(api, agent, ds, reruns=1)
    assert (default["p_value"], default["overall"]) == (0.25, None)  # not under 0.05
    operator(eval_significance=0.3)
    lenient = compared(api, agent, ds, reruns=1)
    assert (lenient["p_value"], lenient["overall"]) == (0.25, "worse")


def test_eval_efficiency_tolerance_is_the_change_counted_as_none(api, operator):
    def answering(input_tokens: int) -> dict[str, Any]:
        usage = {"input_tokens": input_tokens, "output_tokens": 20}
        return leaky_agent.spec({"answer": "42", "usage": usage})

    ds = api.dataset(cases(4))
    agent = two_versions(api, answering(100), answering(110))
    # 130 tokens a case against 120: (130 - 120) / 120 = 8.3 % more
    assert compared(api, agent, ds)["efficiency"]["tokens_per_case"] == "worse"  # over 5 %
    operator(eval_efficiency_tolerance=0.1)
    assert compared(api, agent, ds)["efficiency"]["tokens_per_case"] == "unchanged"  # within 10 %


def test_eval_baseline_cache_hours_is_how_old_a_reused_baseline_may_be(api, operator):
    ds = api.dataset(cases(4))
    agent = two_versions(api, priced("10", "50"), priced("10", "50", answer="43"))
    first = api.start(agent, ds, candidate="version", version=1)
    assert api.wait(first["run_id"])["status"] == "completed"
    paired = {"candidate": "version", "version": 2, "paired_baseline": True}
    assert estimate(api, agent, ds, **paired)["reused_baseline_run_id"] == first["run_id"]
    operator(eval_baseline_cache_hours=0)  # no run is young enough: the baseline runs again
    again = estimate(api, agent, ds, **paired)
    assert again["reused_baseline_run_id"] is None
    base = next(a for a in again["arms"] if a["role"] == "baseline")
    assert base["basis"] != "reused" and base["first_pass_usd"] == 0.008  # 4 x 2000 micro-USD


# --- the sweep ---------------------------------------------------------------------------------


def test_eval_abandoned_after_minutes_is_how_long_a_run_may_stand_still(
    api, container, frozen, operator
):
    operator(eval_abandoned_after_minutes=3)
    run = api.start(api.agent(sleepy_spec()), api.dataset(cases(4)))["run_id"]
    frozen.advance(minutes=2)
    assert run not in sweep.sweep(container).failed
    frozen.advance(minutes=1)  # 3 minutes: the default (10) would leave it running
    assert run in sweep.sweep(container).failed
    full = api.ok("GET", f"/api/v1/eval-runs/{run}")
    assert full["status"] == "failed"
    assert full["reason"].startswith("abandoned: no heartbeat and no progress for 3 minutes")


def test_eval_resend_after_seconds_is_how_long_before_unclaimed_tasks_are_sent_again(
    api, container, frozen, operator
):
    operator(eval_resend_after_seconds=300)
    run = api.start(api.agent(sleepy_spec()), api.dataset(cases(4)))["run_id"]
    frozen.advance(seconds=120)  # the default (60) would send its three tasks again now
    assert run not in sweep.sweep(container).resent
    frozen.advance(seconds=180)
    assert run in sweep.sweep(container).resent
    assert api.ok("GET", f"/api/v1/eval-runs/{run}/progress")["status"] == "running"


# --- suites ------------------------------------------------------------------------------------


def test_eval_suite_dependency_debounce_seconds_is_the_wait_after_a_dependency_changed(
    api, container, frozen, operator
):
    operator(eval_suite_dependency_debounce_seconds=60)
    frozen.at = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    agent = api.agent(sleepy_spec(), publish=1)
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 1},
    )
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={"dataset_id": api.dataset(cases(2)), "triggers": {"on_dependency_change": True}},
    )
    event = {
        "type": "dependency_changed",
        "org_id": api.org_id,
        "agent_id": agent,
        "version": 1,
        "dependency": {"kind": "knowledge_base", "id": "kb-1", "change": "reingested"},
    }
    try:
        agent_events.handle(container, signed(api, event))

        def runs() -> list[Any]:
            return api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"]

        frozen.at = datetime(2026, 6, 1, 12, 0, 59, tzinfo=UTC)
        suites.tick(container)
        assert runs() == []
        frozen.at = datetime(2026, 6, 1, 12, 1, 0, tzinfo=UTC)  # 60 s: the default waits 600
        suites.tick(container)
        assert len(runs()) == 1
    finally:
        for row in container.suites.of_org(api.org_id):
            suites.pause(container, row, "test over")  # later ticks leave it alone
