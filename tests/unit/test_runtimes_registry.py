"""`build_runtimes`, `runtime_for`, `validate_spec` and spec prices."""

from __future__ import annotations

from decimal import Decimal

import pytest

from chalicelib.adapters.runtimes import (
    Prices,
    build_runtimes,
    is_retryable_status,
    runtime_for,
    spec_prices,
    validate_spec,
)
from chalicelib.adapters.runtimes.http import HttpRuntime, usd_to_micros
from chalicelib.adapters.runtimes.recorded import RecordedRuntime
from chalicelib.domain.enums import RuntimeKind
from chalicelib.domain.models import Usage
from chalicelib.errors import InvalidInputError


@pytest.fixture()
def runtimes():
    return build_runtimes(None, lambda_client_factory=lambda: pytest.fail("built eagerly"))


def test_every_kind_is_built(runtimes) -> None:
    assert set(runtimes) == set(RuntimeKind)
    assert isinstance(runtimes[RuntimeKind.HTTP], HttpRuntime)


def test_runtime_for_picks_by_name(runtimes) -> None:
    assert runtime_for({"runtime": "recorded"}, runtimes) is runtimes[RuntimeKind.RECORDED]


@pytest.mark.parametrize("spec", [{}, {"runtime": "smtp"}, {"runtime": 3}, {"runtime": None}])
def test_unknown_runtime_names_the_allowed_values(runtimes, spec: dict) -> None:
    with pytest.raises(InvalidInputError) as info:
        runtime_for(spec, runtimes)
    assert info.value.field == "spec.runtime"
    for kind in ("http", "lambda", "openai", "python", "recorded"):
        assert kind in info.value.message


def test_a_runtime_not_built_is_refused() -> None:
    only = {RuntimeKind.RECORDED: RecordedRuntime()}
    with pytest.raises(InvalidInputError, match="one of: recorded$"):
        runtime_for({"runtime": "http"}, only)


def test_spec_must_be_an_object(runtimes) -> None:
    with pytest.raises(InvalidInputError) as info:
        validate_spec(["runtime", "http"], runtimes)
    assert info.value.field == "spec"


def test_validate_spec_calls_the_runtime(runtimes) -> None:
    validate_spec({"runtime": "http", "url": "https://agent.example/ask"}, runtimes)
    with pytest.raises(InvalidInputError) as info:
        validate_spec({"runtime": "http", "url": "nope"}, runtimes)
    assert info.value.field == "spec.url"
    validate_spec({"runtime": "lambda", "function_name": "agent"}, runtimes)  # no client built


def test_prices_are_exact_decimals(runtimes) -> None:
    spec = {
        "runtime": "recorded",
        "inline": {"c": "x"},
        "price": {"input_per_mtok_usd": "0.15", "output_per_mtok_usd": 0.6},
    }
    validate_spec(spec, runtimes)
    prices = spec_prices(spec)
    assert prices == Prices(Decimal("0.15"), Decimal("0.6"))
    # 1M input tokens at $0.15 + 500k output at $0.60 = $0.45 = 450,000 micro-USD.
    assert prices.cost_micros(Usage(input_tokens=1_000_000, output_tokens=500_000)) == 450_000
    # 3 tokens at $0.15/Mtok = 0.45 micro-USD → rounds half up to 0.
    assert prices.cost_micros(Usage(input_tokens=3)) == 0
    assert prices.cost_micros(Usage(input_tokens=10)) == 2  # 1.5 → 2
    assert spec_prices({"runtime": "http"}) is None


IN, OUT = "spec.price.input_per_mtok_usd", "spec.price.output_per_mtok_usd"


@pytest.mark.parametrize(
    ("price", "field"),
    [
        ("0.15", "spec.price"),
        ({"input_per_mtok_usd": "0.1"}, "spec.price.output_per_mtok_usd"),
        ({"input_per_mtok_usd": "-1", "output_per_mtok_usd": "1"}, IN),
        ({"input_per_mtok_usd": "abc", "output_per_mtok_usd": "1"}, IN),
        ({"input_per_mtok_usd": "NaN", "output_per_mtok_usd": "1"}, IN),
        ({"input_per_mtok_usd": "Infinity", "output_per_mtok_usd": "1"}, IN),
        ({"input_per_mtok_usd": "1", "output_per_mtok_usd": True}, OUT),
        ({"input_per_mtok_usd": "1", "output_per_mtok_usd": "1", "cached": "1"}, "spec.price"),
    ],
)
def test_bad_prices_name_the_field(runtimes, price: object, field: str) -> None:
    spec = {"runtime": "recorded", "inline": {"c": "x"}, "price": price}
    with pytest.raises(InvalidInputError) as info:
        validate_spec(spec, runtimes)
    assert info.value.field == field


def test_retryable_statuses() -> None:
    statuses = (None, 400, 401, 403, 404, 408, 429, 500, 503)
    assert [s for s in statuses if is_retryable_status(s)] == [None, 408, 429, 500, 503]


def test_usd_to_micros_uses_decimals() -> None:
    assert usd_to_micros("0.0000125") == 13
    assert usd_to_micros(0.1) == 100_000
    with pytest.raises(ValueError):
        usd_to_micros("-0.1")
