"""A run's outcome as a domain value (issue 10 scope 3): built from summaries, kept as the same JSON
runs always kept, read back equal."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.domain import outcome as outcomes
from chalicelib.domain.compare import wilson_interval
from chalicelib.domain.enums import CaseOutcome, ComparisonVerdict, Verdict
from chalicelib.domain.outcome import ArmResult, Comparison, Outcome, Stability
from chalicelib.domain.run_rules import ArmSummary


def _summary(**overrides: Any) -> ArmSummary:
    values: dict[str, Any] = {
        "cases": 4,
        "passed": 2,
        "failed": 1,
        "incomplete": 1,
        "ungraded": 0,
        "crashed": 0,
        "first_passed": 1,
        "pass_rate": 2 / 3,
        "first_pass_rate": 1 / 3,
        "average_score": 0.5,
        "cost_micros": 1_500,
        "input_tokens": 40,
        "output_tokens": 20,
        "latency_p50_ms": 12.5,
        "latency_p95_ms": 30.0,
        "undecided_reasons": {"provider error": 1},
    }
    return ArmSummary(**{**values, **overrides})


QUALITY = {
    "cases": 4,
    "passed": 2,
    "failed": 1,
    "incomplete": 1,
    "ungraded": 0,
    "crashed": 0,
    "pass_rate": 2 / 3,
    "pass_rate_interval_95": list(wilson_interval(2, 3) or ()),
    "first_pass_rate": 1 / 3,
    "average_score": 0.5,
    "undecided": 1,
    "undecided_reasons": {"provider error": 1},
}
EFFICIENCY = {
    "cost_usd": 0.0015,
    "cost_per_passed_case_usd": 0.00075,
    "tokens_per_case": 15.0,
    "input_tokens": 40,
    "output_tokens": 20,
    "latency_p50_ms": 12.5,
    "latency_p95_ms": 30.0,
}
COMPARISON = {
    "candidate_arm_id": "candidate",
    "baseline_arm_id": "baseline",
    "baseline": {
        "version": 2,
        "source_run_id": None,
        "source_completed_at": None,
        "source_dataset_version": None,
        "rerun": True,
    },
    "verdict": "worse",
    "overall": None,
    "p_value": 0.5,
    "invalid_reason": None,
    "counts": {
        "regression": 1,
        "fixed": 0,
        "unchanged": 3,
        "incomplete": 0,
        "not_compared": 0,
        "changed": 0,
    },
    "confirmed_regressions": 1,
    "confirmed_fixes": 0,
    "flips": [
        {
            "case_id": "c2",
            "outcome": "regression",
            "confirmed": True,
            "question": "2+2?",
            "candidate_tries": ["failed", "failed"],
            "baseline_tries": ["passed", "passed"],
        }
    ],
    "pass_rate_before": 1.0,
    "pass_rate_after": 0.75,
    "first_pass_rate_before": 1.0,
    "first_pass_rate_after": 0.75,
    "interval_before": [0.5, 1.0],
    "interval_after": [0.3, 0.95],
    "notes": [],
    "efficiency": {
        "cost_per_passed_case_micros": "worse",
        "tokens_per_case": "unchanged",
        "latency_p50_ms": None,
        "latency_p95_ms": "better",
    },
    "cases": [
        {"case_id": "c1", "outcome": "unchanged"},
        {"case_id": "c2", "outcome": "regression"},
    ],
}
KEPT = {
    "arm_id": "candidate",
    "total": 4,
    "passed": 2,
    "failed": 1,
    "incomplete": 1,
    "ungraded": 0,
    "crashed": 0,
    "pass_rate": 2 / 3,
    "first_pass_rate": 1 / 3,
    "average_score": 0.5,
    "verdict": "partial",
    "undecided": 1,
    "arms": {
        "candidate": {
            "quality": QUALITY,
            "efficiency": {**EFFICIENCY, "cost_micros": 1500, "attempts": 5},
            "tags": {"math": {"quality": QUALITY, "efficiency": EFFICIENCY}},
            "could_not_run": None,
            "judges": ["judge-A"],
        }
    },
    "comparison": COMPARISON,
    "comparison_verdict": "worse",
}
"""An outcome as finalizing has always kept it (keys in the order they were written)."""


def test_a_kept_outcome_reads_as_typed_fields_and_is_kept_again_byte_for_byte() -> None:
    read = Outcome.model_validate(KEPT)
    assert read.verdict is Verdict.PARTIAL and read.comparison is not None
    assert read.comparison.verdict is ComparisonVerdict.WORSE
    assert (
        read.comparison.flips[0].outcome is CaseOutcome.REGRESSION
        and read.comparison.flips[0].confirmed
    )
    assert read.arms["candidate"].efficiency.attempts == 5 and read.arms["candidate"].judges == (
        "judge-A",
    )
    assert read.arms["candidate"].tags["math"].efficiency.cost_micros is None
    assert json.dumps(read.as_json()) == json.dumps(KEPT)


def test_an_outcome_built_from_summaries_round_trips_through_its_json() -> None:
    s = _summary()
    arm = outcomes.arm_result(
        s, tags={"math": s}, could_not_run=None, judges={"judge-A"}, own=(1500, 5)
    )
    built = outcomes.outcome_of(
        "candidate", s, {"candidate": arm}, comparison=Comparison.model_validate(COMPARISON)
    )
    kept = built.as_json()
    assert Outcome.model_validate(kept) == built
    assert json.dumps(kept) == json.dumps(KEPT)


def test_what_a_run_never_kept_stays_left_out() -> None:
    s = _summary(passed=0, failed=2, pass_rate=0.0, cost_micros=0)
    stable = outcomes.outcome_of(
        "candidate", s, {}, stability=Stability(asked=3, unstable=1, noisy=False)
    )
    kept = stable.as_json()
    assert "comparison" not in kept and "comparison_verdict" not in kept
    assert (
        kept["stability"] == {"asked": 3, "unstable": 1, "noisy": False}
        and kept["verdict"] == "fail"
    )
    assert Outcome.model_validate(kept) == stable
    older = {k: v for k, v in KEPT.items() if k not in ("arms", "comparison", "comparison_verdict")}
    assert (
        Outcome.model_validate(older).as_json() == older
    )  # a run kept before arms were: as it was
    assert outcomes.efficiency_of(s).as_json()["cost_per_passed_case_usd"] is None


def test_a_side_that_could_not_run_keeps_no_verdict_and_says_why() -> None:
    broken = Comparison.model_validate(
        {
            **COMPARISON,
            "verdict": None,
            "overall": None,
            "could_not_run": {"baseline": "no such model"},
        }
    )
    kept = broken.as_json()
    assert list(kept)[-1] == "could_not_run" and kept["verdict"] is None
    assert Comparison.model_validate(kept) == broken


def test_an_arm_keeps_the_model_most_of_its_answers_reported() -> None:
    assert outcomes.reported_model(["lookup-1", None, "lookup-1", "lookup-2"]) == "lookup-1"
    assert outcomes.reported_model(["b", "a"]) == "a"  # a tie: the alphabetically first
    assert outcomes.reported_model([None, ""]) is None
    s = _summary()
    arm = outcomes.arm_result(
        s, tags={}, could_not_run=None, judges=set(), own=(0, 0), model="lookup-1"
    )
    assert arm.as_json()["model"] == "lookup-1"
    assert ArmResult.model_validate(arm.as_json()) == arm
    # an arm whose answers reported no model keeps none, as runs kept before the model was
    quiet = outcomes.arm_result(s, tags={}, could_not_run=None, judges=set(), own=(0, 0))
    assert "model" not in quiet.as_json() and quiet.model is None
