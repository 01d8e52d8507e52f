"""The agent page's badges (docs/guides/console.md): "Draft differs from vN" with Test draft,
"production on v1" for what an environment serves, and "production on v1 (waiting for evals)"
while production's guard holds a promotion back; the Suites card names the guard. The pollers are
paused so the promotion stands waiting."""

from __future__ import annotations

from playwright.sync_api import expect

from tests.conftest import make_api
from tests.e2e.conftest import cases, sleepy_spec


def test_a_guard_holding_production_back_is_a_second_badge(stack, page, console_url, shot):
    api = make_api(stack)
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec(), publish=2)
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answer="41")})
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production", "name": "P"})
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 1},
    )
    page.goto(console_url(api, f"/agents/{agent}"))
    expect(page.locator('[data-environment="production"]')).to_have_text("production on v1")
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={
            "name": "production guard",
            "dataset_id": ds,
            "environment_id": "production",
            "guards": True,
            "threshold": {"min_pass_rate": 0.5},
        },
    )
    stack.pause_pollers()
    try:
        promotion = api.ok(
            "POST",
            f"/api/v1/agents/{agent}/promotions",
            json={"environment_id": "production", "version": 2},
        )
        assert promotion["status"] == "waiting"
        page.goto(console_url(api, f"/agents/{agent}"))
        expect(page.locator("#draft-differs")).to_have_text("Draft differs from v2")
        expect(page.locator('[data-environment="production"]')).to_have_text(
            "production on v1 (waiting for evals)"
        )
        suite = page.locator("#suites-heading + ul li")
        expect(suite).to_have_count(1)
        expect(suite).to_contain_text("production guard")
        expect(suite).to_contain_text("pass rate at least 50.0%")
        shot(page, "agent-waiting-for-evals")
        page.get_by_role("button", name="Test draft").click()
        expect(page.get_by_label("What runs")).to_have_value("draft")
        expect(page.locator("#start-baseline-text")).to_have_text("Against v2, in the same run")
    finally:
        stack.resume_pollers()
