"""Comparison rules with hand-computed values (docs/concepts/verdicts.md, and the per-tag
summaries)."""

from __future__ import annotations

import random

import pytest

from chalicelib.domain.compare import (
    NOTE_UNCONFIRMED_WITHOUT_RERUNS,
    CaseOutcome,
    ComparisonVerdict,
    EfficiencyAxis,
    Flip,
    case_fingerprint,
    compare_arms,
    compare_case,
    comparison_verdict,
    confirmed,
    efficiency_axes,
    efficiency_axis,
    mcnemar,
    rerun_tasks,
    stability,
    summarize_by_tag,
    wilson_interval,
)
from chalicelib.domain.enums import AttemptState as S
from chalicelib.domain.run_rules import AttemptFacts, settle, summarize_arm

P, F, I, U = S.PASSED, S.FAILED, S.INCOMPLETE, S.UNGRADED
REG, FIX = CaseOutcome.REGRESSION, CaseOutcome.FIXED


def tries(case_id: str, *states: S) -> list[AttemptFacts]:
    """A case's attempts on one side, attempt 1 first."""
    return [
        AttemptFacts(case_id=case_id, attempt=n, state=s) for n, s in enumerate(states, start=1)
    ]


def arm(**cases: tuple[S, ...]) -> dict[str, list[AttemptFacts]]:
    return {case_id: tries(case_id, *states) for case_id, states in cases.items()}


def same_fps(*sides: dict[str, list[AttemptFacts]]) -> dict[str, str]:
    return {case_id: "fp" for side in sides for case_id in side}


def compare(candidate, baseline, *, reruns=2, baseline_rerun=True, invalid_reason=None, fps=None):
    fps = fps or same_fps(candidate, baseline)
    return compare_arms(
        candidate,
        baseline,
        candidate_fps=fps,
        baseline_fps=fps,
        baseline_rerun=baseline_rerun,
        reruns_expected=reruns,
        invalid_reason=invalid_reason,
        significance=0.05,
        questions={case_id: f"question {case_id}?" for case_id in fps},
    )


# --- Case outcomes and what makes a case changed ------------------------------------------------


@pytest.mark.parametrize(
    ("cand", "base", "cand_fp", "base_fp", "outcome"),
    [
        (F, P, "a", "a", CaseOutcome.REGRESSION),
        (P, F, "a", "a", CaseOutcome.FIXED),
        (P, P, "a", "a", CaseOutcome.UNCHANGED),
        (F, F, "a", "a", CaseOutcome.UNCHANGED),
        (I, P, "a", "a", CaseOutcome.INCOMPLETE),
        (P, U, "a", "a", CaseOutcome.INCOMPLETE),
        (U, I, "a", "a", CaseOutcome.INCOMPLETE),
        (None, P, "a", "a", CaseOutcome.NOT_COMPARED),
        (F, None, "a", "a", CaseOutcome.NOT_COMPARED),
        (None, None, "a", "b", CaseOutcome.NOT_COMPARED),  # one side missing beats a change
        (F, P, "a", "b", CaseOutcome.CHANGED),  # a changed case is no regression
        (I, P, "a", "b", CaseOutcome.CHANGED),
        (F, P, None, "b", CaseOutcome.REGRESSION),  # an unknown fingerprint cannot differ
    ],
)
def test_a_case_compares_on_first_answers_in_the_rules_order(cand, base, cand_fp, base_fp, outcome):
    assert compare_case(cand, base, candidate_fp=cand_fp, baseline_fp=base_fp) is outcome


CASE = {
    "case_id": "q1",
    "input": "2+2?",
    "history": [{"role": "user", "content": "hi"}],
    "reference": "4",
    "counter_example": "5",
    "expected_calls": [{"name": "calc", "arguments": {"x": 2}}],
    "checks": [{"scorer": "regex", "pattern": "^4$"}],
    "tags": ["maths"],
    "note": "easy",
    "split": "train",
    "metadata": {"source": "gsm8k"},
}


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("tags", ["maths", "easy"]),
        ("note", "now with a note"),
        ("split", "holdout"),
        ("metadata", {}),
        ("case_id", "renamed"),
    ],
)
def test_editing_tags_note_split_or_metadata_does_not_change_the_case(key, value):
    assert case_fingerprint({**CASE, key: value}) == case_fingerprint(CASE)


@pytest.mark.parametrize(
    ("key", "value"),
    [
        ("input", "2+3?"),
        ("history", []),
        ("reference", "four"),
        ("counter_example", None),
        ("expected_calls", [{"name": "calc", "arguments": {"x": 3}}]),
        ("checks", [{"scorer": "regex", "pattern": "^4\\.?$"}]),  # tightening a check is a change
    ],
)
def test_editing_what_defines_the_case_changes_its_fingerprint(key, value):
    assert case_fingerprint({**CASE, key: value}) != case_fingerprint(CASE)


def test_the_fingerprint_ignores_key_order_and_treats_absent_parts_as_their_defaults():
    assert case_fingerprint(dict(reversed(list(CASE.items())))) == case_fingerprint(CASE)
    assert case_fingerprint({"input": "x"}) == case_fingerprint(
        {
            "input": "x",
            "history": [],
            "reference": None,
            "counter_example": None,
            "expected_calls": [],
            "checks": [],
        }
    )
    assert len(case_fingerprint({})) == 64


# --- Confirmation -----------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("outcome", "cand_reruns", "base_reruns", "held"),
    [
        (REG, [F, F], [P, P], True),
        (REG, [F, P], [P, P], False),  # the candidate held on 1 of 2 reruns
        (REG, [F, F], [P, F], False),  # the baseline held on 1 of 2 reruns
        (REG, [F, I], [P, P], False),  # an undecided rerun does not hold
        (REG, [F, F], [P, U], False),
        (REG, [], [P, P], False),  # no candidate rerun confirms nothing
        (REG, [F, F], [], False),  # a baseline that should have been rerun and was not
        (REG, [F, F], None, True),  # the baseline is the candidate earlier: not rerun
        (REG, [F, P], None, False),
        (REG, [F], [P], True),  # one rerun each is enough when it holds
        (FIX, [P, P], [F, F], True),
        (FIX, [P, F], [F, F], False),
        (FIX, [P, P], [F, P], False),
        (FIX, [P, P], None, True),
        (FIX, [P, P, P, I], [F, F, F, F], False),
        (CaseOutcome.UNCHANGED, [P, P], [P, P], False),
        (CaseOutcome.INCOMPLETE, [F, F], [P, P], False),
    ],
)
def test_a_flip_is_confirmed_only_when_every_rerun_of_both_sides_holds(
    outcome, cand_reruns, base_reruns, held
):
    assert confirmed(outcome, cand_reruns, base_reruns) is held


@pytest.mark.parametrize(
    ("states", "settled"),
    [
        ([P, F], I),  # a tie of decided tries settles incomplete
        ([F, P, P], P),
        ([P, F, F], F),
        ([P, F, I, I], I),
        ([I, U, P], P),
    ],
)
def test_a_case_settles_by_the_majority_of_its_decided_tries_and_a_tie_is_incomplete(
    states, settled
):
    assert settle(states) is settled


# --- Verdict and McNemar ----------------------------------------------------------------------


@pytest.mark.parametrize(
    ("regressions", "fixes", "invalid", "word"),
    [
        (1, 0, False, "worse"),
        (3, 0, False, "worse"),
        (0, 1, False, "better"),
        (1, 9, False, "mixed"),
        (0, 0, False, "no_difference"),
        (4, 2, True, "invalid"),
        (0, 0, True, "invalid"),
    ],
)
def test_the_verdict_rests_on_confirmed_flips_only(regressions, fixes, invalid, word):
    assert comparison_verdict(regressions, fixes, invalid=invalid) == word
    assert comparison_verdict(regressions, fixes, invalid=invalid) is ComparisonVerdict(word)


@pytest.mark.parametrize(
    ("b", "c", "p", "overall"),
    [
        (0, 5, 0.0625, None),  # 2 * (1/2)^5: too few to tell apart at 0.05
        (0, 6, 0.03125, "better"),  # 2 * (1/2)^6
        (6, 0, 0.03125, "worse"),
        (1, 1, 1.0, None),
        (1, 7, 0.0703125, None),  # 2 * (1 + 8) / 256
        (0, 0, None, None),  # no flip: no test, no exception
    ],
)
def test_mcnemar_is_the_exact_binomial_test_over_the_confirmed_flips(b, c, p, overall):
    p_value, word = mcnemar(b, c, 0.05)
    assert p_value == (pytest.approx(p, abs=1e-12) if p is not None else None)
    assert word == overall


def test_mcnemar_needs_p_strictly_below_the_significance():
    assert mcnemar(0, 6, 0.03125) == (0.03125, None)


def test_mcnemar_refuses_negative_counts():
    with pytest.raises(ValueError):
        mcnemar(-1, 2, 0.05)


# --- Wilson intervals --------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("passed", "n", "low", "high"),
    [
        (8, 10, 0.4902, 0.9433),  # centre (0.8 + 1.9208/10) / 1.38415 = 0.71674, half 0.22657
        (0, 10, 0.0, 0.2775),  # upper = (z²/n) / (1 + z²/n) = 0.38415 / 1.38415
        (10, 10, 0.7225, 1.0),
        (1, 2, 0.0945, 0.9055),
        (50, 100, 0.4038, 0.5962),
    ],
)
def test_wilson_interval_matches_hand_computed_values(passed, n, low, high):
    lo, hi = wilson_interval(passed, n)
    assert (round(lo, 4), round(hi, 4)) == (low, high)


def test_wilson_interval_ends_exactly_at_zero_and_one_and_has_none_without_decided_cases():
    assert wilson_interval(0, 10)[0] == 0.0
    assert wilson_interval(10, 10)[1] == 1.0
    assert wilson_interval(0, 0) is None
    with pytest.raises(ValueError):
        wilson_interval(11, 10)


# --- Efficiency --------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("cand", "base", "axis"),
    [
        (5.0, 4.0, EfficiencyAxis.UNCHANGED),  # +0.25 exactly: at the edge is within it
        (5.25, 4.0, EfficiencyAxis.WORSE),  # +0.3125
        (3.0, 4.0, EfficiencyAxis.UNCHANGED),  # -0.25 exactly
        (2.75, 4.0, EfficiencyAxis.BETTER),  # -0.3125
        (4.0, 4.0, EfficiencyAxis.UNCHANGED),
        (0.0, 0.0, EfficiencyAxis.UNCHANGED),
        (0.001, 0.0, EfficiencyAxis.WORSE),  # any positive increase from a zero baseline
        (None, 4.0, None),
        (4.0, None, None),
    ],
)
def test_an_efficiency_axis_moves_only_past_the_tolerance(cand, base, axis):
    assert efficiency_axis(cand, base, 0.25) is axis


def test_efficiency_axes_read_cost_per_passed_case_tokens_and_latency():
    cheap = [
        AttemptFacts("a", 1, P, cost_micros=100, input_tokens=10, output_tokens=10, latency_ms=100),
        AttemptFacts("b", 1, P, cost_micros=100, input_tokens=10, output_tokens=10, latency_ms=100),
    ]
    costly = [
        AttemptFacts("a", 1, P, cost_micros=300, input_tokens=10, output_tokens=10, latency_ms=50),
        AttemptFacts("b", 1, F, cost_micros=100, input_tokens=10, output_tokens=11, latency_ms=50),
    ]
    axes = efficiency_axes(
        summarize_arm(costly, ["a", "b"]), summarize_arm(cheap, ["a", "b"]), 0.05
    )
    assert axes == {
        "cost_per_passed_case_micros": EfficiencyAxis.WORSE,  # 400 / 1 against 200 / 2
        "tokens_per_case": EfficiencyAxis.UNCHANGED,  # 20.5 against 20: +2.5 %
        "latency_p50_ms": EfficiencyAxis.BETTER,
        "latency_p95_ms": EfficiencyAxis.BETTER,
    }


# --- Two arms end to end -----------------------------------------------------------------------


def six_cases():
    baseline = arm(r1=(P, P, P), r2=(P, P, P), f1=(F, F, F), ch=(P,), un=(P,))
    candidate = arm(r1=(F, F, F), r2=(F, F, P), f1=(P, P, P), ch=(F,), nc=(P,), un=(P,))
    fps = {"r1": "1", "r2": "2", "f1": "3", "nc": "5", "un": "6"}
    return candidate, baseline, fps


def test_six_hand_built_cases_give_a_mixed_verdict_with_no_overall():
    candidate, baseline, fps = six_cases()
    result = compare_arms(
        candidate,
        baseline,
        candidate_fps={**fps, "ch": "4-now"},
        baseline_fps={**fps, "ch": "4"},
        baseline_rerun=True,
        reruns_expected=2,
        invalid_reason=None,
        significance=0.05,
        questions={"r1": "Who?", "r2": "What?", "f1": "Where?"},
    )
    assert result.as_dict() == {
        "verdict": "mixed",
        "overall": None,
        "p_value": 1.0,  # b = c = 1
        "invalid_reason": None,
        "counts": {
            "regression": 2,
            "fixed": 1,
            "unchanged": 1,
            "incomplete": 0,
            "not_compared": 1,
            "changed": 1,
        },
        "confirmed_regressions": 1,
        "confirmed_fixes": 1,
        "flips": [
            {
                "case_id": "r1",
                "outcome": "regression",
                "confirmed": True,
                "question": "Who?",
                "candidate_tries": ["failed", "failed", "failed"],
                "baseline_tries": ["passed", "passed", "passed"],
            },
            {
                "case_id": "r2",
                "outcome": "regression",
                "confirmed": False,
                "question": "What?",
                "candidate_tries": ["failed", "failed", "passed"],
                "baseline_tries": ["passed", "passed", "passed"],
            },
            {
                "case_id": "f1",
                "outcome": "fixed",
                "confirmed": True,
                "question": "Where?",
                "candidate_tries": ["passed", "passed", "passed"],
                "baseline_tries": ["failed", "failed", "failed"],
            },
        ],
        "pass_rate_before": 0.8,  # r1 r2 ch un passed, f1 failed
        "pass_rate_after": 0.5,  # f1 nc un passed; r1, r2 (2 of 3 failed) and ch failed
        "first_pass_rate_before": 0.8,
        "first_pass_rate_after": 0.5,
        "interval_before": list(wilson_interval(4, 5)),
        "interval_after": list(wilson_interval(3, 6)),
        "notes": [],
    }
    assert result.outcomes == {
        "r1": REG,
        "r2": REG,
        "f1": FIX,
        "ch": CaseOutcome.CHANGED,
        "nc": CaseOutcome.NOT_COMPARED,
        "un": CaseOutcome.UNCHANGED,
    }
    assert result.flips[0] == Flip("r1", REG, True, "Who?", (F, F, F), (P, P, P))


def test_an_invalid_comparison_gives_no_verdict_and_confirms_no_flip():
    candidate, baseline, _ = six_cases()
    result = compare(candidate, baseline, invalid_reason="judge_changed")
    assert result.verdict is ComparisonVerdict.INVALID
    assert (
        result.confirmed_regressions,
        result.confirmed_fixes,
        result.overall,
        result.p_value,
    ) == (0, 0, None, None)
    assert not any(f.confirmed for f in result.flips)
    assert (
        result.counts[REG] == 3 and result.invalid_reason == "judge_changed"
    )  # ch: same fingerprints here
    assert result.notes == ()  # its flips say nothing about the agent


def test_a_baseline_that_is_the_candidate_earlier_is_confirmed_by_the_candidates_reruns_alone():
    result = compare(arm(a=(F, F, F)), arm(a=(P,)), baseline_rerun=False)
    assert result.verdict is ComparisonVerdict.WORSE and result.flips[0].confirmed


def test_a_rerun_that_never_came_back_confirms_nothing():
    result = compare(arm(a=(F, F)), arm(a=(P, P)), reruns=2)
    assert result.verdict is ComparisonVerdict.NO_DIFFERENCE and not result.flips[0].confirmed


def test_a_run_compared_without_reruns_confirms_no_flip_and_says_so():
    result = compare(arm(a=(F,), b=(F,), c=(F,)), arm(a=(P,), b=(P,), c=(P,)), reruns=0)
    assert result.verdict is ComparisonVerdict.NO_DIFFERENCE
    assert result.notes == (
        NOTE_UNCONFIRMED_WITHOUT_RERUNS,
        "Nothing held, but 3 cases changed once.",
        "The pass rates are 100 points apart.",
    )


def test_nothing_held_is_noted_from_three_flips_and_not_from_two():
    three = compare(
        arm(a=(F, F, P), b=(F, P, F), c=(P, P, F)), arm(a=(P, P, P), b=(P, P, P), c=(F, F, F))
    )
    two = compare(arm(a=(F, F, P), b=(F, P, F)), arm(a=(P, P, P), b=(P, P, P)))
    assert three.verdict is two.verdict is ComparisonVerdict.NO_DIFFERENCE
    assert "Nothing held, but 3 cases changed once." in three.notes
    assert not any(n.startswith("Nothing held") for n in two.notes)


def test_pass_rates_twenty_points_apart_are_noted_even_where_floats_make_it_nineteen_point_nine():
    ids = [f"c{i}" for i in range(10)]
    baseline = {cid: tries(cid, P if i < 5 else F) for i, cid in enumerate(ids)}  # 5 of 10
    candidate = {cid: tries(cid, P if i < 7 else F) for i, cid in enumerate(ids)}  # 7 of 10
    assert 0.7 - 0.5 < 0.2  # the float trap
    result = compare(candidate, baseline, reruns=0)
    assert "The pass rates are 20 points apart." in result.notes
    closer = {cid: tries(cid, P if i < 6 else F) for i, cid in enumerate(ids)}  # 6 of 10
    assert not any("points apart" in n for n in compare(closer, baseline, reruns=0).notes)


def test_a_confirmed_flip_silences_the_nothing_held_and_pass_rate_notes():
    result = compare(
        arm(a=(F, F, F), b=(F, P, F), c=(F, F, P)), arm(a=(P, P, P), b=(P, P, P), c=(P, P, P))
    )
    assert result.verdict is ComparisonVerdict.WORSE and result.notes == ()


def test_a_tie_of_tries_leaves_a_case_undecided_in_the_pass_rate():
    result = compare(arm(a=(F, P), b=(P,)), arm(a=(P, P), b=(P,)), reruns=1)
    assert result.flips[0].confirmed is False
    assert (result.pass_rate_after, result.first_pass_rate_after) == (1.0, 0.5)  # a tied: undecided


def test_a_deterministic_regression_of_six_cases_is_worse_and_names_those_six():
    ids = [f"c{i:02d}" for i in range(20)]
    broken = set(ids[3:9])
    baseline = {cid: tries(cid, P, P, P) if cid in broken else tries(cid, P) for cid in ids}
    candidate = {cid: tries(cid, F, F, F) if cid in broken else tries(cid, P) for cid in ids}
    result = compare(candidate, baseline)
    assert result.verdict is ComparisonVerdict.WORSE and result.overall is ComparisonVerdict.WORSE
    assert result.p_value == pytest.approx(0.03125)
    assert [f.case_id for f in result.flips if f.confirmed] == sorted(broken)
    assert [f.question for f in result.flips] == [f"question {cid}?" for cid in sorted(broken)]


def flaky_against_itself(seed: int, cases: int = 40, reruns: int = 2):
    """An agent that changed nothing and passes each try with probability one half, on both sides.

    Each case draws the baseline's tries 1..3, then the candidate's 1..3, from
    `random.Random(seed)`; only a case whose first answers flipped keeps its reruns, as a run would
    ask only those again.
    """
    rng = random.Random(seed)
    candidate, baseline = {}, {}
    for i in range(cases):
        cid = f"c{i:02d}"
        draws = [P if rng.random() < 0.5 else F for _ in range(2 * (reruns + 1))]
        base, cand = draws[: reruns + 1], draws[reruns + 1 :]
        keep = reruns + 1 if base[0] != cand[0] else 1
        baseline[cid], candidate[cid] = tries(cid, *base[:keep]), tries(cid, *cand[:keep])
    return compare(candidate, baseline, reruns=reruns)


def test_a_flaky_agent_against_itself_flips_often_and_confirms_about_one_flip_in_sixteen():
    # Per case: P(flip) = 1/2; a flip confirms when 2 candidate reruns and 2 baseline reruns all
    # hold, (1/2)^4 = 1/16. Over 40 cases: 20 flips and 1.25 confirmed flips expected, so the
    # verdict is no_difference only with probability (31/32)^40 ≈ 0.28 - yet McNemar cannot tell
    # the sides apart from so few. Seed 7 happens to draw 17 flips and confirm 3 of them.
    result = flaky_against_itself(7)
    assert (result.counts[REG], result.counts[FIX], result.counts[CaseOutcome.UNCHANGED]) == (
        11,
        6,
        23,
    )
    assert (result.confirmed_regressions, result.confirmed_fixes) == (2, 1)
    assert result.verdict is ComparisonVerdict.MIXED
    assert (result.overall, result.p_value) == (None, 1.0)


def test_over_200_seeds_a_flaky_agent_confirms_a_sixteenth_of_its_flips_and_never_an_overall():
    results = [flaky_against_itself(seed) for seed in range(200)]
    flips = sum(len(r.flips) for r in results)
    held = sum(r.confirmed_regressions + r.confirmed_fixes for r in results)
    quiet = sum(r.verdict is ComparisonVerdict.NO_DIFFERENCE for r in results)
    assert 3800 <= flips <= 4200  # 200 * 20 expected, sd ≈ 45
    assert 0.05 <= held / flips <= 0.075  # 1/16 = 0.0625, sd ≈ 0.004
    assert 36 <= quiet <= 76  # 200 * 0.281 = 56, sd ≈ 6.4
    assert all(r.overall is None for r in results)


# --- Confirming tasks --------------------------------------------------------------------------


def test_rerun_tasks_put_every_side_of_a_case_side_by_side_attempt_by_attempt():
    assert rerun_tasks(["b", "d", "b"], ["cand-1", "cand-2"], "base", 2) == [
        ("cand-1", "b", 2),
        ("cand-2", "b", 2),
        ("base", "b", 2),
        ("cand-1", "b", 3),
        ("cand-2", "b", 3),
        ("base", "b", 3),
        ("cand-1", "d", 2),
        ("cand-2", "d", 2),
        ("base", "d", 2),
        ("cand-1", "d", 3),
        ("cand-2", "d", 3),
        ("base", "d", 3),
    ]


def test_a_baseline_that_is_the_candidate_earlier_is_not_rerun_and_no_reruns_means_no_tasks():
    assert rerun_tasks(["a"], ["cand"], None, 2) == [("cand", "a", 2), ("cand", "a", 3)]
    assert rerun_tasks(["a"], ["cand"], "base", 0) == []
    with pytest.raises(ValueError):
        rerun_tasks(["a"], ["cand"], "base", -1)


# --- Stability ---------------------------------------------------------------------------------


def steady(n: int, unstable: int) -> dict[str, list[S]]:
    return {f"c{i}": [P, F] if i < unstable else [P, P] for i in range(n)}


@pytest.mark.parametrize(
    ("asked", "unstable", "noisy"),
    [
        (10, 1, False),  # 1 < 2 and 1 < 10/5
        (10, 2, True),  # as many as two
        (5, 1, True),  # a fifth of those asked
        (6, 1, False),  # 1 < 6/5
        (1, 1, True),
        (100, 2, True),
        (3, 0, False),
        (0, 0, False),
    ],
)
def test_answers_are_noisy_from_two_unstable_cases_or_a_fifth_of_those_asked(
    asked, unstable, noisy
):
    assert stability(steady(asked, unstable)) == {
        "asked": asked,
        "unstable": unstable,
        "noisy": noisy,
    }


def test_only_a_case_with_a_graded_first_answer_and_a_graded_re_ask_counts():
    result = stability(
        {
            "first-ungraded": [U, P],
            "first-incomplete": [I, F],
            "re-ask-undecided": [P, I, U],
            "never-re-asked": [F],
            "counted-steady": [F, I, F],
            "counted-unstable": [F, U, P],
        }
    )
    assert result == {"asked": 2, "unstable": 1, "noisy": True}


# --- Per tag -----------------------------------------------------------------------------------


def test_each_tag_summarises_the_cases_carrying_it_and_a_case_counts_under_each_of_its_tags():
    attempts = arm(a=(P,), b=(F, P, P), c=(F,))
    by_tag = summarize_by_tag(
        attempts, {"a": ["maths", "easy", "maths"], "b": ["maths"], "c": [], "d": ["easy"]}
    )
    assert list(by_tag) == ["easy", "maths"]
    assert (by_tag["maths"].cases, by_tag["maths"].passed, by_tag["maths"].pass_rate) == (2, 2, 1.0)
    assert by_tag["maths"].first_pass_rate == 0.5
    assert (by_tag["easy"].cases, by_tag["easy"].passed, by_tag["easy"].incomplete) == (
        2,
        1,
        1,
    )  # d unanswered
