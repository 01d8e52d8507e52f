"""Our `numeric_answer` agrees with the GSM8K authors' `is_correct` on every recorded answer.

The real data (docs/getting-started.md): four real models' answers to the 1,319 GSM8K test
problems, each labelled by the authors. The label is never an input to scoring; this test only
compares against it.
"""

from __future__ import annotations

import json
from pathlib import Path

import pytest

from chalicelib.domain.enums import AttemptState
from chalicelib.domain.importers import gsm8k_case_id, parse_gsm8k
from chalicelib.domain.models import AgentAnswer, ScoringConfig
from chalicelib.domain.scorers import grade

GSM8K = Path(__file__).resolve().parents[2] / "examples" / "gsm8k"

# The data is part of the repository: its absence is a broken checkout, not a reason to skip.
assert GSM8K.is_dir(), f"GSM8K data not found at {GSM8K}: examples/gsm8k is part of the repository"

# How many of the 1,319 answers each model got right, as the authors count them and as we
# grade them; read off the file once by counting `"is_correct": true` per model.
PASS_COUNTS = {
    "6b_finetuning": 286,
    "6b_verification": 515,
    "175b_finetuning": 458,
    "175b_verification": 742,
}

SCORING = ScoringConfig(required=["numeric_answer"])


@pytest.fixture(scope="module")
def cases() -> dict:
    return {
        case.case_id: case
        for case in parse_gsm8k((GSM8K / "test.jsonl").read_text(encoding="utf-8"))
    }


@pytest.fixture(scope="module")
def solutions() -> list[dict]:
    text = (GSM8K / "example_model_solutions.jsonl").read_text(encoding="utf-8")
    return [json.loads(line) for line in text.splitlines() if line.strip()]


def test_every_test_question_is_a_case(cases: dict) -> None:
    assert len(cases) == 1319


def test_every_recorded_question_joins_a_case_by_its_id(cases: dict, solutions: list[dict]) -> None:
    assert len(solutions) == 1319
    assert {gsm8k_case_id(row["question"]) for row in solutions} == set(cases)


@pytest.mark.parametrize("model", list(PASS_COUNTS))
def test_numeric_answer_agrees_with_the_authors_on_every_answer(
    model: str, cases: dict, solutions: list[dict]
) -> None:
    passed = 0
    mismatches = []
    for row in solutions:
        case = cases[gsm8k_case_id(row["question"])]
        recorded = row[model]
        # Only the solution text reaches grading; `is_correct` is read after, to compare.
        result = grade(case, AgentAnswer(answer=recorded["solution"]), SCORING)
        assert result.state in (AttemptState.PASSED, AttemptState.FAILED), result
        ours = result.state == AttemptState.PASSED
        passed += ours
        if ours != recorded["is_correct"]:
            authors = recorded["is_correct"]
            mismatches.append(f"{case.case_id}: ours={ours} authors={authors} ({result.reason})")
    assert mismatches == [], f"{len(mismatches)} disagreements:\n" + "\n".join(mismatches[:20])
    assert passed == PASS_COUNTS[model]
