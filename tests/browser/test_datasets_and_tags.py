"""An agent measured on two datasets, in the browser (docs/guides/console.md): a line per dataset
with its own dash, a point's colour for each kind of result (red broke, amber broke and fixed,
neutral neither), oldest left, a run that could not run left out of the trend but listed; and on a
run's page a tag that reads the sides, the comparison and the cases under it while the verdict
stays over every case."""

from __future__ import annotations

import re
from dataclasses import dataclass

import pytest
from playwright.sync_api import expect

from tests.conftest import make_api
from tests.e2e.conftest import cases, sleepy_spec
from tests.support.e2e import Api

BROKEN = {"runtime": "http", "url": "http://127.0.0.1:9/answer"}  # nothing listens there


@dataclass(frozen=True)
class TwoDatasets:
    api: Api
    agent_id: str
    tagged_run: str  # v2 against v1 on the tagged dataset: breaks c001, c004, c005
    alone_run: str  # v1 alone on the other dataset: nothing compared
    mixed_run: str  # v2 against v1 there: breaks b000, fixes b003
    broken_run: str  # a draft that could not run


def named_dataset(api: Api, name: str, rows: list[dict]) -> str:
    ds = api.ok("POST", "/api/v1/datasets", json={"name": name})["dataset_id"]
    body = {"scoring": {"required": ["equals"]}, "cases": rows}
    api.ok("POST", f"/api/v1/datasets/{ds}/versions", json=body)
    return ds


@pytest.fixture(scope="module")
def two(stack) -> TwoDatasets:
    api = make_api(stack)
    tagged = [{**c, "tags": ["hard" if i < 3 else "easy"]} for i, c in enumerate(cases(6))]
    a = named_dataset(api, "Tagged", tagged)
    b = named_dataset(api, "Other", [{**c, "case_id": f"b{i:03d}"} for i, c in enumerate(cases(4))])
    agent = api.agent(sleepy_spec(answers={"b003": "0"}), publish=1)
    api.ok(
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        json={"spec": sleepy_spec(answers={"b000": "7", "c001": "7", "c004": "7", "c005": "7"})},
    )
    api.ok("POST", f"/api/v1/agents/{agent}/versions")

    def measured(dataset: str, **body) -> str:
        run = api.start(agent, dataset, **body)
        assert api.wait(run["run_id"])["status"] == "completed"
        return run["run_id"]

    alone = measured(b, candidate="version", version=1)
    mixed = measured(b, candidate="version", version=2, paired_baseline=True)
    tagged_run = measured(a, candidate="version", version=2, paired_baseline=True)
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": BROKEN})
    broken = measured(b, candidate="draft")
    return TwoDatasets(api, agent, tagged_run, alone, mixed, broken)


def test_a_line_per_dataset_with_its_own_dash_and_a_colour_per_result(
    page, console_url, shot, two: TwoDatasets
):
    page.goto(console_url(two.api, f"/agents/{two.agent_id}"))
    chart = page.locator("#chart svg")
    lines = chart.locator("path[data-dataset]")
    expect(lines).to_have_count(2)
    dashes = lines.evaluate_all("ps => ps.map(p => p.getAttribute('stroke-dasharray'))")
    assert len(set(dashes)) == 2, dashes
    expect(chart.locator(".legend")).to_contain_text("Tagged")
    expect(chart.locator(".legend")).to_contain_text("Other")
    # the run that could not run is listed, not plotted
    points = chart.locator("[data-run-id]")
    expect(points).to_have_count(3)
    expect(chart.locator(f'[data-run-id="{two.broken_run}"]')).to_have_count(0)
    expect(page.locator(f'tr[data-run-id="{two.broken_run}"]')).to_contain_text("Could not run")
    colour = {
        run: chart.locator(f'[data-run-id="{run}"]').get_attribute("data-colour")
        for run in (two.alone_run, two.mixed_run, two.tagged_run)
    }
    assert colour == {two.alone_run: "neutral", two.mixed_run: "amber", two.tagged_run: "red"}
    # oldest left
    xs = [chart.locator(f'[data-run-id="{r}"]').bounding_box()["x"] for r in colour]
    assert xs == sorted(xs) and len(set(xs)) == 3, xs
    shot(page, "agent-evals-two-datasets")


def test_a_tag_reads_the_sides_the_comparison_and_the_cases_under_it(
    page, console_url, shot, two: TwoDatasets
):
    page.goto(console_url(two.api, f"/runs/{two.tagged_run}"))
    verdict = page.locator("#verdict")
    expect(verdict).to_contain_text("v2 breaks 3 cases every time it is asked, and fixes none.")
    sides = page.locator("#sides .side")
    expect(sides).to_have_count(2)
    expect(page.locator('#sides [data-arm="candidate"] .side-rate')).to_contain_text(
        "Pass rate 50.0% · 3/6 passed"
    )
    expect(page.locator('#sides [data-arm="baseline"] .side-rate')).to_contain_text(
        "Pass rate 100.0% · 6/6 passed"
    )
    expect(page.locator("#comparison")).to_contain_text("3 broke · 3 unchanged")
    expect(page.locator("table.cases tbody tr")).to_have_count(6)

    page.get_by_label("Tag").select_option("easy")
    expect(page).to_have_url(re.compile(r"tag=easy"))
    expect(page.get_by_role("heading", name="The sides, under tag easy")).to_be_visible()
    expect(page.locator('#sides [data-arm="candidate"] .side-rate')).to_contain_text(
        "Pass rate 33.3% · 1/3 passed"
    )
    expect(page.locator("#comparison h2")).to_have_text("How the two compare, under tag easy")
    expect(page.locator("#comparison")).to_contain_text("2 broke · 1 unchanged")
    expect(page.locator("#comparison")).to_contain_text("Pass rate 100.0% before, 33.3% after")
    rows = page.locator("table.cases tbody tr")
    expect(rows).to_have_count(3)
    cases_shown = rows.evaluate_all("rs => rs.map(r => r.dataset.caseId)")
    assert cases_shown == ["c003", "c004", "c005"], cases_shown
    # the verdict stays over every case
    expect(verdict).to_contain_text("v2 breaks 3 cases every time it is asked")
    shot(page, "run-tag-filter")
    # and the outcome filter narrows the tag's cases further, both kept in the address
    page.get_by_label("Outcome").select_option("regression")
    expect(page).to_have_url(
        re.compile(r"tag=easy.*outcome=regression|outcome=regression.*tag=easy")
    )
    expect(rows).to_have_count(2)
    page.go_back()
    expect(rows).to_have_count(3)
    page.reload()
    expect(page.locator("#comparison")).to_contain_text("2 broke · 1 unchanged")
