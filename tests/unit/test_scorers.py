"""Deterministic scorers and the grading rule (docs/reference/scorers.md)."""

from __future__ import annotations

import socket
from fractions import Fraction
from typing import Any

import pytest

from chalicelib.domain import scorer_text, scorers
from chalicelib.domain.enums import AttemptState, CallStatus
from chalicelib.domain.models import (
    AgentAnswer,
    Case,
    Check,
    ExpectedCall,
    ScoreResult,
    ScoringConfig,
    ToolCall,
)
from chalicelib.domain.scorers import (
    SCORERS,
    Scorer,
    applicable_scorers,
    final_number,
    grade,
    is_gradable,
    register_scorer,
    validate_checks,
    validate_scoring,
)
from chalicelib.errors import InvalidInputError


def case(**fields: Any) -> Case:
    return Case(case_id=fields.pop("case_id", "c1"), input=fields.pop("input", "q"), **fields)


def answer(text: str, calls: list[ToolCall] | None = None) -> AgentAnswer:
    return AgentAnswer(answer=text, calls=calls or [])


def scoring(*required: str, **settings: dict[str, Any]) -> ScoringConfig:
    return ScoringConfig(required=list(required), settings=settings)


def only_score(
    c: Case, text: str, config: ScoringConfig, calls: list[ToolCall] | None = None
) -> ScoreResult:
    result = grade(c, answer(text, calls), config)
    assert len(result.scores) == 1, result
    return result.scores[0]


# --- the final number of a text ----------------------------------------------------------


@pytest.mark.parametrize(
    ("text", "expected"),
    [
        ("She makes 9 * 2 = $<<9*2=18>>18 every day.\n#### 18", Fraction(18)),
        ("#### 2,125", Fraction(2125)),
        ("A: 1,000", Fraction(1000)),
        ("It costs $18.00", Fraction(18)),
        ("The discount is 18%", Fraction(18)),
        ("The answer is 18.", Fraction(18)),
        ("A: -1.8 billion", Fraction(-18, 10)),
        ("A: 7/14", Fraction(1, 2)),
        ("He beat 20*.8", Fraction(4, 5)),
        ("a profit of $-90", Fraction(-90)),
        ("a loss of -$90", Fraction(-90)),
        ("16-3=13", Fraction(13)),
        ("1,2,3", Fraction(3)),
        ("10.833333333333332", Fraction("10.833333333333332")),
    ],
)
def test_the_final_number_of_a_text_is_read_as_people_write_numbers(
    text: str, expected: Fraction
) -> None:
    assert final_number(text) == expected


def test_the_number_after_the_last_marker_wins_over_later_numbers() -> None:
    # The marker is the agent's commitment; "for 3 days" after it is commentary.
    assert final_number("A: 12 apples\nA: 14 apples for 3 days") == 14


def test_a_marker_with_no_number_after_it_means_no_final_number() -> None:
    assert final_number("16 - 3 = 13\nA: John's age") is None


def test_a_minus_between_numbers_is_subtraction_not_a_sign() -> None:
    assert final_number("31 - 17") == 17


def test_a_date_is_not_read_as_a_fraction() -> None:
    assert final_number("due 3/4/2020") == 3


def test_text_without_numbers_has_no_final_number() -> None:
    assert final_number("no idea") is None
    assert final_number("") is None


# --- equals / contains / icontains -----------------------------------------------------------


def test_equals_passes_when_the_stripped_answer_is_the_reference() -> None:
    result = only_score(case(reference="Paris"), "  Paris\n", scoring("equals"))
    assert (result.passed, result.score) == (True, 1.0)


def test_equals_is_case_sensitive_and_says_what_it_expected() -> None:
    result = only_score(case(reference="Paris"), "paris", scoring("equals"))
    assert result.passed is False
    assert result.reason == "expected 'Paris', got 'paris'"


def test_a_check_value_takes_the_place_of_the_reference() -> None:
    c = case(reference="Paris", checks=[Check(scorer="equals", value="Paris, France")])
    assert only_score(c, "Paris, France", scoring("equals")).passed is True
    assert only_score(c, "Paris", scoring("equals")).passed is False


def test_contains_passes_when_the_answer_holds_the_reference_verbatim() -> None:
    c = case(reference="42")
    assert only_score(c, "The answer is 42.", scoring("contains")).passed is True
    assert only_score(c, "The answer is forty-two.", scoring("contains")).passed is False


def test_icontains_ignores_case() -> None:
    c = case(checks=[Check(scorer="icontains", value="PARIS")])
    assert only_score(c, "It is paris.", scoring("icontains")).passed is True


def test_two_checks_must_both_pass_and_the_score_is_the_share_that_did() -> None:
    c = case(checks=[Check(scorer="contains", value="red"), Check(scorer="contains", value="blue")])
    result = only_score(c, "red and green", scoring("contains"))
    assert result.passed is False
    assert result.score == 0.5
    assert result.reason == "expected the answer to contain 'blue', got 'red and green'"


def test_equals_does_not_apply_to_a_case_without_reference_or_check() -> None:
    assert applicable_scorers(case(), scoring("equals", "contains", "icontains")) == []


# --- regex -----------------------------------------------------------------------------------


def test_regex_searches_the_answer_for_the_checks_pattern() -> None:
    c = case(checks=[Check(scorer="regex", pattern=r"\b4\b")])
    assert only_score(c, "2 + 2 = 4", scoring("regex")).passed is True
    assert only_score(c, "2 + 2 = 44", scoring("regex")).passed is False


def test_regex_flags_make_the_search_case_insensitive() -> None:
    c = case(checks=[Check(scorer="regex", pattern="^yes$", flags="im")])
    assert only_score(c, "Well...\nYES", scoring("regex")).passed is True


def test_regex_takes_its_pattern_from_the_settings_when_the_case_has_no_check() -> None:
    config = scoring("regex", regex={"pattern": "^[A-D]$"})
    assert only_score(case(), "C", config).passed is True
    assert only_score(case(), "E", config).reason == "expected a match for /^[A-D]$/, got 'E'"


def test_regex_does_not_apply_without_a_pattern() -> None:
    assert not is_gradable(case(reference="x"), scoring("regex"))


def test_a_regex_that_backtracks_catastrophically_is_stopped_and_the_attempt_is_incomplete(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # The limit is read where the regex scorer lives (`scorers` only re-exports the constant).
    monkeypatch.setattr(scorer_text, "REGEX_SECONDS", 0.05)  # (a|aa)+$ on 40 a's: ~fib(40) paths
    c = case(checks=[Check(scorer="regex", pattern=r"^(a|aa)+$")])
    result = grade(c, answer("a" * 40 + "!"), scoring("regex"))
    assert result.state == AttemptState.INCOMPLETE
    assert result.scores[0].error is True
    assert "searched this answer for over 0.05 s" in result.scores[0].reason


# --- json_valid / json_schema ------------------------------------------------------------------


def test_json_valid_passes_json_and_fails_prose() -> None:
    assert only_score(case(), ' {"a": 1} ', scoring("json_valid")).passed is True
    result = only_score(case(), "Sure! {", scoring("json_valid"))
    assert result.passed is False
    assert result.reason == "answer is not valid JSON (Expecting value at line 1 column 1)"


PERSON = {
    "type": "object",
    "required": ["name", "age"],
    "properties": {"name": {"type": "string"}, "age": {"type": "integer"}},
}


def test_json_schema_passes_a_document_that_matches() -> None:
    config = scoring("json_schema", json_schema={"schema": PERSON})
    assert only_score(case(), '{"name": "Ada", "age": 36}', config).passed is True


def test_json_schema_says_where_the_document_breaks_the_schema() -> None:
    config = scoring("json_schema", json_schema={"schema": PERSON})
    result = only_score(case(), '{"name": "Ada", "age": "36"}', config)
    assert result.passed is False
    assert (
        result.reason == "answer does not match the schema at $.age: '36' is not of type 'integer'"
    )


def test_json_schema_fails_an_answer_that_is_not_json() -> None:
    c = case(checks=[Check(scorer="json_schema", schema=PERSON)])
    assert only_score(c, "Ada, 36", scoring("json_schema")).passed is False


@pytest.mark.parametrize(
    "ref",
    [
        "http://127.0.0.1:9/schema.json",
        "file:///etc/passwd",
        "https://json-schema.org/other.json#/x",
        "other.json",
    ],
)
def test_a_schema_that_refers_outside_itself_is_refused_at_save(ref: str) -> None:
    c = case(checks=[Check(scorer="json_schema", schema={"$ref": ref})])
    with pytest.raises(InvalidInputError) as caught:
        validate_checks(c)
    assert caught.value.field.endswith(".schema") and ref in str(caught.value)


def test_a_schema_may_refer_into_itself_and_to_the_meta_schemas() -> None:
    schema = {
        "$id": "https://example.com/person.json",
        "$defs": {"age": {"type": "integer"}},
        "type": "object",
        "properties": {
            "age": {"$ref": "#/$defs/age"},
            "again": {"$ref": "https://example.com/person.json#/$defs/age"},
            "schema": {"$ref": "https://json-schema.org/draft/2020-12/schema"},
        },
    }
    c = case(checks=[Check(scorer="json_schema", schema=schema)])
    validate_checks(c)
    assert only_score(c, '{"age": 3}', scoring("json_schema")).passed is True
    assert only_score(c, '{"age": "3"}', scoring("json_schema")).passed is False


def test_a_reference_that_slipped_past_saving_is_never_fetched() -> None:
    listener = socket.socket()
    listener.bind(("127.0.0.1", 0))
    listener.listen(4)
    listener.setblocking(False)
    try:
        url = f"http://127.0.0.1:{listener.getsockname()[1]}/schema.json"
        c = case(
            checks=[Check(scorer="json_schema", schema={"$ref": url})]
        )  # not validated: stored before the check
        result = grade(c, answer("{}"), scoring("json_schema"))
        assert result.state == AttemptState.INCOMPLETE and result.scores[0].error is True
        with pytest.raises(BlockingIOError):  # grading is synchronous: a fetch would be queued here
            listener.accept()
    finally:
        listener.close()


def test_a_broken_schema_leaves_the_attempt_incomplete_not_failed() -> None:
    c = case(checks=[Check(scorer="json_schema", schema={"type": "no-such-type"})])
    result = grade(c, answer("{}"), scoring("json_schema"))
    assert result.state == AttemptState.INCOMPLETE
    assert result.scores[0].error is True


# --- numeric_answer ---------------------------------------------------------------------------


def test_numeric_answer_compares_final_numbers_and_says_both() -> None:
    c = case(reference="Janet sells 9 eggs at $2.\n#### 18")
    result = only_score(c, "She makes 13 * 2 = $26\nA: 26", scoring("numeric_answer"))
    assert result.passed is False
    assert result.reason == "expected 18, got 26"


def test_numeric_answer_ignores_formatting_around_the_number() -> None:
    c = case(reference="1000")
    for text in ("A: 1,000", "$1,000.00", "It is 1000."):
        assert only_score(c, text, scoring("numeric_answer")).passed is True, text


def test_numeric_answer_tolerance_is_absolute_and_comes_from_the_settings() -> None:
    c = case(reference="3.14159")
    assert only_score(c, "3.14", scoring("numeric_answer")).passed is False
    loose = scoring("numeric_answer", numeric_answer={"tolerance": 0.002})
    assert only_score(c, "3.14", loose).passed is True


def test_numeric_answer_reads_its_expected_value_from_a_check() -> None:
    c = case(checks=[Check(scorer="numeric_answer", value=0.5)])
    assert only_score(c, "A: 1/2", scoring("numeric_answer")).passed is True


def test_an_answer_without_a_number_fails_numeric_answer() -> None:
    result = only_score(case(reference="18"), "I cannot tell.", scoring("numeric_answer"))
    assert result.passed is False
    assert result.reason == "expected 18, but the answer has no final number"


def test_numeric_answer_does_not_apply_to_a_reference_without_a_number() -> None:
    assert applicable_scorers(case(reference="Paris"), scoring("numeric_answer")) == []


# --- tool_calls -------------------------------------------------------------------------------


def call(name: str, **arguments: Any) -> ToolCall:
    return ToolCall(name=name, arguments=arguments)


def test_tool_calls_passes_when_every_expected_call_was_made_in_any_order() -> None:
    c = case(
        expected_calls=[
            ExpectedCall(name="search"),
            ExpectedCall(name="book", arguments={"room": 4}),
        ]
    )
    made = [call("book", room=4, when="today"), call("log"), call("search", q="rooms")]
    assert only_score(c, "done", scoring("tool_calls"), made).passed is True


def test_tool_calls_checks_the_given_arguments_exactly() -> None:
    c = case(expected_calls=[ExpectedCall(name="book", arguments={"room": 4})])
    result = only_score(c, "done", scoring("tool_calls"), [call("book", room="4")])
    assert result.passed is False
    assert result.reason == "missing 1 of 1 expected calls: book(room=4) (calls made: book)"


def test_true_is_not_the_number_one_in_expected_arguments() -> None:
    c = case(expected_calls=[ExpectedCall(name="page", arguments={"n": 1})])
    assert only_score(c, "", scoring("tool_calls"), [call("page", n=True)]).passed is False
    assert only_score(c, "", scoring("tool_calls"), [call("page", n=1.0)]).passed is True


def test_each_expected_call_needs_a_call_of_its_own() -> None:
    # The name-only expectation must not take the one call the stricter one needs.
    c = case(
        expected_calls=[
            ExpectedCall(name="search"),
            ExpectedCall(name="search", arguments={"q": "a"}),
        ]
    )
    both = [call("search", q="a"), call("search", q="b")]
    assert only_score(c, "", scoring("tool_calls"), both).passed is True
    result = only_score(c, "", scoring("tool_calls"), [call("search", q="a")])
    assert (result.passed, result.score) == (False, 0.5)


def test_ordered_tool_calls_require_the_expected_order() -> None:
    c = case(expected_calls=[ExpectedCall(name="search"), ExpectedCall(name="book")])
    config = scoring("tool_calls", tool_calls={"ordered": True})
    assert only_score(c, "", config, [call("search"), call("log"), call("book")]).passed is True
    result = only_score(c, "", config, [call("book"), call("search")])
    assert (result.passed, result.score) == (False, 0.5)


def test_a_blocked_call_still_counts_as_made() -> None:
    c = case(expected_calls=[ExpectedCall(name="delete")])
    made = [ToolCall(name="delete", status=CallStatus.BLOCKED)]
    assert only_score(c, "", scoring("tool_calls"), made).passed is True


def test_tool_calls_applies_only_to_cases_expecting_calls() -> None:
    assert applicable_scorers(case(reference="x"), scoring("tool_calls")) == []


# --- grade ------------------------------------------------------------------------------------


def test_an_answer_passing_every_applicable_scorer_is_passed() -> None:
    c = case(reference="18", checks=[Check(scorer="regex", pattern="18")])
    result = grade(c, answer("A: 18"), scoring("numeric_answer", "regex", "tool_calls"))
    assert result.state == AttemptState.PASSED
    assert [s.scorer for s in result.scores] == ["numeric_answer", "regex"]


def test_one_failing_scorer_fails_the_answer_and_names_itself() -> None:
    c = case(reference="18", checks=[Check(scorer="regex", pattern="^A:")])
    result = grade(c, answer("A: 26"), scoring("numeric_answer", "regex"))
    assert result.state == AttemptState.FAILED
    assert result.reason == "numeric_answer: expected 18, got 26"


def test_no_applicable_required_scorer_leaves_the_answer_ungraded() -> None:
    result = grade(case(), answer("anything"), scoring("equals", "tool_calls"))
    assert result.state == AttemptState.UNGRADED
    assert result.scores == []
    assert result.reason == "no required scorer applies (required: equals, tool_calls)"


def test_a_required_scorer_named_twice_runs_once() -> None:
    result = grade(case(reference="1"), answer("1"), scoring("equals", "equals"))
    assert len(result.scores) == 1


class Exploding(Scorer):
    name = "exploding"

    def applies(self, case: Case, settings: Any) -> bool:
        return True

    def score(self, case: Case, answer: AgentAnswer, settings: Any, known: Any = ()) -> ScoreResult:
        raise RuntimeError("judge timed out")


class Undecided(Scorer):
    name = "undecided"

    def applies(self, case: Case, settings: Any) -> bool:
        return True

    def score(self, case: Case, answer: AgentAnswer, settings: Any, known: Any = ()) -> ScoreResult:
        return ScoreResult(scorer=self.name, passed=None, reason="judge skipped")


@pytest.fixture
def extra_scorers() -> Any:
    before = dict(SCORERS)
    register_scorer(Exploding())
    register_scorer(Undecided())
    yield
    SCORERS.clear()
    SCORERS.update(before)


def test_a_scorer_that_raises_makes_the_attempt_incomplete_even_beside_a_failure(
    extra_scorers: None,
) -> None:
    result = grade(case(reference="18"), answer("26"), scoring("numeric_answer", "exploding"))
    assert result.state == AttemptState.INCOMPLETE
    assert [(s.scorer, s.passed, s.error) for s in result.scores] == [
        ("numeric_answer", False, False),
        ("exploding", None, True),
    ]
    assert result.reason == "exploding: scorer raised RuntimeError: judge timed out"


def test_a_scorer_that_raises_on_one_case_does_not_touch_the_next() -> None:
    broken = case(case_id="a", checks=[Check(scorer="regex", pattern="(")])
    fine = case(case_id="b", checks=[Check(scorer="regex", pattern="ok")])
    states = [grade(c, answer("ok"), scoring("regex")).state for c in (broken, fine)]
    assert states == [AttemptState.INCOMPLETE, AttemptState.PASSED]


def test_a_scorer_that_cannot_decide_makes_a_passing_answer_incomplete(extra_scorers: None) -> None:
    result = grade(case(reference="1"), answer("1"), scoring("equals", "undecided"))
    assert result.state == AttemptState.INCOMPLETE
    assert result.reason == "undecided could not decide: judge skipped"


def test_an_undecided_scorer_makes_even_a_failing_answer_incomplete(extra_scorers: None) -> None:
    # docs/reference/scorers.md: an answer a scorer did not grade is neither passed nor failed until
    # it is graded again.
    result = grade(case(reference="1"), answer("2"), scoring("equals", "undecided"))
    assert result.state == AttemptState.INCOMPLETE
    assert [(s.scorer, s.passed) for s in result.scores] == [("equals", False), ("undecided", None)]


def test_ungraded_is_only_for_an_answer_no_required_scorer_applies_to(extra_scorers: None) -> None:
    states = [
        grade(case(), answer("x"), scoring("equals")).state,  # no reference: equals does not apply
        grade(case(), answer("x"), scoring("equals", "undecided")).state,
        grade(case(), answer("x"), scoring("equals", "exploding")).state,
    ]
    assert states == [AttemptState.UNGRADED, AttemptState.INCOMPLETE, AttemptState.INCOMPLETE]


def test_a_registered_scorer_is_known_to_validation(extra_scorers: None) -> None:
    validate_scoring(scoring("exploding"))


# --- validation -------------------------------------------------------------------------------


def test_validate_scoring_names_the_unknown_scorer_by_its_position() -> None:
    with pytest.raises(InvalidInputError) as raised:
        validate_scoring(scoring("equals", "exact_match"))
    assert raised.value.field == "scoring.required[1]"
    assert "exact_match" in raised.value.message


def test_validate_scoring_refuses_a_regex_setting_that_does_not_compile() -> None:
    with pytest.raises(InvalidInputError) as raised:
        validate_scoring(scoring("regex", regex={"pattern": "("}))
    assert raised.value.field == "scoring.settings.regex.pattern"


def test_validate_scoring_refuses_a_negative_tolerance() -> None:
    with pytest.raises(InvalidInputError) as raised:
        validate_scoring(scoring("numeric_answer", numeric_answer={"tolerance": -1}))
    assert raised.value.field == "scoring.settings.numeric_answer.tolerance"


def test_validate_scoring_accepts_every_builtin_scorer() -> None:
    validate_scoring(
        scoring(
            *sorted(SCORERS),
            json_schema={"schema": PERSON},
            tool_calls={"ordered": False},
            judge={"judge_id": "j1"},
        )
    )


def test_the_judge_scorer_needs_its_settings() -> None:
    with pytest.raises(InvalidInputError) as raised:
        validate_scoring(scoring("judge"))
    assert raised.value.field == "scoring.settings.judge"
    with pytest.raises(InvalidInputError) as raised:
        validate_scoring(scoring("judge", judge={"judge_id": "j1", "version": 0}))
    assert raised.value.field == "scoring.settings.judge.version"


def test_validate_checks_names_the_check_missing_its_pattern() -> None:
    with pytest.raises(InvalidInputError) as raised:
        validate_checks(case(checks=[Check(scorer="contains", value="a"), Check(scorer="regex")]))
    assert raised.value.field == "checks[1].pattern"


# --- checks an importer writes (issue 13) -------------------------------------------------------


def test_a_text_check_with_a_list_passes_on_any_of_its_texts() -> None:
    c = case(reference="Paris", checks=[Check(scorer="equals", value=["Paris", "Paris, France"])])
    scoring = ScoringConfig(required=["equals"])
    assert grade(c, answer("Paris, France"), scoring).state is AttemptState.PASSED
    failed = grade(c, answer("Lyon"), scoring)
    assert failed.state is AttemptState.FAILED
    assert failed.scores[0].reason == "expected one of 'Paris', 'Paris, France', got 'Lyon'"


def test_a_text_check_with_an_empty_list_or_an_object_is_refused() -> None:
    for value in ([], {"a": 1}):
        with pytest.raises(InvalidInputError) as raised:
            validate_checks(case(checks=[Check(scorer="contains", value=value)]))
        assert raised.value.field == "checks[0].value"


def test_an_embedded_json_schema_check_finds_json_inside_prose() -> None:
    schema = {"type": "object", "required": ["city"]}
    c = case(checks=[Check(scorer="json_schema", schema=schema, embedded=True)])
    scoring = ScoringConfig(required=["json_schema"])
    assert grade(c, answer('Sure: ```json\n{"city": "Oslo"}\n```'), scoring).state is (
        AttemptState.PASSED
    )
    assert grade(c, answer('{"town": "Oslo"} or [1]'), scoring).reason == (
        "json_schema: answer does not match the schema at $: 'city' is a required property "
        "(the first of 2 JSON values in it)"
    )
    assert grade(c, answer("no JSON at all"), scoring).reason == (
        "json_schema: the answer holds no JSON object or array"
    )
    # Without `embedded` the whole answer must be the JSON.
    whole = case(checks=[Check(scorer="json_schema", schema=schema)])
    assert grade(whole, answer('Sure: {"city": "Oslo"}'), scoring).state is AttemptState.FAILED


def test_embedded_json_reads_a_bounded_number_of_brackets() -> None:
    text = "[" * 5000 + ' {"city": "Oslo"}'
    c = case(checks=[Check(scorer="json_schema", schema={}, embedded=True)])
    # Past EMBEDDED_JSON_TRIES openings nothing more is read: the object at the end is not found.
    assert grade(c, answer(text), ScoringConfig(required=["json_schema"])).state is (
        AttemptState.FAILED
    )
    assert scorers.EMBEDDED_JSON_TRIES == 50
