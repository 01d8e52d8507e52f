"""The rows of an agent's history (`chalicelib.domain.history`) on DynamoDB: read in batches,
written beside the ledger's own writes (`ledger.RunStore`: the transaction that completes a run,
a grade again, a delete), each conditional on the revision it was read at.

A write here is always part of a transaction that also moves the run, so a run is in its agent's
history exactly when it is completed: the fold and the completion commit together or not at all.
When another run of the same agent changed one of the rows meanwhile, the transaction fails on
that row's revision and the caller reads the rows again and folds again (`TRIES` times).
"""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from dataclasses import dataclass
from typing import Any

from pynamodb.exceptions import TransactWriteError

from chalicelib.adapters.stores.base import reason_codes
from chalicelib.adapters.tables import AgentHistoryRow, org_key
from chalicelib.domain.history import HistoryRow, row_of_json
from chalicelib.domain.records import Run

TRIES = 10
"""Transactions lost to another run of the same agent before giving up (`ConflictError`)."""

BATCH = 100
"""Keys per `BatchGetItem` (DynamoDB's limit)."""


@dataclass(frozen=True)
class Held:
    """A history row as read, and the revision to write it back at (None: nobody wrote it)."""

    row: HistoryRow
    revision: int | None


def read(
    org_id: str, keys: Iterable[tuple[str, str]], *, consistent: bool
) -> dict[tuple[str, str], Held]:
    """The rows named by `(agent_id, row key)` that exist, read `BATCH` keys at a time."""
    wanted = sorted(set(keys))
    found: dict[tuple[str, str], Held] = {}
    for i in range(0, len(wanted), BATCH):
        chunk = [(org_key(org_id, agent_id), item) for agent_id, item in wanted[i : i + BATCH]]
        for row in AgentHistoryRow.batch_get(chunk, consistent_read=consistent):
            found[(row.agent_id, row.item)] = Held(
                row_of_json(row.item, row.entries), int(row.revision or 0)
            )
    return found


def held_rows(run: Run, rows: Sequence[HistoryRow]) -> dict[str, Held]:
    """`rows` of `run`'s agent as stored now (consistent), by row key; a row nobody wrote yet is
    the empty row given."""
    stored = read(run.org_id, [(run.agent_id, r.key) for r in rows], consistent=True)
    return {r.key: stored.get((run.agent_id, r.key)) or Held(r, None) for r in rows}


def changes(held: dict[str, Held], after: Sequence[HistoryRow]) -> list[tuple[HistoryRow, Held]]:
    """Each row of `after` that differs from the one `held` under its key, with that one (a row
    nobody wrote that would still be empty is no change)."""
    out = []
    for row in after:
        before = held[row.key]
        if before.revision is None and not row.as_json():
            continue
        if before.revision is not None and row.as_json() == before.row.as_json():
            continue
        out.append((row, before))
    return out


def stage(t: Any, run: Run, changed: Sequence[tuple[HistoryRow, Held]]) -> None:
    """Add to transaction `t` a write of each changed row of `run`'s agent, conditional on the
    revision it was read at (on its absence for a row nobody wrote).

    Written as updates: PynamoDB sends a transaction's condition checks, deletes, puts, then
    updates, each kind in the order added, so these come after every write of the run itself
    (a put, an update or a delete added before them) and a cancellation reason's index tells
    which side failed (`lost_to_history`).
    """
    for row, before in changed:
        condition = (
            AgentHistoryRow.item.does_not_exist()
            if before.revision is None
            else AgentHistoryRow.revision == before.revision
        )
        t.update(
            AgentHistoryRow(org_key(run.org_id, run.agent_id), row.key),
            actions=[
                AgentHistoryRow.org_id.set(run.org_id),
                AgentHistoryRow.agent_id.set(run.agent_id),
                AgentHistoryRow.entries.set(row.as_json()),
                AgentHistoryRow.revision.set((before.revision or 0) + 1),
            ],
            condition=condition,
        )


def lost_to_history(exc: TransactWriteError, first: int) -> bool:
    """Whether a transaction was cancelled only by the history rows it staged from item `first`
    on (another run of the agent wrote one since they were read) or by a conflict with another
    transaction: read again, fold again. False when a condition of an item before `first` failed
    (the run moved: the caller's own answer) or for any other error."""
    codes = reason_codes(exc)
    if any(code == "ConditionalCheckFailed" for code in codes[:first]):
        return False
    failed = [code for code in codes if code is not None]
    return bool(failed) and all(
        code in ("ConditionalCheckFailed", "TransactionConflict") for code in failed
    )
