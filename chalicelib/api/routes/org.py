"""Routes of what the organization sets: notifications, budgets, judges."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chalicelib.api.common import api_view
from chalicelib.api.lazy import LazyModule
from chalicelib.api.query_schemas import NotificationsQuery
from chalicelib.api.routes.base import bp, path_version
from chalicelib.api.schemas import CreateJudge, EmailSettings, SetBudget, SetOrgLimits
from chalicelib.domain.judge_rules import JudgeSpec

if TYPE_CHECKING:
    from chalicelib.api import views
    from chalicelib.services import budgets as budget_service
    from chalicelib.services import judges as judge_service
    from chalicelib.services import notifications as notification_service
    from chalicelib.services import organizations as organization_service
else:  # imported by the first request that needs each (`chalicelib.api.lazy`)
    views = LazyModule("chalicelib.api.views")
    budget_service = LazyModule("chalicelib.services.budgets")
    judge_service = LazyModule("chalicelib.services.judges")
    notification_service = LazyModule("chalicelib.services.notifications")
    organization_service = LazyModule("chalicelib.services.organizations")


# --- notifications ---------------------------------------------------------------------------


@bp.route("/api/v1/notifications", methods=["GET"])
@api_view(bp, query=NotificationsQuery)
def list_notifications(c, who, query):
    notices = notification_service.list_for(c, who, unread=query.unread == "true")
    return {"notifications": [views.notification_view(n) for n in notices]}


@bp.route("/api/v1/notifications/{notification_id}/read", methods=["POST"])
@api_view(bp)
def read_notification(c, who, notification_id):
    notification_service.mark_read(c, who, notification_id)
    return {"notification_id": notification_id, "read": True}


@bp.route("/api/v1/notifications/settings", methods=["PUT"])
@api_view(bp, body=EmailSettings)
def notification_settings(c, who, body):
    return views.email_setting_view(notification_service.set_email(c, who, body.email))


# --- budgets ---------------------------------------------------------------------------------


@bp.route("/api/v1/budget", methods=["GET"])
@api_view(bp, needs=("runs:view",))
def get_org_budget(c, who):
    return views.budget_view(budget_service.org_budget(c, who))


@bp.route("/api/v1/budget", methods=["PUT"])
@api_view(bp, body=SetBudget, needs=("settings:manage",))
def set_org_budget(c, who, body):
    return views.budget_view(budget_service.set_org_budget(c, who, body.monthly_usd))


@bp.route("/api/v1/agents/{agent_id}/budget", methods=["GET"])
@api_view(bp, needs=(("agents:view", "agent_id"),))
def get_agent_budget(c, who, agent_id):
    return views.budget_view(budget_service.agent_budget(c, who, agent_id))


@bp.route("/api/v1/agents/{agent_id}/budget", methods=["PUT"])
@api_view(bp, body=SetBudget, needs=(("agents:edit", "agent_id"),))
def set_agent_budget(c, who, agent_id, body):
    return views.budget_view(budget_service.set_agent_budget(c, who, agent_id, body.monthly_usd))


# --- the operator's --------------------------------------------------------------------------


@bp.route("/api/v1/organizations/{org_id}/limits", methods=["PUT"])
@api_view(bp, body=SetOrgLimits, operator=True)
def set_organization_limits(c, who, org_id, body):
    """Set one organization's concurrency limit, or remove it (the operator's only)."""
    limits = organization_service.set_concurrency(c, org_id, body.concurrency)
    return _limits_view(limits)


def _limits_view(limits: organization_service.OrgLimits) -> dict[str, Any]:
    """`{org_id, concurrency (its own limit, None: it follows the default), default_concurrency
    (EVAL_ORG_CONCURRENCY now), effective_concurrency (what the next claim is held to), in_flight,
    started (tasks the change started at once)}`."""
    return {
        "org_id": limits.org_id,
        "concurrency": limits.own,
        "default_concurrency": limits.default,
        "effective_concurrency": limits.effective,
        "in_flight": limits.in_flight,
        "started": limits.started,
    }


# --- judges ----------------------------------------------------------------------------------


@bp.route("/api/v1/judges", methods=["POST"])
@api_view(bp, body=CreateJudge, needs=("datasets:edit",))
def create_judge(c, who, body):
    return views.judge_view(
        judge_service.create(c, who, name=body.name, judge_id=body.judge_id)
    ), 201


@bp.route("/api/v1/judges/{judge_id}", methods=["GET"])
@api_view(bp, needs=("datasets:view",))
def get_judge(c, who, judge_id):
    return {
        **views.judge_view(c.judges.get(who.org_id, judge_id)),
        "versions": [views.judge_version_view(r) for r in c.judges.versions(who.org_id, judge_id)],
    }


@bp.route("/api/v1/judges/{judge_id}/versions", methods=["POST"])
@api_view(bp, body=JudgeSpec, parse_body=False, needs=("datasets:edit",))
def publish_judge(c, who, judge_id, body):
    return views.judge_version_view(judge_service.publish(c, who, judge_id, body)), 201


@bp.route("/api/v1/judges/{judge_id}/versions/{version}", methods=["GET"])
@api_view(bp, needs=("datasets:view",))
def get_judge_version(c, who, judge_id, version):
    return views.judge_version_view(
        c.judges.get(who.org_id, judge_id, path_version(version), field="version")
    )
