"""Money, summed exactly: integer micro-USD everywhere, Decimal prices, never binary floats."""

from __future__ import annotations

from decimal import ROUND_HALF_UP, Decimal, InvalidOperation
from typing import Any

MICROS_PER_USD = 1_000_000

MAX_PRICE_PER_MTOK_USD = Decimal(1_000_000)
"""The highest token price accepted, USD per 1M tokens (far above any model's; beyond it a typo)."""
MAX_BUDGET_USD = Decimal(1_000_000_000_000)
"""The highest monthly budget accepted, USD."""


def to_decimal(value: Any, *, field: str, maximum: Decimal | None = None) -> Decimal:
    """A non-negative Decimal from a JSON number or string, at most `maximum` when given.

    Raises:
        ValueError: naming `field` when `value` is not a non-negative number (or is too large).
    """
    try:
        d = Decimal(str(value).strip())
    except (InvalidOperation, ValueError) as exc:
        raise ValueError(f"{field} must be a number, got {value!r}") from exc
    if not d.is_finite() or d < 0:
        raise ValueError(f"{field} must be a non-negative number, got {value!r}")
    if maximum is not None and d > maximum:
        raise ValueError(f"{field} must be at most {maximum}, got {value!r}")
    return d


def usd_to_micros(usd: Any) -> int:
    """USD (number or string) to integer micro-USD, rounded half up."""
    return int((to_decimal(usd, field="usd") * MICROS_PER_USD).quantize(Decimal(1), ROUND_HALF_UP))


def micros_to_usd(micros: int) -> float:
    """Micro-USD to a USD number for JSON output (exact to 6 decimals)."""
    return float(Decimal(micros) / MICROS_PER_USD)


def usd_text(micros: int) -> str:
    """Micro-USD as a person reads it: `$3.00`, `$0.006`, `$0.000540` → `$0.00054` (exact, 2-6
    decimals)."""
    text = f"{Decimal(micros) / MICROS_PER_USD:.6f}".rstrip("0")
    whole, _, frac = text.partition(".")
    return f"${whole}.{frac.ljust(2, '0')}"


def token_cost_micros(input_tokens: int, output_tokens: int, price: dict[str, Any] | None) -> int:
    """Cost of one answer in micro-USD from a spec's `price` block.

    Args:
        input_tokens, output_tokens: tokens the answer used.
        price: `{"input_per_mtok_usd": "0.15", "output_per_mtok_usd": "0.60"}` (USD per 1M tokens),
            or None when nothing prices the model (cost 0).

    USD per 1M tokens times tokens is exactly micro-USD, so no division is needed.
    """
    if not price:
        return 0
    cost = (
        to_decimal(
            price.get("input_per_mtok_usd", 0),
            field="price.input_per_mtok_usd",
            maximum=MAX_PRICE_PER_MTOK_USD,
        )
        * input_tokens
    )
    cost += (
        to_decimal(
            price.get("output_per_mtok_usd", 0),
            field="price.output_per_mtok_usd",
            maximum=MAX_PRICE_PER_MTOK_USD,
        )
        * output_tokens
    )
    return int(cost.quantize(Decimal(1), ROUND_HALF_UP))
