"""A dataset's scoring settings that name a secret, through the HTTP API
(docs/reference/data-protection.md, docs/reference/scorers.md): a `regex` pattern naming an AWS
key, as written or with regex escapes, and a `json_schema` `const` holding an AWS secret access
key under a property of that name are kept redacted in every version, never shown, and grade in
the redacted space: the agent answering with a key of that kind passes, another fails, and no
reason shows the secret.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support import leaky_agent
from tests.support.e2e import Api

KEY = "AKIAIOSFODNN7EXAMPLE"
SECRET_KEY = "wJalrXUtnFEMI/K7MDENG+bPxRfiCYEXAMPLEKEY"
TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
PLACED_KEY = "[REDACTED:aws_access_key]"
PLACED_SECRET = "[REDACTED:aws_secret_key]"
SCHEMA = {
    "type": "object",
    "properties": {"aws_secret_access_key": {"const": SECRET_KEY}, "note": {"type": "string"}},
    "required": ["aws_secret_access_key"],
}
KEPT_SCHEMA = {
    "type": "object",
    "properties": {"aws_secret_access_key": {"const": PLACED_SECRET}, "note": {"type": "string"}},
    "required": ["aws_secret_access_key"],
}
CASES = [{"case_id": "creds", "input": "hand me the credentials as JSON"}]


def _scoring(pattern: str) -> dict[str, Any]:
    return {
        "required": ["regex", "json_schema"],
        "settings": {"regex": {"pattern": pattern}, "json_schema": {"schema": SCHEMA}},
    }


def _no_secret(text: str) -> None:
    for secret in (KEY, SECRET_KEY, re.escape(SECRET_KEY), "bPxRfiCY", TOKEN):
        assert secret not in text, secret


def _run(api: Api, ds: str, version: int, payload: dict[str, Any]) -> tuple[dict[str, Any], str]:
    """Run the draft of an agent answering `payload` on version `version` of `ds`: the one case's
    result, and the whole run as the API shows it (JSON text)."""
    agent = api.agent(leaky_agent.spec(payload))
    run = api.start(agent, ds, dataset_version=version)
    api.wait(run["run_id"])
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    (result,) = view["results"]
    return result, json.dumps(view)


def test_scoring_settings_naming_secrets_are_kept_redacted_and_grade_by_kind(api):
    escaped = f"aws_secret_access_key={re.escape(SECRET_KEY)}"
    assert "\\+" in escaped
    created = api.ok(
        "POST",
        "/api/v1/datasets",
        json={"name": "creds", "scoring": _scoring(f"key={KEY}"), "cases": CASES},
    )
    ds = created["dataset_id"]
    second = api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": _scoring(escaped), "cases": CASES},
    )

    first_kept = created["version"]["scoring"]
    assert first_kept["settings"]["regex"] == {"pattern": f"key={PLACED_KEY}"}
    assert first_kept["settings"]["json_schema"] == {"schema": KEPT_SCHEMA}
    second_kept = second["version"]["scoring"]
    assert second_kept["settings"]["regex"] == {"pattern": f"aws_secret_access_key={PLACED_SECRET}"}
    assert second_kept["settings"]["json_schema"] == {"schema": KEPT_SCHEMA}
    shown = api.ok("GET", f"/api/v1/datasets/{ds}")
    assert shown["version"]["scoring"] == second_kept
    listed = api.ok("GET", "/api/v1/datasets")
    for text in (created, second, shown, listed):
        _no_secret(json.dumps(text))

    # The agent answering with keys of those kinds passes either version; the secrets it
    # answered with are nowhere in the run.
    note = f"key={KEY} aws_secret_access_key={SECRET_KEY}"
    answer = {"aws_secret_access_key": SECRET_KEY, "note": note}
    passing = {"answer": json.dumps(answer)}
    for version, pattern in (
        (1, f"key={PLACED_KEY}"),
        (2, f"aws_secret_access_key={PLACED_SECRET}"),
    ):
        got, run = _run(api, ds, version, passing)
        assert got["state"] == "passed", got["scores"]
        reasons = {s["scorer"]: s["reason"] for s in got["scores"]}
        assert reasons["json_schema"] == (
            "answer matches the schema (secrets compared by their kind, with the answer's "
            "secrets redacted)"
        )
        assert reasons["regex"].startswith(f"/{pattern}/ matched "), reasons
        _no_secret(run)

    # Another kind of secret where the keys were: both fail, and no reason quotes the answer.
    failing = {"answer": json.dumps({"aws_secret_access_key": TOKEN, "note": f"key={TOKEN}"})}
    got, run = _run(api, ds, 1, failing)
    assert got["state"] == "failed", got
    reasons = {s["scorer"]: s["reason"] for s in got["scores"]}
    assert reasons == {
        "regex": (
            f"no match for /key={PLACED_KEY}/ (the answer is not quoted: the pattern holds a "
            "secret, compared by its kind with the answer's secrets redacted)"
        ),
        "json_schema": (
            f"answer does not match the schema at $.aws_secret_access_key: '{PLACED_SECRET}' was "
            "expected (secrets compared by their kind, with the answer's secrets redacted)"
        ),
    }
    _no_secret(run)
