"""The review queue's rules (domain.review_rules), hand-computed: what a finished run sends, how an
answer takes the place of one waiting, and a person's verdict over a case's tries."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain.enums import AttemptState
from chalicelib.domain.review_rules import (
    Answered,
    ReviewReason,
    ReviewVerdict,
    Waiting,
    answers_to_send,
    judge_failed,
    reviewed_tries,
    route,
)

REGRESSION, JUDGE, HAND = (
    ReviewReason.CONFIRMED_REGRESSION,
    ReviewReason.JUDGE_FAILED,
    ReviewReason.SENT_BY_HAND,
)
P, F, I = AttemptState.PASSED, AttemptState.FAILED, AttemptState.INCOMPLETE


def answer(
    case: str, at: int, reason: ReviewReason = REGRESSION, agent: str = "bot", run: str = "r2"
) -> Answered:
    return Answered(case, agent, run, "candidate", f"candidate#{case}#001", at, reason)


def waiting(case: str, at: int, agent: str = "bot", run: str = "r1", item: str = "i1") -> Waiting:
    return Waiting(item, case, agent, at, run, f"candidate#{case}#001")


def test_a_new_case_goes_into_the_queue():
    routing = route([answer("c1", 100)], {})
    assert routing.sent == (answer("c1", 100),)
    assert (routing.routed_to_review, routing.routed_replacing, routing.not_sent) == (1, 0, ())


def test_a_newer_answer_takes_the_place_of_the_one_waiting():
    routing = route([answer("c1", 200)], {("c1", "bot"): waiting("c1", 100, item="old")})
    assert routing.sent == (answer("c1", 200),)
    assert routing.replacing == ((answer("c1", 200), "old"),)
    assert (routing.routed_to_review, routing.routed_replacing) == (1, 1)


def test_an_answer_older_than_the_one_waiting_is_not_sent():
    routing = route([answer("c1", 50)], {("c1", "bot"): waiting("c1", 100, item="newer")})
    assert routing.sent == ()
    assert routing.not_sent == ((answer("c1", 50), "older than the answer waiting as item newer"),)


def test_a_finalize_delivered_twice_routes_nothing_twice():
    first = route([answer("c1", 100, run="r1")], {})
    kept = {("c1", "bot"): waiting("c1", 100, run="r1", item="i9")}
    again = route(list(first.sent), kept)
    assert again.sent == () and again.routed_to_review == 0
    assert again.not_sent[0][1] == "already waiting as item i9"


def test_another_agents_answer_waits_beside():
    routing = route([answer("c1", 200, agent="other")], {("c1", "bot"): waiting("c1", 100)})
    assert routing.sent == (answer("c1", 200, agent="other"),)
    assert routing.replacing == ()


def test_one_answer_per_case_and_agent_in_one_send():
    regression, judge_fail = answer("c1", 100, REGRESSION), answer("c1", 100, JUDGE)
    later = answer("c1", 300, HAND)
    routing = route([regression, judge_fail], {})
    assert routing.sent == (regression,)  # same moment: the regression goes
    assert routing.not_sent == ((judge_fail, "a newer answer of the case and agent goes instead"),)
    assert route([regression, later], {}).sent == (later,)  # the newer one goes


def test_equal_times_against_the_waiting_item_are_not_sent():
    routing = route([answer("c1", 100, run="r2")], {("c1", "bot"): waiting("c1", 100, run="r1")})
    assert routing.sent == () and "older than" in routing.not_sent[0][1]


def judge_score(passed: bool | None, reason: str = "graded") -> dict[str, Any]:
    return {"scorer": "judge", "passed": passed, "reason": reason}


@pytest.mark.parametrize(
    ("scores", "failed"),
    [
        ([judge_score(None, "judge returned no JSON")], True),
        ([judge_score(None, "judge skipped: budget spent")], False),
        ([judge_score(True)], False),
        ([judge_score(False)], False),
        ([{"scorer": "exact", "passed": None, "reason": "x"}], False),
        ([], False),
    ],
)
def test_only_a_judge_that_was_asked_and_could_not_grade_has_failed(scores, failed):
    assert judge_failed(scores) is failed


def test_a_run_sends_its_confirmed_regressions_and_its_judges_failures_never_a_skip():
    regression = answer("c1", 100, REGRESSION)
    failed = answer("c2", 110, HAND)  # given with any reason: sent as a judge failure
    skipped = answer("c3", 120, HAND)
    graded = answer("c4", 130, HAND)
    out = answers_to_send(
        [regression],
        [
            (failed, [judge_score(None, "judge timed out")]),
            (skipped, [judge_score(None, "judge skipped: the judge was deleted")]),
            (graded, [judge_score(True)]),
        ],
    )
    assert [(a.case_id, a.reason) for a in out] == [("c1", REGRESSION), ("c2", JUDGE)]


@pytest.mark.parametrize(
    ("tries", "verdict", "counted"),
    [
        ((F, F), ReviewVerdict.PASS, (P, P)),
        ((P, F), ReviewVerdict.FAIL, (F, F)),
        ((I, P), ReviewVerdict.PASS, (P, P)),
        ((F, P), None, (F, P)),
        ((), ReviewVerdict.PASS, ()),
    ],
)
def test_a_persons_verdict_counts_over_every_try(tries, verdict, counted):
    assert reviewed_tries(tries, verdict) == counted
