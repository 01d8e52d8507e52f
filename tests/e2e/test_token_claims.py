"""A bearer token's claims through the HTTP API (docs/reference/api-overview.md, "Tokens"): a time
claim that is not a JSON number, or a lifetime over `ASSAY_JWT_MAX_LIFETIME_SECONDS` (30 days
unless the operator says otherwise), is a 401 naming the claim, however well the token is signed;
so is a required claim missing or null or of the wrong JSON type (`sub`, `iss`, `jti` strings,
`aud` a string or a list of strings, `act` an object naming a user id), and a `sub` with control,
format, bidirectional or invisible characters (a variation selector, a Hangul filler, a braille
blank) or spaces at either end; a member's `user_id` is held to the same rule (400). A `crit`
header is a 401 naming the header."""

from __future__ import annotations

import json
import time
import uuid
from typing import Any

import jwt
import pytest
from jwt.api_jws import PyJWS

from tests.support.e2e import Api

DAY = 86_400
OMIT = "omit"
"""A claim `_token` leaves out."""


def _token(stack, **over: Any) -> str:
    """A token of the stack's own (HS256, its secret, issuer and audience) for a fresh
    organization, with `over` replacing or adding claims (`OMIT` leaves one out)."""
    s = stack.settings
    now = int(time.time())
    claims = {
        "sub": "tester@example.com",
        "org": f"org_tokens_{uuid.uuid4().hex[:10]}",
        "iss": s.assay_jwt_issuer,
        "aud": s.assay_jwt_audience,
        "iat": now,
        "exp": now + 600,
        **over,
    }
    kept = {k: v for k, v in claims.items() if v != OMIT}
    return jwt.encode(kept, s.assay_jwt_secret, algorithm="HS256")


def _ask(stack, token: str) -> tuple[int, Any]:
    return Api(stack.api_url, "org", "tester@example.com", token).call("GET", "/api/v1/me")


def _refused(stack, token: str) -> dict[str, Any]:
    status, body = _ask(stack, token)
    assert status == 401, body
    error = body["error"]
    assert (error["code"], error["field"]) == ("unauthenticated", "Authorization"), error
    assert token not in error["message"]
    return error


@pytest.mark.parametrize("claim", ["exp", "iat", "nbf"])
def test_a_time_claim_written_as_a_string_is_refused_naming_it(stack, claim):
    now = int(time.time())
    value = {"exp": now + 600, "iat": now, "nbf": now}[claim]
    error = _refused(stack, _token(stack, **{claim: str(value)}))
    assert error["claim"] == claim
    assert f"token {claim} claim is not a number" in error["message"]


@pytest.mark.parametrize("exp", [1e14, 1e300])
@pytest.mark.parametrize("iat", ["now", OMIT])
def test_a_token_that_never_expires_in_practice_is_refused_naming_exp(stack, exp, iat):
    token = _token(stack, exp=exp, iat=int(time.time()) if iat == "now" else OMIT)
    error = _refused(stack, token)
    start = "iat" if iat == "now" else "now"
    assert error["claim"] == "exp" and f"lifetime (exp - {start})" in error["message"], error


def test_a_lifetime_over_thirty_days_is_refused_and_thirty_days_is_not(stack):
    now = int(time.time())
    error = _refused(stack, _token(stack, iat=now, exp=now + 31 * DAY))
    assert error["claim"] == "exp" and "(exp - iat)" in error["message"]
    assert "ASSAY_JWT_MAX_LIFETIME_SECONDS" in error["message"]
    status, me = _ask(stack, _token(stack, iat=now, exp=now + 30 * DAY))
    assert status == 200, me


def test_the_operator_s_maximum_is_the_one_applied(stack, operator):
    operator(assay_jwt_max_lifetime_seconds=3600)
    now = int(time.time())
    error = _refused(stack, _token(stack, iat=now, exp=now + 2 * 3600))
    assert error["claim"] == "exp"
    assert "is 7,200 s, more than the 3,600 s" in error["message"], error
    status, me = _ask(stack, _token(stack, iat=now, exp=now + 1800))
    assert status == 200, me


def test_assay_token_signs_no_token_longer_than_the_maximum(stack, cli):
    refused = cli("token", "--org", "org_tokens_cli", "--ttl", "31d")
    assert refused.code == 3 and refused.out == "", refused
    assert refused.err.startswith("assay: --ttl: 2678400 s is longer"), refused.err
    assert "ASSAY_JWT_MAX_LIFETIME_SECONDS" in refused.err
    signed = cli("token", "--org", "org_tokens_cli", "--ttl", "30d")
    assert signed.code == 0, signed
    status, me = _ask(stack, signed.out.strip())
    assert status == 200, me


@pytest.mark.parametrize("exp", [OMIT, None])
def test_a_token_without_exp_or_with_exp_null_is_refused_naming_exp(stack, exp):
    error = _refused(stack, _token(stack, exp=exp))
    assert error["claim"] == "exp", error
    assert error["message"].startswith("token has no exp claim, or it is null"), error


@pytest.mark.parametrize("claim", ["iss", "aud", "sub"])
def test_every_required_claim_missing_is_named(stack, claim):
    error = _refused(stack, _token(stack, **{claim: OMIT}))
    assert error["claim"] == claim, error


@pytest.mark.parametrize("crit", [["exp"], ["b64"], ["urn:example:ext"], []])
def test_a_token_with_a_crit_header_is_refused_naming_the_header(stack, crit):
    s = stack.settings
    claims = jwt.decode(_token(stack), options={"verify_signature": False})
    token = jwt.encode(claims, s.assay_jwt_secret, algorithm="HS256", headers={"crit": crit})
    error = _refused(stack, token)
    assert error["header"] == "crit", error
    assert error["message"].startswith("token header crit is not supported"), error
    assert "not a JWT" not in error["message"]


@pytest.mark.parametrize(
    "sub",
    [
        "admin\u202e@x",  # a right-to-left override
        " tester@example.com ",
        "tester@example.com ",
        "tester@example.com\u200b",  # a zero-width space
        "\u2066tester@example.com\u2069",  # a bidirectional isolate
        "tester\x85@example.com",  # a C1 control
        "tester\u2028@example.com",  # a line separator
    ],
)
def test_a_sub_that_reads_as_another_user_is_refused_naming_sub(stack, sub):
    error = _refused(stack, _token(stack, sub=sub))
    assert error["claim"] == "sub", error
    assert error["message"].startswith("token's user (sub) must not"), error
    assert sub not in error["message"]


def test_a_sub_with_inner_spaces_and_letters_of_any_script_is_a_user(stack):
    status, me = _ask(stack, _token(stack, sub="Ana María Ødegård"))
    assert status == 200, me
    assert me["user_id"] == "Ana María Ødegård", me


@pytest.mark.parametrize("user_id", [" rui@example.com ", "rui\u202e@example.com"])
def test_a_member_s_user_id_is_held_to_the_same_rule(api, user_id):
    status, body = api.call("POST", "/api/v1/members", json={"user_id": user_id, "role": "viewer"})
    assert status == 400, body
    assert (body["error"]["code"], body["error"]["field"]) == ("invalid_input", "user_id"), body
    listed = api.ok("GET", "/api/v1/members")
    assert all(m["user_id"] != user_id for m in listed["members"])


@pytest.mark.parametrize(
    "sub",
    [
        "tester@example.com\ufe0f",  # a variation selector
        "tester@exam\u034fple.com",  # a combining grapheme joiner
        "tester@example.com\u3164",  # a Hangul filler
        "\u115ftester@example.com",  # a Hangul choseong filler
        "tester@example.com\u2800",  # a braille blank
        "tester@example.com\U000e0100",  # a supplementary variation selector
        "\u3164",  # nothing but a Hangul filler
    ],
)
def test_a_sub_with_an_invisible_or_blank_character_is_refused_naming_sub(stack, sub):
    error = _refused(stack, _token(stack, sub=sub))
    assert error["claim"] == "sub", error
    assert error["message"].startswith(
        "token's user (sub) must not contain invisible or blank characters (found U+"
    ), error
    assert sub not in error["message"]


def _signed(stack, claims: dict[str, Any]) -> str:
    """A token of the stack's secret over `claims` as they are (PyJWT's `encode` refuses some
    wrongly typed claims before signing)."""
    payload = json.dumps(claims).encode()
    return PyJWS().encode(payload, stack.settings.assay_jwt_secret, algorithm="HS256")


def _claims(stack, **over: Any) -> dict[str, Any]:
    return jwt.decode(_token(stack), options={"verify_signature": False}) | over


@pytest.mark.parametrize(
    ("claim", "value", "message"),
    [
        ("sub", ["tester@example.com"], "token's user (sub) must be a string"),
        ("sub", 5, "token's user (sub) must be a string"),
        ("iss", ["assay"], "token issuer (iss) must be a string"),
        ("iss", {"iss": "x"}, "token issuer (iss) must be a string"),
        ("aud", 5, "token audience (aud) must be a string or a list of strings"),
        ("aud", ["assay", 5], "token audience (aud) must be a string or a list of strings"),
        ("iss", "someone-else", "token issuer (iss) is not "),
        ("aud", ["someone-else"], "token audience (aud) is not "),
        ("jti", 5, "token id (jti) must be a string"),
    ],
)
def test_a_claim_of_the_wrong_type_or_value_is_refused_naming_it(stack, claim, value, message):
    error = _refused(stack, _signed(stack, _claims(stack, **{claim: value})))
    assert error["claim"] == claim, error
    assert error["message"].startswith(message), error


@pytest.mark.parametrize("act", [["boss@example.com"], "boss@example.com", {"sub": ["boss"]}])
def test_an_act_claim_of_the_wrong_type_is_refused_naming_act(stack, act):
    error = _refused(stack, _signed(stack, _claims(stack, act=act)))
    assert error["claim"] == "act", error


def test_an_audience_list_holding_the_service_s_audience_is_accepted(stack):
    audience = stack.settings.assay_jwt_audience
    status, me = _ask(stack, _signed(stack, _claims(stack, aud=["another", audience])))
    assert status == 200, me


@pytest.mark.parametrize(
    "user_id", ["tester@example.com\ufe0f", "b\u034fob@example.com", "\u3164", "bob\u2800"]
)
def test_a_member_s_user_id_with_an_invisible_character_is_refused(api, user_id):
    status, body = api.call("POST", "/api/v1/members", json={"user_id": user_id, "role": "viewer"})
    assert status == 400, body
    assert (body["error"]["code"], body["error"]["field"]) == ("invalid_input", "user_id"), body
    assert "must not contain invisible or blank characters" in body["error"]["message"], body
    listed = api.ok("GET", "/api/v1/members")
    assert all(m["user_id"] != user_id for m in listed["members"])
