"""Settings read from the environment (issue 12 scope 3: without pydantic-settings, the same
behaviour): each setting from the variable of its name in any case, arguments first, a value that
does not validate refused naming the setting."""

from __future__ import annotations

from decimal import Decimal

import pytest
from pydantic import ValidationError

from chalicelib.config import Settings, get_settings, settings_error_line


def test_each_setting_is_read_from_its_variable_in_either_case(monkeypatch):
    monkeypatch.setenv("EVAL_RERUNS", "3")
    monkeypatch.setenv("eval_significance", "0.01")
    monkeypatch.setenv("ASSAY_ALLOW_PRIVATE_NETWORK", "true")
    monkeypatch.setenv("ASSAY_REQUEST_MAX_COST_USD", "2.5")
    monkeypatch.setenv("AWS_ENDPOINT_URL", "http://127.0.0.1:5000")
    s = Settings()
    assert s.eval_reruns == 3 and s.eval_significance == 0.01
    assert s.assay_allow_private_network is True
    assert s.assay_request_max_cost_usd == Decimal("2.5") and s.request_max_cost_micros == 2_500_000
    assert s.aws_endpoint_url == "http://127.0.0.1:5000"


def test_unset_settings_keep_the_documented_defaults_and_other_variables_are_ignored(monkeypatch):
    for name in Settings.model_fields:
        monkeypatch.delenv(name.upper(), raising=False)
    monkeypatch.setenv("EVAL_NOT_A_SETTING", "x")
    s = Settings()
    assert (s.eval_run_concurrency, s.eval_org_concurrency, s.eval_reruns) == (3, 6, 2)
    assert s.evaluation_case_timeout_seconds == 600 and s.aws_endpoint_url is None
    assert not hasattr(s, "eval_not_a_setting")


def test_an_argument_wins_over_the_environment(monkeypatch):
    monkeypatch.setenv("EVAL_RERUNS", "3")
    assert Settings(eval_reruns=1).eval_reruns == 1


@pytest.mark.parametrize(
    ("variable", "value"),
    [
        ("EVAL_RERUNS", "9"),
        ("EVAL_RERUNS", ""),
        ("EVAL_SIGNIFICANCE", "1"),
        ("assay_token_ttl_seconds", "59"),
        ("ASSAY_ALLOW_PRIVATE_NETWORK", "maybe"),
    ],
)
def test_a_value_that_does_not_validate_is_refused_naming_the_setting(monkeypatch, variable, value):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError) as refused:
        Settings()
    assert [e["loc"] for e in refused.value.errors()] == [(variable.lower(),)]


def test_settings_are_frozen_and_read_once(monkeypatch):
    get_settings.cache_clear()
    first = get_settings()
    monkeypatch.setenv("EVAL_RERUNS", "4")
    assert get_settings() is first
    with pytest.raises(ValidationError):
        first.eval_reruns = 4  # type: ignore[misc]  # the point: it cannot change
    get_settings.cache_clear()


@pytest.mark.parametrize(
    ("variable", "value", "line"),
    [
        ("EVAL_RERUNS", "9", "EVAL_RERUNS=9: must be 0-5"),
        (
            "ASSAY_ALLOW_PRIVATE_NETWORK",
            "maybe",
            "ASSAY_ALLOW_PRIVATE_NETWORK=maybe: must be true or false",
        ),
        (
            "ASSAY_TOKEN_TTL_SECONDS",
            "",
            "ASSAY_TOKEN_TTL_SECONDS=: must be a whole number, at least 60",
        ),
        ("EVAL_MAX_LUCK", "1.5", "EVAL_MAX_LUCK=1.5: must be a number, over 0 and under 1"),
        ("ASSAY_LOG_FORMAT", "xml", "ASSAY_LOG_FORMAT=xml: must be one of json, text (or unset)"),
        ("ASSAY_OPERATOR_KEY", "too-short", "ASSAY_OPERATOR_KEY=(hidden): must match"),
    ],
)
def test_a_bad_setting_is_one_line_naming_its_variable_value_and_rule(
    monkeypatch, variable, value, line
):
    monkeypatch.setenv(variable, value)
    with pytest.raises(ValidationError) as refused:
        Settings()
    said = settings_error_line(refused.value)
    assert said.startswith(line) and "\n" not in said


def test_two_bad_settings_are_both_named_on_the_one_line(monkeypatch):
    monkeypatch.setenv("EVAL_RERUNS", "-1")
    monkeypatch.setenv("EVAL_RUN_CONCURRENCY", "0")
    with pytest.raises(ValidationError) as refused:
        Settings()
    said = settings_error_line(refused.value)
    assert "EVAL_RERUNS=-1: must be 0-5" in said and "EVAL_RUN_CONCURRENCY=0: must be 1-100" in said
