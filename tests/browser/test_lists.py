"""The console's lists (docs/guides/console.md): the dashboard's Eval runs card, Eval runs at
/evals a page at a time, its empty state, and a dataset's Results → Test runs with Run evals."""

from __future__ import annotations

from dataclasses import dataclass

import pytest
from playwright.sync_api import expect

from tests.conftest import make_api
from tests.support.e2e import Api, cases, sleepy_spec, wait_for

BROKEN = {"runtime": "http", "url": "http://127.0.0.1:9/answer"}  # nothing listens there


@dataclass(frozen=True)
class Lists:
    api: Api
    dataset_id: str
    good: str
    broken: str
    runs: list[str]  # newest first, as the service lists them
    broken_run: str


@pytest.fixture(scope="module")
def lists(stack) -> Lists:
    """A fresh organization: one agent measured three times on a dataset, then an agent whose
    every answer fails with the same setup error (a run that could not run)."""
    api = make_api(stack)
    ds = api.dataset(cases(3))
    good = api.ok("POST", "/api/v1/agents", json={"name": "Good agent", "spec": sleepy_spec()})
    api.ok("POST", f"/api/v1/agents/{good['agent_id']}/versions")
    broken = api.ok("POST", "/api/v1/agents", json={"name": "Broken agent", "spec": BROKEN})
    for _ in range(3):
        api.wait(api.start(good["agent_id"], ds, candidate="version", version=1)["run_id"])
    broken_run = api.start(broken["agent_id"], ds, candidate="draft")["run_id"]
    api.wait(broken_run)
    full = api.ok("GET", f"/api/v1/eval-runs/{broken_run}")
    assert full["summaries"]["candidate"]["could_not_run"]
    listed = [r["run_id"] for r in api.ok("GET", "/api/v1/eval-runs")["runs"]]
    assert listed[0] == broken_run and len(listed) == 4
    return Lists(api, ds, good["agent_id"], broken["agent_id"], listed, broken_run)


def row_ids(page) -> list[str]:
    return page.locator("table.runs tbody tr").evaluate_all("rows => rows.map(r => r.dataset.run)")


def test_the_dashboard_card_lists_the_latest_runs_with_agent_and_verdict(
    page, console_url, shot, lists: Lists
):
    page.goto(console_url(lists.api, "/"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Dashboard")
    card = page.locator("#eval-runs-card")
    expect(card.locator("tbody tr")).to_have_count(4)
    assert row_ids(page) == lists.runs
    first = card.locator("tbody tr").first
    expect(first.get_by_role("link", name="Broken agent")).to_have_attribute(
        "href", f"/agents/{lists.broken}"
    )
    expect(first.locator(".verdict")).to_have_text("Could not run")
    expect(card.locator("tbody tr").nth(1).locator(".verdict")).to_have_text("No baseline")
    expect(first.locator("a.run-link")).to_have_attribute("href", f"/runs/{lists.broken_run}")
    shot(page, "lists-dashboard")
    card.get_by_role("link", name="See all").click()
    page.wait_for_url("**/evals")
    expect(page.get_by_role("heading", level=1)).to_have_text("Eval runs")
    expect(page.locator("table.runs tbody tr")).to_have_count(4)


def test_eval_runs_lists_newest_first_a_page_at_a_time_and_back_returns(
    page, console_url, shot, lists: Lists
):
    page.goto(console_url(lists.api, "/evals?limit=2"))
    expect(page.locator("table.runs tbody tr")).to_have_count(2)
    assert row_ids(page) == lists.runs[:2]
    row = page.locator(f"tr[data-run={lists.runs[1]}]")
    expect(row).to_contain_text("Good agent")
    expect(row).to_contain_text(lists.api.ok("GET", f"/api/v1/eval-runs/{lists.runs[1]}")["tested"])
    expect(row).to_contain_text("100.0%")
    expect(row).to_contain_text("3/3")
    expect(page.locator(f"tr[data-run={lists.broken_run}]")).to_contain_text("draft alone")
    shot(page, "lists-evals-page-1")
    page.get_by_role("link", name="Next page").click()
    expect(page.locator(f"tr[data-run={lists.runs[2]}]")).to_have_count(1)
    assert "cursor=" in page.url
    assert row_ids(page) == lists.runs[2:4]
    shot(page, "lists-evals-page-2")
    page.go_back()
    expect(page.locator(f"tr[data-run={lists.runs[0]}]")).to_have_count(1)
    assert row_ids(page) == lists.runs[:2] and "cursor=" not in page.url


def test_a_fresh_organization_is_told_what_an_eval_is_and_where_to_start_one(
    page, console_url, shot, stack
):
    fresh = make_api(stack)
    agent = fresh.ok("POST", "/api/v1/agents", json={"name": "First agent", "spec": sleepy_spec()})
    page.goto(console_url(fresh, "/evals"))
    empty = page.locator("#evals-empty")
    expect(empty).to_contain_text("An eval run has an agent answer every case of a dataset")
    expect(empty).to_contain_text("Run evals")
    expect(empty.get_by_role("link", name="First agent")).to_have_attribute(
        "href", f"/agents/{agent['agent_id']}"
    )
    shot(page, "lists-evals-empty")
    page.goto(console_url(fresh, "/"))
    expect(page.locator("#eval-runs-card")).to_contain_text("No eval runs yet.")


def test_a_datasets_test_runs_list_every_agent_and_could_not_run_instead_of_a_rate(
    page, console_url, shot, lists: Lists
):
    page.goto(console_url(lists.api, f"/datasets/{lists.dataset_id}"))
    expect(page.get_by_role("heading", level=1)).to_have_text("t")
    expect(page.locator(".tabs a[aria-current=page]")).to_have_text(["Results", "Test runs"])
    measured = page.locator("ul.measured li")
    expect(measured).to_have_count(2)
    expect(page.locator(f"li[data-agent={lists.good}]")).to_contain_text("3 runs")
    expect(page.locator(f"li[data-agent={lists.broken}]")).to_contain_text("could not run")
    assert row_ids(page) == lists.runs
    broken = page.locator(f"tr[data-run={lists.broken_run}]")
    expect(broken.locator(".could-not-run")).to_have_text("Could not run")
    expect(broken).not_to_contain_text("%")
    expect(page.locator(f"tr[data-run={lists.runs[1]}]")).to_contain_text("100.0%")
    shot(page, "lists-dataset-test-runs")
    page.get_by_role("button", name="Run evals").click()
    dialog = page.locator("#start-dialog")
    expect(dialog).to_be_visible()
    agent = dialog.get_by_label("Agent to test")
    expect(agent).to_be_focused()
    expect(agent.locator("option")).to_have_count(2)
    expect(agent).to_contain_text("Good agent")
    expect(agent).to_contain_text("Broken agent")
    # the agent last measured on the dataset opens chosen: its draft alone, nothing published
    expect(agent).to_have_value(lists.broken)
    expect(dialog.get_by_label("What runs")).to_have_value("draft")
    expect(dialog.get_by_label("Dataset")).to_have_value(lists.dataset_id)
    agent.select_option(lists.good)
    # the same dialog as the agent's page: its latest version alone when the draft is the same
    expect(dialog.get_by_label("What runs")).to_have_value("1")
    expect(dialog.locator("#start-baseline-text")).to_have_text(
        "No earlier version to compare with"
    )
    expect(dialog.locator("#estimate-grading")).to_contain_text("equals grades the answers")
    expect(dialog.get_by_label("Environment")).to_be_hidden()
    dialog.get_by_text("Advanced").click()
    expect(dialog.get_by_label("Reruns of each flip")).to_be_visible()
    expect(dialog.locator("#start-recordings")).to_have_text(
        "Recordings: none; the candidate answers live (runtime python)."
    )
    start = dialog.get_by_role("button", name="Start for $")
    expect(start).to_be_enabled()
    shot(page, "lists-dataset-run-evals")
    start.click()
    page.wait_for_url("**/runs/run_*")
    run_id = page.url.rsplit("/", 1)[1].split("?")[0]
    run = lists.api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    assert run["agent_id"] == lists.good and run["dataset_id"] == lists.dataset_id
    lists.api.wait(run_id)


def test_a_reader_without_datasets_run_sees_the_start_disabled_with_the_reason(
    page, console_url, shot, stack, lists: Lists
):
    viewer = make_api(stack, org_id=lists.api.org_id, user_id="viewer@example.com", role="viewer")
    lists.api.ok(
        "PUT",
        f"/api/v1/members/viewer@example.com/grants/agent/{lists.good}",
        json={"permissions": ["agents:run"]},
    )
    page.goto(console_url(viewer, f"/datasets/{lists.dataset_id}"))
    button = page.get_by_role("button", name="Run evals")
    expect(button).to_be_disabled()
    expect(page.locator(".guarded .why")).to_have_text(
        "You cannot run evals on this dataset: it needs datasets:run."
    )
    shot(page, "lists-dataset-run-evals-disabled")


def test_a_suites_page_says_when_it_runs_its_bar_and_every_result_with_why(
    page, console_url, shot, lists: Lists
):
    base = f"/api/v1/agents/{lists.good}/suites"
    lists.api.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    suite = lists.api.ok(
        "POST",
        base,
        json={
            "name": "Nightly check",
            "dataset_id": lists.dataset_id,
            "threshold": {"min_pass_rate": 0.5},
            "triggers": {"schedule": {"cron": "0 3 * * *", "timezone": "UTC"}},
        },
    )
    lists.api.ok("POST", f"{base}/{suite['suite_id']}/run")
    results = wait_for_results(lists.api, f"{base}/{suite['suite_id']}/results")
    page.goto(console_url(lists.api, f"/agents/{lists.good}/suites/{suite['suite_id']}"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Nightly check")
    facts = page.locator("dl.facts")
    expect(facts).to_contain_text("every day at 03:00 UTC")
    expect(facts).to_contain_text("pass rate at least 50.0%")
    expect(facts.get_by_role("link", name="t", exact=True)).to_have_attribute(
        "href", f"/datasets/{lists.dataset_id}"
    )
    row = page.locator(f"tr[data-result={results[0]['result_id']}]")
    for reason in results[0]["reasons"]:
        expect(row).to_contain_text(reason)
    shot(page, "lists-suite")


def wait_for_results(api: Api, path: str) -> list[dict]:
    return wait_for(lambda: api.ok("GET", path)["results"] or None)


@pytest.mark.parametrize("path", ["evals", "dataset"])
def test_the_lists_at_200_percent_zoom_are_no_wider_than_the_window(
    browser, console_url, shot, lists: Lists, path
):
    context = browser.new_context(viewport={"width": 640, "height": 900}, device_scale_factor=2)
    try:
        page = context.new_page()
        target = "/evals" if path == "evals" else f"/datasets/{lists.dataset_id}"
        page.goto(console_url(lists.api, target))
        expect(page.locator("table.runs")).to_be_visible()
        wide = page.evaluate(
            "() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth"
        )
        assert wide <= 0, f"the page is {wide} px wider than the window at 200 %"
        shot(page, f"lists-{path}-zoom-200")
    finally:
        context.close()
