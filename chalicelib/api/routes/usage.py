"""Routes of agent runs and usage (docs/reference/usage.md)."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalicelib.api.common import api_view
from chalicelib.api.lazy import LazyModule
from chalicelib.api.query_schemas import AgentRunHistoryQuery, UsageQuery
from chalicelib.api.routes.base import bp
from chalicelib.api.schemas import UsageReport

if TYPE_CHECKING:
    from chalicelib.services import usage as usage_service
else:  # imported by the first request that needs it (`chalicelib.api.lazy`)
    usage_service = LazyModule("chalicelib.services.usage")


@bp.route("/api/v1/usage/runs", methods=["POST"])
@api_view(bp, body=UsageReport, needs=("settings:manage",))
def report_usage(c, who, body):
    return usage_service.report(c, who, body.model_dump()), 200


@bp.route("/api/v1/usage", methods=["GET"])
@api_view(bp, query=UsageQuery, needs=("runs:view",))
def month_usage(c, who, query):
    return usage_service.month_usage(c, who, query.month)


@bp.route("/api/v1/agents/{agent_id}/runs", methods=["GET"])
@api_view(bp, query=AgentRunHistoryQuery, needs=("runs:view", ("agents:view", "agent_id")))
def agent_runs(c, who, agent_id, query):
    return usage_service.history(
        c,
        who,
        agent_id,
        surface=query.surface,
        exclude_surface=query.exclude_surface,
        before=query.before,
        limit=query.limit,
    )


@bp.route("/api/v1/runs", methods=["GET"])
@api_view(bp, query=AgentRunHistoryQuery, needs=("runs:view",))
def activity(c, who, query):
    return usage_service.activity(
        c,
        who,
        surface=query.surface,
        exclude_surface=query.exclude_surface,
        before=query.before,
        limit=query.limit,
    )


@bp.route("/api/v1/runs/{agent_run_id}", methods=["GET"])
@api_view(bp, needs=("runs:view",))
def agent_run(c, who, agent_run_id):
    return usage_service.get(c, who, agent_run_id)
