"""What every route shares: bearer-token identity, JSON bodies, and error → HTTP mapping.

Chalice's REST middleware never sees exceptions raised in views, so mapping is a
decorator on each view: `@api_view(bp)`.
"""

from __future__ import annotations

import functools
import hmac
import logging
import re
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from typing import TYPE_CHECKING, Any, TypeVar
from urllib.parse import unquote

from chalice import Blueprint, Response
from pydantic import BaseModel, ConfigDict, ValidationError

from chalicelib import bootstrap, telemetry
from chalicelib.api.json_text import loads_bounded
from chalicelib.api.lazy import LazyModule
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import FORBIDDEN
from chalicelib.errors import (
    AssayError,
    BudgetExceededError,
    ConfigurationError,
    ConflictError,
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    PayloadTooLargeError,
    UnauthenticatedError,
    invalid_input,
)

if TYPE_CHECKING:
    from chalicelib.api import views
    from chalicelib.services import estimates
else:  # only an error carrying a price needs them (`chalicelib.api.lazy`)
    views = LazyModule("chalicelib.api.views")
    estimates = LazyModule("chalicelib.services.estimates")

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
    if exc.details:
        body.update(
            {
                k: views.estimate_view(v) if isinstance(v, estimates.Price) else v
                for k, v in exc.details.items()
            }
        )
    headers: dict[str, str | list[str]] = {"Content-Type": "application/json"}
    if status == 401:
        headers["WWW-Authenticate"] = 'Bearer realm="assay"'
    return Response(body={"error": body}, status_code=status, headers=headers)


def snake_code(name: str) -> str:
    """An error's code from its class or Chalice's name: `InvalidInputError` -> `invalid_input`,
    `UnsupportedMediaType` -> `unsupported_media_type` (the gateway's codes are written so too)."""
    return re.sub(r"(?<!^)(?=[A-Z])", "_", name.removesuffix("Error")).lower() or "error"


def request_id_of(request: Any) -> str:
    """The request's id: API Gateway's (`requestContext.requestId`, which the embedded stack's
    gateway gives too), or a new one where nothing gave any (Chalice's test client)."""
    context = getattr(request, "context", None) or {}
    given = context.get("requestId") if isinstance(context, dict) else None
    return str(given) if given else telemetry.new_request_id()


def answer_middleware(event: Any, get_response: Callable[[Any], Response]) -> Response:
    """HTTP middleware around every route: one invocation (`telemetry.invocation`: the request id
    is the log lines' `correlation_id`, what the request counted is flushed as it ends), Chalice's
    own refusals in the API's shape (`shape_chalice_errors`), and the request id on the answer:
    the `X-Request-Id` header on every response, and `error.request_id` in every error body."""
    request_id = request_id_of(event)
    c = bootstrap.container()
    with telemetry.invocation(
        c.settings,
        getattr(event, "lambda_context", None),
        metrics=c.metrics,
        correlation_id=request_id,
    ):
        response = shape_chalice_errors(get_response(event))
    return with_request_id(response, request_id)


def with_request_id(response: Response, request_id: str) -> Response:
    """`response` carrying `request_id`: its `X-Request-Id` header, and `request_id` in its error
    object when it is an error in the API's shape."""
    headers = dict(response.headers or {})
    headers[telemetry.REQUEST_ID_HEADER] = request_id
    response.headers = headers
    body = response.body
    if response.status_code >= 400 and isinstance(body, dict):
        error = body.get("error")
        if isinstance(error, dict):
            response.body = {**body, "error": {**error, "request_id": request_id}}
    return response


def shape_chalice_errors(response: Response) -> Response:
    """Chalice's own refusals (405 wrong method, 415 media type, its 500) in our shape.

    Chalice answers those before any view runs, as `{"Code", "Message"}`; every error body of
    the API is `{"error": {"code", "message"}}`.
    """
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

GATEWAY_MAX_BODY_BYTES = 10 * 1024 * 1024
"""Largest request body the gateway passes on (API Gateway's 10 MiB; the embedded stack's gateway
answers a larger one 413 before reading it)."""

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
    actor: str | None = None,
) -> str:
    """A signed HS256 bearer token naming an organization (`org`) and user (`sub`); with `actor`,
    an administrator signed in as that user. What they may do is their membership's
    (`services.access`), not the token's.

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
        actor=actor,
    )


def identity_from(headers: Mapping[str, str]) -> Identity:
    """The caller named by the `Authorization: Bearer <token or API key>` header, with what they
    may do now (`services.access.identify`: their membership's, not the token's).

    Raises:
        UnauthenticatedError: no header, not a bearer value, or one that does not verify (the
            message says why, never repeating it).
    """
    from chalicelib.services import access as access_service

    auth = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
    if not auth:
        raise UnauthenticatedError(
            "missing Authorization: Bearer <token> header", field="Authorization"
        )
    scheme, _, token = auth.partition(" ")
    if scheme.lower() != "bearer" or not token.strip():
        raise UnauthenticatedError("Authorization must be 'Bearer <token>'", field="Authorization")
    return access_service.identify(bootstrap.container(), token.strip())


OPERATOR = "operator"
"""The permission a 403 names when a tenant asks an operator route."""


def operator_from(headers: Mapping[str, str], key: str, what: str) -> None:
    """Check that the caller of an operator route is the operator: `Authorization: Bearer <key>`
    with the deployment's operator key (`ASSAY_OPERATOR_KEY`, compared in constant time).

    Raises:
        UnauthenticatedError: no bearer value, or one that is neither the key nor a token or API
            key that verifies (`identity_from`).
        ForbiddenError: a tenant's token or API key, whatever its role (permission `operator`), or
            no operator key set on this deployment.
    """
    given = bearer_of(headers)
    if key and given is not None and hmac.compare_digest(given.encode(), key.encode()):
        return
    identity_from(headers)  # a caller who is nobody is told so first (401)
    raise ForbiddenError(
        f"{what} is the operator's, who runs this deployment: no token or API key of an "
        "organization may, whatever its role"
        + ("" if key else " (and this deployment sets no operator key: ASSAY_OPERATOR_KEY)"),
        field="Authorization",
        permission=OPERATOR,
    )


def bearer_of(headers: Mapping[str, str]) -> str | None:
    """The token of an `Authorization: Bearer <token>` header, None without one."""
    auth = next((v for k, v in headers.items() if k.lower() == "authorization"), None)
    scheme, _, token = (auth or "").partition(" ")
    return token.strip() or None if scheme.lower() == "bearer" else None


Need = str | tuple[str, str]
"""What a route needs before its view runs: a permission across the organization
(`"runs:view"`), or one on the agent or dataset a path parameter names (`("agents:edit",
"agent_id")`): that resource must be visible (else 404, as another organization's) and the
permission held on it (else 403 naming it)."""

_KIND_OF_PARAM = {"agent_id": "agent", "dataset_id": "dataset"}


def check_needs(
    who: Identity, needs: tuple[Need, ...], params: Mapping[str, Any], what: str
) -> None:
    """Check a route's `needs` in order (docs/reference/access.md). Raises NotFoundError or
    ForbiddenError."""
    for need in needs:
        if isinstance(need, str):
            who.require(need, what)
        else:
            permission, param = need
            who.require_on(permission, _KIND_OF_PARAM[param], params[param], what, param)


MAX_BODY_BYTES = 1024 * 1024
"""Largest request body of a route, in bytes (1 MiB), unless the route says otherwise: a dataset
version and a recording take `MAX_RECORDING_BYTES` (5 MiB). A larger one is a 413 naming `body`
before it is parsed. API Gateway itself takes 10 MiB, a Lambda behind it 6 MB."""

MAX_PATH_ID_LENGTH = 200
"""Longest id in a URL path, in characters: no id assay keeps is longer (chosen ids are at most 64),
and a DynamoDB key part is at most 2 KiB."""


def json_body(bp: Blueprint) -> Any:
    """The request's JSON body (`loads_bounded`).

    Raises:
        InvalidInputError: a missing or malformed body, or one `loads_bounded` refuses (field
            `body`).
    """
    raw = bp.current_request.raw_body
    if not raw:
        raise InvalidInputError("a JSON body is required", field="body")
    return loads_bounded(raw)


M = TypeVar("M", bound=BaseModel)


def parse(model: type[M], data: Any) -> M:
    """Validate `data` into `model`; the first problem becomes a 400 naming its field."""
    if not isinstance(data, dict):
        raise InvalidInputError("the body must be a JSON object", field="body")
    try:
        return model.model_validate(data)
    except ValidationError as exc:
        raise invalid_input(exc) from None


def query_params(bp: Blueprint) -> dict[str, str]:
    """The request's query parameters, the last value of each (`?a=1&a=2` is `a=2`)."""
    params: Mapping[str, str] | None = bp.current_request.query_params
    return {name: params[name] for name in params} if params else {}


LEGACY_PATH_IDS = frozenset({"user_id"})
"""Path ids `check_path_ids` lets hold `#` or `/` (percent-encoded): a member's user id, since a
member stored before user ids were held to what a path can name (`access.user_id_problem`) may
hold either and must still be read, changed or removed. It is the whole tail of the member's key
(`u#<user_id>`), never joined before another part, and naming nobody is a 404."""


def check_path_ids(params: Mapping[str, Any]) -> None:
    """Refuse URL path ids nothing can be named by, before any store is asked.

    Raises:
        NotFoundError: an empty id (`…/suites//results`: nothing has one, and DynamoDB refuses
            empty keys), naming it.
        InvalidInputError: an id longer than `MAX_PATH_ID_LENGTH`, or containing `#` or `/`, also
            percent-encoded (no id does: the stores' keys join parts with `#`, so `a%23b` could
            otherwise run into another key's parts), naming it; but for `LEGACY_PATH_IDS`.
    """
    for name, value in params.items():
        if not isinstance(value, str):
            continue
        if not value:
            raise NotFoundError(f"{name} is empty", field=name)
        if len(value) > MAX_PATH_ID_LENGTH:
            raise InvalidInputError(
                f"{name} is longer than {MAX_PATH_ID_LENGTH} characters: no id is", field=name
            )
        # Chalice's local server passes `%23` on as it came; a gateway may decode it: either way
        # it spells `#` (no id holds a `%`).
        bad = [ch for ch in FORBIDDEN if ch in unquote(value)]
        if bad and name not in LEGACY_PATH_IDS:
            raise InvalidInputError(
                f"{name} must not contain {' or '.join(repr(ch) for ch in bad)}", field=name
            )


F = TypeVar("F", bound=Callable[..., Any])


class Query(BaseModel):
    """Query parameters of a route; a parameter the route does not take is ignored (a cache
    buster), one it takes is validated, and the first problem is a 400 naming it. Each field's
    docstring is its description in the OpenAPI document (`api.openapi.DocumentedFields`); the
    model is built on first use (`defer_build`, issue 12)."""

    model_config = ConfigDict(extra="ignore", frozen=True, defer_build=True)


@dataclass(frozen=True)
class Contract:
    """What a view takes: `api_view` checks a request against it, and `api.openapi` describes the
    route from it, so the document and the checks cannot tell different stories.

    Attributes:
        auth: whether a bearer token is required.
        body: the body's model, or None for a route that takes no body.
        body_required: False when an empty body stands for the model's defaults.
        parse_body: True: the view gets the validated model as `body`; False: it gets the JSON
            value (checked by `loads_bounded`) and validates it itself (`body` is then the model
            the service validates it with, documented only).
        query: the query parameters' model, passed to the view as `query`; None: none taken.
        max_body_bytes: larger bodies are a 413 naming `too_large_field`.
        too_large_field: the field a 413 names.
        raw_body: True: the view gets the body's bytes as `body` (its size checked) and reads
            them itself after what it checks first (`body` documents them).
        tool_token: True (with `auth` False): the view gets the `Authorization: Bearer` value as
            `token` (None without one), an eval attempt's tool gateway token that it checks
            itself; documented as the `toolToken` scheme.
        operator: True: the route is the operator's (`operator_from`): the view gets None as
            the identity; documented as the `operatorKey` scheme.
    """

    auth: bool = True
    body: type[BaseModel] | None = None
    body_required: bool = True
    parse_body: bool = True
    query: type[Query] | None = None
    max_body_bytes: int = MAX_BODY_BYTES
    too_large_field: str = "body"
    raw_body: bool = False
    tool_token: bool = False
    operator: bool = False


CONTRACT_ATTRIBUTE = "assay_contract"
"""The attribute of a view function (as Chalice keeps it) that holds its `Contract`."""


def _parse_query(model: type[Query], params: Mapping[str, str]) -> Query:
    try:
        return model.model_validate(params)
    except ValidationError as exc:
        raise invalid_input(exc) from None


def _request_body(bp: Blueprint, contract: Contract) -> Any:
    raw = bp.current_request.raw_body or b""
    if len(raw) > contract.max_body_bytes:
        raise PayloadTooLargeError(
            f"{contract.too_large_field}: a request to this route takes at most "
            f"{contract.max_body_bytes} bytes; this one has {len(raw)}",
            field=contract.too_large_field,
        )
    if contract.raw_body:
        return raw
    model = contract.body
    if model is None:
        return None
    if not raw and not contract.body_required:
        return model() if contract.parse_body else {}
    data = json_body(bp)
    return parse(model, data) if contract.parse_body else data


def _internal_error() -> Response:
    return Response(
        body={"error": {"code": "internal", "message": "internal error"}},
        status_code=500,
        headers={"Content-Type": "application/json"},
    )


_GERUNDS = {
    "get": "reading",
    "put": "setting",
    "set": "setting",
    "run": "running",
    "list": "listing",
}


def _what(view_name: str) -> str:
    """How a refusal names what was asked: the view's name in words, its verb as a gerund
    (`publish_version` -> "publishing version", `get_agent` -> "reading agent")."""
    verb, _, rest = view_name.partition("_")
    gerund = _GERUNDS.get(verb) or (verb[:-1] if verb.endswith("e") else verb) + "ing"
    return f"{gerund} {rest.replace('_', ' ')}".strip()


def api_view(
    bp: Blueprint,
    *,
    auth: bool = True,
    body: type[BaseModel] | None = None,
    body_required: bool = True,
    parse_body: bool = True,
    query: type[Query] | None = None,
    max_body_bytes: int = MAX_BODY_BYTES,
    too_large_field: str = "body",
    raw_body: bool = False,
    tool_token: bool = False,
    operator: bool = False,
    needs: tuple[Need, ...] = (),
) -> Callable[[F], F]:
    """Wrap a view: authenticate, check the path ids (`check_path_ids`), what the caller must hold
    (`needs`, `check_needs`), the query (`query`) and
    the body (`body`; see `Contract` for the arguments), call it with `(container, identity,
    **url_params, [query=...], [body=...])`, and map errors to the API's JSON error shape.

    A view returns a JSON-able value (200), or a `(value, status)` tuple, or a Chalice Response.
    A body over `max_body_bytes` is a 413; a body or query that does not validate is a 400 naming
    the field; anything unexpected is a 500 in the same shape (and logged), never a bare one.
    """
    contract = Contract(
        auth=auth,
        body=body,
        body_required=body_required,
        parse_body=parse_body,
        query=query,
        max_body_bytes=max_body_bytes,
        too_large_field=too_large_field,
        raw_body=raw_body,
        tool_token=tool_token,
        operator=operator,
    )

    def decorate(fn: F) -> F:
        @functools.wraps(fn)
        def wrapper(*args: Any, **kwargs: Any) -> Any:
            try:
                c = bootstrap.container()
                request = bp.current_request
                who = None
                if operator:
                    key = c.settings.assay_operator_key
                    operator_from(request.headers or {}, key, _what(fn.__name__))
                elif auth:
                    who = identity_from(request.headers or {})
                check_path_ids(kwargs)
                # Chalice hands path parameters on still percent-encoded (aws/chalice#511): the
                # view sees what the id is (`ana%40example.com` is ana@example.com).
                kwargs = {k: unquote(v) if isinstance(v, str) else v for k, v in kwargs.items()}
                if needs and who is not None:
                    check_needs(who, needs, kwargs, _what(fn.__name__))
                extra: dict[str, Any] = {}
                if contract.query is not None:
                    extra["query"] = _parse_query(contract.query, query_params(bp))
                parsed = _request_body(bp, contract)
                if contract.body is not None:
                    extra["body"] = parsed
                if contract.tool_token:
                    extra["token"] = bearer_of(request.headers or {})
                result = fn(c, who, *args, **kwargs, **extra)
            except ConfigurationError as exc:  # the operator's settings: logged, never shown
                log.error("%s cannot answer: %s", fn.__name__, exc.message)
                return _internal_error()
            except AssayError as exc:
                return error_response(exc)
            except Exception:  # noqa: BLE001 - never a bare 500 without a JSON body
                log.exception("unhandled error in %s", fn.__name__)
                return _internal_error()
            if isinstance(result, Response):
                return result
            if isinstance(result, tuple):
                result_body, status = result
                return Response(
                    body=result_body,
                    status_code=status,
                    headers={"Content-Type": "application/json"},
                )
            return result

        setattr(wrapper, CONTRACT_ATTRIBUTE, contract)
        wrapper.needs = needs  # type: ignore[attr-defined]
        return wrapper  # type: ignore[return-value]

    return decorate
