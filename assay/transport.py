"""The client's transport (issue 13, scope 2): one HTTP call to the assay API on httpx, the errors
it raises (`ApiError`, `ApiUnreachable`), and `@operation`, which names the route each client method
calls (`OPERATIONS`, checked against the OpenAPI document by `tests/unit/test_client_contract.py`).
The methods themselves live in one module per resource group (`assay.client_*`) on `ApiBase`;
`assay.client.AssayClient` puts them together."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any, Self, TypeVar
from urllib.parse import quote

import httpx

JSON = dict[str, Any]
F = TypeVar("F", bound=Callable[..., Any])

OPERATIONS: dict[tuple[str, str], str] = {}
"""`(METHOD, path template)` -> the method of `AssayClient` that calls it."""


def operation(method: str, path: str) -> Callable[[F], F]:
    """Name the route a client method calls (kept in `OPERATIONS`)."""

    def mark(fn: F) -> F:
        OPERATIONS[(method, path)] = fn.__name__
        return fn

    return mark


class ApiError(Exception):
    """The API answered `status` >= 400. `code`, `message` and `field` come from its error body
    (`{"error": {"code", "message", "field"?}}`), `request_id` from the body or the
    `X-Request-Id` header when the service gave one, `body` is the whole JSON (or None)."""

    def __init__(
        self,
        method: str,
        path: str,
        status: int,
        body: Any,
        request_id: str | None = None,
    ) -> None:
        error = body.get("error") if isinstance(body, dict) else None
        error = error if isinstance(error, dict) else {}
        self.method, self.path, self.status, self.body = method, path, status, body
        self.code: str = str(error.get("code") or f"http_{status}")
        self.message: str = str(error.get("message") or (body if isinstance(body, str) else ""))
        self.field: str | None = error.get("field")
        self.error: dict[str, Any] = error
        self.request_id: str | None = error.get("request_id") or request_id
        where = f" (field {self.field})" if self.field else ""
        rid = f" [request {self.request_id}]" if self.request_id else ""
        super().__init__(f"{method} {path} -> {status} {self.code}: {self.message}{where}{rid}")


class ApiUnreachable(Exception):
    """No answer from the API (refused, timed out, bad URL): `url` the API's base URL asked,
    `cause` the connection's own error (e.g. `[Errno 111] Connection refused`)."""

    def __init__(self, message: str, *, url: str = "", cause: str = "") -> None:
        super().__init__(message)
        self.url = url
        self.cause = cause or message


PATH_SAFE = "!$&'()*+,;=:@"
"""What a path segment holds as it is (RFC 3986 `pchar`): a user id such as `ana+ci@example.com`
goes as written, because Chalice hands a path parameter to its route still percent-encoded,
locally and behind API Gateway (aws/chalice#511): `ana%40example.com` would name nobody."""


def _path(template: str, **ids: Any) -> str:
    """`template` with each `{name}` replaced by its id, quoted as one path segment (`PATH_SAFE`
    left as it is)."""
    out = template
    for name, value in ids.items():
        out = out.replace("{" + name + "}", quote(str(value), safe=PATH_SAFE))
    return out


def _fields(**values: Any) -> JSON:
    """The fields given (None left out)."""
    return {k: v for k, v in values.items() if v is not None}


class ApiBase:
    """One HTTP call to the assay API at `base_url` as `token` (see `AssayClient`)."""

    def __init__(
        self,
        base_url: str,
        token: str,
        *,
        timeout_s: float = 60.0,
        transport: httpx.BaseTransport | None = None,
    ) -> None:
        self.base_url = base_url.rstrip("/")
        self._http = httpx.Client(
            base_url=self.base_url,
            timeout=timeout_s,
            headers={"Authorization": f"Bearer {token}", "User-Agent": "assay-client/0.1"},
            transport=transport,
        )

    def close(self) -> None:
        """Close the connection pool."""
        self._http.close()

    def __enter__(self) -> Self:
        return self

    def __exit__(self, *_: object) -> None:
        self.close()

    def request(
        self, method: str, path: str, *, json: Any = None, params: JSON | None = None
    ) -> Any:
        """One API call; the answer's JSON (None for an empty answer).

        Raises:
            ApiError: the API answered 400 or above.
            ApiUnreachable: no answer.
        """
        try:
            resp = self._http.request(method, path, json=json, params=params or None)
        except httpx.HTTPError as exc:
            raise ApiUnreachable(
                f"{method} {self.base_url}{path}: {exc}", url=self.base_url, cause=str(exc)
            ) from None
        body: Any = None
        if resp.content:
            try:
                body = resp.json()
            except ValueError:
                body = resp.text
        if resp.status_code >= 400:
            raise ApiError(method, path, resp.status_code, body, resp.headers.get("x-request-id"))
        return body

    def _json(
        self, method: str, path: str, *, json: Any = None, params: JSON | None = None
    ) -> JSON:
        """`request` for the routes that answer a JSON object."""
        body = self.request(method, path, json=json, params=params)
        return body if isinstance(body, dict) else {"value": body}

    # --- the document -----------------------------------------------------------------------

    @operation("GET", "/openapi.json")
    def openapi(self) -> JSON:
        """The OpenAPI 3.1 document of the API."""
        return self._json("GET", "/openapi.json")
