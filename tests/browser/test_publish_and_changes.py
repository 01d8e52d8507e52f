"""Publishing from the console and what changed between the specs a run tested
(docs/guides/console.md): the publish dialog says what the draft's last run found, that the draft
was not tested since it last changed, or that its test is out of date, and never holds the publish
back; a run's "See what changed" shows the changes between the two specs it tested, not the draft
as it is now.
"""

from __future__ import annotations

import re

from playwright.sync_api import expect

from chalicelib.domain import spec_diff
from tests.browser.worlds import World
from tests.conftest import make_api
from tests.e2e.conftest import cases, sleepy_spec


def noted(notes: str, **kw) -> dict:
    """A sleepy spec carrying a text of several lines (which the agent ignores)."""
    spec = sleepy_spec(**kw)
    spec["options"]["notes"] = notes
    return spec


def open_publish(page):
    page.locator("#publish").click()
    dialog = page.locator("#publish-dialog")
    expect(dialog).to_be_visible()
    return dialog


def test_the_publish_dialog_says_how_the_draft_was_tested_and_publishes_anyway(
    stack, page, console_url, shot
):
    api = make_api(stack)
    ds = api.dataset(cases(3))
    agent = api.agent(noted("one\ntwo\nthree\nfour"), publish=1)
    draft = noted("one\ntwo, changed\nthree\nfour", answers={"c000": "7"})
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": draft})
    page.goto(console_url(api, f"/agents/{agent}"))
    dialog = open_publish(page)
    expect(dialog.locator("#publish-test")).to_have_attribute("data-state", "untested")
    expect(dialog.locator("#publish-test")).to_have_text(
        "The draft was not tested since it last changed."
    )
    expect(dialog.get_by_role("button", name="Publish as v2")).to_be_focused()
    dialog.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)

    run_id = api.start(agent, ds, paired_baseline=True)["run_id"]
    api.wait(run_id)
    page.reload()
    dialog = open_publish(page)
    test = dialog.locator("#publish-test")
    expect(test).to_have_attribute("data-state", "current")
    expect(test).to_have_text("The draft's last run found: Breaks 1.")
    expect(dialog.locator("#publish-run")).to_have_attribute("href", f"/runs/{run_id}")
    expect(dialog.locator("#publish-run")).to_contain_text("The draft against v1, ")
    shot(page, "publish-dialog")
    dialog.get_by_role("button", name="Cancel").click()

    # the run shows what changed between the specs it tested, whatever the draft became since
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": noted("other", answer="41")})
    page.goto(console_url(api, f"/runs/{run_id}"))
    page.get_by_role("link", name="See what changed").click()
    changes = page.locator("#changes")
    expect(changes).to_contain_text("From v1 to the draft, as this run tested them:")
    expect(changes.locator("li")).to_have_count(2)
    notes = changes.locator('li[data-path="options.notes"]')
    expect(notes).to_have_attribute("data-change", "changed")
    expect(notes.locator(".diff .del")).to_have_text(["-two\n"])
    expect(notes.locator(".diff .add")).to_have_text(["+two, changed\n"])
    answers = changes.locator('li[data-path="options.answers"]')
    expect(answers).to_have_attribute("data-change", "added")
    expect(answers.locator(".add")).to_have_text('after: {"c000":"7"}')
    expect(answers.locator(".del")).to_have_count(0)
    expect(changes).not_to_contain_text("null")  # nothing left out: nothing under the list
    shot(page, "run-spec-changes")

    # the run's Publish opens the same dialog: the test it had is out of date now
    dialog = open_publish(page)
    expect(dialog.locator("#publish-test")).to_have_attribute("data-state", "earlier")
    expect(dialog.locator("#publish-test")).to_contain_text("that test is out of date")
    expect(dialog.locator("#publish-run")).to_have_attribute("href", f"/runs/{run_id}")
    dialog.get_by_role("button", name="Publish as v2").click()
    expect(page.locator("#published")).to_have_text("Published as v2.")
    assert api.ok("GET", f"/api/v1/agents/{agent}")["latest_version"] == 2

    # on the agent's page the draft no longer differs: nothing to publish
    page.goto(console_url(api, f"/agents/{agent}"))
    expect(page.get_by_role("heading", level=1)).to_have_text("a")
    expect(page.locator("#draft-differs")).to_have_count(0)
    expect(page.locator("#publish")).to_have_count(0)


def test_a_draft_run_whose_draft_is_published_already_offers_no_publish(stack, page, console_url):
    api = make_api(stack)
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(answer="41"), publish=1)
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answer="42")})
    run_id = api.start(agent, ds, paired_baseline=True)["run_id"]
    api.wait(run_id)
    page.goto(console_url(api, f"/runs/{run_id}"))
    expect(page.locator("#publish")).to_be_visible()
    expect(page.locator("#published-as")).to_have_count(0)

    # the draft this run tested is published since: the run's page has nothing to publish
    api.ok("POST", f"/api/v1/agents/{agent}/versions", json={})
    assert api.ok("GET", f"/api/v1/eval-runs/{run_id}")["story"]["published_as"] == 2
    page.reload()
    expect(page.locator("#published-as")).to_have_text("This draft is published as v2.")
    expect(page.locator("#publish")).to_have_count(0)
    expect(page.locator("#publish-why")).to_have_count(0)

    # once the draft changes again, the old run's draft is not the published one
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answer="43")})
    page.reload()
    expect(page.locator("#test-again")).to_be_visible()
    expect(page.locator("#published-as")).to_have_count(0)
    expect(page.locator("#publish")).to_be_visible()


def test_the_agent_page_publishes_and_shows_the_new_version(stack, page, console_url):
    api = make_api(stack)
    agent = api.agent(sleepy_spec(), publish=1)
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answer="41")})
    page.goto(console_url(api, f"/agents/{agent}"))
    expect(page.locator("#draft-differs")).to_have_text("Draft differs from v1")
    open_publish(page).get_by_role("button", name="Publish as v2").click()
    expect(page.locator("#publish-dialog")).to_have_count(0)
    expect(page.locator("#draft-differs")).to_have_count(0)
    expect(page.locator("#badges")).not_to_contain_text("Publish")
    assert api.ok("GET", f"/api/v1/agents/{agent}")["latest_version"] == 2


def test_what_changed_in_the_demo_and_who_may_see_it(stack, page, console_url, agent_world: World):
    w = agent_world
    page.goto(console_url(w.api, f"/runs/{w.draft_run_id}?changes=1"))
    changes = page.locator("#changes")
    expect(changes).to_contain_text("From v4 to the draft, as this run tested them:")
    recording = changes.locator('li[data-path="recording_id"]')
    expect(recording.locator(".add")).to_have_text("after: gsm8k-6b_finetuning")
    expect(changes.locator('li[data-path="model"] .add')).to_have_text("after: 6b_finetuning")
    # the specs are the editors' work: a runner sees the step disabled, saying why
    runner = make_api(stack, org_id=w.api.org_id, user_id="runner@example.com", role="runner")
    page.goto(console_url(runner, f"/runs/{w.draft_run_id}?changes=1"))
    see = page.locator("#see-changes")
    expect(see).to_be_disabled()
    expect(page.locator(f"#{see.get_attribute('aria-describedby')}")).to_have_text(
        "You cannot see what changed: it needs agents:edit."
    )
    expect(page.locator("#changes")).to_have_count(0)
    # and on the agent's page may neither test nor publish the draft
    page.goto(console_url(runner, f"/agents/{w.agent_id}"))
    publish = page.get_by_role("button", name="Publish")
    expect(publish).to_be_disabled()
    expect(page.locator(f"#{publish.get_attribute('aria-describedby')}")).to_have_text(
        "You cannot publish: it needs agents:edit."
    )


def test_the_start_dialog_says_which_recording_the_candidate_replays(
    page, console_url, agent_world: World
):
    w = agent_world
    page.goto(console_url(w.api, f"/agents/{w.agent_id}"))
    page.get_by_role("button", name="Run evals").click()
    page.get_by_text("Advanced").click()
    expect(page.locator("#start-recordings")).to_have_text(
        re.compile(
            r"^Recordings: the candidate replays recording gsm8k-6b_finetuning "
            r"\(\d+ answers, uploaded .+\)\.$"
        )
    )
    page.get_by_role("button", name="Cancel").click()


def test_a_diff_past_its_bounds_says_how_many_changes_it_left_out(stack, page, console_url):
    api = make_api(stack)
    ds = api.dataset(cases(1))
    many = {f"k{i:03d}": 0 for i in range(spec_diff.MAX_CHANGES + 20)}
    agent = api.agent(noted("a\nb") | {"table": many}, publish=1)
    draft = noted("a\nb") | {"table": {k: 1 for k in many}, "long": "z" * 5_000}
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": draft})
    run_id = api.start(agent, ds, paired_baseline=True)["run_id"]
    api.wait(run_id)
    found = api.ok("GET", f"/api/v1/eval-runs/{run_id}/spec-changes")
    assert len(found["changes"]) == spec_diff.MAX_CHANGES and found["left_out"] == 21
    assert found["changes"][0]["path"] == "long" and found["changes"][0]["cut"] is True
    page.goto(console_url(api, f"/runs/{run_id}?changes=1"))
    expect(page.locator("#changes > ul > li")).to_have_count(spec_diff.MAX_CHANGES)
    expect(page.locator("#changes-left-out")).to_have_text("And 21 more changes, not shown.")
    expect(page.locator('#changes li[data-path="long"]')).to_contain_text("Shown cut")
