"""The noise features (docs/concepts/noise.md) against what a tenant or a careless user does to
the runs they rest on, through the HTTP API and the CLI: another organization's runs never move
an organization's `luck` or `reruns_auto`; an earlier run deleted while a comparison is under way
does not stop it completing; a dataset on which every answer errors gives no noise line; a review
decision that overturns a confirmed regression computes `outcome.noise` again to match."""

from __future__ import annotations

from tests.e2e.conftest import cases, sleepy_spec
from tests.support import leaky_agent

BROKEN = {"c002": "7", "c005": "7", "c007": "7"}
NO_HISTORY = "no earlier comparison measured the noise"


def publish(api, agent_id: str, spec: dict) -> None:
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": spec})
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")


def regressed(api) -> tuple[str, str, dict]:
    """10 cases, v2 breaking three that v1 passes, and the completed run of v2 against v1."""
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec(answers=BROKEN))
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True, reruns=1)
    assert api.wait(run["run_id"])["status"] == "completed"
    return ds, agent, api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")


PAIRED = {"candidate": "version", "version": 2, "paired_baseline": True}


def test_another_organizations_runs_never_move_an_organizations_luck(api, new_api):
    ds, agent, run = regressed(api)
    assert run["outcome"]["noise"]["basis"] == "this_run"
    theirs = new_api()
    # The same agent and dataset ids from another organization: not found, nothing said.
    for path in ("/eval-runs/estimate", "/eval-runs"):
        status, said = theirs.call(
            "POST",
            f"/api/v1/agents/{agent}{path}",
            json={"dataset_id": ds, **PAIRED, "reruns": "auto"},
        )
        assert status == 404, said
        assert run["run_id"] not in str(said)
    ev = api.ok("POST", "/api/evaluations", json={"agent_id": agent, "dataset_id": ds})
    status, said = theirs.call(
        "POST",
        f"/api/evaluations/{ev['evaluation_id']}/runs",
        json={"paired_baseline": True, "reruns": "auto"},
    )
    assert status == 404 and run["run_id"] not in str(said), said
    status, said = theirs.call(
        "POST",
        f"/api/evaluations/{run['evaluation_id']}/runs",  # the implied one, of a known shape
        json={"paired_baseline": True, "reruns": "auto"},
    )
    assert status == 404 and run["run_id"] not in str(said), said
    status, said = theirs.call("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert status == 404 and run["run_id"] not in str(said.get("outcome"))
    # Their own agent and dataset, run for run the same: their history is theirs alone.
    their_ds, their_agent = theirs.dataset(cases(10)), theirs.agent(sleepy_spec())
    publish(theirs, their_agent, sleepy_spec())
    publish(theirs, their_agent, sleepy_spec(answers=BROKEN))
    est = theirs.ok(
        "POST",
        f"/api/v1/agents/{their_agent}/eval-runs/estimate",
        json={"dataset_id": their_ds, **PAIRED, "reruns": "auto"},
    )
    assert est["reruns_auto"]["from_run_id"] is None and est["reruns_auto"]["reason"] == NO_HISTORY
    assert est["luck"] is None
    # Naming the other organization's run as a baseline is refused, naming it.
    status, said = theirs.call(
        "POST",
        f"/api/v1/agents/{their_agent}/eval-runs",
        json={"dataset_id": their_ds, "candidate": "version", "version": 2,
              "baseline_run_id": run["run_id"], "reruns": "auto"},
    )  # fmt: skip
    assert status in (400, 404) and said["error"]["field"] == "baseline_run_id", said
    # Their comparison rests on their runs only, and the first organization's luck on its own.
    started = theirs.start(their_agent, their_ds, reruns=1, **PAIRED)
    assert theirs.wait(started["run_id"])["status"] == "completed"
    est = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, **PAIRED, "reruns": "auto"},
    )
    assert est["reruns_auto"]["from_run_id"] == run["run_id"]
    assert est["luck"]["from_run_id"] == run["run_id"]
    mine = theirs.ok("GET", f"/api/v1/eval-runs/{started['run_id']}")["outcome"]["noise"]
    assert mine["basis"] == "this_run", mine  # not the first organization's earlier run


def test_an_earlier_run_deleted_while_a_comparison_runs_leaves_it_completing(api, stack):
    ds, agent, first = regressed(api)
    stability = api.start(agent, ds, candidate="version", version=1, stability=True)
    assert api.wait(stability["run_id"])["status"] == "completed"
    stack.pause_pollers()
    try:
        started = api.start(agent, ds, reruns=1, **PAIRED)
        api.ok("DELETE", f"/api/v1/eval-runs/{first['run_id']}")
        api.ok("DELETE", f"/api/v1/eval-runs/{stability['run_id']}")
    finally:
        stack.resume_pollers()
    read = api.wait(started["run_id"])
    assert read["status"] == "completed", read
    measured = api.ok("GET", f"/api/v1/eval-runs/{started['run_id']}")["outcome"]["noise"]
    assert measured["basis"] == "this_run", measured  # the runs it would have rested on are gone
    assert measured["sentence"].startswith("3 confirmed regressions."), measured


def test_a_dataset_on_which_every_answer_errors_gives_no_noise_line(api, cli):
    ds = api.dataset(cases(4))
    erring = leaky_agent.spec({"provider_error": "the provider is down"})
    agent = api.agent(erring)
    publish(api, agent, erring)
    publish(api, agent, erring)
    run = api.start(agent, ds, reruns=1, **PAIRED)
    assert api.wait(run["run_id"])["status"] == "completed"
    read = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert (read["outcome"] or {}).get("noise") is None, read["outcome"]
    done = cli("gate", run["run_id"], "--max-luck", "1%")
    assert done.code in (1, 2), done
    assert "noise:" not in done.out + done.err and "Traceback" not in done.err
    # An estimate after it: nothing measured, the default reruns.
    est = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, **PAIRED, "reruns": "auto"},
    )
    assert est["reruns_auto"]["reason"] == NO_HISTORY and est["luck"] is None


def test_a_decision_that_overturns_a_confirmed_regression_recomputes_the_noise(api, cli):
    ds, _, run = regressed(api)
    run_id = run["run_id"]
    before = run["outcome"]["noise"]
    assert before["sentence"].startswith("3 confirmed regressions.")
    assert sorted(before["per_flip"]) == ["c002", "c005", "c007"]
    items = api.ok("GET", f"/api/v1/datasets/{ds}/review?state=waiting")["items"]
    item = next(i for i in items if i["case_id"] == "c005")
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/review/{item['item_id']}/decision",
        json={"verdict": "pass"},
    )
    after = api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"]
    assert after["comparison"]["confirmed_regressions"] == 2
    measured = after["noise"]
    assert measured["sentence"].startswith("2 confirmed regressions."), measured
    assert sorted(measured["per_flip"]) == ["c002", "c007"]
    done = cli("gate", run_id)
    assert done.code == 1, done
    assert "2 confirmed regressions." in done.out + done.err
    # Every confirmed regression overturned: the noise says none, the gate passes.
    for other in (i for i in items if i["case_id"] != "c005"):
        api.ok(
            "POST",
            f"/api/v1/datasets/{ds}/review/{other['item_id']}/decision",
            json={"verdict": "pass"},
        )
    after = api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"]
    assert after["comparison"]["confirmed_regressions"] == 0
    assert after["noise"]["sentence"].startswith("No confirmed regression."), after["noise"]
    assert after["noise"]["per_flip"] == {}
    done = cli("gate", run_id, "--max-luck", "1%")
    assert done.code == 0, done
    for each in items:
        api.ok("POST", f"/api/v1/datasets/{ds}/review/{each['item_id']}/undo")
    assert api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"]["noise"] == before


def test_the_run_a_baseline_borrowed_from_deleted_mid_way_leaves_it_completing(api, stack):
    ds, agent, first = regressed(api)
    publish(api, agent, sleepy_spec())  # v3 answers every case again
    stack.pause_pollers()
    try:
        started = api.start(
            agent, ds, candidate="version", version=3, baseline_run_id=first["run_id"], reruns=1
        )
        api.ok("DELETE", f"/api/v1/eval-runs/{first['run_id']}")
    finally:
        stack.resume_pollers()
    assert api.wait(started["run_id"])["status"] == "completed"
    outcome = api.ok("GET", f"/api/v1/eval-runs/{started['run_id']}")["outcome"]
    assert outcome["comparison"]["confirmed_fixes"] == 3, outcome["comparison"]
    measured = outcome["noise"]
    assert measured["basis"] == "this_run" and measured["tries"] > 0, measured
    assert measured["sentence"].startswith("No confirmed regression."), measured


def test_an_estimate_with_no_reruns_says_nothing_is_confirmed_rather_than_0_percent(api, cli):
    """v2 against v1's earlier run (an implied baseline) with `--reruns 0`: allowed, and its luck
    sentence says no regression can be confirmed, not that luck shows one in 0 % of runs."""
    ds, agent, run = regressed(api)
    v1 = api.start(agent, ds, candidate="version", version=1)
    assert api.wait(v1["run_id"])["status"] == "completed"
    est = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, "candidate": "version", "version": 2, "reruns": 0},
    )
    luck = est["luck"]
    assert luck["from_run_id"] == run["run_id"] and luck["reruns"] == 0
    assert luck["sentence"].startswith("Without reruns nothing is confirmed"), luck
    assert "0 % of runs" not in luck["sentence"]
    done = cli("estimate", agent, "--dataset", ds, "--version", "2", "--reruns", "0")
    assert done.code == 0, done.err
    assert f"  Luck: {luck['sentence']}\n" in done.out


def test_a_decision_and_its_undo_leave_the_noise_of_runs_resting_on_the_answer_as_it_was(api):
    """A borrower's noise rests on the run whose answer is decided (basis `history`): the outcome
    a decision plans before writing must read that run's answer with the new verdict, not as it
    stood, so that Undo brings back exactly the noise the run finalized with."""
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec(answers={"c000": "7"}))
    source = api.start(agent, ds)["run_id"]
    assert api.wait(source)["status"] == "completed"
    api.ok("POST", f"/api/v1/eval-runs/{source}/review", json={})
    borrowers = [api.start(agent, ds, baseline_run_id=source)["run_id"] for _ in range(3)]
    for run_id in borrowers:
        assert api.wait(run_id)["status"] == "completed"
    before = {r: api.ok("GET", f"/api/v1/eval-runs/{r}")["outcome"]["noise"] for r in borrowers}
    assert {n["basis"] for n in before.values()} == {"history"}
    [item] = api.ok("GET", f"/api/v1/datasets/{ds}/review")["items"]
    path = f"/api/v1/datasets/{ds}/review/{item['item_id']}"
    api.ok("POST", f"{path}/decision", json={"verdict": "pass"})
    api.ok("POST", f"{path}/undo")
    for run_id in borrowers:
        assert api.ok("GET", f"/api/v1/eval-runs/{run_id}")["outcome"]["noise"] == before[run_id]
