"""Removing an eval run and what it left (docs/architecture/run-lifecycle.md): a run's delete with
its attempts, leases and tool gateway sessions and its part of its agent's history, the mark that
it is being deleted, the first answers a run keeps of one it borrowed from, and an agent's history
rows forgotten. A base of `stores.ledger.RunStore`."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

import chalicelib.adapters.stores.history as history
from chalicelib.adapters.stores.base import (
    conditional_update,
    delete_found,
    row_of,
)
from chalicelib.adapters.tables import (
    AgentHistoryRow,
    AttemptRow,
    LeaseRow,
    RunRow,
    ToolSessionRow,
    org_key,
)
from chalicelib.domain import history as rules
from chalicelib.domain.records import Attempt, Run

__all__ = ["RunRemoval"]

from chalicelib.adapters.stores.run_commit import RunCommit
from chalicelib.adapters.stores.run_rows import (
    _evaluation_key,
    _key,
    _rows_touched,
    _trend_key,
)


class RunRemoval(RunCommit):
    """The writes that delete a run, or keep its deletion from leaving anything behind (a base of
    `RunStore`)."""

    def delete(self, org_id: str, run_id: str) -> None:
        """Delete the organization's run and every attempt it kept (and their leases and tool
        gateway sessions), then the run and its part of
        its agent's history in one transaction: its entries leave every row, and an evaluation whose
        latest run it was falls back to the latest of its remaining completed runs (the evaluation
        index, newest first: at most a few items read, whatever the history).

        Raises:
            ConflictError: the agent's history kept changing under it (`history.TRIES` times).
        """
        key = org_key(org_id, run_id)
        run = self.get(org_id, run_id)
        for model in (AttemptRow, LeaseRow):
            delete_found(model.query(key, attributes_to_get=["run_key", "attempt_key"]), model)
        delete_found(
            ToolSessionRow.query(key, attributes_to_get=["run_key", "session_id"]), ToolSessionRow
        )
        if run is None:
            return

        def own(t: Any) -> int:
            t.delete(RunRow(key))
            t.delete(_trend_key(run))
            return 2

        def fold(held: dict[str, history.Held]) -> list[rules.HistoryRow]:
            out = []
            for h in held.values():
                row = h.row.without_run(run_id)
                if isinstance(h.row, rules.LatestRow) and h.row.vacated_by(run_id) is not None:
                    before = self._latest_before(run)
                    row = row.with_run(before) if before is not None else row
                out.append(row)
            return out

        self._commit(run, _rows_touched(run), own, fold)

    def _latest_before(self, run: Run) -> Run | None:
        """The latest completed run of `run`'s evaluation other than `run` (the evaluation index,
        newest first; its keys only, then the run itself)."""
        evaluation = _evaluation_key(run)
        if evaluation is None:
            return None
        for row in RunRow.evaluation_index.query(evaluation, scan_index_forward=False, page_size=3):
            if row.run_key != _key(run):
                other = self.get(run.org_id, row.run_key.split("#", 1)[1])
                if other is not None and rules.counts(other):
                    return other
        return None

    def mark_deleting(self, org_id: str, run_id: str, at: str) -> bool:
        """Mark the organization's run as being deleted (`deleting_at`, kept if set already), so
        no run created from now on borrows its first answers; False when it is gone."""
        return conditional_update(
            RunRow(org_key(org_id, run_id)),
            [RunRow.deleting_at.set(RunRow.deleting_at | at)],
            RunRow.run_key.exists(),
        )

    def keep_borrowed(self, run: Run, attempts: Sequence[Attempt]) -> bool:
        """Write into `run` first answers it borrowed (`attempts`, relabelled as its own: their
        `run_id` is `run`'s), replacing any copy it kept already, 25 per `BatchWriteItem`; taken
        out again (False) when the run turns out to be deleted meanwhile, so a run's delete never
        leaves them behind."""
        key = _key(run)
        with AttemptRow.batch_write() as batch:
            for attempt in attempts:
                batch.save(row_of(attempt, AttemptRow, run_key=key))
        if self.get(run.org_id, run.run_id) is not None:
            return True
        delete_found((AttemptRow(key, a.attempt_key) for a in attempts), AttemptRow)
        return False

    def forget_history(self, org_id: str, agent_id: str, dataset_id: str | None = None) -> int:
        """Delete the agent's history rows (`agent_history`, a query of the agent's key): every
        one, or with `dataset_id` the baseline arms kept on that dataset (`arms#v<n>#<dataset>`),
        the only rows whose key names a dataset. Returns how many were deleted."""

        def named(item: str) -> bool:
            row = rules.row_of_json(item, None)
            return isinstance(row, rules.ArmsRow) and row.dataset_id == dataset_id

        rows = AgentHistoryRow.query(
            org_key(org_id, agent_id),
            AgentHistoryRow.item.startswith(f"{rules.ARMS}#") if dataset_id else None,
            attributes_to_get=["agent_key", "item"],
        )
        return delete_found(
            (r for r in rows if dataset_id is None or named(r.item)), AgentHistoryRow
        )
