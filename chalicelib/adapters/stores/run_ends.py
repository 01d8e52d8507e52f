"""Ending an eval run other than by completing it (docs/architecture/run-lifecycle.md, slots.md):
an end as cancelled, budget exceeded or failed (its running cases keep their slots), the failing
of a run that stopped beating, never started or whose worker cannot finish it, and the slots an
ended run still held given back to its organization. Each takes the run off the organization's
active runs in the same transaction. A base of `stores.ledger.RunStore`."""

from __future__ import annotations

from typing import Any

from pynamodb.expressions.condition import Condition

from chalicelib.adapters.stores.base import conditional_update
from chalicelib.adapters.tables import (
    OrganizationRow,
    RunRow,
    org_key,
)
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.records import Run

__all__ = ["RunEnds"]

from chalicelib.adapters.stores.run_commit import RunCommit
from chalicelib.adapters.stores.run_rows import (
    _RUNNING,
    _key,
    _nothing,
)


class RunEnds(RunCommit):
    """The writes that end a run before it completes (a base of `RunStore`)."""

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

    def claim_advance(
        self, org_id: str, run_id: str, phase: str, until_ms: int, now_ms: int
    ) -> bool:
        """Take the claim to move a run on from `phase` until `until_ms` (epoch ms) unless another
        caller's claim on the same phase holds past `now_ms`: the lanes that finish together read
        the run's attempts once. A claim on an earlier phase never stands in the way."""
        return conditional_update(
            RunRow(org_key(org_id, run_id)),
            [RunRow.advancing_phase.set(phase), RunRow.advancing_until_ms.set(until_ms)],
            RunRow.advancing_until_ms.does_not_exist()
            | (RunRow.advancing_phase != phase)
            | (RunRow.advancing_until_ms < now_ms),
        )

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

    def fail_on_error(self, run: Run, reason: str, now_iso: str) -> bool:
        """Fail a running run its worker cannot finish (a case task dead-lettered on assay's own
        error); slots back. False when it is not running any more or its slots moved since read."""
        return self._end_and_release(
            run,
            status=RunStatus.FAILED.value,
            reason=reason,
            completed_at=now_iso,
            condition=RunRow.status == RunStatus.RUNNING.value,
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
