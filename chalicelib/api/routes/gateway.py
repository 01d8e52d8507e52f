"""Routes of the tool gateway (docs/guides/tools.md): where an `http` or `lambda` agent calls its
tools during an eval attempt. No person's token: the bearer is the attempt's `tools_token`, which
opens that attempt's tools only, while it is asked."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalice import Response

from chalicelib.api.common import api_view
from chalicelib.api.json_text import loads_bounded
from chalicelib.api.lazy import LazyModule
from chalicelib.api.routes.base import bp
from chalicelib.api.schemas import ToolArguments
from chalicelib.errors import InvalidInputError

if TYPE_CHECKING:
    from chalicelib.services import gateway as gateway_service
else:  # imported by the first request that needs it (`chalicelib.api.lazy`)
    gateway_service = LazyModule("chalicelib.services.gateway")

MAX_ARGUMENTS_BYTES = 256 * 1024
"""The largest arguments one call takes, as JSON in bytes (256 KiB); a larger body is a 413 naming
`arguments`."""


@bp.route("/api/v1/gateway/{org_id}/{run_id}/{session_id}/tools/{tool_name}", methods=["POST"])
@api_view(
    bp,
    auth=False,
    tool_token=True,
    body=ToolArguments,
    body_required=False,
    raw_body=True,
    max_body_bytes=MAX_ARGUMENTS_BYTES,
    too_large_field="arguments",
)
def call_tool(c, who, org_id, run_id, session_id, tool_name, token, body):
    """Call one of an eval attempt's tools with the attempt's tools_token: the call is decided by
    the isolation rule, made if allowed, and kept on the attempt."""
    session = gateway_service.authenticate(c, org_id, run_id, session_id, token)
    arguments: object = {}
    unreadable: str | None = None
    try:
        arguments = loads_bounded(body) if body else {}
    except InvalidInputError as exc:
        unreadable = exc.message
    return gateway_service.call_in(
        c, session, tool_name, arguments, unreadable=unreadable
    ).for_agent()


@bp.route("/api/v1/gateway/{org_id}/{run_id}/{session_id}/mcp", methods=["POST"])
@api_view(
    bp,
    auth=False,
    tool_token=True,
    body=ToolArguments,
    body_required=False,
    raw_body=True,
    max_body_bytes=MAX_ARGUMENTS_BYTES,
    too_large_field="message",
)
def call_tool_mcp(c, who, org_id, run_id, session_id, token, body):
    """The eval attempt's tools as an MCP server (streamable HTTP, JSON responses): initialize,
    tools/list, tools/call; each call decided, made and kept as a call to its tools URL is."""
    session = gateway_service.authenticate(c, org_id, run_id, session_id, token)
    status, message, headers = gateway_service.mcp_answer(c, session, body or b"")
    return Response(
        body=message if message is not None else "",
        status_code=status,
        headers={"Content-Type": "application/json", **headers},
    )
