"""How the ledger keeps a run (docs/architecture/tables.md): an arm, an outcome, a chart row, a
lease and a page of runs as rows and back, and the history rows a run's write folds. Used by
`stores.ledger`, `stores.run_ends`, `stores.run_grading` and `stores.run_removal` (the writes) and
`stores.run_reads` (the reads); rows never leave the stores."""

from __future__ import annotations

from dataclasses import fields
from typing import Any, TypeVar

from pynamodb.expressions.update import Action

import chalicelib.adapters.stores.history as history
from chalicelib.adapters.stores.base import (
    record_of,
)
from chalicelib.adapters.tables import (
    LeaseRow,
    RunRow,
    TrendRow,
    org_key,
)
from chalicelib.domain import history as rules
from chalicelib.domain.chart import TrendRun
from chalicelib.domain.enums import ArmRole, RunStatus
from chalicelib.domain.evaluations import is_implied
from chalicelib.domain.leases import Lease
from chalicelib.domain.outcome import Outcome
from chalicelib.domain.records import ActiveRun, Arm, Run
from chalicelib.domain.replay import Replay
from chalicelib.services.ports.ledger import RunPage

__all__ = ["arm_of", "outcome_values", "run_of", "stored_arm", "trend_row"]


R = TypeVar("R")

_ACTIVE = [*(f.name for f in fields(ActiveRun)), "run_key"]
"""What `active` reads of a run (its key with it)."""

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
        source_scoring_hash=stored.get("source_scoring_hash"),
        replay=Replay.of_settings(stored.get("replay")),
    )


def stored_arm(arm: Arm) -> dict[str, Any]:
    """The JSON map a run row keeps of an arm, as runs have always been written: `{arm_id, role,
    version, draft, spec, spec_hash, model_profile_id}`, then `answers` and `rerun` for a
    baseline, then `source_run_id`, `source_arm_id`, `source_dataset_version` and
    `source_completed_at` for one whose answers are borrowed (and `source_scoring_hash` once kept),
    then `replay` for one whose tool calls were answered from a recording (`Replay.settings`).
    The role is a plain `str`."""
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
        if arm.source_scoring_hash is not None:
            out["source_scoring_hash"] = arm.source_scoring_hash
    if arm.replay.from_recordings:
        out["replay"] = arm.replay.settings()
    return out


def _arms_of(stored: list[dict[str, Any]] | None) -> tuple[Arm, ...]:
    return tuple(arm_of(a) for a in stored or [])


def _outcome_of(stored: dict[str, Any] | None) -> Outcome | None:
    """A run's kept outcome (an empty map, as no outcome, is None)."""
    return Outcome.model_validate(stored) if stored else None


_STORED: dict[str, Any] = {"arms": _arms_of, "outcome": _outcome_of}
"""How a run row's JSON fields become the record's (`record_of`'s `convert`)."""


def outcome_values(outcome: Outcome | None) -> dict[str, Any]:
    """The run row's attributes that keep `outcome`, by name: `outcome` (its `as_json()`, None
    without one)."""
    return {"outcome": outcome.as_json() if outcome is not None else None}


def _outcome_actions(outcome: Outcome) -> list[Action]:
    return [getattr(RunRow, name).set(value) for name, value in outcome_values(outcome).items()]


def _trend_at(org_id: str, agent_id: str, started_at: str, run_id: str) -> TrendRow:
    return TrendRow(org_key(org_id, agent_id), f"{started_at}#{run_id}")


def trend_row(run: Run) -> TrendRow | None:
    """The chart's row of `run` (`TrendRow`, `domain.chart.TrendRun`), None unless it completed
    with an outcome."""
    trend = TrendRun.of(run)
    if trend is None:
        return None
    row = _trend_at(trend.org_id, trend.agent_id, trend.started_at, trend.run_id)
    row.dataset_key = org_key(trend.org_id, trend.dataset_id)
    row.point = trend.as_json()
    return row


def _trend_key(run: Run) -> TrendRow:
    """The key of `run`'s chart row (whether it has one or not)."""
    return _trend_at(run.org_id, run.agent_id, run.started_at or run.created_at, run.run_id)


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


def _lease_row(run: Run, lease: Lease) -> LeaseRow:
    """The row of a live claim on one attempt of `run` (kept `LEASE_KEPT_SECONDS` past its
    lapse)."""
    return LeaseRow(
        _key(run),
        lease.attempt_key,
        holder=lease.holder,
        until_ms=lease.until_ms,
        expires_at=lease.until_ms // 1000 + LEASE_KEPT_SECONDS,
    )


def _page(rows: Any) -> RunPage:
    """A listing's page: its runs, then where the next page starts (known once they are read)."""
    runs = [run_of(r) for r in rows]
    return RunPage(runs, rows.last_evaluated_key)


def _evaluation_key(run: Run) -> str | None:
    """The hash key of `RunRow.evaluation_index` for a completed run (None for a run that did not
    complete, or of neither a version nor the draft)."""
    subject = rules.subject_of(run.resolved_version, run.draft)
    if subject is None or not rules.counts(run):
        return None
    explicit = () if is_implied(run.evaluation_id) else (str(run.evaluation_id),)
    return org_key(run.org_id, run.agent_id, subject, run.dataset_id, *explicit)


def _evaluation_run_key(org_id: str, evaluation_id: str) -> str:
    """The hash key of `RunRow.evaluation_runs_index`: `<org_id>#<evaluation_id>`."""
    return org_key(org_id, evaluation_id)


def _listing_hash(
    org_id: str, agent_id: str | None, dataset_id: str | None, evaluation_id: str | None
) -> tuple[str, str]:
    """The name and value of the hash key of the index a listing of runs queries."""
    if evaluation_id is not None:
        return "evaluation_run_key", _evaluation_run_key(org_id, evaluation_id)
    if agent_id is not None:
        return "agent_key", org_key(org_id, agent_id)
    if dataset_id is not None:
        return "dataset_key", org_key(org_id, dataset_id)
    return "org_id", org_id


def _rows_touched(*runs: Run) -> list[rules.HistoryRow]:
    """The history rows any of `runs` has something in (each empty, once, in key order)."""
    rows = {r.key: r for run in runs for r in rules.rows_of(run)}
    return [rows[k] for k in sorted(rows)]


def _nothing(held: dict[str, history.Held]) -> list[rules.HistoryRow]:
    """No history row changes (a write of the run alone)."""
    return []


def _folded(held: dict[str, history.Held], run: Run) -> list[rules.HistoryRow]:
    """Every held row with `run` folded in (`HistoryRow.with_run`)."""
    return [h.row.with_run(run) for h in held.values()]
