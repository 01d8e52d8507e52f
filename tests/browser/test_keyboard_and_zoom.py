"""The Evals tab and a run's page by keyboard and at 200 % zoom (issue 15 "How it is built"):
every control reachable and labelled, nothing wider than the window."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.browser.worlds import World

pytestmark = pytest.mark.browser


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


@pytest.mark.parametrize("path", ["agent", "run"])
def test_at_200_percent_zoom_nothing_is_wider_than_the_window(
    browser, console_url, shot, agent_world: World, path
):
    w = agent_world
    # 200 % zoom of a 1280 px window: a 640 CSS px wide viewport at twice the pixel density
    context = browser.new_context(viewport={"width": 640, "height": 900}, device_scale_factor=2)
    try:
        page = context.new_page()
        target = f"/agents/{w.agent_id}" if path == "agent" else f"/runs/{w.draft_run_id}"
        page.goto(console_url(w.api, target))
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        expect(page.locator("table").first).to_be_visible()
        wide = page.evaluate(
            "() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth"
        )
        assert wide <= 0, f"the page is {wide} px wider than the window at 200 %"
        shot(page, f"{path}-zoom-200")
    finally:
        context.close()
