"""Routes of agents: the agent and its draft and versions, model profiles, environments and
promotions, suites."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalicelib.api.common import api_view
from chalicelib.api.lazy import LazyModule
from chalicelib.api.query_schemas import ResultsQuery
from chalicelib.api.routes.base import AGENT_RUNS, SUITE_CHANGE, bp, edits, path_version
from chalicelib.api.schemas import (
    CreateAgent,
    CreateEnvironment,
    CreateModelProfile,
    Promote,
    Publish,
    SuiteBody,
    UpdateDraft,
)
from chalicelib.domain.enums import PromotionStatus
from chalicelib.errors import InvalidInputError

if TYPE_CHECKING:
    from chalicelib.api import guard_views, views
    from chalicelib.services import agents as agent_service
    from chalicelib.services import deletion as deletion_service
    from chalicelib.services import environments as environment_service
    from chalicelib.services import guard_status as guard_service
    from chalicelib.services import model_profiles as profile_service
    from chalicelib.services import promotions as promotion_service
    from chalicelib.services import review as review_service
    from chalicelib.services import suites as suite_service
    from chalicelib.services import summaries as summary_service
else:  # imported by the first request that needs each (`chalicelib.api.lazy`)
    views = LazyModule("chalicelib.api.views")
    guard_views = LazyModule("chalicelib.api.guard_views")
    guard_service = LazyModule("chalicelib.services.guard_status")
    agent_service = LazyModule("chalicelib.services.agents")
    deletion_service = LazyModule("chalicelib.services.deletion")
    environment_service = LazyModule("chalicelib.services.environments")
    profile_service = LazyModule("chalicelib.services.model_profiles")
    promotion_service = LazyModule("chalicelib.services.promotions")
    review_service = LazyModule("chalicelib.services.review")
    suite_service = LazyModule("chalicelib.services.suites")
    summary_service = LazyModule("chalicelib.services.summaries")


# --- agents ----------------------------------------------------------------------------------


@bp.route("/api/v1/agents", methods=["POST"])
@api_view(bp, body=CreateAgent, needs=("agents:edit",))
def create_agent(c, who, body):
    row = agent_service.create_agent(c, who, name=body.name, spec=body.spec, agent_id=body.agent_id)
    return views.agent_view(row), 201


@bp.route("/api/v1/agents", methods=["GET"])
@api_view(bp)
def list_agents(c, who):
    """Every agent the reader may see, each with whether its draft differs, the verdicts beside
    its live version and its draft, and its last run (`views.agent_listed_view`)."""
    seen = [r for r in c.agents.list(who.org_id) if who.sees("agent", r.agent_id)]
    overviews = summary_service.overview(c, who, seen)
    return {
        "agents": [
            views.agent_listed_view(r, o, with_draft=edits(who, r.agent_id))
            for r, o in zip(seen, overviews, strict=True)
        ]
    }


@bp.route("/api/v1/agents/{agent_id}", methods=["GET"])
@api_view(bp, needs=(("agents:view", "agent_id"),))
def get_agent(c, who, agent_id):
    """One agent as the list shows it (`views.agent_listed_view`): with whether its draft differs,
    the verdicts beside its live version and its draft, and its last run, read from its history
    rows in one batch (`services.summaries.overview`)."""
    row = c.agents.get(who.org_id, agent_id)
    (seen,) = summary_service.overview(c, who, [row])
    return views.agent_listed_view(row, seen, with_draft=edits(who, agent_id))


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
    return views.agent_version_view(
        agent_service.get_version(c, who, agent_id, path_version(version))
    )


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
        c,
        who,
        environment_id=body.environment_id,
        name=body.name,
        default=body.default,
        test_connections=body.test_connections,
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


@bp.route("/api/v1/agents/{agent_id}/guards", methods=["GET"])
@api_view(bp, needs=(("agents:view", "agent_id"),))
def guard_status(c, who, agent_id):
    """Each guard of the agent on each environment: passed, failed, corrected (through review),
    out_of_date or not_checked, with its run (docs/guides/suites.md)."""
    found = guard_service.status(c, who, agent_id)
    return guard_views.guard_status_view(found, guard_service.members_now(c, who.org_id))


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
    people = sorted({u for r in results for u in r.reviewed_by or []})
    names = review_service.names(c, who.org_id, people)
    return {"results": [views.suite_result_view(r, names) for r in results]}
