"""Routes of the review queue: a dataset's items, a person's decision and Undo, the audit, and
**Send failed to review** of a run (docs/guides/review.md)."""

from __future__ import annotations

import re
from typing import TYPE_CHECKING

from chalicelib.api.common import api_view
from chalicelib.api.lazy import LazyModule
from chalicelib.api.query_schemas import ReviewQuery
from chalicelib.api.routes.base import bp
from chalicelib.api.schemas import ReviewCriterion, ReviewDecision, SendToReview
from chalicelib.errors import InvalidInputError

if TYPE_CHECKING:
    from chalicelib.api import review_views
    from chalicelib.services import review as review_service
    from chalicelib.services import review_criteria as criteria_service
    from chalicelib.services import review_decisions as decision_service
else:  # imported by the first request that needs each (`chalicelib.api.lazy`)
    review_views = LazyModule("chalicelib.api.review_views")
    review_service = LazyModule("chalicelib.services.review")
    decision_service = LazyModule("chalicelib.services.review_decisions")
    criteria_service = LazyModule("chalicelib.services.review_criteria")

_CURSOR = re.compile(r"^ri\d{13}[0-9a-f]{16}$")


@bp.route("/api/v1/datasets/{dataset_id}/review", methods=["GET"])
@api_view(bp, query=ReviewQuery, needs=(("datasets:view", "dataset_id"),))
def review_items(c, who, dataset_id, query):
    """The dataset's review queue, newest answer first: waiting, decided or replaced items."""
    if query.cursor is not None and not _CURSOR.match(query.cursor):
        raise InvalidInputError("not a cursor this listing gave", field="cursor")
    page = review_service.items(
        c,
        who,
        dataset_id,
        state=query.state,
        agent_id=query.agent_id,
        tag=query.tag,
        limit=query.limit,
        start=query.cursor,
    )
    names = review_service.names(c, who.org_id, review_views.people_of(page.items))
    return {
        "items": [review_views.item_view(i, names) for i in page.items],
        "next_cursor": page.next_start,
        "waiting": review_service.waiting_count(c, who, dataset_id),
    }


@bp.route("/api/v1/datasets/{dataset_id}/review/{item_id}", methods=["GET"])
@api_view(bp, needs=(("datasets:view", "dataset_id"),))
def review_item(c, who, dataset_id, item_id):
    """One item of the queue and its audit entries."""
    item = review_service.item(c, who, dataset_id, item_id)
    audits = decision_service.audit(c, who, dataset_id, item_id)
    names = review_service.names(c, who.org_id, review_views.people_of([item], audits))
    return {
        **review_views.item_view(item, names),
        "audit": [review_views.audit_view(a, names) for a in audits],
    }


def _decided_view(c, who, decided):
    names = review_service.names(
        c, who.org_id, review_views.people_of([decided.item], [decided.audit])
    )
    return {
        "item": review_views.item_view(decided.item, names),
        "audit": review_views.audit_view(decided.audit, names),
    }


@bp.route("/api/v1/datasets/{dataset_id}/review/{item_id}/decision", methods=["POST"])
@api_view(bp, body=ReviewDecision, needs=(("datasets:edit", "dataset_id"),))
def decide(c, who, dataset_id, item_id, body):
    """A person's verdict on a waiting item; the runs and suite results resting on the answer
    follow it before this answers."""
    decided = decision_service.decide(c, who, dataset_id, item_id, body.verdict, body.note)
    return _decided_view(c, who, decided)


@bp.route("/api/v1/datasets/{dataset_id}/review/{item_id}/undo", methods=["POST"])
@api_view(bp, body_required=False, needs=(("datasets:edit", "dataset_id"),))
def undo(c, who, dataset_id, item_id):
    """Take a decision back: every number that rested on it is as the scorers left it."""
    return _decided_view(c, who, decision_service.undo(c, who, dataset_id, item_id))


@bp.route("/api/v1/datasets/{dataset_id}/review/{item_id}/criterion", methods=["POST"])
@api_view(bp, body=ReviewCriterion, needs=(("datasets:edit", "dataset_id"), "datasets:edit"))
def note_as_criterion(c, who, dataset_id, item_id, body):
    """A decision's note becomes a criterion of the dataset's judge for the cases carrying
    `tags` (the judge's next version; a pinned dataset stays pinned)."""
    item = review_service.item(c, who, dataset_id, item_id)
    if not (item.note or "").strip():
        raise InvalidInputError(
            f"review item {item_id} has no note to make a criterion of: decide it with a note",
            field="note",
        )
    added = criteria_service.add_note_as_criterion(
        c,
        who,
        dataset_id,
        item.note or "",
        body.tags,
        source=f"review item {item_id} (case {item.case_id})",
        criterion_id=body.criterion_id,
    )
    return review_views.criterion_added_view(added), 201 if added.published else 200


@bp.route("/api/v1/eval-runs/{run_id}/review", methods=["POST"])
@api_view(bp, body=SendToReview, body_required=False, needs=("runs:view",))
def send_failed(c, who, run_id, body):
    """**Send failed to review**: one side's failed first answers not in the queue yet."""
    side = body.side if body is not None else "candidate"
    return review_views.send_view(decision_service.send_failed(c, who, run_id, side))
