"""API Gateway's own error answers in the API's shape: `{"error": {"code", "message",
"request_id"}}`.

API Gateway answers some requests before any Lambda runs: an unknown path (as
`MISSING_AUTHENTICATION_TOKEN`, 403 - and, when the request has an Authorization header, a
message that repeats that header, i.e. the caller's bearer token), throttling, a body too
large, an integration timeout. Its Gateway Responses replace those answers: each type here gets
a fixed JSON body (`chalicelib.api.common.GATEWAY_ERRORS`, the texts the embedded stack's gateway
answers too) and the request's id (`$context.requestId`, API Gateway's own), never
`$context.error.message`, which for some types echoes request headers.
An unknown path becomes a 404. (A wrong method on a known path reaches the app, which answers
405: `chalicelib.api.common.answer_other_methods`.)

Chalice writes the API as `RestAPI` (`AWS::Serverless::Api`) in the template `chalice package`
builds; this adds a `GatewayResponses` property to it:

    chalice package --pkg-format cloudformation build/
    python -m infra gateway-responses build/sam.json
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chalicelib.api.common import GATEWAY_ERRORS

RESPONSE_STATUS: dict[str, int | None] = {
    "MISSING_AUTHENTICATION_TOKEN": 404,  # an unknown path (API Gateway's 403)
    "RESOURCE_NOT_FOUND": 404,
    "UNAUTHORIZED": 401,
    "ACCESS_DENIED": 403,
    "INVALID_SIGNATURE": 403,
    "EXPIRED_TOKEN": 403,
    "INVALID_API_KEY": 403,
    "WAF_FILTERED": 403,
    "BAD_REQUEST_BODY": 400,
    "BAD_REQUEST_PARAMETERS": 400,
    "REQUEST_TOO_LARGE": 413,
    "UNSUPPORTED_MEDIA_TYPE": 415,
    "THROTTLED": 429,
    "QUOTA_EXCEEDED": 429,
    "INTEGRATION_FAILURE": 502,
    "INTEGRATION_TIMEOUT": 504,
    "API_CONFIGURATION_ERROR": 500,
    "AUTHORIZER_CONFIGURATION_ERROR": 500,
    "AUTHORIZER_FAILURE": 500,
    "DEFAULT_4XX": None,  # keeps API Gateway's status; the body says only this
    "DEFAULT_5XX": None,
}
"""Gateway response type -> the status it answers (None: API Gateway's own, unchanged)."""

_DEFAULT_BODIES = {
    "DEFAULT_4XX": ("bad_request", "the request was refused"),
    "DEFAULT_5XX": GATEWAY_ERRORS[500],
}


REQUEST_ID = "$context.requestId"
"""API Gateway's request id in a response template (the one variable the bodies hold). A gateway
response's header can map only request parameters or a fixed value, so the id travels in the
body there, and in the `x-amzn-RequestId` header API Gateway puts on every answer (the same id the
app's `X-Request-Id` carries)."""


def body(response_type: str) -> dict[str, Any]:
    """The JSON body of one gateway response type: a fixed text and the request id."""
    status = RESPONSE_STATUS[response_type]
    code, message = GATEWAY_ERRORS[status] if status is not None else _DEFAULT_BODIES[response_type]
    return {"error": {"code": code, "message": message, "request_id": REQUEST_ID}}


def gateway_responses() -> dict[str, dict[str, Any]]:
    """SAM's `GatewayResponses` property: every type of `RESPONSE_STATUS`, a JSON body, no echo."""
    out: dict[str, dict[str, Any]] = {}
    for response_type, status in RESPONSE_STATUS.items():
        headers = {"Content-Type": "'application/json'"}
        if status == 401:
            headers["WWW-Authenticate"] = "'Bearer realm=\"assay\"'"
        response: dict[str, Any] = {
            "ResponseParameters": {"Headers": headers},
            "ResponseTemplates": {
                "application/json": json.dumps(body(response_type), separators=(",", ":"))
            },
        }
        if status is not None:
            response["StatusCode"] = str(status)
        out[response_type] = response
    return out


def add_gateway_responses(template: dict[str, Any]) -> dict[str, Any]:
    """`template` (Chalice's packaged SAM template) with `GatewayResponses` on its `RestAPI`.

    Raises:
        ValueError: the template has no `RestAPI` of type `AWS::Serverless::Api`.
    """
    api = template.get("Resources", {}).get("RestAPI")
    if not isinstance(api, dict) or api.get("Type") != "AWS::Serverless::Api":
        raise ValueError(
            "no RestAPI (AWS::Serverless::Api) in this template: give the sam.json "
            "`chalice package` wrote"
        )
    api.setdefault("Properties", {})["GatewayResponses"] = gateway_responses()
    return template


def main(argv: list[str]) -> int:
    """`python -m infra gateway-responses SAM_JSON`: add the Gateway Responses to the file in
    place."""
    import argparse

    parser = argparse.ArgumentParser(
        prog="python -m infra gateway-responses",
        description="Add assay's Gateway Responses to Chalice's packaged template.",
    )
    parser.add_argument("template", type=Path, help="the sam.json `chalice package` wrote")
    args = parser.parse_args(argv)
    template = json.loads(args.template.read_text())
    try:
        add_gateway_responses(template)
    except ValueError as exc:
        parser.error(str(exc))
    args.template.write_text(json.dumps(template, indent=2) + "\n")
    print(f"{args.template}: {len(RESPONSE_STATUS)} gateway responses on RestAPI")
    return 0
