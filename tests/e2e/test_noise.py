"""How far to trust a regression verdict, end to end (docs/concepts/noise.md): a run with a
baseline keeps its measured noise as `outcome.noise` with the run page's sentence; the gate's
text, JSON, Markdown and JUnit carry it; a run without a baseline has none."""

from __future__ import annotations

import json
import xml.etree.ElementTree as ET
from typing import Any

from chalicelib.domain import noise
from chalicelib.domain.enums import CaseOutcome
from tests.e2e.conftest import cases, sleepy_spec

BROKEN = {"c002": "7", "c005": "7", "c007": "7"}


def publish(api, agent_id: str, spec: dict[str, Any]) -> None:
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": spec})
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")


def test_a_compared_run_says_how_likely_its_confirmed_regressions_are_luck(api, cli, tmp_path):
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec(answers=BROKEN))
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True, reruns=2)
    assert api.wait(run["run_id"])["status"] == "completed"
    outcome = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]
    measured = outcome["noise"]
    # 10 first answers a side, and 2 reruns a side of each of the 3 flips: 32 decided tries.
    assert (measured["basis"], measured["tries"], measured["cases"]) == ("this_run", 32, 10)
    assert (measured["reruns"], measured["baseline_rerun"]) == (2, True)
    assert sorted(measured["per_flip"]) == ["c002", "c005", "c007"]
    assert len(measured["luck_by_reruns"]) == noise.MAX_RERUNS + 1
    assert measured["luck_by_reruns"][0] == 0.0 and measured["bound"] == 0.01
    # The same tries through the model give the same figures: 7 cases passed 2 of 2 (a try a
    # side), 3 cases passed 3 of 6 (the baseline's 3, the candidate's 0).
    tries = {f"c{i:03d}": noise.CaseTries(2, 2) for i in range(10)}
    tries |= {case: noise.CaseTries(3, 6) for case in BROKEN}
    expected = noise.estimate_noise(
        tries,
        reruns=2,
        baseline_rerun=True,
        basis="this_run",
        confirmed_flips=dict.fromkeys(BROKEN, CaseOutcome.REGRESSION),
    )
    assert expected is not None
    assert measured["p_luck_regression"] == expected.p_luck_regression
    sentence = measured["sentence"]
    assert sentence == noise.noise_sentence(expected, 3)
    assert sentence.startswith("3 confirmed regressions. ")
    assert "a candidate that changed nothing would show one in" in sentence

    junit, md = tmp_path / "junit.xml", tmp_path / "gate.md"
    gated = cli("gate", run["run_id"], "--junit", str(junit), "--markdown", str(md))
    assert gated.code == 1, gated.out + gated.err
    assert f"  noise: {sentence}" in gated.out.splitlines()
    assert f"Noise: {sentence}" in md.read_text()
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert props["noise"] == sentence
    as_json = json.loads(cli("gate", run["run_id"], "--json").out)
    assert as_json["run"]["outcome"]["noise"]["sentence"] == sentence


def test_a_run_without_a_baseline_measures_no_luck(api):
    run = api.start(api.agent(sleepy_spec()), api.dataset(cases(3)))
    assert api.wait(run["run_id"])["status"] == "completed"
    assert api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"].get("noise") is None


def test_max_luck_makes_regressions_likelier_luck_than_the_bound_inconclusive(api, cli, tmp_path):
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec(answers=BROKEN))
    junit, md = tmp_path / "junit.xml", tmp_path / "gate.md"
    done = cli(
        "run", agent, "--dataset", ds, "--version", "2", "--paired-baseline", "--reruns", "1",
        "--yes", "--wait", "--max-luck", "1%", "--json", "--junit", str(junit),
        "--markdown", str(md),
    )  # fmt: skip
    out = json.loads(done.out)
    measured = out["run"]["outcome"]["noise"]
    # 3 of 10 cases answered both ways, 1 rerun: luck well above 1 %.
    assert measured["p_luck_regression"] > 0.01
    assert done.code == 2, done.err
    settles = noise.reruns_under(measured["luck_by_reruns"], 0.01)
    luck = noise.percent(measured["p_luck_regression"])
    head = (
        '3 confirmed regressions: c002 "question 2", c005 "question 5", c007 "question 7"; but a '
        f"candidate that changed nothing would show a confirmed regression in {luck} of runs, "
        "over --max-luck 1 %; "
    )
    tail = (
        f"{settles} rerun{'s' * (settles != 1)} would bring that under 1 %"
        if settles is not None
        else f"no count of reruns up to 5 brings that under 1 %. {measured['advice']}"
    )
    assert out["gate"] == {"exit_code": 2, "result": "inconclusive", "reasons": [head + tail]}
    assert f"- {head + tail}" in md.read_text()
    props = {p.get("name"): p.get("value") for p in ET.parse(junit).getroot().iter("property")}
    assert (props["gate"], props["gate_reasons"]) == ("inconclusive", head + tail)

    run_id = out["run"]["run_id"]
    text = cli("gate", run_id, "--max-luck", "0.01")
    assert text.code == 2 and f"  - {head + tail}" in text.out.splitlines(), text.out
    # A bound the luck is within leaves the regression to break the gate.
    assert cli("gate", run_id, "--max-luck", "100%").code == 1
    refused = cli("gate", run_id, "--max-luck", "2")
    assert refused.code == 3 and "--max-luck" in refused.err


def test_a_stability_run_of_the_baseline_is_the_basis_of_a_later_comparison(api):
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    stable = api.start(agent, ds, candidate="version", version=1, stability=True, reruns=2)
    assert api.wait(stable["run_id"])["status"] == "completed"
    publish(api, agent, sleepy_spec(answers=BROKEN))
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True, reruns=2)
    assert api.wait(run["run_id"])["status"] == "completed"
    outcome = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]
    assert outcome["comparison"]["confirmed_regressions"] == 3
    measured = outcome["noise"]
    # The baseline is version 1 with the stability run's first answers, asked again here.
    assert outcome["comparison"]["baseline"]["source_run_id"] == stable["run_id"]
    # The stability run asked version 1 every case 3 times (30 passes); this run adds the
    # baseline's 2 reruns of each of the 3 flips (6 passes), its first answers being the
    # stability run's, not counted twice. The candidate's failures are a change, not noise:
    # they are left out.
    assert (measured["basis"], measured["tries"], measured["cases"]) == ("stability_run", 36, 10)
    tries = {f"c{i:03d}": noise.CaseTries(3, 3) for i in range(10)}
    tries |= {case: noise.CaseTries(5, 5) for case in BROKEN}
    expected = noise.estimate_noise(
        tries,
        reruns=2,
        baseline_rerun=True,
        basis="stability_run",
        confirmed_flips=dict.fromkeys(BROKEN, CaseOutcome.REGRESSION),
    )
    assert expected is not None
    assert measured["p_luck_regression"] == expected.p_luck_regression < 0.01
    assert measured["sentence"] == noise.noise_sentence(expected, 3)
    assert measured["sentence"].startswith(
        "3 confirmed regressions. With the noise its stability run measured, "
    )


def test_a_second_comparison_of_the_same_spec_rests_on_the_first_ones_tries(api):
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec(answers=BROKEN))
    paired = {"candidate": "version", "version": 2, "paired_baseline": True, "reruns": 2}
    first = api.start(agent, ds, **paired)
    assert api.wait(first["run_id"])["status"] == "completed"
    before = api.ok("GET", f"/api/v1/eval-runs/{first['run_id']}")["outcome"]["noise"]
    assert before["basis"] == "this_run"  # nothing earlier ran version 1 or 2 on this dataset
    run = api.start(agent, ds, **paired)
    assert api.wait(run["run_id"])["status"] == "completed"
    outcome = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]
    assert outcome["comparison"]["confirmed_regressions"] == 3
    # The second run's baseline (version 1) borrowed the first run's baseline first answers.
    assert outcome["comparison"]["baseline"]["source_run_id"] == first["run_id"]
    measured = outcome["noise"]
    # Version 1 in the first run: 10 first answers and 2 reruns of each of the 3 flips, all
    # passed (16); in this run only its own 2 reruns of each flip (6), its first answers being
    # the first run's, counted once. Both candidates' failures are a change, not noise: left out.
    assert (measured["basis"], measured["tries"], measured["cases"]) == ("history", 22, 10)
    tries = {f"c{i:03d}": noise.CaseTries(1, 1) for i in range(10)}
    tries |= {case: noise.CaseTries(5, 5) for case in BROKEN}
    expected = noise.estimate_noise(
        tries,
        reruns=2,
        baseline_rerun=True,
        basis="history",
        confirmed_flips=dict.fromkeys(BROKEN, CaseOutcome.REGRESSION),
    )
    assert expected is not None
    assert measured["p_luck_regression"] == expected.p_luck_regression
    assert measured["per_flip"] == expected.per_flip
    assert measured["sentence"] == noise.noise_sentence(expected, 3)
    assert measured["sentence"].startswith(
        "3 confirmed regressions. With the noise earlier runs of this spec measured, "
    )
