"""A draft refused for what it names, in the console (docs/guides/agents.md, "Running the draft"):
the Run evals dialog and the publish dialog say the draft cannot be evaluated (or published) and
list each field beside its own problem, as the refusal's `problems` give them."""

from __future__ import annotations

import pytest
from playwright.sync_api import expect

from tests.conftest import make_api
from tests.e2e.conftest import cases, sleepy_spec

SHOP = {"connection_id": "shop", "kind": "http", "url": "https://shop.example.com/tools"}


@pytest.fixture(autouse=True)
def no_dns(resolver):
    """Names answered by a stub that knows none."""
    return resolver({})


def _world(stack):
    """An organization whose admin stored the secret `shop-token` and the connection `shop`, an
    agent whose draft (never published) names both, a dataset, and an editor of the agent who may
    use neither: `(editor's Api, agent_id)`."""
    admin = make_api(stack)
    admin.ok("PUT", "/api/v1/secrets/shop-token", json={"value": "tok-0123456789abcdef"})
    status, made = admin.call("POST", "/api/v1/connections", json=SHOP)
    assert status == 201, made
    tools = [{"name": "act_0", "effect": "write", "connection_id": "shop"}]
    agent = admin.agent({**sleepy_spec(), "api_key_secret": "shop-token", "tools": tools})
    admin.dataset(cases(2))
    editor = make_api(stack, org_id=admin.org_id, user_id="editor@example.com", role="editor")
    return editor, agent


def _lists_each_problem(box, lead: str) -> None:
    expect(box.locator(".problems-lead")).to_have_text(lead)
    items = box.locator(".problems li")
    expect(items).to_have_count(2)
    secret = items.nth(0)
    expect(secret).to_have_attribute("data-field", "spec.api_key_secret")
    expect(secret.locator("code")).to_have_text("spec.api_key_secret")
    expect(secret).to_contain_text(
        "using secret shop-token in a draft needs the secrets:manage permission"
    )
    connection = items.nth(1)
    expect(connection).to_have_attribute("data-field", "spec.tools[0].connection_id")
    expect(connection.locator("code")).to_have_text("spec.tools[0].connection_id")
    expect(connection).to_contain_text(
        "using connection shop in a draft needs the settings:manage permission"
    )
    # each field is named once, beside its problem (not again inside the message)
    expect(secret).not_to_contain_text("spec.api_key_secret: ")


def test_run_evals_lists_each_problem_of_a_draft_its_starter_may_not_use(
    stack, page, console_url, shot
):
    editor, agent = _world(stack)
    page.goto(console_url(editor, f"/agents/{agent}"))
    page.get_by_role("button", name="Run evals").click()
    dialog = page.locator("#start-dialog")
    expect(dialog).to_be_visible()
    expect(page.get_by_label("What runs")).to_have_value("draft")
    # the estimate is refused: the refusal shows where the amount would, field by field
    refusal = dialog.locator("#estimate .error")
    expect(refusal).to_have_attribute("role", "alert")
    _lists_each_problem(refusal, "The draft cannot be evaluated:")
    expect(page.locator("#start-run")).to_be_disabled()
    shot(page, "run-evals-draft-refused")
    page.get_by_role("button", name="Cancel").click()
    expect(dialog).to_have_count(0)


def test_the_publish_dialog_lists_each_problem_of_a_draft_its_publisher_may_not_use(
    stack, page, console_url, shot
):
    editor, agent = _world(stack)
    page.goto(console_url(editor, f"/agents/{agent}"))
    page.locator("#publish").click()
    dialog = page.locator("#publish-dialog")
    expect(dialog).to_be_visible()
    dialog.get_by_role("button", name="Publish as v1").click()
    _lists_each_problem(dialog.locator("#publish-error .error"), "The draft cannot be published:")
    expect(dialog.get_by_role("button", name="Publish as v1")).to_be_enabled()
    shot(page, "publish-draft-refused")
    assert editor.ok("GET", f"/api/v1/agents/{agent}/versions")["versions"] == []
