"""What `assay demo` says, from hand-made API answers: a version's verdict and a comparison's
verdict each in its own words, a guarded promotion as one plain sentence, and the console link
last, said to work only while the stack is up."""

from __future__ import annotations

from assay_local import demo_text

GUARD = {"min_pass_rate": 0.5, "max_regressions": 80}


def comparison(regressions: int, fixes: int, verdict: str, overall=None, p=None) -> dict:
    flips = [{"outcome": "regression"}] * regressions + [{"outcome": "fixed"}] * fixes
    return {
        "verdict": verdict,
        "overall": overall,
        "p_value": p,
        "confirmed_regressions": regressions,
        "confirmed_fixes": fixes,
        "flips": flips,
    }


def test_a_comparison_s_verdict_is_said_in_the_cli_s_words():
    assert demo_text.verdict_line(comparison(209, 152, "mixed", "worse", 0.0031512)) == (
        "verdict mixed: 209 confirmed regressions, 152 confirmed fixes (of 361 flips); "
        "overall worse (exact McNemar p = 0.00315)"
    )
    assert demo_text.verdict_line(comparison(1, 0, "worse", None, 1.0)) == (
        "verdict worse: 1 confirmed regression, 0 confirmed fixes (of 1 flip); "
        "overall not significant (exact McNemar p = 1)"
    )
    assert demo_text.verdict_line(comparison(0, 0, "no_difference")) == (
        "verdict no difference: 0 confirmed regressions, 0 confirmed fixes (of 0 flips); "
        "overall not significant"
    )


def test_every_comparison_verdict_has_one_of_its_words():
    for api_word in ("better", "worse", "mixed", "no_difference"):
        assert demo_text.comparison_word(api_word) in demo_text.COMPARISON_VERDICTS
    assert demo_text.comparison_word("invalid") == "not comparable"
    # The legend names every word of both kinds, once, in one line.
    legend = demo_text.LEGEND
    assert "\n" not in legend
    for word in ("passes", "partial", "fails", "none", *demo_text.COMPARISON_VERDICTS):
        assert word in legend, word


def test_a_held_back_promotion_is_one_sentence_with_the_guard_s_reasons():
    sentence = demo_text.gate_sentence(
        3,
        {"status": "refused", "environment_id": "production"},
        {
            "result": "failed",
            "label": "Before promotion",
            "reasons": [
                "209 confirmed regressions, 80 allowed",
                "pass rate 34.7% is below the minimum 50.0%",
            ],
        },
        {"outcome": {"pass_rate": 0.347}},
        comparison(209, 152, "mixed"),
        GUARD,
    )
    assert sentence == (
        "v3 onto production: held back: the guard's suite failed (209 confirmed regressions, 80 "
        "allowed; pass rate 34.7% is below the minimum 50.0%)"
    )
    assert "Before promotion" not in sentence and "result" not in sentence


def test_a_promotion_the_guard_let_through_says_by_how_much():
    sentence = demo_text.gate_sentence(
        4,
        {"status": "promoted", "environment_id": "production"},
        {"result": "passed", "reasons": []},
        {"outcome": {"pass_rate": 0.5633}},
        comparison(79, 306, "mixed", "better", 1e-32),
        GUARD,
    )
    assert sentence == (
        "v4 onto production: promoted: the guard's suite passed (79 confirmed regressions, up to "
        "80 allowed; pass rate 56.3%, at least 50.0%)"
    )
    assert demo_text.gate_sentence(
        5, {"status": "refused", "environment_id": "production"}, None, None, None, GUARD
    ) == ("v5 onto production: held back: the guard's suite has no result")


LUCK = (
    "79 confirmed regressions. With this dataset's measured noise, a candidate that changed "
    "nothing would show one in 100 % of runs; no count of reruns up to 5 brings that under 1 %."
)


def test_the_noise_sentence_is_its_own_line_and_not_said_again_in_the_guard_s_sentence():
    run = {"outcome": {"pass_rate": 0.5633, "noise": {"sentence": LUCK}}}
    assert demo_text.noise_line(run) == f"noise: {LUCK}"
    assert demo_text.noise_line({"outcome": {"pass_rate": 0.5}}) is None
    assert demo_text.noise_line(None) is None
    passed = demo_text.gate_sentence(
        4,
        {"status": "promoted", "environment_id": "production"},
        {"result": "passed", "reasons": [LUCK]},
        run,
        comparison(79, 306, "mixed", "better", 1e-32),
        GUARD,
    )
    assert passed == (
        "v4 onto production: promoted: the guard's suite passed (79 confirmed regressions, up to "
        "80 allowed; pass rate 56.3%, at least 50.0%)"
    )
    failed = demo_text.gate_sentence(
        3,
        {"status": "refused", "environment_id": "production"},
        {"result": "failed", "reasons": ["209 confirmed regressions, 80 allowed", LUCK]},
        run,
        comparison(209, 152, "mixed"),
        GUARD,
    )
    assert failed == (
        "v3 onto production: held back: the guard's suite failed (209 confirmed regressions, 80 "
        "allowed)"
    )


def test_the_summaries_are_one_line_with_each_version_s_verdict_and_pass_count():
    assert (
        demo_text.summary_line(
            [
                {"version": 1, "verdict": "partial", "passed": 286, "total": 1319},
                {"version": 2, "verdict": "pass", "passed": 3, "total": 3},
            ]
        )
        == "v1 partial (286 of 1319 passed), v2 pass (3 of 3 passed)"
    )
