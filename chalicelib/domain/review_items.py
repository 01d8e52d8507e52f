"""What the review queue keeps (docs/guides/review.md): its items, one per answer sent, and the
audit entries of people's decisions. Records as the stores keep them (see `domain.records`); the
rules of what goes into the queue and what a verdict does are `domain.review_rules`.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any


class ItemState(StrEnum):
    """Where an item stands: waiting for a person, decided (a verdict stands), or replaced by a
    newer answer of its case and agent before anybody decided it."""

    WAITING = "waiting"
    DECIDED = "decided"
    REPLACED = "replaced"


@dataclass(frozen=True, kw_only=True)
class ReviewItem:
    """One answer in a dataset's review queue.

    `item_id` is the same for the same answer (`review_rules.item_id_of(run_id, attempt_key)`):
    an answer goes into the queue at most once. `answer` is the kept (redacted) answer, cut at
    `ANSWER_KEPT_CHARS`; `expected` what the case expects (`reference`, `counter_example`,
    `expected_calls`, `checks`, as the case has them); `scores` every scorer's `{scorer, passed,
    score, reason}` as graded; `scored_state` the attempt's state as its scorers left it.
    `answered_at_ms`: when the answer was recorded (epoch ms). `version` counts decisions and
    undos: each is written conditional on it. `pending_runs`: the runs whose outcome the last
    decision changed and that are still being computed again.
    """

    item_id: str
    org_id: str
    dataset_id: str
    dataset_version: int
    case_id: str
    agent_id: str
    run_id: str
    arm_id: str
    arm_label: str = ""
    attempt_key: str
    answered_at_ms: int
    reason: str
    sent_at: str
    sent_by: str | None = None
    state: str = ItemState.WAITING.value
    question: str = ""
    answer: str = ""
    answer_truncated: bool = False
    expected: Any = field(default_factory=dict)
    scores: Any = field(default_factory=list)
    scored_state: str = ""
    tags: list[str] = field(default_factory=list)
    verdict: str | None = None
    note: str | None = None
    decided_by: str | None = None
    decided_at: str | None = None
    replacing: str | None = None
    """The item this answer took the place of, when it did."""
    replaced_by: str | None = None
    version: int = 0
    pending_runs: list[str] | None = None

    @property
    def corrected(self) -> bool:
        """Whether a person's verdict overturned what the scorers said of the answer."""
        return self.verdict is not None and self.verdict != (
            "pass" if self.scored_state == "passed" else "fail"
        )


@dataclass(frozen=True, kw_only=True)
class ReviewAudit:
    """One audit entry of a dataset's review queue: a decision or an Undo on `item_id` by `by`
    at `at` (ISO), with the item's state and verdict before and after, and the numbers of every
    run it changed before and after: `runs` is `[{run_id, before: {passed, failed, cases,
    regressions, verdict}, after: {...}}]`; `suite_results` likewise `[{suite_id, run_id,
    before, after}]` with each result's word. `key_id`: the API key `by` acted through;
    `actor`: the administrator signed in as `by` (None when `by` acted as themselves)."""

    audit_id: str
    org_id: str
    dataset_id: str
    item_id: str
    action: str
    by: str
    at: str
    state_before: str
    state_after: str
    verdict_before: str | None = None
    verdict_after: str | None = None
    note: str | None = None
    runs: Any = field(default_factory=list)
    suite_results: Any = field(default_factory=list)
    key_id: str | None = None
    actor: str | None = None
