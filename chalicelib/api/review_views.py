"""JSON views of the review queue (docs/guides/review.md): items, audit entries, what a send
did. People are shown by their current membership: a user id that is no longer a member of the
organization reads `name: null`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chalicelib.api import views
from chalicelib.domain.review_items import ReviewAudit, ReviewItem
from chalicelib.services.review import SendResult
from chalicelib.services.review_criteria import CriterionAdded


def person(user_id: str | None, names: dict[str, str | None]) -> dict[str, Any] | None:
    """`{user_id, name}` of a person (None for nobody); `name` None for a former member."""
    if not user_id:
        return None
    return {"user_id": user_id, "name": names.get(user_id)}


def people_of(items: Sequence[ReviewItem], audits: Sequence[ReviewAudit] = ()) -> list[str]:
    """Every user id the views of `items` and `audits` name."""
    ids = {i.decided_by for i in items} | {i.sent_by for i in items}
    ids |= {a.by for a in audits} | {a.actor for a in audits if a.actor}
    return sorted(u for u in ids if u)


def item_view(item: ReviewItem, names: dict[str, str | None]) -> dict[str, Any]:
    """An item of the queue: the answer beside what its case expects and every scorer's reason,
    where it came from and why, and a person's verdict when one stands."""
    return {
        "item_id": item.item_id,
        "dataset_id": item.dataset_id,
        "dataset_version": item.dataset_version,
        "case_id": item.case_id,
        "agent_id": item.agent_id,
        "run_id": item.run_id,
        "arm_id": item.arm_id,
        "arm_label": item.arm_label,
        "attempt_key": item.attempt_key,
        "answered_at_ms": item.answered_at_ms,
        "reason": item.reason,
        "sent_at": item.sent_at,
        "sent_by": person(item.sent_by, names),
        "state": item.state,
        "question": item.question,
        "answer": item.answer,
        "answer_truncated": item.answer_truncated,
        "expected": item.expected,
        "scores": item.scores,
        "scored_state": item.scored_state,
        "tags": item.tags,
        "verdict": item.verdict,
        "note": item.note,
        "decided_by": person(item.decided_by, names),
        "decided_at": item.decided_at,
        "corrected": item.corrected,
        "replacing": item.replacing,
        "replaced_by": item.replaced_by,
        "recomputing": bool(item.pending_runs),
    }


def audit_view(entry: ReviewAudit, names: dict[str, str | None]) -> dict[str, Any]:
    """An audit entry: who did what when (through which API key, or which administrator signed in
    as them), the item's state and verdict before and after, and the numbers of every run and
    suite result it changed, before and after."""
    return {
        "audit_id": entry.audit_id,
        "item_id": entry.item_id,
        "action": entry.action,
        "by": person(entry.by, names),
        "api_key_id": entry.key_id,
        "actor": person(entry.actor, names),
        "at": entry.at,
        "state_before": entry.state_before,
        "state_after": entry.state_after,
        "verdict_before": entry.verdict_before,
        "verdict_after": entry.verdict_after,
        "note": entry.note,
        "runs": entry.runs,
        "suite_results": entry.suite_results,
    }


def send_view(result: SendResult) -> dict[str, Any]:
    """What a send did."""
    return {
        "routed_to_review": result.routed_to_review,
        "routed_replacing": result.routed_replacing,
        "not_sent": result.not_sent,
        "error": result.error,
    }


def criterion_added_view(added: CriterionAdded) -> dict[str, Any]:
    """`{dataset_id, dataset_version, judge_id, version, published, based_on, criterion,
    judge_version (as GET /judges/{id}/versions/{n}), follows_latest, pinned_version, pin_moved
    (always false), guards: [{agent_id, suite_id, judge_version}], message}`."""
    return {
        "dataset_id": added.dataset_id,
        "dataset_version": added.dataset_version,
        "judge_id": added.judge.judge_id,
        "version": int(added.judge.version),
        "published": added.published,
        "based_on": added.based_on,
        "criterion": added.criterion.model_dump(mode="json"),
        "judge_version": views.judge_version_view(added.judge),
        "follows_latest": added.follows_latest,
        "pinned_version": added.pinned_version,
        "pin_moved": added.pin_moved,
        "guards": [
            {"agent_id": g.agent_id, "suite_id": g.suite_id, "judge_version": g.judge_version}
            for g in added.guards
        ],
        "message": added.message,
    }
