"""The case payload an `http` or `lambda` agent is asked with (docs/reference/runtimes.md): the
case (`CaseRequest`), and during an eval attempt with a tool gateway (docs/guides/tools.md) where
the agent calls its tools::

    {"run_id": ..., "case_id": ..., "attempt": 1, "input": ..., "history": [...],
     "metadata": {...},
     "tools_url": "https://assay.example.com/api/v1/gateway/<org>/<run>/<session>/tools",
     "tools_token": "<bearer token of this attempt>",
     "tools_mcp_url": "https://assay.example.com/api/v1/gateway/<org>/<run>/<session>/mcp"}

The token is a credential of this attempt alone: nothing the runtimes keep or raise carries it
(`without_token`).
"""

from __future__ import annotations

from typing import Any

from chalicelib.domain.models import CaseRequest
from chalicelib.services.ports import AskContext

TOKEN_PLACEHOLDER = "[REDACTED:tool_token]"
"""What a gateway token is replaced by wherever it would be kept."""


def case_payload(request: CaseRequest, ctx: AskContext) -> dict[str, Any]:
    """The JSON the agent is sent: the case, plus `tools_url`, `tools_token` and `tools_mcp_url`
    when `ctx` carries the attempt's tool gateway."""
    payload = request.model_dump(mode="json")
    if ctx.gateway is not None:
        payload["tools_url"] = ctx.gateway.url
        payload["tools_token"] = ctx.gateway.token
        payload["tools_mcp_url"] = ctx.gateway.mcp_url
    return payload


def without_token(exc: BaseException, ctx: AskContext) -> None:
    """Replace the attempt's gateway token in `exc`'s message, in place (an agent that echoes its
    payload back in an error)."""
    if ctx.gateway is not None and ctx.gateway.token:
        token = ctx.gateway.token
        exc.args = tuple(
            a.replace(token, TOKEN_PLACEHOLDER) if isinstance(a, str) else a for a in exc.args
        )
