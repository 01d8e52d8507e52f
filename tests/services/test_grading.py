"""Grading again, on fakes (docs/concepts/verdicts.md): one grader at a time per run, and an outcome
computed again only on grades that did not move meanwhile."""

from __future__ import annotations

from dataclasses import replace
from types import SimpleNamespace

import pytest

from chalicelib.clock import epoch_ms
from chalicelib.domain.identity import Identity
from chalicelib.errors import ConflictError
from chalicelib.services import grading
from tests.fakes import START, FakeContainer
from tests.fakes.ledger import a_run, an_attempt, an_outcome

ACME = Identity("acme", "ana")
NOW_MS = epoch_ms(START)


@pytest.fixture
def c() -> FakeContainer:
    return FakeContainer(
        datasets=SimpleNamespace(cases=lambda *_: [], get_case=lambda *_: {"tags": []}),
        secrets=SimpleNamespace(values=lambda _org: []),
    )


def test_a_run_graded_by_somebody_else_is_refused_until_their_claim_lapses(
    c: FakeContainer,
) -> None:
    c.runs.add(a_run(status="completed", grading_until_ms=NOW_MS + 5_000))
    with pytest.raises(ConflictError, match="graded again by somebody else"):
        grading.grade_again(c, ACME, "r1")
    assert c.runs.get_for_org("acme", "r1").grading_until_ms == NOW_MS + 5_000  # their claim stands
    c.clock.advance(seconds=6)
    result = grading.grade_again(c, ACME, "r1")
    assert (result.graded, result.pending) == (0, [])
    assert c.runs.get_for_org("acme", "r1").grading_until_ms is None  # ours is given back


def test_the_claim_lasts_the_grading_time_and_ten_seconds(c: FakeContainer) -> None:
    c.runs.add(a_run(status="completed"))
    seen: list[int | None] = []
    c.datasets.cases = lambda *_: (
        seen.append(c.runs.get_for_org("acme", "r1").grading_until_ms) or []
    )
    grading.grade_again(c, ACME, "r1")
    assert seen == [NOW_MS + int((c.settings.assay_grade_again_seconds + 10) * 1000)]


def test_a_running_run_is_not_graded_again(c: FakeContainer) -> None:
    c.runs.add(a_run(status="running"))
    with pytest.raises(ConflictError, match="still running"):
        grading.grade_again(c, ACME, "r1")
    assert c.runs.get_for_org("acme", "r1").grading_until_ms is None


def test_an_outcome_computed_on_grades_that_moved_meanwhile_is_computed_again(
    c: FakeContainer,
) -> None:
    c.runs.add(
        a_run(cases=2, status="completed", regrades=1, outcome=an_outcome(total=2, passed=0))
    )
    c.runs.add_attempt("acme", an_attempt("c1", "passed"))
    c.runs.add_attempt("acme", an_attempt("c2", "failed"))

    def another_grader() -> None:  # grades c2 again (passed now) between our read and our write
        c.runs.add_attempt("acme", an_attempt("c2", "passed"))
        c.runs.set("acme", "r1", regrades=2)

    c.runs.meanwhile.append(another_grader)
    grading.recompute_outcome(c, "acme", "r1", pause=lambda: None)
    outcome = c.runs.get_for_org("acme", "r1").outcome
    assert outcome is not None and (outcome.passed, outcome.failed, outcome.verdict) == (
        2,
        0,
        "pass",
    )


def test_an_outcome_that_keeps_losing_gives_up_with_a_conflict(c: FakeContainer) -> None:
    c.runs.add(a_run(cases=1, status="completed", outcome=an_outcome(passed=0)))
    c.runs.add_attempt("acme", an_attempt("c1", "passed"))
    regrades = iter(range(1, 100))
    c.runs.meanwhile.extend(
        lambda: c.runs.set("acme", "r1", regrades=next(regrades))
        for _ in range(grading.RECOMPUTE_TRIES)
    )
    with pytest.raises(ConflictError, match="keeps being graded again"):
        grading.recompute_outcome(c, "acme", "r1", pause=lambda: None)
    assert c.runs.get_for_org("acme", "r1").outcome == an_outcome(passed=0)


def test_a_regrade_moves_the_run_s_counters_with_the_attempt(c: FakeContainer) -> None:
    c.runs.add(a_run(cases=1, status="completed", failed=1, judge_cost_micros=5, judge_calls=1))
    before = an_attempt("c1", "failed", judge_cost_micros=5, judge_calls=1)
    c.runs.add_attempt("acme", before)
    after = replace(
        before, state="passed", judge_cost_micros=12, judge_calls=2, regraded=[{"by": "ana"}]
    )
    assert c.runs.regrade("acme", before, after)
    assert not c.runs.regrade(
        "acme", before, after
    )  # graded meanwhile: the grade is not `before`'s
    run = c.runs.get_for_org("acme", "r1")
    assert (run.failed, run.passed, run.judge_cost_micros, run.judge_calls, run.regrades) == (
        0,
        1,
        12,
        2,
        1,
    )
