"""A regex reference that spells a secret in a way no escape rule reads (`[A]KIA...`,
`(?x) A K I A ...`, `orgvalue[-]...`) is kept as the secret's placeholder, through the HTTP API
(docs/reference/data-protection.md, "A secret in a regex reference").
"""

from __future__ import annotations

import json

from tests.support import leaky_agent

KEY = "AKIAZ3Q7M2P9X4K8LW5R"
TAIL = "Z3Q7M2P9X4K8LW5R"
ORG_VALUE = "orgvalue-Qx7Lm2Pz9Wk3Hh"


def test_a_pattern_spelling_a_secret_some_other_way_is_kept_as_its_placeholder(api):
    api.ok("PUT", "/api/v1/secrets/org-value", json={"value": ORG_VALUE})
    checks = {
        "class": {"pattern": "[A]KIA" + TAIL},
        "octal": {"pattern": r"\101KIA" + TAIL},
        "verbose": {"pattern": " ".join(KEY), "flags": "x"},
        "lower": {"pattern": "(?i)" + KEY.lower()},
        "org": {"pattern": "orgvalue[-]Qx7Lm2Pz9Wk3Hh"},
        "plain": {"pattern": "^the key"},
    }
    ds = api.dataset(
        [
            {"case_id": case_id, "input": "q", "checks": [{"scorer": "regex", **check}]}
            for case_id, check in checks.items()
        ],
        required=["regex"],
    )

    cases = api.ok("GET", f"/api/v1/datasets/{ds}/versions/1/cases")["cases"]
    kept = {c["case_id"]: c["checks"][0]["pattern"] for c in cases}
    assert kept == {
        "class": "[REDACTED:aws_access_key]",
        "octal": "[REDACTED:aws_access_key]",
        "verbose": "[REDACTED:aws_access_key]",
        "lower": "[REDACTED:aws_access_key]",
        "org": "[REDACTED:secret]",
        "plain": "^the key",
    }
    text = json.dumps(cases)
    for piece in (TAIL, TAIL.lower(), " ".join(TAIL), "Qx7Lm2Pz9Wk3Hh"):
        assert piece not in text, piece

    agent = api.agent(leaky_agent.spec({"answer": f"the key is {KEY} and {ORG_VALUE}"}))
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    states = {r["case_id"]: r["state"] for r in view["results"]}
    # Kept redacted, each is compared by its kind with the answer's secrets redacted (by shape:
    # a stored value's placeholder matches none, as for every reference).
    assert states == {**{case_id: "passed" for case_id in checks}, "org": "failed"}
    shown = json.dumps(view)
    for piece in (TAIL, "Qx7Lm2Pz9Wk3Hh"):
        assert piece not in shown, piece
