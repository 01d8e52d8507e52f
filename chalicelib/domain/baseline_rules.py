"""Which earlier answers a run is compared with (docs/concepts/verdicts.md).

The baseline is chosen once, when the run starts, from plain records of earlier arms; these rules
decide, the service only gathers the records and writes the choice onto the run.
"""

from __future__ import annotations

from collections.abc import Iterable
from dataclasses import dataclass
from datetime import datetime
from typing import Any

from chalicelib.domain.enums import RunStatus
from chalicelib.domain.records import Run
from chalicelib.domain.spec import spec_hash


@dataclass(frozen=True, slots=True)
class ArmRecord:
    """One side of an earlier completed run, as far as choosing a baseline goes."""

    run_id: str
    arm_id: str
    version: int | None
    """The published version it ran; None for a draft."""
    spec_hash: str
    model: str | None
    dataset_id: str
    dataset_version: int
    scoring_hash: str
    environment_id: str | None
    completed_at_ms: int
    answered_here: bool
    """False when its own first answers were borrowed from another run."""
    every_case_answered: bool
    """Every case got a first answer that was not left incomplete."""
    judge_key: str | None = None
    """The judge that graded it (fingerprint key); None when no judge did."""
    replay: str | None = None
    """How its tool calls were answered from a recording (`domain.replay.Replay.key`); None when
    they were not."""


def model_of(spec: dict[str, Any]) -> str | None:
    """The model a spec runs on, as far as matching baselines goes."""
    return spec.get("model_profile_id") or spec.get("model")


def _epoch_ms(text: str) -> int:
    """Epoch milliseconds of an ISO-8601 time with `Z` or an offset (`clock.epoch_ms` of
    `clock.parse_iso`)."""
    return int(datetime.fromisoformat(text.replace("Z", "+00:00")).timestamp() * 1000)


def _one_judge(keys: list[str] | None) -> str | None:
    """The judge that graded an arm; "" (matches no judge) when several did."""
    if not keys:
        return None
    return keys[0] if len(keys) == 1 else ""


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
                completed_at_ms=_epoch_ms(run.completed_at),
                answered_here=arm.answers,
                every_case_answered=result is not None
                and result.quality.incomplete == 0
                and result.quality.cases == len(run.case_ids),
                judge_key=_one_judge(list(result.judges) if result is not None else None),
                replay=arm.replay.key,
            )
        )
    return out


def _same_conditions(
    a: ArmRecord,
    *,
    version: int,
    dataset_id: str,
    scoring_hash: str,
    environment_id: str | None,
    model: str | None,
    judge_key: str | None,
    replay: str | None,
) -> bool:
    # An arm graded under another judge (model, version, rubric or prompt) would make the
    # comparison invalid: it is never the baseline (docs/guides/judges.md). Nor is one whose tool
    # calls were answered another way (from another recording, or live) (docs/guides/tools.md).
    return (
        a.replay == replay
        and a.version == version
        and a.dataset_id == dataset_id
        and a.scoring_hash == scoring_hash
        and a.environment_id == environment_id
        and a.model == model
        and a.answered_here
        and a.every_case_answered
        and (a.judge_key is None or a.judge_key == judge_key)
    )


def reusable_baseline(
    records: Iterable[ArmRecord],
    *,
    version: int,
    dataset_id: str,
    dataset_version: int,
    scoring_hash: str,
    environment_id: str | None,
    model: str | None,
    now_ms: int,
    cache_hours: float,
    judge_key: str | None = None,
    replay: str | None = None,
) -> ArmRecord | None:
    """A completed arm that may stand in for running the baseline in this run ("A baseline in the
    same run"): same version, dataset version, model, scoring, judge, environment and replay
    (`replay`: `Replay.key` of the run's options, None without a recording), finished within
    `cache_hours`. The newest such arm, or None."""
    horizon = now_ms - int(cache_hours * 3_600_000)
    fits = [
        a
        for a in records
        if a.dataset_version == dataset_version
        and a.completed_at_ms >= horizon
        and _same_conditions(
            a,
            version=version,
            dataset_id=dataset_id,
            scoring_hash=scoring_hash,
            environment_id=environment_id,
            model=model,
            judge_key=judge_key,
            replay=replay,
        )
    ]
    return max(fits, key=lambda a: a.completed_at_ms, default=None)


def default_baseline(
    records: Iterable[ArmRecord],
    *,
    version: int,
    dataset_id: str,
    scoring_hash: str,
    environment_id: str | None,
    model: str | None,
    judge_key: str | None = None,
    replay: str | None = None,
) -> ArmRecord | None:
    """The default, cheap baseline ("The default baseline is cheap"): the last completed run of the
    same dataset (any version of it) on `version` as published, on its own model, every case
    answered, graded with the same scoring and judge, in the same environment, its tool calls
    answered the same way (`replay`: `Replay.key`, None without a recording). None when there is
    none."""
    fits = [
        a
        for a in records
        if _same_conditions(
            a,
            version=version,
            dataset_id=dataset_id,
            scoring_hash=scoring_hash,
            environment_id=environment_id,
            model=model,
            judge_key=judge_key,
            replay=replay,
        )
    ]
    return max(fits, key=lambda a: a.completed_at_ms, default=None)


def is_candidate_itself(
    candidate_spec_hash: str, candidate_model: str | None, baseline: ArmRecord
) -> bool:
    """A baseline that is the candidate at an earlier time (same spec on the same model) is not
    rerun: its reruns would only be the candidate's again (docs/concepts/verdicts.md)."""
    return baseline.spec_hash == candidate_spec_hash and baseline.model == candidate_model
