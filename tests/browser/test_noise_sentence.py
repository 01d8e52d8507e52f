"""The run page says how far to trust its regression verdict (docs/concepts/noise.md): the
sentence the run keeps with its measured noise, under the verdict."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.conftest import make_api
from tests.support.e2e import cases, sleepy_spec


def test_the_run_page_says_how_likely_its_confirmed_regressions_are_luck(stack, page, console_url):
    api = make_api(stack)
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    for answers in (None, {"c002": "7", "c005": "7"}):
        api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answers=answers)})
        api.ok("POST", f"/api/v1/agents/{agent}/versions")
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True)
    assert api.wait(run["run_id"])["status"] == "completed"
    sentence = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]["noise"]["sentence"]
    page.goto(console_url(api, f"/runs/{run['run_id']}"))
    shown = page.locator("#verdict #noise-sentence")
    expect(shown).to_have_text(sentence)
    expect(shown).to_contain_text("2 confirmed regressions.")
