"""A tenant's text is only ever text on the console's pages (issue 15, "Every tenant is untrusted"):
markup in an agent's or a dataset's name, a tag, a case and a spec's values is shown as written,
never run, on every page and dialog that shows it."""

from __future__ import annotations

import re

from playwright.sync_api import expect

from tests.conftest import make_api
from tests.e2e.conftest import cases, sleepy_spec

IMG = '<img src=x onerror="window.__pwned=1">'
SVG = '"><svg onload="window.__pwned=2">'


def nothing_ran(page) -> None:
    """Checked on each page before leaving it: a navigation starts a new window."""
    assert page.evaluate("() => window.__pwned") is None
    assert page.locator("img[src=x], svg[onload]").count() == 0


def test_markup_in_names_tags_and_specs_is_shown_as_text_and_never_runs(stack, page, console_url):
    api = make_api(stack)
    alerts: list[str] = []
    page.on("dialog", lambda d: (alerts.append(d.message), d.dismiss()))
    ds = api.ok("POST", "/api/v1/datasets", json={"name": f"ds {IMG}"})["dataset_id"]
    rows = [{**c, "tags": [SVG], "input": f"q {IMG}"} for c in cases(2)]
    body = {"scoring": {"required": ["equals"]}, "cases": rows}
    api.ok("POST", f"/api/v1/datasets/{ds}/versions", json=body)
    first = sleepy_spec()
    first["options"]["note"] = f"one\n{IMG}\nthree"
    agent = api.ok("POST", "/api/v1/agents", json={"name": f"agent {SVG}", "spec": first})
    agent_id = agent["agent_id"]
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")
    draft = sleepy_spec(answers={"c000": "7"})
    draft["options"]["note"] = f"one\n{SVG}\nthree"
    draft["options"][IMG] = SVG
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": draft})
    run_id = api.start(agent_id, ds, paired_baseline=True)["run_id"]
    api.wait(run_id)

    page.goto(console_url(api, f"/agents/{agent_id}"))
    expect(page.get_by_role("heading", level=1)).to_have_text(f"agent {SVG}")
    page.locator("#publish").click()
    expect(page.locator("#publish-title")).to_have_text(f"Publish the draft of agent {SVG}")
    page.get_by_role("button", name="Cancel").click()
    page.get_by_role("button", name="Run evals").click()
    expect(page.locator("#start-dataset option")).to_have_text([f"ds {IMG}"])
    page.get_by_role("button", name="Cancel").click()

    nothing_ran(page)
    page.goto(console_url(api, f"/runs/{run_id}?changes=1"))
    expect(page.locator("#changes li")).to_have_count(3)
    expect(page.locator("#changes .diff .add")).to_have_text([f"+{SVG}\n"])
    expect(page.locator("#changes")).to_contain_text(IMG)
    expect(page.get_by_role("heading", level=1)).to_contain_text(f"ds {IMG}")
    page.get_by_label("Tag").select_option(SVG)
    expect(page.get_by_role("heading", name=f"The sides, under tag {SVG}")).to_be_visible()
    page.locator("table.cases tbody tr summary").first.click()
    expect(page.locator("table.cases")).to_contain_text(f"q {IMG}")

    nothing_ran(page)
    page.goto(console_url(api, f"/datasets/{ds}"))
    expect(page.get_by_role("heading", level=1)).to_have_text(f"ds {IMG}")
    nothing_ran(page)
    page.goto(console_url(api, "/evals"))
    expect(page.locator("table.runs")).to_contain_text(f"agent {SVG}")

    nothing_ran(page)
    assert alerts == []


def test_ids_named_like_an_objects_own_members_are_just_ids_on_the_list_pages(
    stack, page, console_url
):
    """Datasets `__proto__` and `constructor`, and an agent `hasOwnProperty`: the Datasets page
    lists the agent measured on each (it used to throw, the page left blank for everyone in the
    organization), and no page shows one of JavaScript's own members for a name."""
    api = make_api(stack)
    agent = api.ok(
        "POST",
        "/api/v1/agents",
        json={"name": "Own agent", "agent_id": "hasOwnProperty", "spec": sleepy_spec()},
    )["agent_id"]
    for ds in ("__proto__", "constructor"):
        api.ok("POST", "/api/v1/datasets", json={"name": f"set {ds}", "dataset_id": ds})
        body = {"scoring": {"required": ["equals"]}, "cases": cases(1)}
        api.ok("POST", f"/api/v1/datasets/{ds}/versions", json=body)
        api.wait(api.start(agent, ds)["run_id"])

    page.goto(console_url(api, "/datasets"))
    for ds in ("__proto__", "constructor"):
        row = page.locator(f'tr[data-dataset="{ds}"]')
        expect(row.locator("li[data-agent]")).to_have_text([re.compile("^Own agent")])
    for path in ("/datasets", "/agents", "/evals"):
        page.goto(console_url(api, path))
        expect(page.get_by_role("heading", level=1)).to_be_visible()
        expect(page.locator("main")).not_to_contain_text("native code")
        expect(page.locator("main")).not_to_contain_text("[object")
