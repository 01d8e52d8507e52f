"""A connection's secret is held to the rule of a secret in a draft (docs/guides/tools.md,
"Connections and secrets"), over HTTP: only who holds `secrets:manage` may save a connection
naming a secret, since every tool call on it sends the secret to the URL its saver chose; a
connection saved that way runs for anyone; one saved before that was checked sends its secret only
for a starter who holds the permission; an environment's test connections are checked the same
way.

The model is the scripted fake (`tests/support/fake_openai.py`) asking for one tool call; the
connection's endpoint is a local server on 127.0.0.1 keeping every request's headers."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.domain.records import Connection
from tests.support.e2e import Api, cases
from tests.support.fake_openai import FakeOpenAI
from tests.support.local_http import LocalServer

SECRET = "sk-live-conn-" + "Q7" * 12

KEY_SCOPES = [
    "runs:view",
    "agents:view",
    "agents:run",
    "agents:edit",
    "datasets:view",
    "datasets:run",
    "datasets:edit",
    "settings:manage",
]
"""Everything but `secrets:manage` (and `members:manage`): who may manage connections and run."""


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    """A model that calls `lookup` once, then answers "42"."""
    script = {
        "default": {
            "turns": [{"tool_calls": [{"name": "lookup", "arguments": {}}]}, {"answer": "42"}]
        }
    }
    with FakeOpenAI(script) as server:
        yield server


@pytest.fixture
def capture() -> Iterator[LocalServer]:
    """A connection's endpoint answering every call `{}`, keeping each request's headers."""
    with LocalServer(lambda path, raw: (200, {})) as server:
        yield server


@pytest.fixture
def org(api: Api, stack: Any) -> tuple[Api, Api]:
    """`(admin, key)` of one organization holding the secret `openai`: `key` acts through an API
    key of `KEY_SCOPES`."""
    api.ok("PUT", "/api/v1/secrets/openai", json={"value": SECRET})
    made = api.ok("POST", "/api/v1/api-keys", json={"name": "ci", "scopes": KEY_SCOPES})
    return api, Api(stack.api_url, api.org_id, api.user_id, made["key"])


def _spec(fake: FakeOpenAI, connection_id: str) -> dict[str, Any]:
    tool = {
        "name": "lookup",
        "parameters": {"type": "object", "properties": {}},
        "effect": "read",
        "connection_id": connection_id,
    }
    return {"runtime": "openai", "base_url": fake.base_url, "model": "m", "tools": [tool]}


def _connect(api: Api, connection_id: str, url: str, **fields: Any) -> tuple[int, Any]:
    body = {"connection_id": connection_id, "kind": "http", "url": url, **fields}
    return api.call("POST", "/api/v1/connections", json=body)


def _sent(capture: LocalServer, path: str) -> list[str | None]:
    """The `Authorization` header of every request to `path`."""
    return [headers.get("authorization") for p, headers in capture.request_log if p == path]


def _legacy(container: Any, org_id: str, connection_id: str, url: str) -> None:
    """A connection naming `openai`, kept as one saved before its secret was checked."""
    container.connections.create(
        Connection(
            org_id=org_id,
            connection_id=connection_id,
            kind="http",
            url=url,
            auth_secret="openai",
            created_at="2026-01-01T00:00:00Z",
            created_by="someone@example.com",
        )
    )


# --- saving a connection ------------------------------------------------------------------------


def test_only_who_holds_secrets_manage_may_save_a_connection_naming_a_secret(org, capture):
    admin, key = org
    # whether the secret exists or not, the key is told the same: it may not list secrets
    for name in ("openai", "no-such-secret"):
        status, body = _connect(key, "exfil", f"{capture.base}/conn", auth_secret=name)
        assert status == 403, body
        error = body["error"]
        assert (error["field"], error["permission"]) == ("auth_secret", "secrets:manage")
        assert error["message"].startswith("the connection cannot be saved: ")
        assert [(p["field"], p["permission"]) for p in error["problems"]] == [
            ("auth_secret", "secrets:manage")
        ]
        assert f"naming secret {name} in a connection" in error["message"]
    assert key.ok("GET", "/api/v1/connections")["connections"] == []
    # a connection naming no secret is the key's to save; the admin may name one
    assert _connect(key, "plain", f"{capture.base}/plain")[0] == 201
    assert _connect(admin, "keyed", f"{capture.base}/keyed", auth_secret="openai")[0] == 201


def test_an_admins_connection_runs_for_a_key_and_sends_its_secret(org, fake, capture):
    admin, key = org
    assert _connect(admin, "keyed", f"{capture.base}/keyed", auth_secret="openai")[0] == 201
    run = key.start(key.agent(_spec(fake, "keyed")), key.dataset(cases(1)))
    assert key.wait(run["run_id"])["status"] == "completed"
    assert _sent(capture, "/keyed/lookup") == [SECRET]


def test_a_connection_saved_before_the_rule_sends_its_secret_only_for_secrets_manage(
    org, fake, capture, container
):
    admin, key = org
    _legacy(container, admin.org_id, "old", f"{capture.base}/old")
    ds = key.dataset(cases(1))
    agent = key.agent(_spec(fake, "old"))
    base = f"/api/v1/agents/{agent}/eval-runs"
    # the draft, started or priced by the key
    for path in (f"{base}/estimate", base):
        status, answer = key.call("POST", path, json={"dataset_id": ds, "candidate": "draft"})
        assert status == 403, answer
        error = answer["error"]
        assert (error["field"], error["permission"]) == ("candidate", "secrets:manage")
        assert [p["field"] for p in error["problems"]] == ["spec.tools[0].connection_id"]
        assert "secret openai through connection old" in error["message"]
    # published by the key: refused the same way
    status, answer = key.call("POST", f"/api/v1/agents/{agent}/versions")
    assert status == 403 and answer["error"]["permission"] == "secrets:manage", answer
    # published by the admin, then started by the key: the version is checked as its starter
    admin.ok("POST", f"/api/v1/agents/{agent}/versions")
    status, answer = key.call("POST", base, json={"dataset_id": ds, "version": 1})
    assert status == 403, answer
    error = answer["error"]
    assert (error["field"], error["permission"]) == ("candidate", "secrets:manage")
    assert [p["field"] for p in error["problems"]] == ["candidate.tools[0].connection_id"]
    assert key.ok("GET", "/api/v1/eval-runs")["runs"] == []
    assert _sent(capture, "/old/lookup") == []
    # who holds secrets:manage may send it
    run = admin.start(agent, ds)
    assert admin.wait(run["run_id"])["status"] == "completed"
    assert _sent(capture, "/old/lookup") == [SECRET]


def test_test_connections_sending_an_unchecked_secret_need_secrets_manage(
    org, fake, capture, container
):
    admin, key = org
    assert _connect(admin, "shop", f"{capture.base}/shop")[0] == 201
    assert _connect(admin, "vetted", f"{capture.base}/vetted", auth_secret="openai")[0] == 201
    _legacy(container, admin.org_id, "old", f"{capture.base}/old")
    env = {"environment_id": "staging", "test_connections": {"shop": "old"}}
    status, answer = key.call("POST", "/api/v1/environments", json=env)
    assert status == 403, answer
    error = answer["error"]
    assert (error["field"], error["permission"]) == ("test_connections", "secrets:manage")
    assert [p["field"] for p in error["problems"]] == ["test_connections.shop"]
    assert error["message"].startswith("the test connections cannot be saved: ")

    key.ok("POST", "/api/v1/environments", json={"environment_id": "staging", "default": True})
    path = "/api/v1/environments/staging/test-connections"
    status, answer = key.call("PUT", path, json={"test_connections": {"shop": "old"}})
    assert status == 403 and answer["error"]["field"] == "test_connections", answer
    # a test connection whose saver held secrets:manage is the key's to map to
    key.ok("PUT", path, json={"test_connections": {"shop": "vetted"}})
    # the admin maps to the old one; a run of the key in that environment is then refused
    admin.ok("PUT", path, json={"test_connections": {"shop": "old"}})
    ds = key.dataset(cases(1))
    status, answer = key.call(
        "POST",
        f"/api/v1/agents/{key.agent(_spec(fake, 'shop'))}/eval-runs",
        json={"dataset_id": ds, "candidate": "draft"},
    )
    assert status == 403, answer
    assert "test connection old" in answer["error"]["problems"][0]["field"]
    assert _sent(capture, "/old/lookup") == []
