"""Walking the console: the menu reaches Agents and Datasets, each page's breadcrumbs are links back
up, a fresh organization's pages each name the next step, no request is a 404 (the icon is
served), a suite's schedule and threshold read as words, the runs table names the model each side
answered on, and latencies are rounded. On the demo's data (`worlds.agent_world`) and on fresh
organizations."""

from __future__ import annotations

import re

import httpx
import pytest
from playwright.sync_api import Page, expect

from tests.browser.worlds import World
from tests.conftest import make_api
from tests.e2e.conftest import cases, sleepy_spec
from tests.support.e2e import Api

SECTIONS = 'nav[aria-label="Sections"]'


def listed_agent(api: Api, agent_id: str) -> dict:
    return next(a for a in api.ok("GET", "/api/v1/agents")["agents"] if a["agent_id"] == agent_id)


def test_the_menu_reaches_agents_and_datasets(page, console_url, shot, agent_world: World):
    w = agent_world
    page.goto(console_url(w.api, "/"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Dashboard")
    page.locator(SECTIONS).get_by_role("link", name="Agents").click()
    page.wait_for_url("**/agents")
    expect(page.get_by_role("heading", level=1)).to_have_text("Agents")
    expect(page.locator(f'tr[data-agent="{w.agent_id}"]')).to_contain_text("GSM8K solver")
    page.locator(SECTIONS).get_by_role("link", name="Datasets").click()
    page.wait_for_url("**/datasets")
    expect(page.get_by_role("heading", level=1)).to_have_text("Datasets")
    expect(page.locator(f'tr[data-dataset="{w.dataset_id}"]')).to_be_visible()
    page.locator(SECTIONS).get_by_role("link", name="Eval runs").click()
    page.wait_for_url("**/evals")
    expect(page.get_by_role("heading", level=1)).to_have_text("Eval runs")


def test_the_agents_page_says_the_demo_agent_s_versions_verdict_words_and_last_run(
    page, console_url, shot, agent_world: World
):
    w = agent_world
    seen = listed_agent(w.api, w.agent_id)  # what the service says, as the page should say it
    live, draft = seen["verdicts"]["live"], seen["verdicts"]["draft"]
    assert live["verdict"] in ("pass", "partial", "fail") and live["total"] == 40
    page.goto(console_url(w.api, "/agents"))
    row = page.locator(f'tr[data-agent="{w.agent_id}"]')
    expect(row.locator("td").nth(1)).to_have_text(f"v{seen['live_version']}")
    if seen["draft_differs"]:
        expect(row.locator("[data-differs=true]")).to_have_text(
            f"Differs from v{seen['latest_version']}"
        )
        expect(row.locator(".draft-verdict [data-verdict]")).to_have_attribute(
            "data-verdict", draft["verdict"]
        )
    word = row.locator(".live-verdict [data-verdict]")
    expect(word).to_have_attribute("data-verdict", live["verdict"])
    expect(word).to_have_text(f"{live['verdict']} {live['passed']}/{live['total']}")
    shot(page, "nav-agents")
    last = seen["last_run"]
    row.locator("a.run-link").click()
    page.wait_for_url(f"**/runs/{last['run_id']}")
    expect(page.locator("#verdict-phrase")).to_be_visible()


def fresh_org_with_an_unmeasured_agent(stack) -> tuple[Api, str, str]:
    api = make_api(stack)
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "Smoke"})["dataset_id"]
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": cases(3)},
    )
    agent = api.ok("POST", "/api/v1/agents", json={"name": "Quiet agent", "spec": sleepy_spec()})
    api.ok("POST", f"/api/v1/agents/{agent['agent_id']}/versions")
    return api, agent["agent_id"], ds


def test_an_agent_nothing_measured_is_neutral_not_measured_yet(page, console_url, shot, stack):
    api, agent, ds = fresh_org_with_an_unmeasured_agent(stack)
    page.goto(console_url(api, "/agents"))
    row = page.locator(f'tr[data-agent="{agent}"]')
    word = row.locator(".live-verdict [data-verdict]")
    expect(word).to_have_attribute("data-verdict", "none")
    expect(word).to_have_text("not measured yet")
    # neutral: the muted grey, never the red of a failure
    assert word.evaluate("e => getComputedStyle(e).color") == "rgb(87, 96, 106)"
    expect(row.locator("[data-differs=false]")).to_have_text("Same as v1")
    expect(row.locator("td").last).to_have_text("no run yet")
    # the agent's own page says where to start
    row.get_by_role("link", name="Quiet agent").click()
    expect(page.locator("#runs-empty")).to_contain_text("Choose Run evals above")
    expect(page.locator("#suites-heading + p")).to_contain_text(f"assay suites create {agent}")
    shot(page, "nav-agent-no-runs")


def test_the_datasets_page_says_versions_cases_scorers_and_agents_measured(
    page, console_url, shot, agent_world: World
):
    w = agent_world
    listed = w.api.ok("GET", "/api/v1/datasets")["datasets"]
    [demo] = [d for d in listed if d["dataset_id"] == w.dataset_id]
    page.goto(console_url(w.api, "/datasets"))
    row = page.locator(f'tr[data-dataset="{w.dataset_id}"]')
    cells = row.locator("td")
    expect(cells.nth(1)).to_have_text(f"v{demo['version']['version']}")
    expect(cells.nth(2)).to_have_text(str(demo["version"]["case_count"]))
    for scorer in demo["version"]["scoring"]["required"]:
        expect(cells.nth(3)).to_contain_text(scorer)
    expect(row.locator(f'li[data-agent="{w.agent_id}"]')).to_contain_text("GSM8K solver")
    shot(page, "nav-datasets")
    row.get_by_role("link", name=demo["name"]).click()
    page.wait_for_url(f"**/datasets/{w.dataset_id}")
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    expect(crumbs).to_have_text(re.compile(rf"Datasets\s*›\s*{re.escape(demo['name'])}"))
    crumbs.get_by_role("link", name="Datasets").click()
    page.wait_for_url("**/datasets")
    expect(page.get_by_role("heading", level=1)).to_have_text("Datasets")


def test_breadcrumbs_lead_from_a_run_back_to_its_agent_and_the_agents(
    page, console_url, shot, agent_world: World
):
    w = agent_world
    page.goto(console_url(w.api, f"/runs/{w.v4_run_id}"))
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    expect(crumbs).to_have_text(re.compile(rf"Agents\s*›\s*GSM8K solver\s*›\s*Run {w.v4_run_id}"))
    expect(crumbs.locator('[aria-current="page"]')).to_have_text(f"Run {w.v4_run_id}")
    shot(page, "nav-run-crumbs")
    crumbs.get_by_role("link", name="GSM8K solver").click()
    page.wait_for_url(f"**/agents/{w.agent_id}")
    expect(page.get_by_role("heading", level=1)).to_have_text("GSM8K solver")
    page.get_by_role("navigation", name="Breadcrumb").get_by_role("link", name="Agents").click()
    page.wait_for_url("**/agents")
    expect(page.get_by_role("heading", level=1)).to_have_text("Agents")


def test_a_fresh_organization_s_pages_name_the_command_to_run_next(page, console_url, shot, stack):
    fresh = make_api(stack)
    page.goto(console_url(fresh, "/evals"))
    empty = page.locator("#evals-empty")
    expect(empty).to_contain_text("assay agents create my-agent --spec agent.json")
    expect(empty).to_contain_text('assay import my-set cases.csv --create "My set"')
    expect(empty.get_by_role("link", name="Agents")).to_have_attribute("href", "/agents")
    shot(page, "nav-fresh-evals")
    page.goto(console_url(fresh, "/agents"))
    expect(page.locator("#agents-empty code")).to_have_text(
        "assay agents create my-agent --spec agent.json"
    )
    shot(page, "nav-fresh-agents")
    page.goto(console_url(fresh, "/datasets"))
    expect(page.locator("#datasets-empty code")).to_have_text(
        'assay import my-set cases.csv --create "My set" --scorer equals'
    )
    shot(page, "nav-fresh-datasets")
    page.goto(console_url(fresh, "/"))
    card = page.locator("#eval-runs-card")
    expect(card).to_contain_text("No eval runs yet.")
    expect(card.get_by_role("link", name="Agents")).to_have_attribute("href", "/agents")


def not_found(page: Page) -> list[str]:
    missing: list[str] = []
    page.on("response", lambda r: missing.append(r.url) if r.status == 404 else None)
    return missing


def test_no_page_asks_for_anything_missing_and_the_icon_is_served(
    page, console_url, stack, agent_world: World
):
    w = agent_world
    missing = not_found(page)
    for path in (
        "/",
        "/agents",
        "/datasets",
        "/evals",
        f"/agents/{w.agent_id}",
        f"/runs/{w.v4_run_id}",
        f"/datasets/{w.dataset_id}",
    ):
        page.goto(console_url(w.api, path))
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        page.wait_for_load_state("networkidle")
        icon = page.locator('link[rel="icon"]')
        href = icon.evaluate("e => e.href")
        assert page.request.get(href).status == 200
    assert missing == []
    for path in ("/favicon.ico", "/console/favicon.svg"):
        r = httpx.get(f"{stack.api_url}{path}")
        assert r.status_code == 200 and r.headers["content-type"] == "image/svg+xml"
        assert r.text.startswith("<svg")


def test_the_suites_card_says_its_schedule_and_threshold_in_words(page, console_url, shot, stack):
    api, agent, ds = fresh_org_with_an_unmeasured_agent(stack)
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={
            "name": "Nightly",
            "dataset_id": ds,
            "threshold": {"max_regressions": 0, "min_pass_rate": 0.9},
            "triggers": {"schedule": {"cron": "0 6 * * *", "timezone": "UTC"}},
        },
    )
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={
            "name": "Weekdays",
            "dataset_id": ds,
            "threshold": {"max_regressions": 2},
            "triggers": {"schedule": {"cron": "30 7 * * 1-5", "timezone": "Europe/Paris"}},
        },
    )
    page.goto(console_url(api, f"/agents/{agent}"))
    card = page.locator("section.card", has=page.locator("#suites-heading"))
    nightly = card.locator("li", has_text="Nightly")
    expect(nightly.locator(".schedule")).to_have_text("runs every day at 06:00 UTC")
    expect(nightly.locator(".threshold")).to_have_text(
        "pass rate at least 90.0%; no confirmed regressions allowed"
    )
    weekdays = card.locator("li", has_text="Weekdays")
    expect(weekdays.locator(".schedule")).to_have_text(
        "runs every Monday to Friday at 07:30 Europe/Paris"
    )
    expect(weekdays.locator(".threshold")).to_have_text("at most 2 confirmed regressions")
    for raw in ("null", "max regressions", "rise pct", "0 6 * * *", "regressions 0.0%"):
        expect(card).not_to_contain_text(raw)
    shot(page, "nav-suites-card")
    nightly.get_by_role("link", name="Nightly").click()
    expect(page.locator("#suite-schedule")).to_contain_text("every day at 06:00 UTC · next ")
    expect(page.locator("#suite-threshold")).to_have_text(
        "pass rate at least 90.0%; no confirmed regressions allowed"
    )
    crumbs = page.get_by_role("navigation", name="Breadcrumb")
    expect(crumbs).to_have_text(re.compile(r"Agents\s*›\s*Quiet agent\s*›\s*Nightly"))
    crumbs.get_by_role("link", name="Quiet agent").click()
    page.wait_for_url(f"**/agents/{agent}")


CRONS = {
    "0 6 * * *": "every day at 06:00 UTC",
    "5 0,12 * * *": "every day at 00:05 and 12:05 UTC",
    "*/15 * * * *": "every 15 minutes",
    "0 * * * *": "every hour, on the hour",
    "20 * * * *": "every hour at 20 past",
    "0 */6 * * *": "every 6 hours at 0 past",
    "0 9 * * 1": "every Monday at 09:00 UTC",
    "0 9 * * 0,6": "every Sunday and Saturday at 09:00 UTC",
    "0 2 1 * *": "on the 1st of every month at 02:00 UTC",
    "0 2 15 1,7 *": "on the 15th of January and July at 02:00 UTC",
    "0 2 * 3 *": "every day in March at 02:00 UTC",
    "0 0 1 * 1": 'on the schedule "0 0 1 * 1" (UTC)',  # day of month or of week: quoted
    "@daily": 'on the schedule "@daily" (UTC)',
}


def test_cron_lines_read_as_words(page, console_url, agent_world: World):
    page.goto(console_url(agent_world.api, "/agents"))
    expect(page.get_by_role("heading", level=1)).to_have_text("Agents")
    said = page.evaluate(
        "async (crons) => { const m = await import('/console/words.js');"
        " return Object.fromEntries(crons.map((c) => [c, m.cronWords(c, 'UTC')])); }",
        list(CRONS),
    )
    assert said == CRONS
    words = page.evaluate(
        "async () => { const m = await import('/console/words.js');"
        " return [m.ms(11.3765), m.ms(0.42), m.ms(null), m.ms(12345),"
        " m.thresholdWords({max_regressions: 0, max_cost_per_pass_rise_pct: null}),"
        " m.thresholdWords({})]; }"
    )
    assert words == ["11 ms", "0.4 ms", "—", "12.3 s", "no confirmed regressions allowed", ""]


def test_the_runs_table_names_the_model_each_side_answered_on_and_latency_is_rounded(
    page, console_url, shot, agent_world: World
):
    w = agent_world
    run = w.api.ok("GET", f"/api/v1/eval-runs/{w.v4_run_id}")
    [candidate] = [a for a in run["arms"] if a["role"] == "candidate"]
    assert candidate["model"] and candidate["model_profile_id"] is None
    page.goto(console_url(w.api, f"/agents/{w.agent_id}"))
    row = page.locator(f'tr[data-run-id="{w.v4_run_id}"]')
    expect(row.locator("td").nth(4)).to_have_text(candidate["model"])
    expect(page.locator("table.runs tbody td:nth-child(5)", has_text="default")).to_have_count(0)
    page.goto(console_url(w.api, f"/runs/{w.clean_draft_run_id}"))
    side = page.locator("#sides .side").first
    expect(side).to_contain_text(re.compile(r"p50 \d+(\.\d)? ms"))
    assert not re.search(r"\d\.\d{2,} ms", page.locator("#main").inner_text())


def test_the_runs_table_names_the_model_the_agent_s_answers_reported(page, console_url, stack):
    api = make_api(stack)
    ds = api.dataset(cases(3))
    spec = sleepy_spec()
    spec["options"]["model"] = "lookup-1"  # its spec names no model; its answers report one
    agent = api.agent(spec)
    run_id = api.start(agent, ds)["run_id"]
    api.wait(run_id)
    run = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    [candidate] = [a for a in run["arms"] if a["role"] == "candidate"]
    assert candidate["model"] is None and candidate["model_profile_id"] is None
    assert run["summaries"][candidate["arm_id"]]["model"] == "lookup-1"
    page.goto(console_url(api, f"/agents/{agent}"))
    row = page.locator(f'tr[data-run-id="{run_id}"]')
    expect(row.locator("td").nth(4)).to_have_text("lookup-1")


@pytest.mark.parametrize("path", ["agents", "datasets"])
def test_the_new_pages_at_200_percent_zoom_are_no_wider_than_the_window(
    browser, console_url, shot, agent_world: World, path
):
    context = browser.new_context(viewport={"width": 640, "height": 900}, device_scale_factor=2)
    try:
        page = context.new_page()
        page.goto(console_url(agent_world.api, f"/{path}"))
        expect(page.locator("table").first).to_be_visible()
        wide = page.evaluate(
            "() => document.scrollingElement.scrollWidth - document.scrollingElement.clientWidth"
        )
        assert wide <= 0, f"the page is {wide} px wider than the window at 200 %"
        shot(page, f"nav-{path}-zoom-200")
    finally:
        context.close()
