"""Runs and their attempts: the ledger every worker records into (DESIGN §5)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pynamodb.exceptions import (
    DoesNotExist,
    PutError,
    TransactWriteError,
    UpdateError,
)
from pynamodb.expressions.condition import Condition, size
from pynamodb.expressions.update import Action

from chalicelib.adapters.stores.base import (
    TX,
    conditional_update,
    reason_codes,
    unless_condition_failed,
)
from chalicelib.adapters.tables import (
    AttemptRow,
    OrganizationRow,
    RunRow,
    org_key,
)
from chalicelib.domain.enums import RunStatus
from chalicelib.errors import NotFoundError

# --- runs and attempts -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordOutcome:
    """What `RunStore.record_attempt` did: `written` False means the attempt existed already."""

    written: bool


class RecordConflict(Exception):
    """The run row changed since it was read (another worker claimed or released): read, retry."""


class RunStore:
    """Eval runs, their attempts, and the conditional writes that move them (DESIGN §5-§7)."""

    # -- runs

    def create(self, row: RunRow) -> None:
        """Write a new run; its keys (`run_key`, `agent_key`, `dataset_key`) are built from its
        `org_id`, `run_id`, `agent_id` and `dataset_id`."""
        row.run_key = org_key(row.org_id, row.run_id)
        row.agent_key = org_key(row.org_id, row.agent_id)
        row.dataset_key = org_key(row.org_id, row.dataset_id)
        row.save(condition=RunRow.run_key.does_not_exist())

    def get(self, org_id: str, run_id: str) -> RunRow | None:
        """The organization's run (consistent), or None."""
        try:
            return RunRow.get(org_key(org_id, run_id), consistent_read=True)
        except DoesNotExist:
            return None

    CURSOR_ATTRIBUTES = ("run_id", "status", "phase", "next_index", "tasks_total", "slots", "tasks",
                         "recorded", "expected", "heartbeat_at_ms")
    """What changes on a run while it runs; the rest (arms, case ids, scoring) is fixed at start."""

    def refresh(self, run: RunRow) -> RunRow | None:
        """`run` with its changing attributes read again (consistent, projected: a small read).

        Returns a new row object; None when the run was deleted.
        """
        try:
            fresh = RunRow.get(run.run_key, consistent_read=True, attributes_to_get=list(self.CURSOR_ATTRIBUTES))
        except DoesNotExist:
            return None
        merged = RunRow.from_raw_data(run.serialize())
        for name in self.CURSOR_ATTRIBUTES:
            setattr(merged, name, getattr(fresh, name))
        return merged

    def get_for_org(self, org_id: str, run_id: str) -> RunRow:
        """Raises NotFoundError for a run the organization does not have."""
        row = self.get(org_id, run_id)
        if row is None:
            raise NotFoundError(f"eval run {run_id} not found", field="run_id")
        return row

    def list_by_agent(self, org_id: str, agent_id: str, limit: int = 50, start: dict | None = None):
        """The organization's agent's runs, newest first, a page at a time (`start`: the previous
        page's `last_evaluated_key`, keys `run_key`, `agent_key`, `created_at`)."""
        return RunRow.agent_index.query(org_key(org_id, agent_id), scan_index_forward=False, limit=limit,
                                        last_evaluated_key=start)

    def list_by_org(self, org_id: str, limit: int = 50, start: dict | None = None):
        """The organization's runs, newest first (`start` keys: `run_key`, `org_id`, `created_at`)."""
        return RunRow.org_index.query(org_id, scan_index_forward=False, limit=limit,
                                      last_evaluated_key=start)

    def list_by_dataset(self, org_id: str, dataset_id: str, limit: int = 50, start: dict | None = None):
        """The organization's dataset's runs, newest first (`start` keys: `run_key`, `dataset_key`,
        `created_at`)."""
        return RunRow.dataset_index.query(org_key(org_id, dataset_id), scan_index_forward=False, limit=limit,
                                          last_evaluated_key=start)

    @staticmethod
    def is_page_start(start: Any, org_id: str, *, agent_id: str | None = None,
                      dataset_id: str | None = None) -> bool:
        """Whether `start` is a `last_evaluated_key` of this organization's listing: of the agent's
        runs (`agent_id`), the dataset's (`dataset_id`) or else all of them. Exactly the keys
        `run_key` (a run of the organization), the index's hash key (its value for this listing)
        and `created_at`, each `{"S": str}`."""
        if agent_id is not None:
            hash_name, hash_value = "agent_key", org_key(org_id, agent_id)
        elif dataset_id is not None:
            hash_name, hash_value = "dataset_key", org_key(org_id, dataset_id)
        else:
            hash_name, hash_value = "org_id", org_id
        return (isinstance(start, dict) and set(start) == {"run_key", hash_name, "created_at"}
                and all(isinstance(v, dict) and set(v) == {"S"} and isinstance(v["S"], str) for v in start.values())
                and start[hash_name]["S"] == hash_value
                and start["run_key"]["S"].startswith(org_key(org_id, "")))

    def recent_active(self, org_id: str, limit: int) -> list[RunRow]:
        """The organization's queued or running runs among its newest `limit` (projected: only what
        their committed spend needs)."""
        rows = RunRow.org_index.query(org_id, scan_index_forward=False, limit=limit, attributes_to_get=[
            "run_key", "run_id", "org_id", "agent_id", "created_at", "status", "settings", "cost_micros", "judge_cost_micros",
            "environment_id", "arms"])
        return [r for r in rows if r.status in (RunStatus.QUEUED.value, RunStatus.RUNNING.value)]

    def stale(self, status: RunStatus, before_ms: int) -> Iterator[RunRow]:
        """Runs in `status` whose heartbeat is at or before `before_ms` (GSI; the sweep re-checks)."""
        return RunRow.status_index.query(status.value, RunRow.heartbeat_at_ms <= before_ms)

    def claim_tasks(self, run: RunRow, k: int, org_id: str, org_limit: int,
                    now_ms: int, now_iso: str) -> bool:
        """Claim the run's next `k` tasks and `k` organization slots in one transaction.

        Conditional on the run's `next_index` as read and on the organization having `k` free
        slots; returns False when either moved (the caller reads again).
        """
        actions: list[Action] = [RunRow.next_index.set(run.next_index + k), RunRow.slots.add(k),
                   RunRow.heartbeat_at_ms.set(now_ms)]
        if run.status == RunStatus.QUEUED:
            actions += [RunRow.status.set(RunStatus.RUNNING.value), RunRow.started_at.set(now_iso)]
        try:
            with TX.write() as t:
                t.update(RunRow(run.run_key), actions=actions,
                         condition=(RunRow.next_index == run.next_index)
                         & RunRow.status.is_in(RunStatus.QUEUED.value, RunStatus.RUNNING.value)
                         & (RunRow.tasks_total >= run.next_index + k))
                t.update(OrganizationRow(org_id), actions=[OrganizationRow.in_flight.add(k)],
                         condition=OrganizationRow.in_flight <= org_limit - k)
            return True
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            return False

    def record_attempt(self, run: RunRow, attempt: AttemptRow, *, counters: dict[str, int],
                       claim_next: bool, release_slot: bool, now_ms: int) -> RecordOutcome:
        """Write one attempt once, with the run's counters, in ONE transaction (DESIGN §5).

        Args:
            run: the run as read; its `next_index` guards a claim.
            attempt: the row to put (`attribute_not_exists`; its `run_key` is the run's); `successor`
                set when claiming.
            counters: run attributes to ADD (`recorded`, `passed`, `cost_micros`, ...).
            claim_next: also take the run's next task (`next_index` + 1, conditional on the value read
                and on the run still running): the slot passes to that task.
            release_slot: no task to pass the slot to: give it back to the run and organization
                (conditional on the run still holding one, so a swept run is never released twice).
        Returns:
            RecordOutcome(written=False) when the attempt existed already (a redelivery).
        Raises:
            RecordConflict: the run moved since it was read; read it again and retry.
        """
        actions = [getattr(RunRow, name).add(value) for name, value in counters.items() if value]
        actions.append(RunRow.heartbeat_at_ms.set(now_ms))
        condition = None
        if claim_next:
            actions.append(RunRow.next_index.set(run.next_index + 1))
            condition = (RunRow.next_index == run.next_index) & (RunRow.status == RunStatus.RUNNING.value)
        elif release_slot:
            actions.append(RunRow.slots.add(-1))
            condition = RunRow.slots > 0
        attempt.run_key, attempt.run_id = run.run_key, run.run_id
        try:
            with TX.write() as t:
                t.save(attempt, condition=AttemptRow.attempt_key.does_not_exist())
                t.update(RunRow(run.run_key), actions=actions, condition=condition)
                if release_slot and not claim_next:
                    t.update(OrganizationRow(run.org_id), actions=[OrganizationRow.in_flight.add(-1)],
                             condition=OrganizationRow.in_flight > 0)
            return RecordOutcome(written=True)
        except TransactWriteError as exc:
            codes = reason_codes(exc)
            if codes and codes[0] == "ConditionalCheckFailed":
                return RecordOutcome(written=False)
            if any(c == "ConditionalCheckFailed" for c in codes[1:]) or any(
                    c == "TransactionConflict" for c in codes):
                raise RecordConflict(str(codes)) from exc
            raise

    def set_phase(self, org_id: str, run_id: str, *, expect_phase: str, expect_recorded: int,
                  actions: list, ) -> bool:
        """Move a run's phase; exactly one caller wins (conditional on phase and `recorded`)."""
        try:
            RunRow(org_key(org_id, run_id)).update(actions=actions,
                                  condition=(RunRow.phase == expect_phase)
                                  & (RunRow.recorded == expect_recorded))
            return True
        except UpdateError as exc:
            unless_condition_failed(exc)
            return False

    def update(self, org_id: str, run_id: str, actions: list, condition=None) -> bool:
        """A conditional update of the organization's run; False when the condition failed."""
        return conditional_update(RunRow(org_key(org_id, run_id)), actions, condition)

    def end_and_release(self, run: RunRow, *, status: RunStatus, reason: str, now_iso: str,
                        condition) -> bool:
        """End a run and give all its slots back to the organization in one transaction.

        `condition` is checked on the run (e.g. its heartbeat and progress as read by the sweep).
        """
        try:
            with TX.write() as t:
                t.update(RunRow(run.run_key), actions=[
                    RunRow.status.set(status.value), RunRow.reason.set(reason),
                    RunRow.completed_at.set(now_iso), RunRow.slots.set(0)],
                    condition=condition & (RunRow.slots == run.slots))
                if run.slots:
                    t.update(OrganizationRow(run.org_id),
                             actions=[OrganizationRow.in_flight.add(-run.slots)],
                             condition=OrganizationRow.in_flight >= run.slots)
            return True
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            return False

    def delete(self, org_id: str, run_id: str) -> None:
        """Delete the organization's run and every attempt it kept."""
        key = org_key(org_id, run_id)
        with AttemptRow.batch_write() as batch:
            for row in AttemptRow.query(key, attributes_to_get=["run_key", "attempt_key"]):
                batch.delete(row)
        RunRow(key).delete()

    # -- attempts

    def get_attempt(self, org_id: str, run_id: str, key: str) -> AttemptRow | None:
        try:
            return AttemptRow.get(org_key(org_id, run_id), key, consistent_read=True)
        except DoesNotExist:
            return None

    def attempt_exists(self, org_id: str, run_id: str, key: str) -> bool:
        try:
            AttemptRow.get(org_key(org_id, run_id), key, consistent_read=True, attributes_to_get=["attempt_key"])
            return True
        except DoesNotExist:
            return False

    def attempts(self, org_id: str, run_id: str) -> list[AttemptRow]:
        """Every attempt of the organization's run (consistent)."""
        return list(AttemptRow.query(org_key(org_id, run_id), consistent_read=True))

    def attempt_keys(self, org_id: str, run_id: str) -> set[str]:
        return {r.attempt_key for r in AttemptRow.query(org_key(org_id, run_id), consistent_read=True,
                                                        attributes_to_get=["attempt_key"])}

    def attempts_after(self, org_id: str, run_id: str, cursor: str, limit: int, *,
                       until: str | None = None) -> list[AttemptRow]:
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
        rows = AttemptRow.order_index.query(org_key(org_id, run_id), condition, limit=limit + 1,
                                            consistent_read=True)
        return [r for r in rows if r.recorded_key != cursor][:limit]

    def regrade_attempt(self, row: AttemptRow, *, state: str, scores: list[dict[str, Any]], reason: str,
                        judge_cost_micros: int, judge_calls: int, entry: dict[str, Any]) -> bool:
        """Replace an attempt's grade (grading again) and move the run's counters with it, in one
        transaction conditional on the grade as read; False when somebody regraded it meanwhile."""
        seen = len(row.regraded or [])
        condition = (AttemptRow.state == row.state) & (
            AttemptRow.regraded.does_not_exist() if row.regraded is None else size(AttemptRow.regraded) == seen)
        run_actions: list[Action] = [RunRow.judge_cost_micros.add(judge_cost_micros), RunRow.judge_calls.add(judge_calls),
                                     RunRow.regrades.add(1)]
        if state != row.state:
            run_actions += [getattr(RunRow, row.state).add(-1), getattr(RunRow, state).add(1)]
        try:
            with TX.write() as t:
                t.update(AttemptRow(row.run_key, row.attempt_key), condition=condition, actions=[
                    AttemptRow.state.set(state), AttemptRow.scores.set(scores), AttemptRow.reason.set(reason),
                    AttemptRow.judge_cost_micros.add(judge_cost_micros), AttemptRow.judge_calls.add(judge_calls),
                    AttemptRow.regraded.set((AttemptRow.regraded | []).append([entry]))])
                t.update(RunRow(row.run_key), actions=run_actions)
            return True
        except TransactWriteError as exc:
            if any(code == "ConditionalCheckFailed" for code in reason_codes(exc)):
                return False
            raise

    def add_judge_cost(self, org_id: str, run_id: str, micros: int, calls: int) -> None:
        """Count judge requests whose grades were not kept (the money was spent all the same)."""
        if micros or calls:
            RunRow(org_key(org_id, run_id)).update(actions=[RunRow.judge_cost_micros.add(micros),
                                                            RunRow.judge_calls.add(calls)])

    def put_attempt_once(self, run: RunRow, attempt: AttemptRow) -> bool:
        """Write an attempt of `run` unless one exists (the sweep's failed attempts); True if written."""
        attempt.run_key, attempt.run_id = run.run_key, run.run_id
        try:
            attempt.save(condition=AttemptRow.attempt_key.does_not_exist())
            return True
        except PutError as exc:
            unless_condition_failed(exc)
            return False
