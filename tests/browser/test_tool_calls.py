"""A case's tool calls on the run's page (docs/guides/console.md, docs/guides/tools.md "Reading
the calls"): each call's name, its status in words, its arguments and result as text (markup in
them never runs), its reason; each case row counts its blocked and divergent calls, and the header
says how many cases diverged from the recording."""

from __future__ import annotations

import json

import pytest
from playwright.sync_api import expect

from tests.browser.test_hostile_text import nothing_ran
from tests.support.tool_runs import IMG, SVG, decided_run, tool_server


@pytest.fixture
def run(api, container, frozen, operator):
    operator(assay_allow_private_network=True)  # the test connection's server is on 127.0.0.1
    with tool_server() as url:
        yield decided_run(api, container, url)


def test_the_case_detail_shows_each_call_s_status_and_its_text_as_text(
    api, run, page, console_url, shot
):
    alerts: list[str] = []
    page.on("dialog", lambda d: (alerts.append(d.message), d.dismiss()))
    page.goto(console_url(api, f"/runs/{run.run_id}"))
    expect(page.locator("#diverged")).to_have_text(
        "1 case diverged from the recording: their calls the recording did not hold were held, "
        "not made."
    )
    row = {cid: page.locator(f'tr[data-case-id="{cid}"]') for cid in ("c000", "c001", "c002")}
    expect(row["c000"].locator(".call-counts")).to_have_text("2 blocked")
    expect(row["c001"].locator(".call-counts")).to_have_text("2 divergent")
    expect(row["c002"].locator(".call-counts")).to_have_count(0)

    row["c000"].locator("summary").click()
    first = row["c000"].locator("li.call")
    expect(first.locator(".call-name")).to_have_text(
        ["lookup_order", "send_email", "workspace_write", "delete_everything"]
    )
    expect(first.locator(".call-status")).to_have_text(
        [
            "executed on shop-test",
            "blocked — not executed",
            "executed on workspace",
            "blocked — not executed",
        ]
    )
    looked = first.nth(0)
    # JSON as text: the markup shows with its quotes escaped, as JSON writes them
    expect(looked.locator(".call-arguments pre")).to_contain_text(json.dumps(IMG))
    expect(looked.locator(".call-result pre")).to_contain_text(json.dumps(SVG))
    expect(looked.locator(".call-reason")).to_have_text(
        "run on test connection 'shop-test' in place of 'shop'"
    )
    expect(first.nth(1).locator(".call-arguments pre")).to_contain_text(json.dumps(f"sorry {SVG}"))
    expect(first.nth(1).locator(".call-reason")).to_have_text(
        "tool 'send_email' may write and its connection has no test connection"
    )
    expect(first.nth(1).locator(".call-result")).to_have_count(0)

    row["c001"].locator("summary").click()
    expect(row["c001"].locator("li.call .call-status")).to_have_text(
        ["replayed from the recording", "divergent — held", "divergent — held"]
    )
    expect(row["c001"].locator("li.call").nth(0).locator(".call-result pre")).to_contain_text(
        '"status": "shipped"'
    )
    row["c002"].locator("summary").click()
    expect(row["c002"].locator("li.call .call-status")).to_have_text(
        ["unverified — reported by the agent"]
    )
    expect(row["c002"].locator("li.call .call-reason")).to_have_text(
        "reported by the agent as executed; not made through the tool gateway"
    )
    shot(page, "run-tool-calls")
    nothing_ran(page)
    assert alerts == []
