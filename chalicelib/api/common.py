"""What every route shares: bearer-token identity, JSON bodies, and error → HTTP mapping.

Chalice's REST middleware never sees exceptions raised in views (DESIGN §11), so mapping is a
decorator on each view: `@api_view(bp)`.
"""

from __future__ import annotations

import functools
import json
import logging
import re
from collections.abc import Callable, Mapping
from typing import Any, TypeVar

from chalice import Blueprint, Response
from pydantic import BaseModel, ValidationError

from chalicelib import bootstrap
from chalicelib.api.views import estimate_view
from chalicelib.domain.identity import Identity
from chalicelib.errors import (
    AssayError,
    BudgetExceededError,
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    PayloadTooLargeError,
    UnauthenticatedError,
    invalid_input,
)
from chalicelib.services.estimates import Price

log = logging.getLogger(__name__)

STATUS: dict[type[AssayError], int] = {
    InvalidInputError: 400,
    UnauthenticatedError: 401,
    BudgetExceededError: 402,
    ForbiddenError: 403,
    NotFoundError: 404,
    ConflictError: 409,
    PayloadTooLargeError: 413,
}


def error_response(exc: AssayError) -> Response:
    """`{"error": {"code", "message", "field"?, ...details}}` with the mapped status; a detail that
    is a run's price (a start's 402) answers as the estimate does (`views.estimate_view`)."""
    status = next((s for cls, s in STATUS.items() if isinstance(exc, cls)), 400)
    body: dict[str, Any] = {"code": snake_code(type(exc).__name__), "message": exc.message}
    if exc.field:
        body["field"] = exc.field
    body.update(
        {k: estimate_view(v) if isinstance(v, Price) else v for k, v in exc.details.items()}
    )
    headers: dict[str, str | list[str]] = {"Content-Type": "application/json"}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="assay"'
    return Response(body={"error": body}, status_code=status, headers=headers)


def snake_code(name: str) -> str:
    """An error's code from its class or Chalice's name: `InvalidInputError` -> `invalid_input`,
    `UnsupportedMediaType` -> `unsupported_media_type` (the gateway's codes are written so too)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name.removesuffix("Error")).lower() or "error"


def shape_chalice_errors(event: Any, get_response: Callable[[Any], Response]) -> Response:
    """HTTP middleware: Chalice's own refusals (405 wrong method, 415 media type, its 500) in our
    shape.

    Chalice answers those before any view runs, as `{"Code", "Message"}`; every error body of
    the API is `{"error": {"code", "message"}}`.
    """
    response = get_response(event)
    body = response.body
    if response.status_code >= 400 and isinstance(body, dict) and set(body) == {"Code", "Message"}:
        error: dict[str, Any] = {
            "code": snake_code(str(body["Code"])),
            "message": str(body["Message"]),
        }
        if response.status_code == 415:  # Chalice names the type it got; say what to send
            error.update(
                message=f"{error['message']}: send the body as application/json",
                field="Content-Type",
            )
        response.body = {"error": error}
    return response


GATEWAY_ERRORS: dict[int, tuple[str, str]] = {
    400: ("bad_request", "the request could not be read"),
    401: ("unauthenticated", "missing or invalid Authorization: Bearer <token> header"),
    403: ("forbidden", "the request was refused"),
    404: ("not_found", "no route matches this path"),
    405: ("method_not_allowed", "this route does not take that method"),
    413: ("payload_too_large", "the request is larger than the API takes"),
    415: ("unsupported_media_type", "send the body as application/json"),
    429: ("throttled", "too many requests: slow down and try again"),
    500: ("internal", "internal error"),
    502: ("bad_gateway", "the service answered badly: try again"),
    504: ("timeout", "the request took longer than the API waits (29 s)"),
}
"""`(code, message)` of each error the gateway answers without a view (an unknown route, throttling,
a timeout...): the embedded stack's local gateway and API Gateway's Gateway Responses
(`infra.gateway`) answer these fixed texts, which never repeat anything of the request."""

HTTP_METHODS = ("GET", "POST", "PUT", "PATCH", "DELETE")


def answer_other_methods(app: Any) -> None:
    """Give every route a view for the methods it does not take, answering 405 in the API's shape
    with an `Allow` header; call once, after every blueprint is registered.

    On AWS, API Gateway answers a method a resource lacks itself, as it answers an unknown path
    (`MISSING_AUTHENTICATION_TOKEN`, which the Gateway Responses make a 404): with these views a
    wrong method is a 405 there too, as it is locally.
    """
    for i, (path, views) in enumerate(sorted(app.routes.items())):
        missing = [m for m in HTTP_METHODS if m not in views]
        if not missing:
            continue
        allow = ", ".join(sorted(views))

        def refuse(*_: Any, _allow: str = allow, **__: Any) -> Response:
            code, message = GATEWAY_ERRORS[405]
            return Response(
                body={"error": {"code": code, "message": f"{message}: it takes {_allow}"}},
                status_code=405,
                headers={"Content-Type": "application/json", "Allow": _allow},
            )

        app.route(path, methods=missing, content_types=["*/*"], name=f"method_not_allowed_{i}")(
            refuse
        )


def issue_token(
    org_id: str,
    user_id: str,
    *,
    secret: str,
    issuer: str = "assay",
    audience: str | None = None,
    ttl_seconds: int | None = None,
    now_s: int | None = None,
    permissions: list[str] | None = None,
) -> str:
    """A signed HS256 bearer token naming an organization (`org`) and user (`sub`), and optionally
    what they may do (`permissions`; without it, everything).

    It expires `ttl_seconds` after `now_s` (defaults: `ASSAY_TOKEN_TTL_SECONDS`, 8 h, from now); its
    audience defaults to `ASSAY_JWT_AUDIENCE` ("assay").
    """
    c = bootstrap.container()
    return c.tokens.issue(
        org_id,
        user_id,
        secret=secret,
        issuer=issuer,
        audience=c.settings.assay_jwt_audience if audience is None else audience,
        ttl_seconds=c.settings.assay_token_ttl_seconds if ttl_seconds is None else ttl_seconds,
        now_s=now_s,
        permissions=permissions,
    )


def identity_from(headers: Mapping[str, str]) -> Identity:
    """The caller named by the `Authorization: Bearer <jwt>` header (`adapters.tokens` verifies it).

    Raises:
        UnauthenticatedError: no header, not a bearer token, or a token that does not verify (the
            message says why, never repeating the token).
    """
    auth = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
    if not auth:
        raise UnauthenticatedError(
            "missing Authorization: Bearer <token> header", field="Authorization"
        )
    scheme, _, token = auth.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise UnauthenticatedError("Authorization must be 'Bearer <token>'", field="Authorization")
    return bootstrap.container().tokens.identify(token.strip())


MAX_JSON_DEPTH = 24
"""How deeply a request body's arrays and objects may nest: what is kept is stored inside items
DynamoDB nests at most 32 levels deep, and deeper JSON only serves to exhaust the stack."""


def json_depth(value: Any) -> int:
    """How many arrays and objects deep `value` nests (0 for a scalar), without recursion."""
    deepest, stack = 0, [(value, 1)]
    while stack:
        node, depth = stack.pop()
        if isinstance(node, dict | list):
            deepest = max(deepest, depth)
            stack.extend(
                (child, depth + 1) for child in (node.values() if isinstance(node, dict) else node)
            )
    return deepest


def json_body(bp: Blueprint) -> Any:
    """The request's JSON body.

    Raises:
        InvalidInputError: a missing or malformed body, or one nested deeper than `MAX_JSON_DEPTH`
            (field `body`).
    """
    raw = bp.current_request.raw_body
    if not raw:
        raise InvalidInputError("a JSON body is required", field="body")
    too_deep = InvalidInputError(
        f"the JSON body nests deeper than {MAX_JSON_DEPTH} levels", field="body"
    )
    try:
        body = json.loads(raw)
    except (ValueError, UnicodeDecodeError) as exc:
        raise InvalidInputError(f"malformed JSON: {exc}", field="body") from None
    except RecursionError:
        raise too_deep from None
    if json_depth(body) > MAX_JSON_DEPTH:
        raise too_deep
    return body


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], data: Any) -> M:
    """Validate `data` into `model`; the first problem becomes a 400 naming its field."""
    if not isinstance(data, dict):
        raise InvalidInputError("the body must be a JSON object", field="body")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_input(exc) from None


def query_param(bp: Blueprint, name: str, default: str | None = None) -> str | None:
    params: Mapping[str, str] = bp.current_request.query_params or {}
    return params.get(name, default)


def int_param(bp: Blueprint, name: str, default: int) -> int:
    raw = query_param(bp, name)
    if raw is None:
        return default
    try:
        return int(raw)
    except ValueError:
        raise InvalidInputError(f"{name} must be an integer", field=name) from None


F = TypeVar("F", bound=Callable[..., Any])


def api_view(bp: Blueprint, *, auth: bool = True) -> Callable[[F], F]:
    """Wrap a view: authenticate, call it with `(container, identity, **url_params)`, map errors.

    A view returns a JSON-able value (200), or a `(value, status)` tuple, or a Chalice Response.
    """

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                c = bootstrap.container()
                who = identity_from(bp.current_request.headers or {}) if auth else None
                empty = next(
                    (
                        name
                        for name, value in kwargs.items()
                        if isinstance(value, str) and not value
                    ),
                    None,
                )
                if empty is not None:
                    # `…/suites//results`: nothing has an empty id (and DynamoDB refuses empty
                    # keys).
                    raise NotFoundError(f"{empty} is empty", field=empty)
                result = fn(c, who, *args, **kwargs)
            except AssayError as exc:
                return error_response(exc)
            except Exception:  # noqa: BLE001 - never a bare 500 without a JSON body
                log.exception("unhandled error in %s", fn.__name__)
                return Response(
                    body={"error": {"code": "internal", "message": "internal error"}},
                    status_code=500,
                    headers={"Content-Type": "application/json"},
                )
            if isinstance(result, Response):
                return result
            if isinstance(result, tuple):
                body, status = result
                return Response(
                    body=body, status_code=status, headers={"Content-Type": "application/json"}
                )
            return result

        return wrapper  # type: ignore[return-value]

    return decorate
