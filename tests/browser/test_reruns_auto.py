"""The start dialog's "Reruns: auto" (docs/concepts/noise.md): offered once a baseline is chosen,
it asks the estimate for `reruns: "auto"` and shows the reruns it suggests, why, and what they
cost; the run started from it keeps the choice."""

from __future__ import annotations

import json

from playwright.sync_api import expect

from chalicelib.domain import noise
from tests.conftest import make_api
from tests.support.e2e import cases, sleepy_spec


def test_the_start_dialog_suggests_reruns_and_says_what_they_cost(stack, page, console_url):
    api = make_api(stack)
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    for answers in (None, {"c002": "7", "c005": "7", "c007": "7"}):
        api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answers=answers)})
        api.ok("POST", f"/api/v1/agents/{agent}/versions")
    run = api.start(agent, ds, candidate="version", version=2, paired_baseline=True)
    assert api.wait(run["run_id"])["status"] == "completed"
    luck = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]["noise"]
    found = noise.reruns_under(luck["luck_by_reruns"], 0.01)
    chosen = found if found is not None else noise.MAX_RERUNS

    page.goto(console_url(api, f"/agents/{agent}"))
    page.get_by_role("button", name="Run evals").click()
    expect(page.locator("#start-dialog")).to_be_visible()
    # The draft is v2 again: the obvious choice is v2 alone.
    expect(page.get_by_label("What runs")).to_have_value("2")
    expect(page.locator("#start-baseline")).not_to_be_checked()
    expect(page.locator("#estimate-total")).to_be_visible()
    auto = page.locator("#start-reruns-auto")
    expect(auto).to_be_hidden()  # no baseline: nothing to leave the reruns to
    page.locator("#start-baseline").check()
    expect(auto).to_be_visible()
    # Reruns by hand: how likely they leave a confirmed regression to luck, as that run measured.
    expect(page.locator("#estimate-luck")).to_contain_text(
        f"Luck: With the noise run {run['run_id']} measured, a candidate that changed nothing "
        f"would show a confirmed regression in {noise.percent(luck['luck_by_reruns'][2])} of runs "
        "at 2 reruns"
    )
    with page.expect_request("**/eval-runs/estimate") as priced:
        auto.check()
    assert json.loads(priced.value.post_data or "{}")["reruns"] == "auto"
    est = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs/estimate",
        json={
            "dataset_id": ds,
            "candidate": "version",
            "version": 2,
            "paired_baseline": True,
            "reruns": "auto",
        },
    )
    assert est["reruns_auto"]["chosen"] == chosen
    expect(page.locator("#estimate-luck")).to_have_count(0)  # the reruns line says it now
    said = page.locator("#estimate-reruns")
    expect(said).to_contain_text(
        f"Reruns: auto suggests {chosen} rerun{'s' * (chosen != 1)} of each flip: "
    )
    expect(said).to_contain_text(f"as run {run['run_id']} measured the noise")
    ceiling = est["rerun_ceiling_usd"]
    cost = f"${ceiling:.4f}" if 0 < ceiling < 0.01 else f"${ceiling:.2f}"
    expect(said).to_contain_text(f"They cost up to {cost}.")
    expect(page.locator("#start-run")).to_be_enabled()
    page.locator("#start-run").click()
    page.wait_for_url("**/runs/**")
    started = page.url.rstrip("/").split("/")[-1]
    read = api.ok("GET", f"/api/v1/eval-runs/{started}")
    assert read["reruns"] == chosen and read["reruns_auto"]["from_run_id"] == run["run_id"]
    api.wait(started)
