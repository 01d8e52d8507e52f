"""Headless Chromium for the console's browser tests: Debian's /usr/bin/chromium driven by
Playwright's Python package (never a downloaded browser); screenshots under test-output/."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from pathlib import Path

import pytest
from playwright.sync_api import Browser, Page, sync_playwright

CHROMIUM = "/usr/bin/chromium"
ARGS = [
    "--headless",
    "--no-sandbox",
    "--disable-gpu",
    "--disable-quic",
    "--no-first-run",
    "--disable-background-networking",
    "--disable-component-update",
    "--disable-sync",
]
SHOTS = Path(__file__).resolve().parents[2] / "test-output" / "screenshots"


@pytest.fixture(scope="session")
def browser() -> Iterator[Browser]:
    assert Path(CHROMIUM).exists(), "no /usr/bin/chromium: `make test` installs Debian's chromium"
    # Playwright starts the browser on a new empty profile of its own (it refuses --user-data-dir)
    with sync_playwright() as p:
        b = p.chromium.launch(executable_path=CHROMIUM, args=ARGS)
        yield b
        b.close()


@pytest.fixture
def page(browser: Browser) -> Iterator[Page]:
    context = browser.new_context(viewport={"width": 1280, "height": 900})
    pg = context.new_page()
    errors: list[str] = []
    pg.on("pageerror", lambda e: errors.append(str(e)))
    yield pg
    context.close()
    assert errors == [], f"the page threw: {errors}"


@pytest.fixture
def console_url(stack) -> Callable[..., str]:
    """`console_url(api, "/agents/x")` -> the page's address signed in as `api`'s member."""

    def url(api, path: str) -> str:
        token = api.http.headers["Authorization"].split(" ", 1)[1]
        return f"{stack.api_url}{path}#token={token}"

    return url


@pytest.fixture
def shot() -> Callable[[Page, str], Path]:
    """`shot(page, "name")` writes test-output/screenshots/name.png (the whole page)."""

    def take(pg: Page, name: str) -> Path:
        SHOTS.mkdir(parents=True, exist_ok=True)
        path = SHOTS / f"{name}.png"
        pg.screenshot(path=str(path), full_page=True)
        return path

    return take


from tests.browser.worlds import agent_world  # noqa: E402, F401 - registers the session fixture
