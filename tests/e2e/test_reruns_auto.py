"""`reruns: "auto"` through the HTTP API and the CLI (docs/concepts/noise.md): without an
earlier comparison the default reruns and why; after one, the smallest reruns in 1-5 whose
chance of luck that comparison measured is under EVAL_MAX_LUCK, priced like any other and kept
by the run; without a baseline a 400 naming `reruns`. The CLI says the choice and the reruns'
price on a line of its own, as the console does."""

from __future__ import annotations

import json

from assay.text import count, usd
from chalicelib.domain import noise
from tests.e2e.conftest import cases, sleepy_spec

BROKEN = {"c002": "7", "c005": "7", "c007": "7"}
PAIRED = {"candidate": "version", "version": 2, "paired_baseline": True}


def publish(api, agent_id: str, spec: dict) -> None:
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": spec})
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")


def broken_v2(api) -> tuple[str, str]:
    """A dataset of 10 cases and an agent whose v1 answers them all and v2 breaks three."""
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec(answers=BROKEN))
    return ds, agent


def measured_comparison(api, agent: str, ds: str) -> tuple[dict, dict, int]:
    """v2 beside v1 with 2 reruns, completed: the run, its `outcome.noise`, and the reruns
    `"auto"` picks from it (the smallest in 1-5 under 1 %, else 5)."""
    run = api.start(agent, ds, reruns=2, **PAIRED)
    assert api.wait(run["run_id"])["status"] == "completed"
    measured = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]["noise"]
    found = noise.reruns_under(measured["luck_by_reruns"], 0.01)
    return run, measured, found if found is not None else noise.MAX_RERUNS


def estimate(api, agent_id: str, dataset_id: str, **body) -> dict:
    return api.ok(
        "POST",
        f"/api/v1/agents/{agent_id}/eval-runs/estimate",
        json={"dataset_id": dataset_id, **body},
    )


def test_reruns_auto_reads_the_noise_the_newest_comparison_measured(api, cli):
    ds, agent = broken_v2(api)
    paired = PAIRED

    first = estimate(api, agent, ds, reruns="auto", **paired)
    assert first["reruns"] == 2  # EVAL_RERUNS: nothing measured yet
    assert first["reruns_auto"] == {
        "chosen": 2,
        "reason": "no earlier comparison measured the noise",
        "from_run_id": None,
        "luck": None,
        "bound": 0.01,
    }
    said = 'reruns "auto": 2, the default: no earlier comparison measured the noise'
    assert said in first["warnings"]

    run, measured, chosen = measured_comparison(api, agent, ds)

    est = estimate(api, agent, ds, reruns="auto", **paired)
    auto = est["reruns_auto"]
    assert (est["reruns"], auto["chosen"], auto["from_run_id"]) == (chosen, chosen, run["run_id"])
    assert auto["luck"] == measured["luck_by_reruns"][chosen] and auto["bound"] == 0.01
    assert f'reruns "auto": {chosen}, {auto["reason"]}' in est["warnings"]
    # Priced like the same count given by hand: the budget check sees it.
    by_hand = estimate(api, agent, ds, reruns=chosen, **paired)
    assert (est["rerun_ceiling_usd"], est["total_usd"]) == (
        by_hand["rerun_ceiling_usd"],
        by_hand["total_usd"],
    )

    started = api.start(agent, ds, reruns="auto", **paired)
    assert f'reruns "auto": {chosen}, {auto["reason"]}' in started["warnings"]
    read = api.ok("GET", f"/api/v1/eval-runs/{started['run_id']}")
    assert read["reruns"] == chosen and read["reruns_auto"] == auto

    # The CLI passes it: `assay estimate --reruns auto`.
    done = cli(
        "estimate", agent, "--dataset", ds, "--version", "2", "--paired-baseline",
        "--reruns", "auto", "--json",
    )  # fmt: skip
    assert done.code == 0, done.err
    assert json.loads(done.out)["reruns_auto"]["from_run_id"] in (run["run_id"], started["run_id"])
    api.wait(started["run_id"])


def test_reruns_auto_without_a_baseline_is_refused_naming_reruns(api, cli):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec())
    for path in ("/eval-runs/estimate", "/eval-runs"):
        status, body = api.call(
            "POST",
            f"/api/v1/agents/{agent}{path}",
            json={"dataset_id": ds, "candidate": "draft", "reruns": "auto"},
        )
        assert status == 400 and body["error"]["field"] == "reruns", body
        assert "needs a baseline" in body["error"]["message"]
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, "candidate": "draft", "reruns": "often"},
    )
    assert status == 400 and body["error"]["field"] == "reruns", body
    assert "'auto'" in body["error"]["message"]
    done = cli("estimate", agent, "--dataset", ds, "--draft", "--reruns", "9")
    assert done.code == 3 and "--reruns" in done.err and "0-5 or auto" in done.err


def test_the_cli_says_what_reruns_auto_chose_and_what_the_reruns_cost(api, cli):
    ds, agent = broken_v2(api)
    flags = ("--dataset", ds, "--version", "2", "--paired-baseline", "--reruns", "auto")
    paired = PAIRED

    # Nothing measured yet: the default, and the reruns' price, on a line of its own.
    est = estimate(api, agent, ds, reruns="auto", **paired)
    done = cli("estimate", agent, *flags)
    assert done.code == 0, done.err
    assert (
        "  Reruns: auto suggests 2 reruns of each flip: no earlier comparison measured the "
        f"noise. They cost up to {usd(est['rerun_ceiling_usd'])}.\n"
    ) in done.out
    assert 'reruns "auto"' not in done.out  # the line says it, not a warning besides

    run, measured, chosen = measured_comparison(api, agent, ds)
    est = estimate(api, agent, ds, reruns="auto", **paired)
    auto = est["reruns_auto"]
    assert (auto["chosen"], auto["from_run_id"]) == (chosen, run["run_id"])

    done = cli("estimate", agent, *flags)
    assert done.code == 0, done.err
    line = f"Reruns: auto suggests {count(chosen, 'rerun')} of each flip: {auto['reason']}."
    assert f"  {line} They cost up to {usd(est['rerun_ceiling_usd'])}.\n" in done.out
    assert f"run {run['run_id']} measured the noise" in done.out
    done = cli("estimate", agent, *flags, "--json")
    assert done.code == 0, done.err
    said = json.loads(done.out)
    assert (said["reruns_auto"], said["rerun_ceiling_usd"]) == (auto, est["rerun_ceiling_usd"])

    # `assay run`: the estimate's line before it starts, then what the start chose.
    done = cli("run", agent, *flags, "--yes")
    assert done.code == 0, done.err
    started = done.out.strip()
    assert f"  {line} They cost up to" in done.err
    assert f"Reruns: auto chose {count(chosen, 'rerun')} of each flip: {auto['reason']}.\n" in (
        done.err
    )
    assert 'warning: reruns "auto"' not in done.err
    read = api.ok("GET", f"/api/v1/eval-runs/{started}")
    assert (read["reruns"], read["reruns_auto"]) == (chosen, auto)
    api.wait(started)


def test_an_estimate_of_a_comparison_says_how_likely_its_reruns_leave_luck(api, cli):
    ds, agent = broken_v2(api)
    paired = PAIRED
    assert estimate(api, agent, ds, reruns=1, **paired)["luck"] is None  # nothing measured yet

    run, luck, found = measured_comparison(api, agent, ds)
    by_reruns = luck["luck_by_reruns"]

    est = estimate(api, agent, ds, reruns=1, **paired)
    said = est["luck"]
    assert (said["from_run_id"], said["reruns"], said["luck"], said["bound"]) == (
        run["run_id"],
        1,
        by_reruns[1],
        0.01,
    )
    assert said["suggested_reruns"] == found
    head = (
        f"With the noise run {run['run_id']} measured, a candidate that changed nothing would "
        f"show a confirmed regression in {noise.percent(by_reruns[1])} of runs at 1 rerun"
    )
    assert said["sentence"].startswith(head)
    # Three real regressions on ten cases read as noise at 1 rerun, not at more (and some count
    # up to 5 keeps it under 1 %: `found` is that count, not the 5 taken when none does).
    assert 1 < found and by_reruns[found] < 0.01, by_reruns
    # What the suggested reruns cost is what an estimate with that count says.
    priced = estimate(api, agent, ds, reruns=found, **paired)["rerun_ceiling_usd"]
    assert said["suggested_rerun_ceiling_usd"] == priced
    assert said["sentence"] == (
        f"{head}; {count(found, 'rerun')} bring that under 1 %, for reruns of up to {usd(priced)}."
    )
    done = cli("estimate", agent, "--dataset", ds, "--version", "2", "--paired-baseline",
               "--reruns", "1")  # fmt: skip
    assert done.code == 0, done.err
    assert f"  Luck: {said['sentence']}\n" in done.out

    # A stability run compares nothing: nothing said.
    stable = estimate(api, agent, ds, candidate="version", version=2, stability=True)
    assert stable["luck"] is None
