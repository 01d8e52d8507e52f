"""What a new user reads from the CLI (issue 29's fresh-clone findings): a mistyped choice gets a
suggestion, a listed case shows the start of its question, a progress counter says it counts
attempts (each state word once), an estimate on the fallback says what it assumes, an import says
which lines will not be graded, a summary is one line per version, a plain-text credential names
`assay secrets set`, and the demo's end prints no dead link."""

from __future__ import annotations

import pytest

from assay import gate, hints, text
from assay.client import ApiError
from assay_local import cli, cli_import, demo_text
from assay_local.cli_remote import summary_text


def test_a_mistyped_choice_is_answered_with_the_nearest_one() -> None:
    said = text.did_you_mean(
        "argument --scorer: invalid choice: 'equal' (choose from 'contains', 'equals', 'regex')"
    )
    assert said.endswith("(choose from 'contains', 'equals', 'regex'); did you mean equals?")
    far = "argument --format: invalid choice: 'xlsx' (choose from 'jsonl', 'csv')"
    assert text.did_you_mean(far) == far
    assert text.did_you_mean("the following arguments are required: file") == (
        "the following arguments are required: file"
    )


@pytest.mark.parametrize(
    ("argv", "suggestion"),
    [
        (["import", "d", "f.csv", "--scorer", "equal"], "did you mean equals?"),
        (["import", "d", "f.csv", "--scorer", "equals", "--format", "jsonlines"], "jsonl?"),
    ],
)
def test_the_cli_suggests_a_choice_and_exits_3(
    argv: list[str], suggestion: str, capsys: pytest.CaptureFixture[str]
) -> None:
    with pytest.raises(SystemExit) as exited:
        cli.main(argv)
    assert exited.value.code == 3
    err = capsys.readouterr().err
    assert "invalid choice" in err and suggestion in err


def test_a_listed_case_shows_the_start_of_its_input_on_one_line() -> None:
    assert text.case_label("case-115049a29853", "What is the capital of Spain?") == (
        'case-115049a29853 "What is the capital of Spain?"'
    )
    long = "Janet\u2019s ducks lay 16 eggs per day.\nShe eats three for breakfast every morning."
    label = text.case_label("c1", long)
    assert "\n" not in label and label.endswith('…"')
    assert len(label) == len('c1 ""') + text.CASE_TEXT_CHARS
    assert text.case_label("c1", None) == "c1" and text.case_label("c1", "  ") == "c1"


def test_the_gate_names_a_confirmed_regression_with_its_question() -> None:
    run = {"status": "completed", "outcome": {"pass_rate": 0.8}, "arms": []}
    comparison = {
        "verdict": "worse",
        "flips": [
            {
                "case_id": "case-115049a29853",
                "outcome": "regression",
                "confirmed": True,
                "question": "What is the capital of Spain?",
            }
        ],
    }
    decision = gate.decide_run(run, comparison)
    assert decision.code == gate.BROKE
    assert decision.reasons[0] == (
        '1 confirmed regression: case-115049a29853 "What is the capital of Spain?"'
    )


def test_progress_says_it_counts_attempts_and_each_state_word_once() -> None:
    done = {"recorded": 32, "expected": 32, "status": "completed", "phase": "done"}
    line = text.attempts_line(done, arms=2, cases=10)
    assert line == (
        "attempts 32 of 32 (10 cases, 2 arms; reruns of flips included, so the total grows as "
        "flips are found) completed"
    )
    assert "done" not in line
    rerunning = {"recorded": 20, "expected": 24, "status": "running", "phase": "confirming"}
    assert text.attempts_line(rerunning).endswith("found) running, rerunning flips")
    assert demo_text.progress_state(done) == "(reruns of flips included) completed"


def test_an_estimate_on_the_fallback_says_what_it_assumes_and_a_reused_baseline_is_named() -> None:
    est = {
        "arms": [
            {"arm_id": "candidate", "model": None, "basis": "fallback", "per_case_usd": 0.05},
            {
                "arm_id": "baseline",
                "model": "m",
                "basis": "reused",
                "per_case_usd": 0.0,
                "reused_run_id": "run-1",
            },
        ],
        "reused_baseline_run_id": "run-1",
    }
    fallback, reused = text.estimate_basis(est)
    assert fallback.startswith("candidate (no model named): no run history for it, so $0.05 a ")
    assert "EVAL_FALLBACK_CASE_COST_USD" in fallback
    assert "give a price in the spec or a model profile" in fallback
    assert reused == "baseline (m): first answers reused from run run-1, at no cost"
    assert text.estimate_basis({"arms": [{"arm_id": "candidate", "basis": "history"}]}) == []


def _imported(ungraded: int, lines: list[int]) -> dict:
    return {
        "dataset_id": "capitals",
        "version": {
            "version": 1,
            "case_count": 5,
            "ungraded_cases": ungraded,
            "ungraded_lines": lines,
            "ungraded_reason": 'no reference for scorer equals: add an "answer" column',
            "scoring": {"required": ["equals"]},
        },
    }


def test_an_import_says_in_words_which_lines_will_not_be_graded() -> None:
    assert cli_import.imported_text(_imported(0, [])) == [
        "imported 5 cases into capitals v1 (scorer equals)"
    ]
    head, why = cli_import.imported_text(_imported(1, [3]))
    assert head == (
        "imported 5 cases into capitals v1 (scorer equals); 1 case has no reference and will not "
        "be graded: line 3 (add what it lacks, or --allow-ungraded to keep such cases quietly)"
    )
    assert why.startswith("  why: no reference for scorer equals")
    many = cli_import.imported_text(_imported(25, list(range(2, 22))))[0]
    assert "25 cases have no reference" in many and "lines 2, 3," in many
    assert "21 (and 5 more)" in many
    quiet = cli_import.imported_text(_imported(1, [3]), allow_ungraded=True)
    assert quiet == [
        "imported 5 cases into capitals v1 (scorer equals); 1 of them will not be graded "
        "(--allow-ungraded)"
    ]


def test_an_unknown_dataset_on_import_says_how_create_makes_it() -> None:
    err = ApiError(
        "POST",
        "/api/v1/datasets/nosuch/versions",
        404,
        {"error": {"code": "not_found", "message": "dataset nosuch not found"}},
    )
    said = cli_import.explain(err)
    assert said is not None and said.startswith("404 not_found: dataset nosuch not found -- ")
    assert 'add --create "NAME" to create it' in said


def test_a_summary_is_one_line_per_version() -> None:
    assert summary_text({"agent_id": "capbot", "version": 1, "verdict": "none", "total": 0}) == (
        "capbot v1: none (not measured yet)"
    )
    assert (
        summary_text(
            {"agent_id": "capbot", "version": "draft", "verdict": "pass", "total": 5, "passed": 5}
        )
        == "capbot draft: pass (5 of 5 passed)"
    )


def test_a_plain_text_credential_is_answered_with_assay_secrets_set() -> None:
    err = ApiError(
        "POST",
        "/api/v1/agents",
        400,
        {
            "error": {
                "code": "invalid_input",
                "message": "spec.headers.Authorization holds a credential in plain text: store it "
                'as a secret (PUT /api/v1/secrets/{name}) and write {"secret": "<name>"}',
            }
        },
    )
    fix = hints.fix_for(err)
    assert fix is not None and "assay secrets set NAME" in fix


def test_a_draft_naming_a_missing_secret_is_answered_with_assay_secrets_set() -> None:
    message = (
        "the draft cannot be evaluated: spec.headers.Authorization: secret agent-key not found: "
        "store it first (PUT /api/v1/secrets/agent-key)"
    )
    err = ApiError(
        "POST",
        "/api/v1/agents/a/eval-runs",
        400,
        {"error": {"code": "invalid_input", "message": message}},
    )
    assert hints.fix_for(err) == (
        "store it: assay secrets set agent-key --from-env VARIABLE (or --value-stdin)"
    )


def test_the_demo_s_end_prints_no_dead_link_and_serve_ends_on_the_live_one() -> None:
    url = "http://127.0.0.1:8000/agents/a#token=t"
    lines = demo_text.closing_lines(url, serve=False, seconds=184.94)
    assert lines[0] == ("demo finished in 184.9 s; the stack has stopped, and its console with it")
    assert "`make demo ARGS=--serve`" in lines[1] and "live signed-in console link" in lines[1]
    assert "`make dev`" in lines[-1] and "Five minutes with your own agent" in lines[-1]
    assert not any("http" in line for line in lines)
    served = demo_text.closing_lines(url, serve=True, seconds=3)
    assert "stays up until Ctrl-C" in served[0]
    assert served[-1] == f"console (signed in; works until Ctrl-C): {url}"
