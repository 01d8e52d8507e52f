"""A suite result that people's verdicts in the review queue changed, in the browser
(docs/guides/review.md): the suite's page says it was corrected, by whom (their name as the
organization's members have it now) and what the scorers had said."""

from __future__ import annotations

from playwright.sync_api import expect

from chalicelib import bootstrap
from chalicelib.services import suites
from tests.conftest import make_api
from tests.support.e2e import cases, sleepy_spec, wait_for


def test_a_suite_result_corrected_in_review_says_by_whom_and_what_the_scorers_said(
    stack, page, console_url, shot
):
    api = make_api(stack)
    ds = api.dataset(cases(4))
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
        api.ok(
            "PUT",
            f"/api/v1/agents/{agent}/draft",
            json={"spec": sleepy_spec(answers={"c001": "41"})},
        )
        api.ok("POST", f"/api/v1/agents/{agent}/versions")
        [result] = wait_for(
            lambda: api.ok("GET", f"{base}/{suite['suite_id']}/results")["results"] or None
        )
        assert result["result"] == "failed", result
        [item] = api.ok("GET", f"/api/v1/datasets/{ds}/review?state=waiting")["items"]
        api.ok(
            "POST",
            f"/api/v1/datasets/{ds}/review/{item['item_id']}/decision",
            json={"verdict": "pass", "note": "41 is right here"},
        )
        page.goto(console_url(api, f"/agents/{agent}/suites/{suite['suite_id']}"))
        row = page.locator(f'tr[data-result="{result["result_id"]}"]')
        expect(row).to_contain_text("Passed")
        expect(row.locator("[data-reviewed]")).to_have_text(
            f"Corrected by {api.user_id} (the scorers said Failed)"
        )
        shot(page, "suite-corrected-in-review")
    finally:
        container = bootstrap.container()
        for row in container.suites.of_org(api.org_id):
            suites.pause(container, row, "test over")
