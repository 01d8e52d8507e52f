"""Schema-driven fuzz of every route (issue 11 scope 10): schemathesis reads `GET /openapi.json`
from the embedded stack on 127.0.0.1 and sends, per operation, a bounded number of requests built
from the document: bodies, query parameters and path ids that fit it (positive) and that do not
(negative), with a valid bearer token of one organization. No answer may be a 5xx.

The organization holds one of each thing (an agent with a published version, a dataset version,
an environment, a connection, a model profile, a judge version, a suite, a secret, a recording, a
run): a positive case names those ids, so it reaches the services and the stores, not only a 404;
a negative case keeps the ids it was generated with.

`FUZZ_EXAMPLES` bounds the requests per operation (and so the run time: about a minute on two
cores); `ASSAY_FUZZ_EXAMPLES` raises it for a longer local run. Hypothesis runs derandomized, so
CI sends the same requests every time.
"""

from __future__ import annotations

import os
import time
import uuid
from typing import Any

import httpx
import pytest
import schemathesis
from schemathesis.config import SchemathesisConfig

import app
from chalicelib.api import openapi
from chalicelib.api.common import issue_token

FUZZ_EXAMPLES = int(os.environ.get("ASSAY_FUZZ_EXAMPLES", "12"))
"""Requests schemathesis builds per operation and generation mode (positive, negative)."""

SPEC = {"runtime": "python", "entrypoint": "bench.agents:sleepy", "options": {"answer": "42"}}
DELETED = {
    "/api/v1/agents/{agent_id}": ("fz-agent-deleted", "fz-data-unused"),
    "/api/v1/datasets/{dataset_id}": ("fz-agent-unused", "fz-data-deleted"),
}
"""A positive DELETE of an agent or a dataset names one of these, seeded for it: deleting the
organization's one agent or dataset would leave every operation fuzzed after it a 404."""
CASES = [
    {"case_id": "add", "input": "What is 40 + 2?", "reference": "42", "tags": ["easy"]},
    {"case_id": "mul", "input": "What is 6 * 7?", "reference": "42"},
]


def _seed(http: httpx.Client) -> dict[str, str]:
    """One of each thing in the fuzzed organization; returns the ids by path parameter name."""

    def ok(method: str, path: str, body: Any = None) -> Any:
        r = http.request(method, path, json=body)
        assert r.status_code < 300, (method, path, r.status_code, r.text)
        return r.json() if r.content else None

    ok("POST", "/api/v1/agents", {"name": "Fuzzed", "agent_id": "fz-agent", "spec": SPEC})
    ok("POST", "/api/v1/agents/fz-agent/versions")
    ok("POST", "/api/v1/datasets", {"name": "Fuzzed", "dataset_id": "fz-data"})
    scoring = {"required": ["numeric_answer"]}
    ok("POST", "/api/v1/datasets/fz-data/versions", {"scoring": scoring, "cases": CASES})
    for agent_id, dataset_id in DELETED.values():  # what the deletes take, not the others' ids
        ok("POST", "/api/v1/agents", {"name": "Deleted", "agent_id": agent_id, "spec": SPEC})
        ok("POST", "/api/v1/datasets", {"name": "Deleted", "dataset_id": dataset_id})
    ok("POST", "/api/v1/environments", {"environment_id": "fz-env"})
    for connection_id in ("fz-conn", "fz-conn-test"):  # loopback: saved, never called
        ok(
            "POST",
            "/api/v1/connections",
            {"connection_id": connection_id, "kind": "http", "url": "http://127.0.0.1:9/tools"},
        )
    ok(
        "POST",
        "/api/v1/model-profiles",
        {
            "model_profile_id": "fz-model",
            "model": "m",
            "settings": {"base_url": "http://127.0.0.1:9"},
        },
    )
    ok("POST", "/api/v1/judges", {"name": "Fuzzed", "judge_id": "fz-judge"})
    ok(
        "POST",
        "/api/v1/judges/fz-judge/versions",
        {"model_profile_id": "fz-model", "criteria": [{"criterion_id": "c", "text": "correct"}]},
    )
    ok(
        "POST",
        "/api/v1/agents/fz-agent/suites",
        {"dataset_id": "fz-data", "suite_id": "fz-suite", "threshold": {"min_pass_rate": 0.5}},
    )
    ok("PUT", "/api/v1/secrets/fz-secret", {"value": "a-value-of-the-org"})
    ok(
        "POST",
        "/api/v1/recordings",
        {"recording_id": "fz-rec", "content": '{"case_id": "add", "answer": "42"}\n'},
    )
    run = ok("POST", "/api/v1/agents/fz-agent/eval-runs", {"dataset_id": "fz-data", "version": 1})
    for _ in range(120):  # ended, its events answer at once instead of long-polling
        if ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["status"] not in ("queued", "running"):
            break
        time.sleep(0.5)
    promotion = ok(
        "POST", "/api/v1/agents/fz-agent/promotions", {"environment_id": "fz-env", "version": 1}
    )
    return {
        "agent_id": "fz-agent",
        "dataset_id": "fz-data",
        "environment_id": "fz-env",
        "connection_id": "fz-conn",
        "model_profile_id": "fz-model",
        "judge_id": "fz-judge",
        "suite_id": "fz-suite",
        "name": "fz-secret",
        "recording_id": "fz-rec",
        "run_id": run["run_id"],
        "promotion_id": promotion["promotion_id"],
        "arm_id": "candidate",
        "version": "1",
    }


@pytest.fixture(scope="session")
def fuzzed(stack) -> dict[str, Any]:
    """The organization the fuzz runs as: its token and its ids."""
    s = stack.settings
    org = f"org_fuzz_{uuid.uuid4().hex[:8]}"
    token = issue_token(org, "fuzzer", secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer)
    headers = {"Authorization": f"Bearer {token}"}
    with httpx.Client(base_url=stack.api_url, headers=headers, timeout=60) as http:
        ids = _seed(http)
        served = httpx.get(f"{stack.api_url}/openapi.json").json()  # no token: it is public
    assert served == schema.raw_schema
    return {"headers": headers, "ids": ids, "url": stack.api_url}


CONFIG = SchemathesisConfig.from_dict(
    {
        "generation": {
            "max-examples": FUZZ_EXAMPLES,
            "deterministic": True,
            "database": "none",
            "no-shrink": True,
            # The token stays valid: a mutated Authorization header only ever meets the 401 path.
            "with-security-parameters": False,
        },
        "phases": {
            "examples": {"enabled": False},
            "coverage": {"enabled": False},
            "stateful": {"enabled": False},
        },
        "suppress-health-check": ["all"],
    }
)
# Built from the app here, at collection (schemathesis's lazy loader does not run on this pytest);
# `fuzzed` checks that the stack serves this very document.
schema = schemathesis.openapi.from_dict(openapi.build(app.app), config=CONFIG)


@schema.parametrize()
def test_no_request_built_from_the_document_is_answered_with_a_5xx(case, fuzzed):
    meta = case._meta  # noqa: SLF001 - which mode built this case
    positive = meta is None or not meta.generation.mode.is_negative
    if positive:
        ids = dict(fuzzed["ids"])
        if case.method.upper() == "DELETE" and case.path in DELETED:
            ids["agent_id"], ids["dataset_id"] = DELETED[case.path]
        case.path_parameters = {
            name: ids.get(name, value) for name, value in case.path_parameters.items()
        }
    started = time.monotonic()
    response = case.call(base_url=fuzzed["url"], headers=fuzzed["headers"], timeout=60)
    assert response.status_code < 500, (
        f"{case.method} {case.formatted_path} -> {response.status_code} "
        f"({time.monotonic() - started:.1f}s): {response.text[:500]}\n{case.as_curl_command()}"
    )
