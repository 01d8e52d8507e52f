"""`--max-luck` (`assay.gate.decide_run`, docs/concepts/noise.md): confirmed regressions that a
candidate that changed nothing would show more often than the bound make the gate inconclusive
(exit 2), the reason saying the chance and the reruns that would settle it; within the bound, or
with no noise measured, a confirmed regression still breaks."""

from __future__ import annotations

import argparse
from typing import Any

import pytest

from assay import gate
from assay.cli_common import _fraction
from assay.gate import BROKE, INCONCLUSIVE

LUCK = [0.0, 0.6, 0.2, 0.04, 0.008, 0.002]
"""A chance of luck by reruns 0-5: 2 reruns give 20 %, 4 the first under 1 %."""


def _run(noise: dict[str, Any] | None, pass_rate: float = 0.7) -> dict[str, Any]:
    outcome: dict[str, Any] = {"total": 10, "passed": 7, "pass_rate": pass_rate, "undecided": 0}
    if noise is not None:
        outcome["noise"] = noise
    return {
        "run_id": "run_1",
        "status": "completed",
        "arms": [{"arm_id": "candidate", "role": "candidate"}],
        "outcome": outcome,
        "summaries": {"candidate": {}},
    }


def _noise(luck: list[float], reruns: int = 2, advice: str | None = None) -> dict[str, Any]:
    return {
        "basis": "this_run",
        "reruns": reruns,
        "p_luck_regression": luck[reruns],
        "luck_by_reruns": luck,
        "reruns_for_bound": next((r for r in range(1, 6) if luck[r] < 0.01), None),
        "bound": 0.01,
        "advice": advice,
    }


COMPARISON = {
    "verdict": "worse",
    "confirmed_regressions": 2,
    "flips": [{"case_id": c, "outcome": "regression", "confirmed": True} for c in ("c2", "c5")],
    "counts": {"incomplete": 0},
}


def test_regressions_likelier_luck_than_the_bound_are_inconclusive_naming_the_reruns() -> None:
    g = gate.decide_run(_run(_noise(LUCK)), COMPARISON, max_luck=0.01)
    assert g.code == INCONCLUSIVE and g.word == "inconclusive"
    assert g.reasons == [
        "2 confirmed regressions: c2, c5; but a candidate that changed nothing would show a "
        "confirmed regression in 20 % of runs, over --max-luck 1 %; 4 reruns would bring that "
        "under 1 %"
    ]


def test_the_reruns_are_recomputed_for_the_gates_bound() -> None:
    g = gate.decide_run(_run(_noise(LUCK)), COMPARISON, max_luck=0.05)
    assert g.reasons[0].endswith("over --max-luck 5 %; 3 reruns would bring that under 5 %")
    loose = gate.decide_run(_run(_noise(LUCK)), COMPARISON, max_luck=0.6)
    assert loose.code == BROKE and loose.reasons == ["2 confirmed regressions: c2, c5"]


def test_when_no_count_of_reruns_settles_it_the_advice_is_given() -> None:
    steep = [0.0, 0.9, 0.8, 0.7, 0.6, 0.5]
    g = gate.decide_run(
        _run(_noise(steep, advice="A steadier model would.")), COMPARISON, max_luck=0.01
    )
    assert g.code == INCONCLUSIVE
    assert g.reasons[0].endswith(
        "in 80 % of runs, over --max-luck 1 %; no count of reruns up to 5 brings that under "
        "1 %. A steadier model would."
    )
    # The run's advice names its own bound; for another bound the gate says it in its own words.
    other = gate.decide_run(_run(_noise(steep, advice="x")), COMPARISON, max_luck=0.02)
    assert "under 2 %. A steadier model (e.g. a lower temperature) would" in other.reasons[0]


def test_without_measured_noise_or_the_flag_a_confirmed_regression_still_breaks() -> None:
    assert gate.decide_run(_run(None), COMPARISON, max_luck=0.01).code == BROKE
    assert gate.decide_run(_run(_noise(LUCK)), COMPARISON).code == BROKE
    calm = _noise([0.0, 0.02, 0.005, 0.001, 0.0, 0.0])
    assert gate.decide_run(_run(calm), COMPARISON, max_luck=0.01).code == BROKE


def test_a_pass_rate_under_the_minimum_still_breaks_with_the_luck_beside_it() -> None:
    g = gate.decide_run(_run(_noise(LUCK)), COMPARISON, min_pass_rate=0.8, max_luck=0.01)
    assert g.code == BROKE
    assert g.reasons[0] == "pass rate 70.0 % is under the minimum 80.0 %"
    assert g.reasons[1].startswith("2 confirmed regressions: c2, c5; but a candidate")


@pytest.mark.parametrize(("text", "value"), [("1%", 0.01), ("0.01", 0.01), ("100%", 1.0)])
def test_the_bound_reads_like_min_pass_rate(text: str, value: float) -> None:
    assert _fraction(text) == pytest.approx(value)


@pytest.mark.parametrize("text", ["2", "-1%", "lots"])
def test_a_bound_outside_0_to_1_is_refused_naming_it(text: str) -> None:
    with pytest.raises(argparse.ArgumentTypeError, match="not a fraction between 0 and 1"):
        _fraction(text)


def test_a_bound_under_a_tenth_of_a_percent_is_named_as_given_and_said_once() -> None:
    tiny = [0.0, 0.6, 0.2, 0.04, 0.008, 0.002]  # no count of reruns up to 5 goes under 0.05 %
    max_luck = _fraction("0.05%")  # as `assay gate RUN --max-luck 0.05%` reads it
    g = gate.decide_run(_run(_noise(tiny)), COMPARISON, max_luck=max_luck)
    assert g.code == INCONCLUSIVE
    (reason,) = g.reasons
    assert "over --max-luck 0.05 %;" in reason
    assert "no count of reruns up to 5 brings that under 0.05 %" in reason
    assert "under under" not in reason and "under 0.1 %" not in reason
    assert gate.bound_text(max_luck) == "0.05 %"
    assert [gate.bound_text(v) for v in (0.01, 0.125, 0.5)] == ["1 %", "12.5 %", "50 %"]
