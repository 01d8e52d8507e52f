"""Stability runs (docs/concepts/verdicts.md): every case asked, then asked again;
nothing compared; noisy when two cases, or a fifth of those asked, came out both ways."""

from __future__ import annotations

import random

from tests.e2e.conftest import cases, sleepy_spec


def flaky_outcomes(seed: int, p: float, case_id: str, tries: int) -> list[bool]:
    """What bench.agents.flaky answers, recomputed here: right or wrong per try."""
    return [
        random.Random(f"{seed}#{case_id}#{attempt}").random() < p for attempt in range(1, tries + 1)
    ]


def test_a_flaky_agent_is_found_noisy_with_the_cases_it_answered_both_ways(api):
    spec = {
        "runtime": "python",
        "entrypoint": "bench.agents:flaky",
        "options": {"p": 0.7, "seed": 5},
    }
    run = api.start(api.agent(spec), api.dataset(cases(10)), stability=True)
    assert run["purpose"] == "stability"
    assert api.wait(run["run_id"])["status"] == "completed"
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    unstable = sum(len(set(flaky_outcomes(5, 0.7, f"c{i:03d}", 2))) == 2 for i in range(10))
    assert full["progress"]["recorded"] == 20
    assert full["stability"] == {"asked": 10, "unstable": unstable, "noisy": unstable >= 2}
    assert unstable >= 2  # the seed was chosen so that this agent is caught


def test_a_steady_agent_asked_three_times_is_not_noisy(api):
    run = api.start(
        api.agent(sleepy_spec(answers={"c001": "0"})),
        api.dataset(cases(5)),
        stability=True,
        reruns=2,
    )
    api.wait(run["run_id"])
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert full["progress"]["recorded"] == 15
    assert full["stability"] == {"asked": 5, "unstable": 0, "noisy": False}
    assert full["outcome"]["passed"] == 4


def test_a_stability_run_compares_nothing(api):
    agent = api.agent(sleepy_spec(), publish=1)
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={"dataset_id": api.dataset(cases(2)), "stability": True, "paired_baseline": True},
    )
    assert status == 400 and body["error"]["field"] == "paired_baseline"
