"""Every HTTP route of assay. Handlers parse, call one service, shape the response.

The services and the views are imported by the first request that needs each
(`chalicelib.api.lazy`): the API function starts with the routes, their bodies' schemas and
little else (issue 12).
"""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalice import Blueprint, Response

from chalicelib.api.common import answer_middleware, api_view
from chalicelib.api.lazy import LazyModule
from chalicelib.api.schemas import (
    AddDatasetVersion,
    AddMember,
    AgentRunsQuery,
    AgentSummaries,
    AnswerQuery,
    CasesQuery,
    ChangeMember,
    ChartQuery,
    ComparisonQuery,
    CreateAgent,
    CreateApiKey,
    CreateDataset,
    CreateEnvironment,
    CreateEvaluation,
    CreateJudge,
    CreateModelProfile,
    DatasetCasesQuery,
    EmailSettings,
    EventsQuery,
    GradeAgain,
    NotificationsQuery,
    Page,
    Promote,
    Publish,
    PutGrant,
    PutSecret,
    Rescore,
    ResultsQuery,
    SetBudget,
    StartEvaluationRun,
    StartRun,
    SuiteBody,
    UpdateDraft,
    UpdateEvaluation,
    UploadRecording,
)
from chalicelib.domain.enums import PromotionStatus
from chalicelib.domain.ids import MAX_RECORDING_BYTES
from chalicelib.domain.judge_rules import JudgeSpec
from chalicelib.domain.limits import MAX_VERSION
from chalicelib.errors import InvalidInputError, NotFoundError

if TYPE_CHECKING:
    from chalicelib.api import views
    from chalicelib.services import access as access_service
    from chalicelib.services import agents as agent_service
    from chalicelib.services import answers as answer_service
    from chalicelib.services import budgets as budget_service
    from chalicelib.services import charts as chart_service
    from chalicelib.services import datasets as dataset_service
    from chalicelib.services import deletion as deletion_service
    from chalicelib.services import environments as environment_service
    from chalicelib.services import evaluations as evaluation_service
    from chalicelib.services import grading as grading_service
    from chalicelib.services import judges as judge_service
    from chalicelib.services import model_profiles as profile_service
    from chalicelib.services import notifications as notification_service
    from chalicelib.services import promotions as promotion_service
    from chalicelib.services import recordings as recording_service
    from chalicelib.services import runs as run_service
    from chalicelib.services import secrets as secret_service
    from chalicelib.services import suites as suite_service
    from chalicelib.services import summaries as summary_service
else:  # imported by the first request that needs each (`chalicelib.api.lazy`)
    views = LazyModule("chalicelib.api.views")
    access_service = LazyModule("chalicelib.services.access")
    agent_service = LazyModule("chalicelib.services.agents")
    answer_service = LazyModule("chalicelib.services.answers")
    budget_service = LazyModule("chalicelib.services.budgets")
    chart_service = LazyModule("chalicelib.services.charts")
    dataset_service = LazyModule("chalicelib.services.datasets")
    deletion_service = LazyModule("chalicelib.services.deletion")
    environment_service = LazyModule("chalicelib.services.environments")
    evaluation_service = LazyModule("chalicelib.services.evaluations")
    grading_service = LazyModule("chalicelib.services.grading")
    judge_service = LazyModule("chalicelib.services.judges")
    profile_service = LazyModule("chalicelib.services.model_profiles")
    notification_service = LazyModule("chalicelib.services.notifications")
    promotion_service = LazyModule("chalicelib.services.promotions")
    recording_service = LazyModule("chalicelib.services.recordings")
    run_service = LazyModule("chalicelib.services.runs")
    secret_service = LazyModule("chalicelib.services.secrets")
    suite_service = LazyModule("chalicelib.services.suites")
    summary_service = LazyModule("chalicelib.services.summaries")

bp = Blueprint(__name__)

SUITE_CHANGE = (("agents:edit", "agent_id"), ("agents:run", "agent_id"))
"""Saving, changing, pausing or running a suite (seed 004 "Access"); the service then checks
`datasets:run` on its dataset, `runs:view`, and that a person asks, not an API key."""
AGENT_RUNS = ("runs:view", ("agents:view", "agent_id"))
"""Reading an agent's runs or suites."""
bp.register_middleware(answer_middleware, "http")


# --- the contract ----------------------------------------------------------------------------


@bp.route("/openapi.json", methods=["GET"])
@api_view(bp, auth=False)
def openapi_document(c, who):
    """The OpenAPI 3.1 document of every route (public: it holds no tenant's data)."""
    from chalicelib.api import openapi  # built on the first request, not at a cold start

    return openapi.document(bp.current_app)


# --- access: who asks, members, grants, API keys (seed 004 "Access") -----------------------------


@bp.route("/api/v1/me", methods=["GET"])
@api_view(bp)
def get_me(c, who):
    """Who this request is resolved as, and what they may do now."""
    return views.me_view(who, c.members.get(who.org_id, who.user_id))


@bp.route("/api/v1/members", methods=["GET"])
@api_view(bp)
def list_members(c, who):
    return {"members": [views.member_view(m) for m in access_service.list_members(c, who)]}


@bp.route("/api/v1/members", methods=["POST"])
@api_view(bp, body=AddMember)
def add_member(c, who, body):
    return views.member_view(access_service.add_member(c, who, body.user_id, body.role)), 201


@bp.route("/api/v1/members/{user_id}", methods=["GET"])
@api_view(bp)
def get_member(c, who, user_id):
    who.require("members:manage", "reading a member")
    found = c.members.get(who.org_id, user_id)
    if found is None:
        raise NotFoundError(f"{user_id} is not a member", field="user_id")
    return views.member_view(found)


@bp.route("/api/v1/members/{user_id}", methods=["PATCH"])
@api_view(bp, body=ChangeMember)
def change_member(c, who, user_id, body):
    return views.member_view(access_service.change_role(c, who, user_id, body.role))


@bp.route("/api/v1/members/{user_id}", methods=["DELETE"])
@api_view(bp)
def remove_member(c, who, user_id):
    access_service.remove_member(c, who, user_id)
    return {"user_id": user_id, "deleted": True}


@bp.route("/api/v1/members/{user_id}/grants/{kind}/{resource_id}", methods=["PUT"])
@api_view(bp, body=PutGrant)
def put_grant(c, who, user_id, kind, resource_id, body):
    member = access_service.set_grant(c, who, user_id, kind, resource_id, body.permissions)
    return views.member_view(member)


@bp.route("/api/v1/members/{user_id}/grants/{kind}/{resource_id}", methods=["DELETE"])
@api_view(bp)
def delete_grant(c, who, user_id, kind, resource_id):
    return views.member_view(access_service.remove_grant(c, who, user_id, kind, resource_id))


@bp.route("/api/v1/api-keys", methods=["POST"])
@api_view(bp, body=CreateApiKey)
def create_api_key(c, who, body):
    """Issue an API key; its `key` (the bearer value) is shown in this answer only."""
    key, bearer = access_service.create_api_key(c, who, body.name, body.scopes)
    return {**views.api_key_view(key), "key": bearer}, 201


@bp.route("/api/v1/api-keys", methods=["GET"])
@api_view(bp)
def list_api_keys(c, who):
    return {"api_keys": [views.api_key_view(k) for k in access_service.list_api_keys(c, who)]}


@bp.route("/api/v1/api-keys/{key_id}", methods=["DELETE"])
@api_view(bp)
def revoke_api_key(c, who, key_id):
    return views.api_key_view(access_service.revoke_api_key(c, who, key_id))


# --- agents ----------------------------------------------------------------------------------


@bp.route("/api/v1/agents", methods=["POST"])
@api_view(bp, body=CreateAgent, needs=("agents:edit",))
def create_agent(c, who, body):
    row = agent_service.create_agent(c, who, name=body.name, spec=body.spec, agent_id=body.agent_id)
    return views.agent_view(row), 201


@bp.route("/api/v1/agents", methods=["GET"])
@api_view(bp)
def list_agents(c, who):
    return {
        "agents": [
            views.agent_view(r, with_draft=_edits(who, r.agent_id))
            for r in c.agents.list(who.org_id)
            if who.sees("agent", r.agent_id)
        ]
    }


@bp.route("/api/v1/agents/{agent_id}", methods=["GET"])
@api_view(bp, needs=(("agents:view", "agent_id"),))
def get_agent(c, who, agent_id):
    return views.agent_view(c.agents.get(who.org_id, agent_id), with_draft=_edits(who, agent_id))


def _edits(who, agent_id: str) -> bool:
    return who.may("agents:edit", f"agent:{agent_id}")


@bp.route("/api/v1/agents/{agent_id}", methods=["DELETE"])
@api_view(bp)
def delete_agent(c, who, agent_id):
    """Delete an agent and everything of it: runs, suites, evaluations, promotions... (409 while
    one of its runs is queued or running)."""
    gone = deletion_service.delete_agent(c, who, agent_id)
    return {"agent_id": agent_id, "deleted": True, **views.deleted_view(gone)}


@bp.route("/api/v1/agents/{agent_id}/draft", methods=["GET"])
@api_view(bp, needs=(("agents:edit", "agent_id"),))
def get_draft(c, who, agent_id):
    return views.agent_view(c.agents.get(who.org_id, agent_id))["draft"]


@bp.route("/api/v1/agents/{agent_id}/draft", methods=["PUT"])
@api_view(bp, body=UpdateDraft, needs=(("agents:edit", "agent_id"),))
def update_draft(c, who, agent_id, body):
    row = agent_service.update_draft(c, who, agent_id, spec=body.spec, name=body.name)
    return views.agent_view(row)


@bp.route("/api/v1/agents/{agent_id}/versions", methods=["POST"])
@api_view(bp, body=Publish, body_required=False, needs=(("agents:edit", "agent_id"),))
def publish_version(c, who, agent_id, body):
    row, created = agent_service.publish(c, who, agent_id, version=body.version)
    return {**views.agent_version_view(row), "created": created}, 201 if created else 200


@bp.route("/api/v1/agents/{agent_id}/versions", methods=["GET"])
@api_view(bp, needs=(("agents:view", "agent_id"),))
def list_versions(c, who, agent_id):
    return {
        "versions": [
            views.agent_version_view(r) for r in agent_service.list_versions(c, who, agent_id)
        ]
    }


@bp.route("/api/v1/agents/{agent_id}/versions/{version}", methods=["GET"])
@api_view(bp, needs=(("agents:view", "agent_id"),))
def get_version(c, who, agent_id, version):
    return views.agent_version_view(agent_service.get_version(c, who, agent_id, _version(version)))


def _is_number(text: str) -> bool:
    """ASCII digits only: `str.isdigit` also takes "²", which `int` refuses."""
    return text.isascii() and text.isdigit()


def _version(text: str) -> int:
    """A version number in a path: 1 to `MAX_VERSION`; else a 400 naming `version` (a number
    beyond what the stores keep would otherwise reach DynamoDB)."""
    if not _is_number(text) or len(text) > 12 or not 1 <= int(text) <= MAX_VERSION:
        raise InvalidInputError(
            f"version must be an integer from 1 to {MAX_VERSION}", field="version"
        )
    return int(text)


# --- model profiles --------------------------------------------------------------------------


@bp.route("/api/v1/model-profiles", methods=["POST"])
@api_view(bp, body=CreateModelProfile, needs=("agents:edit",))
def create_model_profile(c, who, body):
    return views.model_profile_view(profile_service.create(c, who, **body.model_dump())), 201


@bp.route("/api/v1/model-profiles", methods=["GET"])
@api_view(bp, needs=("agents:view",))
def list_model_profiles(c, who):
    return {
        "model_profiles": [views.model_profile_view(r) for r in c.model_profiles.list(who.org_id)]
    }


@bp.route("/api/v1/model-profiles/{model_profile_id}", methods=["GET"])
@api_view(bp, needs=("agents:view",))
def get_model_profile(c, who, model_profile_id):
    return views.model_profile_view(c.model_profiles.get(who.org_id, model_profile_id))


@bp.route("/api/v1/model-profiles/{model_profile_id}", methods=["DELETE"])
@api_view(bp, needs=("agents:edit",))
def delete_model_profile(c, who, model_profile_id):
    profile_service.delete(c, who, model_profile_id)
    return {"model_profile_id": model_profile_id, "deleted": True}


# --- environments and promotions ---------------------------------------------------------------


@bp.route("/api/v1/environments", methods=["POST"])
@api_view(bp, body=CreateEnvironment, needs=("settings:manage",))
def create_environment(c, who, body):
    row = environment_service.create(
        c, who, environment_id=body.environment_id, name=body.name, default=body.default
    )
    return views.environment_view(row, environment_service.default_id(c, who.org_id)), 201


@bp.route("/api/v1/environments", methods=["GET"])
@api_view(bp, needs=("agents:view",))
def list_environments(c, who):
    default = environment_service.default_id(c, who.org_id)
    return {
        "environments": [
            views.environment_view(e, default) for e in c.environments.list(who.org_id)
        ]
    }


@bp.route("/api/v1/environments/{environment_id}", methods=["GET"])
@api_view(bp, needs=("agents:view",))
def get_environment(c, who, environment_id):
    return views.environment_view(
        c.environments.get(who.org_id, environment_id),
        environment_service.default_id(c, who.org_id),
    )


@bp.route("/api/v1/environments/{environment_id}", methods=["DELETE"])
@api_view(bp, needs=("settings:manage",))
def delete_environment(c, who, environment_id):
    environment_service.delete(c, who, environment_id)
    return {"environment_id": environment_id, "deleted": True}


@bp.route("/api/v1/agents/{agent_id}/promotions", methods=["POST"])
@api_view(bp, body=Promote, needs=(("agents:edit", "agent_id"),))
def promote(c, who, agent_id, body):
    row = promotion_service.promote(c, who, agent_id, body.environment_id, body.version)
    return views.promotion_view(row), 202 if row.status == PromotionStatus.WAITING else 201


@bp.route("/api/v1/agents/{agent_id}/promotions", methods=["GET"])
@api_view(bp, needs=(("agents:view", "agent_id"),))
def list_promotions(c, who, agent_id):
    return {
        "promotions": [
            views.promotion_view(p) for p in promotion_service.list_promotions(c, who, agent_id)
        ]
    }


@bp.route("/api/v1/agents/{agent_id}/promotions/{promotion_id}", methods=["GET"])
@api_view(bp, needs=(("agents:view", "agent_id"),))
def get_promotion(c, who, agent_id, promotion_id):
    return views.promotion_view(promotion_service.get(c, who, agent_id, promotion_id))


# --- suites ----------------------------------------------------------------------------------


@bp.route("/api/v1/agents/{agent_id}/suites", methods=["POST"])
@api_view(bp, body=SuiteBody, needs=SUITE_CHANGE)
def create_suite(c, who, agent_id, body):
    fields = body.model_dump(exclude_unset=True)
    if not fields.get("dataset_id"):
        raise InvalidInputError("dataset_id is required", field="dataset_id")
    row, priced = suite_service.create(c, who, agent_id, fields)
    return {**views.suite_view(row), "price": views.suite_price_view(priced)}, 201


@bp.route("/api/v1/agents/{agent_id}/suites", methods=["GET"])
@api_view(bp, needs=AGENT_RUNS)
def list_suites(c, who, agent_id):
    c.agents.get(who.org_id, agent_id)
    return {"suites": [views.suite_view(r) for r in c.suites.of_agent(who.org_id, agent_id)]}


@bp.route("/api/v1/agents/{agent_id}/suites/{suite_id}", methods=["GET"])
@api_view(bp, needs=AGENT_RUNS)
def get_suite(c, who, agent_id, suite_id):
    return views.suite_view(suite_service.get(c, who, agent_id, suite_id))


@bp.route("/api/v1/agents/{agent_id}/suites/{suite_id}", methods=["PATCH"])
@api_view(bp, body=SuiteBody, needs=SUITE_CHANGE)
def update_suite(c, who, agent_id, suite_id, body):
    fields = body.model_dump(exclude_unset=True)
    row, priced = suite_service.update(c, who, agent_id, suite_id, fields)
    return {**views.suite_view(row), "price": views.suite_price_view(priced)}


@bp.route("/api/v1/agents/{agent_id}/suites/{suite_id}", methods=["DELETE"])
@api_view(bp, needs=SUITE_CHANGE)
def delete_suite(c, who, agent_id, suite_id):
    suite_service.delete(c, who, agent_id, suite_id)
    return {"suite_id": suite_id, "deleted": True}


@bp.route("/api/v1/agents/{agent_id}/suites/{suite_id}/pause", methods=["POST"])
@api_view(bp, needs=SUITE_CHANGE)
def pause_suite(c, who, agent_id, suite_id):
    return views.suite_view(suite_service.set_paused(c, who, agent_id, suite_id, True))


@bp.route("/api/v1/agents/{agent_id}/suites/{suite_id}/resume", methods=["POST"])
@api_view(bp, needs=SUITE_CHANGE)
def resume_suite(c, who, agent_id, suite_id):
    return views.suite_view(suite_service.set_paused(c, who, agent_id, suite_id, False))


@bp.route("/api/v1/agents/{agent_id}/suites/{suite_id}/run", methods=["POST"])
@api_view(bp, needs=SUITE_CHANGE)
def run_suite_now(c, who, agent_id, suite_id):
    return views.suite_view(suite_service.run_now(c, who, agent_id, suite_id)), 202


@bp.route("/api/v1/agents/{agent_id}/suites/{suite_id}/results", methods=["GET"])
@api_view(bp, query=ResultsQuery, needs=AGENT_RUNS)
def suite_results(c, who, agent_id, suite_id, query):
    results = suite_service.results(c, who, agent_id, suite_id, limit=query.limit)
    return {"results": [views.suite_result_view(r) for r in results]}


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
        c.judges.get(who.org_id, judge_id, _version(version), field="version")
    )


# --- datasets --------------------------------------------------------------------------------


@bp.route("/api/v1/datasets", methods=["POST"])
@api_view(bp, body=CreateDataset, max_body_bytes=MAX_RECORDING_BYTES, needs=("datasets:edit",))
def create_dataset(c, who, body):
    """Create a dataset, empty or together with its first version (kept only if that version is)."""
    if body.cases is None and body.source is None and body.scoring is None:
        return views.dataset_view(
            dataset_service.create_dataset(c, who, name=body.name, dataset_id=body.dataset_id)
        ), 201
    header, first = dataset_service.create_with_version(
        c,
        who,
        name=body.name,
        dataset_id=body.dataset_id,
        scoring=body.scoring,
        cases=body.cases,
        source=body.source.model_dump() if body.source else None,
    )
    return views.dataset_view(header, first), 201


@bp.route("/api/v1/datasets", methods=["GET"])
@api_view(bp)
def list_datasets(c, who):
    return {
        "datasets": [
            views.dataset_view(r)
            for r in c.datasets.list(who.org_id)
            if who.sees("dataset", r.dataset_id)
        ]
    }


@bp.route("/api/v1/datasets/{dataset_id}", methods=["GET"])
@api_view(bp, needs=(("datasets:view", "dataset_id"),))
def get_dataset(c, who, dataset_id):
    header = c.datasets.get(who.org_id, dataset_id)
    latest = (
        c.datasets.get(who.org_id, dataset_id, int(header.latest_version))
        if header.latest_version
        else None
    )
    return views.dataset_view(header, latest)


@bp.route("/api/v1/datasets/{dataset_id}", methods=["DELETE"])
@api_view(bp)
def delete_dataset(c, who, dataset_id):
    """Delete a dataset and everything of it: versions, cases, runs, suites, evaluations (409
    while one of its runs is queued or running)."""
    gone = deletion_service.delete_dataset(c, who, dataset_id)
    return {"dataset_id": dataset_id, "deleted": True, **views.deleted_view(gone)}


@bp.route("/api/v1/datasets/{dataset_id}/versions", methods=["POST"])
@api_view(
    bp,
    body=AddDatasetVersion,
    max_body_bytes=MAX_RECORDING_BYTES,
    needs=(("datasets:edit", "dataset_id"),),
)
def add_dataset_version(c, who, dataset_id, body):
    header, row = dataset_service.add_version(
        c,
        who,
        dataset_id,
        scoring=body.scoring,
        cases=body.cases,
        source=body.source.model_dump() if body.source else None,
    )
    return views.dataset_view(header, row), 201


@bp.route("/api/v1/datasets/{dataset_id}/versions/{version}/cases", methods=["GET"])
@api_view(bp, query=DatasetCasesQuery, needs=(("datasets:view", "dataset_id"),))
def list_cases(c, who, dataset_id, version, query):
    """A page of a dataset version's cases, by case id (`next_cursor` gives the next)."""
    row = dataset_service.resolve_version(
        c, who, dataset_id, _version(version) if _is_number(version) else version
    )
    page = dataset_service.list_cases(c, row, limit=query.limit, cursor=query.cursor)
    return {
        "dataset_id": dataset_id,
        "version": int(row.version),
        "cases": page.cases,
        "next_cursor": page.next_cursor,
    }


@bp.route("/api/v1/datasets/{dataset_id}/eval-runs", methods=["GET"])
@api_view(bp, query=Page, needs=("runs:view", ("datasets:view", "dataset_id")))
def list_dataset_runs(c, who, dataset_id, query):
    return views.run_list_view(
        run_service.list_runs(c, who, dataset_id=dataset_id, limit=query.limit, cursor=query.cursor)
    )


@bp.route("/api/v1/datasets/{dataset_id}/eval-runs/chart", methods=["GET"])
@api_view(bp, query=ChartQuery, needs=("runs:view", ("datasets:view", "dataset_id")))
def dataset_runs_chart(c, who, dataset_id, query):
    """The pass-rate chart of the dataset's runs, as JSON and inline SVG (seed 004 "In the
    console")."""
    return views.chart_view(chart_service.dataset_chart(c, who, dataset_id, query.last))


@bp.route("/api/v1/datasets/{dataset_id}/scores/rescore", methods=["POST"])
@api_view(bp, body=Rescore, needs=(("datasets:edit", "dataset_id"),))
def rescore(c, who, dataset_id, body):
    return views.rescore_view(
        grading_service.rescore(c, who, dataset_id, score_ids=body.score_ids, run_id=body.run_id)
    )


# --- eval runs -------------------------------------------------------------------------------


@bp.route("/api/v1/agents/{agent_id}/eval-runs/estimate", methods=["POST"])
@api_view(bp, body=StartRun)
def estimate_run(c, who, agent_id, body):
    return views.estimate_view(run_service.estimate(c, who, agent_id, body.model_dump()))


@bp.route("/api/v1/agents/{agent_id}/eval-runs", methods=["POST"])
@api_view(bp, body=StartRun)
def start_run(c, who, agent_id, body):
    run, warnings = run_service.start_run(c, who, agent_id, body.model_dump())
    return {**views.run_view(run), "warnings": warnings}, 201


@bp.route("/api/v1/agents/{agent_id}/eval-runs", methods=["GET"])
@api_view(bp, query=AgentRunsQuery, needs=AGENT_RUNS)
def list_agent_runs(c, who, agent_id, query):
    return views.run_list_view(
        run_service.list_runs(
            c, who, agent_id=agent_id, limit=query.limit, cursor=query.cursor, draft=query.draft
        )
    )


@bp.route("/api/v1/agents/{agent_id}/eval-runs/chart", methods=["GET"])
@api_view(bp, query=ChartQuery, needs=AGENT_RUNS)
def agent_runs_chart(c, who, agent_id, query):
    """The pass-rate chart of the agent's runs, as JSON and inline SVG (seed 004 "In the
    console")."""
    return views.chart_view(chart_service.agent_chart(c, who, agent_id, query.last))


@bp.route("/api/v1/eval-runs", methods=["GET"])
@api_view(bp, query=Page)
def list_org_runs(c, who, query):
    return views.run_list_view(
        run_service.list_runs(c, who, limit=query.limit, cursor=query.cursor)
    )


@bp.route("/api/v1/eval-runs/{run_id}", methods=["GET"])
@api_view(bp)
def get_run(c, who, run_id):
    return views.run_read_view(run_service.read_run(c, who, run_id))


@bp.route("/api/v1/eval-runs/{run_id}", methods=["DELETE"])
@api_view(bp)
def delete_run(c, who, run_id):
    run_service.delete_run(c, who, run_id)
    return {"run_id": run_id, "deleted": True}


@bp.route("/api/v1/eval-runs/{run_id}/cancel", methods=["POST"])
@api_view(bp)
def cancel_run(c, who, run_id):
    return views.run_view(run_service.cancel_run(c, who, run_id))


@bp.route("/api/v1/eval-runs/{run_id}/grade-again", methods=["POST"])
@api_view(bp, body=GradeAgain, body_required=False)
def grade_again(c, who, run_id, body):
    return views.grade_again_view(grading_service.grade_again(c, who, run_id, body.score_ids))


@bp.route("/api/v1/eval-runs/{run_id}/comparison", methods=["GET"])
@api_view(bp, query=ComparisonQuery)
def run_comparison(c, who, run_id, query):
    return views.comparison_view(
        *run_service.comparison(c, who, run_id, arm_id=query.arm_id, tag=query.tag)
    )


@bp.route("/api/v1/eval-runs/{run_id}/cases", methods=["GET"])
@api_view(bp, query=CasesQuery)
def run_cases(c, who, run_id, query):
    """A page of a run's cases in the run's order: what each expects and every attempt per arm."""
    return views.cases_view(
        run_id,
        run_service.cases(
            c,
            who,
            run_id,
            outcome=query.outcome,
            tag=query.tag,
            arm_id=query.arm_id,
            case_id=query.case_id,
            limit=query.limit,
            cursor=query.cursor,
        ),
    )


@bp.route("/api/v1/eval-runs/{run_id}/answer", methods=["GET"])
@api_view(bp, query=AnswerQuery)
def run_answer(c, who, run_id, query):
    key = query.attempt_key
    return views.answer_view(key, answer_service.read_answer(c, who, run_id, key))


@bp.route("/api/v1/eval-runs/{run_id}/arms/{arm_id}/spec", methods=["GET"])
@api_view(bp)
def run_arm_spec(c, who, run_id, arm_id):
    return views.arm_spec_view(run_id, run_service.arm_spec(c, who, run_id, arm_id))


@bp.route("/api/v1/eval-runs/{run_id}/spec-changes", methods=["GET"])
@api_view(bp)
def run_spec_changes(c, who, run_id):
    return views.spec_changes_view(run_id, run_service.spec_changes(c, who, run_id))


@bp.route("/api/v1/eval-runs/{run_id}/progress", methods=["GET"])
@api_view(bp)
def run_progress(c, who, run_id):
    return views.progress_view(access_service.readable_run(c, who, run_id))


def _events(c, who, run_id, query):
    return views.events_view(
        run_service.events(c, who, run_id, after=query.after, wait_s=query.wait, limit=query.limit)
    )


@bp.route("/api/v1/eval-runs/{run_id}/events", methods=["GET"])
@api_view(bp, query=EventsQuery)
def run_events(c, who, run_id, query):
    return _events(c, who, run_id, query)


# Seed 001's own paths.
@bp.route("/api/evaluations/progress/{run_id}", methods=["GET"])
@api_view(bp)
def seed_progress(c, who, run_id):
    return views.progress_view(access_service.readable_run(c, who, run_id))


@bp.route("/api/evaluations/stream/{run_id}", methods=["GET"])
@api_view(bp, query=EventsQuery)
def seed_stream(c, who, run_id, query):
    return _events(c, who, run_id, query)


# Seed 001's evaluations and their run history.
@bp.route("/api/evaluations", methods=["POST"])
@api_view(bp, body=CreateEvaluation)
def create_evaluation(c, who, body):
    """Create an evaluation: an agent, a dataset and a version selector."""
    return views.evaluation_view(
        evaluation_service.create_evaluation(c, who, **body.model_dump())
    ), 201


@bp.route("/api/evaluations", methods=["GET"])
@api_view(bp, query=Page)
def list_evaluations(c, who, query):
    """The organization's evaluations by id, a page at a time."""
    return views.evaluation_list_view(
        evaluation_service.list_evaluations(c, who, limit=query.limit, cursor=query.cursor)
    )


@bp.route("/api/evaluations/{evaluation_id}", methods=["GET"])
@api_view(bp)
def get_evaluation(c, who, evaluation_id):
    """One evaluation (an implied one too)."""
    return views.evaluation_view(evaluation_service.get_evaluation(c, who, evaluation_id))


@bp.route("/api/evaluations/{evaluation_id}", methods=["PATCH"])
@api_view(bp, body=UpdateEvaluation)
def update_evaluation(c, who, evaluation_id, body):
    """Change an evaluation's name, agent or version selector; past runs keep their pins."""
    changes = {k: v for k, v in body.model_dump(exclude_unset=True).items() if v is not None}
    return views.evaluation_view(
        evaluation_service.update_evaluation(c, who, evaluation_id, changes)
    )


@bp.route("/api/evaluations/{evaluation_id}", methods=["DELETE"])
@api_view(bp)
def delete_evaluation(c, who, evaluation_id):
    """Delete an evaluation and its runs (409 while one runs)."""
    deleted = evaluation_service.delete_evaluation(c, who, evaluation_id)
    return {"evaluation_id": evaluation_id, "deleted": True, "runs_deleted": deleted}


@bp.route("/api/evaluations/{evaluation_id}/runs", methods=["POST"])
@api_view(bp, body=StartEvaluationRun)
def start_evaluation_run(c, who, evaluation_id, body):
    """Start a run of the evaluation: its selector resolved now and pinned on the run."""
    run, warnings = evaluation_service.start_evaluation_run(
        c, who, evaluation_id, body.model_dump()
    )
    return {**views.run_view(run), "warnings": warnings}, 201


@bp.route("/api/evaluations/{evaluation_id}/runs", methods=["GET"])
@api_view(bp, query=Page)
def list_evaluation_runs(c, who, evaluation_id, query):
    """The evaluation's run history, newest first."""
    return views.run_list_view(
        evaluation_service.list_evaluation_runs(
            c, who, evaluation_id, limit=query.limit, cursor=query.cursor
        )
    )


@bp.route("/api/evaluations/{evaluation_id}/runs/{run_id}", methods=["GET"])
@api_view(bp)
def get_evaluation_run(c, who, evaluation_id, run_id):
    """One run of the evaluation and its results."""
    return views.run_read_view(
        evaluation_service.read_evaluation_run(c, who, evaluation_id, run_id)
    )


@bp.route("/api/evaluations/{evaluation_id}/runs/{run_id}", methods=["DELETE"])
@api_view(bp)
def delete_evaluation_run(c, who, evaluation_id, run_id):
    """Delete a run of the evaluation."""
    evaluation_service.delete_evaluation_run(c, who, evaluation_id, run_id)
    return {"run_id": run_id, "deleted": True}


# --- verdicts --------------------------------------------------------------------------------


def _summaries(c, who, body):
    return {
        "summaries": [
            views.agent_summary_view(s)
            for s in summary_service.summarize_agents(c, who, body.agents)
        ]
    }


@bp.route("/api/v1/agent-summaries", methods=["POST"])
@api_view(bp, body=AgentSummaries)
def agent_summaries(c, who, body):
    return _summaries(c, who, body)


@bp.route("/api/evaluations/agent-summaries", methods=["POST"])
@api_view(bp, body=AgentSummaries)
def seed_agent_summaries(c, who, body):
    return _summaries(c, who, body)


# --- the organization's secrets (write-only) and recordings ------------------------------------


def _no_content() -> Response:
    return Response(body="", status_code=204)


@bp.route("/api/v1/secrets", methods=["GET"])
@api_view(bp, needs=("secrets:manage",))
def list_secrets(c, who):
    return {"secrets": [views.secret_view(m) for m in secret_service.list_secrets(c, who)]}


@bp.route("/api/v1/secrets/{name}", methods=["PUT"])
@api_view(bp, body=PutSecret, needs=("secrets:manage",))
def put_secret(c, who, name, body):
    return views.secret_view(secret_service.put(c, who, name, body.value))


@bp.route("/api/v1/secrets/{name}", methods=["GET"])
@api_view(bp, needs=("secrets:manage",))
def get_secret(c, who, name):
    return views.secret_view(secret_service.get(c, who, name))


@bp.route("/api/v1/secrets/{name}", methods=["DELETE"])
@api_view(bp, needs=("secrets:manage",))
def delete_secret(c, who, name):
    secret_service.delete(c, who, name)
    return _no_content()


@bp.route("/api/v1/recordings", methods=["POST"])
@api_view(
    bp,
    body=UploadRecording,
    max_body_bytes=MAX_RECORDING_BYTES,
    too_large_field="content",
    needs=("datasets:edit",),
)
def upload_recording(c, who, body):
    meta, created = recording_service.upload(c, who, body.content, body.recording_id)
    return views.recording_view(meta), 201 if created else 200


@bp.route("/api/v1/recordings", methods=["GET"])
@api_view(bp, needs=("datasets:view",))
def list_recordings(c, who):
    return {
        "recordings": [views.recording_view(m) for m in recording_service.list_recordings(c, who)]
    }


@bp.route("/api/v1/recordings/{recording_id}", methods=["GET"])
@api_view(bp, needs=("datasets:view",))
def get_recording(c, who, recording_id):
    return views.recording_view(recording_service.get(c, who, recording_id))


@bp.route("/api/v1/recordings/{recording_id}", methods=["DELETE"])
@api_view(bp, needs=("datasets:edit",))
def delete_recording(c, who, recording_id):
    recording_service.delete(c, who, recording_id)
    return _no_content()
