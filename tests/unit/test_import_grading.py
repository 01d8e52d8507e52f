"""Imports grade what they can: an `answer`, `target` or `expected` column becomes the case's
reference when a required scorer uses one (an explicit reference column wins), and an import in
which no case can be graded is refused naming its first line and what to add."""

from __future__ import annotations

import json

import pytest

from chalicelib.domain import import_grading
from chalicelib.domain.dataset_sources import read
from chalicelib.domain.import_grading import (
    NEEDS_REFERENCE,
    REFERENCE_ALIASES,
    USES_REFERENCE,
    reference_keys,
    ungraded_error,
    ungraded_lines,
)
from chalicelib.domain.importers import derived_case_id, parse_csv, parse_jsonl
from chalicelib.domain.models import Case, ScoringConfig
from chalicelib.domain.scorers import SCORERS
from chalicelib.errors import InvalidInputError


def jsonl(*rows: dict) -> str:
    return "\n".join(json.dumps(row) for row in rows) + "\n"


# --- which columns are the reference ------------------------------------------------------------


def test_scorers_that_use_a_reference_take_answer_target_expected_in_that_order() -> None:
    assert REFERENCE_ALIASES == ("answer", "target", "expected")
    for name in ("equals", "contains", "icontains", "numeric_answer", "judge"):
        assert reference_keys([name]) == REFERENCE_ALIASES, name
    for name in ("regex", "json_valid", "json_schema", "tool_calls"):
        assert reference_keys([name]) == (), name
    assert reference_keys(["regex", "equals"]) == REFERENCE_ALIASES
    # An explicit column wins whatever the scorers; junk in `required` is the scoring check's.
    assert reference_keys(["regex"], "gold") == ("gold",)
    assert reference_keys([{"not": "a name"}, 3]) == ()


def test_the_scorers_said_to_need_a_reference_are_those_that_apply_only_with_one() -> None:
    bare, referenced = Case(case_id="a", input="q"), Case(case_id="b", input="q", reference="4")
    for name, scorer in SCORERS.items():
        needs = not scorer.applies(bare, {}) and scorer.applies(referenced, {})
        assert (name in NEEDS_REFERENCE) == needs, name
    assert NEEDS_REFERENCE < USES_REFERENCE <= set(SCORERS)


def test_a_csv_answer_column_is_the_reference_and_leaves_the_metadata() -> None:
    text = "question,answer,source\nWhat is 2+2?,4,book\nWhat is 6*7?,42,\n"
    first, second = parse_csv(text, REFERENCE_ALIASES)
    assert (first.input, first.reference, first.metadata) == (
        "What is 2+2?",
        "4",
        {"source": "book"},
    )
    assert (second.reference, second.metadata) == ("42", {})
    assert first.case_id == derived_case_id("What is 2+2?")


def test_without_a_scorer_that_uses_one_the_answer_stays_metadata() -> None:
    [case] = parse_csv("question,answer\nWhat is 2+2?,4\n")
    assert (case.reference, case.metadata) == (None, {"answer": "4"})
    [case] = parse_jsonl(jsonl({"question": "What is 2+2?", "answer": 4}))
    assert (case.reference, case.metadata) == (None, {"answer": 4})


def test_a_jsonl_answer_target_or_expected_is_the_reference_numbers_as_text() -> None:
    cases = parse_jsonl(
        jsonl(
            {"question": "2+2?", "answer": 4},
            {"question": "capital of France?", "target": "Paris"},
            {"question": "colour of the sky?", "expected": "blue", "level": 1},
        ),
        REFERENCE_ALIASES,
    )
    assert [(c.input, c.reference) for c in cases] == [
        ("2+2?", "4"),
        ("capital of France?", "Paris"),
        ("colour of the sky?", "blue"),
    ]
    assert [c.metadata for c in cases] == [{}, {}, {"level": 1}]


def test_the_first_alias_given_wins_and_the_others_stay_metadata() -> None:
    [case] = parse_jsonl(
        jsonl({"input": "q", "expected": "c", "target": "b", "answer": "a"}), REFERENCE_ALIASES
    )
    assert (case.reference, case.metadata) == ("a", {"target": "b", "expected": "c"})
    # A blank value is no value: the next alias is taken.
    [case] = parse_csv("input,answer,target\nq,,b\n", REFERENCE_ALIASES)
    assert (case.reference, case.metadata) == ("b", {})
    [case] = parse_jsonl(jsonl({"input": "q", "answer": " ", "expected": "c"}), REFERENCE_ALIASES)
    assert (case.reference, case.metadata) == ("c", {"answer": " "})


def test_the_file_s_own_reference_wins_over_the_aliases() -> None:
    [case] = parse_jsonl(jsonl({"input": "q", "reference": "r", "answer": "a"}), REFERENCE_ALIASES)
    assert (case.reference, case.metadata) == ("r", {"answer": "a"})
    [case] = parse_csv("input,reference,answer\nq,r,a\n", REFERENCE_ALIASES)
    assert (case.reference, case.metadata) == ("r", {"answer": "a"})
    # ...but a row without one takes its alias.
    _, second = parse_csv("input,reference,answer\nq,r,a\np,,b\n", REFERENCE_ALIASES)
    assert (second.reference, second.metadata) == ("b", {})


def test_an_explicit_reference_column_wins_over_the_file_s_own_reference() -> None:
    [case] = parse_csv("input,reference,gold\nq,r,g\n", ("gold",), explicit=True)
    assert (case.reference, case.metadata) == ("g", {"reference": "r"})
    [case] = parse_jsonl(
        jsonl({"input": "q", "reference": "r", "gold": 7}), ("gold",), explicit=True
    )
    assert (case.reference, case.metadata) == ("7", {"reference": "r"})
    [case] = parse_jsonl(jsonl({"input": "q", "answer": "a"}), ("gold",), explicit=True)
    assert (case.reference, case.metadata) == (None, {"answer": "a"})


def test_an_explicit_column_the_csv_header_lacks_is_refused_on_line_1() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_csv("input,answer\nq,a\n", ("gold",), explicit=True)
    assert raised.value.details == {"line": 1, "source_field": "gold"}
    assert raised.value.field == "source"


def test_an_alias_that_is_not_text_is_refused_naming_it() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_jsonl(jsonl({"input": "q"}, {"input": "p", "target": ["a", "b"]}), REFERENCE_ALIASES)
    assert raised.value.details == {"line": 2, "source_field": "target"}


def test_inspect_s_target_is_taken_when_a_scorer_uses_it_and_refused_when_none_does() -> None:
    imported = read("jsonl", jsonl({"input": "q", "target": "a"}), reference_from=REFERENCE_ALIASES)
    assert imported.cases[0].reference == "a" and imported.lines == [1]
    with pytest.raises(InvalidInputError) as raised:
        read("jsonl", jsonl({"input": "q", "target": "a"}))
    assert "format inspect" in raised.value.message


def test_the_readers_say_the_line_each_case_starts_on() -> None:
    assert read("jsonl", '\n{"input": "a"}\n\n{"input": "b"}\n').lines == [2, 4]
    assert read("csv", 'input,note\na,x\n"b\nc",y\n\nd,z\n').lines == [2, 3, 6]


# --- an import nothing grades ---------------------------------------------------------------------


def test_an_import_no_case_of_which_can_be_graded_is_refused_naming_line_and_columns() -> None:
    imported = read("csv", "question,note\nWhat is 2+2?,x\nWhat is 6*7?,y\n")
    refusal = ungraded_error(imported.cases, imported.lines, ScoringConfig(required=["equals"]))
    assert isinstance(refusal, InvalidInputError) and refusal.field == "source"
    assert refusal.message.startswith(
        'line 2: no reference for scorer equals: add an "answer", "target" or "expected" column '
        "(or reference), or choose a scorer that needs none (json_schema (with a schema), "
        "json_valid, judge (with a judge), regex (with a pattern), tool_calls (with "
        "expected_calls))"
    )
    assert "source.allow_ungraded" in refusal.message
    assert refusal.details["line"] == 2 and refusal.details["allow"] == "source.allow_ungraded"
    assert refusal.details["reason"].startswith("no reference for scorer equals")


def test_the_lines_of_the_ungraded_cases_are_listed_with_why_the_first_is_not_graded() -> None:
    imported = read(
        "csv",
        "question,answer\nWhat is 2+2?,4\nWhat is the capital of Spain?,\nWhat is 6*7?,42\nx,\n",
        reference_from=reference_keys(["equals"]),
    )
    lines, reason = ungraded_lines(
        imported.cases, imported.lines, ScoringConfig(required=["equals"])
    )
    assert lines == [3, 5]
    assert reason is not None and reason.startswith("no reference for scorer equals")
    graded = read("csv", "question,answer\nWhat is 2+2?,4\n", reference_from=("answer",))
    assert ungraded_lines(graded.cases, graded.lines, ScoringConfig(required=["equals"])) == (
        [],
        None,
    )


def test_an_empty_cell_of_a_reference_column_the_file_has_is_named_as_empty() -> None:
    """The file has an `answer` column: the case lacks a value, not a column, and the reason says
    to fill it in rather than to add a column the file already has."""
    equals = ScoringConfig(required=["equals"])
    csv_file = read(
        "csv",
        "question,answer\nWhat is 2+2?,4\nWhat is the capital of Spain?,\n",
        reference_from=reference_keys(["equals"]),
    )
    assert csv_file.reference_columns == ["answer"]
    lines, reason = ungraded_lines(
        csv_file.cases, csv_file.lines, equals, csv_file.reference_columns
    )
    assert lines == [3]
    assert reason is not None and reason.startswith(
        "no reference for scorer equals: its 'answer' is empty: fill it in, or choose a scorer"
    )
    jsonl = read(
        "jsonl",
        '{"question": "2+2?", "target": "4"}\n{"question": "Spain?", "target": ""}\n',
        reference_from=reference_keys(["equals"]),
    )
    assert jsonl.reference_columns == ["target"]
    assert "its 'target' is empty" in (
        ungraded_lines(jsonl.cases, jsonl.lines, equals, jsonl.reference_columns)[1] or ""
    )
    # a file with no reference column at all still asks for one
    bare = read("csv", "question,note\nWhat?,x\n", reference_from=reference_keys(["equals"]))
    assert bare.reference_columns == []
    refusal = ungraded_error(bare.cases, bare.lines, equals, bare.reference_columns)
    assert refusal is not None and 'add an "answer", "target" or "expected" column' in (
        refusal.message
    )


def test_the_ungraded_lines_listed_are_bounded() -> None:
    cases = [Case(case_id=f"c{i}", input="q") for i in range(30)]
    lines, _ = ungraded_lines(cases, list(range(2, 32)), ScoringConfig(required=["equals"]))
    assert lines == list(range(2, 2 + import_grading.UNGRADED_LINES_SHOWN))


def test_one_gradable_case_is_enough_and_no_cases_has_its_own_refusal() -> None:
    scoring = ScoringConfig(required=["equals"])
    cases = [Case(case_id="a", input="q"), Case(case_id="b", input="p", reference="r")]
    assert ungraded_error(cases, [1, 2], scoring) is None
    assert ungraded_error([], [], scoring) is None


def test_the_reason_names_what_the_required_scorers_lack() -> None:
    numeric = ScoringConfig(required=["numeric_answer"])
    refusal = ungraded_error([Case(case_id="m", input="q", reference="many")], [3], numeric)
    assert refusal is not None
    assert refusal.message.startswith(
        "line 3: scorer numeric_answer finds no number in the reference 'many'"
    )
    regex = ScoringConfig(required=["regex"])
    refusal = ungraded_error([Case(case_id="c1", input="q")], [], regex)
    assert refusal is not None
    assert refusal.message.startswith("case c1: none of the required scorers (regex) applies")
    assert "pattern" in refusal.message and "line" not in refusal.details


def test_the_scorers_that_need_no_reference_are_every_other_scorer() -> None:
    listed = import_grading.scorers_without_reference()
    for name in SCORERS:
        assert (name in listed) == (name not in NEEDS_REFERENCE), name
