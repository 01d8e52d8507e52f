"""A run goes end to end through the HTTP API on the embedded stack."""

from tests.e2e.conftest import cases, sleepy_spec


def test_a_draft_run_completes_with_every_case_recorded_once(api):
    ds = api.dataset(cases(7))
    agent = api.agent(sleepy_spec(answers={"c000": "41", "c001": "41"}))
    run = api.start(agent, ds)
    assert run["status"] in ("queued", "running")
    progress = api.wait(run["run_id"])
    assert progress["status"] == "completed"
    assert (progress["recorded"], progress["expected"]) == (7, 7)
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert full["outcome"]["passed"] == 5 and full["outcome"]["failed"] == 2
    assert full["outcome"]["verdict"] == "partial"
    assert len(full["results"]) == 7


def test_what_the_stack_holds_once_up_is_left_out_of_the_collectors_full_passes(stack):
    """A full pass of the cyclic collector over the process's imports and clients stalled every
    lane ~0.2 s; the stack freezes them as it starts (and unfreezes them as it stops)."""
    import gc

    assert gc.get_freeze_count() > 10_000
