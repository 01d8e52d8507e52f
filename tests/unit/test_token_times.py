"""The times of a token's claims (`domain.identity.check_token_times`, docs/reference/access.md
"Tokens"): each a JSON number, the token refused once expired, before `nbf`, issued in the future,
or living longer than the configured maximum. Pure: `now_s` is given."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain.identity import check_token_times
from chalicelib.errors import UnauthenticatedError

NOW = 1_800_000_000
DAY = 86_400
MAX = 30 * DAY
LEEWAY = 30


def check(**claims: Any) -> None:
    check_token_times(claims, now_s=NOW, leeway_s=LEEWAY, max_lifetime_s=MAX)


def refused(**claims: Any) -> UnauthenticatedError:
    with pytest.raises(UnauthenticatedError) as caught:
        check(**claims)
    assert caught.value.field == "Authorization"
    return caught.value


@pytest.mark.parametrize("claim", ["exp", "nbf", "iat"])
@pytest.mark.parametrize(
    "value",
    [str(NOW + 600), "1e14", "soon", True, None, float("nan"), float("inf"), [NOW], {"t": NOW}],
)
def test_a_time_claim_that_is_not_a_number_is_refused_naming_it(claim, value):
    claims: dict[str, Any] = {"exp": NOW + 600, "iat": NOW, claim: value}
    error = refused(**claims)
    assert error.details["claim"] == claim
    assert f"token {claim} claim is not a number" in error.message


def test_an_integer_too_large_to_be_a_time_is_not_a_number():
    error = refused(exp=10**400, iat=NOW)
    assert error.details["claim"] == "exp" and "not a number" in error.message


@pytest.mark.parametrize(
    ("claims", "why"),
    [
        ({"exp": 1e14, "iat": NOW}, "lifetime (exp - iat)"),
        ({"exp": 1e300, "iat": NOW}, "over 1,000 years"),
        ({"exp": 1e14}, "lifetime (exp - now)"),
        ({"exp": NOW + MAX + LEEWAY + 1, "iat": NOW}, "2,592,031 s (30 days)"),
        ({"exp": NOW + 600, "iat": NOW - MAX}, "lifetime (exp - iat)"),  # issued long ago
    ],
)
def test_a_lifetime_over_the_maximum_is_refused_naming_exp(claims, why):
    error = refused(**claims)
    assert error.details["claim"] == "exp"
    assert why in error.message and "ASSAY_JWT_MAX_LIFETIME_SECONDS" in error.message


def test_a_lifetime_of_the_maximum_and_a_float_time_are_accepted():
    check(exp=NOW + MAX, iat=NOW)
    check(exp=NOW + MAX + LEEWAY, iat=NOW)  # the leeway allows for the signer's clock
    check(exp=NOW + MAX - 1)  # no iat: from now
    check(exp=NOW + 600.5, iat=NOW - 0.25, nbf=NOW - 1.0)


@pytest.mark.parametrize(
    ("claims", "claim", "why"),
    [
        ({}, "exp", "no exp claim"),
        ({"exp": NOW - LEEWAY}, "exp", "expired"),
        ({"exp": NOW + 600, "nbf": NOW + LEEWAY + 1}, "nbf", "nbf is in the future"),
        ({"exp": NOW + 600, "iat": NOW + LEEWAY + 1}, "iat", "iat is in the future"),
    ],
)
def test_a_token_out_of_its_time_is_refused_naming_the_claim(claims, claim, why):
    error = refused(**claims)
    assert error.details["claim"] == claim and why in error.message


def test_the_leeway_allows_for_clock_skew():
    check(exp=NOW - LEEWAY + 1)
    check(exp=NOW + 600, nbf=NOW + LEEWAY, iat=NOW + LEEWAY)
