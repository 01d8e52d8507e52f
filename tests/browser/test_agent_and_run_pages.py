"""An agent's Evals tab and a run's page in a real headless Chromium, on the demo's data
(docs/guides/console.md): four real models' GSM8K answers as versions 1-4, v4 against v3, and a
draft (v1's model again) against v4 that breaks cases."""

from __future__ import annotations

import json
import re

from playwright.sync_api import expect

from tests.browser.worlds import World


def test_the_evals_tab_shows_the_chart_above_the_runs_table_newest_first(
    page, console_url, shot, agent_world: World
):
    w = agent_world
    page.goto(console_url(w.api, f"/agents/{w.agent_id}"))
    expect(page.get_by_role("heading", level=1)).to_have_text("GSM8K solver")
    expect(page.locator("#draft-differs")).to_have_text("Draft differs from v4")
    expect(page.get_by_role("button", name="Test draft")).to_be_enabled()
    # the chart stands above the runs table
    chart, table = page.locator("#chart svg"), page.locator("table.runs")
    expect(chart).to_be_visible()
    assert chart.bounding_box()["y"] < table.bounding_box()["y"]
    rows = table.locator("tbody tr")
    expect(rows).to_have_count(5)
    # newest first: what was tested against what, its verdict phrase, pass rate, passed/total
    expect(rows.nth(0).locator("td").nth(0)).to_have_text("The draft against v4")
    expect(rows.nth(0)).to_contain_text(re.compile(r"Worse overall · \d+ broke|Breaks \d+"))
    expect(rows.nth(1).locator("td").nth(0)).to_have_text("The draft against v4")
    expect(rows.nth(1)).to_contain_text("No change")
    expect(rows.nth(2).locator("td").nth(0)).to_have_text("v4 against v3")
    expect(rows.nth(2)).to_contain_text("Better overall · 11 fixed")
    expect(rows.nth(2)).to_contain_text("55.0%")
    expect(rows.nth(2)).to_contain_text("22/40")
    expect(rows.nth(4).locator("td").nth(0)).to_have_text("v1 alone")
    expect(rows.nth(4)).to_contain_text("No baseline")
    # the first answers' rate on hover
    expect(rows.nth(2).locator(".rate")).to_have_attribute("title", "first answers: 55.0%")
    shot(page, "agent-evals")


def test_a_chart_point_says_what_ran_and_opens_the_run(page, console_url, agent_world: World):
    w = agent_world
    page.goto(console_url(w.api, f"/agents/{w.agent_id}"))
    points = page.locator("#chart svg [data-run-id]")
    expect(points).to_have_count(5)
    draft = page.locator(f'#chart svg [data-run-id="{w.draft_run_id}"]')
    expect(draft).to_have_attribute("data-hollow", "true")  # a draft's point is hollow
    expect(draft).to_have_attribute("data-colour", re.compile("red|amber"))
    v4 = page.locator(f'#chart svg [data-run-id="{w.v4_run_id}"]')
    expect(v4).to_have_attribute("data-colour", "green")  # it fixed cases and broke none
    expect(v4).to_have_attribute("data-hollow", "false")
    assert "v4 against v3" in v4.locator("title").text_content()
    v4.click()
    page.wait_for_url(f"**/runs/{w.v4_run_id}")
    expect(page.locator("#verdict-phrase")).to_have_text("Better overall · 11 fixed")


def test_run_evals_opens_on_the_draft_against_the_live_version_and_names_the_amount(
    page, console_url, shot, agent_world: World
):
    w = agent_world
    page.goto(console_url(w.api, f"/agents/{w.agent_id}"))
    page.get_by_role("button", name="Run evals").click()
    dialog = page.locator("#start-dialog")
    expect(dialog).to_be_visible()
    expect(page.get_by_label("What runs")).to_have_value("draft")
    expect(page.locator("#start-baseline")).to_be_checked()
    expect(page.locator("#start-baseline-text")).to_have_text("Against v4, in the same run")
    expect(page.get_by_label("Dataset")).to_have_value(w.dataset_id)  # the one last measured
    # environment and reruns wait under Advanced
    expect(page.get_by_label("Environment")).to_be_hidden()
    page.get_by_text("Advanced").click()
    expect(page.get_by_label("Environment")).to_have_value("production")
    expect(page.locator("#start-run")).to_have_text(re.compile(r"^Start for \$\d+\.\d\d"))
    expect(page.locator("#estimate-grading")).to_contain_text("numeric_answer grades the answers")
    expect(page.locator("#estimate-budgets")).to_contain_text("The agent's budget")
    shot(page, "run-evals-dialog")
    # a version alone when nothing differs is the other obvious answer; here choosing v2 prices
    # it again as the field settles
    with page.expect_request("**/eval-runs/estimate") as priced:
        page.get_by_label("What runs").select_option("2")
    assert json.loads(priced.value.post_data or "{}")["version"] == 2
    expect(page.locator("#start-baseline-text")).to_have_text("Against v1, in the same run")
    with page.expect_request("**/eval-runs/estimate") as priced:
        page.get_by_label("Reruns of each flip").fill("3")
    assert json.loads(priced.value.post_data or "{}")["reruns"] == 3
    expect(page.locator("#estimate-budgets")).to_contain_text("The organization's:")
    expect(page.locator("#start-run")).to_be_enabled()
    page.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)


def test_a_run_page_opens_on_its_verdict_and_publish_is_not_the_main_action_after_a_regression(
    page, console_url, shot, agent_world: World
):
    w = agent_world
    page.goto(console_url(w.api, f"/runs/{w.draft_run_id}"))
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text(re.compile(r"The draft breaks \d+ cases"))
    expect(verdict).to_contain_text(
        re.compile(r"For example, it now fails “.+” \(gsm8k-\w+\): (\d) of \1 tries failed")
    )
    expect(verdict).to_contain_text(re.compile(r"Overall: worse \(exact McNemar p = [\d.e-]+\)\."))
    expect(verdict).to_contain_text("Pass rate 55.0% before (v4), 15.0% after.")
    publish = page.locator("#publish")
    expect(publish).to_have_attribute("data-main", "false")
    expect(publish).not_to_have_class(re.compile("primary"))
    expect(page.locator("#publish-why")).to_contain_text("confirmed broken")
    # a next step shows the cases that broke: the same filter as the outcome's
    page.get_by_role("link", name="Show the cases that broke").click()
    expect(page).to_have_url(re.compile(r"outcome=regression"))
    expect(page.locator('table.cases tbody tr:not([data-outcome="regression"])')).to_have_count(0)
    page.goto(console_url(w.api, f"/runs/{w.draft_run_id}"))
    # a pass/fail dot per side on every case; the outcome filter keeps the broken ones
    rows = page.locator("table.cases tbody tr")
    expect(rows.first.locator(".dot")).to_have_count(2)
    page.get_by_label("Outcome").select_option("regression")
    expect(page).to_have_url(re.compile(r"outcome=regression"))
    others = page.locator('table.cases tbody tr:not([data-outcome="regression"])')
    expect(others).to_have_count(0)
    expect(rows).to_have_count(17)  # every confirmed regression, and nothing else
    # the verdict stays over every case
    expect(page.locator("#verdict")).to_contain_text("Overall: worse (exact McNemar p = ")
    # a case opens onto what it expects and each side's answers and scorer reasons
    rows.first.locator("summary").click()
    expect(rows.first.locator(".side-answers")).to_have_count(2)
    expect(rows.first.locator(".reason").first).to_contain_text("numeric_answer")
    shot(page, "run-regression")


def test_publish_is_the_main_action_of_a_clean_draft_run_and_test_again_once_it_changed(
    page, console_url, shot, agent_world: World
):
    w = agent_world
    # the draft as the clean run tested it (the world's draft is another one)
    w.api.ok("PUT", f"/api/v1/agents/{w.agent_id}/draft", json={"spec": w.clean_spec})
    page.goto(console_url(w.api, f"/runs/{w.clean_draft_run_id}"))
    publish = page.locator("#publish")
    expect(publish).to_have_attribute("data-main", "true")
    expect(publish).to_have_class(re.compile("primary"))
    shot(page, "run-publish")
    # the draft changes: the same run now offers Test again instead
    w.api.ok("PUT", f"/api/v1/agents/{w.agent_id}/draft", json={"spec": w.changed_spec})
    try:
        page.reload()
        expect(page.get_by_role("link", name="Test again")).to_have_class(re.compile("primary"))
        expect(page.locator("#publish")).to_have_attribute("data-main", "false")
        expect(page.locator("#publish-why")).to_contain_text("the draft changed since this run")
        # Test again opens the start dialog on the draft as it is now, on the agent's page
        page.get_by_role("link", name="Test again").click()
        page.wait_for_url(f"**/agents/{w.agent_id}?start=draft")
        expect(page.locator("#start-dialog")).to_be_visible()
        expect(page.get_by_label("What runs")).to_have_value("draft")
        expect(page.locator("#start-baseline")).to_be_checked()
        page.get_by_role("button", name="Cancel").click()
    finally:
        w.api.ok("PUT", f"/api/v1/agents/{w.agent_id}/draft", json={"spec": w.draft_spec})


def test_a_start_control_the_reader_may_not_use_is_disabled_saying_why(
    stack, page, console_url, shot, agent_world: World
):
    from tests.conftest import make_api

    w = agent_world
    viewer = make_api(stack, org_id=w.api.org_id, user_id="viewer@example.com", role="viewer")
    page.goto(console_url(viewer, f"/agents/{w.agent_id}"))
    run_evals = page.get_by_role("button", name="Run evals")
    expect(run_evals).to_be_disabled()
    why = page.locator(f"#{run_evals.get_attribute('aria-describedby')}")
    expect(why).to_have_text("You cannot run evals: it needs agents:run.")
    expect(page.get_by_role("button", name="Test draft")).to_be_disabled()
    shot(page, "agent-evals-viewer")
    # a runner may run evals but not the draft (it needs agents:edit), nor publish it
    runner = make_api(stack, org_id=w.api.org_id, user_id="runner@example.com", role="runner")
    page.goto(console_url(runner, f"/agents/{w.agent_id}"))
    expect(page.get_by_role("button", name="Run evals")).to_be_enabled()
    test_draft = page.get_by_role("button", name="Test draft")
    expect(test_draft).to_be_disabled()
    expect(page.locator(f"#{test_draft.get_attribute('aria-describedby')}")).to_have_text(
        "You cannot test the draft: it needs agents:edit."
    )
    page.goto(console_url(runner, f"/runs/{w.clean_draft_run_id}"))
    expect(page.locator("#publish")).to_be_disabled()
    expect(page.locator("#next-steps")).to_contain_text("You cannot publish: it needs agents:edit.")
