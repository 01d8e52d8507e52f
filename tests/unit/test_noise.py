"""The noise model of a comparison (docs/concepts/noise.md), with hand-computed values.

Beta functions used below, from B(a, b) = (a-1)! (b-1)! / (a+b-1)! for whole a, b:
B(1,1) = 1, B(2,2) = 1/6, B(2,3) = B(3,2) = 1/12, B(3,3) = 1/30, B(3,4) = 1/60,
B(3,5) = 1/105, B(4,4) = 1/140, B(4,5) = 1/280, B(5,3) = 1/105, B(5,4) = 1/280,
B(5,5) = 1/630, B(5,6) = B(6,5) = 1/1260.
"""

from __future__ import annotations

import random
from fractions import Fraction

import pytest

from chalicelib.domain.compare import compare_case, confirmed
from chalicelib.domain.enums import AttemptState as S
from chalicelib.domain.enums import CaseOutcome
from chalicelib.domain.noise import (
    BetaMixture,
    CaseTries,
    Noise,
    auto_reruns,
    estimate_noise,
    fit_prior,
    flip_chances,
    mixture_flip_chances,
    noise_sentence,
    pooled_tries,
    reruns_under,
)

UNIFORM = BetaMixture.beta(1, 1)


def approx(x: Fraction | float) -> object:
    return pytest.approx(float(x), rel=1e-9, abs=1e-15)


# --- One case, one Beta -----------------------------------------------------------------------


def test_baseline_rerun_both_chances_are_the_moment_of_r_plus_one_each_way() -> None:
    # Beta(1,1), r=1: E[p^2 (1-p)^2] = B(3,3)/B(1,1) = 1/30; r=2: B(4,4) = 1/140.
    assert flip_chances(1, 1, 1, baseline_rerun=True) == (approx(Fraction(1, 30)),) * 2
    assert flip_chances(1, 1, 2, baseline_rerun=True) == (approx(Fraction(1, 140)),) * 2
    # Beta(2,3), r=1: B(4,5)/B(2,3) = 12/280 = 3/70; r=2: B(5,6)/B(2,3) = 12/1260 = 1/105.
    assert flip_chances(2, 3, 1, baseline_rerun=True)[0] == approx(Fraction(3, 70))
    assert flip_chances(2, 3, 2, baseline_rerun=True)[1] == approx(Fraction(1, 105))


def test_a_baseline_not_rerun_gives_its_one_answer_and_the_candidates_r_plus_one() -> None:
    # Beta(2,3), r=1: regression E[p (1-p)^2] = B(3,5)/B(2,3) = 12/105 = 4/35,
    # fix E[(1-p) p^2] = B(4,4)/B(2,3) = 12/140 = 3/35.
    reg, fix = flip_chances(2, 3, 1, baseline_rerun=False)
    assert (reg, fix) == (approx(Fraction(4, 35)), approx(Fraction(3, 35)))


def test_the_chances_are_the_confirmation_rule_of_compare_summed_over_every_draw() -> None:
    # For a fixed p, sum the probability of every sequence of tries compare.confirmed accepts.
    p = 0.7
    for reruns in (1, 2, 3):
        for baseline_rerun in (True, False):
            regression = 0.0
            n_base = 1 + (reruns if baseline_rerun else 0)
            for bits in range(2 ** (n_base + reruns + 1)):
                tries = [
                    S.PASSED if bits >> i & 1 else S.FAILED for i in range(n_base + reruns + 1)
                ]
                base, cand = tries[:n_base], tries[n_base:]
                outcome = compare_case(cand[0], base[0], candidate_fp=None, baseline_fp=None)
                if confirmed(outcome, cand[1:], base[1:] if baseline_rerun else None):
                    if outcome is CaseOutcome.REGRESSION:
                        chance = 1.0
                        for s in tries:
                            chance *= p if s is S.PASSED else 1 - p
                        regression += chance
            # A Beta(700000, 300000) is p = 0.7 to within its tiny spread.
            modelled = flip_chances(7e5, 3e5, reruns, baseline_rerun=baseline_rerun)[0]
            assert modelled == pytest.approx(regression, rel=1e-4)


def test_no_rerun_confirms_nothing() -> None:
    assert flip_chances(1, 1, 0, baseline_rerun=True) == (0.0, 0.0)
    assert flip_chances(1, 1, 0, baseline_rerun=False) == (0.0, 0.0)


def test_no_rerun_gives_a_chance_of_luck_of_plus_zero_not_minus_zero() -> None:
    """The JSON of a run with no reruns says `0.0`, never `-0.0`."""
    tries = {"c1": CaseTries(1, 2), "c2": CaseTries(2, 2)}
    measured = estimate_noise(tries, reruns=0, baseline_rerun=True, basis="this_run")
    assert measured is not None
    assert str(measured.luck_by_reruns[0]) == "0.0"
    assert str(measured.p_luck_regression) == "0.0" and str(measured.p_luck_fix) == "0.0"


def test_a_mixture_weighs_its_components() -> None:
    # 1/4 Beta(1,1) + 3/4 Beta(2,3) at r=1: 1/4 * 1/30 + 3/4 * 3/70 = 1/120 + 9/280 = 17/420.
    mixture = BetaMixture(((0.25, 1.0, 1.0), (0.75, 2.0, 3.0)))
    assert mixture_flip_chances(mixture, 1, baseline_rerun=True)[0] == approx(Fraction(17, 420))


def test_the_posterior_of_a_mixture_reweighs_by_each_components_evidence() -> None:
    # 1/2 Beta(1,1) + 1/2 Beta(2,3) after 1 pass in 1 try: the evidence is E[p] = 1/2 and 2/5,
    # so the weights become 5/9 and 4/9, the components Beta(2,1) and Beta(3,3).
    post = BetaMixture(((0.5, 1.0, 1.0), (0.5, 2.0, 3.0))).posterior(CaseTries(1, 1))
    assert [(pytest.approx(w), a, b) for w, a, b in post.components] == [
        (pytest.approx(5 / 9), 2.0, 1.0),
        (pytest.approx(4 / 9), 3.0, 3.0),
    ]


# --- A dataset ------------------------------------------------------------------------------------


def test_two_cases_under_a_known_prior_baseline_rerun() -> None:
    # Prior Beta(1,1). Case a: 1 pass in 2 -> Beta(2,2); case b: 2 in 3 -> Beta(3,2).
    # r=1: a: B(4,4)/B(2,2) = 6/140 = 3/70; b: B(5,4)/B(3,2) = 12/280 = 3/70.
    tries = {"a": CaseTries(1, 2), "b": CaseTries(2, 3)}
    one = estimate_noise(
        tries,
        reruns=1,
        baseline_rerun=True,
        basis="this_run",
        prior=UNIFORM,
        confirmed_flips={"b": CaseOutcome.REGRESSION},
    )
    assert one is not None
    assert one.tries == 5 and one.cases == 2
    assert one.expected_regressions == approx(Fraction(6, 70))
    assert one.expected_fixes == approx(Fraction(6, 70))
    assert one.p_luck_regression == approx(1 - Fraction(67, 70) ** 2)  # 411/4900
    assert one.p_luck_fix == approx(1 - Fraction(67, 70) ** 2)
    assert one.per_flip == {"b": approx(Fraction(3, 70))}
    # r=2: a: B(5,5)/B(2,2) = 6/630 = 1/105; b: B(6,5)/B(3,2) = 12/1260 = 1/105.
    two = estimate_noise(tries, reruns=2, baseline_rerun=True, basis="this_run", prior=UNIFORM)
    assert two is not None
    assert two.expected_regressions == approx(Fraction(2, 105))
    assert two.p_luck_regression == approx(1 - Fraction(104, 105) ** 2)
    assert one.luck_by_reruns[2] == approx(two.p_luck_regression)


def test_two_cases_under_a_known_prior_baseline_not_rerun() -> None:
    # r=1. a, Beta(2,2): regression B(3,4)/B(2,2) = 6/60 = 1/10, fix the same.
    # b, Beta(3,2): regression B(4,4)/B(3,2) = 12/140 = 3/35, fix B(5,3)/B(3,2) = 12/105 = 4/35.
    noise = estimate_noise(
        {"a": CaseTries(1, 2), "b": CaseTries(2, 3)},
        reruns=1,
        baseline_rerun=False,
        basis="history",
        prior=UNIFORM,
        confirmed_flips={"a": CaseOutcome.FIXED, "b": CaseOutcome.REGRESSION},
    )
    assert noise is not None
    assert noise.expected_regressions == approx(Fraction(1, 10) + Fraction(3, 35))  # 13/70
    assert noise.expected_fixes == approx(Fraction(1, 10) + Fraction(4, 35))  # 15/70
    assert noise.p_luck_regression == approx(1 - Fraction(9, 10) * Fraction(32, 35))
    assert noise.p_luck_fix == approx(1 - Fraction(9, 10) * Fraction(31, 35))
    assert noise.per_flip == {"a": approx(Fraction(1, 10)), "b": approx(Fraction(3, 35))}


def test_a_case_with_no_try_takes_the_prior_and_still_counts() -> None:
    # c has no try: Beta(1,1), r=1: 1/30. a: 3/70 as above.
    noise = estimate_noise(
        {"a": CaseTries(1, 2), "c": CaseTries(0, 0)},
        reruns=1,
        baseline_rerun=True,
        basis="this_run",
        prior=UNIFORM,
        confirmed_flips={"z": CaseOutcome.REGRESSION},
    )
    assert noise is not None
    assert noise.cases == 2 and noise.tries == 2
    assert noise.expected_regressions == approx(Fraction(3, 70) + Fraction(1, 30))
    assert noise.per_flip == {"z": approx(Fraction(1, 30))}


def test_no_tries_measure_nothing() -> None:
    assert estimate_noise({}, reruns=2, baseline_rerun=True, basis="this_run") is None
    unseen = {"a": CaseTries(0, 0), "b": CaseTries(0, 0)}
    assert estimate_noise(unseen, reruns=2, baseline_rerun=True, basis="this_run") is None
    with pytest.raises(ValueError, match="no case has a try"):
        fit_prior(unseen.values())


def test_a_steady_agent_seen_once_is_not_predicted_to_flip_like_a_coin() -> None:
    # 300 cases, both sides' first answers agreeing on every one: 210 passed twice, 90 failed twice.
    tries = {f"c{i}": CaseTries(2 if i < 210 else 0, 2) for i in range(300)}
    fitted = estimate_noise(tries, reruns=1, baseline_rerun=True, basis="this_run")
    coin = estimate_noise(tries, reruns=1, baseline_rerun=True, basis="this_run", prior=UNIFORM)
    assert fitted is not None and coin is not None
    # Under a flat prior each case is Beta(3,1) or Beta(1,3): B(5,3)/B(3,1) = 3/105 each.
    assert coin.expected_regressions == approx(300 * Fraction(3, 105))
    assert fitted.expected_regressions < 0.02
    assert fitted.p_luck_regression < 0.01
    assert fitted.reruns_for_bound == 1 and fitted.advice is None


def test_a_coin_flipping_agent_cannot_be_brought_under_the_bound() -> None:
    # 100 cases, each passed 5 of 10 tries: p near 1/2, so each case's regression chance at
    # r reruns is at most (1/4)^(r+1): 1/16 at r=1, 1/4096 at r=5 (100 cases: about 2.4 %).
    tries = {f"c{i}": CaseTries(5, 10) for i in range(100)}
    noise = estimate_noise(tries, reruns=1, baseline_rerun=True, basis="stability_run")
    assert noise is not None
    assert 5.0 < noise.expected_regressions <= 100 / 16
    assert noise.p_luck_regression > 0.99
    assert 0.01 < noise.luck_by_reruns[5] <= 1 - (1 - 1 / 4096) ** 100
    assert noise.reruns_for_bound is None
    assert noise.advice is not None and "up to 5" in noise.advice
    assert auto_reruns(noise) == 5


def test_zero_reruns_show_no_luck_but_still_suggest_a_count() -> None:
    tries = {"a": CaseTries(1, 2), "b": CaseTries(2, 3)}
    noise = estimate_noise(tries, reruns=0, baseline_rerun=True, basis="this_run", prior=UNIFORM)
    assert noise is not None
    assert noise.p_luck_regression == 0.0 and noise.expected_regressions == 0.0
    assert noise.luck_by_reruns[0] == 0.0
    # 1/105 a case at r=2 (above): 1 - (104/105)^2 = 1.9 %; r=3: B(6,6)/B(2,2) = 6/2772 each.
    assert noise.luck_by_reruns[3] == approx(1 - (1 - Fraction(6, 2772)) ** 2)
    assert noise.reruns_for_bound == 3


def _random_dataset(rng: random.Random) -> dict[str, CaseTries]:
    out = {}
    for i in range(rng.randint(1, 60)):
        n = rng.randint(0, 12)
        out[f"c{i}"] = CaseTries(rng.randint(0, n), n)
    return out


@pytest.mark.parametrize("seed", range(12))
def test_more_reruns_never_raise_the_luck_and_the_suggestion_is_the_smallest(seed: int) -> None:
    rng = random.Random(seed)
    tries = _random_dataset(rng)
    if not any(c.tries for c in tries.values()):
        tries["x"] = CaseTries(1, 2)
    bound = rng.choice([0.001, 0.01, 0.05, 0.2])
    for baseline_rerun in (True, False):
        noise = estimate_noise(
            tries, reruns=2, baseline_rerun=baseline_rerun, basis="history", bound=bound
        )
        assert noise is not None
        luck = noise.luck_by_reruns
        assert all(luck[r + 1] <= luck[r] + 1e-15 for r in range(1, 5))
        under = [r for r in range(1, 6) if luck[r] < bound]
        assert noise.reruns_for_bound == (under[0] if under else None)
        assert (noise.advice is None) == bool(under)
        assert noise.p_luck_regression == luck[2]


def test_the_fitted_prior_is_a_proper_mixture() -> None:
    prior = fit_prior([CaseTries(2, 2), CaseTries(0, 2), CaseTries(3, 4), CaseTries(0, 0)])
    assert sum(w for w, _, _ in prior.components) == pytest.approx(1.0)
    assert all(a > 0 and b > 0 for _, a, b in prior.components)


def _log_likelihood(cases: list[CaseTries], prior: BetaMixture) -> float:
    import math

    total = 0.0
    for case in cases:
        f = case.tries - case.passes
        total += math.log(
            sum(
                w
                * math.exp(
                    math.lgamma(a + case.passes)
                    + math.lgamma(b + f)
                    - math.lgamma(a + b + case.tries)
                    - math.lgamma(a)
                    - math.lgamma(b)
                    + math.lgamma(a + b)
                )
                for w, a, b in prior.components
            )
        )
    return total


def _steady_run(seed: int) -> list[CaseTries]:
    """1,000 cases of an agent at 99 % or 1 %, first answers of both sides, flips rerun once."""
    rng = random.Random(seed)
    cases = []
    for _ in range(1000):
        p = 0.99 if rng.random() < 0.7 else 0.01
        first = [rng.random() < p for _ in range(2)]
        tries = first + ([rng.random() < p for _ in range(2)] if first[0] != first[1] else [])
        cases.append(CaseTries(sum(tries), len(tries)))
    return cases


def test_the_fit_reaches_the_maximum_likelihood_where_plain_em_crawls() -> None:
    # Plain EM from equal weights is still climbing after thousands of steps on a steady agent;
    # the accelerated fit must be at the top: no further EM step gains anything worth a try.
    cases = _steady_run(3)
    prior = fit_prior(cases)
    weights = [w for w, _, _ in prior.components]
    comps = prior.components
    for _ in range(200):
        resp = [0.0] * len(comps)
        for case in cases:
            post = prior.posterior(case).components
            for i, (w, _, _) in enumerate(post):
                resp[i] += w
        weights = [r / len(cases) for r in resp]
        prior = BetaMixture(tuple((w, a, b) for w, (_, a, b) in zip(weights, comps, strict=True)))
    assert _log_likelihood(cases, prior) - _log_likelihood(cases, fit_prior(cases)) < 1e-3


def test_the_fit_does_not_depend_on_the_order_of_the_cases() -> None:
    cases = _steady_run(5)
    shuffled = list(cases)
    random.Random(1).shuffle(shuffled)
    assert fit_prior(shuffled) == fit_prior(cases)


def test_pooled_tries_count_decided_tries_of_both_sides() -> None:
    pooled = pooled_tries(
        {"a": [S.PASSED, S.FAILED, S.INCOMPLETE], "b": [S.UNGRADED]},
        {"a": [S.FAILED, S.PASSED], "c": [S.PASSED]},
    )
    assert pooled == {"a": CaseTries(2, 4), "b": CaseTries(0, 0), "c": CaseTries(1, 1)}


@pytest.mark.parametrize(
    ("kwargs", "message"),
    [
        ({"reruns": 6}, "reruns must be within 0..5"),
        ({"reruns": -1}, "reruns must be within 0..5"),
        ({"basis": "yesterday"}, "basis must be one of"),
        ({"bound": 0.0}, "bound must be within"),
        ({"bound": 1.0}, "bound must be within"),
        ({"confirmed_flips": {"a": CaseOutcome.UNCHANGED}}, "a regression or a fix"),
    ],
)
def test_bad_input_is_named(kwargs: dict[str, object], message: str) -> None:
    args: dict[str, object] = {"reruns": 1, "baseline_rerun": True, "basis": "this_run"}
    args.update(kwargs)
    with pytest.raises(ValueError, match=message):
        estimate_noise({"a": CaseTries(1, 2)}, **args)  # type: ignore[arg-type]


def test_bad_tries_and_betas_are_named() -> None:
    with pytest.raises(ValueError, match="passes must be within 0..tries"):
        CaseTries(3, 2)
    with pytest.raises(ValueError, match="a > 0 and b > 0"):
        flip_chances(0, 1, 1, baseline_rerun=True)
    with pytest.raises(ValueError, match="sum to 1"):
        BetaMixture(((0.5, 1.0, 1.0),))


# --- What the run says ----------------------------------------------------------------------------


def _noise(luck: float, reruns: int, suggested: int | None, basis: str = "this_run") -> Noise:
    return Noise(
        basis=basis,  # type: ignore[arg-type]
        tries=400,
        cases=200,
        reruns=reruns,
        baseline_rerun=True,
        expected_regressions=0.26,
        expected_fixes=0.26,
        p_luck_regression=luck,
        p_luck_fix=luck,
        per_flip={"c1": 0.004},
        luck_by_reruns=(0.0, 0.6, luck, 0.05, 0.004, 0.0003),
        reruns_for_bound=suggested,
        bound=0.01,
        advice=None if suggested is not None else "a steadier model would",
    )


def test_the_run_pages_sentence() -> None:
    assert noise_sentence(_noise(0.23, 2, 4), 1) == (
        "1 confirmed regression. With this dataset's measured noise, a candidate that changed "
        "nothing would show one in 23 % of runs; 4 reruns bring that under 1 %."
    )
    assert noise_sentence(_noise(0.004, 4, 4), 2) == (
        "2 confirmed regressions. With this dataset's measured noise, a candidate that changed "
        "nothing would show one in 0.4 % of runs."
    )
    assert noise_sentence(_noise(0.3, 2, None, "stability_run"), 1) == (
        "1 confirmed regression. With the noise its stability run measured, a candidate that "
        "changed nothing would show one in 30 % of runs; no count of reruns up to 5 brings that "
        "under 1 %."
    )
    assert noise_sentence(_noise(0.0, 0, 1, "history"), 0) == (
        "No confirmed regression. Without reruns nothing is confirmed. With the noise earlier "
        "runs of this spec measured, 1 rerun keeps a candidate that changed nothing from showing "
        "one in more than 1 % of runs."
    )
    assert noise_sentence(_noise(0.00001, 3, 1), 0).endswith("one in under 0.1 % of runs.")
    with pytest.raises(ValueError, match="cannot be negative"):
        noise_sentence(_noise(0.2, 2, 4), -1)


def test_as_json_gives_every_field() -> None:
    body = _noise(0.23, 2, 4).as_json()
    assert body == {
        "basis": "this_run",
        "tries": 400,
        "cases": 200,
        "reruns": 2,
        "baseline_rerun": True,
        "expected_regressions": 0.26,
        "expected_fixes": 0.26,
        "p_luck_regression": 0.23,
        "p_luck_fix": 0.23,
        "per_flip": {"c1": 0.004},
        "luck_by_reruns": [0.0, 0.6, 0.23, 0.05, 0.004, 0.0003],
        "reruns_for_bound": 4,
        "bound": 0.01,
        "advice": None,
    }


def test_reruns_under_is_the_smallest_count_from_one_under_the_bound() -> None:
    luck = [0.0, 0.5, 0.12, 0.03, 0.008, 0.002]
    assert reruns_under(luck, 0.01) == 4
    assert reruns_under(luck, 0.2) == 2
    assert reruns_under(luck, 0.001) is None
    assert reruns_under([0.0, 0.0], 0.01) == 1  # 0 confirms nothing: never picked
    with pytest.raises(ValueError, match="bound"):
        reruns_under(luck, 1.5)
