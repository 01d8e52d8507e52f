"""The chart over a longer history in the browser (docs/guides/console.md): the 10 / 30 / all
switch kept in the address through Back and a reload, and the axis across several days and within
one past day. The history is copies of one real completed run, written into the tables as
`bench.history` writes its own, at chosen times."""

from __future__ import annotations

import re
from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest
from playwright.sync_api import expect

from bench.history import write_history
from chalicelib import bootstrap
from chalicelib.clock import iso
from tests.conftest import make_api
from tests.e2e.conftest import cases, sleepy_spec


def copies(template, agent_id: str, times: list[datetime], tag: str) -> list:
    return [
        replace(
            template,
            run_id=f"run_{tag}_{i:03d}",
            agent_id=agent_id,
            created_at=iso(at),
            started_at=iso(at),
            completed_at=iso(at + timedelta(seconds=5)),
        )
        for i, at in enumerate(times)
    ]


@pytest.fixture(scope="module")
def history(stack):
    api = make_api(stack)
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(), publish=1)
    run = api.start(agent, ds, candidate="version", version=1)
    assert api.wait(run["run_id"])["status"] == "completed"
    template = bootstrap.container().runs.get(api.org_id, run["run_id"])
    now = datetime.now(UTC)
    # across days: three runs on each of two earlier days, then today's (the real run is last)
    three_days = now.replace(hour=10, minute=0, second=0, microsecond=0) - timedelta(days=3)
    earlier = [three_days + timedelta(minutes=i) for i in range(3)]
    earlier += [three_days + timedelta(days=1, minutes=i) for i in range(3)]
    today = [now - timedelta(seconds=40 - i) for i in range(6)]
    write_history(copies(template, agent, earlier + today, "days"))
    # within one past day: a second agent whose every run is on the same day, a minute apart
    one_day_agent = api.agent(sleepy_spec())
    day = now.replace(hour=9, minute=0, second=0, microsecond=0) - timedelta(days=5)
    write_history(
        copies(template, one_day_agent, [day + timedelta(minutes=i) for i in range(4)], "day")
    )
    return api, agent, one_day_agent, earlier + today + [now], day


def labels(page) -> list[str]:
    return page.locator("#chart svg .x-axis text").all_text_contents()


def test_the_switch_opens_on_the_last_10_and_survives_back_and_a_reload(
    page, console_url, shot, history
):
    api, agent, *_ = history
    page.goto(console_url(api, f"/agents/{agent}"))
    points = page.locator("#chart svg [data-run-id]")
    expect(points).to_have_count(10)  # 13 measured runs: it opens on the last 10
    switch = page.get_by_role("group", name="Runs shown in the chart")
    expect(switch.get_by_role("link", name="Last 10")).to_have_attribute("aria-current", "true")
    switch.get_by_role("link", name="Last 30").click()
    expect(page).to_have_url(re.compile(r"\?last=30$"))
    expect(points).to_have_count(13)  # fewer than 30: every one
    expect(switch.get_by_role("link", name="Last 30")).to_have_attribute("aria-current", "true")
    switch.get_by_role("link", name="All").click()
    expect(page).to_have_url(re.compile(r"\?last=all$"))
    expect(points).to_have_count(13)
    shot(page, "agent-evals-all-runs")
    page.go_back()
    expect(page).to_have_url(re.compile(r"\?last=30$"))
    page.go_back()
    expect(page).not_to_have_url(re.compile(r"last="))
    expect(points).to_have_count(10)
    page.go_forward()
    page.go_forward()
    expect(page).to_have_url(re.compile(r"\?last=all$"))
    expect(points).to_have_count(13)
    page.reload()  # the address alone keeps the choice (the token stays in the tab)
    expect(points).to_have_count(13)
    expect(switch.get_by_role("link", name="All")).to_have_attribute("aria-current", "true")


def test_across_days_dates_for_older_runs_times_for_today_each_repeat_printed_once(
    page, console_url, history
):
    api, agent, _, times, _ = history
    page.goto(console_url(api, f"/agents/{agent}?last=all"))
    expect(page.locator("#chart svg [data-run-id]")).to_have_count(13)
    first, second = times[0], times[3]
    shown = labels(page)
    assert shown[0] == f"{first:%b} {first.day}" and shown[1] == f"{second:%b} {second.day}"
    # today's runs, seconds apart: with their seconds, as many as the axis has room for
    assert len(shown) > 3 and all(re.fullmatch(r"\d\d:\d\d(:\d\d)?", t) for t in shown[2:]), shown
    assert len(shown) == len(set(shown))  # a repeated label is printed once
    # the tooltip keeps the full date and time
    title = page.locator("#chart svg [data-run-id] title").first.text_content()
    assert f"{first:%Y-%m-%d %H:%M} UTC" in title


def test_within_one_past_day_the_axis_shows_times(page, console_url, shot, history):
    api, _, one_day_agent, _, day = history
    page.goto(console_url(api, f"/agents/{one_day_agent}"))
    expect(page.locator("#chart svg [data-run-id]")).to_have_count(4)
    assert labels(page) == [f"{day + timedelta(minutes=i):%H:%M}" for i in range(4)]
    expect(page.get_by_role("group", name="Runs shown in the chart")).to_have_count(0)
    shot(page, "agent-evals-one-past-day")
