"""The benchmarks' HTTP client of an embedded stack's API."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import httpx


def api_caller(stack: Any, org_id: str, user_id: str, *, timeout: float) -> Callable[..., Any]:
    """`call(method, path, **httpx_kwargs) -> JSON body` for `user_id` of `org_id` on `stack`
    (an `EmbeddedStack`), signed with the stack's own secret; raises `httpx.HTTPStatusError` on
    4xx/5xx. `timeout` in seconds per request."""
    from chalicelib.api.common import issue_token

    s = stack.settings
    token = issue_token(org_id, user_id, secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer)
    http = httpx.Client(
        base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=timeout
    )

    def call(method: str, path: str, **kw: Any) -> Any:
        r = http.request(method, path, **kw)
        r.raise_for_status()
        return r.json()

    return call
