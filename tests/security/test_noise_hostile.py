"""Hostile and careless input to the noise features (docs/concepts/noise.md): a malformed
`reruns` on a start, an estimate and an evaluation's start is a 400 naming `reruns`, never a 500
(a malformed `--max-luck` or `--reruns`: tests/e2e/test_noise_flags.py)."""

from __future__ import annotations

import pytest

from tests.e2e.conftest import cases, sleepy_spec

MALFORMED = [
    "AUTO",
    "Auto",
    " auto",
    "auto ",
    "2",
    2.0,
    1.5,
    True,
    False,
    -1,
    6,
    10**30,
    -(10**30),
    [],
    {},
    ["auto"],
    {"auto": True},
    "",
]


def publish(api, agent_id: str, spec: dict) -> None:
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": spec})
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")


@pytest.fixture
def compared(api):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec())
    publish(api, agent, sleepy_spec())
    publish(api, agent, sleepy_spec())
    ev = api.ok("POST", "/api/evaluations", json={"agent_id": agent, "dataset_id": ds})
    return ds, agent, ev["evaluation_id"]


def test_a_malformed_reruns_is_a_400_naming_reruns_everywhere(api, compared):
    ds, agent, ev = compared
    paired = {"paired_baseline": True}
    for value in MALFORMED:
        for path, body in (
            (f"/api/v1/agents/{agent}/eval-runs/estimate", {"dataset_id": ds, "version": 2}),
            (f"/api/v1/agents/{agent}/eval-runs", {"dataset_id": ds, "version": 2}),
            (f"/api/evaluations/{ev}/runs", {}),
        ):
            status, said = api.call("POST", path, json={**body, **paired, "reruns": value})
            assert status == 400, (path, value, status, said)
            assert said["error"]["field"] == "reruns", (path, value, said)
    # null is the default, not an error
    status, said = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, "version": 2, "reruns": None, **paired},
    )
    assert status == 200 and said["reruns"] == 2, said
    assert api.ok("GET", f"/api/evaluations/{ev}/runs")["runs"] == []  # nothing was started


def test_auto_with_stability_or_without_a_baseline_is_a_400_naming_reruns(api, compared):
    ds, agent, ev = compared
    for path, body in (
        (f"/api/v1/agents/{agent}/eval-runs/estimate", {"dataset_id": ds, "stability": True}),
        (f"/api/v1/agents/{agent}/eval-runs", {"dataset_id": ds, "stability": True}),
        (f"/api/evaluations/{ev}/runs", {"stability": True}),
        (
            f"/api/v1/agents/{agent}/eval-runs",
            {"dataset_id": ds, "stability": True, "paired_baseline": True},
        ),
        (f"/api/v1/agents/{agent}/eval-runs", {"dataset_id": ds, "candidate": "draft"}),
        (f"/api/v1/agents/{agent}/eval-runs", {"dataset_id": ds, "version": 1}),
    ):
        status, said = api.call("POST", path, json={**body, "reruns": "auto"})
        assert status == 400, (path, body, said)
        assert said["error"]["field"] == "reruns", (path, body, said)


def test_reruns_as_a_bare_json_nan_infinity_or_a_huge_exponent_is_a_400_naming_reruns(
    api, compared
):
    ds, agent, ev = compared
    for raw in ("NaN", "Infinity", "-Infinity", "1e400", "2e0", "99999999999999999999999999"):
        for path, head in (
            (f"/api/v1/agents/{agent}/eval-runs/estimate", f'"dataset_id": "{ds}", '),
            (f"/api/v1/agents/{agent}/eval-runs", f'"dataset_id": "{ds}", '),
            (f"/api/evaluations/{ev}/runs", ""),
        ):
            content = "{" + head + '"paired_baseline": true, "reruns": ' + raw + "}"
            status, said = api.call(
                "POST", path, content=content, headers={"Content-Type": "application/json"}
            )
            assert status == 400, (path, raw, status, said)
            assert isinstance(said, dict) and said["error"].get("field") == "reruns", (raw, said)


def test_a_comparison_with_no_reruns_is_refused_or_priced_never_a_500(api, compared):
    ds, agent, _ = compared
    status, said = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={"dataset_id": ds, "version": 2, "paired_baseline": True, "reruns": 0},
    )
    assert status in (200, 400), said
    if status == 400:
        assert said["error"]["field"] == "reruns", said
