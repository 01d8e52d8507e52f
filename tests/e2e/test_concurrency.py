"""Slots (docs/architecture/slots.md, docs/architecture/run-lifecycle.md): at most
EVAL_RUN_CONCURRENCY attempts of a run and EVAL_ORG_CONCURRENCY of an organization are in flight,
counted by the agent itself.

The agent holds every call until the test lets it answer, so the calls in flight only grow while
the test looks: "the limit ran at once" is a state the test waits for (a barrier), never a peak a
fast enough machine happened to reach, and "never more than the limit" is checked while they are
all held and over the whole run."""

from __future__ import annotations

import uuid

import pytest

from tests.e2e.conftest import cases
from tests.support.agents import held_spec, hold


@pytest.mark.parametrize(("run_limit", "org_limit"), [(3, 6), (2, 3), (4, 5)])
def test_three_concurrent_runs_never_exceed_the_run_or_organization_limit(
    api, container, limits, run_limit, org_limit
):
    limits(run_limit, org_limit)
    h = hold(f"org-{uuid.uuid4().hex}")
    ds = api.dataset(cases(9))
    agent = api.agent(held_spec(h.name))
    runs = [api.start(agent, ds)["run_id"] for _ in range(3)]
    # The barrier: the organization's whole limit is in flight at once, none has answered.
    h.wait_in_flight(org_limit)
    org = container.orgs.get(api.org_id)
    assert (h.in_flight, h.answered, org.in_flight) == (org_limit, 0, org_limit), h.seen()
    held_now = [h.run_in_flight[r] for r in runs]
    assert sum(held_now) == org_limit and max(held_now) == run_limit, held_now
    progress = [api.ok("GET", f"/api/v1/eval-runs/{r}/progress") for r in runs]
    assert [p["in_flight"] for p in progress] == held_now, progress
    # A run that got no slot waits for one.
    assert all(r in org.waiting for r, n in zip(runs, held_now, strict=True) if n == 0), org

    h.open()
    for run_id in runs:
        assert api.wait(run_id)["status"] == "completed"
    for run_id in runs:
        assert h.run_calls[run_id] == 9
        assert 1 <= h.run_peak[run_id] <= run_limit, (run_id, h.seen())
    assert max(h.run_peak[r] for r in runs) == run_limit
    assert h.peak == org_limit, h.seen()
    org = container.orgs.get(api.org_id)
    assert (org.in_flight, org.own_concurrency_limit, org.waiting) == (0, None, [])
    assert org.concurrency_limit(container.settings.eval_org_concurrency) == org_limit


def test_a_run_that_gets_no_slot_waits_queued_and_starts_when_one_frees(api, container, limits):
    limits(2, 2)
    h = hold(f"queued-{uuid.uuid4().hex}")
    ds = api.dataset(cases(4))
    agent = api.agent(held_spec(h.name))
    first = api.start(agent, ds)
    second = api.start(agent, ds)
    assert second["status"] == "queued"
    h.wait_in_flight(2)
    # Both slots are the first run's, its cases cannot end: the second waits, asking nothing.
    assert (h.run_in_flight[first["run_id"]], h.calls) == (2, 2), h.seen()
    assert container.orgs.get(api.org_id).waiting == [second["run_id"]]
    progress = api.ok("GET", f"/api/v1/eval-runs/{second['run_id']}/progress")
    assert (progress["status"], progress["in_flight"]) == ("queued", 0)

    h.open()
    assert api.wait(second["run_id"])["status"] == "completed"
    assert api.wait(first["run_id"])["status"] == "completed"
    assert (h.run_calls[first["run_id"]], h.run_calls[second["run_id"]]) == (4, 4)
    assert h.peak == 2, h.seen()
    assert container.orgs.get(api.org_id).in_flight == 0
