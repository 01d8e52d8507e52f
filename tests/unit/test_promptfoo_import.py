"""promptfoo test files -> cases (issue 13 scope 3): vars to input, assertions to our scorers'
checks, llm-rubric to tag-scoped judge criteria, and every refusal naming its line and field."""

from __future__ import annotations

import hashlib
import json
import textwrap

import pytest

from chalicelib.domain.models import AgentAnswer, ScoringConfig
from chalicelib.domain.promptfoo_tests import MAX_EXPANDED_NODES, parse_promptfoo
from chalicelib.domain.scorers import grade
from chalicelib.errors import InvalidInputError


def yaml(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


def refused(text: str) -> InvalidInputError:
    with pytest.raises(InvalidInputError) as raised:
        parse_promptfoo(text)
    assert raised.value.field == "source"
    return raised.value


def passes(case, answer: str, required: list[str]) -> bool | None:
    state = grade(case, AgentAnswer(answer=answer), ScoringConfig(required=required)).state
    return {"passed": True, "failed": False}.get(state)


CONFIG = yaml(
    """
    description: translation checks
    prompts: ["Translate to French: {{input}}"]
    providers: [openai:gpt-4o-mini]
    defaultTest:
      assert:
        - type: not-icontains
          value: as an ai
    tests:
      - description: greets
        vars:
          input: Hello
          tone: polite
        assert:
          - type: icontains
            value: bonjour
          - type: llm-rubric
            value: The reply is polite
            metric: tone
      - vars:
          question: What is 2+2?
        assert:
          - type: equals
            value: "4"
    """
)


def test_a_config_becomes_cases_with_the_default_assertions_first() -> None:
    imported = parse_promptfoo(CONFIG)
    greets, sums = imported.cases
    rubric_id = "rubric-" + hashlib.sha256(b"The reply is polite").hexdigest()[:12]
    assert greets.case_id == "greets"
    assert greets.input == "Hello"  # the var called input, of two
    assert greets.metadata == {"vars": {"input": "Hello", "tone": "polite"}}
    assert greets.tags == ["tone", rubric_id]
    assert [(c.scorer, c.model_extra) for c in greets.checks] == [
        (
            "regex",
            {
                "pattern": r"\A(?![\s\S]*?(?:as\ an\ ai))",
                "flags": "i",
                "promptfoo": "not-icontains",
            },
        ),
        ("icontains", {"value": "bonjour", "promptfoo": "icontains"}),
    ]
    # One var: it is the input; no description: the id is derived from the input.
    assert (sums.input, sums.case_id, sums.metadata) == ("What is 2+2?", "case-52cb6b5e4a03", {})
    assert [c.scorer for c in sums.checks] == ["regex", "equals"]
    assert imported.required == ["regex", "icontains", "equals", "judge"]
    [criterion] = imported.criteria
    assert (criterion.criterion_id, criterion.text, criterion.tags) == (
        rubric_id,
        "The reply is polite",
        [rubric_id],
    )


def test_the_checks_grade_as_promptfoo_would() -> None:
    greets, sums = parse_promptfoo(CONFIG).cases
    assert passes(greets, "Bonjour !", ["regex", "icontains"]) is True
    assert passes(greets, "As an AI, I say bonjour", ["regex", "icontains"]) is False
    assert passes(sums, " 4 ", ["regex", "equals"]) is True
    assert passes(sums, "four", ["regex", "equals"]) is False


def test_a_bare_list_of_tests_is_a_test_file_too() -> None:
    imported = parse_promptfoo(
        '[{"vars": {"q": "hi"}, "assert": [{"type": "contains", "value": "hello"}]}]'
    )
    [case] = imported.cases
    assert (case.input, imported.required) == ("hi", ["contains"])


def test_vars_without_an_input_var_are_the_input_as_json() -> None:
    [case] = parse_promptfoo(
        yaml("""
        - vars: {city: Paris, days: 3}
        """)
    ).cases
    assert case.input == '{"city": "Paris", "days": 3}'
    assert case.metadata == {"vars": {"city": "Paris", "days": 3}}


def test_a_list_var_makes_one_case_per_value() -> None:
    cases = parse_promptfoo(
        yaml("""
        tests:
          - description: capitals
            vars:
              question: ["Capital of France?", "Capital of Spain?"]
            assert:
              - type: contains-any
                value: [Paris, Madrid]
        """)
    ).cases
    assert [(c.case_id, c.input) for c in cases] == [
        ("capitals [1]", "Capital of France?"),
        ("capitals [2]", "Capital of Spain?"),
    ]
    assert cases[0].checks[0].model_extra == {
        "value": ["Paris", "Madrid"],
        "promptfoo": "contains-any",
    }
    assert passes(cases[1], "It is Madrid.", ["contains"]) is True
    assert passes(cases[1], "It is Lisbon.", ["contains"]) is False


def test_a_var_in_an_assertion_value_is_filled_in() -> None:
    [case] = parse_promptfoo(
        yaml("""
        - vars: {question: "2+2?", expected: "4"}
          assert:
            - type: starts-with
              value: "{{ expected }}"
        """)
    ).cases
    assert case.checks[0].model_extra == {"pattern": r"\A4", "promptfoo": "starts-with"}
    assert passes(case, "4, of course", ["regex"]) is True
    assert passes(case, "It is 4", ["regex"]) is False


@pytest.mark.parametrize(
    ("kind", "value", "good", "bad"),
    [
        ("contains", "Paris", "in Paris.", "in paris."),
        ("icontains-all", ["paris", "france"], "PARIS, France", "Paris"),
        ("regex", "^\\d+$", "42", "42 apples"),
        ("is-json", None, '{"a": 1}', "a: 1"),
        ("is-json", {"type": "object", "required": ["a"]}, '{"a": 1}', '{"b": 1}'),
        ("contains-json", None, 'Here: {"a": 1} done', "no json here"),
        ("contains-json", {"required": ["ok"]}, 'x [1] then {"ok": true}', 'only {"no": 1}'),
        ("equals", {"a": 1}, '{"a": 1}', '{"a": 2}'),
        ("not-equals", "no", "yes", " no "),
        ("not-contains", "sorry", "Sure!", "I am sorry"),
        ("not-regex", "\\d", "no digits", "1 digit"),
        ("not-starts-with", "No", "Yes, no", "No, yes"),
        ("not-contains-any", ["a", "b"], "xyz", "xbz"),
        ("not-icontains-any", ["A", "B"], "xyz", "XBZ"),
        ("not-contains-all", ["a", "b"], "a only", "a and b"),
        ("not-icontains-all", ["A", "B"], "a only", "a AND B"),
    ],
)
def test_each_supported_assertion_grades_its_own_way(kind, value, good, bad) -> None:
    assertion = {"type": kind, **({"value": value} if value is not None else {})}
    imported = parse_promptfoo(json.dumps([{"vars": {"q": "ask"}, "assert": [assertion]}]))
    [case] = imported.cases
    assert passes(case, good, imported.required) is True
    assert passes(case, bad, imported.required) is False


def test_an_unsupported_assertion_type_is_named_with_its_line() -> None:
    error = refused(CONFIG.replace("type: equals", "type: javascript"))
    assert error.details == {"line": 22, "source_field": "tests[1].assert[0].type"}
    assert "'javascript' is not supported (assay runs no code from a dataset)" in error.message
    assert error.message.startswith("line 22: tests[1].assert[0].type: ")


def test_an_unknown_assertion_type_lists_what_is_supported() -> None:
    error = refused('[{"vars": {"q": "x"}, "assert": [{"type": "levenshtein", "value": "y"}]}]')
    assert error.details["source_field"] == "tests[0].assert[0].type"
    assert "'levenshtein' is not supported" in error.message and "llm-rubric" in error.message


def test_a_threshold_is_refused_rather_than_ignored() -> None:
    error = refused(
        yaml("""
        tests:
          - vars: {q: x}
            threshold: 0.5
        """)
    )
    assert error.details == {"line": 2, "source_field": "tests[0].threshold"}


def test_an_assertion_key_assay_cannot_honour_is_refused() -> None:
    error = refused(
        yaml("""
        - vars: {q: x}
          assert:
            - type: contains
              value: y
              transform: output.trim()
        """)
    )
    assert error.details == {"line": 3, "source_field": "tests[0].assert[0].transform"}


def test_a_file_reference_is_refused_wherever_it_is() -> None:
    assert refused("tests: file://tests/*.yaml\n").details["source_field"] == "tests"
    error = refused(
        yaml("""
        - vars:
            q: file://question.txt
        """)
    )
    assert error.details == {"line": 2, "source_field": "tests[0].vars.q"}
    assert "reads no file" in error.message


def test_a_template_beyond_plain_vars_is_refused() -> None:
    error = refused(
        yaml("""
        - vars: {q: x}
          assert:
            - type: contains
              value: "{{ q | upper }}"
        """)
    )
    assert error.details["source_field"] == "tests[0].assert[0]"
    unknown = refused(
        '[{"vars": {"q": "x"}, "assert": [{"type": "contains", "value": "{{nope}}"}]}]'
    )
    assert "'nope'" in unknown.message


def test_a_missing_assertion_value_names_the_value() -> None:
    error = refused(
        yaml("""
        - vars: {q: x}
          assert:
            - type: contains-any
              value: just one
        """)
    )
    assert error.details == {"line": 3, "source_field": "tests[0].assert[0].value"}


def test_two_tests_with_one_description_are_duplicates_by_line() -> None:
    error = refused(
        yaml("""
        - description: same
          vars: {q: a}
        - description: same
          vars: {q: b}
        """)
    )
    assert error.details == {"line": 3, "source_field": "tests[1].description"}
    assert "first on line 1" in error.message


def test_yaml_that_does_not_parse_names_its_line() -> None:
    error = refused("tests:\n  - vars: {q: [unclosed\n  - vars: {}\n")
    assert error.details["line"] == 3 and "not valid YAML" in error.message


def test_an_alias_bomb_is_refused_before_it_is_built() -> None:
    lines = ["a0: &a0 [x, x, x, x, x, x, x, x, x, x]"]
    lines += [f"a{i}: &a{i} [{', '.join([f'*a{i - 1}'] * 10)}]" for i in range(1, 8)]
    error = refused("\n".join([*lines, "tests: [{vars: {q: *a7}}]"]))
    assert f"more than {MAX_EXPANDED_NODES:,}" in error.message


def test_a_recursive_alias_is_refused() -> None:
    assert "refers to a node that holds it" in refused("tests: &t [*t]\n").message


def test_only_the_safe_loader_reads_the_file() -> None:
    error = refused("tests:\n  - vars: {q: !!python/object/apply:os.system [echo hi]}\n")
    assert error.details["line"] == 2 and "not valid YAML" in error.message


def test_yaml_dates_and_numbers_are_kept_as_json() -> None:
    [case] = parse_promptfoo("- vars: {day: 2024-05-01, n: 3}\n").cases
    assert case.metadata == {"vars": {"day": "2024-05-01", "n": 3}}


def test_a_rubric_shared_by_tests_is_one_criterion() -> None:
    imported = parse_promptfoo(
        yaml("""
        defaultTest:
          assert: [{type: llm-rubric, value: Is polite}]
        tests:
          - vars: {q: a}
          - vars: {q: b}
        """)
    )
    [criterion] = imported.criteria
    assert all(case.tags == [criterion.criterion_id] for case in imported.cases)


def test_json_is_read_as_json_with_its_lines_where_yaml_can_tell_them() -> None:
    text = '{"tests": [\n  {"vars": {"q": "x", "n": 1e5}},\n  {"assert": [{"type": "bogus"}]}]}'
    assert refused(text).details == {"line": 3, "source_field": "tests[1].assert[0].type"}
    [case] = parse_promptfoo(text.replace('"bogus"', '"contains", "value": "y"')).cases[:1]
    assert case.metadata["vars"]["n"] == 100000.0  # YAML 1.1 would have read the text "1e5"
    # A surrogate pair escaped as JSON does is beyond PyYAML: the error has no line then.
    emoji = '{"tests": [{"vars": {"q": "\\ud83d\\ude00"}, "assert": [{"type": "bogus"}]}]}'
    assert refused(emoji).details == {"source_field": "tests[0].assert[0].type"}


def test_a_file_that_is_not_a_test_list_is_refused_at_line_1() -> None:
    error = refused("prompts: [hi]\n")
    assert error.details == {"line": 1} and "list of tests" in error.message
