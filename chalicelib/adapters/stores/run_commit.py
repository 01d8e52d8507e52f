"""The one transaction of the ledger's writes that fold a run into its agent's history
(docs/architecture/exactly-once.md): the run's own writes and the history rows they move, written
together, read and folded again while another run of the agent wins a row. A base of
`stores.ledger.RunStore` and of its ends (`run_ends`), grading (`run_grading`) and removal
(`run_removal`) writes."""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from pynamodb.exceptions import TransactWriteError

import chalicelib.adapters.stores.history as history
from chalicelib import retrying
from chalicelib.adapters.stores.base import TX, unless_condition_failed
from chalicelib.domain import history as rules
from chalicelib.domain.records import Run
from chalicelib.errors import ConflictError

__all__ = ["RunCommit"]

from chalicelib.adapters.stores.run_reads import RunReads


class RunCommit(RunReads):
    """The ledger's reads and its shared transaction (a base of `RunStore`, `RunEnds`,
    `RunGrading` and `RunRemoval`)."""

    def _commit(
        self,
        run: Run,
        rows: Sequence[rules.HistoryRow],
        own: Callable[[Any], int],
        fold: Callable[[dict[str, history.Held]], list[rules.HistoryRow]],
    ) -> bool:
        """`own(t)` (the run's own writes into transaction `t`; returns how many items it added)
        and the history `rows` of the run's agent as `fold` makes them of the rows as read, in ONE
        transaction, read and folded again while another run of the agent wins a row, and tried
        again after a conflict with another transaction (the organization's row is busy: every
        slot moves through it). False when a condition of the run's own writes failed.

        Raises:
            ConflictError: `history.TRIES` transactions in a row lost to the agent's other runs.
        """
        for _ in range(history.TRIES):
            held = history.held_rows(run, rows) if rows else {}
            changed = history.changes(held, fold(held))
            first = 0
            try:
                with TX.write() as t:
                    first = own(t)
                    history.stage(t, run, changed)
                return True
            except TransactWriteError as exc:
                if not history.lost_to_history(exc, first):
                    unless_condition_failed(exc)
                    return False
            retrying.jitter()
        raise ConflictError(
            f"the history of agent {run.agent_id} keeps changing: try again", field="run_id"
        )
