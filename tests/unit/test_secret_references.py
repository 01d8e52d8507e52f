"""A text check whose target holds a secret (docs/reference/scorers.md, "A reference that names a
secret"): kept redacted, it is compared in the redacted space, and a failure never reads as a pass.
"""

from __future__ import annotations

from typing import Any

from chalicelib.domain.models import AgentAnswer, Case, Check, ScoreResult, ScoringConfig
from chalicelib.domain.redaction import holds_placeholder, redact
from chalicelib.domain.scorers import grade

KEY = "AKIAIOSFODNN7EXAMPLE"
OTHER_KEY = "AKIAI44QH8DHBEXAMPLE"
TOKEN = "ghp_A1b2C3d4E5f6G7h8I9j0K1l2M3n4O5p6Q7r8"
NOT_QUOTED = (
    " (the answer is not quoted: the reference holds a secret, compared by its kind with the "
    "answer's secrets redacted)"
)


def score(scorer: str, answer: str, value: Any = None, reference: str | None = None) -> ScoreResult:
    checks = [Check(scorer=scorer, value=value)] if value is not None else []
    case = Case(case_id="c1", input="q", reference=reference, checks=checks)
    result = grade(case, AgentAnswer(answer=answer), ScoringConfig(required=[scorer]))
    assert len(result.scores) == 1, result
    return result.scores[0]


def test_a_reference_saved_with_a_key_is_kept_as_its_placeholder() -> None:
    kept = redact(f"the answer contains {KEY}")
    assert kept == "the answer contains [REDACTED:aws_access_key]"
    assert holds_placeholder(kept) and not holds_placeholder("the answer contains a key")


def test_a_placeholder_matches_an_answer_holding_a_secret_of_its_kind() -> None:
    result = score("contains", f"Use {KEY} to sign in.", value="[REDACTED:aws_access_key]")
    assert (result.passed, result.score) == (True, 1.0)
    assert result.reason == (
        "answer contains '[REDACTED:aws_access_key]' (secrets compared by their kind)"
    )


def test_the_text_around_the_placeholder_must_match_too() -> None:
    target = "key: [REDACTED:aws_access_key]"
    assert score("contains", f"your key: {KEY}.", value=target).passed is True
    missed = score("contains", f"your id: {KEY}.", value=target)
    assert missed.passed is False
    assert missed.reason == f"the answer does not contain {target!r}{NOT_QUOTED}"


def test_the_reference_itself_matches_so_under_equals_and_icontains() -> None:
    reference = "[REDACTED:aws_access_key]"
    assert score("equals", f"  {KEY}\n", reference=reference).passed is True
    assert score("equals", f"key {KEY}", reference=reference).passed is False
    assert score("icontains", f"KEY IS {KEY}", value="Key is [REDACTED:aws_access_key]").passed


def test_a_secret_of_another_kind_does_not_match_and_the_answer_is_not_quoted() -> None:
    result = score("contains", f"here: {TOKEN}", value="[REDACTED:aws_access_key]")
    assert result.passed is False
    assert result.reason == f"the answer does not contain '[REDACTED:aws_access_key]'{NOT_QUOTED}"
    assert "here" not in result.reason and "github" not in result.reason


def test_an_answer_without_the_secret_fails_without_seeming_to_hold_it() -> None:
    result = score("contains", "I cannot share keys.", value="[REDACTED:aws_access_key]")
    assert result.passed is False
    assert result.reason.startswith("the answer does not contain")
    assert "cannot share" not in result.reason


def test_a_target_still_holding_the_secret_is_never_quoted_beside_another_key() -> None:
    # Kept before redaction of references, the target is the key itself: the answer's other key
    # would read, redacted as the reason is kept, exactly as the reference does.
    result = score("contains", f"the key is {OTHER_KEY}", value=KEY)
    assert result.passed is False
    assert result.reason == f"the answer does not contain {KEY!r}{NOT_QUOTED}"
    assert score("contains", f"the key is {KEY}", value=KEY).passed is True


def test_several_acceptable_texts_name_them_all_without_quoting() -> None:
    result = score("equals", "nothing", value=["[REDACTED:aws_access_key]", "none"])
    assert result.reason == (
        f"the answer does not equal any of '[REDACTED:aws_access_key]', 'none'{NOT_QUOTED}"
    )
    assert score("equals", KEY, value=["[REDACTED:aws_access_key]", "none"]).passed is True


def test_a_target_without_secrets_keeps_quoting_the_answer() -> None:
    result = score("contains", "red and green", value="blue")
    assert result.reason == "expected the answer to contain 'blue', got 'red and green'"


def test_a_regex_kept_redacted_matches_its_placeholder_not_a_character_class() -> None:
    def regex(answer: str, pattern: str) -> ScoreResult:
        case = Case(case_id="c1", input="q", checks=[Check(scorer="regex", pattern=pattern)])
        result = grade(case, AgentAnswer(answer=answer), ScoringConfig(required=["regex"]))
        return result.scores[0]

    pattern = redact(f"^key: {KEY}$")
    assert pattern == "^key: [REDACTED:aws_access_key]$"
    passed = regex(f"key: {KEY}", pattern)
    assert (passed.passed, passed.reason) == (
        True,
        "/^key: [REDACTED:aws_access_key]$/ matched 'key: [REDACTED:aws_access_key]'",
    )
    # read as a character class, the pattern would match "key: a"
    failed = regex("key: a", pattern)
    assert failed.passed is False
    assert failed.reason == (
        "no match for /^key: [REDACTED:aws_access_key]$/ (the answer is not quoted: the pattern "
        "holds a secret, compared by its kind with the answer's secrets redacted)"
    )
    assert regex(f"key: {TOKEN}", pattern).passed is False
