"""A model profile is checked like a draft (docs/guides/agents.md, "Model profiles and
secrets"), over HTTP: only who holds `secrets:manage` may save a profile naming a secret, since a
profile laid over a run sends it where its settings point; a start or an estimate that lays
profiles over its arms checks, as its starter, every secret they would send elsewhere than the
spec does; a profile saved by somebody who held the permission runs for anyone, to the address it
fixes; a judge asked on a profile is checked the same way."""

from __future__ import annotations

from collections.abc import Iterator
from typing import Any

import pytest

from chalicelib.domain.records import ModelProfile
from tests.support.e2e import Api, cases
from tests.support.local_http import LocalServer

SECRET = "pr0d-DB-pa55word-zz"


@pytest.fixture
def capture() -> Iterator[LocalServer]:
    """An `http` agent on 127.0.0.1 answering every case "42", keeping each request's headers."""
    with LocalServer(lambda path, raw: (200, {"answer": "42"})) as server:
        yield server


@pytest.fixture
def org(api: Api, new_api: Any) -> tuple[Api, Api]:
    """`(admin, editor)` of one organization holding the secret `prod-db`."""
    api.ok("PUT", "/api/v1/secrets/prod-db", json={"value": SECRET})
    return api, new_api(org_id=api.org_id, user_id="editor@example.com", role="editor")


def _leaked(capture: LocalServer, path: str) -> list[str]:
    """The secret's value as every request to `path` carried it, in any header."""
    return [
        v
        for p, headers in capture.request_log
        if p == path
        for v in headers.values()
        if SECRET in v
    ]


def _profile(api: Api, profile_id: str, **settings: Any) -> tuple[int, Any]:
    return api.call(
        "POST",
        "/api/v1/model-profiles",
        json={"model_profile_id": profile_id, "model": "m", "settings": settings},
    )


def _runs(api: Api, agent: str, body: dict[str, Any]) -> list[tuple[int, dict[str, Any]]]:
    """The answers of a start's estimate, then of the start, both with `body`."""
    base = f"/api/v1/agents/{agent}/eval-runs"
    return [api.call("POST", path, json=body) for path in (f"{base}/estimate", base)]


# --- saving a profile ---------------------------------------------------------------------------


@pytest.mark.parametrize(
    "settings",
    [
        {"url": "http://127.0.0.1:9/exfil", "headers": {"X-Leak": {"secret": "prod-db"}}},
        {"base_url": "http://127.0.0.1:9/v1", "api_key_secret": "prod-db"},
        {"base_url": "http://127.0.0.1:9/v1", "extra_headers": {"X-Leak": {"secret": "prod-db"}}},
    ],
)
def test_only_who_holds_secrets_manage_may_save_a_profile_naming_a_secret(org, settings):
    admin, editor = org
    key = next(k for k in settings if k not in ("url", "base_url"))
    field = "settings.api_key_secret" if key == "api_key_secret" else f"settings.{key}.X-Leak"
    # whether the secret exists or not, the editor is told the same: they may not list secrets
    for name in ("prod-db", "no-such-secret"):
        named = {
            k: (name if k == "api_key_secret" else {"X-Leak": {"secret": name}}) if k == key else v
            for k, v in settings.items()
        }
        status, body = _profile(editor, f"p-{name}", **named)
        assert status == 403, body
        error = body["error"]
        assert error["field"] == "settings" and error["permission"] == "secrets:manage"
        assert error["message"].startswith("the model profile cannot be saved: ")
        assert [(p["field"], p["permission"]) for p in error["problems"]] == [
            (field, "secrets:manage")
        ]
        assert f"secret {name} in a model profile" in error["problems"][0]["message"]
    assert editor.ok("GET", "/api/v1/model-profiles")["model_profiles"] == []
    # a profile naming no secret is the editor's to save; an admin may name one
    assert _profile(editor, "plain", url="http://127.0.0.1:9/model")[0] == 201
    assert _profile(admin, "keyed", **settings)[0] == 201


def test_an_editor_cannot_aim_an_admins_profile_elsewhere(org):
    admin, editor = org
    keyed = {"url": "http://127.0.0.1:9/model", "headers": {"X-Key": {"secret": "prod-db"}}}
    assert _profile(admin, "keyed", **keyed)[0] == 201
    # no route changes a profile in place
    for method in ("PUT", "PATCH"):
        status, _ = editor.call(
            method,
            "/api/v1/model-profiles/keyed",
            json={"model": "m", "settings": {**keyed, "url": "http://127.0.0.1:9/exfil"}},
        )
        assert status == 405, (method, status)
    # removing it and saving it again under the same id with another URL is saving a secret
    editor.ok("DELETE", "/api/v1/model-profiles/keyed")
    status, body = _profile(editor, "keyed", **{**keyed, "url": "http://127.0.0.1:9/exfil"})
    assert status == 403 and body["error"]["permission"] == "secrets:manage", body
    assert editor.call("GET", "/api/v1/model-profiles/keyed")[0] == 404


def _sends_key(capture: LocalServer) -> dict[str, Any]:
    """An `http` spec sending the secret `prod-db` in `X-Key` to the capture server's `/legit`."""
    return {
        "runtime": "http",
        "url": f"{capture.base}/legit",
        "headers": {"X-Key": {"secret": "prod-db"}},
    }


# --- laying profiles over a run -----------------------------------------------------------------


def test_a_profile_cannot_send_a_versions_secret_to_another_address(org, capture):
    admin, editor = org
    ds = admin.dataset(cases(1))
    keyed = _sends_key(capture)
    agent = admin.agent(keyed, publish=1)
    # a profile naming no secret is the editor's to save, and points elsewhere
    assert _profile(editor, "elsewhere", url=f"{capture.base}/exfil")[0] == 201
    body = {"dataset_id": ds, "candidate": "version", "model_profile_ids": ["elsewhere"]}
    for status, answer in _runs(editor, agent, body):
        assert status == 403, answer
        error = answer["error"]
        assert error["field"] == "model_profile_ids" and error["permission"] == "secrets:manage"
        assert error["message"].startswith("the model profiles cannot be laid over this run: ")
        assert [(p["field"], p["permission"]) for p in error["problems"]] == [
            ("model_profile_ids[0]", "secrets:manage")
        ]
        assert error["problems"][0]["message"].startswith(
            "model_profile_ids[0]: spec.headers.X-Key: sending secret prod-db where model "
            "profile elsewhere points"
        )
    # the version alone sends it where its publisher chose
    run = editor.start(agent, ds, candidate="version")
    assert editor.wait(run["run_id"])["status"] == "completed"
    assert _leaked(capture, "/legit") == [SECRET] and _leaked(capture, "/exfil") == []


def test_a_profile_cannot_send_the_baseline_versions_secret_to_another_address(org, capture):
    admin, editor = org
    ds = admin.dataset(cases(1))
    keyed = _sends_key(capture)
    agent = admin.agent(keyed, publish=1)
    # the draft sends no secret; the version beside it does, and would run on the first profile
    editor.ok(
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        json={"spec": {"runtime": "http", "url": f"{capture.base}/draft"}},
    )
    assert _profile(editor, "elsewhere", url=f"{capture.base}/exfil")[0] == 201
    body = {
        "dataset_id": ds,
        "candidate": "draft",
        "paired_baseline": True,
        "reruns": 1,
        "model_profile_ids": ["elsewhere"],
    }
    for status, answer in _runs(editor, agent, body):
        assert status == 403, answer
        assert [p["field"] for p in answer["error"]["problems"]] == ["model_profile_ids[0]"]
        assert "spec.headers.X-Key" in answer["error"]["problems"][0]["message"]
    assert _leaked(capture, "/exfil") == []


def test_an_admins_profile_naming_a_secret_runs_for_an_editor_where_it_points(org, capture):
    admin, editor = org
    ds = admin.dataset(cases(1))
    agent = editor.agent({"runtime": "http", "url": f"{capture.base}/draft"})
    fixed = {"url": f"{capture.base}/model", "headers": {"X-Key": {"secret": "prod-db"}}}
    assert _profile(admin, "fixed", **fixed)[0] == 201
    run = editor.start(agent, ds, model_profile_ids=["fixed"])
    assert editor.wait(run["run_id"])["status"] == "completed"
    assert _leaked(capture, "/model") == [SECRET]

    # a profile that fixes no address sends its secret where the editor's draft points
    assert _profile(admin, "unfixed", headers={"X-Key": {"secret": "prod-db"}})[0] == 201
    body = {"dataset_id": ds, "candidate": "draft", "model_profile_ids": ["unfixed"]}
    for status, answer in _runs(editor, agent, body):
        assert status == 403, answer
        assert [p["field"] for p in answer["error"]["problems"]] == ["model_profile_ids[0]"]
        assert "settings.headers.X-Key" in answer["error"]["problems"][0]["message"]
    # who holds secrets:manage may aim it there
    run = admin.start(agent, ds, model_profile_ids=["unfixed"])
    assert admin.wait(run["run_id"])["status"] == "completed"
    assert _leaked(capture, "/draft") == [SECRET]


def test_a_profile_saved_before_the_rule_is_checked_as_its_starter(org, capture, container):
    admin, editor = org
    ds = admin.dataset(cases(1))
    agent = editor.agent({"runtime": "http", "url": f"{capture.base}/draft"})
    container.model_profiles.create(
        ModelProfile(
            org_id=admin.org_id,
            model_profile_id="old",
            model="m",
            settings={"url": f"{capture.base}/exfil", "headers": {"X-Leak": {"secret": "prod-db"}}},
            created_at="2026-01-01T00:00:00+00:00",
            created_by="editor@example.com",
        )
    )
    body = {"dataset_id": ds, "candidate": "draft", "model_profile_ids": ["old"]}
    for status, answer in _runs(editor, agent, body):
        assert status == 403, answer
        assert answer["error"]["problems"][0]["field"] == "model_profile_ids[0]"
        assert "settings.headers.X-Leak" in answer["error"]["problems"][0]["message"]
    assert editor.ok("GET", "/api/v1/eval-runs")["runs"] == []
    assert _leaked(capture, "/exfil") == []


def test_a_profile_naming_a_secret_the_organization_lacks_is_a_400_before_it_runs(org, capture):
    admin, _ = org
    ds = admin.dataset(cases(1))
    agent = admin.agent({"runtime": "http", "url": f"{capture.base}/draft"})
    gone = {"url": f"{capture.base}/model", "headers": {"X-Key": {"secret": "gone"}}}
    assert _profile(admin, "gone", **gone)[0] == 201  # whether it exists is checked on use
    body = {"dataset_id": ds, "candidate": "draft", "model_profile_ids": ["gone"]}
    for status, answer in _runs(admin, agent, body):
        assert status == 400, answer
        error = answer["error"]
        assert error["code"] == "invalid_input" and error["field"] == "model_profile_ids"
        assert [p["field"] for p in error["problems"]] == ["model_profile_ids[0]"]
        assert "secret gone not found" in error["problems"][0]["message"]
    assert admin.ok("GET", "/api/v1/eval-runs")["runs"] == []


# --- a judge's profile --------------------------------------------------------------------------


def _publish_judge(api: Api, profile: str) -> tuple[int, Any]:
    judge = api.ok("POST", "/api/v1/judges", json={"name": "quality"})["judge_id"]
    return api.call(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={
            "model_profile_id": profile,
            "threshold": 4,
            "prompt_version": "1",
            "criteria": [{"criterion_id": "correct", "text": "The answer is right."}],
        },
    )


def test_a_judge_is_asked_on_a_profiles_secret_only_where_its_saver_aimed_it(org, container):
    admin, editor = org
    keyed = {"base_url": "http://127.0.0.1:9/v1", "api_key_secret": "prod-db"}
    assert _profile(admin, "grader", **keyed)[0] == 201
    status, body = _publish_judge(editor, "grader")
    assert status == 201, body
    container.model_profiles.create(
        ModelProfile(
            org_id=admin.org_id,
            model_profile_id="old",
            model="m",
            settings={**keyed, "base_url": "http://127.0.0.1:9/exfil"},
            created_at="2026-01-01T00:00:00+00:00",
            created_by="editor@example.com",
        )
    )
    status, body = _publish_judge(editor, "old")
    assert status == 403, body
    error = body["error"]
    assert error["field"] == "model_profile_id" and error["permission"] == "secrets:manage"
    assert [p["field"] for p in error["problems"]] == ["model_profile_id"]
    assert "settings.api_key_secret" in error["problems"][0]["message"]
    status, body = _publish_judge(admin, "old")
    assert status == 201, body
