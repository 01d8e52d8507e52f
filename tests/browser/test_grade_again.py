"""Answers the judge failed to grade, on a run's page (docs/guides/console.md): they say why,
count as neither passed nor failed, and Grade again in the header grades them again without
asking the agent, for whoever may run the dataset; anyone else sees it disabled, saying why."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.conftest import make_api
from tests.e2e.test_judge import ANSWERS, USAGE, grades
from tests.support.e2e import sleepy_spec


def test_grade_again_in_the_header_grades_the_failed_answers(
    stack, api, fake, judge_setup, page, console_url, shot
):
    _, ds = judge_setup
    agent = api.agent(sleepy_spec(answers=ANSWERS))
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    viewer = make_api(stack, org_id=api.org_id, user_id="viewer@example.com", role="viewer")
    page.goto(console_url(viewer, f"/runs/{run['run_id']}"))
    expect(page.locator("#grade-again")).to_be_disabled()
    expect(page.locator("header.run-header")).to_contain_text(
        "You cannot grade again: it needs datasets:run."
    )

    page.goto(console_url(api, f"/runs/{run['run_id']}"))
    expect(page.locator("#verdict")).to_contain_text(
        "The judge failed to grade 2 answers: they count as neither passed nor failed"
    )
    expect(page.locator("#publish")).to_have_attribute("data-main", "false")  # 2 undecided
    page.get_by_label("Outcome").select_option("incomplete")
    row = page.locator('table.cases tbody tr[data-case-id="c2"]')
    row.locator("summary").click()
    expect(row.locator(".reason")).to_contain_text(re.compile("judge.*failed|judge failed"))
    shot(page, "run-grade-again")
    fake.set_script({"default": {"answer": grades(4), "usage": USAGE}})
    page.get_by_role("button", name="Grade again (2)").click()
    expect(page.locator("#grade-again")).to_have_count(0)  # nothing is left to grade
    expect(page.locator("#verdict")).not_to_contain_text("The judge failed to grade")
