"""A dataset case whose check names a secret (docs/reference/scorers.md, "A reference that names a
secret"), through the HTTP API: the check is kept redacted when the case is saved, an answer
holding a secret of that kind still passes it, and a failure's reason never reads as a pass.
"""

from __future__ import annotations

from typing import Any

from tests.support import leaky_agent
from tests.support.e2e import Api

KEY = "AKIAIOSFODNN7EXAMPLE"
TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"


def _results(api: Api, ds: str, answer: str) -> dict[str, dict[str, Any]]:
    """Run the draft of an agent answering `answer` to every case of `ds`: each case's result."""
    agent = api.agent(leaky_agent.spec({"answer": answer}))
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    return {r["case_id"]: r for r in view["results"]}


def _dataset(api: Api) -> str:
    return api.dataset(
        [
            {"case_id": "bare", "input": "q", "checks": [{"scorer": "contains", "value": KEY}]},
            {
                "case_id": "said",
                "input": "q",
                "checks": [{"scorer": "contains", "value": f"the key is {KEY}"}],
            },
            {"case_id": "exact", "input": "q", "reference": f"the key is {KEY}"},
            {"case_id": "token", "input": "q", "checks": [{"scorer": "contains", "value": TOKEN}]},
            {
                "case_id": "pattern",
                "input": "q",
                "checks": [{"scorer": "regex", "pattern": f"^the key is {KEY}$"}],
            },
        ],
        required=["contains", "regex"],
    )


def test_a_check_naming_a_key_is_kept_redacted_and_passes_an_answer_holding_one(api):
    ds = _dataset(api)
    kept = api.ok("GET", f"/api/v1/datasets/{ds}/versions/1/cases")["cases"]
    checks = {c["case_id"]: c.get("checks") for c in kept}
    assert checks["bare"] == [{"scorer": "contains", "value": "[REDACTED:aws_access_key]"}]

    got = _results(api, ds, f"the key is {KEY}")

    states = {case_id: r["state"] for case_id, r in got.items()}
    assert states == {
        "bare": "passed",
        "said": "passed",
        "exact": "passed",
        "pattern": "passed",
        "token": "failed",
    }
    pattern = next(c for c in kept if c["case_id"] == "pattern")["checks"][0]["pattern"]
    assert pattern == "^the key is [REDACTED:aws_access_key]$"
    bare = got["bare"]["scores"][0]
    assert bare["reason"] == (
        "answer contains '[REDACTED:aws_access_key]' (secrets compared by their kind)"
    )
    # A key of another kind is not one: it fails, and its reason does not quote the answer
    # (which, redacted, would hold the aws_access_key placeholder beside the token's).
    token = got["token"]
    assert token["state"] == "failed"
    reason = token["scores"][0]["reason"]
    assert reason.startswith("the answer does not contain '[REDACTED:github_token]'")
    assert "aws_access_key" not in reason and "the key is" not in reason


def test_an_answer_without_the_key_fails_and_its_reason_never_reads_as_a_pass(api):
    ds = _dataset(api)

    got = _results(api, ds, "I will not tell you any key.")

    for case_id in ("bare", "said", "exact", "pattern"):
        result = got[case_id]
        assert result["state"] == "failed", result
        reason = result["scores"][0]["reason"]
        assert reason.startswith(("the answer does not contain '", "no match for /")), reason
        assert "not tell" not in reason and "got" not in reason, reason
