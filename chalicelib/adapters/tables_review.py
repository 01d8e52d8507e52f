"""Table models of the review queue (docs/guides/review.md): its items, the waiting mark of each
case and agent, the queue's counter, and its audit entries (docs/architecture/tables.md; every
key holds the organization, see `tables`)."""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    NumberAttribute,
    UnicodeAttribute,
)

from chalicelib.adapters.table_base import TableBase as _Base

ITEM_PREFIX = "ri"
"""How an item's `item_id` begins; the queue's other rows begin otherwise."""
WAITING_PREFIX = "waiting#"
"""`waiting#<case_id>#<agent_id>`: the row naming the item of a case and agent still waiting."""
COUNTER_ID = "count"
"""The row counting the queue's waiting items (`waiting`)."""


class ReviewItemRow(_Base):
    """A row of a dataset's review queue: an item (`item_id` = `ri…`), the mark of the item of one
    case and agent still waiting (`waiting#<case>#<agent>`, its `holder`: the item's id), or the
    queue's counter (`count`, its `waiting`). A decision moves an item and its mark in one
    transaction, so one item at most waits per case and agent."""

    ORG_KEY = "queue_key"

    class Meta(_Base.Meta):
        table_name = "review_items"

    queue_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<dataset_id>`."""
    item_id = UnicodeAttribute(range_key=True)
    org_id = UnicodeAttribute()
    holder = UnicodeAttribute(null=True)
    waiting = NumberAttribute(null=True)
    dataset_id = UnicodeAttribute(null=True)
    dataset_version = NumberAttribute(null=True)
    case_id = UnicodeAttribute(null=True)
    agent_id = UnicodeAttribute(null=True)
    run_id = UnicodeAttribute(null=True)
    arm_id = UnicodeAttribute(null=True)
    arm_label = UnicodeAttribute(null=True)
    attempt_key = UnicodeAttribute(null=True)
    answered_at_ms = NumberAttribute(null=True)
    reason = UnicodeAttribute(null=True)
    sent_at = UnicodeAttribute(null=True)
    sent_by = UnicodeAttribute(null=True)
    state = UnicodeAttribute(null=True)
    question = UnicodeAttribute(null=True)
    answer = UnicodeAttribute(null=True)
    answer_truncated = BooleanAttribute(null=True)
    expected = JSONAttribute(null=True)
    scores = JSONAttribute(null=True)
    scored_state = UnicodeAttribute(null=True)
    tags: ListAttribute[Any] = ListAttribute(of=UnicodeAttribute, null=True)
    verdict = UnicodeAttribute(null=True)
    note = UnicodeAttribute(null=True)
    decided_by = UnicodeAttribute(null=True)
    decided_at = UnicodeAttribute(null=True)
    replacing = UnicodeAttribute(null=True)
    replaced_by = UnicodeAttribute(null=True)
    version = NumberAttribute(null=True)
    pending_runs: ListAttribute[Any] = ListAttribute(of=UnicodeAttribute, null=True)


class ReviewAuditRow(_Base):
    """One audit entry of a dataset's review queue: a decision or an Undo, who and when, the
    item's state and verdict before and after, and the numbers it changed."""

    ORG_KEY = "queue_key"

    class Meta(_Base.Meta):
        table_name = "review_audit"

    queue_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<dataset_id>`."""
    audit_key = UnicodeAttribute(range_key=True)
    """`<at ISO>#<audit_id>`: oldest first."""
    audit_id = UnicodeAttribute()
    org_id = UnicodeAttribute()
    dataset_id = UnicodeAttribute()
    item_id = UnicodeAttribute()
    action = UnicodeAttribute()
    by = UnicodeAttribute()
    at = UnicodeAttribute()
    state_before = UnicodeAttribute()
    state_after = UnicodeAttribute()
    verdict_before = UnicodeAttribute(null=True)
    verdict_after = UnicodeAttribute(null=True)
    note = UnicodeAttribute(null=True)
    runs = JSONAttribute(default=list)
    suite_results = JSONAttribute(default=list)
    key_id = UnicodeAttribute(null=True)
    """The API key the decision came through."""
    actor = UnicodeAttribute(null=True)
    """The administrator signed in as `by`."""
