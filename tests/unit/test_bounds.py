"""The operator's bounds on one model request's reported tokens and cost (issue 11, scope 7)."""

from __future__ import annotations

from chalicelib.domain.bounds import cost_over_bound, tokens_over_bound, usd_reported


def test_tokens_at_the_bound_are_believed_and_one_more_is_not():
    assert tokens_over_bound(1_500_000, 500_000, 2_000_000, "the agent") is None
    assert tokens_over_bound(1_500_000, 500_001, 2_000_000, "the agent") == (
        "the agent reported 2,000,001 tokens for one request, over ASSAY_REQUEST_MAX_TOKENS "
        "(2,000,000): not believed, nothing charged"
    )


def test_a_cost_at_the_bound_is_believed_and_one_micro_usd_more_is_not():
    assert cost_over_bound(10_000_000, 10_000_000, "the judge") is None
    assert cost_over_bound(10_000_001, 10_000_000, "the judge") == (
        "the judge reported a cost of $10.000001 for one request, over ASSAY_REQUEST_MAX_COST_USD "
        "($10.00): not believed, nothing charged"
    )


def test_an_absurd_cost_is_shown_in_scientific_notation():
    assert usd_reported(10**36) == "$1E+30"  # "cost_usd": "1e30" is 10^36 micro-USD
    assert usd_reported(1_234_600_000_000_000_000) == "$1.235E+12"
    assert usd_reported(4_200) == "$0.0042"
