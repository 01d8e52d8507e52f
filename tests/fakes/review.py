"""A fake of `chalicelib.services.ports.review.ReviewQueue`: the queues in dicts, each write
honouring the store's conditions; a decision applies to the runs and suite results it marks all
at once or not at all, as the store's one transaction does. `before_decide`, when set, runs once
before the next `decide` checks its conditions (what a concurrent decision writes in between)."""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import replace
from typing import Any

from chalicelib.domain.records import SuiteResultEntry
from chalicelib.domain.review_items import ItemState, ReviewAudit, ReviewItem
from chalicelib.errors import NotFoundError
from chalicelib.services.ports.review import Decision, ItemPage, Mark, QueueFull, Sent
from tests.fakes.automation import FakeSuites
from tests.fakes.ledger import FakeRuns


class FakeReviewQueue:
    """Items by (org_id, dataset_id, item_id), the waiting marks by (org_id, dataset_id, case_id,
    agent_id), audit entries by (org_id, dataset_id)."""

    def __init__(self, runs: FakeRuns, suites: FakeSuites) -> None:
        self.runs = runs
        self.suites = suites
        self.items: dict[tuple[str, str, str], ReviewItem] = {}
        self.marks: dict[tuple[str, str, str, str], str] = {}
        self.audits: dict[tuple[str, str], list[ReviewAudit]] = {}
        self.gone: set[tuple[str, str]] = set()
        """Datasets being deleted: a send to their queue, and a decision in it, are refused."""
        self.before_decide: Callable[[], None] | None = None

    def get(self, org_id: str, dataset_id: str, item_id: str) -> ReviewItem | None:
        return self.items.get((org_id, dataset_id, item_id))

    def waiting(
        self, org_id: str, dataset_id: str, pairs: Iterable[tuple[str, str]]
    ) -> dict[tuple[str, str], ReviewItem]:
        out = {}
        for case_id, agent_id in pairs:
            holder = self.marks.get((org_id, dataset_id, case_id, agent_id))
            if holder is not None:
                out[(case_id, agent_id)] = self.items[(org_id, dataset_id, holder)]
        return out

    def count_waiting(self, org_id: str, dataset_id: str) -> int:
        return sum(1 for k in self.marks if k[:2] == (org_id, dataset_id))

    def waiting_by_agent(self, org_id: str, dataset_id: str) -> dict[str, int]:
        out: dict[str, int] = {}
        for org, dataset, _case, agent in self.marks:
            if (org, dataset) == (org_id, dataset_id):
                out[agent] = out.get(agent, 0) + 1
        return out

    def send(self, item: ReviewItem, replacing: ReviewItem | None, limit: int) -> Sent:
        key = (item.org_id, item.dataset_id, item.item_id)
        mark = (item.org_id, item.dataset_id, item.case_id, item.agent_id)
        if key in self.items:
            return Sent.EXISTS
        if (item.org_id, item.dataset_id) in self.gone:
            raise NotFoundError(
                f"dataset {item.dataset_id} is gone or being deleted", field="dataset_id"
            )
        if self.marks.get(mark) != (replacing.item_id if replacing else None):
            return Sent.LOST
        if replacing is None and self.count_waiting(item.org_id, item.dataset_id) >= limit:
            raise QueueFull(
                f"the review queue of dataset {item.dataset_id} holds {limit} waiting "
                f"answer{'' if limit == 1 else 's'}"
            )
        if replacing is not None:
            old = (item.org_id, item.dataset_id, replacing.item_id)
            self.items[old] = replace(
                self.items[old], state=ItemState.REPLACED.value, replaced_by=item.item_id
            )
        self.items[key] = item
        self.marks[mark] = item.item_id
        return Sent.SENT

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
        ids = sorted((k[2] for k in self.items if k[:2] == (org_id, dataset_id)), reverse=True)
        out: list[ReviewItem] = []
        for item_id in ids:
            if start is not None and item_id >= start:
                continue
            item = self.items[(org_id, dataset_id, item_id)]
            if (state and item.state != state) or (agent_id and item.agent_id != agent_id):
                continue
            if (tag and tag not in item.tags) or (keep is not None and not keep(item)):
                continue
            out.append(item)
            if len(out) == limit:
                return ItemPage(out, item_id)
        return ItemPage(out, None)

    def decide(self, decision: Decision) -> bool:
        if self.before_decide is not None:
            hook, self.before_decide = self.before_decide, None
            hook()
        before, after = decision.before, decision.after
        org, dataset = after.org_id, after.dataset_id
        if (org, dataset) in self.gone:
            raise NotFoundError(f"dataset {dataset} is gone or being deleted", field="dataset_id")
        kept = self.items.get((org, dataset, after.item_id))
        if kept is None or (kept.state, kept.version) != (before.state, before.version):
            return False
        mark = (org, dataset, after.case_id, after.agent_id)
        if decision.mark is Mark.RELEASE and self.marks.get(mark) != after.item_id:
            return False
        if decision.mark is Mark.TAKE and mark in self.marks:
            return False
        for run in decision.runs:
            found = self.runs.kept.get((org, run.run_id))
            if found is None or int(found.regrades or 0) != int(run.seen or 0):
                return False
        attempt = None
        if decision.run_id is not None:
            attempt = self.runs.get_attempt(org, decision.run_id, decision.attempt_key)
            if attempt is None:
                return False
        copies = [self.runs.get_attempt(org, run_id, key) for run_id, key in decision.copies]
        if any(copy is None for copy in copies):
            return False
        # Every condition held: all of it applies.
        self.items[(org, dataset, after.item_id)] = after
        if decision.mark is Mark.RELEASE:
            del self.marks[mark]
        elif decision.mark is Mark.TAKE:
            self.marks[mark] = after.item_id
        self.audits.setdefault((org, dataset), []).append(decision.audit)
        if attempt is not None and decision.run_id is not None:
            self.runs.add_attempt(org, replace(attempt, review=decision.review))
        for copy in copies:
            if copy is not None:
                self.runs.add_attempt(org, replace(copy, review=decision.review))
        for run in decision.runs:
            found = self.runs.kept[(org, run.run_id)]
            self.runs.set(
                org, run.run_id, outcome_stale=True, regrades=int(found.regrades or 0) + 1
            )
        for result in decision.results:
            results = self.suites.kept_results.get(
                (result.org_id, result.agent_id, result.suite_id), {}
            )
            if result.started_key in results:
                results[result.started_key] = replace(results[result.started_key], stale=True)
        return True

    def mark_stale(
        self,
        org_id: str,
        run_ids: list[str],
        results: list[SuiteResultEntry],
        copies: list[tuple[str, str]],
        review: dict[str, Any] | None,
    ) -> None:
        for run_id, key in copies:
            copy = self.runs.get_attempt(org_id, run_id, key)
            if copy is not None:
                self.runs.add_attempt(org_id, replace(copy, review=review))
        for run_id in run_ids:
            found = self.runs.kept.get((org_id, run_id))
            if found is not None:
                self.runs.set(
                    org_id, run_id, outcome_stale=True, regrades=int(found.regrades or 0) + 1
                )
        for result in results:
            kept = self.suites.kept_results.get(
                (result.org_id, result.agent_id, result.suite_id), {}
            )
            if result.started_key in kept:
                kept[result.started_key] = replace(kept[result.started_key], stale=True)

    def finish(self, item: ReviewItem, pending_runs: list[str]) -> None:
        key = (item.org_id, item.dataset_id, item.item_id)
        if key in self.items:
            self.items[key] = replace(self.items[key], pending_runs=pending_runs or None)

    def audit(self, org_id: str, dataset_id: str, item_id: str | None = None) -> list[ReviewAudit]:
        return [
            a
            for a in self.audits.get((org_id, dataset_id), [])
            if item_id is None or a.item_id == item_id
        ]

    def forget_run(
        self, org_id: str, dataset_id: str, run_id: str, keep: frozenset[str] = frozenset()
    ) -> int:
        mine = [
            k
            for k, i in self.items.items()
            if k[:2] == (org_id, dataset_id) and i.run_id == run_id and i.attempt_key not in keep
        ]
        for key in mine:
            item = self.items.pop(key)
            mark = (org_id, dataset_id, item.case_id, item.agent_id)
            if self.marks.get(mark) == item.item_id:
                del self.marks[mark]
        return len(mine)

    def forget_agent(self, org_id: str, dataset_id: str, agent_id: str) -> int:
        gone = {
            k[2]
            for k, item in self.items.items()
            if k[:2] == (org_id, dataset_id) and item.agent_id == agent_id
        }
        for item_id in gone:
            del self.items[(org_id, dataset_id, item_id)]
        for mark in [k for k in self.marks if k[:2] == (org_id, dataset_id) and k[3] == agent_id]:
            del self.marks[mark]
        kept = self.audits.get((org_id, dataset_id), [])
        self.audits[(org_id, dataset_id)] = [a for a in kept if a.item_id not in gone]
        return len(gone)

    def delete_queue(self, org_id: str, dataset_id: str) -> None:
        for key in [k for k in self.items if k[:2] == (org_id, dataset_id)]:
            del self.items[key]
        for mark in [k for k in self.marks if k[:2] == (org_id, dataset_id)]:
            del self.marks[mark]
        self.audits.pop((org_id, dataset_id), None)
