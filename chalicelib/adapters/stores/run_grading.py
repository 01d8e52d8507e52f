"""Grading an ended eval run again (docs/concepts/verdicts.md): the grading claim that keeps one
grader per run, the gradings kept, a new outcome (a grade again's or a review decision's) folded
into the agent's history again, the judge cost of grades not kept, and one attempt regraded with
the run's counters. A base of `stores.ledger.RunStore`."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from pynamodb.exceptions import TransactWriteError
from pynamodb.expressions.condition import size
from pynamodb.expressions.update import Action

from chalicelib.adapters.stores.base import (
    TX,
    changes,
    conditional_update,
    reason_codes,
)
from chalicelib.adapters.tables import (
    AttemptRow,
    RunRow,
    org_key,
)
from chalicelib.domain.outcome import Outcome
from chalicelib.domain.records import Attempt, Run

__all__ = ["RunGrading"]

from chalicelib.adapters.stores.run_commit import RunCommit
from chalicelib.adapters.stores.run_rows import (
    _ATTEMPT_KEYS,
    _folded,
    _key,
    _outcome_actions,
    _rows_touched,
    trend_row,
)


class RunGrading(RunCommit):
    """The writes that grade a run after it ended (a base of `RunStore`)."""

    def claim_grading(self, org_id: str, run_id: str, until_ms: int, now_ms: int) -> bool:
        """Take the grading claim until `until_ms` unless another one holds past `now_ms`."""
        return conditional_update(
            RunRow(org_key(org_id, run_id)),
            [RunRow.grading_until_ms.set(until_ms)],
            RunRow.grading_until_ms.does_not_exist() | (RunRow.grading_until_ms < now_ms),
        )

    def release_grading(self, org_id: str, run_id: str, until_ms: int) -> bool:
        """Drop the grading claim taken until `until_ms` (not a later grader's)."""
        return conditional_update(
            RunRow(org_key(org_id, run_id)),
            [RunRow.grading_until_ms.remove()],
            RunRow.grading_until_ms == until_ms,
        )

    def add_grading(self, org_id: str, run_id: str, entry: dict[str, Any]) -> None:
        """Append one entry to the run's `gradings`."""
        RunRow(org_key(org_id, run_id)).update(
            actions=[RunRow.gradings.set((RunRow.gradings | []).append([entry]))]
        )

    def record_outcome(self, run: Run, outcome: Outcome) -> bool:
        """Replace the outcome if `regrades` is still as read (absent when it was None or 0), and
        fold a completed run into its agent's history again with it, in one transaction (its
        entries there replaced: a grade again moves its totals, its judges, its judge cost).

        Raises:
            ConflictError: the agent's history kept changing under it (`history.TRIES` times).
        """
        seen = int(run.regrades or 0)
        after = replace(run, outcome=outcome)

        def own(t: Any) -> int:
            t.update(
                RunRow(_key(run)),
                actions=[*_outcome_actions(outcome), RunRow.outcome_stale.remove()],
                condition=RunRow.regrades == seen if seen else RunRow.regrades.does_not_exist(),
            )
            if trend is None:
                return 1
            t.save(trend)
            return 2

        trend = trend_row(after)

        return self._commit(run, _rows_touched(run, after), own, lambda held: _folded(held, after))

    def add_judge_cost(self, org_id: str, run_id: str, micros: int, calls: int) -> None:
        """Count judge requests whose grades were not kept (the money was spent all the same)."""
        if micros or calls:
            RunRow(org_key(org_id, run_id)).update(
                actions=[RunRow.judge_cost_micros.add(micros), RunRow.judge_calls.add(calls)]
            )

    def regrade(self, org_id: str, before: Attempt, after: Attempt) -> bool:
        """Replace an attempt's grade by `after`'s and move the run's counters with it, in one
        transaction conditional on the grade as read (`state`, how often it was regraded); False
        when somebody regraded it meanwhile."""
        seen = len(before.regraded or [])
        condition = (AttemptRow.state == before.state) & (
            AttemptRow.regraded.does_not_exist()
            if before.regraded is None
            else size(AttemptRow.regraded) == seen
        )
        run_key = org_key(org_id, before.run_id)
        run_actions: list[Action] = [
            RunRow.judge_cost_micros.add(after.judge_cost_micros - before.judge_cost_micros),
            RunRow.judge_calls.add(after.judge_calls - before.judge_calls),
            RunRow.regrades.add(1),
        ]
        if after.state != before.state:
            run_actions += [
                getattr(RunRow, before.state).add(-1),
                getattr(RunRow, after.state).add(1),
            ]
        try:
            with TX.write() as t:
                t.update(
                    AttemptRow(run_key, before.attempt_key),
                    condition=condition,
                    actions=changes(AttemptRow, before, after, fixed=_ATTEMPT_KEYS),
                )
                t.update(RunRow(run_key), actions=run_actions)
            return True
        except TransactWriteError as exc:
            if any(code == "ConditionalCheckFailed" for code in reason_codes(exc)):
                return False
            raise
