"""Runs and their attempts: the ledger every worker records into
(docs/architecture/exactly-once.md), the `ports.ledger.Runs` port on DynamoDB.

This module holds a run's creation (and the backfill of runs kept already), its task claims, its
attempts and their leases, its heartbeat and its phase moves up to completing. `RunStore` has as
its own the rest of the ledger, each in a module of its own: the reads (`run_reads`), the one
transaction that folds a run into its agent's history (`run_commit`), ending a run other than by
completing it (`run_ends`), grading it after it ended (`run_grading`) and deleting it
(`run_removal`).

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

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from pynamodb.exceptions import (
    DoesNotExist,
    TransactWriteError,
)
from pynamodb.expressions.condition import Condition
from pynamodb.expressions.update import Action

import chalicelib.adapters.stores.history as history
from chalicelib import retrying
from chalicelib.adapters.stores.base import (
    TX,
    agent_live,
    check_agent_live,
    check_dataset_live,
    conditional_update,
    dataset_live,
    reason_codes,
    row_of,
    unless_condition_failed,
)
from chalicelib.adapters.stores.usage import row_of_run
from chalicelib.adapters.tables import (
    AttemptRow,
    LeaseRow,
    OrganizationRow,
    RunRow,
    TrendRow,
    org_key,
)
from chalicelib.domain import history as rules
from chalicelib.domain.agent_runs import AgentRun
from chalicelib.domain.enums import RunPhase, RunStatus
from chalicelib.domain.evaluations import evaluation_of
from chalicelib.domain.leases import ERROR_CHARS, Lease
from chalicelib.domain.outcome import Outcome
from chalicelib.domain.records import Attempt, Run
from chalicelib.domain.run_rules import Claim, Lanes
from chalicelib.errors import ConflictError, NotFoundError
from chalicelib.services.ports.ledger import RecordConflict, RecordOutcome

__all__ = ["RecordConflict", "RecordOutcome", "RunStore", "outcome_values", "run_of"]

from chalicelib.adapters.stores.run_ends import RunEnds
from chalicelib.adapters.stores.run_grading import RunGrading
from chalicelib.adapters.stores.run_removal import RunRemoval
from chalicelib.adapters.stores.run_rows import (
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
    outcome_values,
    run_of,
    stored_arm,
    trend_row,
)


class RunStore(RunEnds, RunGrading, RunRemoval):
    """Eval runs, their attempts, and the conditional writes that move them
    (docs/architecture/exactly-once.md, slots.md, run-lifecycle.md)."""

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

        Conditional on each lane's cursor as read and idle, on the task it starts still being
        within its stride (no other lane took it), on the run being queued or running, and on the
        organization having that many free slots; returns False when any moved (the caller reads
        again).
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
                RunRow.lane_end.set(list(after.end)),
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
            if run.lane_end:
                condition &= RunRow.lane_end[j] > seen.next[j]
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
        lane: int | None,
        claim: Claim | None,
        release_slot: bool,
        now_ms: int,
        successor_lease: Lease | None = None,
        agent_runs: Sequence[AgentRun] = (),
    ) -> RecordOutcome:
        """Write one attempt once, with the run's counters, in ONE transaction
        (docs/architecture/exactly-once.md).

        Args:
            run: the run as read; its lanes as read guard a claim (`_claim`).
            attempt: the attempt to put (`attribute_not_exists`; kept under the run's key);
                `successor` set when claiming.
            counters: run attributes to ADD (`recorded`, `passed`, `cost_micros`, ...).
            lane: the lane running the attempt's task (`Lanes.lane_of`; None: no lane does).
            claim: also start the task the slot passes to (`Lanes.claim_for`, `_claim`). Only
                this lane's own chain moves its cursor, and a steal only cuts another lane's end
                behind its next task, so other slots of the run make this write fail only when
                one took the very task it claims.
            release_slot: no task to pass the slot to: give it back to the run and organization
                (conditional on the lane holding one, so a swept run is never released twice).
            successor_lease: with `claim`, the claim on the task it starts (put in the same
                transaction: the recording delivery carries on with that task itself).
            agent_runs: the agent runs the attempt is (`services.eval_agent_runs`), put in the
                same transaction (their ids derive from the attempt: written once with it).
        Returns:
            RecordOutcome(written=False) when the attempt existed already (a redelivery).
        Raises:
            RecordConflict: the run moved since it was read; read it again and retry.
        """
        actions = [getattr(RunRow, name).add(value) for name, value in counters.items() if value]
        actions.append(RunRow.heartbeat_at_ms.set(now_ms))
        condition = None
        if claim is not None:
            moves, condition = _claim(run, claim)
            actions += moves
        elif release_slot and lane is not None:
            actions += [RunRow.slots.add(-1), RunRow.lane_busy[lane].set(False)]
            condition = (RunRow.lane_busy[lane] == True) & (RunRow.slots > 0)  # noqa: E712 - a condition
        row = row_of(attempt, AttemptRow, run_key=_key(run))
        row.run_id = run.run_id
        try:
            with TX.write() as t:
                t.save(row, condition=AttemptRow.attempt_key.does_not_exist())
                t.update(RunRow(_key(run)), actions=actions, condition=condition)
                _lease_done(t, run, attempt.attempt_key, now_ms)
                if claim is not None and successor_lease is not None:
                    t.save(_lease_row(run, successor_lease))
                for agent_run in agent_runs:
                    t.save(row_of_run(agent_run))
                if release_slot and claim is None and lane is not None:
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
        another claim lives past `now_ms`; True when taken. An update, not a put: the attempt's
        count of failures (`fail_lease`) outlives the claims of its deliveries."""
        return conditional_update(
            LeaseRow(_key(run), key),
            [
                LeaseRow.holder.set(holder),
                LeaseRow.until_ms.set(until_ms),
                LeaseRow.expires_at.set(until_ms // 1000 + LEASE_KEPT_SECONDS),
            ],
            (LeaseRow.attempt_key.does_not_exist() | (LeaseRow.until_ms < now_ms))
            & LeaseRow.done.does_not_exist(),
        )

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

    def fail_lease(self, run: Run, key: str, holder: str, error: str) -> Lease | None:
        """Let `holder`'s claim on the attempt `key` lapse now, counting its delivery's failure on
        assay's own error `error` (redacted) in the same conditional write; the lease as written,
        or None when the claim is not theirs or the attempt is recorded."""
        row = LeaseRow(_key(run), key)
        if not conditional_update(
            row,
            [
                LeaseRow.until_ms.set(0),
                LeaseRow.failures.add(1),
                LeaseRow.last_error.set(error[:ERROR_CHARS]),
            ],
            (LeaseRow.holder == holder) & LeaseRow.done.does_not_exist(),
        ):
            return None
        return _lease_of(key, row)  # the update read the row back as it left it

    def lease_of(self, run: Run, key: str) -> Lease | None:
        """The claim on the attempt `key` (consistent), or None."""
        try:
            row = LeaseRow.get(_key(run), key, consistent_read=True)
        except DoesNotExist:
            return None
        return _lease_of(key, row)

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
        """answering → confirming, the reruns `tasks` added to the run's tasks and expectation,
        and the run's strides open again from its old task count (`Lanes.reopened`: every task
        below it is recorded, and a steal may have left a stride's tail to no lane)."""
        if run.phase != RunPhase.ANSWERING:
            return False
        n = len(tasks)
        actions: list[Action] = [
            RunRow.phase.set(RunPhase.CONFIRMING.value),
            RunRow.tasks.set((run.tasks or []) + tasks),
            RunRow.tasks_total.set(run.tasks_total + n),
            RunRow.expected.set(run.expected + n),
        ]
        if run.lane_end:
            lanes = Lanes.reopened(int(run.tasks_total), run.lanes.busy)
            actions += [
                RunRow.lane_next.set(list(lanes.next)),
                RunRow.lane_end.set(list(lanes.end)),
            ]
        return self._move_phase(run, actions)

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


def _claim(run: Run, claim: Claim) -> tuple[list[Action], Condition]:
    """The run-row moves and condition of `claim` on `run`'s lanes as read
    (docs/architecture/slots.md): the slot's lane moves on past `claim.index`, conditional on its
    cursor as read and the run running; its own next task also on that task still being within its
    stride (a steal took none of it), a steal on the victim's end as read and its cursor not past
    the first task taken."""
    seen, j = run.lanes, claim.lane
    actions: list[Action] = [
        RunRow.lane_next[j].set(claim.index + seen.n),
        RunRow.next_index.add(1),
    ]
    condition: Condition = (RunRow.lane_next[j] == seen.next[j]) & (
        RunRow.status == RunStatus.RUNNING.value
    )
    if claim.victim is None:
        if run.lane_end:
            condition &= RunRow.lane_end[j] > claim.index
        return actions, condition
    v = claim.victim
    actions += [RunRow.lane_end[j].set(claim.victim_end), RunRow.lane_end[v].set(claim.index)]
    condition &= (RunRow.lane_end[v] == claim.victim_end) & (RunRow.lane_next[v] <= claim.index)
    return actions, condition


def _lease_of(key: str, row: LeaseRow) -> Lease:
    """The lease record of the row of the attempt `key`."""
    return Lease(
        attempt_key=key,
        holder=row.holder,
        until_ms=int(row.until_ms or 0),
        done=bool(row.done),
        failures=int(row.failures or 0),
        last_error=row.last_error,
    )
