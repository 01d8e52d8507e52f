"""A baseline in the same run, confirmed flips and the verdict, end to end through the API
(docs/concepts/verdicts.md)."""

from __future__ import annotations

from tests.e2e.conftest import cases, sleepy_spec


def publish(api, agent_id: str, spec: dict) -> None:
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": spec})
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")


def test_a_deterministic_regression_of_three_cases_is_worse_and_names_them(api):
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())  # v1: all pass
    broken = {"c002": "7", "c005": "7", "c007": "7"}
    publish(api, agent, sleepy_spec(answers={**broken, "c009": "42"}))  # v2 breaks three
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True)
    assert [a["arm_id"] for a in run["arms"]] == ["candidate", "baseline"]
    assert run["arms"][1]["version"] == 1
    assert api.wait(run["run_id"])["status"] == "completed"
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    # 10 first answers per side + 2 reruns of each of the 3 flipped cases on both sides.
    assert full["progress"]["recorded"] == 10 * 2 + 3 * 2 * 2
    comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
    assert comparison["verdict"] == "worse"
    assert sorted(f["case_id"] for f in comparison["flips"] if f["confirmed"]) == [
        "c002",
        "c005",
        "c007",
    ]
    assert all(f["outcome"] == "regression" for f in comparison["flips"])
    assert {f["case_id"]: f["question"] for f in comparison["flips"]}["c005"] == "question 5"
    assert comparison["counts"]["regression"] == 3 and comparison["counts"]["unchanged"] == 7
    assert full["outcome"]["comparison_verdict"] == "worse"
    regressions = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/cases?outcome=regression")[
        "cases"
    ]
    assert [c["case_id"] for c in regressions] == ["c002", "c005", "c007"]
    c005 = regressions[1]
    assert [a["attempt"] for a in c005["arms"]["candidate"]["attempts"]] == [1, 2, 3]
    assert (
        c005["arms"]["baseline"]["settled"] == "passed"
        and c005["arms"]["candidate"]["settled"] == "failed"
    )
    spec = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/arms/baseline/spec")
    assert spec["version"] == 1 and spec["spec"]["options"].get("answers") is None
    changed = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/spec-changes")
    assert changed["candidate"]["version"] == 2 and changed["baseline"]["version"] == 1
    assert changed["changes"] == [
        {
            "path": "options.answers",
            "change": "added",
            "before": None,
            "after": {**broken, "c009": "42"},
            "lines": [],
            "cut": False,
        }
    ]
    assert changed["left_out"] == 0


def test_a_run_without_a_baseline_has_no_spec_changes_to_show(api):
    run = api.start(api.agent(sleepy_spec()), api.dataset(cases(2)))
    status, body = api.call("GET", f"/api/v1/eval-runs/{run['run_id']}/spec-changes")
    assert status == 409 and body["error"]["field"] == "run_id"


def test_a_flaky_agent_that_changed_nothing_confirms_no_flip(api):
    # Right 80% of the time on every try: a first answer flips with chance 2 x 0.8 x 0.2 = 0.32; a
    # regression confirms only if both candidate reruns fail and both baseline reruns pass
    # (0.2^2 x 0.8^2 = 0.0256), a fix likewise, so almost no flip holds.
    ds = api.dataset(cases(16))
    flaky = {
        "runtime": "python",
        "entrypoint": "bench.agents:flaky",
        "options": {"p": 0.8, "seed": 1},
    }
    agent = api.agent(flaky)
    publish(api, agent, flaky)
    publish(api, agent, {**flaky, "options": {"p": 0.8, "seed": 2}})  # same agent, other draws
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True, reruns=2)
    assert api.wait(run["run_id"])["status"] == "completed"
    comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
    assert len(comparison["flips"]) >= 3, "a coin-flip agent flips on first answers"
    assert comparison["verdict"] == "no_difference"
    assert comparison["overall"] is None
    assert any("changed once" in note for note in comparison["notes"])


def test_a_baseline_needs_a_version_before_it_and_at_least_one_rerun(api):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(), publish=1)
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={"dataset_id": ds, "candidate": "version", "version": 1, "paired_baseline": True},
    )
    assert status == 400 and body["error"]["field"] == "paired_baseline"
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={"dataset_id": ds, "version": 2, "paired_baseline": True, "reruns": 0},
    )
    assert status == 400 and body["error"]["field"] == "reruns"
    never = api.agent(sleepy_spec())
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{never}/eval-runs",
        json={"dataset_id": ds, "candidate": "draft", "paired_baseline": True},
    )
    assert status == 400 and body["error"]["field"] == "paired_baseline"


def test_a_draft_is_compared_with_the_published_version(api):
    ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec(answers={"c000": "0"}), publish=1)  # v1 fails c000
    api.ok(
        "PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec()}
    )  # the draft fixes it
    run = api.start(agent, ds, paired_baseline=True)
    assert api.wait(run["run_id"])["status"] == "completed"
    comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
    assert comparison["verdict"] == "better"
    assert [(f["case_id"], f["outcome"], f["confirmed"]) for f in comparison["flips"]] == [
        ("c000", "fixed", True)
    ]


def test_a_run_without_a_baseline_has_no_comparison(api):
    run = api.start(api.agent(sleepy_spec()), api.dataset(cases(2)))
    api.wait(run["run_id"])
    status, body = api.call("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
    assert status == 404 and body["error"]["field"] == "run_id"


def test_each_arm_is_summarised_per_tag_with_an_interval_and_efficiency_beside_the_verdict(api):
    tagged = [
        {
            "case_id": f"c{i:03d}",
            "input": f"question {i}",
            "reference": "42",
            "tags": ["math"] + (["hard"] if i < 2 else []),
        }
        for i in range(6)
    ]
    ds = api.dataset(tagged)
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec(answers={"c000": "0", "c001": "0"}))  # v1 fails both hard cases
    publish(api, agent, sleepy_spec(answers={"c001": "0"}))  # v2 fixes c000
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True, reruns=1)
    api.wait(run["run_id"])
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    cand, base = full["summaries"]["candidate"], full["summaries"]["baseline"]
    assert (cand["quality"]["passed"], base["quality"]["passed"]) == (5, 4)
    assert (
        cand["tags"]["hard"]["quality"]["passed"] == 1
        and cand["tags"]["hard"]["quality"]["cases"] == 2
    )
    assert base["tags"]["hard"]["quality"]["pass_rate"] == 0.0
    assert cand["tags"]["math"]["quality"]["cases"] == 6
    low, high = cand["quality"]["pass_rate_interval_95"]
    assert round(low, 4) == 0.4365 and round(high, 4) == 0.9699  # Wilson, 5 of 6
    assert cand["could_not_run"] is None
    comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
    assert comparison["verdict"] == "better"
    # No price: nothing spent on either side; 7 answers of 120 tokens over 6 cases on both sides.
    assert set(comparison["efficiency"]) == {
        "cost_per_passed_case_micros",
        "tokens_per_case",
        "latency_p50_ms",
        "latency_p95_ms",
    }
    assert comparison["efficiency"]["cost_per_passed_case_micros"] == "unchanged"
    assert comparison["efficiency"]["tokens_per_case"] == "unchanged"
    assert cand["efficiency"]["tokens_per_case"] == 140.0
    assert comparison["pass_rate_before"] == 4 / 6 and comparison["pass_rate_after"] == 5 / 6


def test_a_side_whose_every_answer_failed_with_one_error_says_so_instead_of_a_verdict(api):
    ds = api.dataset(cases(3))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(
        api, agent, {"runtime": "http", "url": "http://127.0.0.1:9/answer"}
    )  # nothing listens there
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True, reruns=1)
    api.wait(run["run_id"])
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert full["summaries"]["candidate"]["could_not_run"]
    comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
    assert comparison["verdict"] is None and "candidate" in comparison["could_not_run"]


def test_a_recent_matching_baseline_arm_is_reused_for_its_first_answers_at_no_cost(api):
    ds = api.dataset(cases(6))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())  # v1 passes everything
    publish(api, agent, sleepy_spec(answers={"c004": "1"}))  # v2 breaks c004
    first = api.start(agent, ds, candidate="version", version=2, paired_baseline=True, reruns=1)
    api.wait(first["run_id"])
    second = api.start(agent, ds, candidate="version", version=2, paired_baseline=True, reruns=1)
    assert second["reused_baseline_run_id"] == first["run_id"]
    baseline_arm = second["arms"][1]
    assert (baseline_arm["source_run_id"], baseline_arm["answers"], baseline_arm["version"]) == (
        first["run_id"],
        False,
        1,
    )
    api.wait(second["run_id"])
    full = api.ok("GET", f"/api/v1/eval-runs/{second['run_id']}")
    # 6 candidate first answers + 1 rerun of c004 on each side; the baseline's first answers are
    # borrowed.
    assert full["progress"]["recorded"] == 6 + 2
    comparison = api.ok("GET", f"/api/v1/eval-runs/{second['run_id']}/comparison")
    assert (
        comparison["verdict"] == "worse"
        and comparison["baseline"]["source_run_id"] == first["run_id"]
    )
    assert [(f["case_id"], f["confirmed"]) for f in comparison["flips"]] == [("c004", True)]
    borrowed = [r for r in full["results"] if r["arm_id"] == "baseline" and r["attempt"] == 1]
    assert len(borrowed) == 6 and all(r["cost_usd"] == 0 for r in borrowed)


def test_a_baseline_arm_on_another_dataset_version_is_not_reused(api):
    ds = api.dataset(cases(3))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec())
    first = api.start(agent, ds, candidate="version", version=2, paired_baseline=True)
    api.wait(first["run_id"])
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": cases(3)},
    )  # version 2 of the dataset
    second = api.start(agent, ds, candidate="version", version=2, paired_baseline=True)
    assert second["reused_baseline_run_id"] is None
    assert second["arms"][1]["answers"] is True


def test_without_asking_a_run_is_compared_with_the_last_run_of_the_version_before(api):
    ds = api.dataset(cases(5))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec(answers={"c001": "0"}))  # v1 fails c001
    alone = api.start(agent, ds, candidate="version", version=1)
    assert (
        alone["missing_baseline_version"] is None and len(alone["arms"]) == 1
    )  # nothing before v1
    api.wait(alone["run_id"])
    publish(api, agent, sleepy_spec())  # v2 fixes it
    run = api.start(agent, ds, candidate="version", version=2)
    assert run["reused_baseline_run_id"] == alone["run_id"]
    api.wait(run["run_id"])
    comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
    assert comparison["verdict"] == "better"
    assert [(f["case_id"], f["outcome"]) for f in comparison["flips"]] == [("c001", "fixed")]


def test_with_no_run_of_the_version_before_the_run_says_which_version_is_missing(api):
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec())
    run = api.start(agent, api.dataset(cases(2)), candidate="version", version=2)
    assert run["missing_baseline_version"] == 1 and len(run["arms"]) == 1


def test_an_earlier_run_of_the_same_version_is_a_baseline_that_is_not_rerun(api):
    ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec(answers={"c002": "0"}), publish=1)
    earlier = api.start(agent, ds, candidate="version", version=1)
    api.wait(earlier["run_id"])
    run = api.start(agent, ds, candidate="version", version=1, baseline_run_id=earlier["run_id"])
    assert run["arms"][1]["rerun"] is False, "the candidate itself at an earlier time"
    api.wait(run["run_id"])
    comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
    assert comparison["verdict"] == "no_difference" and comparison["counts"]["unchanged"] == 4
    other = api.dataset(cases(4))
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={"dataset_id": other, "version": 1, "baseline_run_id": earlier["run_id"]},
    )
    assert status == 400 and body["error"]["field"] == "baseline_run_id"
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={"dataset_id": ds, "version": 1, "baseline_run_id": "run_nope"},
    )
    assert status == 404 and body["error"]["field"] == "baseline_run_id"


def test_several_models_run_side_by_side_and_each_is_compared_with_the_baseline_on_the_first(api):
    for pid, model, price in (("small", "m-small", "0.10"), ("large", "m-large", "1.00")):
        api.ok(
            "POST",
            "/api/v1/model-profiles",
            json={
                "model_profile_id": pid,
                "model": model,
                "temperature": 0,
                "price": {"input_per_mtok_usd": price, "output_per_mtok_usd": price},
            },
        )
    status, body = api.call(
        "POST", "/api/v1/model-profiles", json={"model_profile_id": "small", "model": "x"}
    )
    assert status == 409
    ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec(answers={"c003": "1"}))
    run = api.start(
        agent,
        ds,
        candidate="version",
        version=2,
        paired_baseline=True,
        reruns=1,
        model_profile_ids=["small", "large"],
    )
    assert [(a["arm_id"], a["role"], a["model_profile_id"]) for a in run["arms"]] == [
        ("candidate", "candidate", "small"),
        ("candidate:large", "candidate", "large"),
        ("baseline", "baseline", "small"),
    ]
    assert api.wait(run["run_id"])["status"] == "completed"
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    # 100 in + 20 out per answer: $0.10/M -> 12 micro-USD; $1.00/M -> 120 micro-USD.
    small, large = full["summaries"]["candidate"], full["summaries"]["candidate:large"]
    assert small["efficiency"]["cost_usd"] == 5 * 12 / 1e6  # 4 first answers + 1 rerun
    assert large["efficiency"]["cost_usd"] == 5 * 120 / 1e6
    for arm in ("candidate", "candidate:large"):
        comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison?arm_id={arm}")
        assert comparison["candidate_arm_id"] == arm and comparison["verdict"] == "worse"
        assert [f["case_id"] for f in comparison["flips"] if f["confirmed"]] == ["c003"]
    status, body = api.call("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison?arm_id=baseline")
    assert status == 404 and body["error"]["field"] == "arm_id"
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={"dataset_id": ds, "model_profile_ids": ["small", "nope"]},
    )
    assert status == 404 and body["error"]["field"] == "model_profile_ids[1]"


def test_sides_scored_with_different_scoring_settings_are_invalid_and_give_no_verdict(api):
    ds = api.dataset(cases(3))  # version 1: equals
    agent = api.agent(sleepy_spec(answers={"c000": "0"}), publish=1)
    earlier = api.start(agent, ds, candidate="version", version=1)
    api.wait(earlier["run_id"])
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",  # version 2: contains
        json={"scoring": {"required": ["contains"]}, "cases": cases(3)},
    )
    publish(api, agent, sleepy_spec())
    run = api.start(
        agent, ds, candidate="version", version=2, baseline_run_id=earlier["run_id"], reruns=1
    )
    api.wait(run["run_id"])
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert full["progress"]["recorded"] == 3, "an invalid comparison asks for no reruns"
    comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
    assert comparison["verdict"] == "invalid"
    assert comparison["invalid_reason"] == "the sides were scored with different scoring settings"
    assert comparison["confirmed_fixes"] == 0


def test_a_run_compared_without_reruns_says_so_and_confirms_no_flip(api):
    ds = api.dataset(cases(3))
    agent = api.agent(sleepy_spec(answers={"c000": "0"}), publish=1)
    api.wait(api.start(agent, ds, candidate="version", version=1)["run_id"])
    publish(api, agent, sleepy_spec())
    run = api.start(agent, ds, candidate="version", version=2, reruns=0)  # the default baseline
    api.wait(run["run_id"])
    comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
    assert [(f["case_id"], f["confirmed"]) for f in comparison["flips"]] == [("c000", False)]
    assert comparison["verdict"] == "no_difference"
    assert any("without reruns" in note for note in comparison["notes"])


def test_a_tag_compares_only_the_cases_under_it(api):
    tagged = [{**case, "tags": ["hard" if i < 3 else "easy"]} for i, case in enumerate(cases(6))]
    ds = api.dataset(tagged)
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec(answers={"c001": "7", "c004": "7"}))  # one broken per tag
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True)
    assert api.wait(run["run_id"])["status"] == "completed"
    path = f"/api/v1/eval-runs/{run['run_id']}/comparison"
    whole = api.ok("GET", path)
    assert whole["counts"]["regression"] == 2 and whole["counts"]["unchanged"] == 4
    hard = api.ok("GET", path, params={"tag": "hard"})
    assert [f["case_id"] for f in hard["flips"]] == ["c001"]
    assert hard["counts"]["regression"] == 1 and hard["counts"]["unchanged"] == 2
    assert hard["pass_rate_before"] == 1.0 and round(hard["pass_rate_after"], 3) == 0.667
    untagged = api.ok("GET", path, params={"tag": "nobody"})
    assert untagged["flips"] == [] and not any(untagged["counts"].values())
    # the run's kept verdict is still over every case
    assert (
        api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]["comparison"][
            "confirmed_regressions"
        ]
        == 2
    )
