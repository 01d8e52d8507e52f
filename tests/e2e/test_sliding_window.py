"""The sliding window (docs/architecture/slots.md): a case that does not end keeps its slot, but
none of the run's other tasks, on the embedded stack.

The agent holds one case on a barrier the test sets: every other case of the run must start and
be recorded while it is held (the test waits on the run's recorded count, never on time), also
those that stood behind it in its slot's stride. Once let go, the run completes with every
attempt recorded once."""

from __future__ import annotations

import uuid

from tests.support.agents import barred_calls, barred_spec, barrier
from tests.support.e2e import cases, wait_for


def test_one_held_case_keeps_no_other_task_of_its_run_waiting(api, container, limits):
    limits(3, 6)
    name = f"window-{uuid.uuid4().hex}"
    ds = api.dataset(cases(14))
    # c000 is the first task of the first slot's stride (c003, c006, c009, c012 stood behind it).
    agent = api.agent(barred_spec(name, ["c000"]))
    run_id = api.start(agent, ds)["run_id"]

    def recorded() -> int:
        return int(api.ok("GET", f"/api/v1/eval-runs/{run_id}/progress")["recorded"])

    wait_for(lambda: recorded() >= 13, what="13 of the 14 cases recorded while c000 is held")
    asked = barred_calls(name)
    assert asked == {f"c{i:03d}": 1 for i in range(14)}, asked  # c000 too: it is being asked
    run = container.runs.get(api.org_id, run_id)
    assert (run.status, run.recorded, run.slots) == ("running", 13, 1)
    assert run.lanes.pending(14) == 0  # no task waits: the held case is all that runs
    assert container.orgs.get(api.org_id).in_flight == 1  # the other two slots went back

    barrier(name).set()
    done = api.wait(run_id)
    assert (done["status"], done["recorded"]) == ("completed", 14), done
    assert barred_calls(name) == asked  # nobody was asked twice
    kept = container.runs.attempts(api.org_id, run_id)
    assert sorted((a.case_id, a.attempt) for a in kept) == [(f"c{i:03d}", 1) for i in range(14)]
    started = [a.successor["case_id"] for a in kept if a.successor]
    assert sorted(started + ["c000", "c001", "c002"]) == [f"c{i:03d}" for i in range(14)]
    assert container.orgs.get(api.org_id).in_flight == 0
