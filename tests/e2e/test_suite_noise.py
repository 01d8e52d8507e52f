"""A suite result that rests on confirmed regressions says how likely they are luck: its
reasons, and so the owner's notice and the suite page, end with the run's noise sentence
(docs/guides/suites.md, docs/concepts/noise.md)."""

from __future__ import annotations

import pytest

from chalicelib.services import suites
from tests.e2e.conftest import cases, sleepy_spec, wait_for


@pytest.fixture(autouse=True)
def quiet_suites(api, container):
    """Pause this test's suites afterwards, so later ticks of the shared stack leave them alone."""
    yield
    for row in container.suites.of_org(api.org_id):
        suites.pause(container, row, "test over")


def test_a_failing_suite_result_ends_its_reasons_with_the_noise_sentence(api):
    right = {f"c{i:03d}": "42" for i in range(5)}
    agent = api.agent(sleepy_spec(answers=right))
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 1},
    )
    sid = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={"dataset_id": api.dataset(cases(5)), "triggers": {"on_publish": True}},
    )["suite_id"]
    broken = {**right, "c000": "41", "c001": "41"}
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answers=broken)})
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    path = f"/api/v1/agents/{agent}/suites/{sid}/results"
    [result] = wait_for(lambda: api.ok("GET", path)["results"])
    assert result["result"] == "failed" and result["cases_broken"] == ["c000", "c001"]
    run = api.ok("GET", f"/api/v1/eval-runs/{result['run_id']}")
    sentence = run["outcome"]["noise"]["sentence"]
    assert sentence.startswith("2 confirmed regressions. ")
    assert result["reasons"] == ["2 confirmed regressions, 0 allowed", sentence]
    [notice] = wait_for(lambda: api.ok("GET", "/api/v1/notifications")["notifications"])
    assert f"- {sentence}" in notice["body"].splitlines()
