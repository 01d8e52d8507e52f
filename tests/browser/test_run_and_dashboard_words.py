"""What a new user reads first, in a real headless Chromium: why a case of a run is ungraded (no
judge: its scorer has no reference), each case's own result on a run without a baseline, the
dashboard's Eval runs card told apart row by row, every run of a few minutes labelled on the
agent's chart, and a comparison in the CLI's words (confirmed regressions, the overall McNemar
clause)."""

from __future__ import annotations

import re
from dataclasses import dataclass, replace
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from bench.history import write_history
from chalicelib import bootstrap
from chalicelib.clock import iso
from tests.browser.worlds import World
from tests.conftest import make_api
from tests.support.e2e import Api, cases, sleepy_spec

UNGRADED_SENTENCE = (
    "1 case could not be graded (it has no reference for its scorer equals): it counts as "
    "neither passed nor failed."
)


@dataclass(frozen=True)
class Words:
    api: Api
    agent_id: str
    other_agent_id: str
    run_id: str  # v1 alone on "Arithmetic": c002 has no reference, scored by equals alone
    other_run_id: str  # the other agent's draft alone on "Capitals", the newest run
    old_run_id: str  # a copy of `run_id` started three days ago
    old_start: datetime


def named_dataset(api: Api, name: str, rows: list[dict]) -> str:
    ds = api.ok("POST", "/api/v1/datasets", json={"name": name})
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds['dataset_id']}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": rows},
    )
    return ds["dataset_id"]


@pytest.fixture(scope="module")
def words(stack) -> Words:
    """A fresh organization: "Adder" v1 alone on "Arithmetic" (two cases answered right, one
    without a reference), the same run again three days ago, then "Speller"'s draft alone on
    "Capitals" (the newest run)."""
    api = make_api(stack)
    arithmetic = named_dataset(
        api, "Arithmetic", [*cases(2), {"case_id": "c002", "input": "question 2"}]
    )
    capitals = named_dataset(api, "Capitals", cases(2, reference="Paris"))
    adder = api.ok("POST", "/api/v1/agents", json={"name": "Adder", "spec": sleepy_spec()})
    api.ok("POST", f"/api/v1/agents/{adder['agent_id']}/versions")
    speller = api.ok("POST", "/api/v1/agents", json={"name": "Speller", "spec": sleepy_spec()})
    run_id = api.start(adder["agent_id"], arithmetic, candidate="version", version=1)["run_id"]
    assert api.wait(run_id)["status"] == "completed"
    old_start = datetime.now(UTC).replace(hour=10, minute=7, second=0, microsecond=0)
    old_start -= timedelta(days=3)
    template = bootstrap.container().runs.get(api.org_id, run_id)
    old = replace(
        template,
        run_id=f"{run_id}_old",
        created_at=iso(old_start),
        started_at=iso(old_start),
        completed_at=iso(old_start + timedelta(seconds=5)),
    )
    write_history([old])
    other = api.start(speller["agent_id"], capitals, candidate="draft")["run_id"]
    assert api.wait(other)["status"] == "completed"
    return Words(api, adder["agent_id"], speller["agent_id"], run_id, other, old.run_id, old_start)


def test_an_ungraded_case_says_its_scorer_has_no_reference_not_that_a_judge_failed(
    page, console_url, shot, words: Words
):
    page.goto(console_url(words.api, f"/runs/{words.run_id}"))
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text(UNGRADED_SENTENCE)
    expect(verdict).not_to_contain_text("judge")
    expect(verdict).to_contain_text("No baseline: v1 passed 2 of 3 cases")
    expect(page.locator("#verdict-phrase")).to_have_text("No baseline")
    expect(page.locator("#verdict-headline")).to_have_count(0)  # nothing is compared
    shot(page, "words-ungraded-no-judge")


def test_without_a_baseline_the_cases_table_gives_each_cases_own_result(
    page, console_url, shot, words: Words
):
    page.goto(console_url(words.api, f"/runs/{words.run_id}"))
    table = page.locator("table.cases")
    expect(table.locator("thead th").nth(2)).to_have_text("Result")
    results = {
        case: table.locator(f'tr[data-case-id="{case}"] td').nth(2)
        for case in ("c000", "c001", "c002")
    }
    expect(results["c000"]).to_have_text("passed")
    expect(results["c001"]).to_have_text("passed")
    expect(results["c002"]).to_have_text("not graded")
    page.locator('tr[data-case-id="c002"] summary').click()
    shot(page, "words-cases-result-without-baseline")


def test_the_dashboard_tells_its_runs_apart_by_agent_what_was_tested_dataset_and_day(
    page, console_url, shot, words: Words
):
    page.goto(console_url(words.api, "/"))
    card = page.locator("#eval-runs-card")
    headers = card.locator("thead th")
    expect(headers).to_have_text(["Agent", "Tested", "Dataset", "Verdict", "Started"])
    rows = card.locator("tbody tr")
    expect(rows).to_have_count(3)
    today = datetime.now(UTC)
    newest, adder, old = rows.nth(0), rows.nth(1), rows.nth(2)
    expect(newest.locator("td")).to_have_text(
        ["Speller", "The draft alone", "Capitals", "No baseline", re.compile(r"^\d\d:\d\d UTC$")]
    )
    expect(newest.get_by_role("link", name="The draft alone")).to_have_attribute(
        "href", f"/runs/{words.other_run_id}"
    )
    expect(adder.locator("td")).to_have_text(
        ["Adder", "v1 alone", "Arithmetic", "No baseline", re.compile(r"^\d\d:\d\d UTC$")]
    )
    day = f"{words.old_start:%b} {words.old_start.day}"
    if words.old_start.year != today.year:
        day += f" {words.old_start.year}"
    expect(old.locator("td").nth(4)).to_have_text(f"{day}, 10:07 UTC")
    expect(old.get_by_role("link", name="Arithmetic")).to_have_count(1)
    shot(page, "words-dashboard")


def test_runs_minutes_apart_on_one_day_each_get_an_axis_label(
    page, console_url, shot, agent_world: World
):
    w = agent_world
    page.goto(console_url(w.api, f"/agents/{w.agent_id}"))
    points = page.locator("#chart svg [data-run-id]")
    expect(points).to_have_count(5)
    starts = [
        datetime.fromisoformat(w.api.ok("GET", f"/api/v1/eval-runs/{run_id}")["started_at"])
        for run_id in points.evaluate_all("ps => ps.map(p => p.dataset.runId)")
    ]
    assert len({s.date() for s in starts}) == 1  # the world is built in minutes
    minutes = {s.replace(second=0, microsecond=0) for s in starts}
    seconds = {s.replace(microsecond=0) for s in starts}
    assert len(minutes) < len(seconds), "the world's runs are meant to share a minute"
    shown = page.locator("#chart svg .x-axis text").all_text_contents()
    # one label per second a run started at (runs of the same second share one)
    assert len(shown) == len(seconds), shown
    assert len(set(shown)) == len(shown), shown
    assert all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", t) for t in shown), shown
    assert any(re.fullmatch(r"\d\d:\d\d:\d\d", t) for t in shown), shown
    shot(page, "words-chart-one-day-minutes-apart")


def test_a_comparison_reads_as_the_cli_says_it(page, console_url, shot, agent_world: World):
    w = agent_world
    comparison = w.api.ok("GET", f"/api/v1/eval-runs/{w.draft_run_id}/comparison")
    broke, fixed = comparison["confirmed_regressions"], comparison["confirmed_fixes"]
    p = f"{comparison['p_value']:.3g}"
    overall = comparison["overall"] or "not significant"
    page.goto(console_url(w.api, f"/runs/{w.draft_run_id}"))
    expect(page.locator("#verdict-phrase")).to_have_text(
        re.compile(rf"^(Breaks {broke}|Worse overall · {broke} broke)$")
    )
    said = (
        f"{comparison['verdict'].replace('_', ' ')}; {broke} confirmed regressions, "
        f"{fixed} confirmed {'fix' if fixed == 1 else 'fixes'}; "
        f"overall: {overall} (exact McNemar p = {p})"
    )
    # next to the short badge, the headline in the CLI's words
    expect(page.locator("#verdict-headline")).to_have_text(f"Against v4: {said}")
    expect(page.locator("#verdict")).to_contain_text(f"Overall: {overall} (exact McNemar p = {p}).")
    expect(page.locator("#verdict")).not_to_contain_text("cannot tell whether")
    expect(page.locator("#compared-words")).to_have_text(f"Against the baseline: {said}.")
    shot(page, "words-comparison-as-the-cli")
