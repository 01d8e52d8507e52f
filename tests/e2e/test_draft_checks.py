"""A draft is checked against its starter's own access before it runs or is priced, and against
its publisher's before it is published (docs/guides/agents.md, "Running the draft"), over HTTP:
the secrets and connections it names must be ones the person may use and the organization has; a
refusal says the draft cannot be evaluated (or published) and lists each field's problem, the
same problems for both; a published version is not checked again."""

from __future__ import annotations

from typing import Any

import pytest

from tests.support.e2e import Api, cases, sleepy_spec

SHOP = {"connection_id": "shop", "kind": "http", "url": "https://shop.example.com/tools"}


@pytest.fixture(autouse=True)
def no_dns(resolver):
    """Names answered by a stub that knows none."""
    return resolver({})


def _spec(secret: str = "shop-token") -> dict[str, Any]:
    """A draft naming the secret `secret` and a tool on the connection `shop`."""
    tools = [{"name": "act_0", "effect": "write", "connection_id": "shop"}]
    return {**sleepy_spec(), "api_key_secret": secret, "tools": tools}


def _organization(api: Api) -> tuple[str, str]:
    """The secret `shop-token`, the connection `shop`, an agent whose draft names both (never
    published) and a dataset: `(agent_id, dataset_id)`."""
    api.ok("PUT", "/api/v1/secrets/shop-token", json={"value": "tok-0123456789abcdef"})
    status, made = api.call("POST", "/api/v1/connections", json=SHOP)
    assert status == 201, made
    return api.agent(_spec()), api.dataset(cases(2))


def _refusal(api: Api, path: str, body: dict[str, Any]) -> tuple[int, dict[str, Any]]:
    status, answer = api.call("POST", path, json=body)
    return status, answer["error"]


def test_a_draft_naming_what_its_starter_may_not_use_is_refused_with_each_problem(api, new_api):
    agent, ds = _organization(api)
    editor = new_api(org_id=api.org_id, user_id="editor@example.com", role="editor")
    start = {"dataset_id": ds, "candidate": "draft"}
    base = f"/api/v1/agents/{agent}/eval-runs"
    for path in (base, f"{base}/estimate"):
        status, error = _refusal(editor, path, start)
        assert status == 403, error
        assert error["code"] == "forbidden" and error["field"] == "candidate"
        assert error["message"].startswith("the draft cannot be evaluated: ")
        assert error["permission"] == "secrets:manage"
        assert [(p["field"], p["permission"]) for p in error["problems"]] == [
            ("spec.api_key_secret", "secrets:manage"),
            ("spec.tools[0].connection_id", "settings:manage"),
        ]
        assert "secret shop-token" in error["problems"][0]["message"]
        assert "connection shop" in error["problems"][1]["message"]
    assert editor.ok("GET", "/api/v1/eval-runs")["runs"] == []  # nothing was started

    # the same draft started by an admin runs
    run = api.start(agent, ds)
    assert api.wait(run["run_id"])["status"] == "completed"


def test_a_draft_naming_what_the_organization_lacks_is_a_400_listing_each(api):
    agent, ds = _organization(api)
    named = {**_spec("nowhere"), "recording_id": "no-such", "model_profile_id": "no-such"}
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": named})
    api.ok("DELETE", "/api/v1/connections/shop")
    status, error = _refusal(
        api, f"/api/v1/agents/{agent}/eval-runs", {"dataset_id": ds, "candidate": "draft"}
    )
    assert status == 400, error
    assert error["code"] == "invalid_input" and error["field"] == "candidate"
    assert error["message"].startswith("the draft cannot be evaluated: ")
    _lacks_all_four(error)
    assert "secret nowhere not found" in error["problems"][0]["message"]
    assert "connection shop not found" in error["problems"][1]["message"]
    assert "recording no-such not found" in error["problems"][2]["message"]
    assert "model profile no-such not found" in error["problems"][3]["message"]


def test_a_published_version_is_not_checked_again_and_its_references_are_vetted(api, new_api):
    agent, ds = _organization(api)
    api.ok("POST", f"/api/v1/agents/{agent}/versions")  # the admin publishes it
    editor = new_api(org_id=api.org_id, user_id="editor@example.com", role="editor")

    by_version = editor.start(agent, ds, candidate="version")
    assert editor.wait(by_version["run_id"])["status"] == "completed"
    # the draft names what the published version does: its publish checked that
    by_draft = editor.start(agent, ds)
    assert editor.wait(by_draft["run_id"])["status"] == "completed"

    # another secret in the draft is the starter's to justify again
    api.ok("PUT", "/api/v1/secrets/other-token", json={"value": "tok-fedcba9876543210"})
    editor.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": _spec("other-token")})
    status, error = _refusal(
        editor, f"/api/v1/agents/{agent}/eval-runs", {"dataset_id": ds, "candidate": "draft"}
    )
    assert status == 403, error
    assert [p["field"] for p in error["problems"]] == ["spec.api_key_secret"]
    assert "secret other-token" in error["problems"][0]["message"]


# --- publishing: the same rule, the same problems ---------------------------------------------


def test_publishing_a_draft_naming_what_the_publisher_may_not_use_is_refused_with_each_problem(
    api, new_api
):
    agent, ds = _organization(api)
    editor = new_api(org_id=api.org_id, user_id="editor@example.com", role="editor")
    # the editor may edit the agent: saving the draft again is theirs to do
    editor.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": _spec()})
    status, published = _refusal(editor, f"/api/v1/agents/{agent}/versions", {})
    assert status == 403, published
    assert published["code"] == "forbidden" and published["field"] == "draft"
    assert published["message"].startswith("the draft cannot be published: ")
    assert published["permission"] == "secrets:manage"
    assert [(p["field"], p["permission"]) for p in published["problems"]] == [
        ("spec.api_key_secret", "secrets:manage"),
        ("spec.tools[0].connection_id", "settings:manage"),
    ]
    # what a start of the draft refuses, a publish refuses, problem for problem
    status, started = _refusal(
        editor, f"/api/v1/agents/{agent}/eval-runs", {"dataset_id": ds, "candidate": "draft"}
    )
    assert status == 403, started
    assert published["problems"] == started["problems"]
    assert editor.ok("GET", f"/api/v1/agents/{agent}/versions")["versions"] == []

    # the admin may publish it; after that the editor publishes a change of prompt alone
    assert api.ok("POST", f"/api/v1/agents/{agent}/versions")["version"] == 1
    reworded = {**_spec(), "options": sleepy_spec(answer="43")["options"]}
    editor.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": reworded})
    assert editor.ok("POST", f"/api/v1/agents/{agent}/versions")["version"] == 2

    # a secret the published versions never named is the publisher's to justify again
    api.ok("PUT", "/api/v1/secrets/other-token", json={"value": "tok-fedcba9876543210"})
    editor.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": _spec("other-token")})
    status, error = _refusal(editor, f"/api/v1/agents/{agent}/versions", {"version": 3})
    assert status == 403, error
    assert [p["field"] for p in error["problems"]] == ["spec.api_key_secret"]
    assert "secret other-token" in error["problems"][0]["message"]
    versions = editor.ok("GET", f"/api/v1/agents/{agent}/versions")["versions"]
    assert [v["version"] for v in versions] == [2, 1]


def _lacks_all_four(error: dict[str, Any]) -> None:
    """The refusal lists, in order, the secret, connection, recording and model profile the
    organization lacks, none of them a permission."""
    assert [p["field"] for p in error["problems"]] == [
        "spec.api_key_secret",
        "spec.tools[0].connection_id",
        "spec.recording_id",
        "spec.model_profile_id",
    ]
    assert all("permission" not in p for p in error["problems"])


def test_publishing_a_draft_naming_what_the_organization_lacks_is_a_400_listing_each(api):
    agent, _ = _organization(api)
    named = {**_spec("nowhere"), "recording_id": "no-such", "model_profile_id": "no-such"}
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": named})
    api.ok("DELETE", "/api/v1/connections/shop")
    status, error = _refusal(api, f"/api/v1/agents/{agent}/versions", {})
    assert status == 400, error
    assert error["code"] == "invalid_input" and error["field"] == "draft"
    assert error["message"].startswith("the draft cannot be published: ")
    _lacks_all_four(error)
    assert api.ok("GET", f"/api/v1/agents/{agent}/versions")["versions"] == []


# --- where a vetted secret is sent ---------------------------------------------------------------


def test_a_published_secret_is_vetted_only_where_the_published_version_sends_it(api, new_api):
    """A draft keeping the published version's secret but changing where it goes (another URL,
    another header, another base URL) is checked as if it named a new secret, by a start, an
    estimate and a publish alike; the same secret sent the same way is still the editor's to
    run."""
    api.ok("PUT", "/api/v1/secrets/shop-token", json={"value": "tok-0123456789abcdef"})
    ds = api.dataset(cases(1))
    sent = {
        "runtime": "http",
        "url": "http://127.0.0.1:9/agent",
        "headers": {"X-Key": {"secret": "shop-token"}, "X-Team": "blue"},
    }
    keyed = {
        "runtime": "openai",
        "model": "m",
        "base_url": "http://127.0.0.1:9/v1",
        "api_key_secret": "shop-token",
    }
    http_agent, openai_agent = api.agent(sent, publish=1), api.agent(keyed, publish=1)
    editor = new_api(org_id=api.org_id, user_id="editor@example.com", role="editor")

    def refused(agent: str, spec: dict[str, Any], field: str) -> None:
        editor.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": spec})
        base = f"/api/v1/agents/{agent}"
        for path, body in (
            (f"{base}/eval-runs", {"dataset_id": ds, "candidate": "draft"}),
            (f"{base}/eval-runs/estimate", {"dataset_id": ds, "candidate": "draft"}),
            (f"{base}/versions", {}),
        ):
            status, error = _refusal(editor, path, body)
            assert status == 403, (spec, path, error)
            assert [(p["field"], p["permission"]) for p in error["problems"]] == [
                (field, "secrets:manage")
            ]
            assert "secret shop-token" in error["problems"][0]["message"]
            assert "not where it was checked" in error["problems"][0]["message"]

    refused(http_agent, {**sent, "url": "http://127.0.0.1:9/elsewhere"}, "spec.headers.X-Key")
    moved = {"X-Other": {"secret": "shop-token"}, "X-Team": "blue"}
    refused(http_agent, {**sent, "headers": moved}, "spec.headers.X-Other")
    refused(openai_agent, {**keyed, "base_url": "http://127.0.0.1:9/v2"}, "spec.api_key_secret")
    extra = {"extra_headers": {"X-Key": {"secret": "shop-token"}}}
    refused(openai_agent, {**keyed, **extra}, "spec.extra_headers.X-Key")

    # the same secret sent the same way (a header's name in any case), the rest changed, runs
    same = {**sent, "headers": {"x-key": {"secret": "shop-token"}, "X-Team": "green"}}
    editor.ok("PUT", f"/api/v1/agents/{http_agent}/draft", json={"spec": same})
    editor.ok(
        "POST",
        f"/api/v1/agents/{http_agent}/eval-runs/estimate",
        json={"dataset_id": ds, "candidate": "draft"},
    )
    assert editor.ok("POST", f"/api/v1/agents/{http_agent}/versions")["version"] == 2
    # and an admin may send it anywhere
    editor.ok(
        "PUT",
        f"/api/v1/agents/{openai_agent}/draft",
        json={"spec": {**keyed, "base_url": "http://127.0.0.1:9/v2"}},
    )
    assert api.ok("POST", f"/api/v1/agents/{openai_agent}/versions")["version"] == 2


# --- what a refusal tells of the organization's secrets ---------------------------------------


def test_a_refusal_tells_who_may_not_list_secrets_nothing_of_which_exist(api, new_api):
    api.ok("PUT", "/api/v1/secrets/shop-token", json={"value": "tok-0123456789abcdef"})
    ds = api.dataset(cases(1))
    editor = new_api(org_id=api.org_id, user_id="editor@example.com", role="editor")
    assert editor.call("GET", "/api/v1/secrets")[0] == 403
    answers = {}
    for name in ("shop-token", "no-such-token"):
        agent = editor.agent({**sleepy_spec(), "api_key_secret": name})
        status, error = _refusal(
            editor, f"/api/v1/agents/{agent}/eval-runs", {"dataset_id": ds, "candidate": "draft"}
        )
        assert status == 403, error
        assert error["permission"] == "secrets:manage"
        answers[name] = (error["code"], [p["permission"] for p in error["problems"]])
        assert error["message"] == (
            "the draft cannot be evaluated: spec.api_key_secret: using secret "
            f"{name} in a draft needs the secrets:manage permission"
        )
        status, error = _refusal(editor, f"/api/v1/agents/{agent}/versions", {})
        assert status == 403 and error["permission"] == "secrets:manage", error
    assert answers["shop-token"] == answers["no-such-token"]
    # who may list secrets is told which is missing
    agent = api.agent({**sleepy_spec(), "api_key_secret": "no-such-token"})
    status, error = _refusal(
        api, f"/api/v1/agents/{agent}/eval-runs", {"dataset_id": ds, "candidate": "draft"}
    )
    assert status == 400, error
    assert "secret no-such-token not found" in error["problems"][0]["message"]
