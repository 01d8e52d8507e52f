"""What a run will cost before it starts (docs/guides/costs.md).

Every expected figure is hand-computed; the comment beside it shows the arithmetic.
"""

from __future__ import annotations

from dataclasses import replace
from fractions import Fraction

import pytest

from chalicelib.domain.estimate_rules import (
    ArmEstimate,
    ArmPlan,
    Basis,
    CostHistory,
    JudgePlan,
    estimate,
    fits,
    remaining_after,
    round_half_up,
    unit_cost,
)

PRICE = {"input_per_mtok_usd": "0.15", "output_per_mtok_usd": "0.60"}
FALLBACK = {
    "fallback_input_tokens": 2000,
    "fallback_output_tokens": 400,
    "fallback_case_micros": 50_000,
}

CAND = ArmPlan(
    arm_id="candidate", role="candidate", model="m", per_case=Fraction(30_000), basis=Basis.HISTORY
)
BASE = ArmPlan(
    arm_id="baseline", role="baseline", model="m", per_case=Fraction(540), basis=Basis.FALLBACK
)
JUDGE = JudgePlan(per_call=Fraction(120), basis=Basis.HISTORY, judged_cases=20)


# --- unit_cost ------------------------------------------------------------------------------------


def test_history_is_the_average_cost_per_attempt():
    # 1_230_000 micros / 41 attempts = 30_000 per case
    assert unit_cost(
        CostHistory(cost_micros=1_230_000, attempts=41, runs=3), PRICE, **FALLBACK
    ) == (Fraction(30_000), Basis.HISTORY)


def test_history_average_is_kept_exact():
    # 10 micros / 3 attempts = 10/3, not 3 or 3.33
    assert unit_cost(CostHistory(cost_micros=10, attempts=3, runs=1), None, **FALLBACK) == (
        Fraction(10, 3),
        Basis.HISTORY,
    )


def test_no_history_prices_a_typical_case_at_the_models_price():
    # 2000 in x 0.15 + 400 out x 0.60 = 300 + 240 = 540 micros per case
    assert unit_cost(None, PRICE, **FALLBACK) == (Fraction(540), Basis.FALLBACK)


def test_history_with_no_attempts_is_no_history():
    # attempts 0 -> price: 300 + 240 = 540
    assert unit_cost(CostHistory(cost_micros=0, attempts=0, runs=0), PRICE, **FALLBACK) == (
        Fraction(540),
        Basis.FALLBACK,
    )


def test_a_history_that_cost_nothing_with_no_price_is_no_history():
    # Nothing priced those answers: the model is estimated as unpriced, as before its first run.
    unpriced = CostHistory(cost_micros=0, attempts=20, runs=1)
    assert unit_cost(unpriced, None, **FALLBACK) == (Fraction(50_000), Basis.FALLBACK)
    assert unit_cost(unpriced, {}, **FALLBACK) == unit_cost(None, None, **FALLBACK)
    # A zero price says the model is free, so its history of nothing is believed.
    free = {"input_per_mtok_usd": "0", "output_per_mtok_usd": "0"}
    assert unit_cost(unpriced, free, **FALLBACK) == (Fraction(0), Basis.HISTORY)
    # A cost the agent reported itself is a history even with no price.
    reported = CostHistory(cost_micros=40, attempts=20, runs=1)
    assert unit_cost(reported, None, **FALLBACK) == (Fraction(2), Basis.HISTORY)


def test_a_priced_fallback_is_not_rounded():
    # 1 in x 0.15 + 1 out x 0.60 = 0.75 micros = 3/4
    got = unit_cost(
        None, PRICE, fallback_input_tokens=1, fallback_output_tokens=1, fallback_case_micros=50_000
    )
    assert got == (Fraction(3, 4), Basis.FALLBACK)


def test_a_price_with_one_side_missing_counts_that_side_as_free():
    # 2000 in x 0.15 + 400 out x 0 = 300
    assert unit_cost(None, {"input_per_mtok_usd": "0.15"}, **FALLBACK) == (
        Fraction(300),
        Basis.FALLBACK,
    )


def test_an_unpriced_model_costs_the_flat_fallback():
    # nothing prices it -> EVAL_FALLBACK_CASE_COST_USD = 50_000 micros
    assert unit_cost(None, None, **FALLBACK) == (Fraction(50_000), Basis.FALLBACK)
    assert unit_cost(None, {}, **FALLBACK) == (Fraction(50_000), Basis.FALLBACK)


@pytest.mark.parametrize(
    "price, field",
    [
        (
            {"input_per_mtok_usd": "cheap", "output_per_mtok_usd": "0.60"},
            "price.input_per_mtok_usd",
        ),
        (
            {"input_per_mtok_usd": "0.15", "output_per_mtok_usd": "-0.60"},
            "price.output_per_mtok_usd",
        ),
        ({"input_per_mtok_usd": "NaN"}, "price.input_per_mtok_usd"),
    ],
)
def test_a_malformed_price_raises_naming_the_field(price, field):
    with pytest.raises(ValueError, match=field):
        unit_cost(None, price, **FALLBACK)


def test_negative_fallback_inputs_raise():
    for bad in (
        {"fallback_input_tokens": -1},
        {"fallback_output_tokens": -1},
        {"fallback_case_micros": -1},
    ):
        with pytest.raises(ValueError):
            unit_cost(None, None, **{**FALLBACK, **bad})


# --- estimate: first pass -------------------------------------------------------------------------


def test_a_lone_candidate_costs_cases_times_per_case():
    # 20 cases x 30_000 = 600_000; no baseline -> ceiling 0 even with reruns
    est = estimate(cases=20, arms=[CAND], judge=None, reruns=2)
    assert est.arms == (
        ArmEstimate(
            arm_id="candidate",
            role="candidate",
            model="m",
            basis=Basis.HISTORY,
            per_case_micros=30_000,
            first_pass_micros=600_000,
            rerun_ceiling_micros=0,
        ),
    )
    assert (est.first_pass_micros, est.rerun_ceiling_micros, est.total_micros) == (
        600_000,
        0,
        600_000,
    )
    assert (est.judge_first_pass_micros, est.judge_rerun_ceiling_micros) == (0, 0)
    assert est.basis is Basis.HISTORY


def test_no_baseline_means_nothing_can_flip_so_the_ceiling_is_zero():
    # first: 20 x 30_000 = 600_000 + judge 20 x 1 arm x 120 = 2_400 -> 602_400; ceiling 0
    est = estimate(cases=20, arms=[CAND], judge=JUDGE, reruns=2)
    assert (est.judge_first_pass_micros, est.judge_rerun_ceiling_micros) == (2_400, 0)
    assert (est.first_pass_micros, est.rerun_ceiling_micros, est.total_micros) == (
        602_400,
        0,
        602_400,
    )


def test_candidate_and_baseline_with_a_judge():
    est = estimate(cases=20, arms=[CAND, BASE], judge=JUDGE, reruns=2)
    cand, base = est.arms
    assert cand.first_pass_micros == 600_000  # 20 x 30_000
    assert base.first_pass_micros == 10_800  # 20 x 540
    assert est.judge_first_pass_micros == 4_800  # 20 judged x 2 answering arms x 120
    assert est.first_pass_micros == 615_600  # 600_000 + 10_800 + 4_800
    assert cand.rerun_ceiling_micros == 1_200_000  # 20 x 2 reruns x 30_000
    assert base.rerun_ceiling_micros == 21_600  # 20 x 2 reruns x 540
    assert (
        est.judge_rerun_ceiling_micros == 9_600
    )  # 20 x 2 reruns x (1 candidate + 1 baseline) x 120
    assert est.rerun_ceiling_micros == 1_231_200  # 1_200_000 + 21_600 + 9_600
    assert est.total_micros == 1_846_800  # 615_600 + 1_231_200
    assert (base.basis, base.per_case_micros) == (Basis.FALLBACK, 540)
    assert est.basis is Basis.FALLBACK  # the answering baseline is a rough guess


def test_a_reused_baseline_costs_nothing_first_but_is_in_the_ceiling():
    reused = replace(BASE, answers=False)
    est = estimate(cases=20, arms=[CAND, reused], judge=JUDGE, reruns=2)
    _, base = est.arms
    assert base.first_pass_micros == 0  # its first answers are borrowed
    assert est.judge_first_pass_micros == 2_400  # 20 judged x 1 answering arm x 120
    assert est.first_pass_micros == 602_400  # 600_000 + 0 + 2_400
    assert base.rerun_ceiling_micros == 21_600  # 20 x 2 reruns x 540, reused or not
    assert est.judge_rerun_ceiling_micros == 9_600  # 20 x 2 x (1 + 1 rerun baseline) x 120
    assert est.rerun_ceiling_micros == 1_231_200  # 1_200_000 + 21_600 + 9_600
    assert est.total_micros == 1_833_600  # 602_400 + 1_231_200
    assert base.basis is Basis.REUSED
    assert est.basis is Basis.HISTORY  # the reused arm's guess answers nothing now


def test_a_baseline_that_is_the_candidate_itself_is_never_rerun():
    itself = replace(BASE, rerun=False)
    est = estimate(cases=20, arms=[CAND, itself], judge=JUDGE, reruns=2)
    assert est.arms[1].first_pass_micros == 10_800  # 20 x 540: it still answers first
    assert est.first_pass_micros == 615_600  # 600_000 + 10_800 + judge 20 x 2 x 120 = 4_800
    assert est.arms[1].rerun_ceiling_micros == 0
    assert est.judge_rerun_ceiling_micros == 4_800  # 20 x 2 reruns x 1 candidate x 120
    assert est.rerun_ceiling_micros == 1_204_800  # 1_200_000 + 0 + 4_800
    assert est.total_micros == 1_820_400  # 615_600 + 1_204_800


def test_a_reused_baseline_that_is_never_rerun_costs_nothing_at_all():
    est = estimate(
        cases=20, arms=[CAND, replace(BASE, answers=False, rerun=False)], judge=JUDGE, reruns=2
    )
    assert (est.arms[1].first_pass_micros, est.arms[1].rerun_ceiling_micros) == (0, 0)
    assert est.first_pass_micros == 602_400  # 600_000 + judge 20 x 1 x 120 = 2_400
    assert (
        est.rerun_ceiling_micros == 1_204_800
    )  # 20 x 2 x 30_000 = 1_200_000 + judge 20 x 2 x 1 x 120 = 4_800


def test_two_candidates_and_a_baseline_with_a_judge_on_some_cases():
    a = replace(CAND, arm_id="a")
    b = ArmPlan(
        arm_id="b", role="candidate", model="b", per_case=Fraction(540), basis=Basis.FALLBACK
    )
    base = replace(BASE, per_case=Fraction(10_000), basis=Basis.HISTORY)
    judge = replace(JUDGE, judged_cases=15)
    est = estimate(cases=20, arms=[a, b, base], judge=judge, reruns=3)
    assert [x.first_pass_micros for x in est.arms] == [
        600_000,  # 20 x 30_000
        10_800,  # 20 x 540
        200_000,
    ]  # 20 x 10_000
    assert est.judge_first_pass_micros == 5_400  # 15 judged x 3 answering arms x 120
    assert est.first_pass_micros == 816_200  # 600_000 + 10_800 + 200_000 + 5_400
    assert [x.rerun_ceiling_micros for x in est.arms] == [
        1_800_000,  # 20 x 3 reruns x 30_000
        32_400,  # 20 x 3 reruns x 540
        600_000,
    ]  # 20 x 3 reruns x 10_000
    assert (
        est.judge_rerun_ceiling_micros == 16_200
    )  # 15 judged x 3 reruns x (2 candidates + 1 baseline) x 120
    assert est.rerun_ceiling_micros == 2_448_600  # 1_800_000 + 32_400 + 600_000 + 16_200
    assert est.total_micros == 3_264_800  # 816_200 + 2_448_600
    assert est.basis is Basis.FALLBACK  # candidate b is a rough guess
    assert [x.arm_id for x in est.arms] == ["a", "b", "baseline"]


def test_zero_reruns_leave_no_ceiling():
    # 20 x 0 reruns x anything = 0
    est = estimate(cases=20, arms=[CAND, BASE], judge=JUDGE, reruns=0)
    assert (est.rerun_ceiling_micros, est.first_pass_micros) == (
        0,
        615_600,
    )  # first: 600_000 + 10_800 + 4_800


def test_a_stability_run_spends_its_reruns_for_sure():
    est = estimate(cases=20, arms=[CAND], judge=JUDGE, reruns=2, stability=True)
    assert est.arms[0].first_pass_micros == 1_800_000  # 20 x (1 + 2 reruns) x 30_000
    assert est.judge_first_pass_micros == 7_200  # 20 judged x (1 + 2) x 1 candidate x 120
    assert est.first_pass_micros == 1_807_200  # 1_800_000 + 7_200
    assert (est.arms[0].rerun_ceiling_micros, est.judge_rerun_ceiling_micros) == (0, 0)
    assert (est.rerun_ceiling_micros, est.total_micros) == (0, 1_807_200)


def test_a_stability_run_of_two_candidates():
    b = replace(CAND, arm_id="b", per_case=Fraction(540))
    est = estimate(
        cases=10, arms=[CAND, b], judge=replace(JUDGE, judged_cases=10), reruns=4, stability=True
    )
    assert [x.first_pass_micros for x in est.arms] == [
        1_500_000,  # 10 x (1 + 4) x 30_000
        27_000,
    ]  # 10 x (1 + 4) x 540
    assert est.judge_first_pass_micros == 12_000  # 10 x (1 + 4) x 2 candidates x 120
    assert (est.first_pass_micros, est.rerun_ceiling_micros) == (
        1_539_000,
        0,
    )  # 1_500_000 + 27_000 + 12_000


def test_a_stability_run_has_no_baseline():
    with pytest.raises(ValueError, match="stability"):
        estimate(cases=20, arms=[CAND, BASE], judge=None, reruns=2, stability=True)


def test_a_priced_judge_from_unit_cost():
    # judge with no history: 2000 in x 1.00 + 400 out x 4.00 = 2_000 + 1_600 = 3_600 per call
    per_call, basis = unit_cost(
        None, {"input_per_mtok_usd": "1.00", "output_per_mtok_usd": "4.00"}, **FALLBACK
    )
    assert (per_call, basis) == (Fraction(3_600), Basis.FALLBACK)
    est = estimate(
        cases=20,
        arms=[CAND],
        judge=JudgePlan(per_call=per_call, basis=basis, judged_cases=20),
        reruns=2,
    )
    assert est.judge_first_pass_micros == 72_000  # 20 judged x 1 arm x 3_600
    assert est.first_pass_micros == 672_000  # 600_000 + 72_000
    assert est.basis is Basis.FALLBACK  # the judge is a rough guess, the arm is not


def test_basis_is_history_only_when_nothing_that_answers_is_a_guess():
    history_base = replace(BASE, basis=Basis.HISTORY)
    assert (
        estimate(cases=1, arms=[CAND, history_base], judge=JUDGE, reruns=1).basis is Basis.HISTORY
    )
    assert (
        estimate(cases=1, arms=[CAND], judge=replace(JUDGE, basis=Basis.FALLBACK), reruns=1).basis
        is Basis.FALLBACK
    )
    assert (
        estimate(cases=1, arms=[replace(CAND, basis=Basis.FALLBACK)], judge=None, reruns=1).basis
        is Basis.FALLBACK
    )


# --- rounding -------------------------------------------------------------------------------------


def test_round_half_up():
    assert round_half_up(Fraction(5, 2)) == 3  # 2.5 -> 3 (round() would give 2)
    assert round_half_up(Fraction(1, 2)) == 1  # 0.5 -> 1 (round() would give 0)
    assert round_half_up(Fraction(70, 3)) == 23  # 23.33.. -> 23
    assert round_half_up(Fraction(71, 3)) == 24  # 23.66.. -> 24
    assert round_half_up(Fraction(0)) == 0


def test_a_fractional_per_case_is_rounded_once_per_component():
    per_case = Fraction(10, 3)  # 10 micros over 3 attempts
    est = estimate(cases=7, arms=[replace(CAND, per_case=per_case)], judge=None, reruns=1)
    assert est.arms[0].per_case_micros == 3  # 3.33.. -> 3, display only
    assert est.arms[0].first_pass_micros == 23  # 7 x 10/3 = 23.33.. -> 23 (not 7 x 3 = 21)


def test_halves_round_up_in_components():
    # 5 micros over 2 attempts = 2.5 per case
    est = estimate(
        cases=3,
        arms=[replace(CAND, per_case=Fraction(5, 2))],
        judge=JudgePlan(per_call=Fraction(1, 2), basis=Basis.HISTORY, judged_cases=5),
        reruns=0,
    )
    assert est.arms[0].per_case_micros == 3  # 2.5 -> 3
    assert est.arms[0].first_pass_micros == 8  # 3 x 2.5 = 7.5 -> 8
    assert est.judge_first_pass_micros == 3  # 5 x 1 arm x 0.5 = 2.5 -> 3
    assert est.first_pass_micros == 11  # 8 + 3 (exact 7.5 + 2.5 = 10; the parts add up instead)


def test_totals_are_sums_of_rounded_components():
    third = replace(CAND, per_case=Fraction(10, 3))
    arms = [third, replace(third, arm_id="baseline", role="baseline")]
    est = estimate(cases=7, arms=arms, judge=None, reruns=1)
    assert [x.first_pass_micros for x in est.arms] == [23, 23]  # 7 x 10/3 = 23.33.. -> 23 each
    assert est.first_pass_micros == 46  # 23 + 23 (exact 46.67 would round to 47)
    assert [x.rerun_ceiling_micros for x in est.arms] == [23, 23]  # 7 x 1 rerun x 10/3 -> 23 each
    assert (est.rerun_ceiling_micros, est.total_micros) == (46, 92)  # 23 + 23; 46 + 46


# --- refusals -------------------------------------------------------------------------------------


@pytest.mark.parametrize("kwargs", [{"cases": -1}, {"reruns": -1}])
def test_negative_counts_raise(kwargs):
    with pytest.raises(ValueError):
        estimate(**{"cases": 20, "arms": [CAND], "judge": None, "reruns": 2, **kwargs})


def test_negative_judged_cases_raise():
    with pytest.raises(ValueError, match="judged_cases"):
        estimate(cases=20, arms=[CAND], judge=replace(JUDGE, judged_cases=-1), reruns=2)


def test_per_unit_costs_must_be_exact_and_non_negative():
    with pytest.raises(TypeError):
        estimate(cases=20, arms=[replace(CAND, per_case=0.1)], judge=None, reruns=2)
    with pytest.raises(TypeError):
        estimate(cases=20, arms=[CAND], judge=replace(JUDGE, per_call=0.5), reruns=2)
    with pytest.raises(ValueError):
        estimate(cases=20, arms=[replace(CAND, per_case=Fraction(-1))], judge=None, reruns=2)


def test_an_unknown_role_raises():
    with pytest.raises(ValueError, match="role"):
        estimate(cases=20, arms=[replace(CAND, role="judge")], judge=None, reruns=2)


def test_zero_cases_cost_nothing():
    est = estimate(cases=0, arms=[CAND, BASE], judge=replace(JUDGE, judged_cases=0), reruns=2)
    assert (est.first_pass_micros, est.rerun_ceiling_micros, est.total_micros) == (0, 0, 0)


# --- the budget it leaves -------------------------------------------------------------------------


def test_fits_exactly_at_the_budget_and_not_one_micro_over():
    assert fits(3_000_000, 0, 3_000_000)  # $3.00 budget, $3.00 exposure
    assert not fits(3_000_000, 0, 3_000_001)  # one micro-USD over
    assert not fits(3_000_000, 0, 3_010_000)  # $3.01
    assert fits(3_000_000, 1_000_000, 2_000_000)  # 3_000_000 - 1_000_000 spent = 2_000_000 left
    assert not fits(3_000_000, 1_000_000, 2_000_001)  # one micro over what is left
    assert not fits(3_000_000, 3_500_000, 0)  # already overspent: -500_000 left
    assert not fits(0, 0, 0)  # a zero budget admits not even a free run
    assert not fits(3_000_000, 3_000_000, 0)  # spent exactly: every request would be refused


def test_no_budget_always_fits():
    assert fits(None, 10**12, 10**12)


def test_remaining_after():
    assert remaining_after(None, 500_000, 2_000_000) is None
    assert (
        remaining_after(3_000_000, 500_000, 2_000_000) == 500_000
    )  # 3_000_000 - 500_000 - 2_000_000
    assert remaining_after(3_000_000, 500_000, 2_500_000) == 0  # exactly used up
    assert (
        remaining_after(3_000_000, 500_000, 2_600_000) == -100_000
    )  # 3_000_000 - 500_000 - 2_600_000


def test_usd_text_is_exact_and_readable() -> None:
    from chalicelib.domain.money import usd_text

    assert usd_text(3_000_000) == "$3.00"
    assert usd_text(6_000) == "$0.006"
    assert usd_text(540) == "$0.00054"
    assert usd_text(1) == "$0.000001"
    assert usd_text(0) == "$0.00"
