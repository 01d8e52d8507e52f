"""A user id (a member's, a token's `sub`) reads as it is (`domain.access.user_id_problem`,
`domain.identity.from_claims`; docs/reference/api-overview.md, "Tokens"): no control, format or
bidirectional characters and no spaces at either end, so two ids that read the same are the same
string. U+202E and U+2066/U+2069 are bidirectional controls (Cf), U+200B a format character (Cf),
U+0085 a control character (Cc), U+2028 a line separator (Zl); U+FE0F, U+034F, U+E0100 (Mn) and the
Hangul fillers U+115F, U+3164, U+FFA0 (Lo) are default-ignorable code points, U+2800 and U+FFFC
blank-looking symbols (So): each refused."""

from __future__ import annotations

import pytest

from chalicelib.domain.access import check_user_id, user_id_problem
from chalicelib.domain.identity import from_claims
from chalicelib.errors import InvalidInputError, UnauthenticatedError


@pytest.mark.parametrize(
    "user_id", ["tester@example.com", "Ana María Ødegård", "auth0|64f1c2", "x" * 200, "李雷"]
)
def test_a_user_id_that_reads_as_it_is_is_one(user_id):
    assert user_id_problem(user_id) is None
    assert check_user_id(user_id) == user_id


@pytest.mark.parametrize(
    ("user_id", "problem"),
    [
        (" tester@example.com ", "must not start or end with a space"),
        (
            "tester@example.com\t",
            "must not contain control, format or bidirectional characters "
            "(found U+0009): a user id reads as it is",
        ),
        (
            "admin\u202e@x",
            "must not contain control, format or bidirectional characters "
            "(found U+202E): a user id reads as it is",
        ),
        (
            "\u2066a\u200bb\u2069",
            "must not contain control, format or bidirectional characters "
            "(found U+2066, U+200B, U+2069): a user id reads as it is",
        ),
        (
            "a\x85b\x85",
            "must not contain control, format or bidirectional characters "
            "(found U+0085): a user id reads as it is",
        ),
        (
            "a\u2028b",
            "must not contain control, format or bidirectional characters "
            "(found U+2028): a user id reads as it is",
        ),
        ("", "must be a string of 1-200 characters"),
        ("x" * 201, "must be a string of 1-200 characters"),
        (42, "must be a string of 1-200 characters"),
    ],
)
def test_a_user_id_that_reads_as_another_is_refused_saying_why(user_id, problem):
    assert user_id_problem(user_id) == problem
    with pytest.raises(InvalidInputError) as refused:
        check_user_id(user_id)
    assert refused.value.field == "user_id"
    assert refused.value.message == f"user_id {problem}"


def _claims(**over):
    return {"org": "org_a", "sub": "tester@example.com", **over}


def test_a_token_s_sub_is_a_user_id():
    assert from_claims(_claims()).user_id == "tester@example.com"


@pytest.mark.parametrize("sub", [" tester@example.com ", "admin\u202e@x", "tester\u200b"])
def test_a_token_whose_sub_reads_as_another_user_is_refused_naming_sub(sub):
    with pytest.raises(UnauthenticatedError) as refused:
        from_claims(_claims(sub=sub))
    assert refused.value.field == "Authorization"
    assert refused.value.details == {"claim": "sub"}
    assert refused.value.message.startswith("token's user (sub) must not")


@pytest.mark.parametrize("act", [{"sub": " admin@x "}, {"sub": "admin\u202e@x"}, {}, "admin"])
def test_an_act_claim_naming_no_user_id_is_refused_naming_act(act):
    with pytest.raises(UnauthenticatedError) as refused:
        from_claims(_claims(act=act))
    assert refused.value.details == {"claim": "act"}
    assert refused.value.message.startswith("token act claim must name who acts: act.sub must")


def test_a_missing_organization_or_user_names_the_claim():
    with pytest.raises(UnauthenticatedError) as no_org:
        from_claims({"sub": "tester@example.com"}, org_claim="tenant")
    assert no_org.value.details == {"claim": "tenant"}
    with pytest.raises(UnauthenticatedError) as no_sub:
        from_claims({"org": "org_a", "sub": ""})
    assert no_sub.value.details == {"claim": "sub"}
    with pytest.raises(UnauthenticatedError) as bad_org:
        from_claims(_claims(org="a#b"))
    assert bad_org.value.details == {"claim": "org"}


@pytest.mark.parametrize(
    ("user_id", "found"),
    [
        ("tester@example.com\ufe0f", "U+FE0F"),  # VARIATION SELECTOR-16 (Mn)
        ("tester@exam\u034fple.com", "U+034F"),  # COMBINING GRAPHEME JOINER (Mn)
        ("tester@example.com\u3164", "U+3164"),  # HANGUL FILLER (Lo)
        ("\u115ftester@example.com", "U+115F"),  # HANGUL CHOSEONG FILLER (Lo)
        ("tester@example.com\u2800", "U+2800"),  # BRAILLE PATTERN BLANK (So)
        ("tester@example.com\U000e0100", "U+E0100"),  # VARIATION SELECTOR-17 (Mn)
        ("tester@example.com\ufffc", "U+FFFC"),  # OBJECT REPLACEMENT CHARACTER (So)
        ("\u3164", "U+3164"),
        ("a\uffa0b\u3164\uffa0", "U+FFA0, U+3164"),
    ],
)
def test_a_user_id_with_an_invisible_or_blank_character_is_refused_naming_it(user_id, found):
    problem = (
        f"must not contain invisible or blank characters (found {found}): a user id reads as it is"
    )
    assert user_id_problem(user_id) == problem
    with pytest.raises(InvalidInputError) as refused:
        check_user_id(user_id)
    assert (refused.value.field, refused.value.message) == ("user_id", f"user_id {problem}")


@pytest.mark.parametrize("sub", ["tester@example.com\ufe0f", "\u3164", "tester\u2800"])
def test_a_token_whose_sub_holds_an_invisible_character_is_refused_naming_sub(sub):
    with pytest.raises(UnauthenticatedError) as refused:
        from_claims(_claims(sub=sub))
    assert refused.value.details == {"claim": "sub"}
    assert refused.value.message.startswith(
        "token's user (sub) must not contain invisible or blank characters (found U+"
    )


def test_an_act_claim_naming_an_invisible_user_is_refused_naming_act():
    with pytest.raises(UnauthenticatedError) as refused:
        from_claims(_claims(act={"sub": "boss@x\ufe0f"}))
    assert refused.value.details == {"claim": "act"}
    assert "(found U+FE0F)" in refused.value.message
