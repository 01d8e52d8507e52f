"""The console's shell (issue 15 "How it is built", docs/guides/console.md,
docs/reference/access.md): signing in from the address, the header naming the reader, signing
out, the sign-in form, a refused token, what the service serves around the pages, the skip link.
"""

from __future__ import annotations

import httpx
import pytest
from playwright.sync_api import expect

from tests.browser.worlds import World

PAGES = [
    "/",
    "/evals",
    "/agents",
    "/datasets",
    "/agents/agt_x",
    "/agents/agt_x/suites/ste_y",
    "/runs/run_z",
    "/datasets/d",
]


def test_a_token_in_the_address_signs_in_and_leaves_the_address(
    page, console_url, agent_world: World
):
    w = agent_world
    page.goto(console_url(w.api, f"/agents/{w.agent_id}"))
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    assert "token" not in page.url  # nothing to copy into a chat or a bookmark
    assert page.evaluate("sessionStorage.getItem('assay.token')")
    who = page.locator("#who")
    expect(who).to_contain_text(w.api.user_id)
    expect(who).to_contain_text(w.api.org_id)
    page.reload()  # the tab keeps the session
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    expect(who).to_contain_text(w.api.user_id)


def test_sign_out_forgets_the_token_and_the_form_signs_in_again(
    page, console_url, shot, agent_world: World
):
    w = agent_world
    page.goto(console_url(w.api, "/evals"))
    expect(page.locator("#who")).to_contain_text(w.api.user_id)
    page.get_by_role("button", name="Sign out").click()
    expect(page.get_by_role("heading", name="Sign in to assay")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('assay.token')") is None
    shot(page, "sign-in")
    field = page.get_by_label("Token or API key")
    expect(field).to_be_focused()
    field.fill(w.api.http.headers["Authorization"].split(" ", 1)[1])
    page.get_by_role("button", name="Sign in").click()
    expect(page.locator("#who")).to_contain_text(w.api.org_id)
    expect(page.get_by_role("heading", level=1)).not_to_have_text("Sign in to assay")


def test_a_refused_token_is_forgotten_and_the_form_shown(page, stack):
    page.goto(f"{stack.api_url}/evals#token=not-a-token")
    expect(page.get_by_role("heading", name="Sign in to assay")).to_be_visible()
    assert page.evaluate("sessionStorage.getItem('assay.token')") is None


def api_message(stack, token: str) -> str:
    """The API's 401 message for `token` (what the sign-in form must say)."""
    r = httpx.get(f"{stack.api_url}/api/v1/me", headers={"Authorization": f"Bearer {token}"})
    assert r.status_code == 401, r.text
    return str(r.json()["error"]["message"])


def test_the_sign_in_form_says_why_a_token_was_refused(page, stack, shot):
    page.goto(f"{stack.api_url}/agents#token=garbage")
    refused = page.get_by_role("alert")
    expect(refused).to_have_text(f"That token was refused: {api_message(stack, 'garbage')}")
    expect(page.get_by_label("Token or API key")).to_be_focused()
    shot(page, "sign-in-refused")

    page.get_by_label("Token or API key").fill("not-a-token")
    page.get_by_role("button", name="Sign in").click()
    expect(refused).to_have_text(f"That token was refused: {api_message(stack, 'not-a-token')}")
    assert page.evaluate("sessionStorage.getItem('assay.token')") is None


def test_the_sign_in_form_says_an_expired_token_was_refused(page, stack):
    import time

    from chalicelib.api.common import issue_token

    s = stack.settings
    expired = issue_token(
        "org_default",
        "dev@assay.local",
        secret=s.assay_jwt_secret,
        issuer=s.assay_jwt_issuer,
        ttl_seconds=60,
        now_s=int(time.time()) - 3600,  # signed an hour ago for a minute
    )
    said = api_message(stack, expired)
    assert "exp" in said
    page.goto(f"{stack.api_url}/#token={expired}")
    expect(page.get_by_role("alert")).to_have_text(f"That token was refused: {said}")


def test_the_skip_link_is_the_first_tab_stop_and_moves_to_the_content(
    page, console_url, agent_world: World
):
    w = agent_world
    page.goto(console_url(w.api, f"/runs/{w.v4_run_id}"))
    expect(page.get_by_role("heading", level=1)).to_be_visible()
    page.keyboard.press("Tab")
    skip = page.get_by_role("link", name="Skip to content")
    expect(skip).to_be_focused()
    expect(skip).to_be_visible()  # shown while focused
    page.keyboard.press("Enter")
    expect(page.locator("#main")).to_be_focused()


@pytest.mark.parametrize("path", PAGES)
def test_every_page_is_the_public_shell_with_a_strict_policy(stack, path):
    r = httpx.get(f"{stack.api_url}{path}")
    assert r.status_code == 200
    assert r.headers["content-type"].startswith("text/html")
    policy = r.headers["content-security-policy"]
    assert "script-src 'self'" in policy and "default-src 'none'" in policy
    assert "frame-ancestors 'none'" in policy
    assert r.headers["x-content-type-options"] == "nosniff"
    assert r.headers["referrer-policy"] == "no-referrer"
    assert "agt_x" not in r.text and "run_z" not in r.text  # the shell names no tenant data


def test_only_the_consoles_own_assets_are_served(stack):
    ok = httpx.get(f"{stack.api_url}/console/main.js")
    assert ok.status_code == 200 and ok.headers["content-type"].startswith("text/javascript")
    for name in ("nope.js", "shell.html", "..%2F..%2Fapp.py", "%2Fetc%2Fpasswd"):
        r = httpx.get(f"{stack.api_url}/console/{name}")
        assert r.status_code == 404, name
        assert r.json()["error"]["code"] == "not_found"
    unknown = httpx.get(f"{stack.api_url}/agents/a/b/c")  # no page: no shell, no script
    assert unknown.status_code == 404 and "error" in unknown.json()


@pytest.mark.parametrize("path", ["/nonexistent-page", "/agents/a/b/c", "/runs/r/nope/"])
def test_an_unknown_console_path_is_the_consoles_not_found_page_in_a_browser(
    page, console_url, shot, agent_world: World, path
):
    answered = page.goto(console_url(agent_world.api, path))
    assert answered is not None and answered.status == 404
    assert answered.headers["content-type"].startswith("text/html")
    expect(page.get_by_role("heading", level=1)).to_have_text("Not found")
    back = page.get_by_role("link", name="Back to the dashboard")
    back.click()
    expect(page.get_by_role("heading", level=1)).to_have_text("Dashboard")
    if path == "/nonexistent-page":
        shot(page, "not-found")


def test_an_unknown_path_stays_json_for_api_clients_and_under_the_api(stack):
    html = {"Accept": "text/html,application/xhtml+xml"}
    for path, headers in [
        ("/nonexistent-page", {}),
        ("/nonexistent-page", {"Accept": "application/json"}),
        ("/api/v1/nonexistent", html),
        ("/api", html),
    ]:
        r = httpx.get(f"{stack.api_url}{path}", headers=headers)
        assert r.status_code == 404, path
        assert r.headers["content-type"].startswith("application/json"), path
        assert r.json()["error"]["code"] == "not_found"
    posted = httpx.post(f"{stack.api_url}/nonexistent-page", headers=html)
    assert posted.status_code == 404 and posted.json()["error"]["code"] == "not_found"
    shell = httpx.get(f"{stack.api_url}/nonexistent-page?x=1", headers=html)
    assert shell.status_code == 404 and "<script" in shell.text
    assert shell.headers["content-security-policy"].startswith("default-src 'none'")
