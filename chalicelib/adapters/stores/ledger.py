"""Runs and their attempts: the ledger every worker records into
(docs/architecture/exactly-once.md), the `ports.ledger.Runs` port on DynamoDB.

Rows never leave the stores (`run_rows` maps them, `run_reads` holds the reads): every method
takes and returns the frozen records of `chalicelib.domain.records` (`Run`, `Attempt`,
`ActiveRun`) and builds its own keys and conditions.

Two things are kept beside the runs so that no read has to go through an organization's or an
agent's whole history (issue 12): the organization's active runs (`OrganizationRow.active_runs`,
one id per queued or running run: the write that creates a run adds it, every write that ends one
takes it out, in the same transaction), and the agent's history rows (`stores.history`,
`domain.history`: its latest results, baseline arms and cost per model), folded by the transaction
that completes a run, again by a grade again's, and taken apart by a delete's. The same
transactions keep each completed run's chart row (`TrendRow`): the pass-rate chart reads those,
never the runs.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import replace
from typing import Any

from pynamodb.exceptions import (
    DoesNotExist,
    PutError,
    TransactWriteError,
)
from pynamodb.expressions.condition import Condition, size
from pynamodb.expressions.update import Action

import chalicelib.adapters.stores.history as history
from chalicelib import retrying
from chalicelib.adapters.stores.base import (
    TX,
    agent_live,
    changes,
    check_agent_live,
    check_dataset_live,
    conditional_update,
    dataset_live,
    delete_found,
    reason_codes,
    row_of,
    unless_condition_failed,
)
from chalicelib.adapters.tables import (
    AgentHistoryRow,
    AttemptRow,
    LeaseRow,
    OrganizationRow,
    RunRow,
    ToolSessionRow,
    TrendRow,
    org_key,
)
from chalicelib.domain import history as rules
from chalicelib.domain.enums import RunPhase, RunStatus
from chalicelib.domain.evaluations import evaluation_of
from chalicelib.domain.outcome import Outcome
from chalicelib.domain.records import Attempt, Lease, Run
from chalicelib.errors import ConflictError, NotFoundError
from chalicelib.services.ports.ledger import RecordConflict, RecordOutcome

__all__ = ["RecordConflict", "RecordOutcome", "RunStore", "outcome_values", "run_of"]

from chalicelib.adapters.stores.run_reads import RunReads
from chalicelib.adapters.stores.run_rows import (
    _ATTEMPT_KEYS,
    _RUNNING,
    LEASE_KEPT_SECONDS,
    _evaluation_key,
    _evaluation_run_key,
    _folded,
    _key,
    _lease_done,
    _lease_row,
    _nothing,
    _outcome_actions,
    _rows_touched,
    _trend_key,
    outcome_values,
    run_of,
    stored_arm,
    trend_row,
)


class RunStore(RunReads):
    """Eval runs, their attempts, and the conditional writes that move them
    (docs/architecture/exactly-once.md, slots.md, run-lifecycle.md)."""

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

    # -- runs

    def create(self, run: Run) -> None:
        """Write a new run; its keys (`run_key`, `agent_key`, `dataset_key`) are built from its
        `org_id`, `run_id`, `agent_id` and `dataset_id`. A queued or running one joins the
        organization's active runs in the same transaction (the organization must exist).

        The same transaction checks that its agent and dataset exist and are not being deleted, and
        that every run a baseline arm borrows from exists and is not being deleted: a run that
        commits after one of those deletes started would outlive what it belongs to.

        Raises:
            NotFoundError: its agent (`agent_id`) or dataset (`dataset_id`) is gone or being
                deleted.
            ConflictError: a run it borrows from is gone or being deleted (`baseline_run_id`); the
                run exists already, or the organization does not (bugs: run ids are new uuids, and
                a start makes sure of its organization first).
        """
        row = row_of(
            run,
            RunRow,
            run_key=_key(run),
            agent_key=org_key(run.org_id, run.agent_id),
            dataset_key=org_key(run.org_id, run.dataset_id),
            evaluation_run_key=_evaluation_run_key(
                run.org_id, evaluation_of(run.evaluation_id, run.agent_id, run.dataset_id)
            ),
        )
        row.arms = [stored_arm(a) for a in run.arms]
        for name, value in outcome_values(run.outcome).items():
            setattr(row, name, value)

        sources = sorted({a.source_run_id for a in run.arms if a.source_run_id})
        trend = trend_row(run)

        def own(t: Any) -> int:
            check_agent_live(t, run.org_id, run.agent_id)
            check_dataset_live(t, run.org_id, run.dataset_id)
            for source in sources:
                t.condition_check(
                    RunRow,
                    org_key(run.org_id, source),
                    condition=RunRow.run_key.exists() & RunRow.deleting_at.does_not_exist(),
                )
            t.save(row, condition=RunRow.run_key.does_not_exist())
            if trend is not None:
                t.save(trend)
                return 4 + len(sources)
            if run.status not in _RUNNING:
                return 3 + len(sources)
            t.update(
                OrganizationRow(run.org_id),
                actions=[OrganizationRow.active_runs.add({run.run_id})],
                condition=OrganizationRow.org_id.exists(),
            )
            return 4 + len(sources)

        if self._commit(run, [], own, _nothing):
            return
        if not agent_live(run.org_id, run.agent_id):
            raise NotFoundError(f"agent {run.agent_id} not found", field="agent_id")
        if not dataset_live(run.org_id, run.dataset_id):
            raise NotFoundError(f"dataset {run.dataset_id} not found", field="dataset_id")
        for source in sources:
            kept = self.get(run.org_id, source)
            if kept is None or kept.deleting_at is not None:
                raise ConflictError(
                    f"eval run {source}, whose first answers the baseline borrows, is being "
                    "deleted: start again",
                    field="baseline_run_id",
                )
        raise ConflictError(
            f"eval run {run.run_id} exists already, or organization {run.org_id} does not",
            field="run_id",
        )

    def remember(self, runs: Sequence[Run]) -> None:
        """Fold completed runs that are kept already into their chart rows (`TrendRow`), their
        agents' history rows and the evaluation index (`evaluation_key`), as their completing
        transactions would have: a
        backfill (runs completed before the history was kept; the local stack needs none, it
        keeps no state) or a benchmark's history written straight into the table. One conditional
        write per row touched (read again and folded again when another writer won it), one
        update per run."""
        with TrendRow.batch_write() as batch:
            for row in (trend_row(run) for run in runs):
                if row is not None:
                    batch.save(row)
        by_agent: dict[tuple[str, str], list[Run]] = {}
        for run in runs:
            if rules.counts(run):
                by_agent.setdefault((run.org_id, run.agent_id), []).append(run)
        for group in by_agent.values():
            for empty in _rows_touched(*group):
                self._remember_row(group, empty)
            for run in group:
                evaluation = _evaluation_key(run)
                if evaluation is not None:
                    conditional_update(
                        RunRow(_key(run)),
                        [RunRow.evaluation_key.set(evaluation)],
                        RunRow.run_key.exists(),
                    )

    def _remember_row(self, runs: list[Run], empty: rules.HistoryRow) -> None:
        """Fold `runs` (of one agent) into the row `empty` names, conditional on its revision."""
        first = runs[0]
        for _ in range(history.TRIES):
            held = history.held_rows(first, [empty])
            row = held[empty.key].row
            for run in runs:
                row = row.with_run(run)
            changed = history.changes(held, [row])
            if not changed:
                return
            try:
                with TX.write() as t:
                    history.stage(t, first, changed)
                return
            except TransactWriteError as exc:
                if not history.lost_to_history(exc, 0):
                    raise
            retrying.jitter()
        raise ConflictError(
            f"the history of agent {first.agent_id} keeps changing: try again", field="run_id"
        )

    def stale(self, status: RunStatus, before_ms: int) -> Iterator[Run]:
        """Runs in `status` whose heartbeat is at or before `before_ms` (GSI; the sweep
        re-checks)."""
        rows = RunRow.status_index.query(status.value, RunRow.heartbeat_at_ms <= before_ms)
        return (run_of(r) for r in rows)

    def claim_tasks(
        self, run: Run, lanes: list[int], org_id: str, org_limit: int, now_ms: int, now_iso: str
    ) -> bool:
        """Start the next task of each idle lane in `lanes` and take as many organization slots,
        in one transaction.

        Conditional on each lane's cursor as read and idle, on the run being queued or running,
        and on the organization having that many free slots; returns False when any moved (the
        caller reads again).
        """
        k = len(lanes)
        seen = run.lanes
        actions: list[Action] = [
            RunRow.next_index.add(k),
            RunRow.slots.add(k),
            RunRow.heartbeat_at_ms.set(now_ms),
        ]
        condition: Condition = RunRow.status.is_in(*_RUNNING)
        if not run.lane_next:  # a run kept without lanes gets them whole on its first claim
            after = seen.claiming(lanes)
            actions += [
                RunRow.lane_next.set(list(after.next)),
                RunRow.lane_busy.set(list(after.busy)),
            ]
            condition &= RunRow.next_index == run.next_index
        for j in lanes if run.lane_next else ():
            actions += [
                RunRow.lane_next[j].set(seen.next[j] + seen.n),
                RunRow.lane_busy[j].set(True),
            ]
            condition &= (RunRow.lane_next[j] == seen.next[j]) & (
                RunRow.lane_busy[j] == False  # noqa: E712 - a PynamoDB condition, not a test
            )
        if run.status == RunStatus.QUEUED:
            actions += [RunRow.status.set(RunStatus.RUNNING.value), RunRow.started_at.set(now_iso)]
        try:
            with TX.write() as t:
                t.update(RunRow(_key(run)), actions=actions, condition=condition)
                t.update(
                    OrganizationRow(org_id),
                    actions=[OrganizationRow.in_flight.add(k)],
                    condition=OrganizationRow.in_flight <= org_limit - k,
                )
            return True
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            return False

    def record_attempt(
        self,
        run: Run,
        attempt: Attempt,
        *,
        counters: dict[str, int],
        lane: int,
        claim_next: bool,
        release_slot: bool,
        now_ms: int,
        successor_lease: Lease | None = None,
    ) -> RecordOutcome:
        """Write one attempt once, with the run's counters, in ONE transaction
        (docs/architecture/exactly-once.md).

        Args:
            run: the run as read; its lane `lane`'s cursor guards a claim.
            attempt: the attempt to put (`attribute_not_exists`; kept under the run's key);
                `successor` set when claiming.
            counters: run attributes to ADD (`recorded`, `passed`, `cost_micros`, ...).
            lane: the lane the attempt's task belongs to (`Lanes.lane_of`).
            claim_next: also start the lane's next task (its cursor moves on by the lane count,
                conditional on the value read and on the run still running): the slot passes to
                that task. Only this lane's own chain moves its cursor, so other slots of the run
                never make this write fail.
            release_slot: no task to pass the slot to: give it back to the run and organization
                (conditional on the lane holding one, so a swept run is never released twice).
            successor_lease: with `claim_next`, the claim on the task it starts (put in the same
                transaction: the recording delivery carries on with that task itself).
        Returns:
            RecordOutcome(written=False) when the attempt existed already (a redelivery).
        Raises:
            RecordConflict: the run moved since it was read; read it again and retry.
        """
        actions = [getattr(RunRow, name).add(value) for name, value in counters.items() if value]
        actions.append(RunRow.heartbeat_at_ms.set(now_ms))
        condition = None
        seen = run.lanes
        if claim_next:
            actions += [
                RunRow.lane_next[lane].set(seen.next[lane] + seen.n),
                RunRow.next_index.add(1),
            ]
            condition = (RunRow.lane_next[lane] == seen.next[lane]) & (
                RunRow.status == RunStatus.RUNNING.value
            )
        elif release_slot:
            actions += [RunRow.slots.add(-1), RunRow.lane_busy[lane].set(False)]
            condition = (RunRow.lane_busy[lane] == True) & (RunRow.slots > 0)  # noqa: E712 - a condition
        row = row_of(attempt, AttemptRow, run_key=_key(run))
        row.run_id = run.run_id
        try:
            with TX.write() as t:
                t.save(row, condition=AttemptRow.attempt_key.does_not_exist())
                t.update(RunRow(_key(run)), actions=actions, condition=condition)
                _lease_done(t, run, attempt.attempt_key, now_ms)
                if claim_next and successor_lease is not None:
                    t.save(_lease_row(run, successor_lease))
                if release_slot and not claim_next:
                    t.update(
                        OrganizationRow(run.org_id),
                        actions=[OrganizationRow.in_flight.add(-1)],
                        condition=OrganizationRow.in_flight > 0,
                    )
            return RecordOutcome(written=True)
        except TransactWriteError as exc:
            codes = reason_codes(exc)
            if codes and codes[0] == "ConditionalCheckFailed":
                return RecordOutcome(written=False)
            if any(c == "ConditionalCheckFailed" for c in codes[1:]) or any(
                c == "TransactionConflict" for c in codes
            ):
                raise RecordConflict(str(codes)) from exc
            raise

    # -- leases (issue 11 "One ask per attempt")

    def take_lease(self, run: Run, key: str, holder: str, until_ms: int, now_ms: int) -> bool:
        """Claim the attempt `key` of `run` for `holder` until `until_ms` (epoch ms), unless
        another claim lives past `now_ms`; True when taken."""
        row = _lease_row(run, Lease(attempt_key=key, holder=holder, until_ms=until_ms))
        try:
            row.save(
                condition=(LeaseRow.attempt_key.does_not_exist() | (LeaseRow.until_ms < now_ms))
                & LeaseRow.done.does_not_exist()
            )
            return True
        except PutError as exc:
            unless_condition_failed(exc)
            return False

    def extend_lease(self, run: Run, key: str, holder: str, until_ms: int) -> bool:
        """Move `holder`'s claim on the attempt `key` to `until_ms`; False when it is not theirs."""
        return conditional_update(
            LeaseRow(_key(run), key),
            [
                LeaseRow.until_ms.set(until_ms),
                LeaseRow.expires_at.set(until_ms // 1000 + LEASE_KEPT_SECONDS),
            ],
            LeaseRow.holder == holder,
        )

    def release_lease(self, run: Run, key: str, holder: str) -> bool:
        """Let `holder`'s claim on the attempt `key` lapse now (its delivery failed and SQS will
        deliver the message again); False when the claim is not theirs or the attempt is
        recorded."""
        return conditional_update(
            LeaseRow(_key(run), key),
            [LeaseRow.until_ms.set(0)],
            (LeaseRow.holder == holder) & LeaseRow.done.does_not_exist(),
        )

    def lease_of(self, run: Run, key: str) -> Lease | None:
        """The claim on the attempt `key` (consistent), or None."""
        try:
            row = LeaseRow.get(_key(run), key, consistent_read=True)
        except DoesNotExist:
            return None
        return Lease(
            attempt_key=key,
            holder=row.holder,
            until_ms=int(row.until_ms or 0),
            done=bool(row.done),
        )

    def beat(self, org_id: str, run_id: str, now_ms: int) -> bool:
        """Heartbeat a running run; False when it is not running (any more)."""
        return conditional_update(
            RunRow(org_key(org_id, run_id)),
            [RunRow.heartbeat_at_ms.set(now_ms)],
            RunRow.status == RunStatus.RUNNING.value,
        )

    def _move_phase(self, run: Run, actions: list[Action]) -> bool:
        """A phase change conditional on the phase and `recorded` as read: one caller wins."""
        return conditional_update(
            RunRow(_key(run)),
            actions,
            (RunRow.phase == run.phase) & (RunRow.recorded == run.recorded),
        )

    def enter_confirming(self, run: Run, tasks: list[list[Any]]) -> bool:
        """answering → confirming, the reruns `tasks` added to the run's tasks and expectation."""
        if run.phase != RunPhase.ANSWERING:
            return False
        n = len(tasks)
        return self._move_phase(
            run,
            [
                RunRow.phase.set(RunPhase.CONFIRMING.value),
                RunRow.tasks.set((run.tasks or []) + tasks),
                RunRow.tasks_total.set(run.tasks_total + n),
                RunRow.expected.set(run.expected + n),
            ],
        )

    def enter_finalizing(self, run: Run) -> bool:
        """answering or confirming → finalizing (conditional on the phase and `recorded`)."""
        if run.phase not in (RunPhase.ANSWERING, RunPhase.CONFIRMING):
            return False
        return self._move_phase(run, [RunRow.phase.set(RunPhase.FINALIZING.value)])

    def complete(
        self,
        run: Run,
        outcome: Outcome,
        now_iso: str,
        routed: tuple[int, int, str | None] | None = None,
    ) -> bool:
        """A finalizing running run → completed, phase done, with its outcome (kept as its
        `as_json()`; idempotent) and what it sent to review (`routed`: `routed_to_review`,
        `routed_replacing`, `routing_error`), in ONE transaction with: the run taken off the
        organization's active runs, its `evaluation_key` set, and the run folded into its agent's
        history rows (each conditional on the revision read: an older run completing late never
        replaces a newer one, `domain.history`). False when the run is not finalizing and running
        any more.

        Raises:
            ConflictError: the agent's history kept changing under it (`history.TRIES` times).
        """
        done = replace(
            run,
            status=RunStatus.COMPLETED.value,
            phase=RunPhase.DONE.value,
            outcome=outcome,
            completed_at=now_iso,
        )
        evaluation = _evaluation_key(done)

        def own(t: Any) -> int:
            actions: list[Action] = [
                RunRow.status.set(RunStatus.COMPLETED.value),
                RunRow.phase.set(RunPhase.DONE.value),
                *_outcome_actions(outcome),
                RunRow.completed_at.set(now_iso),
            ]
            if routed is not None:
                actions += [
                    RunRow.routed_to_review.set(routed[0]),
                    RunRow.routed_replacing.set(routed[1]),
                ]
                if routed[2] is not None:
                    actions.append(RunRow.routing_error.set(routed[2]))
            if evaluation is not None:
                actions.append(RunRow.evaluation_key.set(evaluation))
            t.update(
                RunRow(_key(run)),
                actions=actions,
                condition=(RunRow.phase == RunPhase.FINALIZING.value)
                & (RunRow.status == RunStatus.RUNNING.value),
            )
            t.update(
                OrganizationRow(run.org_id),
                actions=[OrganizationRow.active_runs.delete({run.run_id})],
            )
            if trend is None:
                return 2
            t.save(trend)
            return 3

        trend = trend_row(done)
        return self._commit(run, _rows_touched(done), own, lambda held: _folded(held, done))

    def end(self, run: Run, status: RunStatus, reason: str, now_iso: str) -> bool:
        """End a queued or running run as `status`, taking it off the organization's active runs
        in the same transaction; its slots stay with its running cases."""

        def own(t: Any) -> int:
            t.update(
                RunRow(_key(run)),
                actions=[
                    RunRow.status.set(status.value),
                    RunRow.reason.set(reason),
                    RunRow.completed_at.set(now_iso),
                ],
                condition=RunRow.status.is_in(*_RUNNING),
            )
            t.update(
                OrganizationRow(run.org_id),
                actions=[OrganizationRow.active_runs.delete({run.run_id})],
            )
            return 2

        return self._commit(run, [], own, _nothing)

    def _end_and_release(
        self, run: Run, *, status: str, reason: str, completed_at: str, condition: Condition
    ) -> bool:
        """End a run and give all its slots back to the organization in one transaction (the run
        taken off the organization's active runs too), conditional on `condition` and on the run
        holding the slots it was read with."""

        def own(t: Any) -> int:
            t.update(
                RunRow(_key(run)),
                actions=[
                    RunRow.status.set(status),
                    RunRow.reason.set(reason),
                    RunRow.completed_at.set(completed_at),
                    RunRow.slots.set(0),
                    RunRow.lane_busy.set([False] * run.lanes.n),
                ],
                condition=condition & (RunRow.slots == run.slots),
            )
            no_longer_active = OrganizationRow.active_runs.delete({run.run_id})
            if run.slots:
                t.update(
                    OrganizationRow(run.org_id),
                    actions=[OrganizationRow.in_flight.add(-run.slots), no_longer_active],
                    condition=OrganizationRow.in_flight >= run.slots,
                )
            else:
                t.update(OrganizationRow(run.org_id), actions=[no_longer_active])
            return 2

        return self._commit(run, [], own, _nothing)

    def abandon(self, run: Run, reason: str, now_iso: str) -> bool:
        """Fail a running run unchanged since read (status, heartbeat, `recorded`); slots back."""
        return self._end_and_release(
            run,
            status=RunStatus.FAILED.value,
            reason=reason,
            completed_at=now_iso,
            condition=(RunRow.status == RunStatus.RUNNING.value)
            & (RunRow.heartbeat_at_ms == run.heartbeat_at_ms)
            & (RunRow.recorded == run.recorded),
        )

    def fail_unstarted(self, run: Run, reason: str, now_iso: str) -> bool:
        """Fail a run that is still queued; slots back."""
        return self._end_and_release(
            run,
            status=RunStatus.FAILED.value,
            reason=reason,
            completed_at=now_iso,
            condition=RunRow.status == RunStatus.QUEUED.value,
        )

    def release_stranded(self, run: Run, reason: str, completed_at: str) -> bool:
        """An ended run's slots back (its status kept), unless its heartbeat moved since read."""
        return self._end_and_release(
            run,
            status=run.status,
            reason=reason,
            completed_at=completed_at,
            condition=RunRow.heartbeat_at_ms == run.heartbeat_at_ms,
        )

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

    def put_attempt_counted(self, run: Run, attempt: Attempt, now_ms: int) -> bool:
        """Write an attempt of `run` unless it exists (the sweep's failed attempts), counting it
        in the run's `recorded` and state counters in the same transaction; True if written."""
        row = row_of(attempt, AttemptRow, run_key=_key(run))
        row.run_id = run.run_id
        try:
            with TX.write() as t:
                t.save(row, condition=AttemptRow.attempt_key.does_not_exist())
                t.update(
                    RunRow(_key(run)),
                    actions=[RunRow.recorded.add(1), getattr(RunRow, attempt.state).add(1)],
                )
                _lease_done(t, run, attempt.attempt_key, now_ms)
            return True
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            return False
