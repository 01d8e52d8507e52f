"""What a guard's result was measured on, whether it still holds, and the word a guard reads
(docs/guides/suites.md, "Results that passed through review").

A result keeps what it was measured on (`Measured`): the dataset and its version (the questions),
the hash of the run's scoring (the grading), the hash of the suite's threshold as it was (the
bar) and the version the environment served that it was compared with (the baseline). A result
is current while a run of the guard now would measure the same; it is out of date otherwise.
"""

from __future__ import annotations

from enum import StrEnum
from typing import Any, TypedDict

from chalicelib.domain.records import SuiteResultEntry
from chalicelib.domain.spec import spec_hash
from chalicelib.domain.suite_rules import SuiteResult, Threshold


class Measured(TypedDict):
    """What a result was measured on (stored as the result's `measured`)."""

    dataset_id: str
    dataset_version: int | None
    scoring_hash: str | None
    """sha256 of the canonical JSON of the run's scoring (judge pinned as the run pinned it)."""
    threshold_hash: str
    """`threshold_hash` of the suite's threshold when the result was kept."""
    baseline_version: int | None
    """The version the environment served that the run compared with (the trigger's)."""


class GuardState(StrEnum):
    """The word a guard reads on an environment."""

    PASSED = "passed"
    FAILED = "failed"
    """Its latest result is anything but a pass (the result says which)."""
    CORRECTED = "corrected"
    """People's verdicts in the review queue changed its latest result (passed or not)."""
    OUT_OF_DATE = "out_of_date"
    """A run of the guard now would measure something else than its latest result did."""
    NOT_CHECKED = "not_checked"
    """The guard has no result yet."""


def threshold_hash(threshold: dict[str, Any] | None) -> str:
    """sha256 hex of a threshold with its defaults filled in (`Threshold`), so `{}` and
    `{"max_regressions": 0}` hash alike and key order never matters."""
    return spec_hash(Threshold.model_validate(threshold or {}).model_dump(mode="json"))


def measured(
    *,
    dataset_id: str,
    dataset_version: int | None,
    scoring_hash: str | None,
    threshold: dict[str, Any] | None,
    baseline_version: int | None,
) -> Measured:
    """What a result is measured on (see `Measured`)."""
    return Measured(
        dataset_id=dataset_id,
        dataset_version=int(dataset_version) if dataset_version is not None else None,
        scoring_hash=scoring_hash,
        threshold_hash=threshold_hash(threshold),
        baseline_version=int(baseline_version) if baseline_version is not None else None,
    )


def why_out_of_date(
    kept: dict[str, Any] | None, now: Measured, *, compare_baseline: bool = True
) -> str | None:
    """Why a result measured on `kept` no longer holds for a guard that would measure `now`; None
    while it holds. `compare_baseline` False leaves the baseline out (a result of the very version
    the environment serves compared with no served version). Several differences are joined with
    "; ", in the order questions, grading, bar, baseline."""
    if not kept:
        return "it does not say what it was measured on (kept before assay recorded that)"
    why = []
    if kept.get("dataset_id") != now["dataset_id"]:
        why.append(
            f"the guard checks dataset {now['dataset_id']} now (it measured "
            f"{kept.get('dataset_id')})"
        )
    elif kept.get("dataset_version") != now["dataset_version"]:
        why.append(
            f"the questions changed: dataset version {now['dataset_version']} now (it measured "
            f"version {kept.get('dataset_version')})"
        )
    if kept.get("scoring_hash") != now["scoring_hash"]:
        why.append("the grading changed: the scoring differs from the one it was graded with")
    if kept.get("threshold_hash") != now["threshold_hash"]:
        why.append("the threshold changed since")
    if compare_baseline and kept.get("baseline_version") != now["baseline_version"]:
        served = now["baseline_version"]
        was = kept.get("baseline_version")
        why.append(
            f"the environment serves {f'v{served}' if served is not None else 'nothing'} now "
            f"(it compared with {f'v{was}' if was is not None else 'no served version'})"
        )
    return "; ".join(why) or None


def corrected(result: SuiteResultEntry) -> bool:
    """Whether people's verdicts in the review queue changed the result the scorers gave."""
    return bool(result.reviewed_by) and (
        result.result_before_review is not None and result.result_before_review != result.result
    )


def passed_through_review(result: SuiteResultEntry) -> bool:
    """A pass that people's verdicts made (the scorers alone gave something else), and that is not
    being computed again (`stale`)."""
    return (
        result.result == SuiteResult.PASSED
        and bool(result.reviewed_by)
        and result.result_before_review != SuiteResult.PASSED
        and not result.stale
    )


def guard_state(result: SuiteResultEntry | None, out_of_date: str | None) -> GuardState:
    """The word a guard reads: not checked without a result; out of date when `out_of_date` says
    why (whatever the result); corrected when people's verdicts changed it; else passed or failed
    by its result."""
    if result is None:
        return GuardState.NOT_CHECKED
    if out_of_date is not None:
        return GuardState.OUT_OF_DATE
    if corrected(result):
        return GuardState.CORRECTED
    return GuardState.PASSED if result.result == SuiteResult.PASSED else GuardState.FAILED
