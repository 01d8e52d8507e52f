"""Slots (DESIGN §6, seed 004 "Running and cancelling"): at most EVAL_RUN_CONCURRENCY attempts of a
run and EVAL_ORG_CONCURRENCY of an organization are in flight, counted by the agent itself."""

from __future__ import annotations

import uuid

import pytest

from bench import agents
from tests.e2e.conftest import cases, sleepy_spec


@pytest.mark.parametrize(("run_limit", "org_limit"), [(3, 6), (2, 3), (4, 5)])
def test_three_concurrent_runs_never_exceed_the_run_or_organization_limit(
    api, container, limits, run_limit, org_limit
):
    limits(run_limit, org_limit)
    probe = f"org-{uuid.uuid4().hex}"
    ds = api.dataset(cases(9))
    # The first calls wait until more of them are in flight than one run may have (a barrier, so a
    # loaded machine cannot make the runs miss each other); were the limits wrong, they would wait
    # in vain for 30 s and the peaks below would tell.
    spec = sleepy_spec(sleep_ms=20, probe=probe)
    spec["options"]["hold_until"] = run_limit + 1
    agent = api.agent(spec)
    runs = [api.start(agent, ds) for _ in range(3)]
    for run in runs:
        assert api.wait(run["run_id"], timeout_s=120)["status"] == "completed"
    for run in runs:
        assert agents.calls(f"run:{run['run_id']}") == 9
        assert 1 <= agents.peak(f"run:{run['run_id']}") <= run_limit
    assert agents.peak(probe) <= org_limit
    # The runs shared the organization's slots: more attempts ran at once than one run may have.
    assert agents.peak(probe) > run_limit
    org = container.orgs.get(api.org_id)
    assert (org.in_flight, org.concurrency_limit, org.waiting) == (0, org_limit, [])


def test_a_run_that_gets_no_slot_waits_queued_and_starts_when_one_frees(api, container, limits):
    limits(2, 2)
    ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec(sleep_ms=150))
    first = api.start(agent, ds)
    second = api.start(agent, ds)
    assert second["status"] == "queued"
    assert container.orgs.get(api.org_id).waiting == [second["run_id"]]
    assert api.wait(second["run_id"], timeout_s=60)["status"] == "completed"
    assert api.wait(first["run_id"])["status"] == "completed"
    assert container.orgs.get(api.org_id).in_flight == 0
