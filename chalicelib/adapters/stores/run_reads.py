"""Reading the ledger (docs/architecture/exactly-once.md): a run, the organization's, an agent's,
a dataset's and an evaluation's runs page by page, their chart rows, the active runs and the
history rows, and a run's attempts. `stores.ledger.RunStore` has these reads as its own."""

from __future__ import annotations

import json
from collections.abc import Sequence
from typing import Any

from pynamodb.exceptions import (
    DoesNotExist,
)
from pynamodb.expressions.condition import Condition

import chalicelib.adapters.stores.history as history
from chalicelib.adapters.stores.base import (
    query_records,
    record_of,
)
from chalicelib.adapters.tables import (
    AttemptRow,
    OrganizationRow,
    RunRow,
    TrendRow,
    org_key,
)
from chalicelib.domain import history as rules
from chalicelib.domain.chart import TrendRun
from chalicelib.domain.records import ActiveRun, Attempt, Run
from chalicelib.errors import NotFoundError
from chalicelib.services.ports.ledger import RunPage, TrendPage

__all__ = ["RunReads"]

from chalicelib.adapters.stores.run_rows import (
    _ACTIVE,
    _RUNNING,
    _STORED,
    _evaluation_run_key,
    _key,
    _listing_hash,
    _page,
    run_of,
)


class RunReads:
    """The ledger's reads (a base of `RunStore`)."""

    def get(self, org_id: str, run_id: str) -> Run | None:
        """The organization's run (consistent), or None."""
        try:
            return run_of(RunRow.get(org_key(org_id, run_id), consistent_read=True))
        except DoesNotExist:
            return None

    def refresh(self, run: Run) -> Run | None:
        """`run` with its changing fields (`Run.CURSOR`) read again (consistent, projected: a small
        read); None when the run was deleted."""
        try:
            fresh = RunRow.get(
                _key(run), consistent_read=True, attributes_to_get=["run_id", *Run.CURSOR]
            )
        except DoesNotExist:
            return None
        values = fresh.attribute_values
        return run.moved(**{name: values.get(name) for name in Run.CURSOR})

    def get_for_org(self, org_id: str, run_id: str) -> Run:
        """Raises NotFoundError for a run the organization does not have."""
        run = self.get(org_id, run_id)
        if run is None:
            raise NotFoundError(f"eval run {run_id} not found", field="run_id")
        return run

    def list_by_agent(
        self,
        org_id: str,
        agent_id: str,
        limit: int = 50,
        start: dict[str, Any] | None = None,
        before: str | None = None,
    ) -> RunPage:
        """The organization's agent's runs, newest first, a page at a time (`start`: the previous
        page's `next_start`, keys `run_key`, `agent_key`, `created_at`); with `before` (an ISO
        time), only the runs created before it (a condition on the index's sort key)."""
        return _page(
            RunRow.agent_index.query(
                org_key(org_id, agent_id),
                RunRow.created_at < before if before is not None else None,
                scan_index_forward=False,
                limit=limit,
                last_evaluated_key=start,
            )
        )

    def list_by_org(
        self, org_id: str, limit: int = 50, start: dict[str, Any] | None = None
    ) -> RunPage:
        """The organization's runs, newest first (`start` keys: `run_key`, `org_id`,
        `created_at`)."""
        return _page(
            RunRow.org_index.query(
                org_id, scan_index_forward=False, limit=limit, last_evaluated_key=start
            )
        )

    def list_by_dataset(
        self, org_id: str, dataset_id: str, limit: int = 50, start: dict[str, Any] | None = None
    ) -> RunPage:
        """The organization's dataset's runs, newest first (`start` keys: `run_key`, `dataset_key`,
        `created_at`)."""
        return _page(
            RunRow.dataset_index.query(
                org_key(org_id, dataset_id),
                scan_index_forward=False,
                limit=limit,
                last_evaluated_key=start,
            )
        )

    def list_by_evaluation(
        self, org_id: str, evaluation_id: str, limit: int = 50, start: dict[str, Any] | None = None
    ) -> RunPage:
        """The organization's evaluation's runs, newest first (docs/guides/by-hand.md; `start`
        keys: `run_key`, `evaluation_run_key`, `created_at`)."""
        return _page(
            RunRow.evaluation_runs_index.query(
                _evaluation_run_key(org_id, evaluation_id),
                scan_index_forward=False,
                limit=limit,
                last_evaluated_key=start,
            )
        )

    def _trends(
        self, index: str | None, hash_key: str, limit: int, start: dict[str, Any] | None
    ) -> TrendPage:
        """One page of the trend rows under `hash_key` (of the table, or of `index`), newest
        first, read straight off the wire items (each one JSON string: no row objects)."""
        page = TrendRow._get_connection().query(
            hash_key,
            index_name=index,
            attributes_to_get=["point"],
            scan_index_forward=False,
            limit=limit,
            exclusive_start_key=start,
        )
        runs = [TrendRun.of_json(json.loads(item["point"]["S"])) for item in page.get("Items", ())]
        return TrendPage(runs, page.get("LastEvaluatedKey"))

    def trends_by_agent(
        self, org_id: str, agent_id: str, limit: int = 500, start: dict[str, Any] | None = None
    ) -> TrendPage:
        """The agent's completed runs as the chart reads them (`TrendRun`), newest first (`start`:
        a page's `next_start`)."""
        return self._trends(None, org_key(org_id, agent_id), limit, start)

    def trends_by_dataset(
        self, org_id: str, dataset_id: str, limit: int = 500, start: dict[str, Any] | None = None
    ) -> TrendPage:
        """The dataset's completed runs as the chart reads them, newest first."""
        return self._trends(
            TrendRow.dataset_index.Meta.index_name, org_key(org_id, dataset_id), limit, start
        )

    @staticmethod
    def page_start_of(
        run: Run,
        *,
        agent_id: str | None = None,
        dataset_id: str | None = None,
        evaluation_id: str | None = None,
    ) -> dict[str, Any]:
        """The `start` of the page after `run` in its organization's listing (as
        `is_page_start`): what a filtered listing hands out when it stops before a page's end."""
        hash_name, hash_value = _listing_hash(run.org_id, agent_id, dataset_id, evaluation_id)
        return {
            "run_key": {"S": _key(run)},
            hash_name: {"S": hash_value},
            "created_at": {"S": run.created_at},
        }

    @staticmethod
    def is_page_start(
        start: Any,
        org_id: str,
        *,
        agent_id: str | None = None,
        dataset_id: str | None = None,
        evaluation_id: str | None = None,
    ) -> bool:
        """Whether `start` is a `next_start` of this organization's listing: of the agent's
        runs (`agent_id`), the dataset's (`dataset_id`), the evaluation's (`evaluation_id`) or
        else all of them. Exactly the keys `run_key` (a run of the organization), the index's hash
        key (its value for this listing) and `created_at`, each `{"S": str}`."""
        hash_name, hash_value = _listing_hash(org_id, agent_id, dataset_id, evaluation_id)
        return (
            isinstance(start, dict)
            and set(start) == {"run_key", hash_name, "created_at"}
            and all(
                isinstance(v, dict) and set(v) == {"S"} and isinstance(v["S"], str)
                for v in start.values()
            )
            and start[hash_name]["S"] == hash_value
            and start["run_key"]["S"].startswith(org_key(org_id, ""))
        )

    def active(self, org_id: str) -> list[ActiveRun]:
        """Every queued or running run of the organization, newest first (consistent): the
        organization's list of them, then their rows in batches, projected to what their committed
        spend and what they use need."""
        try:
            org = OrganizationRow.get(
                org_id, consistent_read=True, attributes_to_get=["org_id", "active_runs"]
            )
        except DoesNotExist:
            return []
        ids = sorted(org.active_runs or ())
        rows = RunRow.batch_get(
            [org_key(org_id, i) for i in ids], consistent_read=True, attributes_to_get=_ACTIVE
        )
        runs = [record_of(r, ActiveRun, _STORED) for r in rows if r.status in _RUNNING]
        return sorted(runs, key=lambda r: (r.created_at, r.run_id), reverse=True)

    def history(
        self, org_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], rules.HistoryRow]:
        """The organization's agents' history rows named by `(agent_id, row key)` (eventually
        consistent, 100 keys per request); rows nobody wrote are left out."""
        return {k: h.row for k, h in history.read(org_id, keys, consistent=False).items()}

    # -- attempts

    def get_attempt(self, org_id: str, run_id: str, key: str) -> Attempt | None:
        """One attempt (consistent), or None."""
        try:
            row = AttemptRow.get(org_key(org_id, run_id), key, consistent_read=True)
            return record_of(row, Attempt)
        except DoesNotExist:
            return None

    def attempt_exists(self, org_id: str, run_id: str, key: str) -> bool:
        """Whether the attempt is recorded (reads its key only)."""
        try:
            AttemptRow.get(
                org_key(org_id, run_id),
                key,
                consistent_read=True,
                attributes_to_get=["attempt_key"],
            )
            return True
        except DoesNotExist:
            return False

    def attempts(self, org_id: str, run_id: str) -> list[Attempt]:
        """Every attempt of the organization's run (consistent)."""
        return query_records(AttemptRow, Attempt, org_key(org_id, run_id))

    def attempt_keys(self, org_id: str, run_id: str) -> set[str]:
        """The keys of every attempt of the run (consistent, projected)."""
        rows = AttemptRow.query(
            org_key(org_id, run_id), consistent_read=True, attributes_to_get=["attempt_key"]
        )
        return {r.attempt_key for r in rows}

    def attempts_after(
        self, org_id: str, run_id: str, cursor: str, limit: int, *, until: str | None = None
    ) -> list[Attempt]:
        """Attempts with `cursor < recorded_key <= until`, in recorded order.

        An empty `cursor` means from the first attempt; `until` None means no upper bound.
        """
        condition: Condition | None
        if cursor and until:
            condition = AttemptRow.recorded_key.between(cursor, until)
        elif cursor:
            condition = AttemptRow.recorded_key > cursor
        elif until:
            condition = AttemptRow.recorded_key <= until
        else:
            condition = None
        rows = AttemptRow.order_index.query(
            org_key(org_id, run_id), condition, limit=limit + 1, consistent_read=True
        )
        return [record_of(r, Attempt) for r in rows if r.recorded_key != cursor][:limit]
