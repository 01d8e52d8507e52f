"""What a completed run leaves in its agent's history (issue 12 "History costs nothing"), on
hand-built runs: the latest results a verdict sums, the arms a baseline is borrowed from, the cost
per model an estimate averages; folded in by a completion or a grade again, taken out by a
delete."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from chalicelib.domain import history
from chalicelib.domain.enums import ArmRole
from chalicelib.domain.history import (
    ArmsRow,
    CostEntry,
    CostRow,
    LatestResult,
    LatestRow,
    row_of_json,
    rows_of,
    verdict_of,
)
from chalicelib.domain.records import Run
from chalicelib.domain.spec import spec_hash
from tests.fakes.ledger import a_run, an_arm, an_arm_result, an_outcome

SCORING = {"required": ["exact"]}


def _done(
    run_id: str,
    completed_at: str,
    *,
    created_at: str | None = None,
    total: int = 2,
    passed: int = 2,
    **fields: Any,
) -> Run:
    """A completed run of version 3 (arm `candidate` on model `m`) over cases c1, c2 of `d`."""
    values: dict[str, Any] = {
        "status": "completed",
        "phase": "done",
        "cases": 2,
        "completed_at": completed_at,
        "created_at": created_at or completed_at,
        "scoring": SCORING,
        "outcome": an_outcome(
            total=total, passed=passed, arms={"candidate": an_arm_result(cases=2)}
        ),
    }
    return a_run(run_id, **{**values, **fields})


# --- latest results --------------------------------------------------------------------------


def test_a_later_completion_replaces_its_evaluation_s_latest_run() -> None:
    row = LatestRow("v3").with_run(_done("r1", "2026-12-01T01:00:00.000Z", passed=1))
    row = row.with_run(_done("r2", "2026-12-01T02:00:00.000Z", passed=2))
    assert [(r.run_id, r.total, r.passed) for r in row.results.values()] == [("r2", 2, 2)]


def test_an_older_run_completing_late_is_the_latest_but_one_that_completed_earlier_is_not() -> None:
    latest = _done("new", "2026-12-01T02:00:00.000Z", created_at="2026-12-01T01:30:00.000Z")
    row = LatestRow("v3").with_run(latest)
    earlier = _done("early", "2026-12-01T01:59:59.999Z", created_at="2026-12-01T00:00:00.000Z")
    assert row.with_run(earlier) == row  # completed before the held one: kept out
    late = _done("late", "2026-12-01T02:00:00.001Z", created_at="2026-12-01T00:00:00.000Z")
    assert [r.run_id for r in row.with_run(late).results.values()] == ["late"]


def test_two_runs_completed_in_the_same_millisecond_keep_the_one_created_later() -> None:
    at = "2026-12-01T02:00:00.000Z"
    older = _done("older", at, created_at="2026-12-01T01:00:00.000Z")
    newer = _done("newer", at, created_at="2026-12-01T01:30:00.000Z")
    for first, second in ((older, newer), (newer, older)):
        row = LatestRow("v3").with_run(first).with_run(second)
        assert [r.run_id for r in row.results.values()] == ["newer"]


def test_a_grade_again_moves_the_latest_run_s_totals_and_no_other_s() -> None:
    row = LatestRow("v3").with_run(_done("r2", "2026-12-01T02:00:00.000Z", total=4, passed=1))
    regraded = _done("r2", "2026-12-01T02:00:00.000Z", total=4, passed=3)
    assert row.with_run(regraded).results["d"].passed == 3
    older_regraded = _done("r1", "2026-12-01T01:00:00.000Z", total=4, passed=4)
    assert row.with_run(older_regraded).results["d"].run_id == "r2"


def test_a_row_holds_its_own_version_or_the_draft_only() -> None:
    v3 = _done("r1", "2026-12-01T01:00:00.000Z")
    draft = _done("r2", "2026-12-01T01:00:00.000Z", draft=True, resolved_version=None)
    assert LatestRow("v2").with_run(v3).results == {}
    assert LatestRow("v3").with_run(draft).results == {}
    assert list(LatestRow("draft").with_run(draft).results) == ["d"]


def test_a_run_that_did_not_complete_leaves_nothing() -> None:
    failed = _done("r1", "2026-12-01T01:00:00.000Z", status="failed")
    assert rows_of(failed) == []
    assert LatestRow("v3").with_run(failed).results == {}


def test_deleting_the_latest_run_vacates_its_evaluation_until_the_next_latest_is_folded_in() -> (
    None
):
    r1 = _done("r1", "2026-12-01T01:00:00.000Z", passed=1)
    r2 = _done("r2", "2026-12-01T02:00:00.000Z", passed=2)
    row = LatestRow("v3").with_run(r1).with_run(r2)
    assert row.vacated_by("r1") is None and row.vacated_by("r2") == "d"
    gone = row.without_run("r2")
    assert gone.results == {}
    assert gone.with_run(r1).results["d"].passed == 1


def test_a_verdict_sums_the_latest_results_and_a_draft_s_is_stale_on_another_spec() -> None:
    results = [
        LatestResult("d1", "r2", "2026-12-01T02:00:00.000Z", "t", total=4, passed=4, spec_hash="h"),
        LatestResult("d2", "r3", "2026-12-01T01:30:00.000Z", "t", total=2, passed=1, spec_hash="x"),
    ]
    totals = verdict_of(results, draft=False, draft_spec_hash="h")
    assert (totals.total, totals.passed, totals.evaluations) == (6, 5, 2)
    assert totals.last_completed_at == "2026-12-01T02:00:00.000Z"
    assert totals.run_ids == ["r2", "r3"] and not totals.stale
    assert verdict_of(results, draft=True, draft_spec_hash="h").stale
    assert not verdict_of(results[:1], draft=True, draft_spec_hash="h").stale
    nothing = verdict_of([], draft=True, draft_spec_hash="h")
    assert (nothing.total, nothing.evaluations, nothing.last_completed_at, nothing.stale) == (
        0,
        0,
        None,
        False,
    )


def test_a_compared_run_s_noise_is_kept_with_its_latest_result_and_summed_as_luck() -> None:
    measured = {"p_luck_regression": 0.25, "sentence": "1 confirmed regression. With ..."}
    outcome = an_outcome(total=2, passed=1, arms={"candidate": an_arm_result(cases=2)})
    compared = _done(
        "r1", "2026-12-01T01:00:00.000Z", outcome=outcome.model_copy(update={"noise": measured})
    )
    [kept] = LatestRow("v3").with_run(compared).results.values()
    assert (kept.p_luck_regression, kept.noise) == (0.25, measured["sentence"])
    # The row as kept and read back carries them too; a row kept before them reads None.
    again = LatestRow.of_json("v3", LatestRow("v3").with_run(compared).as_json())
    assert again.results["d"] == kept
    [alone] = LatestRow("v3").with_run(_done("r2", "2026-12-01T02:00:00.000Z")).results.values()
    assert (alone.p_luck_regression, alone.noise) == (None, None)
    other = replace(kept, dataset_id="d2", run_id="r3", p_luck_regression=0.5, noise=None)
    totals = verdict_of([alone, other, kept], draft=False, draft_spec_hash=None)
    assert [(x.run_id, x.dataset_id, x.p_luck_regression) for x in totals.luck] == [
        ("r1", "d", 0.25),
        ("r3", "d2", 0.5),
    ]
    assert totals.p_luck_regression == 1 - 0.75 * 0.5  # at least one of the two by luck
    assert verdict_of([alone], draft=False, draft_spec_hash=None).p_luck_regression is None


# --- baseline arms ---------------------------------------------------------------------------


def _at(hour: int) -> str:
    return f"2026-12-01T{hour:02d}:00:00.000Z"


def test_an_arms_row_keeps_the_newest_arms_per_condition_newest_first() -> None:
    row = ArmsRow(3, "d")
    for hour in range(history.ARMS_KEPT + 2):
        row = row.with_run(_done(f"r{hour:02d}", _at(hour)))
    other = _done("other-scoring", _at(1), scoring={"required": ["contains"]})
    row = row.with_run(other)
    assert history.ARMS_KEPT == 8
    # r00 and r01 are beyond the newest 8 of their condition; another scoring is its own.
    assert [a.run_id for a in row.arms] == [
        "r09",
        "r08",
        "r07",
        "r06",
        "r05",
        "r04",
        "r03",
        "r02",
        "other-scoring",
    ]


def test_deleting_the_newest_arm_falls_back_to_the_one_before() -> None:
    row = ArmsRow(3, "d").with_run(_done("r1", _at(1))).with_run(_done("r2", _at(2)))
    assert [a.run_id for a in row.without_run("r2").arms] == ["r1"]


def test_only_arms_that_could_be_a_baseline_are_kept() -> None:
    draft_arm = an_arm(version=None, draft=True)
    borrowed = an_arm("baseline", ArmRole.BASELINE, version=3, answers=False)
    incomplete = _done(
        "r3",
        _at(3),
        outcome=an_outcome(arms={"candidate": an_arm_result(cases=2, incomplete=1)}),
    )
    assert ArmsRow(3, "d").with_run(incomplete).arms == ()
    assert history.baseline_arms(_done("r1", _at(1), arms=(draft_arm,))) == []
    both = _done(
        "r2",
        _at(2),
        arms=(an_arm(), borrowed),
        outcome=an_outcome(
            arms={"candidate": an_arm_result(cases=2), "baseline": an_arm_result(cases=2)}
        ),
    )
    assert [a.arm_id for a in ArmsRow(3, "d").with_run(both).arms] == ["candidate"]


def test_a_grade_again_under_another_judge_moves_the_arm_to_that_judge_s_condition() -> None:
    first = _done("r1", _at(1))
    regraded = replace(
        first, outcome=an_outcome(arms={"candidate": an_arm_result(cases=2, judges=("j2",))})
    )
    row = ArmsRow(3, "d").with_run(first).with_run(regraded)
    assert [(a.run_id, a.judge_key) for a in row.arms] == [("r1", "j2")]


# --- cost per model --------------------------------------------------------------------------


def _priced(run_id: str, created_at: str, *arms: tuple[str, str, int, int], **fields: Any) -> Run:
    """A completed run whose arms `(arm_id, model, cost_micros, attempts)` answered here."""
    return _done(
        run_id,
        created_at,
        arms=tuple(an_arm(arm_id, spec={"model": model}) for arm_id, model, _, _ in arms),
        outcome=an_outcome(
            arms={
                arm_id: an_arm_result(cases=2, cost_micros=cost, attempts=n)
                for arm_id, _, cost, n in arms
            }
        ),
        **fields,
    )


def test_an_estimate_averages_the_newest_runs_on_the_model() -> None:
    row = CostRow(history.ANSWERS, "m")
    for run in (
        _priced("r1", _at(1), ("candidate", "m", 900, 3)),
        _priced("r3", _at(3), ("candidate", "m", 100, 2)),
        _priced("r2", _at(2), ("candidate", "m", 60, 4)),  # completes after r3, created before
        _priced("r4", _at(4), ("candidate", "other", 5, 1)),
    ):
        row = row.with_run(run)
    assert [e.run_id for e in row.entries] == ["r3", "r2", "r1"]  # newest created first
    sampled = row.history(2)
    assert sampled is not None
    assert (sampled.cost_micros, sampled.attempts, sampled.runs) == (160, 6, 2)
    everything = row.history(50)
    assert everything is not None
    assert (everything.cost_micros, everything.attempts, everything.runs) == (1060, 9, 3)
    assert CostRow(history.ANSWERS, "m").history(50) is None


def test_two_arms_on_one_model_are_one_run_there_and_a_delete_takes_it_out() -> None:
    run = _priced("r1", _at(1), ("candidate", "m", 10, 2), ("candidate:p", "m", 30, 2))
    row = CostRow(history.ANSWERS, "m").with_run(run)
    assert row.entries == (CostEntry("r1", _at(1), 40, 4),)
    assert row.without_run("r1").entries == ()


def test_the_judge_s_cost_is_kept_per_judge_model() -> None:
    run = _done("r1", _at(1), settings={"judge_model": "j"}, judge_cost_micros=70, judge_calls=7)
    row = CostRow(history.GRADING, "j").with_run(run)
    assert row.entries == (CostEntry("r1", _at(1), 70, 7),)
    assert CostRow(history.GRADING, "other").with_run(run).entries == ()
    unjudged = replace(run, judge_calls=0)
    assert history.grading_cost(unjudged) is None


def test_a_cost_row_keeps_the_newest_runs_only() -> None:
    row = CostRow(history.ANSWERS, "m")
    for i in range(history.COST_RUNS_KEPT + 5):
        at = f"2026-12-01T00:{i // 60:02d}:{i % 60:02d}.000Z"
        row = row.with_run(_priced(f"r{i:04d}", at, ("candidate", "m", 1, 1)))
    assert len(row.entries) == history.COST_RUNS_KEPT
    assert row.entries[0].run_id == f"r{history.COST_RUNS_KEPT + 4:04d}"


# --- every row -------------------------------------------------------------------------------


def test_a_run_names_every_row_it_has_something_in() -> None:
    v2 = {"model": "m2", "prompt": "two"}
    run = _done(
        "r1",
        _at(1),
        arms=(
            an_arm(spec={"model": "m1"}),
            an_arm("baseline", ArmRole.BASELINE, version=2, spec=v2, spec_hash=spec_hash(v2)),
        ),
        outcome=an_outcome(
            arms={"candidate": an_arm_result(cases=2), "baseline": an_arm_result(cases=2)}
        ),
        settings={"judge_model": "j"},
        judge_calls=2,
        judge_cost_micros=8,
    )
    assert [r.key for r in rows_of(run)] == [
        "answers#m1",
        "answers#m2",
        "arms#v2#d",
        "arms#v3#d",
        "grading#j",
        "latest#v3",
    ]


def test_every_row_comes_back_from_its_json() -> None:
    run = _done("r1", _at(1), settings={"judge_model": "j"}, judge_calls=1)
    for empty in rows_of(run):
        row = empty.with_run(run)
        assert row_of_json(row.key, row.as_json()) == row
    unnamed = CostRow(history.ANSWERS, None)
    assert unnamed.key == "answers" and row_of_json("answers", []) == unnamed
