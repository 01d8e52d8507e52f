"""Checks other than the text scorers whose reference names a secret (docs/reference/scorers.md,
"A reference that names a secret"): expected tool calls and JSON Schemas compared in the redacted
space, regex failures that never read as a pass, and secrets written with regex escapes redacted
before a case is kept.

Every secret here is hand-written: it has the shape of a real one and belongs to nobody.
"""

from __future__ import annotations

import re
from typing import Any

import pytest

from chalicelib.domain.models import (
    AgentAnswer,
    Case,
    Check,
    ExpectedCall,
    ScoreResult,
    ScoringConfig,
    ToolCall,
)
from chalicelib.domain.redaction import redact, redact_value, value_holds_placeholder
from chalicelib.domain.redaction_patterns import (
    pattern_holds_placeholder,
    pattern_placeholders_literal,
    redact_case_patterns,
    redact_pattern,
    unescape_pattern,
)
from chalicelib.domain.scorers import grade

KEY = "AKIAIOSFODNN7EXAMPLE"
OTHER_KEY = "AKIAI44QH8DHBEXAMPLE"
TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
JWT = (
    "eyJhbGciOiJIUzI1NiIsInR5cCI6IkpXVCJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0."
    "SflKxwRJSMeKKF2QT4fwpMeJf36POk6yJV_adQssw5c"
)
PLACED = "[REDACTED:aws_access_key]"


def _grade(case: Case, answer: AgentAnswer, scorer: str, **settings: Any) -> ScoreResult:
    scoring = ScoringConfig(required=[scorer], settings={scorer: settings} if settings else {})
    result = grade(case, answer, scoring)
    assert len(result.scores) == 1, result
    return result.scores[0]


# ---------------------------------------------------------------------------------------
# tool_calls
# ---------------------------------------------------------------------------------------


def calls(expected: list[ExpectedCall], made: list[ToolCall], **settings: Any) -> ScoreResult:
    case = Case(case_id="c1", input="q", expected_calls=expected)
    return _grade(case, AgentAnswer(answer="x", calls=made), "tool_calls", **settings)


def kept_call(name: str, arguments: dict[str, Any]) -> ExpectedCall:
    """An expected call as a case keeps it: redacted."""
    return ExpectedCall(name=name, arguments=redact_value(arguments))


def test_an_expected_call_kept_redacted_matches_the_call_with_the_secret() -> None:
    expected = kept_call("send", {"key": KEY, "to": "ops"})
    assert expected.arguments == {"key": PLACED, "to": "ops"}
    result = calls([expected], [ToolCall(name="send", arguments={"key": KEY, "to": "ops"})])
    assert (result.passed, result.score) == (True, 1.0)
    assert result.reason == "all 1 expected calls made (secrets compared by their kind)"


def test_any_key_of_the_kind_matches_but_the_rest_of_the_arguments_must_too() -> None:
    expected = kept_call("send", {"key": KEY, "to": "ops"})
    other = calls([expected], [ToolCall(name="send", arguments={"key": OTHER_KEY, "to": "ops"})])
    assert other.passed is True
    wrong_to = calls([expected], [ToolCall(name="send", arguments={"key": KEY, "to": "dev"})])
    assert (wrong_to.passed, wrong_to.score) == (False, 0.0)
    assert wrong_to.reason == (
        f"missing 1 of 1 expected calls: send(key='{PLACED}', to='ops') (calls made: send; "
        "arguments holding a secret are compared by their kind, with the calls' secrets redacted)"
    )


def test_a_secret_of_another_kind_or_none_does_not_match() -> None:
    expected = kept_call("send", {"key": KEY})
    token = calls([expected], [ToolCall(name="send", arguments={"key": TOKEN})])
    assert token.passed is False
    plain = calls([expected], [ToolCall(name="send", arguments={"key": "abc"})])
    assert plain.passed is False
    # the argument nested deeper is compared so too
    nested = kept_call("send", {"auth": {"keys": [KEY]}})
    made = ToolCall(name="send", arguments={"auth": {"keys": [OTHER_KEY]}})
    assert calls([nested], [made]).passed is True


def test_a_redacted_expectation_beside_a_plain_one_each_takes_its_own_call() -> None:
    secret = kept_call("send", {"key": KEY})
    plain = ExpectedCall(name="send", arguments={"key": "public"})
    made = [
        ToolCall(name="send", arguments={"key": "public"}),
        ToolCall(name="send", arguments={"key": KEY}),
    ]
    assert calls([secret, plain], made).score == 1.0
    # in order: the secret's call must come first
    ordered = calls([secret, plain], made, ordered=True)
    assert (ordered.passed, ordered.score) == (False, 0.5)
    assert calls([plain, secret], made, ordered=True).passed is True


def test_expected_calls_without_secrets_keep_their_reason() -> None:
    result = calls(
        [ExpectedCall(name="send", arguments={"to": "ops"})], [ToolCall(name="send", arguments={})]
    )
    assert result.reason == "missing 1 of 1 expected calls: send(to='ops') (calls made: send)"


# ---------------------------------------------------------------------------------------
# json_schema
# ---------------------------------------------------------------------------------------


def schema_check(answer: str, schema: dict[str, Any], *, embedded: bool = False) -> ScoreResult:
    extra = {"embedded": True} if embedded else {}
    case = Case(
        case_id="c1", input="q", checks=[Check(scorer="json_schema", schema=schema, **extra)]
    )
    return _grade(case, AgentAnswer(answer=answer), "json_schema")


SCHEMA_NOT_QUOTED = (
    " (the answer's values are not quoted: they hold a secret, and redacted as every reason is "
    "kept they could seem to match)"
)
KEPT_SCHEMA = {"type": "object", "properties": {"key": {"const": PLACED}}, "required": ["key"]}


def test_a_schema_kept_redacted_matches_the_answer_with_the_secret() -> None:
    assert redact_value({"properties": {"key": {"const": KEY}}}) == {
        "properties": {"key": {"const": PLACED}}
    }
    result = schema_check(f'{{"key": "{KEY}"}}', KEPT_SCHEMA)
    assert (result.passed, result.reason) == (
        True,
        "answer matches the schema (secrets compared by their kind, with the answer's secrets "
        "redacted)",
    )
    embedded = schema_check(f'Here: {{"key": "{OTHER_KEY}"}} done', KEPT_SCHEMA, embedded=True)
    assert embedded.passed is True
    assert embedded.reason.startswith("the answer holds JSON that matches the schema")


def test_a_schema_kept_redacted_fails_another_kind_naming_the_redacted_value() -> None:
    result = schema_check(f'{{"key": "{TOKEN}"}}', KEPT_SCHEMA)
    assert result.passed is False
    assert result.reason == (
        f"answer does not match the schema at $.key: '{PLACED}' was expected (secrets compared "
        "by their kind, with the answer's secrets redacted)"
    )
    enum = {"properties": {"key": {"enum": [PLACED]}}}
    failed = schema_check(f'{{"key": "{TOKEN}"}}', enum)
    assert failed.passed is False
    # the value the reason quotes is the answer's as kept: it visibly differs from the enum's
    assert "'[REDACTED:github_token]' is not one of ['[REDACTED:aws_access_key]']" in failed.reason


def test_a_pattern_in_a_schema_matches_its_placeholder_escaped_or_not() -> None:
    for pattern in (f"^{PLACED}$", r"^\[REDACTED:aws_access_key\]$"):
        schema = {"properties": {"key": {"type": "string", "pattern": pattern}}}
        assert schema_check(f'{{"key": "{KEY}"}}', schema).passed is True
        # as a character class the pattern would match one letter: it does not
        assert schema_check('{"key": "a"}', schema).passed is False


def test_a_schema_failure_never_quotes_an_answer_that_redacted_would_match() -> None:
    schema = {"properties": {"key": {"type": "string", "pattern": "REDACTED"}}}
    result = schema_check(f'{{"key": "{KEY}"}}', schema)
    assert result.passed is False
    assert result.reason == f"answer does not match the schema{SCHEMA_NOT_QUOTED}"
    plain = schema_check('{"key": "abc"}', schema)
    assert (
        plain.reason == "answer does not match the schema at $.key: 'abc' does not match 'REDACTED'"
    )


def test_a_schema_failure_on_a_value_holding_a_secret_names_only_where_and_the_keyword() -> None:
    schema = {"properties": {"key": {"maxLength": 5}, "n": {"type": "integer"}}}
    result = schema_check(f'{{"key": "{KEY}", "n": 1}}', schema)
    assert result.reason == (
        f"answer does not match the schema at $.key (maxLength){SCHEMA_NOT_QUOTED}"
    )
    # a failing value without a secret is quoted as always, beside a value holding one
    other = schema_check(
        f'{{"key": "abc", "n": "{KEY}"}}', {"properties": {"key": {"type": "integer"}}}
    )
    assert other.reason == (
        "answer does not match the schema at $.key: 'abc' is not of type 'integer'"
    )


# ---------------------------------------------------------------------------------------
# regex
# ---------------------------------------------------------------------------------------


def regex(answer: str, pattern: str) -> ScoreResult:
    case = Case(case_id="c1", input="q", checks=[Check(scorer="regex", pattern=pattern)])
    return _grade(case, AgentAnswer(answer=answer), "regex")


ANSWER = f"the key is {KEY}"
NOT_QUOTED_REDACTED = (
    " (the answer is not quoted: it holds a secret, and redacted as every reason is kept it "
    "would seem to match)"
)
NOT_QUOTED_PATTERN = (
    " (the answer is not quoted: the pattern holds a secret, compared by its kind with the "
    "answer's secrets redacted)"
)


def test_an_escaped_placeholder_is_a_placeholder() -> None:
    escaped = r"key is \[REDACTED:aws_access_key\]"
    assert pattern_holds_placeholder(escaped) and pattern_holds_placeholder(f"is {PLACED}")
    assert not pattern_holds_placeholder(r"key is \[REDACTED\]")
    assert pattern_placeholders_literal(f"^{PLACED}$") == r"^\[REDACTED:aws_access_key\]$"
    assert pattern_placeholders_literal(escaped) == escaped
    result = regex(ANSWER, escaped)
    assert (result.passed, result.reason) == (
        True,
        rf"/{escaped}/ matched 'key is {PLACED}'",
    )
    failed = regex(f"the key is {TOKEN}", escaped)
    assert (failed.passed, failed.reason) == (
        False,
        f"no match for /{escaped}/{NOT_QUOTED_PATTERN}",
    )


@pytest.mark.parametrize("pattern", ["REDACTED", "^the key is .{25}$", r"\[\w+:aws"])
def test_a_failure_the_redacted_answer_would_match_does_not_quote_it(pattern: str) -> None:
    # "[REDACTED:aws_access_key]" is 25 characters, the key 20: only the redacted answer matches
    result = regex(ANSWER, pattern)
    assert (result.passed, result.reason) == (
        False,
        f"no match for /{pattern}/{NOT_QUOTED_REDACTED}",
    )


def test_a_failure_the_redacted_answer_does_not_match_still_quotes_it() -> None:
    result = regex(ANSWER, "^the lock")
    # Quoted as kept: the answer's key written as its placeholder, never a piece of it.
    assert result.reason == (f"expected a match for /^the lock/, got '{redact(ANSWER)}'")
    assert KEY not in result.reason
    assert regex("no key", "REDACTED").reason == "expected a match for /REDACTED/, got 'no key'"


def test_a_pattern_still_holding_a_secret_never_quotes_the_answer() -> None:
    # Kept so, the reason (redacted) would show the pattern's key and the answer's alike.
    pattern = re.escape(KEY)
    result = regex(f"the key is {OTHER_KEY}", pattern)
    assert (result.passed, result.reason) == (
        False,
        f"no match for /{pattern}/{NOT_QUOTED_PATTERN}",
    )
    assert regex(ANSWER, pattern).passed is True


# ---------------------------------------------------------------------------------------
# Secrets written with regex escapes
# ---------------------------------------------------------------------------------------


def test_unescape_reads_literal_escapes_and_maps_each_character_back() -> None:
    text, starts, ends = unescape_pattern(r"a\.b\x41\n\d\\")
    assert text == "a.bA\n\x00\\"
    assert starts == [0, 1, 3, 4, 8, 10, 12]
    assert ends == [1, 3, 4, 8, 10, 12, 14]
    assert unescape_pattern("tail\\") == ("tail\\", [0, 1, 2, 3, 4], [1, 2, 3, 4, 5])


ESCAPED = {
    "jwt": JWT,
    "openai_key": "sk-proj-Abc123Def456Ghi789Jkl012Mno345Pqr678",
    "anthropic_key": "sk-ant-api03-Zx9Yw8Vu7Ts6Rq5Po4Nm3Lk2Ji1Hg0FeDcBa-_AbCdEf",
    "slack_token": "xoxb-123456789012-1234567890123-AbCdEfGhIjKlMnOpQrStUvWx",
    "private_key": (
        "-----BEGIN RSA PRIVATE KEY-----\nMIIEowIBAAKCAQEA0Z3VS5JJcds3xfn/ygWyF8PbnGy0AHB7\n"
        "-----END RSA PRIVATE KEY-----"
    ),
}


@pytest.mark.parametrize("kind", sorted(ESCAPED))
def test_a_secret_written_with_escapes_is_replaced_whole(kind: str) -> None:
    escaped = re.escape(ESCAPED[kind])
    assert "\\" in escaped
    assert redact_pattern(f"token={escaped}$") == f"token=[REDACTED:{kind}]$"


def test_the_organizations_value_and_a_key_between_assertions_are_found() -> None:
    assert redact_pattern(r"^orgvalue\-Qx7Lm2Pz9$", ["orgvalue-Qx7Lm2Pz9"]) == "^[REDACTED:secret]$"
    assert redact_pattern(rf"\b{KEY}\b") == rf"\b{PLACED}\b"
    # the escapes around the secret stay as written, and a pattern without secrets is untouched
    assert redact_pattern(rf"key\ is\ {KEY}\.") == rf"key\ is\ {PLACED}\."
    assert redact_pattern(r"^\d+\.\d+$") == r"^\d+\.\d+$"


def test_a_cases_regex_and_schema_patterns_are_redacted_the_rest_untouched() -> None:
    escaped_jwt = re.escape(JWT)
    case = {
        "case_id": "c1",
        "input": escaped_jwt,
        "checks": [
            {"scorer": "regex", "pattern": f"token={escaped_jwt}"},
            {"scorer": "contains", "value": escaped_jwt},
            {
                "scorer": "json_schema",
                "schema": {"properties": {"t": {"pattern": escaped_jwt, "const": escaped_jwt}}},
            },
        ],
    }
    kept = redact_case_patterns(case)
    assert kept["input"] == escaped_jwt
    assert kept["checks"] == [
        {"scorer": "regex", "pattern": "token=[REDACTED:jwt]"},
        {"scorer": "contains", "value": escaped_jwt},
        {
            "scorer": "json_schema",
            "schema": {"properties": {"t": {"pattern": "[REDACTED:jwt]", "const": escaped_jwt}}},
        },
    ]
    assert case["checks"][0]["pattern"] == f"token={escaped_jwt}"  # not changed in place
    assert redact_case_patterns({"case_id": "c2", "input": "q"}) == {"case_id": "c2", "input": "q"}


def test_a_value_holds_a_placeholder_at_any_depth() -> None:
    assert value_holds_placeholder({"a": [{"b": PLACED}]})
    assert value_holds_placeholder({PLACED: 1})
    assert not value_holds_placeholder({"a": [1, None, "REDACTED"]})
