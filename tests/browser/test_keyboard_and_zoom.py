"""The Evals tab and a run's page by keyboard and at 200 % zoom (issue 15 "How it is built"):
every control reachable and labelled, nothing wider than the window."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.worlds import World


def test_run_evals_and_the_chart_points_are_reachable_by_keyboard(
    page, console_url, agent_world: World
):
    w = agent_world
    page.goto(console_url(w.api, f"/agents/{w.agent_id}"))
    expect(page.locator("#chart svg [data-run-id]")).to_have_count(5)
    reached = []
    for _ in range(40):
        page.keyboard.press("Tab")
        reached.append(
            page.evaluate(
                "() => { const e = document.activeElement;"
                " return e.dataset.action || e.dataset.runId || e.textContent.trim(); }"
            )
        )
    assert "run-evals" in reached and "test-draft" in reached
    assert w.v4_run_id in reached  # a chart point is a link in the tab order
    page.locator("[data-action=run-evals]").focus()
    page.keyboard.press("Enter")
    expect(page.locator("#start-dialog")).to_be_visible()
    expect(page.get_by_label("What runs")).to_be_focused()
    page.keyboard.press("Escape")
    expect(page.locator("#start-dialog")).to_have_count(0)


def test_a_runs_next_steps_filters_and_cases_are_reachable_by_keyboard(
    page, console_url, agent_world: World
):
    w = agent_world
    page.goto(console_url(w.api, f"/runs/{w.draft_run_id}"))
    expect(page.locator("table.cases tbody tr").first).to_be_visible()
    reached = []
    for _ in range(20):
        page.keyboard.press("Tab")
        reached.append(
            page.evaluate("() => document.activeElement.id || document.activeElement.tagName")
        )
        if reached[-1] == "SUMMARY":
            break
    for control in ("see-changes", "show-broken", "publish", "outcome"):
        assert control in reached, (control, reached)
    # Enter opens the focused case onto its answers
    page.keyboard.press("Enter")
    expect(page.locator("table.cases details[open] .side-answers").first).to_be_visible()
    # the outcome filter is a labelled select that keyboard arrows change
    page.locator("#outcome").focus()
    expect(page.get_by_label("Outcome")).to_be_focused()


PAGES = {
    "agent": lambda w: f"/agents/{w.agent_id}",
    "run": lambda w: f"/runs/{w.draft_run_id}",
    "dashboard": lambda w: "/",
    "changes": lambda w: f"/runs/{w.draft_run_id}?changes=1",
}


@pytest.mark.parametrize("path", list(PAGES))
def test_at_200_percent_zoom_nothing_is_wider_than_the_window(
    browser, console_url, shot, agent_world: World, path
):
    w = agent_world
    # 200 % zoom of a 1280 px window: a 640 CSS px wide viewport at twice the pixel density
    context = browser.new_context(viewport={"width": 640, "height": 900}, device_scale_factor=2)
    try:
        page = context.new_page()
        page.goto(console_url(w.api, PAGES[path](w)))
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        expect(page.locator("table").first).to_be_visible()
        wide = page.evaluate(
            "() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth"
        )
        assert wide <= 0, f"the page is {wide} px wider than the window at 200 %"
        shot(page, f"{path}-zoom-200")
    finally:
        context.close()
