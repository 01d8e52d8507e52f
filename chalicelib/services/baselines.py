"""Choosing a run's baseline once, at start (seed 004 "Comparing with a baseline").

Three ways, in this order: an earlier run named by `baseline_run_id`; `paired_baseline` (the version
before runs in the same run, unless a recent matching arm can stand in for it); otherwise the cheap
default, the last completed run of the same dataset on the version before. A baseline whose first
answers come from another run is an arm that does not answer here (`answers: false`) and names
where its answers come from (`source_run_id`, `source_arm_id`); it is still rerun beside the
candidate unless it is the candidate itself at an earlier time.
"""

from __future__ import annotations

from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, parse_iso
from chalicelib.domain.baseline_rules import (
    ArmRecord,
    default_baseline,
    is_candidate_itself,
    reusable_baseline,
)
from chalicelib.domain.enums import ArmRole, RunStatus
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Arm, Run
from chalicelib.domain.spec import spec_hash
from chalicelib.errors import InvalidInputError, NotFoundError

RECENT_RUNS = 200
"""How many of the agent's newest runs are searched for a baseline."""


def model_of(spec: dict[str, Any]) -> str | None:
    """The model a spec runs on, as far as matching baselines goes."""
    return spec.get("model_profile_id") or spec.get("model")


def arm_records(run: Run) -> list[ArmRecord]:
    """The arms of a completed run as baseline candidates (none for a run that did not complete)."""
    if run.status != RunStatus.COMPLETED or not run.completed_at:
        return []
    results = run.outcome.arms if run.outcome is not None else {}
    out = []
    for arm in run.arms:
        result = results.get(arm.arm_id)
        out.append(
            ArmRecord(
                run_id=run.run_id,
                arm_id=arm.arm_id,
                version=None if arm.draft else arm.version,
                spec_hash=arm.spec_hash,
                model=model_of(arm.spec),
                dataset_id=run.dataset_id,
                dataset_version=int(run.dataset_version),
                scoring_hash=spec_hash(run.scoring),
                environment_id=run.environment_id,
                completed_at_ms=epoch_ms(parse_iso(run.completed_at)),
                answered_here=arm.answers,
                every_case_answered=result is not None
                and result.quality.incomplete == 0
                and result.quality.cases == len(run.case_ids),
                judge_key=_one_judge(list(result.judges) if result is not None else None),
            )
        )
    return out


def _one_judge(keys: list[str] | None) -> str | None:
    """The judge that graded an arm; "" (matches no judge) when several did."""
    if not keys:
        return None
    return keys[0] if len(keys) == 1 else ""


def recent_runs(c: Container, org_id: str, agent_id: str) -> list[Run]:
    """The organization's agent's newest `RECENT_RUNS` runs (read once per start: the baseline and
    the estimate both search them)."""
    return list(c.runs.list_by_agent(org_id, agent_id, limit=RECENT_RUNS))


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
    recent: list[Run] | None = None,
) -> tuple[Arm | None, dict[str, Any]]:
    """The baseline arm for a new run, or None, and what to tell the caller.

    Args:
        version_before: the version before the candidate (None when there is none), and
        before_spec: its published spec; it runs on its own model.
        paired: `paired_baseline` was asked (it then runs here unless a recent arm stands in).
        judge_key: the judge grading now; an arm graded by another judge is not reused.
        recent: the agent's newest runs, when the caller read them already.
    Returns:
        (arm or None, `{"reused_baseline_run_id"?, "missing_baseline_version"?}`).
    Raises:
        NotFoundError: an unknown `baseline_run_id`. InvalidInputError: one of another agent or
            dataset, or not completed.
    """
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
        return borrowed_arm(
            chosen, source, rerun=not is_candidate_itself(cand_hash, cand_model, chosen)
        ), {"reused_baseline_run_id": chosen.run_id}
    if version_before is None or before_spec is None:
        return None, {}
    model = model_of(before_spec)
    records = [
        record
        for run in (recent if recent is not None else recent_runs(c, who.org_id, agent_id))
        if run.org_id == who.org_id
        for record in arm_records(run)
    ]
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
        )
        if rec is None:
            return None, {"missing_baseline_version": version_before}
    source = c.runs.get(who.org_id, rec.run_id)
    if source is None:
        return None, {"missing_baseline_version": version_before}
    return borrowed_arm(rec, source, rerun=not is_candidate_itself(cand_hash, cand_model, rec)), {
        "reused_baseline_run_id": rec.run_id
    }
