"""A scorer's reason never quotes a piece of a secret the answer holds (docs/reference/
data-protection.md, "A reason never quotes a piece of a secret"), through the HTTP API: a regex
that matches part of an AWS key id, or the tail of an organization's stored value, is shown
matching the secret's placeholder, and a failure quotes the answer with its secrets redacted.
"""

from __future__ import annotations

from typing import Any

from tests.support import leaky_agent

KEY = "AKIAZ3Q7M2P9X4K8LW5R"
KEY_TAIL = "Z3Q7M2P9X4K8LW5R"
ORG_VALUE = "orgvalue-Qx7Lm2Pz9Wk3Hh"
ORG_TAIL = "Qx7Lm2Pz9Wk3Hh"
ANSWER = f"the key is {KEY} and {ORG_VALUE}"


_run = leaky_agent.run_results


def _reason(result: dict[str, Any]) -> str:
    return str(result["scores"][0]["reason"])


def test_a_regex_matching_a_piece_of_a_secret_quotes_its_placeholder(api):
    api.ok("PUT", "/api/v1/secrets/org-value", json={"value": ORG_VALUE})
    patterns = {
        "key-tail": "(?<=AKIA)[A-Z0-9]{16}",
        "key-head": "AKIA[A-Z0-9]{12}",
        "org-tail": "(?<=orgvalue-).{14}",
        "around": r"is \w{4}",
        "fails": "^no such answer",
    }
    ds = api.dataset(
        [
            {"case_id": case_id, "input": "q", "checks": [{"scorer": "regex", "pattern": p}]}
            for case_id, p in patterns.items()
        ],
        required=["regex"],
    )

    got, shown = _run(api, ds, {"answer": ANSWER})

    key, org = "[REDACTED:aws_access_key]", "[REDACTED:secret]"
    assert got["key-tail"]["state"] == "passed", got["key-tail"]
    assert _reason(got["key-tail"]) == f"/{patterns['key-tail']}/ matched '{key}'"
    assert _reason(got["key-head"]) == f"/{patterns['key-head']}/ matched '{key}'"
    assert got["org-tail"]["state"] == "passed", got["org-tail"]
    assert _reason(got["org-tail"]) == f"/{patterns['org-tail']}/ matched '{org}'"
    # A match that runs into a secret is widened to the whole of it.
    assert _reason(got["around"]) == f"/{patterns['around']}/ matched 'is {key}'"
    assert got["fails"]["state"] == "failed"
    assert _reason(got["fails"]) == (
        f"expected a match for /{patterns['fails']}/, got 'the key is {key} and {org}'"
    )
    for piece in (KEY_TAIL, KEY[:16], ORG_TAIL, "Qx7Lm2"):
        assert piece not in shown, piece


def test_other_scorers_never_quote_a_piece_of_a_secret(api):
    # Stored values: a service account's credentials as JSON, and a door's pin.
    blob = '{"user": "svc", "pass": "Hunter2Hunter2"}'
    api.ok("PUT", "/api/v1/secrets/account", json={"value": blob})
    api.ok("PUT", "/api/v1/secrets/pin", json={"value": "door-pin-83920174"})
    schema = {"properties": {"pass": {"maxLength": 3}}}
    ds = api.dataset(
        [
            {
                "case_id": "contains",
                "input": "q",
                "checks": [{"scorer": "contains", "value": "nothing like it"}],
            },
            {
                "case_id": "numeric",
                "input": "q",
                "checks": [{"scorer": "numeric_answer", "value": 7}],
            },
            {
                "case_id": "schema",
                "input": "q",
                "checks": [{"scorer": "json_schema", "schema": schema, "embedded": True}],
            },
        ],
        required=["contains", "numeric_answer", "json_schema"],
    )

    got, shown = _run(api, ds, {"answer": f"use {blob} at door-pin-83920174"})

    for case_id in ("contains", "numeric", "schema"):
        assert got[case_id]["state"] == "failed", got[case_id]
    assert _reason(got["contains"]) == (
        "expected the answer to contain 'nothing like it', got "
        "'use [REDACTED:secret] at [REDACTED:secret]'"
    )
    assert _reason(got["numeric"]) == (
        "expected 7, got a number written inside a secret the answer holds (not quoted)"
    )
    assert _reason(got["schema"]) == (
        "answer does not match the schema at $.pass (maxLength) (the answer's values are not "
        "quoted: the answer holds a secret, and a value may be a piece of it)"
    )
    for piece in ("Hunter2", "83920174"):
        assert piece not in shown, piece
