"""Ports of the ledger: runs and the attempts every worker records into
(docs/architecture/exactly-once.md, docs/architecture/run-lifecycle.md), implemented by
`chalicelib.adapters.stores.ledger.RunStore`, faked by `tests.fakes.ledger`.

Every move of a run that another worker may make at the same time is one conditional write that
says what it does (`claim_tasks`, `record_attempt`, `enter_confirming`, `complete`, `abandon`,
`claim_grading`...); it returns False (or raises `RecordConflict`) when the run moved since it was
read, and the caller reads again (`chalicelib.retrying.change`) or lets the winner be.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass, field
from typing import TYPE_CHECKING, Any, Protocol

from chalicelib.domain.agent_runs import AgentRun
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.leases import Lease
from chalicelib.domain.records import ActiveRun, Attempt, Run
from chalicelib.domain.run_rules import Claim

if TYPE_CHECKING:  # annotations only: the case worker need not import them to start
    from chalicelib.domain.chart import TrendRun
    from chalicelib.domain.history import HistoryRow
    from chalicelib.domain.outcome import Outcome


@dataclass(frozen=True, slots=True)
class RecordOutcome:
    """What `Runs.record_attempt` did: `written` False means the attempt existed already."""

    written: bool


class RecordConflict(Exception):
    """The run changed since it was read (another worker claimed or released): read, retry."""


@dataclass(frozen=True)
class RunPage:
    """One page of a listing of runs, newest first (iterating it iterates `runs`)."""

    runs: list[Run] = field(default_factory=list)
    next_start: dict[str, Any] | None = None
    """The `start` of the next page (the storage's key of its last run); None after the last."""

    def __iter__(self) -> Iterator[Run]:
        return iter(self.runs)


@dataclass(frozen=True)
class TrendPage:
    """One page of a chart's listing (`Runs.trends_by_agent`), newest first."""

    runs: list[TrendRun] = field(default_factory=list)
    next_start: dict[str, Any] | None = None
    """The `start` of the next page; None after the last."""


class Runs(Protocol):
    """An organization's eval runs and their attempts. Every read and write names the
    organization; `run` arguments are runs as read (their `org_id`, `run_id` and cursor)."""

    # -- runs

    def create(self, run: Run) -> None:
        """Keep a new run (its id is new: a uuid), checking in the same write that its agent and
        dataset exist and are not being deleted, nor any run a baseline arm borrows from.

        Raises:
            NotFoundError: its agent (`agent_id`) or dataset (`dataset_id`) is gone or being
                deleted.
            ConflictError: a run it borrows from is gone or being deleted (`baseline_run_id`).
        """

    def get(self, org_id: str, run_id: str) -> Run | None:
        """The organization's run (consistent), or None."""

    def get_for_org(self, org_id: str, run_id: str) -> Run:
        """The organization's run. Raises NotFoundError (field `run_id`)."""

    def refresh(self, run: Run) -> Run | None:
        """`run` with its cursor (`Run.CURSOR`) read again (a small consistent read); None when the
        run was deleted. The other fields are `run`'s."""

    def list_by_agent(
        self,
        org_id: str,
        agent_id: str,
        limit: int = 50,
        start: dict[str, Any] | None = None,
        before: str | None = None,
    ) -> RunPage:
        """The agent's runs, newest first, `limit` at a time (`start`: a page's `next_start`);
        with `before` (an ISO time), only those created before it."""

    def list_by_org(
        self, org_id: str, limit: int = 50, start: dict[str, Any] | None = None
    ) -> RunPage:
        """The organization's runs, newest first, `limit` at a time."""

    def list_by_dataset(
        self, org_id: str, dataset_id: str, limit: int = 50, start: dict[str, Any] | None = None
    ) -> RunPage:
        """The dataset's runs, newest first, `limit` at a time."""

    def list_by_evaluation(
        self, org_id: str, evaluation_id: str, limit: int = 50, start: dict[str, Any] | None = None
    ) -> RunPage:
        """The evaluation's runs (docs/guides/by-hand.md), newest first, `limit` at a time."""

    def trends_by_agent(
        self, org_id: str, agent_id: str, limit: int = 500, start: dict[str, Any] | None = None
    ) -> TrendPage:
        """The agent's completed runs as the pass-rate chart reads them (`domain.chart.TrendRun`,
        kept by the writes that complete a run, grade it again and delete it; never the run
        itself), newest first, `limit` at a time (docs/guides/console.md)."""

    def trends_by_dataset(
        self, org_id: str, dataset_id: str, limit: int = 500, start: dict[str, Any] | None = None
    ) -> TrendPage:
        """The dataset's completed runs as `trends_by_agent`."""

    @staticmethod
    def page_start_of(
        run: Run,
        *,
        agent_id: str | None = None,
        dataset_id: str | None = None,
        evaluation_id: str | None = None,
    ) -> dict[str, Any]:
        """The `start` of the page after `run` in the listing named as `is_page_start` names it."""

    @staticmethod
    def is_page_start(
        start: Any,
        org_id: str,
        *,
        agent_id: str | None = None,
        dataset_id: str | None = None,
        evaluation_id: str | None = None,
    ) -> bool:
        """Whether `start` is a `next_start` of this organization's listing of the agent's runs
        (`agent_id`), the dataset's (`dataset_id`), the evaluation's (`evaluation_id`) or else all
        its runs."""

    def active(self, org_id: str) -> list[ActiveRun]:
        """Every queued or running run of the organization, newest first: as many reads as it has
        such runs, however many runs it has (`create` and every write that ends a run keep the
        organization's list of them)."""

    def history(
        self, org_id: str, keys: Sequence[tuple[str, str]]
    ) -> dict[tuple[str, str], HistoryRow]:
        """The rows of the organization's agents' history (`domain.history`) named by `(agent_id,
        row key)`, in batches of at most 100 keys (eventually consistent); a row no completed run
        wrote is left out."""

    def remember(self, runs: Sequence[Run]) -> None:
        """Fold completed runs that are kept already into their agents' history, as their
        completing transactions would have (a backfill of runs completed before the history was
        kept, or history written straight into the tables by a benchmark). Runs that did not
        complete are left out; folding a run twice changes nothing."""

    def stale(self, status: RunStatus, before_ms: int) -> Iterator[Run]:
        """Runs of every organization in `status` whose heartbeat is at or before `before_ms` (epoch
        ms; eventually consistent: the sweep reads each again)."""

    def claim_tasks(
        self, run: Run, lanes: list[int], org_id: str, org_limit: int, now_ms: int, now_iso: str
    ) -> bool:
        """Start the next task of each idle lane in `lanes` (`run.lanes` as read) and take as many
        of the organization's slots at once (a queued run starts running); False when one of those
        lanes moved or had its stride cut before that task, the run ended, or the organization has
        fewer free slots under `org_limit`."""

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
        """Write `attempt` once, with the run's counters, at once
        (docs/architecture/exactly-once.md).

        Args:
            counters: run fields to add to (`recorded`, `passed`, `cost_micros`, ...).
            lane: the lane running the attempt's task (`run.lanes.lane_of(index)`; None: none).
            claim: also start the task the lane's slot passes to (`Lanes.claim_for`): the next of
                its own stride, conditional on that lane's cursor as read, on the task still
                being within its stride and on the run running; or the back half of another
                lane's stride, conditional too on that lane's end as read and on its cursor not
                past the task taken. None claims nothing.
            release_slot: no task to pass the slot to: give it back to the run and organization
                (conditional on the lane holding one, so a swept run is never released twice).
            agent_runs: the agent runs the attempt is (`services.eval_agent_runs`), put in the
                same transaction.
            agent_runs: the agent runs the attempt is (`services.eval_agent_runs`), written in
                the same transaction.
            successor_lease: with `claim`, the claim on the task it starts, written in the
                same write: the delivery that recorded carries on with that task itself, no
                message sent (`run_case.handle_task`).
        Returns:
            `RecordOutcome(written=False)` when the attempt existed already (a redelivery).
        Raises:
            RecordConflict: the run moved since it was read; read it again and retry.
        """

    def take_lease(self, run: Run, key: str, holder: str, until_ms: int, now_ms: int) -> bool:
        """Claim the attempt `key` for `holder` (a delivery's message id) until `until_ms` (epoch
        ms) unless another claim lives past `now_ms` or the attempt is recorded (every recording
        marks its lease done in its own write); True when taken. The attempt's `failures` and
        `last_error` are kept (`fail_lease`)."""

    def extend_lease(self, run: Run, key: str, holder: str, until_ms: int) -> bool:
        """Move `holder`'s claim on the attempt `key` to `until_ms`; False when not theirs."""

    def release_lease(self, run: Run, key: str, holder: str) -> bool:
        """Let `holder`'s claim on the attempt `key` lapse now (its delivery failed); False when
        the claim is not theirs or the attempt is recorded."""

    def fail_lease(self, run: Run, key: str, holder: str, error: str) -> Lease | None:
        """Let `holder`'s claim on the attempt `key` lapse now because its delivery failed on
        assay's own error `error` (redacted, at most `leases.ERROR_CHARS` characters), counting
        the failure in the same conditional write: the lease as that write left it (`failures`
        one more, `last_error` = `error`), or None when the claim is not theirs or the attempt is
        recorded (nothing counted). A later claim of the attempt keeps the count."""

    def lease_of(self, run: Run, key: str) -> Lease | None:
        """The claim on the attempt `key` (consistent; `done` once it is recorded), or None when
        no delivery ever claimed it and it is not recorded."""

    def beat(self, org_id: str, run_id: str, now_ms: int) -> bool:
        """Heartbeat a running run (`heartbeat_at_ms`); False when it is not running."""

    def enter_confirming(self, run: Run, tasks: list[list[Any]]) -> bool:
        """answering → confirming, adding `tasks` (`[arm_id, case_id, attempt]`) to the run's
        tasks and to what it expects; False unless the phase and `recorded` are still as read."""

    def enter_finalizing(self, run: Run) -> bool:
        """answering or confirming → finalizing; False unless the phase and `recorded` are still
        as read (exactly one worker wins)."""

    def complete(
        self,
        run: Run,
        outcome: Outcome,
        now_iso: str,
        routed: tuple[int, int, str | None] | None = None,
    ) -> bool:
        """A finalizing running run → completed (phase done) with its `outcome` and what it sent
        to review (`routed`: `routed_to_review`, `routed_replacing`, `routing_error`), and, at
        once, the run folded into its agent's history (`domain.history.rows_of`) and taken off the
        organization's active runs; False when it is not finalizing and running any more."""

    def end(self, run: Run, status: RunStatus, reason: str, now_iso: str) -> bool:
        """End a queued or running run as `status` (its running cases keep their slots until they
        finish), taking it off the organization's active runs; False when it had ended."""

    def abandon(self, run: Run, reason: str, now_iso: str) -> bool:
        """Fail a running run that did not move since read (status, heartbeat, `recorded`) and give
        every slot it holds back to the organization; False when it moved."""

    def fail_on_error(self, run: Run, reason: str, now_iso: str) -> bool:
        """Fail a running run its worker cannot finish (a case task dead-lettered on assay's own
        error) and give every slot it holds back to the organization; False when it is not
        running any more or its slots moved since read."""

    def fail_unstarted(self, run: Run, reason: str, now_iso: str) -> bool:
        """Fail a queued run (nothing is left to run it), giving back any slot it holds; False when
        it is not queued any more."""

    def release_stranded(self, run: Run, reason: str, completed_at: str) -> bool:
        """Give back the slots an ended run still holds (its workers stopped), keeping it ended with
        `reason` and `completed_at`; False when its heartbeat or slots moved since read."""

    def claim_advance(
        self, org_id: str, run_id: str, phase: str, until_ms: int, now_ms: int
    ) -> bool:
        """Take the claim to move the run on from `phase` until `until_ms` (one caller at a time:
        the lanes that finish together read its attempts once); False while another caller's
        claim on that phase has not lapsed at `now_ms`."""

    def claim_grading(self, org_id: str, run_id: str, until_ms: int, now_ms: int) -> bool:
        """Take the run's grading claim until `until_ms` (one grader at a time); False while
        somebody else's claim has not lapsed at `now_ms`."""

    def release_grading(self, org_id: str, run_id: str, until_ms: int) -> bool:
        """Drop the grading claim taken until `until_ms`; False when it is not that claim now."""

    def add_grading(self, org_id: str, run_id: str, entry: dict[str, Any]) -> None:
        """Append one "grade again" to the run's `gradings`."""

    def record_outcome(self, run: Run, outcome: Outcome) -> bool:
        """Replace a run's outcome, conditional on no grade having moved since read (`regrades`);
        False when one did. A completed run is folded into its agent's history again at once, with
        its new outcome (`run` as read gives the rest: arms, judge cost)."""

    def add_judge_cost(self, org_id: str, run_id: str, micros: int, calls: int) -> None:
        """Count judge requests (micro-USD, calls) whose grades were not kept."""

    def delete(self, org_id: str, run_id: str) -> None:
        """Delete the run and every attempt it kept, and take it out of its agent's history; an
        evaluation whose latest run it was falls back to its latest remaining completed run."""

    def mark_deleting(self, org_id: str, run_id: str, at: str) -> bool:
        """Mark the run as being deleted (`Run.deleting_at`, ISO `at`; kept when set already): no
        run created from now on borrows its first answers. False when the run is gone."""

    def keep_borrowed(self, run: Run, attempts: Sequence[Attempt]) -> bool:
        """Keep in `run` the first answers its baseline borrowed from a run about to be deleted
        (`attempts`, relabelled as `run`'s), replacing copies it kept already. False (and none
        kept) when `run` turns out to be deleted meanwhile."""

    def forget_history(self, org_id: str, agent_id: str, dataset_id: str | None = None) -> int:
        """Delete the agent's history rows: all of them, or with `dataset_id` those whose key
        names that dataset (the baseline arms kept on it). Returns how many."""

    # -- attempts

    def get_attempt(self, org_id: str, run_id: str, key: str) -> Attempt | None:
        """One attempt by its `attempt_key` (consistent), or None."""

    def attempt_exists(self, org_id: str, run_id: str, key: str) -> bool:
        """Whether the attempt `key` is recorded (a small consistent read)."""

    def attempts(self, org_id: str, run_id: str) -> list[Attempt]:
        """Every attempt of the run (consistent), by `attempt_key`."""

    def attempt_keys(self, org_id: str, run_id: str) -> set[str]:
        """The `attempt_key` of every attempt of the run (consistent)."""

    def attempts_after(
        self, org_id: str, run_id: str, cursor: str, limit: int, *, until: str | None = None
    ) -> list[Attempt]:
        """At most `limit` attempts with `cursor < recorded_key <= until`, in recorded order
        (`cursor` "" from the first, `until` None without an upper bound)."""

    def put_attempt_counted(self, run: Run, attempt: Attempt, now_ms: int) -> bool:
        """Write an attempt of `run` unless it exists, adding it to the run's `recorded` and its
        state's counter and marking its lease done at once; True when written."""

    def regrade(self, org_id: str, before: Attempt, after: Attempt) -> bool:
        """Replace an attempt's grade (`state`, `scores`, `reason`, judge cost and calls,
        `regraded`) by `after`'s and move the run's counters with it (its state counters, judge
        cost and calls, `regrades` + 1) at once; False when the grade is not `before`'s any more."""
