"""Each environment's guards on the agent's page (docs/guides/suites.md, "Guard status"): a gate
result that review turned into a pass reads "Corrected by <reviewer>" linked to its run, "a former
member" once the reviewer is removed, "Out of date" with why once the threshold moves; a guard
with no result reads "Not checked"."""

from __future__ import annotations

from playwright.sync_api import expect

from chalicelib import bootstrap
from chalicelib.services import suites
from tests.conftest import make_api
from tests.e2e.test_reviewed_promotions import REVIEWER, _refused_then_reviewed
from tests.e2e.test_suites import results, suite


def test_each_guard_reads_its_word_linked_to_its_run(stack, page, console_url, shot):
    api = make_api(stack)
    container = bootstrap.container()
    try:
        agent, guard, _ = _refused_then_reviewed(api, lambda **kw: make_api(stack, **kw), container)
        run_id = results(api, agent, guard)[0]["run_id"]
        fresh = suite(
            api,
            agent,
            api.dataset([{"case_id": "c1", "input": "q", "reference": "42"}]),
            name="second guard",
            guards=True,
            threshold={"min_pass_rate": 0.5},
        )["suite_id"]

        page.goto(console_url(api, f"/agents/{agent}"))
        env = page.locator('[data-environment-guards="production"]')
        expect(env.locator("h3")).to_have_text("production serves v1")
        corrected = env.locator(f'[data-guard="{guard}"]')
        expect(corrected).to_have_attribute("data-state", "corrected")
        word = corrected.get_by_role("link", name=f"Corrected by {REVIEWER}")
        expect(word).to_have_attribute("href", f"/runs/{run_id}")
        expect(word).to_have_attribute("title", "failed by the scorers, passed after review")
        expect(corrected).to_contain_text("(v2)")
        never = env.locator(f'[data-guard="{fresh}"]')
        expect(never).to_contain_text("second guard: Not checked")
        expect(never.get_by_role("link", name="Not checked")).to_have_count(0)  # no run to open
        shot(page, "agent-guards-corrected")

        api.ok("DELETE", f"/api/v1/members/{REVIEWER}")
        page.reload()
        expect(corrected.get_by_role("link", name="Corrected by a former member")).to_be_visible()
        expect(page.locator("#guards")).not_to_contain_text(REVIEWER)

        api.ok(
            "PATCH",
            f"/api/v1/agents/{agent}/suites/{guard}",
            json={"threshold": {"min_pass_rate": 0.95}},
        )
        page.reload()
        expect(corrected).to_have_attribute("data-state", "out_of_date")
        stale = corrected.get_by_role("link", name="Out of date")
        expect(stale).to_have_attribute("href", f"/runs/{run_id}")  # the run link is kept
        expect(corrected.locator(".why")).to_have_text(" — the threshold changed since")
        shot(page, "agent-guards-out-of-date")
        stale.click()
        page.wait_for_url(f"**/runs/{run_id}")
    finally:
        for row in container.suites.of_org(api.org_id):
            suites.pause(container, row, "test over")
