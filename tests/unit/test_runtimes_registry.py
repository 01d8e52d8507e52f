"""`build_runtimes`, `runtime_for`, `validate_spec` and spec prices."""

from __future__ import annotations

from decimal import Decimal

import pytest

from chalicelib.adapters.runtimes import (
    PROFILE_SETTING_KEYS,
    Prices,
    build_runtimes,
    runtime_for,
    spec_prices,
    validate_profile_settings,
    validate_spec,
)
from chalicelib.adapters.runtimes.answer_payload import usd_to_micros
from chalicelib.adapters.runtimes.http import HttpRuntime
from chalicelib.adapters.runtimes.recorded import RecordedRuntime
from chalicelib.config import Settings
from chalicelib.domain.enums import RuntimeKind
from chalicelib.domain.models import Usage
from chalicelib.errors import InvalidInputError, is_retryable_status


def stub_resolver(host: str, port: int) -> list[str]:
    """No real DNS in unit tests: `*.example` names are public, `meta.test` the metadata address."""
    if host == "meta.test":
        return ["169.254.169.254"]
    if host.endswith(".example"):
        return ["8.8.8.8"]
    raise OSError(f"{host} does not resolve")


@pytest.fixture()
def runtimes():
    return build_runtimes(
        resolver=lambda: stub_resolver, lambda_client_factory=lambda: pytest.fail("built eagerly")
    )


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
    validate_spec(
        {"runtime": "lambda", "function_name": "assay-agent-x"}, runtimes
    )  # no client built


def test_the_defaults_allow_no_python_module_and_no_private_network(runtimes) -> None:
    with pytest.raises(InvalidInputError) as info:
        validate_spec({"runtime": "python", "entrypoint": "bench.agents:sleepy"}, runtimes)
    assert (info.value.field, "ASSAY_PYTHON_AGENT_MODULES" in info.value.message) == (
        "spec.runtime",
        True,
    )
    with pytest.raises(InvalidInputError, match="ASSAY_ALLOW_PRIVATE_NETWORK"):
        validate_spec({"runtime": "http", "url": "http://127.0.0.1:8000/ask"}, runtimes)


def test_the_runtimes_read_the_operators_settings_when_called() -> None:
    current = [Settings.model_construct()]
    runtimes = build_runtimes(settings=lambda: current[0], resolver=lambda: stub_resolver)
    python = {"runtime": "python", "entrypoint": "bench.agents:sleepy"}
    local = {"runtime": "http", "url": "http://127.0.0.1:8000/ask"}
    fn = {"runtime": "lambda", "function_name": "team-x-agent"}
    for spec in (python, local, fn):
        with pytest.raises(InvalidInputError):
            validate_spec(spec, runtimes)
    current[0] = Settings.model_construct(
        assay_python_agent_modules="bench.agents",
        assay_allow_private_network=True,
        assay_lambda_function_prefix="team-x-",
    )
    for spec in (python, local, fn):
        validate_spec(spec, runtimes)
    current[0] = Settings.model_construct(assay_lambda_function_prefix="")
    with pytest.raises(InvalidInputError) as info:
        validate_spec(fn, runtimes)
    assert (info.value.field, "ASSAY_LAMBDA_FUNCTION_PREFIX" in info.value.message) == (
        "spec.runtime",
        True,
    )


@pytest.mark.parametrize(
    "spec",
    [
        {
            "runtime": "openai",
            "base_url": "https://api.example/v1",
            "model": "m",
            "api_key_env": "ASSAY_JWT_SECRET",
        },
        {
            "runtime": "openai",
            "base_url": "https://api.example/v1",
            "model": "m",
            "api_key_env": "AWS_SECRET_ACCESS_KEY",
        },
        {
            "runtime": "http",
            "url": "https://agent.example/ask",
            "api_key_env": "AWS_SECRET_ACCESS_KEY",
        },
        {"runtime": "recorded", "inline": {"c": "x"}, "api_key_env": None},
    ],
)
def test_api_key_env_is_refused_in_every_spec(runtimes, spec: dict) -> None:
    with pytest.raises(InvalidInputError) as info:
        validate_spec(spec, runtimes)
    assert info.value.field == "spec.api_key_env"
    assert "api_key_secret" in info.value.message


def test_a_profile_holds_connection_settings_only(runtimes) -> None:
    settings = {
        "base_url": "https://api.example/v1",
        "api_key_secret": "openai",
        "max_tokens": 64,
        "extra_headers": {"X-Team": "evals", "X-Key": {"secret": "gw"}},
        "system_prompt": "Be brief.",
        "url": "https://agent.example/ask",
        "headers": {"Authorization": {"secret": "a", "prefix": "Bearer "}},
    }
    assert set(settings) == set(PROFILE_SETTING_KEYS)
    assert validate_profile_settings(settings, runtimes) == settings


@pytest.mark.parametrize(
    ("settings", "field"),
    [
        ({"api_key_env": "ASSAY_JWT_SECRET"}, "settings.api_key_env"),
        ({"runtime": "python"}, "settings.runtime"),
        ({"entrypoint": "os:getcwd"}, "settings.entrypoint"),
        ({"recording": "/etc/passwd"}, "settings.recording"),
        ({"recording_id": "r1"}, "settings.recording_id"),
        ({"function_name": "assay-agent-x"}, "settings.function_name"),
        ({"inline": {"c": "x"}}, "settings.inline"),
        ({"model": "m"}, "settings.model"),
        ({"base_url": "http://169.254.169.254/"}, "settings.base_url"),
        ({"base_url": "https://meta.test/v1"}, "settings.base_url"),
        ({"url": "http://[fd00:ec2::254]/"}, "settings.url"),
        ({"base_url": "http://user:pw@api.example/"}, "settings.base_url"),
        ({"api_key_secret": "../x"}, "settings.api_key_secret"),
        (
            {"extra_headers": {"Authorization": "Bearer sk-abcdefghijklmnopqrstuvwx"}},
            "settings.extra_headers",
        ),
        ({"headers": {"X-Aws": "AKIAABCDEFGHIJKLMNOP"}}, "settings.headers"),
        ({"max_tokens": 0}, "settings.max_tokens"),
        ({"system_prompt": 5}, "settings.system_prompt"),
    ],
)
def test_a_profile_setting_that_is_not_a_valid_connection_key_is_named(
    runtimes, settings: dict, field: str
) -> None:
    with pytest.raises(InvalidInputError) as info:
        validate_profile_settings(settings, runtimes)
    assert info.value.field == field


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


def test_a_cost_past_what_decimal_holds_is_a_malformed_answer_not_an_arithmetic_error() -> None:
    # Decimal's Overflow is no ValueError: uncaught, it left the case for SQS to deliver again.
    assert usd_to_micros("1e30") == 10**36  # large, yet a number: the cost bound judges it
    with pytest.raises(ValueError, match="too large"):
        usd_to_micros("1e999999")
