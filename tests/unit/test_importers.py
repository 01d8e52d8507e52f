"""Dataset sources -> cases: jsonl, csv, gsm8k (stable case ids: docs/guides/datasets.md)."""

from __future__ import annotations

import json

import pytest

from chalicelib.domain.dataset_sources import parse
from chalicelib.domain.enums import Split
from chalicelib.domain.importers import (
    derived_case_id,
    gsm8k_case_id,
    parse_csv,
    parse_gsm8k,
    parse_jsonl,
)
from chalicelib.domain.models import Check, ExpectedCall
from chalicelib.errors import InvalidInputError

# sha256("What is 2+2?") starts 52cb6b5e4a03...
TWO_PLUS_TWO_ID = "case-52cb6b5e4a03"

JANET = "Janet\u2019s ducks lay 16 eggs per day."
# sha256(JANET as UTF-8) starts db27fb4bcdf5...
JANET_ID = "gsm8k-db27fb4bcdf5"


def line_of(raised: pytest.ExceptionInfo[InvalidInputError]) -> int:
    return raised.value.details["line"]


# --- jsonl ------------------------------------------------------------------------------------


def test_a_jsonl_line_becomes_a_case_with_every_field_it_gives() -> None:
    text = json.dumps(
        {
            "case_id": "weather-1",
            "input": "Weather in Paris?",
            "reference": "sunny",
            "tags": ["weather", "easy"],
            "checks": [{"scorer": "icontains", "value": "sun"}],
            "expected_calls": [{"name": "forecast", "arguments": {"city": "Paris"}}],
            "split": "holdout",
            "note": "from support",
        }
    )
    [case] = parse_jsonl(text)
    assert case.case_id == "weather-1"
    assert case.input == "Weather in Paris?"
    assert case.reference == "sunny"
    assert case.tags == ["weather", "easy"]
    assert case.checks == [Check(scorer="icontains", value="sun")]
    assert case.expected_calls == [ExpectedCall(name="forecast", arguments={"city": "Paris"})]
    assert case.split == Split.HOLDOUT
    assert case.note == "from support"


def test_a_jsonl_case_without_an_id_gets_one_from_its_input() -> None:
    [case] = parse_jsonl('{"input": "What is 2+2?"}')
    assert case.case_id == TWO_PLUS_TWO_ID
    assert derived_case_id("What is 2+2?") == TWO_PLUS_TWO_ID


def test_jsonl_accepts_question_for_input_and_keeps_unknown_keys_as_metadata() -> None:
    line = {"question": "What is 2+2?", "reference": 4, "source": "quiz", "metadata": {"level": 1}}
    [case] = parse_jsonl(json.dumps(line))
    assert case.input == "What is 2+2?"
    assert case.reference == "4"
    assert case.metadata == {"source": "quiz", "level": 1}


def test_jsonl_tags_may_be_one_semicolon_separated_string() -> None:
    [case] = parse_jsonl('{"input": "q", "tags": "math; easy;;math"}')
    assert case.tags == ["math", "easy"]


def test_blank_jsonl_lines_are_skipped_but_still_counted() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_jsonl('{"input": "a"}\n\n{"input": }\n')
    assert line_of(raised) == 3
    assert raised.value.message.startswith("line 3: not valid JSON")
    assert raised.value.field == "source"


def test_a_jsonl_line_that_is_not_an_object_is_refused_by_line() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_jsonl('{"input": "a"}\n["input", "b"]')
    assert line_of(raised) == 2


def test_a_repeated_jsonl_case_id_is_refused_naming_both_lines() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_jsonl('{"case_id": "x", "input": "a"}\n{"case_id": "x", "input": "b"}')
    assert line_of(raised) == 2
    assert raised.value.message == "line 2: case_id: duplicate case_id 'x' (first on line 1)"
    assert raised.value.details == {"line": 2, "source_field": "case_id"}


def test_two_jsonl_cases_with_one_input_and_no_ids_are_duplicates() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_jsonl('{"input": "What is 2+2?"}\n{"input": "What is 2+2?"}')
    assert line_of(raised) == 2
    assert TWO_PLUS_TWO_ID in raised.value.message


@pytest.mark.parametrize("line", ['{"input": ""}', '{"input": "   "}', '{"reference": "4"}'])
def test_an_empty_or_missing_input_is_refused(line: str) -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_jsonl(line)
    assert raised.value.message == "line 1: input: is empty"
    assert raised.value.details == {"line": 1, "source_field": "input"}


def test_a_jsonl_field_of_the_wrong_shape_is_refused_naming_the_field() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_jsonl('{"input": "q", "split": "test"}')
    assert raised.value.message.startswith("line 1: split:")


def test_a_check_missing_its_parameter_is_refused_at_import() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_jsonl('{"input": "q", "checks": [{"scorer": "regex"}]}')
    assert raised.value.message == "line 1: checks[0].pattern: a regex check needs a pattern"


# --- csv --------------------------------------------------------------------------------------


def test_a_csv_row_fills_id_input_reference_and_tags_and_the_rest_goes_to_metadata() -> None:
    text = "case_id,input,reference,tags,difficulty\nq1,What is 2+2?,4,math;easy,low\n"
    [case] = parse_csv(text)
    assert (case.case_id, case.input, case.reference) == ("q1", "What is 2+2?", "4")
    assert case.tags == ["math", "easy"]
    assert case.metadata == {"difficulty": "low"}


def test_csv_accepts_a_question_column_and_empty_cells_are_absent() -> None:
    [case] = parse_csv("question,reference,case_id,source\nWhat is 2+2?,,,\n")
    assert case.case_id == TWO_PLUS_TWO_ID
    assert case.reference is None
    assert case.metadata == {}


def test_a_quoted_multiline_csv_cell_keeps_later_line_numbers_true() -> None:
    # The record on lines 2-3 is fine; the record on line 4 has an empty input.
    text = 'input,case_id\n"first\nquestion",a\n"",b\n'
    with pytest.raises(InvalidInputError) as raised:
        parse_csv(text)
    assert line_of(raised) == 4


def test_a_csv_without_an_input_column_is_refused_at_the_header() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_csv("prompt,reference\nhi,hello\n")
    assert line_of(raised) == 1


def test_a_repeated_csv_case_id_is_refused_by_line() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_csv("case_id,input\na,one\nb,two\na,three\n")
    assert line_of(raised) == 4


def test_a_csv_row_with_more_cells_than_columns_is_refused() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_csv("input\nhello,world\n")
    assert line_of(raised) == 2


def test_an_unterminated_csv_quote_is_refused_naming_its_line() -> None:
    # Read loosely, the open quote ran to the end of the file and became the case's input.
    text = 'question,answer\nWhat is the capital of France?,Paris\n"unterminated,Madrid\n'
    with pytest.raises(InvalidInputError) as raised:
        parse_csv(text)
    assert line_of(raised) == 3
    assert raised.value.message.startswith("line 3: a quoted field is not closed")


def test_text_after_a_closing_csv_quote_is_refused_naming_its_line() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_csv('input,reference\nfine,1\n"quoted"tail,2\n')
    assert line_of(raised) == 3
    assert "goes on after its closing quote" in raised.value.message


def test_a_jsonl_line_that_is_not_json_is_refused_naming_its_line() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_jsonl('{"input": "a"}\n{"input": "b"\n')
    assert line_of(raised) == 2
    assert raised.value.message.startswith("line 2: not valid JSON")


def test_a_csv_byte_order_mark_does_not_rename_the_first_column() -> None:
    [case] = parse_csv("\ufeffinput\nhello\n")
    assert case.input == "hello"


# --- gsm8k ------------------------------------------------------------------------------------


def test_a_gsm8k_test_line_becomes_a_case_with_the_final_number_as_reference() -> None:
    solution = "Janet sells 16 - 3 - 4 = <<16-3-4=9>>9 duck eggs a day.\n#### 18"
    [case] = parse_gsm8k(json.dumps({"question": JANET, "answer": solution}))
    assert case.case_id == JANET_ID
    assert case.input == JANET
    assert case.reference == "18"
    assert case.metadata == {"solution": solution}


def test_the_gsm8k_case_id_is_the_hash_of_the_question() -> None:
    assert gsm8k_case_id(JANET) == JANET_ID


def test_a_gsm8k_reference_drops_thousands_separators() -> None:
    [case] = parse_gsm8k(json.dumps({"question": "q", "answer": "so 2,125\n#### 2,125"}))
    assert case.reference == "2125"


def test_the_model_solutions_shape_gives_the_same_case_and_drops_the_recordings() -> None:
    line = {
        "question": JANET,
        "ground_truth": "She makes 9 * 2 = $18.\nA: 18",
        "6b_finetuning": {"is_correct": False, "solution": "A: 26"},
    }
    [case] = parse_gsm8k(json.dumps(line))
    assert (case.case_id, case.reference) == (JANET_ID, "18")
    assert case.metadata == {"solution": "She makes 9 * 2 = $18.\nA: 18"}


def test_a_given_gsm8k_case_id_is_kept() -> None:
    [case] = parse_gsm8k('{"case_id": "janet", "question": "q", "answer": "#### 18"}')
    assert case.case_id == "janet"


def test_a_gsm8k_line_without_a_solution_or_final_number_is_refused() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse_gsm8k('{"question": "q", "answer": "#### 1"}\n{"question": "r"}')
    assert line_of(raised) == 2
    with pytest.raises(InvalidInputError) as raised:
        parse_gsm8k('{"question": "q", "answer": "#### many"}')
    assert raised.value.message == "line 1: answer: the solution has no final number"


def test_a_repeated_gsm8k_question_is_a_duplicate_case() -> None:
    line = json.dumps({"question": JANET, "answer": "#### 18"})
    with pytest.raises(InvalidInputError) as raised:
        parse_gsm8k(f"{line}\n{line}")
    assert line_of(raised) == 2


# --- parse ------------------------------------------------------------------------------------


def test_parse_dispatches_on_the_source_kind() -> None:
    assert parse("csv", "input\nhi\n")[0].input == "hi"
    assert parse("jsonl", '{"input": "hi"}')[0].input == "hi"
    assert parse("gsm8k", '{"question": "hi", "answer": "#### 1"}')[0].reference == "1"


def test_parse_refuses_an_unknown_kind() -> None:
    with pytest.raises(InvalidInputError) as raised:
        parse("xlsx", "")
    assert raised.value.field == "kind"
