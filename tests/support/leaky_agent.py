"""A `python` agent that answers whatever payload its spec carries, base64-encoded (tests only).

The payload is the `http` runtime's answer shape (`answer`, `calls`, `model`, `guardrail`, or
`{"error", "crash": true}`), or `{"provider_error": "..."}` to fail as a provider would. Encoded,
the spec itself holds no recognizable secret, so a test can plant secrets in every field of an
answer and check that none of them is kept.
"""

from __future__ import annotations

import base64
import json
from typing import Any

from chalicelib.errors import ProviderError


def encode(payload: dict[str, Any]) -> str:
    return base64.b64encode(json.dumps(payload).encode()).decode()


def leaky(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    payload = json.loads(base64.b64decode(options["payload_b64"]))
    if "provider_error" in payload:
        raise ProviderError(payload["provider_error"], status=503)
    return payload


def spec(payload: dict[str, Any]) -> dict[str, Any]:
    """The agent spec answering `payload` to every case."""
    return {
        "runtime": "python",
        "entrypoint": "tests.support.leaky_agent:leaky",
        "options": {"payload_b64": encode(payload)},
    }


def run_results(
    api: Any, ds: str, payload: dict[str, Any]
) -> tuple[dict[str, dict[str, Any]], str]:
    """Run the draft of an agent answering `payload` to every case of dataset `ds` through `api`
    (a `tests.support.e2e.Api`): each case's result by case id, and the whole run as the API
    shows it (JSON text, for checking that no secret appears anywhere in it)."""
    agent = api.agent(spec(payload))
    run = api.start(agent, ds)
    api.wait(run["run_id"])
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    return {r["case_id"]: r for r in view["results"]}, json.dumps(view)
