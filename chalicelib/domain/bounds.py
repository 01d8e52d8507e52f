"""The operator's bounds on what one model request may report (issue 11, scope 7;
docs/reference/access.md).

An agent reports its own cost and tokens (`"cost_usd": "1e30"` is a valid JSON string), and a
model's usage is whatever its provider says. Every request's cost is charged to the monthly
budgets, so one absurd figure would spend every budget for the month. A figure past the bound is
therefore not believed: nothing is charged, and the attempt is `incomplete` with a reason naming
the bound (a judge's score is not graded). Pure: the caller passes the bounds from settings.
"""

from __future__ import annotations

from decimal import Decimal

from chalicelib.domain.money import MICROS_PER_USD, usd_text


def usd_reported(micros: int) -> str:
    """A reported cost as a person reads it: `$0.0042`, or `$1E+30` for one too long to print."""
    if micros < 10**18:
        return usd_text(micros)
    return f"${Decimal(micros) / MICROS_PER_USD:.3E}".replace(".000E", "E")


def count_reported(count: int) -> str:
    """A reported count as a person reads it: `1,500,000`, or `1.235E+40` for one too long to
    print (an agent may report any integer; Python refuses to print one past 4,300 digits)."""
    if count < 10**18:
        return f"{count:,}"
    return f"{Decimal(count):.3E}".replace(".000E", "E")


def tokens_over_bound(
    input_tokens: int, output_tokens: int, max_tokens: int, who: str
) -> str | None:
    """Why a request's reported tokens are not believed, or None within the bound.

    Args:
        input_tokens, output_tokens: what the request reported.
        max_tokens: `ASSAY_REQUEST_MAX_TOKENS`, input + output.
        who: "the agent" or "the judge", for the reason.
    """
    total = input_tokens + output_tokens
    if total <= max_tokens:
        return None
    return (
        f"{who} reported {count_reported(total)} tokens for one request, over "
        f"ASSAY_REQUEST_MAX_TOKENS "
        f"({max_tokens:,}): not believed, nothing charged"
    )


def cost_over_bound(cost_micros: int, max_cost_micros: int, who: str) -> str | None:
    """Why a request's cost (micro-USD, reported or priced from its tokens) is not believed, or
    None within the bound (exactly at the bound is within it)."""
    if cost_micros <= max_cost_micros:
        return None
    return (
        f"{who} reported a cost of {usd_reported(cost_micros)} for one request, over "
        f"ASSAY_REQUEST_MAX_COST_USD ({usd_text(max_cost_micros)}): not believed, nothing charged"
    )
