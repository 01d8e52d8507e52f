"""A typed Python client of the assay HTTP API (issue 13, scope 2), on httpx.

Every route of the OpenAPI document (`GET /openapi.json`) has one method on `AssayClient`, named
by `@operation` (`assay.transport`) in the module of its resource group (`assay.client_access`,
`client_agents`, `client_runs`, `client_data`); `tests/unit/test_client_contract.py` checks the
two against each other both ways, so a route added to the service without a method here (or a
method naming a route the service does not have) fails the tests. Bodies and queries are passed
as keyword arguments whose names are the API's fields; a value of None is left out. Answers are
the API's JSON (`dict`).

    from assay.client import AssayClient
    api = AssayClient("https://assay.example.com", token)
    run = api.start_run("agt_1", dataset_id="ds_1", candidate="draft")
    run = api.wait(run["run_id"])

Errors: `ApiError` for every answer of 400 and above (its `status`, the error body's `code`,
`message`, `field` and the request id), `ApiUnreachable` when no answer came at all.
"""

import hashlib
import hmac
import json
from typing import Any

from assay.client_access import AccessApi
from assay.client_agents import AgentsApi
from assay.client_data import DataApi
from assay.client_runs import ENDED, RunsApi
from assay.transport import OPERATIONS, PATH_SAFE, ApiError, ApiUnreachable, operation

__all__ = [
    "ENDED",
    "OPERATIONS",
    "PATH_SAFE",
    "ApiError",
    "ApiUnreachable",
    "AssayClient",
    "operation",
    "sign_event",
]


def sign_event(event: dict[str, Any], secret: str) -> dict[str, Any]:
    """`event` (a message for the agent-events queue) with its `signature`: `sha256=` and the hex
    HMAC-SHA256, keyed with the organization's `pipeline-signing-key` secret, of the event's
    canonical JSON (sorted keys, no whitespace, UTF-8 as is) without `signature`."""
    unsigned = {k: v for k, v in event.items() if k != "signature"}
    text = json.dumps(unsigned, sort_keys=True, separators=(",", ":"), ensure_ascii=False)
    digest = hmac.new(secret.encode(), text.encode(), hashlib.sha256).hexdigest()
    return {**unsigned, "signature": f"sha256={digest}"}


class AssayClient(AccessApi, AgentsApi, RunsApi, DataApi):
    """The assay API at `base_url` as organization member `token` (a bearer token).

    Args:
        base_url: e.g. `https://<api-id>.execute-api.<region>.amazonaws.com/api` or the
            `ASSAY_URL` that `assay dev` prints.
        token: the bearer token (`ASSAY_TOKEN`).
        timeout_s: seconds per request.
        transport: an httpx transport (tests).
    """
