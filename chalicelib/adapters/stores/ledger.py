"""Runs and their attempts: the ledger every worker records into (DESIGN §5), the
`ports.ledger.Runs` port on DynamoDB.

Rows never leave this module: every method takes and returns the frozen records of
`chalicelib.domain.records` (`Run`, `Attempt`, `ActiveRun`) and builds its own keys and conditions.
"""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import fields
from typing import Any, TypeVar

from pynamodb.exceptions import (
    DoesNotExist,
    PutError,
    TransactWriteError,
)
from pynamodb.expressions.condition import Condition, size
from pynamodb.expressions.update import Action

from chalicelib.adapters.stores.base import (
    TX,
    changes,
    conditional_update,
    reason_codes,
    record_of,
    row_of,
    unless_condition_failed,
)
from chalicelib.adapters.tables import (
    AttemptRow,
    LeaseRow,
    OrganizationRow,
    RunRow,
    org_key,
)
from chalicelib.domain.enums import ArmRole, RunPhase, RunStatus
from chalicelib.domain.outcome import Outcome
from chalicelib.domain.records import ActiveRun, Arm, Attempt, Lease, Run
from chalicelib.errors import NotFoundError
from chalicelib.services.ports.ledger import RecordConflict, RecordOutcome, RunPage

__all__ = ["RecordConflict", "RecordOutcome", "RunStore", "run_of"]

R = TypeVar("R")

_ACTIVE = [*(f.name for f in fields(ActiveRun)), "run_key"]
"""What `recent_active` reads of a run (the index's keys with it)."""

_RUNNING = (RunStatus.QUEUED.value, RunStatus.RUNNING.value)

LEASE_KEPT_SECONDS = 14 * 86_400
"""How long a lease stays after it lapses or its attempt is recorded (TTL): SQS's longest
retention, so no copy of a message outlives what tells it the attempt was answered."""

_ATTEMPT_KEYS = ("attempt_key", "run_id", "recorded_key", "arm_id", "case_id", "attempt")
"""What a regrade never changes."""


def arm_of(stored: dict[str, Any]) -> Arm:
    """An arm as a run row keeps it (one JSON map of `RunRow.arms`); a key an older row lacks
    takes the arm's default."""
    return Arm(
        arm_id=stored["arm_id"],
        role=ArmRole(stored["role"]),
        version=stored.get("version"),
        draft=stored.get("draft", False),
        spec=stored["spec"],
        spec_hash=stored["spec_hash"],
        model_profile_id=stored.get("model_profile_id"),
        answers=stored.get("answers", True),
        rerun=stored.get("rerun", True),
        source_run_id=stored.get("source_run_id"),
        source_arm_id=stored.get("source_arm_id"),
        source_dataset_version=stored.get("source_dataset_version"),
        source_completed_at=stored.get("source_completed_at"),
    )


def stored_arm(arm: Arm) -> dict[str, Any]:
    """The JSON map a run row keeps of an arm, as runs have always been written: `{arm_id, role,
    version, draft, spec, spec_hash, model_profile_id}`, then `answers` and `rerun` for a
    baseline, then `source_run_id`, `source_arm_id`, `source_dataset_version` and
    `source_completed_at` for one whose answers are borrowed. The role is a plain `str`."""
    out: dict[str, Any] = {
        "arm_id": arm.arm_id,
        "role": arm.role.value,
        "version": arm.version,
        "draft": arm.draft,
        "spec": arm.spec,
        "spec_hash": arm.spec_hash,
        "model_profile_id": arm.model_profile_id,
    }
    if arm.role is ArmRole.BASELINE:
        out |= {"answers": arm.answers, "rerun": arm.rerun}
    if arm.source_run_id is not None:
        out |= {
            "source_run_id": arm.source_run_id,
            "source_arm_id": arm.source_arm_id,
            "source_dataset_version": arm.source_dataset_version,
            "source_completed_at": arm.source_completed_at,
        }
    return out


def _arms_of(stored: list[dict[str, Any]] | None) -> tuple[Arm, ...]:
    return tuple(arm_of(a) for a in stored or [])


def _outcome_of(stored: dict[str, Any] | None) -> Outcome | None:
    """A run's kept outcome (an empty map, as no outcome, is None)."""
    return Outcome.model_validate(stored) if stored else None


_STORED: dict[str, Any] = {"arms": _arms_of, "outcome": _outcome_of}
"""How a run row's JSON fields become the record's (`record_of`'s `convert`)."""


def run_of(row: RunRow) -> Run:
    """The `Run` record of a run row (its arms as `Arm`s)."""
    return record_of(row, Run, _STORED)


def _key(run: Run) -> str:
    return org_key(run.org_id, run.run_id)


def _lease_done(t: Any, run: Run, key: str, now_ms: int) -> None:
    """In a recording's transaction: mark the attempt's lease done (writing one if no delivery
    claimed it), so no later delivery claims a recorded attempt."""
    t.update(
        LeaseRow(_key(run), key),
        actions=[
            LeaseRow.done.set(True),
            LeaseRow.expires_at.set(now_ms // 1000 + LEASE_KEPT_SECONDS),
        ],
    )


def _page(rows: Any) -> RunPage:
    """A listing's page: its runs, then where the next page starts (known once they are read)."""
    runs = [run_of(r) for r in rows]
    return RunPage(runs, rows.last_evaluated_key)


class RunStore:
    """Eval runs, their attempts, and the conditional writes that move them (DESIGN §5-§7)."""

    # -- runs

    def create(self, run: Run) -> None:
        """Write a new run; its keys (`run_key`, `agent_key`, `dataset_key`) are built from its
        `org_id`, `run_id`, `agent_id` and `dataset_id`."""
        row = row_of(
            run,
            RunRow,
            run_key=_key(run),
            agent_key=org_key(run.org_id, run.agent_id),
            dataset_key=org_key(run.org_id, run.dataset_id),
        )
        row.arms = [stored_arm(a) for a in run.arms]
        row.outcome = run.outcome.as_json() if run.outcome is not None else None
        row.save(condition=RunRow.run_key.does_not_exist())

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
        self, org_id: str, agent_id: str, limit: int = 50, start: dict[str, Any] | None = None
    ) -> RunPage:
        """The organization's agent's runs, newest first, a page at a time (`start`: the previous
        page's `next_start`, keys `run_key`, `agent_key`, `created_at`)."""
        return _page(
            RunRow.agent_index.query(
                org_key(org_id, agent_id),
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

    @staticmethod
    def is_page_start(
        start: Any, org_id: str, *, agent_id: str | None = None, dataset_id: str | None = None
    ) -> bool:
        """Whether `start` is a `next_start` of this organization's listing: of the agent's
        runs (`agent_id`), the dataset's (`dataset_id`) or else all of them. Exactly the keys
        `run_key` (a run of the organization), the index's hash key (its value for this listing)
        and `created_at`, each `{"S": str}`."""
        if agent_id is not None:
            hash_name, hash_value = "agent_key", org_key(org_id, agent_id)
        elif dataset_id is not None:
            hash_name, hash_value = "dataset_key", org_key(org_id, dataset_id)
        else:
            hash_name, hash_value = "org_id", org_id
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

    def recent_active(self, org_id: str, limit: int) -> list[ActiveRun]:
        """The organization's queued or running runs among its newest `limit` (projected: only what
        their committed spend and what they use need)."""
        rows = RunRow.org_index.query(
            org_id, scan_index_forward=False, limit=limit, attributes_to_get=_ACTIVE
        )
        return [record_of(r, ActiveRun, _STORED) for r in rows if r.status in _RUNNING]

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
    ) -> RecordOutcome:
        """Write one attempt once, with the run's counters, in ONE transaction (DESIGN §5).

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
        row = LeaseRow(
            _key(run),
            key,
            holder=holder,
            until_ms=until_ms,
            expires_at=until_ms // 1000 + LEASE_KEPT_SECONDS,
        )
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

    def complete(self, org_id: str, run_id: str, outcome: Outcome, now_iso: str) -> bool:
        """A finalizing running run → completed, phase done, with its outcome (kept as its
        `as_json()`; idempotent)."""
        return conditional_update(
            RunRow(org_key(org_id, run_id)),
            [
                RunRow.status.set(RunStatus.COMPLETED.value),
                RunRow.phase.set(RunPhase.DONE.value),
                RunRow.outcome.set(outcome.as_json()),
                RunRow.completed_at.set(now_iso),
            ],
            (RunRow.phase == RunPhase.FINALIZING.value)
            & (RunRow.status == RunStatus.RUNNING.value),
        )

    def end(self, run: Run, status: RunStatus, reason: str, now_iso: str) -> bool:
        """End a queued or running run as `status`; its slots stay with its running cases."""
        return conditional_update(
            RunRow(_key(run)),
            [
                RunRow.status.set(status.value),
                RunRow.reason.set(reason),
                RunRow.completed_at.set(now_iso),
            ],
            RunRow.status.is_in(*_RUNNING),
        )

    def _end_and_release(
        self, run: Run, *, status: str, reason: str, completed_at: str, condition: Condition
    ) -> bool:
        """End a run and give all its slots back to the organization in one transaction,
        conditional on `condition` and on the run holding the slots it was read with."""
        try:
            with TX.write() as t:
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
                if run.slots:
                    t.update(
                        OrganizationRow(run.org_id),
                        actions=[OrganizationRow.in_flight.add(-run.slots)],
                        condition=OrganizationRow.in_flight >= run.slots,
                    )
            return True
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            return False

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
        """Replace the outcome if `regrades` is still as read (absent when it was None or 0)."""
        seen = int(run.regrades or 0)
        return conditional_update(
            RunRow(_key(run)),
            [RunRow.outcome.set(outcome.as_json())],
            RunRow.regrades == seen if seen else RunRow.regrades.does_not_exist(),
        )

    def add_judge_cost(self, org_id: str, run_id: str, micros: int, calls: int) -> None:
        """Count judge requests whose grades were not kept (the money was spent all the same)."""
        if micros or calls:
            RunRow(org_key(org_id, run_id)).update(
                actions=[RunRow.judge_cost_micros.add(micros), RunRow.judge_calls.add(calls)]
            )

    def delete(self, org_id: str, run_id: str) -> None:
        """Delete the organization's run and every attempt it kept."""
        key = org_key(org_id, run_id)
        for model in (AttemptRow, LeaseRow):
            with model.batch_write() as batch:
                for row in model.query(key, attributes_to_get=["run_key", "attempt_key"]):
                    batch.delete(row)
        RunRow(key).delete()

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
        rows = AttemptRow.query(org_key(org_id, run_id), consistent_read=True)
        return [record_of(r, Attempt) for r in rows]

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
