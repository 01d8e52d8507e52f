"""A run whose tool calls were answered from a recording, in the browser (docs/guides/tools.md):
each side's heading says so, and a side's divergent cases are counted under it."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from tests.conftest import make_api
from tests.e2e.conftest import cases, sleepy_spec


def test_each_side_says_it_answered_from_a_recording_and_counts_its_divergent_cases(
    stack, page, console_url, shot
):
    api = make_api(stack)
    ds = api.dataset(cases(3))
    content = "".join(json.dumps({"case_id": f"c00{i}", "answer": "42"}) + "\n" for i in range(3))
    api.ok("POST", "/api/v1/recordings", json={"recording_id": "rec-1", "content": content})
    agent = api.agent(sleepy_spec(answer="42"), publish=1)
    first = api.start(
        agent, ds, candidate="version", version=1, from_recordings=True, recording_id="rec-1"
    )
    assert api.wait(first["run_id"])["status"] == "completed"
    # v2 answers from an inline recording that lacks two of the cases: they are divergent
    api.ok(
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        json={"spec": {"runtime": "recorded", "inline": {"c000": "42"}}},
    )
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    second = api.start(
        agent,
        ds,
        candidate="version",
        version=2,
        from_recordings=True,
        recording_id="rec-1",
        live_reads=True,
        paired_baseline=True,
        reruns=1,
    )
    assert api.wait(second["run_id"])["status"] == "completed"

    page.goto(console_url(api, f"/runs/{second['run_id']}"))
    candidate = page.locator('#sides [data-arm="candidate"]')
    baseline = page.locator('#sides [data-arm="baseline"]')
    expect(candidate.locator("h3")).to_have_text("Candidate: v2 · from recording rec-1, live reads")
    # the baseline was run here (the earlier run was measured without live reads): labelled so
    expect(baseline.locator("h3")).to_have_text("Baseline: v1 · from recording rec-1, live reads")
    expect(candidate.locator(".undecided")).to_have_text(
        "Not decided: divergent: the recording holds no answer for this case (2)"
    )
    expect(baseline.locator(".undecided")).to_have_count(0)
    shot(page, "run-sides-from-recording")
