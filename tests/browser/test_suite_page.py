"""A suite that fell short, in the browser (docs/guides/suites.md): the agent's Suites card says its
dataset, when it runs, its threshold and how it last came out; the suite's page lists the result
with why it fell short, the cases that broke and the run behind it."""

from __future__ import annotations

from playwright.sync_api import expect

from chalicelib import bootstrap
from chalicelib.services import suites
from tests.conftest import make_api
from tests.support.e2e import cases, sleepy_spec, wait_for


def test_a_failing_suite_says_why_which_cases_broke_fits_at_200_percent_and_opens_its_run(
    stack, page, console_url, shot
):
    api = make_api(stack)
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "Smoke"})["dataset_id"]
    body = {"scoring": {"required": ["equals"]}, "cases": cases(4)}
    api.ok("POST", f"/api/v1/datasets/{ds}/versions", json=body)
    agent = api.agent(sleepy_spec(), publish=1)
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 1},
    )
    base = f"/api/v1/agents/{agent}/suites"
    suite = api.ok(
        "POST",
        base,
        json={"name": "On publish", "dataset_id": ds, "triggers": {"on_publish": True}},
    )
    try:
        broken = sleepy_spec(answers={"c000": "41", "c002": "41"})
        api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": broken})
        api.ok("POST", f"/api/v1/agents/{agent}/versions")
        [result] = wait_for(
            lambda: (
                [
                    r
                    for r in api.ok("GET", f"{base}/{suite['suite_id']}/results")["results"]
                    if r["result"] not in ("pending", "running")
                ]
                or None
            )
        )
        assert result["result"] == "failed", result

        page.goto(console_url(api, f"/agents/{agent}"))
        card = page.locator(f'[data-suite-id="{suite["suite_id"]}"]')
        expect(card.get_by_role("link", name="Smoke")).to_have_attribute("href", f"/datasets/{ds}")
        expect(card).to_contain_text("runs when a version is published")
        expect(card).to_contain_text("last failed")
        card.get_by_role("link", name="On publish").click()
        page.wait_for_url(f"**/suites/{suite['suite_id']}")
        row = page.locator(f'tr[data-result="{result["result_id"]}"]')
        expect(row).to_contain_text("Failed")
        expect(row).to_contain_text("2 confirmed regressions, 0 allowed")
        expect(row.locator("code")).to_have_text(["c000", "c002"])
        shot(page, "suite-failed")
        page.set_viewport_size({"width": 640, "height": 900})  # 1280 px at 200 % zoom
        wide = page.evaluate(
            "() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth"
        )
        assert wide <= 0, f"the suite's page is {wide} px wider than the window at 200 %"
        row.get_by_role("link", name="Open run").click()
        page.wait_for_url(f"**/runs/{result['run_id']}")
        expect(page.locator("#verdict-phrase")).to_have_text("Breaks 2")
    finally:
        container = bootstrap.container()
        for row in container.suites.of_org(api.org_id):
            suites.pause(container, row, "test over")
