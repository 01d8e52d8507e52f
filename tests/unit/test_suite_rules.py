"""A suite's pure rules (docs/guides/suites.md):
`judge` for every result word, `rise_pct`, `SuiteResult.bad`, `absorb`, and the validation of
`Threshold`, `Schedule` and `Triggers`.

Every `RunFacts` is hand-built; expected values are hand-computed literals.
"""

from __future__ import annotations

import copy
import math
from typing import Any

import pytest
from pydantic import ValidationError

from chalicelib.domain.suite_rules import (
    RunFacts,
    Schedule,
    SuiteDecision,
    SuiteResult,
    Threshold,
    Triggers,
    absorb,
    decide_result,
    rise_pct,
)

NO_MIN = Threshold()
MIN_HALF = Threshold(min_pass_rate=0.5)


def facts(**kw: Any) -> RunFacts:
    """A complete, compared run of ten cases that all passed, with nothing else said."""
    base: dict[str, Any] = {"status": "completed", "total": 10, "passed": 10, "compared": True}
    return RunFacts(**{**base, **kw})


def ten(prefix: str = "c", n: int = 10) -> list[str]:
    return [f"{prefix}{i}" for i in range(1, n + 1)]


# --- the baseline for every other test: a clean compared run passes ------------------------------


def test_a_clean_compared_run_passes_with_no_reasons() -> None:
    j = decide_result(NO_MIN, facts())
    assert j == SuiteDecision(SuiteResult.PASSED, [], [], [], None)


# --- error ---------------------------------------------------------------------------------------


def test_a_failed_run_is_an_error_naming_its_reason() -> None:
    j = decide_result(NO_MIN, facts(status="failed", reason="worker lost"))
    assert j.result is SuiteResult.ERROR
    assert j.reasons == ["the eval run failed: worker lost"]


def test_a_failed_run_without_a_reason_says_none_was_given() -> None:
    j = decide_result(NO_MIN, facts(status="failed"))
    assert j.result is SuiteResult.ERROR
    assert j.reasons == ["the eval run failed: no reason given"]


def test_an_error_wins_over_everything_that_would_fail_or_doubt() -> None:
    j = decide_result(
        Threshold(min_pass_rate=0.9),
        facts(
            status="failed",
            reason="boom",
            passed=0,
            confirmed_regressions=["c1"],
            first_crashes=["c2"],
            undecided=["c3"],
            invalid_reason="judge changed",
            overall="worse",
        ),
    )
    assert j.result is SuiteResult.ERROR
    assert j.reasons == ["the eval run failed: boom"]
    assert j.broken == ["c1"]  # the regressions it had, carried; crashes are not judged
    assert j.undecided == ["c3"]
    assert j.overall == "worse"


# --- failed: confirmed regressions --------------------------------------------------------------


def test_one_confirmed_regression_fails_by_default() -> None:
    j = decide_result(NO_MIN, facts(passed=9, confirmed_regressions=["c4"]))
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["1 confirmed regression, 0 allowed"]
    assert j.broken == ["c4"]


def test_max_regressions_two_allows_two() -> None:
    j = decide_result(
        Threshold(max_regressions=2), facts(passed=8, confirmed_regressions=["c1", "c2"])
    )
    assert j.result is SuiteResult.PASSED
    assert j.broken == ["c1", "c2"]  # still named, though allowed


def test_max_regressions_two_fails_at_three() -> None:
    j = decide_result(
        Threshold(max_regressions=2), facts(passed=7, confirmed_regressions=["c1", "c2", "c3"])
    )
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["3 confirmed regressions, 2 allowed"]
    assert j.broken == ["c1", "c2", "c3"]


# --- the noise sentence ends the reasons of a result resting on confirmed regressions ------------

LUCK = "1 confirmed regression. With this dataset's measured noise, a candidate ..."


def test_a_failing_result_ends_its_reasons_with_the_noise_sentence() -> None:
    j = decide_result(
        NO_MIN, facts(passed=9, confirmed_regressions=["c4"], noise=LUCK, note="a note")
    )
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["1 confirmed regression, 0 allowed", "a note", LUCK]


def test_allowed_regressions_still_carry_the_noise_sentence() -> None:
    j = decide_result(
        Threshold(max_regressions=2), facts(passed=9, confirmed_regressions=["c1"], noise=LUCK)
    )
    assert (j.result, j.reasons) == (SuiteResult.PASSED, [LUCK])


def test_without_a_confirmed_regression_the_noise_sentence_is_not_said() -> None:
    j = decide_result(NO_MIN, facts(noise="No confirmed regression. ..."))
    assert j == SuiteDecision(SuiteResult.PASSED, [], [], [], None)


# --- failed: first-answer crashes ---------------------------------------------------------------


def test_a_first_answer_crash_fails_even_when_everything_else_passes() -> None:
    j = decide_result(NO_MIN, facts(first_crashes=["c7"]))
    assert j.result is SuiteResult.FAILED
    assert len(j.reasons) == 1
    assert j.reasons[0].startswith("the agent crashed on 1 case")
    assert j.reasons[0] == "the agent crashed on 1 case's first answer"
    assert j.broken == ["c7"]


def test_crashes_are_counted_and_join_the_broken_cases_once() -> None:
    j = decide_result(
        Threshold(max_regressions=5),
        facts(passed=8, confirmed_regressions=["c1", "c2"], first_crashes=["c2", "c3"]),
    )
    assert j.result is SuiteResult.FAILED  # regressions allowed, crashes are not
    assert j.reasons == ["the agent crashed on 2 cases' first answers"]
    assert j.broken == ["c1", "c2", "c3"]


def test_a_crash_fails_a_first_measurement_that_would_set_the_baseline() -> None:
    j = decide_result(NO_MIN, facts(compared=False, first_crashes=["c1"]))
    assert j.result is SuiteResult.FAILED


# --- failed: the minimum pass rate --------------------------------------------------------------


def test_a_pass_rate_under_the_minimum_fails() -> None:
    j = decide_result(MIN_HALF, facts(passed=4))
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["pass rate 40.0% is below the minimum 50.0%"]


def test_a_pass_rate_at_the_minimum_passes() -> None:
    assert decide_result(MIN_HALF, facts(passed=5)).result is SuiteResult.PASSED
    assert decide_result(Threshold(min_pass_rate=0.7), facts(passed=7)).result is SuiteResult.PASSED
    assert decide_result(Threshold(min_pass_rate=1), facts(passed=10)).result is SuiteResult.PASSED


def test_a_minimum_of_one_fails_on_a_single_miss() -> None:
    j = decide_result(Threshold(min_pass_rate=1), facts(passed=9))
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["pass rate 90.0% is below the minimum 100.0%"]


def test_a_minimum_missed_even_were_every_undecided_case_to_pass_fails() -> None:
    j = decide_result(MIN_HALF, facts(passed=3, undecided=["c9"]))
    assert j.result is SuiteResult.FAILED
    assert j.reasons == [
        (
            "pass rate 30.0% is below the minimum 50.0% "
            "even were every undecided case to pass (40.0%)"
        )
    ]
    assert j.undecided == ["c9"]


def test_a_minimum_the_undecided_cases_could_still_reach_is_inconclusive() -> None:
    j = decide_result(MIN_HALF, facts(passed=4, undecided=["c9", "c10"]))
    assert j.result is SuiteResult.INCONCLUSIVE  # best case 6/10 = 0.6 >= 0.5
    assert j.reasons == ["2 cases left undecided: c9, c10"]


def test_the_minimum_needs_no_baseline() -> None:
    j = decide_result(MIN_HALF, facts(compared=False, passed=2))
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["pass rate 20.0% is below the minimum 50.0%"]


def test_the_minimum_fails_whatever_the_comparison() -> None:
    j = decide_result(MIN_HALF, facts(passed=2, invalid_reason="the judge changed"))
    assert j.result is SuiteResult.FAILED


def test_a_zero_minimum_never_fails() -> None:
    assert decide_result(Threshold(min_pass_rate=0), facts(passed=0)).result is SuiteResult.PASSED


# --- failed: several reasons, and failure over doubt --------------------------------------------


def test_every_reason_a_result_fails_is_listed() -> None:
    j = decide_result(
        Threshold(min_pass_rate=0.9, max_cost_per_pass_rise_pct=10),
        facts(
            passed=5,
            confirmed_regressions=["c1"],
            first_crashes=["c2"],
            cost_per_pass_micros=(200, 100),
        ),
    )
    assert j.result is SuiteResult.FAILED
    assert j.reasons == [
        "1 confirmed regression, 0 allowed",
        "the agent crashed on 1 case's first answer",
        "pass rate 50.0% is below the minimum 90.0%",
        "cost per passed case rose 100.0%, more than the 10% allowed",
    ]
    assert j.broken == ["c1", "c2"]


def test_a_regression_in_a_cancelled_run_fails_rather_than_doubts() -> None:
    j = decide_result(
        NO_MIN,
        facts(status="cancelled", passed=6, confirmed_regressions=["c1"], undecided=["c8", "c9"]),
    )
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["1 confirmed regression, 0 allowed"]  # the doubts are not listed
    assert j.undecided == ["c8", "c9"]


def test_a_crash_in_a_run_out_of_budget_fails_rather_than_doubts() -> None:
    j = decide_result(NO_MIN, facts(status="budget_exceeded", passed=6, first_crashes=["c1"]))
    assert j.result is SuiteResult.FAILED


# --- failed: the efficiency ceilings ------------------------------------------------------------


def test_cost_per_pass_above_its_ceiling_fails() -> None:
    j = decide_result(
        Threshold(max_cost_per_pass_rise_pct=20), facts(cost_per_pass_micros=(121, 100))
    )
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["cost per passed case rose 21.0%, more than the 20% allowed"]


def test_cost_per_pass_at_its_ceiling_passes() -> None:
    j = decide_result(
        Threshold(max_cost_per_pass_rise_pct=20), facts(cost_per_pass_micros=(120, 100))
    )
    assert j.result is SuiteResult.PASSED


def test_cost_per_pass_exactly_at_a_seven_percent_ceiling_passes() -> None:
    j = decide_result(
        Threshold(max_cost_per_pass_rise_pct=7), facts(cost_per_pass_micros=(107, 100))
    )
    assert j.result is SuiteResult.PASSED


def test_a_cheaper_candidate_never_exceeds_the_ceiling() -> None:
    j = decide_result(
        Threshold(max_cost_per_pass_rise_pct=0), facts(cost_per_pass_micros=(50, 100))
    )
    assert j.result is SuiteResult.PASSED


def test_a_zero_ceiling_fails_any_rise() -> None:
    j = decide_result(
        Threshold(max_cost_per_pass_rise_pct=0), facts(cost_per_pass_micros=(101, 100))
    )
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["cost per passed case rose 1.0%, more than the 0% allowed"]


def test_cost_per_pass_from_a_zero_baseline_fails_on_any_positive_increase() -> None:
    j = decide_result(
        Threshold(max_cost_per_pass_rise_pct=1000), facts(cost_per_pass_micros=(1, 0))
    )
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["cost per passed case rose from zero, more than the 1000% allowed"]


def test_cost_per_pass_staying_at_zero_passes() -> None:
    j = decide_result(Threshold(max_cost_per_pass_rise_pct=0), facts(cost_per_pass_micros=(0, 0)))
    assert j.result is SuiteResult.PASSED


def test_p95_latency_above_its_ceiling_fails() -> None:
    j = decide_result(
        Threshold(max_p95_latency_rise_pct=20), facts(p95_latency_ms=(1210.0, 1000.0))
    )
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["p95 latency rose 21.0%, more than the 20% allowed"]


def test_p95_latency_at_its_ceiling_passes() -> None:
    j = decide_result(
        Threshold(max_p95_latency_rise_pct=20), facts(p95_latency_ms=(1200.0, 1000.0))
    )
    assert j.result is SuiteResult.PASSED


def test_p95_latency_from_a_zero_baseline_fails_on_any_positive_increase() -> None:
    j = decide_result(Threshold(max_p95_latency_rise_pct=50), facts(p95_latency_ms=(0.5, 0.0)))
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["p95 latency rose from zero, more than the 50% allowed"]


def test_both_ceilings_exceeded_are_both_listed_with_fractional_limits() -> None:
    j = decide_result(
        Threshold(max_cost_per_pass_rise_pct=12.5, max_p95_latency_rise_pct=5),
        facts(cost_per_pass_micros=(150, 100), p95_latency_ms=(110.0, 100.0)),
    )
    assert j.result is SuiteResult.FAILED
    assert j.reasons == [
        "cost per passed case rose 50.0%, more than the 12.5% allowed",
        "p95 latency rose 10.0%, more than the 5% allowed",
    ]


def test_each_ceiling_reads_its_own_numbers() -> None:
    # cost within its ceiling, latency far over a ceiling that is not set: passes
    j = decide_result(
        Threshold(max_cost_per_pass_rise_pct=10),
        facts(cost_per_pass_micros=(105, 100), p95_latency_ms=(900.0, 100.0)),
    )
    assert j.result is SuiteResult.PASSED
    # latency within its ceiling, cost far over a ceiling that is not set: passes
    j = decide_result(
        Threshold(max_p95_latency_rise_pct=10),
        facts(cost_per_pass_micros=(900, 100), p95_latency_ms=(105.0, 100.0)),
    )
    assert j.result is SuiteResult.PASSED


def test_empty_ceilings_check_nothing() -> None:
    j = decide_result(
        NO_MIN, facts(cost_per_pass_micros=(10_000, 1), p95_latency_ms=(9_000.0, 1.0))
    )
    assert j.result is SuiteResult.PASSED
    j = decide_result(NO_MIN, facts(cost_per_pass_micros=(5, 0), p95_latency_ms=(5.0, 0.0)))
    assert j.result is SuiteResult.PASSED


def test_a_ceiling_with_an_unknown_side_checks_nothing() -> None:
    t = Threshold(max_cost_per_pass_rise_pct=0, max_p95_latency_rise_pct=0)
    assert (
        decide_result(
            t, facts(cost_per_pass_micros=(None, 100), p95_latency_ms=(100.0, None))
        ).result
        is SuiteResult.PASSED
    )
    assert (
        decide_result(
            t, facts(cost_per_pass_micros=(100, None), p95_latency_ms=(None, 100.0))
        ).result
        is SuiteResult.PASSED
    )


def test_ceilings_are_not_checked_without_a_comparison() -> None:
    t = Threshold(min_pass_rate=0.5, max_cost_per_pass_rise_pct=0, max_p95_latency_rise_pct=0)
    j = decide_result(
        t, facts(compared=False, cost_per_pass_micros=(300, 100), p95_latency_ms=(300.0, 100.0))
    )
    assert j.result is SuiteResult.PASSED


def test_ceilings_are_not_checked_when_the_comparison_is_invalid() -> None:
    t = Threshold(max_cost_per_pass_rise_pct=0, max_p95_latency_rise_pct=0)
    j = decide_result(
        t,
        facts(
            invalid_reason="the judge changed",
            cost_per_pass_micros=(300, 100),
            p95_latency_ms=(300.0, 100.0),
        ),
    )
    assert j.result is SuiteResult.INCONCLUSIVE
    assert j.reasons == ["the comparison is invalid: the judge changed"]


def test_ceilings_are_not_checked_when_a_side_could_not_run() -> None:
    t = Threshold(max_cost_per_pass_rise_pct=0, max_p95_latency_rise_pct=0)
    j = decide_result(
        t,
        facts(
            could_not_run="baseline: no version",
            cost_per_pass_micros=(300, 100),
            p95_latency_ms=(300.0, 100.0),
        ),
    )
    assert j.result is SuiteResult.INCONCLUSIVE
    assert j.reasons == ["a side could not run: baseline: no version"]


# --- inconclusive -------------------------------------------------------------------------------


def test_a_cancelled_run_is_inconclusive_and_says_so() -> None:
    j = decide_result(NO_MIN, facts(status="cancelled"))
    assert j.result is SuiteResult.INCONCLUSIVE
    assert j.reasons == ["the eval run was cancelled"]


def test_a_cancelled_run_names_its_reason() -> None:
    j = decide_result(NO_MIN, facts(status="cancelled", reason="stopped by ana"))
    assert j.reasons == ["the eval run was cancelled (stopped by ana)"]


def test_a_run_out_of_budget_is_inconclusive() -> None:
    j = decide_result(NO_MIN, facts(status="budget_exceeded", reason="org budget spent"))
    assert j.result is SuiteResult.INCONCLUSIVE
    assert j.reasons == ["the eval run was stopped: budget exceeded (org budget spent)"]


def test_a_cancelled_first_measurement_does_not_set_the_baseline() -> None:
    j = decide_result(NO_MIN, facts(status="cancelled", compared=False))
    assert j.result is SuiteResult.INCONCLUSIVE


def test_an_invalid_comparison_is_inconclusive_never_passed() -> None:
    j = decide_result(NO_MIN, facts(invalid_reason="the judge was republished", overall="better"))
    assert j.result is SuiteResult.INCONCLUSIVE
    assert j.reasons == ["the comparison is invalid: the judge was republished"]
    assert j.overall == "better"


def test_a_side_that_could_not_run_is_inconclusive() -> None:
    j = decide_result(NO_MIN, facts(could_not_run="baseline: the version was deleted"))
    assert j.result is SuiteResult.INCONCLUSIVE
    assert j.reasons == ["a side could not run: baseline: the version was deleted"]


def test_one_undecided_case_is_inconclusive_and_named() -> None:
    j = decide_result(NO_MIN, facts(passed=9, undecided=["c3"]))
    assert j.result is SuiteResult.INCONCLUSIVE
    assert j.reasons == ["1 case left undecided: c3"]
    assert j.undecided == ["c3"]


def test_undecided_cases_in_a_first_measurement_do_not_set_the_baseline() -> None:
    j = decide_result(NO_MIN, facts(compared=False, passed=9, undecided=["c3"]))
    assert j.result is SuiteResult.INCONCLUSIVE


def test_ten_undecided_cases_are_all_named() -> None:
    j = decide_result(NO_MIN, facts(total=20, passed=10, undecided=ten()))
    assert j.reasons == ["10 cases left undecided: c1, c2, c3, c4, c5, c6, c7, c8, c9, c10"]


def test_past_ten_undecided_cases_the_rest_are_elided_but_all_are_kept() -> None:
    cases = ten(n=12)
    j = decide_result(NO_MIN, facts(total=20, passed=8, undecided=cases))
    assert j.result is SuiteResult.INCONCLUSIVE
    assert j.reasons == ["12 cases left undecided: c1, c2, c3, c4, c5, c6, c7, c8, c9, c10…"]
    assert j.undecided == cases


def test_every_doubt_is_listed_in_order() -> None:
    j = decide_result(
        NO_MIN,
        facts(
            status="cancelled",
            passed=8,
            invalid_reason="judge changed",
            could_not_run="baseline: gone",
            undecided=["c9", "c10"],
        ),
    )
    assert j.result is SuiteResult.INCONCLUSIVE
    assert j.reasons == [
        "the eval run was cancelled",
        "the comparison is invalid: judge changed",
        "a side could not run: baseline: gone",
        "2 cases left undecided: c9, c10",
    ]


def test_allowed_regressions_do_not_keep_a_doubtful_result_from_being_inconclusive() -> None:
    j = decide_result(
        Threshold(max_regressions=1),
        facts(passed=8, confirmed_regressions=["c1"], undecided=["c2"]),
    )
    assert j.result is SuiteResult.INCONCLUSIVE
    assert j.broken == ["c1"]


# --- baseline set -------------------------------------------------------------------------------


def test_a_complete_first_measurement_without_a_minimum_sets_the_baseline() -> None:
    j = decide_result(NO_MIN, facts(compared=False, passed=7))
    assert j.result is SuiteResult.BASELINE_SET
    assert j.reasons == [
        (
            "a first measurement with no minimum and nothing earlier to compare: "
            "a reference for later results, not a pass"
        )
    ]


def test_a_first_measurement_where_every_case_failed_still_sets_the_baseline() -> None:
    j = decide_result(NO_MIN, facts(compared=False, passed=0))
    assert j.result is SuiteResult.BASELINE_SET


def test_a_first_measurement_over_its_minimum_passes() -> None:
    j = decide_result(MIN_HALF, facts(compared=False, passed=6))
    assert j.result is SuiteResult.PASSED
    assert j.reasons == []


def test_a_compared_run_without_a_minimum_or_regressions_passes() -> None:
    j = decide_result(NO_MIN, facts(compared=True, passed=3))
    assert j.result is SuiteResult.PASSED


# --- passed: McNemar's direction is carried, never decides --------------------------------------


def test_an_overall_worse_direction_without_confirmed_regressions_still_passes() -> None:
    j = decide_result(NO_MIN, facts(passed=6, overall="worse"))
    assert j.result is SuiteResult.PASSED
    assert j.overall == "worse"


def test_an_overall_better_direction_does_not_save_a_regression() -> None:
    j = decide_result(NO_MIN, facts(confirmed_regressions=["c1"], overall="better"))
    assert j.result is SuiteResult.FAILED
    assert j.overall == "better"


@pytest.mark.parametrize(
    "kw",
    [
        {"status": "failed"},
        {"confirmed_regressions": ["c1"]},
        {"status": "cancelled"},
        {"compared": False},
        {},
    ],
)
def test_the_overall_direction_is_carried_for_every_word(kw: dict[str, Any]) -> None:
    assert decide_result(NO_MIN, facts(overall="no_change", **kw)).overall == "no_change"


# --- the note appears whatever the word ---------------------------------------------------------

NOTE = "Not compared: running the earlier version too would exceed the suite's cost cap."


@pytest.mark.parametrize(
    ("threshold", "kw", "word"),
    [
        (NO_MIN, {"status": "failed", "reason": "boom"}, SuiteResult.ERROR),
        (NO_MIN, {"confirmed_regressions": ["c1"]}, SuiteResult.FAILED),
        (NO_MIN, {"status": "cancelled"}, SuiteResult.INCONCLUSIVE),
        (NO_MIN, {"compared": False}, SuiteResult.BASELINE_SET),
        (MIN_HALF, {"compared": False}, SuiteResult.PASSED),
    ],
)
def test_the_note_is_the_last_reason_for_every_word(
    threshold: Threshold, kw: dict[str, Any], word: SuiteResult
) -> None:
    j = decide_result(threshold, facts(note=NOTE, **kw))
    assert j.result is word
    assert j.reasons[-1] == NOTE
    assert j.reasons.count(NOTE) == 1
    if word is not SuiteResult.PASSED:
        assert len(j.reasons) == 2  # its own reason comes first


def test_a_passed_result_with_a_note_says_only_the_note() -> None:
    assert decide_result(MIN_HALF, facts(compared=False, note=NOTE)).reasons == [NOTE]


def test_an_empty_note_says_nothing() -> None:
    assert decide_result(NO_MIN, facts(note="")).reasons == []


# --- judge does not share its inputs ------------------------------------------------------------


def test_the_judgement_lists_are_copies_of_the_facts() -> None:
    regressions, undecided = ["c1"], ["c2"]
    j = decide_result(
        Threshold(max_regressions=1),
        facts(confirmed_regressions=regressions, undecided=undecided, first_crashes=["c3"]),
    )
    assert j.broken == ["c1", "c3"]
    assert regressions == ["c1"]  # the crash was not appended to the facts' own list
    assert j.undecided is not undecided


# --- rise_pct -----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("new", "old", "expected"),
    [
        (120, 100, 20.0),
        (121, 100, 21.0),
        (100, 100, 0.0),
        (80, 100, -20.0),
        (300, 100, 200.0),
        (150.0, 200.0, -25.0),
        (0, 0, 0.0),
        (0.0, 0.0, 0.0),
    ],
)
def test_rise_pct(new: float, old: float, expected: float) -> None:
    assert rise_pct(new, old) == pytest.approx(expected)


def test_rise_pct_from_zero_is_infinite_for_any_positive_increase() -> None:
    assert rise_pct(1, 0) == math.inf
    assert rise_pct(0.001, 0.0) == math.inf


@pytest.mark.parametrize(
    ("new", "old"), [(None, 100), (100, None), (None, None), (None, 0), (0, None)]
)
def test_rise_pct_is_none_when_a_side_is_unknown(new: float | None, old: float | None) -> None:
    assert rise_pct(new, old) is None


# --- SuiteResult.bad ----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "bad"),
    [
        (SuiteResult.PASSED, False),
        (SuiteResult.FAILED, True),
        (SuiteResult.INCONCLUSIVE, True),
        (SuiteResult.ERROR, False),
        (SuiteResult.BASELINE_SET, False),
        (SuiteResult.NOT_RUN, True),
    ],
)
def test_which_results_the_owner_is_told_of(word: SuiteResult, bad: bool) -> None:
    assert word.bad is bad


def test_the_result_words_read_as_stored() -> None:
    assert [w.value for w in SuiteResult] == [
        "passed",
        "failed",
        "inconclusive",
        "error",
        "baseline_set",
        "not_run",
    ]
    assert SuiteResult("baseline_set") is SuiteResult.BASELINE_SET


# --- absorb -------------------------------------------------------------------------------------


def trig(kind: str, version: int | None, due: int, **kw: Any) -> dict[str, Any]:
    return {
        "kind": kind,
        "version": version,
        "by": None,
        "baseline_version": None,
        "promotion_id": None,
        "due_at_ms": due,
        **kw,
    }


def test_the_first_trigger_waits_alone_with_its_kinds() -> None:
    assert absorb([], trig("publish", 3, 1000)) == [
        {**trig("publish", 3, 1000), "kinds": ["publish"]}
    ]


def test_a_trigger_for_the_same_version_is_absorbed_keeping_the_earlier_due_time() -> None:
    pending = absorb([], trig("dependency", 3, 1000))
    out = absorb(pending, trig("publish", 3, 5000))
    assert len(out) == 1
    assert out[0]["due_at_ms"] == 1000
    assert out[0]["kinds"] == ["dependency", "publish"]
    assert out[0]["kind"] == "dependency"  # only a gate takes over the kind


def test_an_earlier_due_trigger_brings_the_waiting_one_forward() -> None:
    pending = absorb([], trig("dependency", 3, 9000))
    out = absorb(pending, trig("manual", 3, 2000))
    assert out[0]["due_at_ms"] == 2000


def test_a_burst_of_dependency_changes_is_one_run_due_after_the_first() -> None:
    pending: list[dict[str, Any]] = []
    for due in (1000, 1500, 2500, 4000):
        pending = absorb(pending, trig("dependency", 4, due + 60_000))
    assert len(pending) == 1
    assert pending[0]["due_at_ms"] == 61_000
    assert pending[0]["kinds"] == ["dependency"]


def test_kinds_merge_sorted_without_repeats() -> None:
    pending: list[dict[str, Any]] = []
    for kind in ("schedule", "manual", "dependency", "manual"):
        pending = absorb(pending, trig(kind, 2, 100))
    assert pending[0]["kinds"] == ["dependency", "manual", "schedule"]


def test_an_entry_without_kinds_counts_its_own_kind() -> None:
    out = absorb([trig("publish", 3, 100)], trig("promotion", 3, 200))
    assert out[0]["kinds"] == ["promotion", "publish"]


def test_triggers_for_other_versions_queue_in_arrival_order() -> None:
    pending = absorb([], trig("publish", 3, 300))
    pending = absorb(pending, trig("publish", 4, 100))
    pending = absorb(pending, trig("dependency", 5, 200))
    assert [(p["version"], p["due_at_ms"]) for p in pending] == [(3, 300), (4, 100), (5, 200)]


def test_a_trigger_joins_the_entry_of_its_own_version_among_several() -> None:
    pending = absorb([], trig("publish", 3, 100))
    pending = absorb(pending, trig("publish", 4, 200))
    out = absorb(pending, trig("dependency", 4, 50))
    assert len(out) == 2
    assert out[0] == pending[0]
    assert out[1]["version"] == 4
    assert out[1]["kinds"] == ["dependency", "publish"]
    assert out[1]["due_at_ms"] == 50


def test_a_publish_then_a_promotion_of_that_version_is_one_run_taking_the_paired_baseline() -> None:
    pending = absorb([], trig("schedule", 7, 100))
    out = absorb(pending, trig("promotion", 7, 200, baseline_version=6, by="u_ana"))
    assert len(out) == 1
    assert out[0]["baseline_version"] == 6
    assert out[0]["by"] == "u_ana"


def test_the_waiting_entry_keeps_what_it_already_had() -> None:
    pending = absorb([], trig("publish", 7, 100, baseline_version=6, by="u_ana"))
    out = absorb(pending, trig("promotion", 7, 200, baseline_version=5, by="u_bo"))
    assert out[0]["baseline_version"] == 6
    assert out[0]["by"] == "u_ana"


def test_a_gate_absorbed_into_a_waiting_entry_makes_it_a_gate() -> None:
    pending = absorb([], trig("publish", 7, 100, baseline_version=6, by="u_ana"))
    out = absorb(pending, trig("gate", 7, 300, baseline_version=5, promotion_id="pr_1", by="u_bo"))
    assert len(out) == 1
    assert out[0]["kind"] == "gate"
    assert out[0]["promotion_id"] == "pr_1"
    assert (
        out[0]["baseline_version"] == 5
    )  # the gate's baseline: the version the environment serves
    assert out[0]["kinds"] == ["gate", "publish"]
    assert out[0]["due_at_ms"] == 100
    assert out[0]["by"] == "u_ana"


def test_a_later_gate_replaces_the_promotion_and_baseline_of_a_waiting_gate() -> None:
    pending = absorb([], trig("gate", 7, 100, baseline_version=5, promotion_id="pr_old"))
    out = absorb(pending, trig("gate", 7, 400, baseline_version=6, promotion_id="pr_new"))
    assert len(out) == 1
    assert out[0]["promotion_id"] == "pr_new"
    assert out[0]["baseline_version"] == 6
    assert out[0]["kinds"] == ["gate"]
    assert out[0]["due_at_ms"] == 100


def test_a_waiting_gate_stays_a_gate_when_another_trigger_arrives() -> None:
    pending = absorb([], trig("gate", 7, 100, baseline_version=5, promotion_id="pr_1"))
    out = absorb(pending, trig("dependency", 7, 50, baseline_version=4))
    assert out[0]["kind"] == "gate"
    assert out[0]["promotion_id"] == "pr_1"
    assert out[0]["baseline_version"] == 5
    assert out[0]["due_at_ms"] == 50


def test_triggers_without_a_version_absorb_each_other() -> None:
    pending = absorb([], trig("schedule", None, 100))
    out = absorb(pending, trig("schedule", None, 200))
    assert len(out) == 1
    assert out[0]["due_at_ms"] == 100
    out = absorb(out, trig("manual", None, 50, by="u_ana"))
    assert len(out) == 1
    assert out[0]["kinds"] == ["manual", "schedule"]
    assert out[0]["by"] == "u_ana"


def test_a_trigger_without_a_version_does_not_join_one_with_a_version() -> None:
    pending = absorb([], trig("publish", 3, 100))
    out = absorb(pending, trig("schedule", None, 200))
    assert [p["version"] for p in out] == [3, None]


def test_absorb_does_not_change_what_it_was_given() -> None:
    pending = [{**trig("publish", 3, 100), "kinds": ["publish"]}]
    before = copy.deepcopy(pending)
    trigger = trig("gate", 3, 50, promotion_id="pr_1", baseline_version=2)
    trigger_before = copy.deepcopy(trigger)
    out = absorb(pending, trigger)
    assert pending == before
    assert trigger == trigger_before
    assert out[0] is not pending[0]


def test_absorb_accepts_string_due_times() -> None:
    out = absorb([{**trig("publish", 3, 100), "due_at_ms": "900"}], trig("manual", 3, "400"))
    assert out[0]["due_at_ms"] == 400


# --- Threshold ----------------------------------------------------------------------------------


def test_threshold_defaults_set_no_floor_and_allow_no_regression() -> None:
    t = Threshold()
    assert t.min_pass_rate is None
    assert t.max_regressions == 0
    assert t.max_cost_per_pass_rise_pct is None
    assert t.max_p95_latency_rise_pct is None


def test_threshold_accepts_its_bounds() -> None:
    t = Threshold(
        min_pass_rate=1,
        max_regressions=3,
        max_cost_per_pass_rise_pct=0,
        max_p95_latency_rise_pct=250.5,
    )
    assert (
        t.min_pass_rate,
        t.max_regressions,
        t.max_cost_per_pass_rise_pct,
        t.max_p95_latency_rise_pct,
    ) == (1, 3, 0, 250.5)
    assert Threshold(min_pass_rate=0).min_pass_rate == 0


def test_threshold_reads_from_stored_json() -> None:
    t = Threshold.model_validate({"min_pass_rate": 0.8, "max_regressions": 1})
    assert t == Threshold(min_pass_rate=0.8, max_regressions=1)


@pytest.mark.parametrize(
    "bad",
    [
        {"min_pass_rate": 1.01},
        {"min_pass_rate": 2},
        {"min_pass_rate": -0.1},
        {"min_pass_rate": math.nan},
        {"min_pass_rate": math.inf},
        {"max_regressions": -1},
        {"max_regressions": True},
        {"max_regressions": False},
        {"max_regressions": 1.0},
        {"max_regressions": "1"},
        {"max_cost_per_pass_rise_pct": -1},
        {"max_cost_per_pass_rise_pct": math.nan},
        {"max_cost_per_pass_rise_pct": math.inf},
        {"max_p95_latency_rise_pct": -0.5},
        {"max_p95_latency_rise_pct": math.nan},
        {"max_p95_latency_rise_pct": math.inf},
        {"max_p95_rise_pct": 10},
    ],
)
def test_threshold_refuses(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Threshold.model_validate(bad)


def test_threshold_is_frozen() -> None:
    t = Threshold()
    with pytest.raises(ValidationError):
        t.max_regressions = 3  # type: ignore[misc]


# --- Schedule and Triggers ----------------------------------------------------------------------


def test_schedule_reads_utc_by_default() -> None:
    s = Schedule(cron="0 6 * * *")
    assert s.timezone == "UTC"
    assert Schedule(cron="0 6 * * *", timezone="Europe/Warsaw").timezone == "Europe/Warsaw"


@pytest.mark.parametrize(
    "bad",
    [
        {"cron": ""},
        {"cron": "*" * 101},
        {"cron": "0 6 * * *", "timezone": ""},
        {"cron": "0 6 * * *", "timezone": "x" * 65},
        {"timezone": "UTC"},
        {"cron": "0 6 * * *", "tz": "UTC"},
    ],
)
def test_schedule_refuses(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Schedule.model_validate(bad)


def test_schedule_accepts_its_longest_values() -> None:
    s = Schedule(cron="*" * 100, timezone="x" * 64)
    assert len(s.cron) == 100
    assert len(s.timezone) == 64


def test_triggers_default_to_none() -> None:
    t = Triggers()
    assert t.schedule is None
    assert (t.on_publish, t.on_promotion, t.on_dependency_change) == (False, False, False)


def test_triggers_combine_and_read_from_stored_json() -> None:
    t = Triggers.model_validate(
        {
            "schedule": {"cron": "0 6 * * *", "timezone": "Europe/Warsaw"},
            "on_publish": True,
            "on_promotion": True,
            "on_dependency_change": True,
        }
    )
    assert t.schedule == Schedule(cron="0 6 * * *", timezone="Europe/Warsaw")
    assert (t.on_publish, t.on_promotion, t.on_dependency_change) == (True, True, True)


@pytest.mark.parametrize(
    "bad",
    [
        {"on_manual": True},
        {"schedule": {"cron": ""}},
        {"schedule": {"cron": "0 6 * * *", "every": "day"}},
        {"on_publish": "sometimes"},
    ],
)
def test_triggers_refuse(bad: dict[str, Any]) -> None:
    with pytest.raises(ValidationError):
        Triggers.model_validate(bad)
