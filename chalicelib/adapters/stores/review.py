"""The review queues (port `ports.review.ReviewQueue`, docs/guides/review.md): one partition per
dataset (`<org_id>#<dataset_id>`) of items, the waiting mark of each case and agent, and the
queue's counter; audit entries in their own table under the same key."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from typing import Any

from pynamodb.exceptions import DoesNotExist, TransactWriteError
from pynamodb.transactions import TransactWrite

from chalicelib.adapters.stores.base import (
    TX,
    changes,
    check_dataset_live,
    conditional_update,
    dataset_live,
    delete_found,
    record_of,
    row_of,
    unless_condition_failed,
)
from chalicelib.adapters.tables import (
    AttemptRow,
    ReviewAuditRow,
    ReviewItemRow,
    RunRow,
    SuiteResultRow,
    org_key,
)
from chalicelib.adapters.tables_review import COUNTER_ID, ITEM_PREFIX, WAITING_PREFIX
from chalicelib.domain.records import SuiteResultEntry
from chalicelib.domain.review_items import ItemState, ReviewAudit, ReviewItem
from chalicelib.errors import ConflictError, NotFoundError
from chalicelib.services.ports.review import Decision, ItemPage, Mark, QueueFull, Sent

_KEYS = ("item_id",)


def _queue(org_id: str, dataset_id: str) -> str:
    return org_key(org_id, dataset_id)


def _mark_id(case_id: str, agent_id: str) -> str:
    return f"{WAITING_PREFIX}{case_id}#{agent_id}"


def _item(row: ReviewItemRow) -> ReviewItem:
    return record_of(row, ReviewItem, {"tags": list, "pending_runs": list})


def _review_action(review: dict[str, Any] | None) -> Any:
    """The update putting `review` on an attempt (None: taking it off)."""
    return AttemptRow.review.remove() if review is None else AttemptRow.review.set(review)


def _was(attribute: Any, value: Any) -> Any:
    """The condition that `attribute` holds `value` as read (absent or 0 when None or 0)."""
    if value in (None, 0):
        return attribute.does_not_exist() | (attribute == 0)
    return attribute == value


class ReviewStore:
    """The review queues of every organization (`ports.review.ReviewQueue`)."""

    def get(self, org_id: str, dataset_id: str, item_id: str) -> ReviewItem | None:
        if not item_id.startswith(ITEM_PREFIX):
            return None
        try:
            row = ReviewItemRow.get(_queue(org_id, dataset_id), item_id, consistent_read=True)
        except DoesNotExist:
            return None
        return _item(row)

    def waiting(
        self, org_id: str, dataset_id: str, pairs: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], ReviewItem]:
        queue = _queue(org_id, dataset_id)
        wanted = {_mark_id(case, agent): (case, agent) for case, agent in pairs}
        holders: dict[str, tuple[str, str]] = {}
        ids = list(wanted)
        for i in range(0, len(ids), 100):
            for row in ReviewItemRow.batch_get(
                [(queue, mark) for mark in ids[i : i + 100]], consistent_read=True
            ):
                if row.holder:
                    holders[row.holder] = wanted[row.item_id]
        out: dict[tuple[str, str], ReviewItem] = {}
        held = list(holders)
        for i in range(0, len(held), 100):
            for row in ReviewItemRow.batch_get(
                [(queue, item) for item in held[i : i + 100]], consistent_read=True
            ):
                out[holders[row.item_id]] = _item(row)
        return out

    def count_waiting(self, org_id: str, dataset_id: str) -> int:
        try:
            row = ReviewItemRow.get(_queue(org_id, dataset_id), COUNTER_ID, consistent_read=True)
        except DoesNotExist:
            return 0
        return max(0, int(row.waiting or 0))

    def waiting_by_agent(self, org_id: str, dataset_id: str) -> dict[str, int]:
        out: dict[str, int] = {}
        rows = ReviewItemRow.query(
            _queue(org_id, dataset_id),
            ReviewItemRow.item_id.startswith(WAITING_PREFIX),
            consistent_read=True,
            attributes_to_get=["item_id"],
        )
        for row in rows:
            agent = row.item_id.rpartition("#")[2]  # `waiting#<case_id>#<agent_id>`
            out[agent] = out.get(agent, 0) + 1
        return out

    def _count(self, t: TransactWrite, item: ReviewItem, delta: int, limit: int | None) -> None:
        counter = ReviewItemRow(_queue(item.org_id, item.dataset_id), COUNTER_ID)
        condition = None
        if limit is not None:
            condition = ReviewItemRow.waiting.does_not_exist() | (ReviewItemRow.waiting < limit)
        t.update(
            counter,
            actions=[ReviewItemRow.org_id.set(item.org_id), ReviewItemRow.waiting.add(delta)],
            condition=condition,
        )

    def send(self, item: ReviewItem, replacing: ReviewItem | None, limit: int) -> Sent:
        queue = _queue(item.org_id, item.dataset_id)
        mark = ReviewItemRow(
            queue,
            _mark_id(item.case_id, item.agent_id),
            org_id=item.org_id,
            holder=item.item_id,
        )
        try:
            with TX.write() as t:
                t.save(
                    row_of(item, ReviewItemRow, queue_key=queue),
                    condition=ReviewItemRow.item_id.does_not_exist(),
                )
                t.save(
                    mark,
                    condition=ReviewItemRow.item_id.does_not_exist()
                    if replacing is None
                    else ReviewItemRow.holder == replacing.item_id,
                )
                if replacing is None:
                    self._count(t, item, 1, limit)
                else:
                    t.update(
                        ReviewItemRow(queue, replacing.item_id),
                        actions=[
                            ReviewItemRow.state.set(ItemState.REPLACED.value),
                            ReviewItemRow.replaced_by.set(item.item_id),
                        ],
                        condition=ReviewItemRow.state == ItemState.WAITING.value,
                    )
                check_dataset_live(t, item.org_id, item.dataset_id)
            return Sent.SENT
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            # Which condition failed is read back, not taken from the reasons' order.
            if self.get(item.org_id, item.dataset_id, item.item_id) is not None:
                return Sent.EXISTS
            if not dataset_live(item.org_id, item.dataset_id):
                raise NotFoundError(
                    f"dataset {item.dataset_id} is gone or being deleted", field="dataset_id"
                ) from exc
            if replacing is None and self.count_waiting(item.org_id, item.dataset_id) >= limit:
                raise QueueFull(
                    f"the review queue of dataset {item.dataset_id} holds {limit} waiting "
                    f"answer{'' if limit == 1 else 's'}, as many as it may: decide some first"
                ) from exc
            return Sent.LOST

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
        condition = None
        for part in (
            ReviewItemRow.state == state if state else None,
            ReviewItemRow.agent_id == agent_id if agent_id else None,
            ReviewItemRow.tags.contains(tag) if tag else None,
        ):
            if part is not None:
                condition = part if condition is None else condition & part
        queue = _queue(org_id, dataset_id)
        items: list[ReviewItem] = []
        last: str | None = start
        while True:
            rows = ReviewItemRow.query(
                queue,
                ReviewItemRow.item_id.startswith(ITEM_PREFIX),
                filter_condition=condition,
                scan_index_forward=False,
                consistent_read=True,
                limit=max(limit, 25),
                last_evaluated_key=(
                    {"queue_key": {"S": queue}, "item_id": {"S": last}} if last else None
                ),
            )
            for row in rows:
                item = _item(row)
                if keep is not None and not keep(item):
                    continue
                items.append(item)
                if len(items) == limit:
                    return ItemPage(items, row.item_id)
            key = rows.last_evaluated_key
            if not key:
                return ItemPage(items, None)
            last = key["item_id"]["S"]

    def decide(self, decision: Decision) -> bool:
        before, after = decision.before, decision.after
        queue = _queue(after.org_id, after.dataset_id)
        try:
            with TX.write() as t:
                t.update(
                    ReviewItemRow(queue, after.item_id),
                    actions=changes(ReviewItemRow, before, after, fixed=_KEYS),
                    condition=(ReviewItemRow.state == before.state)
                    & _was(ReviewItemRow.version, before.version),
                )
                mark = ReviewItemRow(queue, _mark_id(after.case_id, after.agent_id))
                if decision.mark is Mark.RELEASE:
                    t.delete(mark, condition=ReviewItemRow.holder == after.item_id)
                    self._count(t, after, -1, None)
                elif decision.mark is Mark.TAKE:
                    mark.org_id, mark.holder = after.org_id, after.item_id
                    t.save(mark, condition=ReviewItemRow.item_id.does_not_exist())
                    self._count(t, after, 1, None)
                audit = decision.audit
                t.save(
                    row_of(
                        audit,
                        ReviewAuditRow,
                        queue_key=queue,
                        audit_key=f"{audit.at}#{audit.audit_id}",
                    ),
                    condition=ReviewAuditRow.audit_key.does_not_exist(),
                )
                if decision.run_id is not None:
                    t.update(
                        AttemptRow(org_key(after.org_id, decision.run_id), decision.attempt_key),
                        actions=[_review_action(decision.review)],
                        condition=AttemptRow.attempt_key.exists(),
                    )
                for run_id, key in decision.copies:
                    t.update(
                        AttemptRow(org_key(after.org_id, run_id), key),
                        actions=[_review_action(decision.review)],
                        condition=AttemptRow.attempt_key.exists(),
                    )
                for run in decision.runs:
                    t.update(
                        RunRow(org_key(after.org_id, run.run_id)),
                        actions=[RunRow.outcome_stale.set(True), RunRow.regrades.add(1)],
                        condition=_was(RunRow.regrades, run.seen) & RunRow.run_key.exists(),
                    )
                for result in decision.results:
                    t.update(
                        SuiteResultRow(
                            org_key(result.org_id, result.agent_id, result.suite_id),
                            result.started_key,
                        ),
                        actions=[SuiteResultRow.stale.set(True)],
                        condition=SuiteResultRow.started_key.exists(),
                    )
                check_dataset_live(t, after.org_id, after.dataset_id)
            return True
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            if not dataset_live(after.org_id, after.dataset_id):
                raise NotFoundError(
                    f"dataset {after.dataset_id} is gone or being deleted", field="dataset_id"
                ) from exc
            return False

    def mark_stale(
        self,
        org_id: str,
        run_ids: list[str],
        results: list[SuiteResultEntry],
        copies: list[tuple[str, str]],
        review: dict[str, Any] | None,
    ) -> None:
        for run_id, key in copies:
            conditional_update(
                AttemptRow(org_key(org_id, run_id), key),
                [_review_action(review)],
                AttemptRow.attempt_key.exists(),
            )
        for run_id in run_ids:
            conditional_update(
                RunRow(org_key(org_id, run_id)),
                [RunRow.outcome_stale.set(True), RunRow.regrades.add(1)],
                RunRow.run_key.exists(),
            )
        for result in results:
            conditional_update(
                SuiteResultRow(
                    org_key(result.org_id, result.agent_id, result.suite_id), result.started_key
                ),
                [SuiteResultRow.stale.set(True)],
                SuiteResultRow.started_key.exists(),
            )

    def finish(self, item: ReviewItem, pending_runs: list[str]) -> None:
        row = ReviewItemRow(_queue(item.org_id, item.dataset_id), item.item_id)
        row.update(
            actions=[
                ReviewItemRow.pending_runs.set(pending_runs)
                if pending_runs
                else ReviewItemRow.pending_runs.remove()
            ],
            condition=ReviewItemRow.item_id.exists(),
        )

    def audit(self, org_id: str, dataset_id: str, item_id: str | None = None) -> list[ReviewAudit]:
        rows = ReviewAuditRow.query(
            _queue(org_id, dataset_id),
            filter_condition=(ReviewAuditRow.item_id == item_id) if item_id else None,
            consistent_read=True,
        )
        return [record_of(row, ReviewAudit) for row in rows]

    def forget_run(
        self, org_id: str, dataset_id: str, run_id: str, keep: frozenset[str] = frozenset()
    ) -> int:
        """Delete the items of one run's answers but those of the attempts in `keep` (the audit
        stays); a waiting one frees its case and agent. Returns how many went."""
        rows = ReviewItemRow.query(
            _queue(org_id, dataset_id),
            ReviewItemRow.item_id.startswith(ITEM_PREFIX),
            filter_condition=ReviewItemRow.run_id == run_id,
            consistent_read=True,
        )
        gone = 0
        for row in rows:
            if row.attempt_key not in keep:
                self._forget(_item(row))
                gone += 1
        return gone

    def forget_agent(self, org_id: str, dataset_id: str, agent_id: str) -> int:
        queue = _queue(org_id, dataset_id)
        rows = ReviewItemRow.query(
            queue,
            ReviewItemRow.item_id.startswith(ITEM_PREFIX),
            filter_condition=ReviewItemRow.agent_id == agent_id,
            consistent_read=True,
        )
        gone = set()
        for row in rows:
            self._forget(_item(row))
            gone.add(row.item_id)
        if gone:
            delete_found(
                (r for r in ReviewAuditRow.query(queue, consistent_read=True) if r.item_id in gone),
                ReviewAuditRow,
            )
        return len(gone)

    def _forget(self, item: ReviewItem) -> None:
        """Delete one item; a waiting one with its mark and one off the count, in one
        transaction (read again and tried again when somebody decided it meanwhile)."""
        queue = _queue(item.org_id, item.dataset_id)
        for _ in range(5):
            if item.state != ItemState.WAITING:
                ReviewItemRow(queue, item.item_id).delete()
                return
            try:
                with TX.write() as t:
                    t.delete(
                        ReviewItemRow(queue, item.item_id),
                        condition=ReviewItemRow.state == ItemState.WAITING.value,
                    )
                    t.delete(
                        ReviewItemRow(queue, _mark_id(item.case_id, item.agent_id)),
                        condition=ReviewItemRow.holder == item.item_id,
                    )
                    self._count(t, item, -1, None)
                return
            except TransactWriteError as exc:
                unless_condition_failed(exc)
                now = self.get(item.org_id, item.dataset_id, item.item_id)
                if now is None:
                    return
                item = now
        raise ConflictError(
            f"review item {item.item_id} kept changing while it was deleted: delete again",
            field="agent_id",
        )

    def delete_queue(self, org_id: str, dataset_id: str) -> None:
        queue = _queue(org_id, dataset_id)
        delete_found(
            ReviewItemRow.query(queue, attributes_to_get=["queue_key", "item_id"]), ReviewItemRow
        )
        delete_found(
            ReviewAuditRow.query(queue, attributes_to_get=["queue_key", "audit_key"]),
            ReviewAuditRow,
        )
