"""The pure rules of a suite whose judge is published again (docs/guides/suites.md, "A judge
published again"): which publication graded an answer (`score_publication`), whether two sides were
graded by one judge at two publications (`republished`), what the result says and keeps
(`decide_result`), when the next run compares again (`grading_changed_since`) and when the owner is
told (`tells_owner`).

Every score, `RunFacts` and result is hand-built; expected values are hand-computed literals.
"""

from __future__ import annotations

from decimal import Decimal
from typing import Any

import pytest

from chalicelib.domain.judge_rules import Republished, republished, score_publication
from chalicelib.domain.records import SuiteResultEntry
from chalicelib.domain.suite_rules import (
    RunFacts,
    SuiteDecision,
    SuiteResult,
    Threshold,
    decide_result,
    grading_changed_since,
    tells_owner,
)


def judge_score(version: Any, passed: bool | None = True, judge_id: str = "quality") -> dict:
    fp = {"judge_id": judge_id, "judge_version": version, "model": "m", "rubric_hash": "ab"}
    return {"scorer": "judge", "passed": passed, "fingerprint": fp}


# --- score_publication ---------------------------------------------------------------------------


def test_the_publication_is_the_deciding_judge_scores_id_and_version() -> None:
    assert score_publication([{"scorer": "equals", "passed": True}, judge_score(3)]) == (
        "quality",
        3,
    )
    # A version read back from the table as a Decimal is the same whole number.
    assert score_publication([judge_score(Decimal(2))]) == ("quality", 2)


def test_no_publication_when_no_judge_decided_or_the_version_is_not_a_whole_number() -> None:
    assert score_publication([]) is None
    assert score_publication([judge_score(1, passed=None)]) is None  # the judge failed: skipped
    assert score_publication([{"scorer": "judge", "passed": True, "fingerprint": None}]) is None
    for bad in (None, True, "2", 2.5, Decimal("2.5")):
        assert score_publication([judge_score(bad)]) is None, bad


# --- republished ---------------------------------------------------------------------------------


def test_one_judge_at_two_publications_is_a_republish_naming_both() -> None:
    assert republished({("quality", 2)}, [("quality", 1), ("quality", 1)]) == Republished(
        "quality", before=1, after=2
    )
    # Published again and again: before is the baseline's, after the candidate's, whichever is
    # newer.
    assert republished([("quality", 1)], [("quality", 4)]) == Republished("quality", 4, 1)


@pytest.mark.parametrize(
    ("candidate", "baseline"),
    [
        ({("quality", 2)}, {("quality", 2)}),  # the same publication
        ({("quality", 2)}, {("other", 1)}),  # another judge altogether
        ({("quality", 2), ("quality", 3)}, {("quality", 1)}),  # changed within the candidate
        ({("quality", 2)}, {("quality", 1), ("quality", 2)}),  # changed within the baseline
        (set(), {("quality", 1)}),  # no judge decided the candidate
        ({("quality", 2)}, set()),
    ],
)
def test_anything_else_is_not_a_republish(candidate: set, baseline: set) -> None:
    assert republished(candidate, baseline) is None


# --- decide_result -------------------------------------------------------------------------------

REPUBLISHED = Republished("quality", before=1, after=2)


def facts(**kw: Any) -> RunFacts:
    """A complete, compared run of five cases that all passed."""
    return RunFacts(**{"status": "completed", "total": 5, "passed": 5, "compared": True, **kw})


def test_a_republished_judge_makes_the_result_inconclusive_naming_both_versions() -> None:
    j = decide_result(
        Threshold(), facts(invalid_reason="different judges", republished=REPUBLISHED)
    )
    assert j == SuiteDecision(
        SuiteResult.INCONCLUSIVE,
        [
            "the comparison is invalid: judge quality was published again since the run it is "
            "compared with (version 1 graded that run, version 2 grades now), so a flip would say "
            "something about the grading, not the agent; the next run compares under version 2"
        ],
        grading_changed=True,
        republished=REPUBLISHED,
    )


def test_another_invalid_comparison_keeps_its_own_reason_and_is_a_grading_change_too() -> None:
    j = decide_result(Threshold(), facts(invalid_reason="the judge changed"))
    assert j.result is SuiteResult.INCONCLUSIVE and j.republished is None
    assert j.reasons == ["the comparison is invalid: the judge changed"]
    assert j.grading_changed is True


def test_a_minimum_missed_whatever_the_undecided_still_fails_and_still_tells_of_the_judge() -> None:
    # 2 passed of 5, none undecided: 40% < 60%, a fail on its own; the judge change is kept.
    j = decide_result(
        Threshold(min_pass_rate=0.6),
        facts(passed=2, invalid_reason="different judges", republished=REPUBLISHED),
    )
    assert j.result is SuiteResult.FAILED
    assert j.reasons == ["pass rate 40.0% is below the minimum 60.0%"]
    assert (j.grading_changed, j.republished) == (True, REPUBLISHED)


def test_no_grading_change_without_a_comparison_or_for_a_run_that_failed() -> None:
    # Nothing compared: a first measurement, whatever the reason text says.
    alone = decide_result(Threshold(), facts(compared=False, invalid_reason="x"))
    assert alone.grading_changed is False and alone.republished is None
    error = decide_result(
        Threshold(),
        facts(status="failed", invalid_reason="x", republished=REPUBLISHED, reason="lost"),
    )
    assert error.result is SuiteResult.ERROR
    assert (error.grading_changed, error.republished) == (False, None)
    clean = decide_result(Threshold(), facts())
    assert (clean.result, clean.grading_changed) == (SuiteResult.PASSED, False)


# --- grading_changed_since -----------------------------------------------------------------------


def result(word: str, *, changed: bool | None = None, reasons: list[str] | None = None):
    return SuiteResultEntry(
        started_key="2026-12-01T00:00:00.000Z#r",
        suite_id="s",
        result_id="r",
        org_id="o",
        agent_id="a",
        trigger={},
        result=word,
        reasons=reasons or [],
        started_at="2026-12-01T00:00:00.000Z",
        grading_changed=changed,
    )


def test_a_result_since_the_last_good_one_that_could_not_be_compared_pairs_the_next_run() -> None:
    assert grading_changed_since([]) is False
    cancelled = result("inconclusive", reasons=["the eval run was cancelled"])
    assert grading_changed_since([cancelled]) is False
    # The change need not be the newest result: a cancelled run after it does not undo it.
    assert grading_changed_since(
        [
            result("inconclusive", reasons=["the eval run was cancelled"]),
            result("inconclusive", changed=True, reasons=["the comparison is invalid: judge ..."]),
        ]
    )
    # A result kept before results recorded the change says it in its reasons.
    assert grading_changed_since(
        [result("inconclusive", reasons=["the comparison is invalid: the judge changed"])]
    )


# --- tells_owner ---------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("word", "judge", "told", "tells"),
    [
        (SuiteResult.INCONCLUSIVE, None, False, True),  # the first bad result of a version
        (SuiteResult.INCONCLUSIVE, None, True, False),  # the same run of bad results
        (SuiteResult.INCONCLUSIVE, REPUBLISHED, True, True),  # the judge is news
        (SuiteResult.FAILED, REPUBLISHED, True, True),
        (SuiteResult.NOT_RUN, None, False, True),
        (SuiteResult.PASSED, None, False, False),
        (SuiteResult.PASSED, REPUBLISHED, False, False),  # never told of a good result
        (SuiteResult.BASELINE_SET, None, False, False),
        (SuiteResult.ERROR, None, False, False),
    ],
)
def test_the_owner_is_told_once_per_run_of_bad_results_and_of_every_republish(
    word: SuiteResult, judge: Republished | None, told: bool, tells: bool
) -> None:
    assert tells_owner(SuiteDecision(word, republished=judge), told) is tells
