"""Routes of eval runs and their verdicts: start, estimate, list, read, cancel, grade again, the
comparison, cases, answers, specs, progress and events, the agents' summaries."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalicelib.api.common import api_view
from chalicelib.api.lazy import LazyModule
from chalicelib.api.query_schemas import (
    AgentRunsQuery,
    AnswerQuery,
    CasesQuery,
    ChartQuery,
    ComparisonQuery,
    EventsQuery,
    Page,
)
from chalicelib.api.routes.base import AGENT_RUNS, bp
from chalicelib.api.schemas import (
    AgentSummaries,
    CreateEvaluation,
    GradeAgain,
    StartEvaluationRun,
    StartRun,
    UpdateEvaluation,
)

if TYPE_CHECKING:
    from chalicelib.api import run_views, views
    from chalicelib.services import access as access_service
    from chalicelib.services import answers as answer_service
    from chalicelib.services import charts as chart_service
    from chalicelib.services import evaluations as evaluation_service
    from chalicelib.services import grading as grading_service
    from chalicelib.services import runs as run_service
    from chalicelib.services import summaries as summary_service
else:  # imported by the first request that needs each (`chalicelib.api.lazy`)
    run_views = LazyModule("chalicelib.api.run_views")
    views = LazyModule("chalicelib.api.views")
    access_service = LazyModule("chalicelib.services.access")
    answer_service = LazyModule("chalicelib.services.answers")
    chart_service = LazyModule("chalicelib.services.charts")
    evaluation_service = LazyModule("chalicelib.services.evaluations")
    grading_service = LazyModule("chalicelib.services.grading")
    run_service = LazyModule("chalicelib.services.runs")
    summary_service = LazyModule("chalicelib.services.summaries")


# --- eval runs -------------------------------------------------------------------------------


@bp.route("/api/v1/agents/{agent_id}/eval-runs/estimate", methods=["POST"])
@api_view(bp, body=StartRun)
def estimate_run(c, who, agent_id, body):
    return views.estimate_view(run_service.estimate(c, who, agent_id, body.model_dump()))


@bp.route("/api/v1/agents/{agent_id}/eval-runs", methods=["POST"])
@api_view(bp, body=StartRun)
def start_run(c, who, agent_id, body):
    run, warnings = run_service.start_run(c, who, agent_id, body.model_dump())
    return {**run_views.run_view(run), "warnings": warnings}, 201


@bp.route("/api/v1/agents/{agent_id}/eval-runs", methods=["GET"])
@api_view(bp, query=AgentRunsQuery, needs=AGENT_RUNS)
def list_agent_runs(c, who, agent_id, query):
    return run_views.run_list_view(
        run_service.list_runs(
            c, who, agent_id=agent_id, limit=query.limit, cursor=query.cursor, draft=query.draft
        )
    )


@bp.route("/api/v1/agents/{agent_id}/eval-runs/chart", methods=["GET"])
@api_view(bp, query=ChartQuery, needs=AGENT_RUNS)
def agent_runs_chart(c, who, agent_id, query):
    """The pass-rate chart of the agent's runs, as JSON and inline SVG
    (docs/guides/console.md)."""
    return run_views.chart_view(chart_service.agent_chart(c, who, agent_id, query.last))


@bp.route("/api/v1/eval-runs", methods=["GET"])
@api_view(bp, query=Page)
def list_org_runs(c, who, query):
    return run_views.run_list_view(
        run_service.list_runs(c, who, limit=query.limit, cursor=query.cursor)
    )


@bp.route("/api/v1/eval-runs/{run_id}", methods=["GET"])
@api_view(bp)
def get_run(c, who, run_id):
    return run_views.run_read_view(run_service.read_run(c, who, run_id))


@bp.route("/api/v1/eval-runs/{run_id}", methods=["DELETE"])
@api_view(bp)
def delete_run(c, who, run_id):
    run_service.delete_run(c, who, run_id)
    return {"run_id": run_id, "deleted": True}


@bp.route("/api/v1/eval-runs/{run_id}/cancel", methods=["POST"])
@api_view(bp)
def cancel_run(c, who, run_id):
    return run_views.run_view(run_service.cancel_run(c, who, run_id))


@bp.route("/api/v1/eval-runs/{run_id}/grade-again", methods=["POST"])
@api_view(bp, body=GradeAgain, body_required=False)
def grade_again(c, who, run_id, body):
    return run_views.grade_again_view(grading_service.grade_again(c, who, run_id, body.score_ids))


@bp.route("/api/v1/eval-runs/{run_id}/comparison", methods=["GET"])
@api_view(bp, query=ComparisonQuery)
def run_comparison(c, who, run_id, query):
    return run_views.comparison_view(
        *run_service.comparison(c, who, run_id, arm_id=query.arm_id, tag=query.tag)
    )


@bp.route("/api/v1/eval-runs/{run_id}/cases", methods=["GET"])
@api_view(bp, query=CasesQuery)
def run_cases(c, who, run_id, query):
    """A page of a run's cases in the run's order: what each expects and every attempt per arm."""
    return run_views.cases_view(
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
    return run_views.answer_view(key, answer_service.read_answer(c, who, run_id, key))


@bp.route("/api/v1/eval-runs/{run_id}/arms/{arm_id}/spec", methods=["GET"])
@api_view(bp)
def run_arm_spec(c, who, run_id, arm_id):
    return run_views.arm_spec_view(run_id, run_service.arm_spec(c, who, run_id, arm_id))


@bp.route("/api/v1/eval-runs/{run_id}/spec-changes", methods=["GET"])
@api_view(bp)
def run_spec_changes(c, who, run_id):
    return run_views.spec_changes_view(run_id, run_service.spec_changes(c, who, run_id))


@bp.route("/api/v1/eval-runs/{run_id}/progress", methods=["GET"])
@api_view(bp)
def run_progress(c, who, run_id):
    return run_views.progress_view(access_service.readable_run(c, who, run_id))


def _events(c, who, run_id, query):
    return run_views.events_view(
        run_service.events(c, who, run_id, after=query.after, wait_s=query.wait, limit=query.limit)
    )


@bp.route("/api/v1/eval-runs/{run_id}/events", methods=["GET"])
@api_view(bp, query=EventsQuery)
def run_events(c, who, run_id, query):
    return _events(c, who, run_id, query)


# The same routes under the evaluation paths (docs/guides/by-hand.md).
@bp.route("/api/evaluations/progress/{run_id}", methods=["GET"])
@api_view(bp)
def evaluation_progress(c, who, run_id):
    return run_views.progress_view(access_service.readable_run(c, who, run_id))


@bp.route("/api/evaluations/stream/{run_id}", methods=["GET"])
@api_view(bp, query=EventsQuery)
def evaluation_stream(c, who, run_id, query):
    return _events(c, who, run_id, query)


# Evaluations and their run history (docs/guides/by-hand.md).
@bp.route("/api/evaluations", methods=["POST"])
@api_view(bp, body=CreateEvaluation)
def create_evaluation(c, who, body):
    """Create an evaluation: an agent, a dataset and a version selector."""
    return run_views.evaluation_view(
        evaluation_service.create_evaluation(c, who, **body.model_dump())
    ), 201


@bp.route("/api/evaluations", methods=["GET"])
@api_view(bp, query=Page)
def list_evaluations(c, who, query):
    """The organization's evaluations by id, a page at a time."""
    return run_views.evaluation_list_view(
        evaluation_service.list_evaluations(c, who, limit=query.limit, cursor=query.cursor)
    )


@bp.route("/api/evaluations/{evaluation_id}", methods=["GET"])
@api_view(bp)
def get_evaluation(c, who, evaluation_id):
    """One evaluation (an implied one too)."""
    return run_views.evaluation_view(evaluation_service.get_evaluation(c, who, evaluation_id))


@bp.route("/api/evaluations/{evaluation_id}", methods=["PATCH"])
@api_view(bp, body=UpdateEvaluation)
def update_evaluation(c, who, evaluation_id, body):
    """Change an evaluation's name, agent or version selector; past runs keep their pins."""
    changes = {k: v for k, v in body.model_dump(exclude_unset=True).items() if v is not None}
    return run_views.evaluation_view(
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
    """Start a run of the evaluation: its selector resolved now and pinned on the run; `reruns`
    may be `"auto"` as on `/eval-runs` (the response's `warnings` say what it chose)."""
    run, warnings = evaluation_service.start_evaluation_run(
        c, who, evaluation_id, body.model_dump()
    )
    return {**run_views.run_view(run), "warnings": warnings}, 201


@bp.route("/api/evaluations/{evaluation_id}/runs", methods=["GET"])
@api_view(bp, query=Page)
def list_evaluation_runs(c, who, evaluation_id, query):
    """The evaluation's run history, newest first."""
    return run_views.run_list_view(
        evaluation_service.list_evaluation_runs(
            c, who, evaluation_id, limit=query.limit, cursor=query.cursor
        )
    )


@bp.route("/api/evaluations/{evaluation_id}/runs/{run_id}", methods=["GET"])
@api_view(bp)
def get_evaluation_run(c, who, evaluation_id, run_id):
    """One run of the evaluation and its results."""
    return run_views.run_read_view(
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
def evaluation_agent_summaries(c, who, body):
    return _summaries(c, who, body)
