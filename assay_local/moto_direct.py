"""Answering a DynamoDB or JSON-protocol SQS request with moto's own handler, without the Flask
app moto puts in front of it (`direct`): its routing, request context and CORS headers cost a
quarter of an SQS request (issue 12). `assay_local.moto_http` hands every request here first.
"""

from __future__ import annotations

import logging
from typing import Any

log = logging.getLogger(__name__)

_DISPATCH: dict[str, Any] = {}


def _dispatcher(service: str) -> Any:
    found = _DISPATCH.get(service)
    if found is None:
        if service == "dynamodb":
            from moto.dynamodb.responses import DynamoHandler

            found = DynamoHandler.dispatch
        else:
            from moto.sqs.responses import SQSResponse

            found = SQSResponse().dispatch
        _DISPATCH[service] = found
    return found


def direct(environ: dict[str, Any], start_response: Any, service: str) -> list[bytes] | None:
    """Answer a DynamoDB or JSON-protocol SQS request with moto's own handler, without the Flask
    app moto puts in front of it (its routing, request context and CORS headers cost a quarter
    of an SQS request), or None when the request is not one of those (the caller hands it to
    moto's app).

    The handler is the one moto's URL map names for `POST /` of that service
    (`DynamoHandler.dispatch`, `SQSResponse().dispatch`) with the arguments moto's Flask view
    gives it (the request, its raw URL, its headers).
    """
    if service not in ("dynamodb", "sqs") or environ.get("REQUEST_METHOD") != "POST":
        return None
    if environ.get("PATH_INFO") not in ("/", "") or "x-amz-json" not in environ.get(
        "CONTENT_TYPE", ""
    ):
        return None
    from moto.moto_server.werkzeug_app import BackendRequest

    request = BackendRequest(environ)
    try:
        result = _dispatcher(service)(request, request.raw_url, dict(request.headers))
    except Exception:  # noqa: BLE001 - moto's Flask app answers an unhandled error with 500
        log.exception("moto raised on %s", environ.get("HTTP_X_AMZ_TARGET"))
        body = b'{"__type":"InternalFailure","message":"moto raised"}'
        start_response(
            "500 INTERNAL SERVER ERROR",
            [("Content-Type", "application/x-amz-json-1.0"), ("Content-Length", str(len(body)))],
        )
        return [body]
    if len(result) == 3:
        status, headers, content = result
    else:
        status, headers, content = 200, {}, result
    payload = content.encode() if isinstance(content, str) else bytes(content or b"")
    out = [(str(k), str(v)) for k, v in headers.items() if k.lower() not in _DROPPED]
    out.append(("Content-Length", str(len(payload))))
    if not any(k.lower() == "content-type" for k, _ in out):
        out.append(("Content-Type", "application/x-amz-json-1.0"))
    code = int(status)
    start_response(f"{code} {_REASONS.get(code, 'UNKNOWN')}", out)
    return [payload]


_DROPPED = frozenset({"status", "content-length"})
"""Header keys moto's results carry that are not headers (`status`) or that we recompute."""

_REASONS = {200: "OK", 400: "BAD REQUEST", 403: "FORBIDDEN", 404: "NOT FOUND", 500: "ERROR"}
