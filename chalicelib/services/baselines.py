"""Choosing a run's baseline once, at start (docs/concepts/verdicts.md).

Three ways, in this order: an earlier run named by `baseline_run_id`; `paired_baseline` (the version
before runs in the same run, unless a recent matching arm can stand in for it); otherwise the cheap
default, the last completed run of the same dataset on the version before. A cached or default
baseline is only an arm whose tool calls were answered as the new run's are (the same recording
and `live_reads`, or no recording: `domain.replay`). A baseline whose first
answers come from another run is an arm that does not answer here (`answers: false`) and names
where its answers come from (`source_run_id`, `source_arm_id`); it is still rerun beside the
candidate unless it is the candidate itself at an earlier time.

The arms searched are the ones the agent's history keeps for the version before on the dataset
(`domain.history.ArmsRow`, read by `Runs.history`): one read, however many runs the agent has.
"""

from __future__ import annotations

from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import access
from chalicelib.domain.baseline_rules import (
    ArmRecord,
    arm_records,
    default_baseline,
    is_candidate_itself,
    model_of,
    reusable_baseline,
)
from chalicelib.domain.enums import ArmRole
from chalicelib.domain.history import ArmsRow, arms_key
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Arm, Run
from chalicelib.domain.replay import Replay
from chalicelib.domain.spec import spec_hash
from chalicelib.errors import InvalidInputError, NotFoundError

__all__ = ["arm_records", "borrowed_arm", "choose", "model_of"]
"""`arm_records` and `model_of` are the domain's rules, named here where the services look."""


def borrowed_arm(record: ArmRecord, source: Run, *, rerun: bool) -> Arm:
    """A baseline arm whose first answers are `record`'s in run `source`."""
    arm = next(a for a in source.arms if a.arm_id == record.arm_id)
    return Arm(
        arm_id="baseline",
        role=ArmRole.BASELINE,
        version=record.version,
        draft=False,
        spec=arm.spec,
        spec_hash=arm.spec_hash,
        model_profile_id=arm.model_profile_id,
        answers=False,
        rerun=rerun,
        source_run_id=record.run_id,
        source_arm_id=record.arm_id,
        source_dataset_version=record.dataset_version,
        source_completed_at=source.completed_at,
        source_scoring_hash=spec_hash(source.scoring),
        replay=arm.replay,
    )


def choose(
    c: Container,
    who: Identity,
    agent_id: str,
    *,
    candidate_spec: dict[str, Any],
    version_before: int | None,
    dataset_id: str,
    dataset_version: int,
    scoring: dict[str, Any],
    environment_id: str | None,
    body: dict[str, Any],
    before_spec: dict[str, Any] | None,
    paired: bool,
    now_ms: int,
    judge_key: str | None = None,
    replay: Replay | None = None,
) -> tuple[Arm | None, dict[str, Any]]:
    """The baseline arm for a new run, or None, and what to tell the caller.

    Args:
        version_before: the version before the candidate (None when there is none), and
        before_spec: its published spec; it runs on its own model.
        paired: `paired_baseline` was asked (it then runs here unless a recent arm stands in).
        judge_key: the judge grading now; an arm graded by another judge is not reused.
        replay: how the new run answers tool calls from a recording; an arm whose tool calls were
            answered another way is not reused (a paired baseline that runs here answers them so).
    Returns:
        (arm or None, `{"reused_baseline_run_id"?, "missing_baseline_version"?}`).
    Raises:
        NotFoundError: an unknown `baseline_run_id`.
        ForbiddenError: a run of the draft without agents:edit (its reruns would run the draft).
        InvalidInputError: one of another agent or dataset, or not completed.
    """
    replay = replay or Replay()
    cand_hash, cand_model = spec_hash(candidate_spec), model_of(candidate_spec)
    scoring_hash = spec_hash(scoring)
    if body.get("baseline_run_id"):
        source = c.runs.get(who.org_id, body["baseline_run_id"])
        if source is None:
            raise NotFoundError(
                f"eval run {body['baseline_run_id']} not found", field="baseline_run_id"
            )
        if source.agent_id != agent_id or source.dataset_id != dataset_id:
            raise InvalidInputError(
                "baseline_run_id must be a run of the same agent and dataset",
                field="baseline_run_id",
            )
        first_candidate = next(a.arm_id for a in source.arms if a.role is ArmRole.CANDIDATE)
        records = [
            r for r in arm_records(source) if r.arm_id == first_candidate and r.answered_here
        ]
        if not records:
            raise InvalidInputError(
                "baseline_run_id must name a completed run", field="baseline_run_id"
            )
        chosen = records[0]
        if next(a for a in source.arms if a.arm_id == first_candidate).draft:
            # its reruns run the draft copied onto that run: the editors' work in progress
            who.require(
                access.AGENTS_EDIT, "comparing with a run of the draft", access.agent(agent_id)
            )
        return borrowed_arm(
            chosen, source, rerun=not is_candidate_itself(cand_hash, cand_model, chosen)
        ), {"reused_baseline_run_id": chosen.run_id}
    if version_before is None or before_spec is None:
        return None, {}
    model = model_of(before_spec)
    key = arms_key(version_before, dataset_id)
    kept = c.runs.history(who.org_id, [(agent_id, key)]).get((agent_id, key))
    records = list(kept.arms) if isinstance(kept, ArmsRow) else []
    if paired:
        rec = reusable_baseline(
            records,
            version=version_before,
            dataset_id=dataset_id,
            dataset_version=dataset_version,
            scoring_hash=scoring_hash,
            environment_id=environment_id,
            model=model,
            now_ms=now_ms,
            cache_hours=c.settings.eval_baseline_cache_hours,
            judge_key=judge_key,
            replay=replay.key,
        )
        if rec is None:
            return (
                Arm(
                    arm_id="baseline",
                    role=ArmRole.BASELINE,
                    version=version_before,
                    draft=False,
                    spec=before_spec,
                    spec_hash=spec_hash(before_spec),
                    model_profile_id=before_spec.get("model_profile_id"),
                    answers=True,
                    rerun=not (spec_hash(before_spec) == cand_hash and model == cand_model),
                    replay=replay,
                ),
                {},
            )
    else:
        rec = default_baseline(
            records,
            version=version_before,
            dataset_id=dataset_id,
            scoring_hash=scoring_hash,
            environment_id=environment_id,
            model=model,
            judge_key=judge_key,
            replay=replay.key,
        )
        if rec is None:
            return None, {"missing_baseline_version": version_before}
    source = c.runs.get(who.org_id, rec.run_id)
    if source is None:
        return None, {"missing_baseline_version": version_before}
    return borrowed_arm(rec, source, rerun=not is_candidate_itself(cand_hash, cand_model, rec)), {
        "reused_baseline_run_id": rec.run_id
    }
