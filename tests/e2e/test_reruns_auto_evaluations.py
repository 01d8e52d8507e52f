"""`reruns: "auto"` on an evaluation's start (`POST /api/evaluations/{id}/runs`) through the HTTP
API (docs/concepts/noise.md): the first comparison takes the default reruns and says why, and
measures the noise; the next start picks the smallest reruns in 1-5 whose chance of luck that
comparison measured is under EVAL_MAX_LUCK, keeps the choice as `reruns_auto` and says it in its
warnings; without a baseline, on a stability run or with another word, a 400 naming `reruns`."""

from __future__ import annotations

from chalicelib.domain import noise
from tests.e2e.conftest import cases, sleepy_spec

E = "/api/evaluations"
BROKEN = {"c002": "7", "c005": "7", "c007": "7"}
NO_HISTORY = "no earlier comparison measured the noise"


def publish(api, agent_id: str, spec: dict) -> None:
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": spec})
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")


def evaluation(api, agent_id: str, dataset_id: str) -> str:
    return api.ok("POST", E, json={"agent_id": agent_id, "dataset_id": dataset_id})["evaluation_id"]


def test_an_evaluation_start_chooses_its_reruns_from_the_noise_measured_before(api):
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec(answers=BROKEN))
    ev = evaluation(api, agent, ds)  # `latest`: version 2, against version 1

    # Nothing measured yet: the default reruns (EVAL_RERUNS, 2), and why.
    status, first = api.call(
        "POST", f"{E}/{ev}/runs", json={"paired_baseline": True, "reruns": "auto"}
    )
    assert status == 201, first
    assert f'reruns "auto": 2, the default: {NO_HISTORY}' in first["warnings"]
    assert api.wait(first["run_id"])["status"] == "completed"
    read = api.ok("GET", f"{E}/{ev}/runs/{first['run_id']}")
    assert read["reruns"] == 2
    assert read["reruns_auto"] == {
        "chosen": 2,
        "reason": NO_HISTORY,
        "from_run_id": None,
        "luck": None,
        "bound": 0.01,
    }
    measured = read["outcome"]["noise"]
    found = noise.reruns_under(measured["luck_by_reruns"], 0.01)
    chosen = found if found is not None else noise.MAX_RERUNS

    # The next start reads the noise the first one measured.
    status, second = api.call(
        "POST", f"{E}/{ev}/runs", json={"paired_baseline": True, "reruns": "auto"}
    )
    assert status == 201, second
    assert second["evaluation_id"] == ev
    read = api.ok("GET", f"{E}/{ev}/runs/{second['run_id']}")
    auto = read["reruns_auto"]
    assert (read["reruns"], auto["chosen"], auto["from_run_id"]) == (
        chosen,
        chosen,
        first["run_id"],
    )
    assert auto["luck"] == measured["luck_by_reruns"][chosen] and auto["bound"] == 0.01
    assert f'reruns "auto": {chosen}, {auto["reason"]}' in second["warnings"]
    assert f"run {first['run_id']} measured the noise" in auto["reason"]
    # The plain estimate of the same agent and dataset reads the same history.
    est = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, "version": 2, "paired_baseline": True, "reruns": "auto"},
    )
    assert est["reruns_auto"] == auto
    assert api.wait(second["run_id"])["status"] == "completed"


def test_an_evaluation_start_refuses_auto_where_nothing_is_compared_naming_reruns(api):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(), publish=1)  # a first version: nothing before it
    ev = evaluation(api, agent, ds)
    for body, said in (
        ({"reruns": "auto"}, "needs a baseline"),
        ({"reruns": "auto", "stability": True}, "a stability run compares nothing"),
        ({"reruns": "often"}, "'auto'"),
        ({"reruns": 6}, "5"),
    ):
        status, refused = api.call("POST", f"{E}/{ev}/runs", json=body)
        assert status == 400 and refused["error"]["field"] == "reruns", (body, refused)
        assert said in refused["error"]["message"], (body, refused)
    assert api.ok("GET", f"{E}/{ev}/runs")["runs"] == []  # nothing was started
