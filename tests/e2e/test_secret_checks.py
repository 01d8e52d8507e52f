"""Checks beyond the text scorers whose reference names a secret (docs/reference/scorers.md, "A
reference that names a secret"), through the HTTP API: expected tool calls and JSON Schemas kept
redacted still pass an agent that makes the call or writes the value; a regex failure's reason
never reads as a pass; and a secret a pattern writes with regex escapes is not kept.
"""

from __future__ import annotations

import json
import re
from typing import Any

from tests.support import leaky_agent
from tests.support.e2e import Api

KEY = "AKIAIOSFODNN7EXAMPLE"
TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
ORG_VALUE = "orgvalue-Qx7Lm2Pz9"
PLACED = "[REDACTED:aws_access_key]"


_run = leaky_agent.run_results


def _kept(api: Api, ds: str) -> dict[str, dict[str, Any]]:
    cases = api.ok("GET", f"/api/v1/datasets/{ds}/versions/1/cases")["cases"]
    return {c["case_id"]: c for c in cases}


def test_an_expected_call_naming_a_key_passes_the_agent_that_makes_it(api):
    ds = api.dataset(
        [
            {
                "case_id": "calls",
                "input": "q",
                "expected_calls": [{"name": "send", "arguments": {"key": KEY, "to": "ops"}}],
            }
        ],
        required=["tool_calls"],
    )
    kept = _kept(api, ds)["calls"]["expected_calls"]
    assert kept == [{"name": "send", "arguments": {"key": PLACED, "to": "ops"}}]

    call = {"name": "send", "arguments": {"key": KEY, "to": "ops"}}
    got, shown = _run(api, ds, {"answer": "sent", "calls": [call]})

    assert got["calls"]["state"] == "passed", got["calls"]
    assert got["calls"]["scores"][0]["reason"] == (
        "all 1 expected calls made (secrets compared by their kind)"
    )
    assert KEY not in shown

    other = {"name": "send", "arguments": {"key": TOKEN, "to": "ops"}}
    failed, shown = _run(api, ds, {"answer": "sent", "calls": [other]})
    assert failed["calls"]["state"] == "failed"
    assert failed["calls"]["scores"][0]["reason"] == (
        f"missing 1 of 1 expected calls: send(key='{PLACED}', to='ops') (calls made: send; "
        "arguments holding a secret are compared by their kind, with the calls' secrets redacted)"
    )
    assert TOKEN not in shown


def test_a_schema_naming_a_key_passes_the_answer_that_holds_it(api):
    schema = {"type": "object", "properties": {"key": {"const": KEY}}, "required": ["key"]}
    ds = api.dataset(
        [
            {
                "case_id": "schema",
                "input": "q",
                "checks": [{"scorer": "json_schema", "schema": schema}],
            }
        ],
        required=["json_schema"],
    )
    kept = _kept(api, ds)["schema"]["checks"][0]["schema"]
    assert kept["properties"]["key"] == {"const": PLACED}

    got, shown = _run(api, ds, {"answer": json.dumps({"key": KEY})})

    assert got["schema"]["state"] == "passed", got["schema"]
    assert KEY not in shown

    failed, _ = _run(api, ds, {"answer": json.dumps({"key": TOKEN})})
    assert failed["schema"]["state"] == "failed"
    assert failed["schema"]["scores"][0]["reason"] == (
        f"answer does not match the schema at $.key: '{PLACED}' was expected (secrets compared "
        "by their kind, with the answer's secrets redacted)"
    )


def test_a_regex_failure_never_shows_an_answer_the_pattern_visibly_matches(api):
    escaped = r"key is \[REDACTED:aws_access_key\]"
    patterns = {"escaped": escaped, "word": "REDACTED", "length": "^the key is .{25}$"}
    ds = api.dataset(
        [
            {"case_id": case_id, "input": "q", "checks": [{"scorer": "regex", "pattern": p}]}
            for case_id, p in patterns.items()
        ],
        required=["regex"],
    )

    got, shown = _run(api, ds, {"answer": f"the key is {KEY}"})

    # The escaped placeholder is a placeholder: compared by its kind, the key matches it.
    assert got["escaped"]["state"] == "passed", got["escaped"]
    for case_id in ("word", "length"):
        result = got[case_id]
        assert result["state"] == "failed", result
        reason = result["scores"][0]["reason"]
        assert reason == (
            f"no match for /{patterns[case_id]}/ (the answer is not quoted: it holds a secret, and "
            "redacted as every reason is kept it would seem to match)"
        )
    assert KEY not in shown


def test_a_secret_a_pattern_writes_with_escapes_is_not_kept(api):
    api.ok("PUT", "/api/v1/secrets/org-value", json={"value": ORG_VALUE})
    escaped_jwt = re.escape(JWT)
    escaped_org = re.escape(ORG_VALUE)
    assert "\\" in escaped_jwt and "\\" in escaped_org
    ds = api.dataset(
        [
            {
                "case_id": "jwt",
                "input": "q",
                "checks": [{"scorer": "regex", "pattern": f"token={escaped_jwt}"}],
            },
            {
                "case_id": "org",
                "input": "q",
                "checks": [{"scorer": "regex", "pattern": f"^value {escaped_org}$"}],
            },
        ],
        required=["regex"],
    )
    kept = _kept(api, ds)
    assert kept["jwt"]["checks"][0]["pattern"] == "token=[REDACTED:jwt]"
    assert kept["org"]["checks"][0]["pattern"] == "^value [REDACTED:secret]$"
    cases = json.dumps(kept)
    assert escaped_jwt not in cases and JWT.split(".")[2] not in cases
    assert escaped_org not in cases and "Qx7Lm2Pz9" not in cases

    got, shown = _run(api, ds, {"answer": f"token={JWT}"})

    assert got["jwt"]["state"] == "passed", got["jwt"]
    assert got["jwt"]["scores"][0]["reason"] == (
        "/token=[REDACTED:jwt]/ matched 'token=[REDACTED:jwt]'"
    )
    assert got["org"]["state"] == "failed"
    for secret in (JWT.split(".")[2], "Qx7Lm2Pz9"):
        assert secret not in shown
