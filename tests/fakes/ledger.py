"""Fakes of `chalicelib.services.ports.ledger` (and of what the ledger's hand-off writes beside the
run: the organization's slot counter and waiting line, the case-task queue)."""

from __future__ import annotations

from collections.abc import Callable, Iterator, Sequence
from dataclasses import fields, replace
from typing import Any

from chalicelib.domain import history
from chalicelib.domain.agent_runs import AgentRun
from chalicelib.domain.enums import RunPhase, RunStatus
from chalicelib.domain.leases import Lease
from chalicelib.domain.outcome import Outcome
from chalicelib.domain.records import ActiveRun, Attempt, Run
from chalicelib.domain.run_rules import Claim, Lanes
from chalicelib.errors import ConflictError, NotFoundError
from chalicelib.services.ports.ledger import RecordConflict, RecordOutcome
from chalicelib.services.ports.messaging import QueueSendError
from tests.fakes.builders import a_run as a_run
from tests.fakes.builders import an_arm as an_arm
from tests.fakes.builders import an_arm_result as an_arm_result
from tests.fakes.builders import an_attempt as an_attempt
from tests.fakes.builders import an_outcome as an_outcome
from tests.fakes.catalog import Liveness
from tests.fakes.leases import FakeLeases
from tests.fakes.run_lists import FakeRunLists
from tests.fakes.tenants import FakeOrganizations

_RUNNING = (RunStatus.QUEUED, RunStatus.RUNNING)
_ACTIVE = [f.name for f in fields(ActiveRun)]


class FakeQueue:
    """The case-task queue: `sent` keeps every body in order; `refuse` bodies are not queued
    (`QueueSendError`, as SQS's partial failures)."""

    def __init__(self) -> None:
        self.sent: list[dict[str, Any]] = []
        self.refuse: Callable[[dict[str, Any]], bool] = lambda _body: False
        self.backlog = 0
        """What `waiting` answers: the messages a test says wait for a worker."""
        self.waiting_reads = 0
        self.visibility: list[tuple[str, int]] = []
        """Every `extend_visibility` as (receipt, seconds), in order."""

    def send(self, bodies: list[dict[str, Any]]) -> None:
        failed = [b for b in bodies if self.refuse(b)]
        self.sent += [b for b in bodies if not self.refuse(b)]
        if failed:
            raise QueueSendError(failed)

    def extend_visibility(self, receipt_handle: str, seconds: int) -> None:
        self.visibility.append((receipt_handle, seconds))

    def waiting(self) -> int:
        self.waiting_reads += 1
        return self.backlog


class FakeRuns(FakeLeases, FakeRunLists):
    """`ports.ledger.Runs` in dicts: runs by (org_id, run_id), attempts by (org_id, run_id) then
    key.

    Every conditional write checks what the real store's condition checks, on the records as
    kept now, and the organization's `in_flight` lives in `orgs` (the real transactions write the
    organization row too). `meanwhile` stands for the other workers: each conditional write first
    runs (and drops) the first callable in it, before checking its condition, so a test loses a
    race by appending what the winner wrote (one callable per write lost).

    The agents' history rows (`domain.history`) are folded by the same rules as the store's: by
    `complete`, `record_outcome` and `delete`, and by `add` of a completed run (a test seeds runs
    as their completing transactions left them). `history_rows` holds them by (org_id, agent_id,
    row key). The organization's active runs are the kept runs queued or running.
    """

    def __init__(self, orgs: FakeOrganizations | None = None) -> None:
        self.kept: dict[tuple[str, str], Run] = {}
        self.attempts_kept: dict[tuple[str, str], dict[str, Attempt]] = {}
        self.orgs = orgs if orgs is not None else FakeOrganizations()
        self.meanwhile: list[Callable[[], None]] = []
        self.leases: dict[tuple[str, str, str], Lease] = {}
        self.agent_runs_kept: dict[tuple[str, str], AgentRun] = {}
        self.agent_pages_read = []
        """Agent runs by (org_id, agent_run_id), as `record_attempt` puts them."""
        self.history_rows: dict[tuple[str, str, str], history.HistoryRow] = {}
        self.live: Liveness | None = None
        """What `create` checks of the run's agent and dataset (`FakeContainer` wires it)."""
        self.full_reads = 0
        """How many times `get` read a run in full (tests of what the chart reads)."""

    # -- test helpers

    def add(self, run: Run) -> None:
        """Seed a run (tests); a completed one is folded into its agent's history, as the
        transaction that completed it would have."""
        self.kept[(run.org_id, run.run_id)] = run
        self._fold(run)

    def _fold(self, run: Run, *also: Run) -> None:
        """Fold `run` into every history row it (or `also`, the run as it was) has something
        in."""
        keys = {
            r.key: r
            for r in (*history.rows_of(run), *(x for a in also for x in history.rows_of(a)))
        }
        for key, empty in keys.items():
            kept = self.history_rows.get((run.org_id, run.agent_id, key), empty)
            self.history_rows[(run.org_id, run.agent_id, key)] = kept.with_run(run)

    def _unfold(self, run: Run) -> None:
        """Take `run` out of its agent's history; an evaluation whose latest run it was falls back
        to the latest of its other completed runs kept."""
        for empty in history.rows_of(run):
            slot = (run.org_id, run.agent_id, empty.key)
            kept = self.history_rows.get(slot)
            if kept is None:
                continue
            row = kept.without_run(run.run_id)
            if isinstance(kept, history.LatestRow) and kept.vacated_by(run.run_id) is not None:
                same = [
                    r
                    for r in self.kept.values()
                    if r.run_id != run.run_id
                    and (r.org_id, r.agent_id, r.dataset_id)
                    == (run.org_id, run.agent_id, run.dataset_id)
                    and history.evaluation_slot(r.dataset_id, r.evaluation_id)
                    == history.evaluation_slot(run.dataset_id, run.evaluation_id)
                    and history.subject_of(r.resolved_version, r.draft) == kept.subject
                    and history.counts(r)
                ]
                for other in same:
                    row = row.with_run(other)
            self.history_rows[slot] = row

    def set(self, org_id: str, run_id: str, **changes: Any) -> Run:
        """Change a kept run as another writer would (tests); returns it as kept now."""
        run = self.kept[(org_id, run_id)] = replace(self.kept[(org_id, run_id)], **changes)
        return run

    def _others_write(self) -> None:
        if self.meanwhile:
            self.meanwhile.pop(0)()

    def _org_in_flight(self, org_id: str, delta: int) -> None:
        org = self.orgs.kept[org_id]
        self.orgs.kept[org_id] = replace(org, in_flight=org.in_flight + delta)

    def _in_flight(self, org_id: str) -> int:
        org = self.orgs.kept.get(org_id)
        return org.in_flight if org is not None else 0

    # -- runs

    def create(self, run: Run) -> None:
        if (run.org_id, run.run_id) in self.kept:
            raise ValueError(f"run {run.run_id} exists")
        if self.live is not None:
            self.live.agent(run.org_id, run.agent_id)
            self.live.dataset(run.org_id, run.dataset_id)
        for arm in run.arms:
            source = self.kept.get((run.org_id, arm.source_run_id or ""))
            if arm.source_run_id and (source is None or source.deleting_at is not None):
                raise ConflictError(
                    f"eval run {arm.source_run_id} is being deleted: start again",
                    field="baseline_run_id",
                )
        self.add(run)

    def get(self, org_id: str, run_id: str) -> Run | None:
        self.full_reads += 1
        return self.kept.get((org_id, run_id))

    def get_for_org(self, org_id: str, run_id: str) -> Run:
        run = self.get(org_id, run_id)
        if run is None:
            raise NotFoundError(f"eval run {run_id} not found", field="run_id")
        return run

    def refresh(self, run: Run) -> Run | None:
        kept = self.get(run.org_id, run.run_id)
        return (
            None
            if kept is None
            else run.moved(**{name: getattr(kept, name) for name in Run.CURSOR})
        )

    def active(self, org_id: str) -> list[ActiveRun]:
        return [
            ActiveRun(**{name: getattr(r, name) for name in _ACTIVE})
            for r in self._newest(org_id, lambda r: r.status in _RUNNING)
        ]

    def history(
        self, org_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], history.HistoryRow]:
        return {
            (agent_id, key): self.history_rows[(org_id, agent_id, key)]
            for agent_id, key in keys
            if (org_id, agent_id, key) in self.history_rows
        }

    def remember(self, runs: Sequence[Run]) -> None:
        for run in runs:
            self._fold(run)

    def stale(self, status: RunStatus, before_ms: int) -> Iterator[Run]:
        return iter(
            [r for r in self.kept.values() if r.status == status and r.heartbeat_at_ms <= before_ms]
        )

    def claim_tasks(
        self, run: Run, lanes: list[int], org_id: str, org_limit: int, now_ms: int, now_iso: str
    ) -> bool:
        self._others_write()
        kept = self.kept[(run.org_id, run.run_id)]
        seen, now = run.lanes, kept.lanes
        k = len(lanes)
        if (
            any(now.next[j] != seen.next[j] or now.busy[j] for j in lanes)
            or any(kept.lane_end and now.end[j] <= seen.next[j] for j in lanes)
            or kept.status not in _RUNNING
            or self._in_flight(org_id) > org_limit - k
        ):
            return False
        started = (
            {"status": RunStatus.RUNNING.value, "started_at": now_iso}
            if run.status == RunStatus.QUEUED
            else {}
        )
        after = now.claiming(lanes)
        self.set(
            run.org_id,
            run.run_id,
            next_index=kept.next_index + k,
            slots=kept.slots + k,
            lane_next=after.next,
            lane_busy=after.busy,
            lane_end=after.end if (kept.lane_end or not kept.lane_next) else (),
            heartbeat_at_ms=now_ms,
            **started,
        )
        self._org_in_flight(org_id, k)
        return True

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
        self._others_write()
        key = (run.org_id, run.run_id)
        if attempt.attempt_key in self.attempts_kept.get(key, {}):
            return RecordOutcome(written=False)
        kept = self.kept[key]
        now = kept.lanes
        moves: dict[str, Any] = {
            name: getattr(kept, name) + value for name, value in counters.items() if value
        }
        moves["heartbeat_at_ms"] = now_ms
        if claim is not None:
            j, seen = claim.lane, run.lanes
            if now.next[j] != seen.next[j] or kept.status != RunStatus.RUNNING:
                raise RecordConflict("the lane's cursor or the status moved")
            if claim.victim is None and kept.lane_end and now.end[j] <= claim.index:
                raise RecordConflict("another lane took the task")
            if claim.victim is not None and (
                now.end[claim.victim] != claim.victim_end or now.next[claim.victim] > claim.index
            ):
                raise RecordConflict("the stride taken moved")
            after = now.after(claim)
            moves |= {"lane_next": after.next, "next_index": kept.next_index + 1}
            if kept.lane_end or claim.victim is not None:
                moves["lane_end"] = after.end
        elif release_slot and lane is not None:
            if not now.busy[lane] or kept.slots <= 0 or self._in_flight(run.org_id) <= 0:
                raise RecordConflict("no slot to release")
            busy = list(now.busy)
            busy[lane] = False
            moves |= {"slots": kept.slots - 1, "lane_busy": tuple(busy)}
            self._org_in_flight(run.org_id, -1)
        self.attempts_kept.setdefault(key, {})[attempt.attempt_key] = replace(
            attempt, run_id=run.run_id
        )
        self.set(*key, **moves)
        self._lease_done(run, attempt.attempt_key)
        if claim is not None and successor_lease is not None:
            self.leases[(run.org_id, run.run_id, successor_lease.attempt_key)] = successor_lease
        for agent_run in agent_runs:
            self.agent_runs_kept[(agent_run.org_id, agent_run.agent_run_id)] = agent_run
        return RecordOutcome(written=True)

    def beat(self, org_id: str, run_id: str, now_ms: int) -> bool:
        if self.kept[(org_id, run_id)].status != RunStatus.RUNNING:
            return False
        self.set(org_id, run_id, heartbeat_at_ms=now_ms)
        return True

    def _phase_moves(self, run: Run, phases: tuple[RunPhase, ...], **changes: Any) -> bool:
        self._others_write()
        kept = self.kept[(run.org_id, run.run_id)]
        if run.phase not in phases or kept.phase != run.phase or kept.recorded != run.recorded:
            return False
        self.set(run.org_id, run.run_id, **changes)
        return True

    def enter_confirming(self, run: Run, tasks: list[list[Any]]) -> bool:
        lanes = Lanes.reopened(int(run.tasks_total), run.lanes.busy)
        reopened = {"lane_next": lanes.next, "lane_end": lanes.end} if run.lane_end else {}
        return self._phase_moves(
            run,
            (RunPhase.ANSWERING,),
            phase=RunPhase.CONFIRMING.value,
            tasks=[*(run.tasks or []), *tasks],
            tasks_total=run.tasks_total + len(tasks),
            expected=run.expected + len(tasks),
            **reopened,
        )

    def enter_finalizing(self, run: Run) -> bool:
        return self._phase_moves(
            run, (RunPhase.ANSWERING, RunPhase.CONFIRMING), phase=RunPhase.FINALIZING.value
        )

    def complete(
        self,
        run: Run,
        outcome: Outcome,
        now_iso: str,
        routed: tuple[int, int, str | None] | None = None,
    ) -> bool:
        self._others_write()
        kept = self.kept[(run.org_id, run.run_id)]
        if kept.phase != RunPhase.FINALIZING or kept.status != RunStatus.RUNNING:
            return False
        done = self.set(
            run.org_id,
            run.run_id,
            status=RunStatus.COMPLETED.value,
            phase=RunPhase.DONE.value,
            outcome=outcome,
            completed_at=now_iso,
            **(
                {
                    "routed_to_review": routed[0],
                    "routed_replacing": routed[1],
                    "routing_error": routed[2],
                }
                if routed is not None
                else {}
            ),
        )
        self._fold(done)
        return True

    def end(self, run: Run, status: RunStatus, reason: str, now_iso: str) -> bool:
        self._others_write()
        if self.kept[(run.org_id, run.run_id)].status not in _RUNNING:
            return False
        self.set(run.org_id, run.run_id, status=status.value, reason=reason, completed_at=now_iso)
        return True

    def _end_and_release(
        self, run: Run, holds: Callable[[Run], bool], *, status: str, reason: str, completed_at: str
    ) -> bool:
        self._others_write()
        kept = self.kept[(run.org_id, run.run_id)]
        if (
            not holds(kept)
            or kept.slots != run.slots
            or (run.slots and self._in_flight(run.org_id) < run.slots)
        ):
            return False
        self.set(
            run.org_id,
            run.run_id,
            status=status,
            reason=reason,
            completed_at=completed_at,
            slots=0,
            lane_busy=(False,) * kept.lanes.n,
        )
        if run.slots:
            self._org_in_flight(run.org_id, -run.slots)
        return True

    def abandon(self, run: Run, reason: str, now_iso: str) -> bool:
        return self._end_and_release(
            run,
            lambda kept: (
                kept.status == RunStatus.RUNNING
                and kept.heartbeat_at_ms == run.heartbeat_at_ms
                and kept.recorded == run.recorded
            ),
            status=RunStatus.FAILED.value,
            reason=reason,
            completed_at=now_iso,
        )

    def fail_on_error(self, run: Run, reason: str, now_iso: str) -> bool:
        return self._end_and_release(
            run,
            lambda kept: kept.status == RunStatus.RUNNING,
            status=RunStatus.FAILED.value,
            reason=reason,
            completed_at=now_iso,
        )

    def fail_unstarted(self, run: Run, reason: str, now_iso: str) -> bool:
        return self._end_and_release(
            run,
            lambda kept: kept.status == RunStatus.QUEUED,
            status=RunStatus.FAILED.value,
            reason=reason,
            completed_at=now_iso,
        )

    def release_stranded(self, run: Run, reason: str, completed_at: str) -> bool:
        return self._end_and_release(
            run,
            lambda kept: kept.heartbeat_at_ms == run.heartbeat_at_ms,
            status=run.status,
            reason=reason,
            completed_at=completed_at,
        )

    def claim_advance(
        self, org_id: str, run_id: str, phase: str, until_ms: int, now_ms: int
    ) -> bool:
        self._others_write()
        kept = self.kept[(org_id, run_id)]
        held = kept.advancing_until_ms
        if held is not None and kept.advancing_phase == phase and held >= now_ms:
            return False
        self.set(org_id, run_id, advancing_phase=phase, advancing_until_ms=until_ms)
        return True

    def claim_grading(self, org_id: str, run_id: str, until_ms: int, now_ms: int) -> bool:
        self._others_write()
        held = self.kept[(org_id, run_id)].grading_until_ms
        if held is not None and held >= now_ms:
            return False
        self.set(org_id, run_id, grading_until_ms=until_ms)
        return True

    def release_grading(self, org_id: str, run_id: str, until_ms: int) -> bool:
        if self.kept[(org_id, run_id)].grading_until_ms != until_ms:
            return False
        self.set(org_id, run_id, grading_until_ms=None)
        return True

    def add_grading(self, org_id: str, run_id: str, entry: dict[str, Any]) -> None:
        self.set(org_id, run_id, gradings=[*(self.kept[(org_id, run_id)].gradings or []), entry])

    def record_outcome(self, run: Run, outcome: Outcome) -> bool:
        self._others_write()
        if int(self.kept[(run.org_id, run.run_id)].regrades or 0) != int(run.regrades or 0):
            return False
        self.set(run.org_id, run.run_id, outcome=outcome, outcome_stale=None)
        self._fold(replace(run, outcome=outcome), run)
        return True

    def add_judge_cost(self, org_id: str, run_id: str, micros: int, calls: int) -> None:
        kept = self.kept[(org_id, run_id)]
        self.set(
            org_id,
            run_id,
            judge_cost_micros=kept.judge_cost_micros + micros,
            judge_calls=kept.judge_calls + calls,
        )

    def delete(self, org_id: str, run_id: str) -> None:
        run = self.kept.pop((org_id, run_id), None)
        if run is not None:
            self._unfold(run)
        self.attempts_kept.pop((org_id, run_id), None)
        for key in [k for k in self.leases if k[:2] == (org_id, run_id)]:
            del self.leases[key]

    def mark_deleting(self, org_id: str, run_id: str, at: str) -> bool:
        kept = self.kept.get((org_id, run_id))
        if kept is None:
            return False
        if kept.deleting_at is None:
            self.set(org_id, run_id, deleting_at=at)
        return True

    def keep_borrowed(self, run: Run, attempts: Sequence[Attempt]) -> bool:
        if (run.org_id, run.run_id) not in self.kept:
            return False
        for attempt in attempts:
            self.add_attempt(run.org_id, attempt)
        return True

    def forget_history(self, org_id: str, agent_id: str, dataset_id: str | None = None) -> int:
        gone = [
            key
            for key, row in self.history_rows.items()
            if key[:2] == (org_id, agent_id)
            and (
                dataset_id is None
                or (isinstance(row, history.ArmsRow) and row.dataset_id == dataset_id)
            )
        ]
        for key in gone:
            del self.history_rows[key]
        return len(gone)

    # -- attempts

    def add_attempt(self, org_id: str, attempt: Attempt) -> None:
        """Seed an attempt (tests): nothing on the run moves."""
        self.attempts_kept.setdefault((org_id, attempt.run_id), {})[attempt.attempt_key] = attempt

    def get_attempt(self, org_id: str, run_id: str, key: str) -> Attempt | None:
        return self.attempts_kept.get((org_id, run_id), {}).get(key)

    def attempt_exists(self, org_id: str, run_id: str, key: str) -> bool:
        return self.get_attempt(org_id, run_id, key) is not None

    def attempts(self, org_id: str, run_id: str) -> list[Attempt]:
        kept = self.attempts_kept.get((org_id, run_id), {})
        return [kept[key] for key in sorted(kept)]

    def attempt_keys(self, org_id: str, run_id: str) -> set[str]:
        return set(self.attempts_kept.get((org_id, run_id), {}))

    def attempts_after(
        self, org_id: str, run_id: str, cursor: str, limit: int, *, until: str | None = None
    ) -> list[Attempt]:
        rows = sorted(
            self.attempts_kept.get((org_id, run_id), {}).values(), key=lambda a: a.recorded_key
        )
        return [
            a
            for a in rows
            if a.recorded_key > cursor and (until is None or a.recorded_key <= until)
        ][:limit]

    def put_attempt_counted(self, run: Run, attempt: Attempt, now_ms: int) -> bool:
        if self.attempt_exists(run.org_id, run.run_id, attempt.attempt_key):
            return False
        self.add_attempt(run.org_id, replace(attempt, run_id=run.run_id))
        self._lease_done(run, attempt.attempt_key)
        kept = self.kept[(run.org_id, run.run_id)]
        self.set(
            run.org_id,
            run.run_id,
            recorded=kept.recorded + 1,
            **{attempt.state: getattr(kept, attempt.state) + 1},
        )
        return True

    def regrade(self, org_id: str, before: Attempt, after: Attempt) -> bool:
        self._others_write()
        kept = self.get_attempt(org_id, before.run_id, before.attempt_key)
        if (
            kept is None
            or kept.state != before.state
            or (kept.regraded is None) != (before.regraded is None)
            or len(kept.regraded or []) != len(before.regraded or [])
        ):
            return False
        self.add_attempt(org_id, after)
        run = self.kept[(org_id, before.run_id)]
        moves: dict[str, Any] = {
            "judge_cost_micros": run.judge_cost_micros
            + after.judge_cost_micros
            - before.judge_cost_micros,
            "judge_calls": run.judge_calls + after.judge_calls - before.judge_calls,
            "regrades": int(run.regrades or 0) + 1,
        }
        if after.state != before.state:
            moves[before.state] = getattr(run, before.state) - 1
            moves[after.state] = getattr(run, after.state) + 1
        self.set(org_id, before.run_id, **moves)
        return True


# -- records to seed the fakes with
