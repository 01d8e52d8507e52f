"""A run's page while it answers (docs/guides/console.md): how many answers are in, that the
comparison waits for both sides, and the verdict once it is done - the page follows the run by
itself. The pollers are paused so the run stands still at a known state, not for a while."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.conftest import make_api
from tests.e2e.conftest import cases, sleepy_spec


def test_while_it_answers_the_page_counts_answers_then_shows_the_verdict(
    stack, page, console_url, shot
):
    api = make_api(stack)
    ds = api.dataset(cases(3))
    agent = api.agent(sleepy_spec(), publish=1)
    api.ok(
        "PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answers={"c001": "7"})}
    )
    stack.pause_pollers()
    try:
        run = api.start(agent, ds, paired_baseline=True)
        page.goto(console_url(api, f"/runs/{run['run_id']}"))
        verdict = page.locator("#verdict")
        expect(verdict).to_contain_text(re.compile(r"^0 of \d+ answers are in\."))
        expect(verdict).to_contain_text("The comparison with v1 waits for both sides.")
        expect(page.locator("#verdict-phrase")).to_have_text("Pending")
        shot(page, "run-answering")
    finally:
        stack.resume_pollers()
    # the page reads the run again by itself until it ends
    expect(page.locator("#verdict-phrase")).to_have_text("Breaks 1", timeout=120_000)
    expect(page.locator("#verdict")).to_contain_text(
        "The draft breaks 1 case every time it is asked"
    )
