"""Verdicts beside an agent version (docs/concepts/verdicts.md): pass, partial, fail or none, from
the latest completed run of each evaluation (dataset) that covers the exact version, summed; stale
only for a draft whose spec changed since it was run."""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.conftest import cases, sleepy_spec
from tests.support.agents import held_spec, hold

PATHS = ["/api/v1/agent-summaries", "/api/evaluations/agent-summaries"]


def summaries(api, *asked: tuple[str, int | str], path: str = PATHS[0]) -> list[dict]:
    body = api.ok("POST", path, json={"agents": [{"agentId": a, "version": v} for a, v in asked]})
    return body["summaries"]


def summary(api, agent: str, version: int | str, path: str = PATHS[0]) -> dict:
    (one,) = summaries(api, (agent, version), path=path)
    assert one["agentId"] == one["agent_id"] == agent and one["version"] == version
    return one


def counts(s: dict) -> tuple:
    return s["verdict"], s["total"], s["passed"], s["evaluations"], s["stale"]


def run_version(api, agent: str, ds: str, version: int) -> dict:
    run = api.start(agent, ds, candidate="version", version=version)
    assert api.wait(run["run_id"])["status"] == "completed"
    return api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")


def run_draft(api, agent: str, ds: str) -> dict:
    run = api.start(agent, ds)
    assert api.wait(run["run_id"])["status"] == "completed"
    return api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")


def publish(api, agent: str, spec: dict) -> int:
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": spec})
    return api.ok("POST", f"/api/v1/agents/{agent}/versions")["version"]


@pytest.mark.parametrize("path", PATHS)
def test_a_version_never_run_is_none_not_fail(api, path):
    agent = api.agent(sleepy_spec(), publish=1)
    for version in (1, "draft", 7):
        s = summary(api, agent, version, path=path)
        assert counts(s) == ("none", 0, 0, 0, False)
        assert (s["failed"], s["last_completed_at"], s["run_ids"]) == (0, None, [])


@pytest.mark.parametrize("path", PATHS)
def test_all_passed_is_pass_some_is_partial_none_is_fail(api, path):
    ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec())
    v_all = publish(api, agent, sleepy_spec())
    v_some = publish(api, agent, sleepy_spec(answers={"c000": "41", "c003": "x"}))
    v_none = publish(api, agent, sleepy_spec(answer="0"))
    assert (v_all, v_some, v_none) == (1, 2, 3)
    for v in (v_all, v_some, v_none):
        run_version(api, agent, ds, v)

    got = summaries(api, (agent, 1), (agent, 2), (agent, 3), path=path)
    assert [counts(s) for s in got] == [
        ("pass", 4, 4, 1, False),
        ("partial", 4, 2, 1, False),
        ("fail", 4, 0, 1, False),
    ]
    assert [s["failed"] for s in got] == [0, 2, 4]


def test_two_datasets_covering_one_version_are_summed(api):
    ds_a, ds_b = api.dataset(cases(3)), api.dataset(cases(2))
    agent = api.agent(sleepy_spec(answers={"c000": "no"}), publish=1)
    run_a = run_version(api, agent, ds_a, 1)
    run_b = run_version(api, agent, ds_b, 1)
    s = summary(api, agent, 1)
    # Each dataset fails c000: 2 of 3 plus 1 of 2.
    assert counts(s) == ("partial", 5, 3, 2, False)
    assert s["failed"] == 2
    assert s["run_ids"] == sorted([run_a["run_id"], run_b["run_id"]])
    assert (
        s["last_completed_at"]
        == max(run_a["completed_at"], run_b["completed_at"])
        == run_b["completed_at"]
    )


def test_rerunning_a_dataset_replaces_its_contribution_rather_than_adding_to_it(api):
    ds = api.dataset(cases(3))
    agent = api.agent(sleepy_spec(), publish=1)
    first = run_version(api, agent, ds, 1)
    second = run_version(api, agent, ds, 1)
    s = summary(api, agent, 1)
    assert counts(s) == ("pass", 3, 3, 1, False)  # not 6 of 6
    assert s["run_ids"] == [second["run_id"]] and s["last_completed_at"] == second["completed_at"]
    assert second["completed_at"] > first["completed_at"]

    # The dataset moves on to a version the agent fails: the newest run alone decides.
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": cases(4, reference="7")},
    )
    third = run_version(api, agent, ds, 1)
    assert counts(summary(api, agent, 1)) == ("fail", 4, 0, 1, False)
    assert summary(api, agent, 1)["run_ids"] == [third["run_id"]]


def test_fixing_a_draft_and_rerunning_moves_its_verdict(api):
    ds = api.dataset(cases(3))
    agent = api.agent(sleepy_spec(answers={"c001": "wrong"}))
    run_draft(api, agent, ds)
    assert counts(summary(api, agent, "draft")) == ("partial", 3, 2, 1, False)
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec()})
    assert counts(summary(api, agent, "draft")) == ("partial", 3, 2, 1, True)
    run_draft(api, agent, ds)
    assert counts(summary(api, agent, "draft")) == ("pass", 3, 3, 1, False)


def test_a_run_that_did_not_complete_does_not_replace_the_completed_one(api):
    ds = api.dataset(cases(6))
    agent = api.agent(sleepy_spec())
    done = run_draft(api, agent, ds)
    h = hold(f"stopped-{uuid.uuid4().hex}")
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": held_spec(h.name, answer="0")})
    run = api.start(agent, ds)
    h.wait_in_flight(3)  # its cases are held: it is still running when cancelled
    cancelled = api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/cancel")
    assert cancelled["status"] == "cancelled"
    h.open()
    api.wait(run["run_id"], until=lambda p: p["in_flight"] == 0)
    assert h.answered == 3, h.seen()
    s = summary(api, agent, "draft")
    assert s["run_ids"] == [done["run_id"]]
    assert counts(s) == ("pass", 6, 6, 1, True)  # ...and stale: the draft changed since that run


def test_results_match_the_exact_version_only(api):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(), publish=1)
    publish(api, agent, sleepy_spec(answer="0"))  # v2 (and the draft) answer wrongly
    run_version(api, agent, ds, 1)
    assert counts(summary(api, agent, 1)) == ("pass", 2, 2, 1, False)
    assert counts(summary(api, agent, 2)) == ("none", 0, 0, 0, False)
    assert counts(summary(api, agent, "draft")) == ("none", 0, 0, 0, False)

    # A draft run counts for the draft only, though its spec is v2's exactly.
    run_draft(api, agent, ds)
    assert counts(summary(api, agent, "draft")) == ("fail", 2, 0, 1, False)
    assert counts(summary(api, agent, 2)) == ("none", 0, 0, 0, False)
    assert counts(summary(api, agent, 1)) == ("pass", 2, 2, 1, False)


def test_a_run_of_latest_counts_for_the_version_it_resolved_not_later_ones(api):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(), publish=2)  # v1 and v2, same spec
    run = api.start(agent, ds, candidate="latest")
    assert (run["resolved_version"], run["draft"]) == (2, False)
    api.wait(run["run_id"])
    publish(api, agent, sleepy_spec(answer="0"))  # v3 is now the latest
    assert [counts(s) for s in summaries(api, (agent, 1), (agent, 2), (agent, 3))] == [
        ("none", 0, 0, 0, False),
        ("pass", 2, 2, 1, False),
        ("none", 0, 0, 0, False),
    ]


def test_stale_only_for_a_draft_whose_spec_changed_since_the_run(api):
    ds = api.dataset(cases(2))
    spec = sleepy_spec()
    agent = api.agent(spec, publish=1)
    run_version(api, agent, ds, 1)
    run_draft(api, agent, ds)
    assert counts(summary(api, agent, "draft")) == ("pass", 2, 2, 1, False)

    # The same spec saved again with its keys in another order is the same content: not stale.
    reordered = {
        "options": dict(reversed(list(spec["options"].items()))),
        "entrypoint": spec["entrypoint"],
        "runtime": spec["runtime"],
    }
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": reordered})
    assert counts(summary(api, agent, "draft")) == ("pass", 2, 2, 1, False)

    # Another spec: the draft's pass now describes an agent that no longer exists.
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answer="changed")})
    assert counts(summary(api, agent, "draft")) == ("pass", 2, 2, 1, True)
    # A published version is immutable: never stale, whatever the draft does.
    assert counts(summary(api, agent, 1)) == ("pass", 2, 2, 1, False)

    # Back to the content that was run: fresh again.
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": spec})
    assert counts(summary(api, agent, "draft")) == ("pass", 2, 2, 1, False)


def test_last_completed_at_is_when_the_newest_contributing_run_completed(api):
    ds_a, ds_b = api.dataset(cases(1)), api.dataset(cases(1))
    agent = api.agent(sleepy_spec(), publish=1)
    a = run_version(api, agent, ds_a, 1)
    assert summary(api, agent, 1)["last_completed_at"] == a["completed_at"]
    b = run_version(api, agent, ds_b, 1)
    s = summary(api, agent, 1)
    assert s["last_completed_at"] == b["completed_at"] and b["completed_at"] >= a["completed_at"]
    assert s["last_completed_at"].endswith("Z")


def test_summaries_of_several_agents_in_one_request_keep_their_order(new_api):
    api = new_api()
    ds = api.dataset(cases(2))
    good = api.agent(sleepy_spec(), publish=1)
    bad = api.agent(sleepy_spec(answer="0"), publish=1)
    run_version(api, good, ds, 1)
    run_version(api, bad, ds, 1)
    got = summaries(api, (bad, 1), (good, 1), (good, "draft"))
    assert [(s["agentId"], s["version"], s["verdict"]) for s in got] == [
        (bad, 1, "fail"),
        (good, 1, "pass"),
        (good, "draft", "none"),
    ]
    # Another organization's runs of the same agent are not counted, nor even reachable.
    status, body = new_api().call(
        "POST", "/api/v1/agent-summaries", json={"agents": [{"agentId": good, "version": 1}]}
    )
    assert status == 404, body


def test_a_version_whose_verdict_rests_on_a_comparison_says_how_likely_its_regressions_are_luck(
    api,
):
    ds = api.dataset(cases(5))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    broken = publish(api, agent, sleepy_spec(answers={"c001": "7"}))
    run = api.start(agent, ds, candidate="version", version=broken, paired_baseline=True, reruns=1)
    assert api.wait(run["run_id"])["status"] == "completed"
    measured = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]["noise"]
    assert measured["sentence"].startswith("1 confirmed regression. ")
    s = summary(api, agent, broken)
    assert s["run_ids"] == [run["run_id"]]
    assert s["p_luck_regression"] == measured["p_luck_regression"]
    assert s["noise"] == [
        {
            "run_id": run["run_id"],
            "dataset_id": ds,
            "p_luck_regression": measured["p_luck_regression"],
            "sentence": measured["sentence"],
        }
    ]
    # A version measured alone rests on no comparison: nothing is said of luck.
    run_version(api, agent, api.dataset(cases(2)), 1)
    alone = summary(api, agent, 1)
    assert (alone["p_luck_regression"], alone["noise"]) == (None, [])
