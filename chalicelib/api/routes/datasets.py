"""Routes of datasets: the dataset, its versions and cases, its runs and chart, a rescore, a note
made a criterion of its judge."""

from __future__ import annotations

from typing import TYPE_CHECKING

from chalicelib.api.common import api_view
from chalicelib.api.lazy import LazyModule
from chalicelib.api.query_schemas import ChartQuery, DatasetCasesQuery, Page
from chalicelib.api.routes.base import bp, is_number, path_version
from chalicelib.api.schemas import AddCriterion, AddDatasetVersion, CreateDataset, Rescore
from chalicelib.domain.ids import MAX_RECORDING_BYTES

if TYPE_CHECKING:
    from chalicelib.api import review_views, run_views, views
    from chalicelib.services import charts as chart_service
    from chalicelib.services import datasets as dataset_service
    from chalicelib.services import deletion as deletion_service
    from chalicelib.services import grading as grading_service
    from chalicelib.services import review_criteria as criteria_service
    from chalicelib.services import runs as run_service
else:  # imported by the first request that needs each (`chalicelib.api.lazy`)
    run_views = LazyModule("chalicelib.api.run_views")
    review_views = LazyModule("chalicelib.api.review_views")
    views = LazyModule("chalicelib.api.views")
    chart_service = LazyModule("chalicelib.services.charts")
    dataset_service = LazyModule("chalicelib.services.datasets")
    deletion_service = LazyModule("chalicelib.services.deletion")
    grading_service = LazyModule("chalicelib.services.grading")
    criteria_service = LazyModule("chalicelib.services.review_criteria")
    run_service = LazyModule("chalicelib.services.runs")


# --- datasets --------------------------------------------------------------------------------


@bp.route("/api/v1/datasets", methods=["POST"])
@api_view(bp, body=CreateDataset, max_body_bytes=MAX_RECORDING_BYTES, needs=("datasets:edit",))
def create_dataset(c, who, body):
    """Create a dataset, empty or together with its first version (kept only if that version is)."""
    if body.cases is None and body.source is None and body.scoring is None:
        return views.dataset_view(
            dataset_service.create_dataset(c, who, name=body.name, dataset_id=body.dataset_id)
        ), 201
    written = dataset_service.create_with_version(
        c,
        who,
        name=body.name,
        dataset_id=body.dataset_id,
        scoring=body.scoring,
        cases=body.cases,
        source=body.source.model_dump() if body.source else None,
    )
    return views.written_view(written), 201


@bp.route("/api/v1/datasets", methods=["GET"])
@api_view(bp)
def list_datasets(c, who):
    """Every dataset the reader may see, newest first, each with its latest `version` (its case
    count and scoring) once it has one."""
    return {
        "datasets": [
            views.dataset_view(header, latest)
            for header, latest in c.datasets.list_with_latest(who.org_id)
            if who.sees("dataset", header.dataset_id)
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
    written = dataset_service.add_version(
        c,
        who,
        dataset_id,
        scoring=body.scoring,
        cases=body.cases,
        source=body.source.model_dump() if body.source else None,
    )
    return views.written_view(written), 201


@bp.route("/api/v1/datasets/{dataset_id}/versions/{version}/cases", methods=["GET"])
@api_view(bp, query=DatasetCasesQuery, needs=(("datasets:view", "dataset_id"),))
def list_cases(c, who, dataset_id, version, query):
    """A page of a dataset version's cases, by case id (`next_cursor` gives the next)."""
    row = dataset_service.resolve_version(
        c, who, dataset_id, path_version(version) if is_number(version) else version
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
    return run_views.run_list_view(
        run_service.list_runs(c, who, dataset_id=dataset_id, limit=query.limit, cursor=query.cursor)
    )


@bp.route("/api/v1/datasets/{dataset_id}/eval-runs/chart", methods=["GET"])
@api_view(bp, query=ChartQuery, needs=("runs:view", ("datasets:view", "dataset_id")))
def dataset_runs_chart(c, who, dataset_id, query):
    """The pass-rate chart of the dataset's runs, as JSON and inline SVG
    (docs/guides/console.md)."""
    return run_views.chart_view(chart_service.dataset_chart(c, who, dataset_id, query.last))


@bp.route("/api/v1/datasets/{dataset_id}/scores/rescore", methods=["POST"])
@api_view(bp, body=Rescore, needs=(("datasets:edit", "dataset_id"),))
def rescore(c, who, dataset_id, body):
    return run_views.rescore_view(
        grading_service.rescore(c, who, dataset_id, score_ids=body.score_ids, run_id=body.run_id)
    )


@bp.route("/api/v1/datasets/{dataset_id}/criteria", methods=["POST"])
@api_view(bp, body=AddCriterion, needs=(("datasets:edit", "dataset_id"), "datasets:edit"))
def add_criterion(c, who, dataset_id, body):
    """Add a note as a criterion of the judge the dataset grades with, scoped to case `tags`: the
    judge's next version is published (201; 200 when its latest already holds that very
    criterion). A dataset pinned to a judge version stays pinned."""
    added = criteria_service.add_note_as_criterion(
        c,
        who,
        dataset_id,
        body.note,
        body.tags,
        source=f"a note on dataset {dataset_id} by {who.user_id}",
        criterion_id=body.criterion_id,
    )
    return review_views.criterion_added_view(added), 201 if added.published else 200
