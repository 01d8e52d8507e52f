"""The console's usage and Activity (docs/guides/console.md, docs/reference/usage.md): the
dashboard's usage this month, production apart from the eval traffic; Activity's runs with their
Source labels and filter, what each was asked, an eval case opening its eval run on that case, and
what the model saw."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from playwright.sync_api import expect

from tests.conftest import make_api
from tests.support.e2e import Api, cases, sleepy_spec


@dataclass(frozen=True)
class Org:
    api: Api
    agent: str
    run_id: str


def priced() -> dict:
    # 100 input and 20 output tokens an answer at $10 and $50 per 1M: $0.002 an answer.
    return {**sleepy_spec(), "price": {"input_per_mtok_usd": "10", "output_per_mtok_usd": "50"}}


@pytest.fixture(scope="module")
def org(stack) -> Org:
    api = make_api(stack)
    agent = api.ok("POST", "/api/v1/agents", json={"name": "Support bot", "spec": priced()})
    run = api.start(agent["agent_id"], api.dataset(cases(2)))
    api.wait(run["run_id"])
    api.ok(
        "POST",
        "/api/v1/usage/runs",
        json={
            "runs": [
                {
                    "key": "chat-1",
                    "agent_id": agent["agent_id"],
                    "cost_usd": "1.25",
                    "input_tokens": 900,
                    "output_tokens": 100,
                    "asked": "Where is my parcel?",
                }
            ]
        },
    )
    return Org(api, agent["agent_id"], run["run_id"])


def test_the_dashboard_counts_production_with_the_eval_traffic_beside_it(
    page, console_url, shot, org: Org
):
    page.goto(console_url(org.api, "/"))
    card = page.locator("#usage-card")
    expect(card.locator("#usage-production")).to_have_text(
        "$1.25 in production · 1 run · 1000 tokens"
    )
    # Two eval answers at $0.002 each: beside production, never added to it. What is counted is
    # attempts (a rerun of a flip is one more), not cases: two runs of 10 cases are 20 or more.
    expect(card.locator("#usage-beside")).to_have_text(
        "Beside it, not counted in it: evals $0.0040 (2 attempts) · grader $0.00 (0 gradings)"
    )
    shot(page, "usage-dashboard")


def test_activity_lists_every_run_with_its_source_and_what_it_was_asked(
    page, console_url, shot, org: Org
):
    page.goto(console_url(org.api, "/activity"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Activity")
    rows = page.locator("table.activity tbody tr")
    expect(rows).to_have_count(3)
    expect(page.locator("tr[data-surface=production] .badge")).to_have_text("Production")
    production = page.locator("tr[data-surface=production]")
    expect(production.locator("td.asked p")).to_have_text("Where is my parcel?")
    production.get_by_text("See what the model saw").click()
    expect(production.locator(".model-saw")).to_have_text(
        "What its model was given was not reported with it."
    )
    expect(page.locator("tr[data-surface=eval] .badge")).to_have_text(["Eval", "Eval"])
    shot(page, "activity")

    page.locator("#source").select_option("eval")
    page.wait_for_url("**/activity?source=eval")
    expect(rows).to_have_count(2)
    first = rows.first
    asked = first.locator("td.asked p").inner_text()
    assert asked in ("question 0", "question 1")
    first.get_by_text("See what the model saw").click()
    expect(first.locator("pre.request")).to_contain_text(f'"input": "{asked}"')

    case_id = "c000" if asked == "question 0" else "c001"
    first.locator("a.eval-case").click()
    page.wait_for_url(f"**/runs/{org.run_id}?case={case_id}#cases")
    detail = page.locator(f"tr[data-case-id={case_id}] details.case")
    expect(detail).to_have_attribute("open", "")
    expect(page.locator("table.cases tbody tr")).to_have_count(1)
    shot(page, "activity-eval-case")


def test_an_empty_activity_names_the_next_step(page, console_url, shot, stack):
    fresh = make_api(stack)
    page.goto(console_url(fresh, "/activity"))
    empty = page.locator("#activity-empty")
    expect(empty).to_contain_text(
        "No runs yet. To see some, open an agent on Agents and choose Run evals"
    )
    expect(empty).to_contain_text("POST /api/v1/usage/runs")
    expect(empty.get_by_role("link", name="Agents")).to_have_attribute("href", "/agents")
    shot(page, "activity-empty")

    page.locator("#source").select_option("production")
    page.wait_for_url("**/activity?source=production")
    expect(empty).to_have_text(
        "No production runs yet: the platform that serves your agent reports each request it "
        "served (POST /api/v1/usage/runs) and it shows here as Production."
    )
