"""The review queue's port (docs/guides/review.md): a dataset's items, one waiting per case and
agent, and the one conditional transaction of a person's decision or Undo."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from enum import StrEnum
from typing import Any, Protocol

from chalicelib.domain.records import SuiteResultEntry
from chalicelib.domain.review_items import ReviewAudit, ReviewItem


class QueueFull(Exception):
    """The dataset's queue holds as many waiting items as it may (the message says how many)."""


class Sent(StrEnum):
    """What a send did: the item went in (`SENT`); it was in the queue already (`EXISTS`: an
    answer goes in once); or the waiting item of its case and agent changed since it was read
    (`LOST`: read it again and route again)."""

    SENT = "sent"
    EXISTS = "exists"
    LOST = "lost"


class Mark(StrEnum):
    """What a decision does to the waiting mark of the item's case and agent: frees it (a
    decision), takes it again (an Undo while no other answer waits), or leaves it."""

    RELEASE = "release"
    TAKE = "take"
    KEEP = "keep"


@dataclass(frozen=True)
class StaleRun:
    """A run whose outcome rests on the decided answer: marked `outcome_stale`, its `regrades`
    moved by one, conditional on `regrades` as read (`seen`, None when absent)."""

    run_id: str
    seen: int | None


@dataclass(frozen=True)
class Decision:
    """One decision or Undo, written as one transaction (`ReviewQueue.decide`).

    `before`/`after`: the item as read and as it becomes (written conditional on `before`'s
    `state` and `version`). `audit`: its audit entry. `run_id`/`attempt_key`/`review`: the answer's
    attempt and the verdict it carries from now on (None removes it; `run_id` None when the run is
    gone). `runs`: the runs marked for their outcome to be computed again. `results`: their suite
    results, marked `stale`. `mark`: the waiting mark of the case and agent.
    """

    before: ReviewItem
    after: ReviewItem
    audit: ReviewAudit
    run_id: str | None
    attempt_key: str
    review: dict[str, Any] | None
    runs: list[StaleRun] = field(default_factory=list)
    results: list[SuiteResultEntry] = field(default_factory=list)
    mark: Mark = Mark.KEEP
    copies: list[tuple[str, str]] = field(default_factory=list)
    """`(run_id, attempt_key)` of each copy of the answer a borrowing baseline keeps (its run
    deleted): each carries `review` too."""


@dataclass(frozen=True)
class ItemPage:
    """A page of a queue's items, newest first; `next_start` continues it (None: the last)."""

    items: list[ReviewItem]
    next_start: str | None


class ReviewQueue(Protocol):
    """The organizations' review queues (tables `review_items`, `review_audit`, keyed by
    `<org_id>#<dataset_id>`)."""

    def get(self, org_id: str, dataset_id: str, item_id: str) -> ReviewItem | None:
        """One item of the organization's dataset's queue, or None."""

    def waiting(
        self, org_id: str, dataset_id: str, pairs: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], ReviewItem]:
        """The item still waiting for each (case_id, agent_id) of `pairs` that has one."""

    def count_waiting(self, org_id: str, dataset_id: str) -> int:
        """How many items of the queue wait."""

    def waiting_by_agent(self, org_id: str, dataset_id: str) -> dict[str, int]:
        """How many items of the queue wait, per agent id (read from the waiting marks)."""

    def send(self, item: ReviewItem, replacing: ReviewItem | None, limit: int) -> Sent:
        """Put `item` into its queue as the one waiting for its case and agent, in one
        transaction: conditional on no item of its id, and on the waiting mark as read (none when
        `replacing` is None, else `replacing`'s, which becomes `replaced`).

        Raises:
            QueueFull: a new waiting item (nothing replaced) would make more than `limit` wait.
        """

    def page(
        self,
        org_id: str,
        dataset_id: str,
        *,
        state: str | None,
        agent_id: str | None,
        tag: str | None,
        limit: int,
        start: str | None,
        keep: Callable[[ReviewItem], bool] | None = None,
    ) -> ItemPage:
        """The queue's items newest first, only those in `state`, of `agent_id`, or with `tag`
        when given, and only those `keep` accepts; at most `limit` from after `start`. Items
        `keep` refuses are never counted nor named by `next_start` (a caller's cursor never holds
        the id of an item it may not see)."""

    def decide(self, decision: Decision) -> bool:
        """Write a decision or Undo as ONE transaction (`Decision`), conditional on the dataset
        being there and not being deleted; False when a condition failed (somebody decided the
        item, or a run's grades moved, since they were read).

        Raises:
            NotFoundError: (field `dataset_id`) the dataset is gone or being deleted.
        """

    def mark_stale(
        self,
        org_id: str,
        run_ids: list[str],
        results: list[SuiteResultEntry],
        copies: list[tuple[str, str]],
        review: dict[str, Any] | None,
    ) -> None:
        """Mark each run `outcome_stale` with its `regrades` moved by one (whatever they were),
        each suite result `stale`, and put `review` on each copy `(run_id, attempt_key)` of the
        answer (None removes it), each write on its own, skipping what is gone: what a decision
        rests on beyond what its one transaction holds."""

    def finish(self, item: ReviewItem, pending_runs: list[str]) -> None:
        """Keep what is left to compute of the item's last decision (`[]`: nothing)."""

    def audit(self, org_id: str, dataset_id: str, item_id: str | None = None) -> list[ReviewAudit]:
        """The queue's audit entries oldest first, only `item_id`'s when given."""

    def forget_run(
        self, org_id: str, dataset_id: str, run_id: str, keep: frozenset[str] = frozenset()
    ) -> int:
        """Delete the items holding one run's answers, but those of the attempts (`arm#case#n`)
        in `keep` (its audit entries stay); a waiting one frees its case and agent. Returns how
        many went."""

    def forget_agent(self, org_id: str, dataset_id: str, agent_id: str) -> int:
        """Delete every item of `agent_id` in the dataset's queue (waiting ones with their mark,
        the count following) and the audit entries of those items; returns how many items."""

    def delete_queue(self, org_id: str, dataset_id: str) -> None:
        """Delete every item, mark and audit entry of the dataset's queue."""
