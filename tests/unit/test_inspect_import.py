"""Inspect datasets -> cases (issue 13 scope 3): JSON arrays, JSON lines and CSV; `target` as the
reference, messages as input and history, choices as a lettered question graded by a regex check,
and refusals naming the line and the field."""

from __future__ import annotations

import json

import pytest

from chalicelib.domain.dataset_sources import SourceKind, detect_kind, read
from chalicelib.domain.inspect_samples import answer_pattern, parse_inspect
from chalicelib.domain.models import AgentAnswer, ScoringConfig
from chalicelib.domain.scorers import grade
from chalicelib.errors import InvalidInputError


def refused(text: str) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as raised:
        parse_inspect(text)
    assert raised.value.field == "source"
    return raised.value


def state(case, answer: str, required: list[str]) -> str:
    return grade(case, AgentAnswer(answer=answer), ScoringConfig(required=required)).state.value


ARRAY = """[
  {"id": "capital", "input": "Capital of France?", "target": "Paris",
   "metadata": {"tags": ["geo"], "source": "atlas"}},
  {"input": [
     {"role": "system", "content": "Answer briefly."},
     {"role": "user", "content": "Hi"},
     {"role": "assistant", "content": "Hello!"},
     {"role": "user", "content": [{"type": "text", "text": "What is 2+2?"}]}
   ],
   "target": 4, "difficulty": "easy"}
]"""


def test_a_json_array_gives_reference_history_tags_and_metadata() -> None:
    imported = parse_inspect(ARRAY)
    capital, sums = imported.cases
    assert (capital.case_id, capital.input, capital.reference) == (
        "capital",
        "Capital of France?",
        "Paris",
    )
    assert capital.tags == ["geo"] and capital.metadata == {"tags": ["geo"], "source": "atlas"}
    assert sums.input == "What is 2+2?" and sums.reference == "4"
    assert sums.history == [
        {"role": "system", "content": "Answer briefly."},
        {"role": "user", "content": "Hi"},
        {"role": "assistant", "content": "Hello!"},
    ]
    assert sums.case_id == "case-52cb6b5e4a03"  # "case-" + sha256("What is 2+2?")[:12]
    assert sums.metadata == {"difficulty": "easy"}  # a key Inspect would drop is kept
    assert imported.required == []
    assert state(capital, "It is Paris.", ["contains"]) == "passed"


def test_json_lines_read_the_same_samples() -> None:
    lines = "\n".join(json.dumps(s) for s in json.loads(ARRAY))
    assert parse_inspect(lines).cases == parse_inspect(ARRAY).cases


def test_several_targets_grade_as_any_of_them_for_each_text_scorer() -> None:
    text = '[{"input": "Largest planet?", "target": ["Jupiter", "planet Jupiter"]}]'
    [case] = parse_inspect(text).cases
    assert case.reference == "Jupiter"
    for scorer in ("equals", "contains", "icontains"):
        assert state(case, "planet Jupiter", [scorer]) == "passed"
    assert state(case, "Saturn", ["icontains"]) == "failed"
    assert state(case, "jupiter", ["equals"]) == "failed"


def test_choices_become_a_lettered_question_and_a_regex_check() -> None:
    imported = parse_inspect(
        '{"input": "Which is a primary colour?", "choices": ["green", "red", "purple"], '
        '"target": "B"}\n'
    )
    [case] = imported.cases
    assert case.input.endswith("Which is a primary colour?\n\nA) green\nB) red\nC) purple")
    assert "ANSWER: X" in case.input and "one of A, B, C" in case.input
    assert case.reference == "B" and case.metadata == {"choices": ["green", "red", "purple"]}
    assert imported.required == ["regex"]
    assert state(case, "Red it is.\nANSWER: B", ["regex"]) == "passed"
    assert state(case, "answer: (b)", ["regex"]) == "passed"
    assert state(case, "ANSWER: C", ["regex"]) == "failed"
    assert state(case, "ANSWER: B\nOn second thought, ANSWER: A", ["regex"]) == "failed"


def test_a_target_may_name_a_choice_by_its_text_and_several_letters_all_count() -> None:
    text = '[{"input": "Pick", "choices": ["x", "y", "z"], "target": ["z", "A"]}]'
    [case] = parse_inspect(text).cases
    assert case.reference == "A, C"
    assert state(case, "ANSWER: A, C", ["regex"]) == "passed"
    assert state(case, "ANSWER: A", ["regex"]) == "failed"


def test_a_csv_dataset_with_choices_and_metadata_cells() -> None:
    text = (
        "id,input,target,choices,metadata,notes\n"
        'q1,"Odd one out?",C,"cat,dog,car","{""tags"": ""pets;easy""}",hand-written\n'
        "q2,2+3?,5,,,\n"
    )
    imported = parse_inspect(text)
    q1, q2 = imported.cases
    assert q1.input.endswith("Odd one out?\n\nA) cat\nB) dog\nC) car")
    assert (q1.reference, q1.tags) == ("C", ["pets", "easy"])
    assert q1.metadata == {
        "notes": "hand-written",
        "tags": "pets;easy",
        "choices": ["cat", "dog", "car"],
    }
    assert (q2.case_id, q2.input, q2.reference, q2.checks) == ("q2", "2+3?", "5", [])
    assert imported.required == ["regex"]


def test_a_message_with_an_unknown_role_is_named_by_line_and_index() -> None:
    error = refused('[\n{"input": "ok"},\n{"input": [{"role": "bot", "content": "x"}]}\n]')
    assert error.details == {"line": 3, "source_field": "input[0].role"}


def test_messages_after_the_last_user_turn_are_refused() -> None:
    error = refused(
        json.dumps(
            {"input": [{"role": "user", "content": "q"}, {"role": "assistant", "content": "a"}]}
        )
    )
    assert error.details == {"line": 1, "source_field": "input[1]"}


def test_an_image_part_is_refused_naming_it() -> None:
    error = refused(
        json.dumps({"input": [{"role": "user", "content": [{"type": "image", "image": "x.png"}]}]})
    )
    assert error.details == {"line": 1, "source_field": "input[0].content[0]"}


def test_a_target_that_is_no_choice_is_refused() -> None:
    error = refused('{"id": "a", "input": "q", "choices": ["x", "y"], "target": "D"}\n')
    assert error.details == {"line": 1, "source_field": "target"}
    assert "A to B" in error.message


def test_sandbox_files_and_setup_are_refused() -> None:
    for key in ("sandbox", "files", "setup"):
        error = refused(f'{{"input": "q", "{key}": "docker"}}\n')
        assert error.details == {"line": 1, "source_field": key}


def test_a_bad_json_array_names_the_line_of_the_problem() -> None:
    error = refused('[\n  {"input": "a"},\n  {"input": }\n]')
    assert error.details == {"line": 3}


def test_an_empty_input_and_a_repeated_id_are_refused_by_line() -> None:
    assert refused('[{"input": ""}]').details == {"line": 1, "source_field": "input"}
    error = refused('[\n{"id": 1, "input": "a"},\n{"id": "1", "input": "b"}\n]')
    assert error.details == {"line": 3, "source_field": "id"}


def test_a_csv_metadata_cell_that_is_not_json_names_the_field() -> None:
    error = refused("input,metadata\nq,not json\n")
    assert error.details == {"line": 2, "source_field": "metadata"}


def test_answer_pattern_reads_the_last_answer_line() -> None:
    assert answer_pattern(["A"]) == r"\bANSWER\s*:\s*\(?A\)?(?![A-Za-z0-9])(?![\s\S]*\bANSWER\s*:)"


# --- telling the kind of a file -------------------------------------------------------------


@pytest.mark.parametrize(
    ("name", "text", "kind"),
    [
        ("tests.yaml", "tests: []", SourceKind.PROMPTFOO),
        ("promptfooconfig.yml", "", SourceKind.PROMPTFOO),
        ("tests.json", '{"tests": []}', SourceKind.PROMPTFOO),
        ("tests.json", '[{"vars": {"q": 1}}]', SourceKind.PROMPTFOO),
        ("samples.json", '[{"input": "q", "target": "a"}]', SourceKind.INSPECT),
        ("samples.jsonl", '{"input": "q", "target": "a"}\n', SourceKind.INSPECT),
        ("cases.jsonl", '{"input": "q", "reference": "a"}\n', SourceKind.JSONL),
        ("samples.csv", "id,input,target\n", SourceKind.INSPECT),
        ("cases.csv", "case_id,input,reference\n", SourceKind.CSV),
        ("gsm8k/test.jsonl", '{"question": "q", "answer": "#### 1"}', SourceKind.GSM8K),
        ("notes.txt", "hello", None),
    ],
)
def test_the_kind_of_a_file_is_told_from_its_name_and_first_record(name, text, kind) -> None:
    assert detect_kind(name, text) == kind


def test_read_refuses_an_unknown_kind_naming_the_field() -> None:
    with pytest.raises(InvalidInputError) as raised:
        read("xlsx", "", field="source.format")
    assert raised.value.field == "source.format" and "promptfoo" in raised.value.message


def test_assay_jsonl_refuses_inspect_target_rather_than_dropping_it_into_metadata() -> None:
    with pytest.raises(InvalidInputError) as raised:
        read("jsonl", '{"input": "q", "target": "a"}')
    assert raised.value.details == {"line": 1, "source_field": "target"}
    assert "format inspect" in raised.value.message
    with pytest.raises(InvalidInputError) as raised:
        read("csv", "input,target\nq,a\n")
    assert raised.value.details == {"line": 1, "source_field": "target"}
