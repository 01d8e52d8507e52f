"""The benchmarks' HTTP client of an embedded stack's API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx


def api_caller(
    stack: Any, org_id: str, user_id: str, *, timeout: float, keepalive_s: float = 5.0
) -> Callable[..., Any]:
    """`call(method, path, **httpx_kwargs) -> JSON body` for `user_id` of `org_id` on `stack`
    (an `EmbeddedStack`), signed with the stack's own secret; raises `httpx.HTTPStatusError` on
    4xx/5xx. `timeout` in seconds per request; `keepalive_s`: how long an idle connection is
    kept for the next request (a caller that must not connect anew at a given moment keeps it
    longer)."""
    from chalicelib.api.common import issue_token

    s = stack.settings
    token = issue_token(org_id, user_id, secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer)
    http = httpx.Client(
        base_url=stack.api_url,
        headers={"Authorization": f"Bearer {token}"},
        timeout=timeout,
        limits=httpx.Limits(keepalive_expiry=keepalive_s),
    )

    def call(method: str, path: str, **kw: Any) -> Any:
        r = http.request(method, path, **kw)
        r.raise_for_status()
        return r.json()

    return call
