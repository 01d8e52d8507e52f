"""Imports grade what they can, through the HTTP API and `assay import` on the embedded stack: a
CSV `question,answer` and JSON lines with `answer` or `target` import with those as the cases'
references, and an eval run on the dataset grades them; a file nothing in which can be graded is
refused naming its first line and what to add (and leaves no dataset behind) unless it is allowed
ungraded; the command line names its flags and their choices, never the API's fields."""

from __future__ import annotations

import json
from pathlib import Path

from assay_local import cli
from chalicelib.domain.import_grading import UNGRADED_LINES_SHOWN
from chalicelib.domain.importers import derived_case_id
from chalicelib.domain.scorers import SCORERS
from tests.e2e.conftest import sleepy_spec

CSV = "question,answer\nWhat is 6*7?,42\nWhat is 2+2?,4\n"
ANSWERS = json.dumps({"question": "What is 6*7?", "answer": 42}) + "\n"
TARGETS = (
    json.dumps({"question": "What is 6*7?", "target": "42"})
    + "\n"
    + json.dumps({"question": "Name a primary colour.", "target": "red"})
    + "\n"
)
QUESTIONS = "question,note\nWhat is 6*7?,arithmetic\nWhat is 2+2?,arithmetic\n"
SIX_SEVEN, TWO_TWO = derived_case_id("What is 6*7?"), derived_case_id("What is 2+2?")
COLOUR = derived_case_id("Name a primary colour.")


def references(api, dataset_id: str, version: int = 1) -> dict[str, str | None]:
    cases = api.ok("GET", f"/api/v1/datasets/{dataset_id}/versions/{version}/cases")["cases"]
    return {c["case_id"]: c["reference"] for c in cases}


def graded(api, dataset_id: str) -> dict[str, str]:
    """The states of a run of an agent that answers 42 to everything."""
    agent = api.agent(sleepy_spec(answer="42"))
    run = api.start(agent, dataset_id)
    assert api.wait(run["run_id"])["status"] == "completed"
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    return {r["case_id"]: r["state"] for r in view["results"]}


def create(api, dataset_id: str, source: dict, required: list[str] | None = None) -> tuple:
    """`POST /api/v1/datasets` of a dataset imported from `source`, graded by `required`
    (`equals` unless given): (status, body)."""
    return api.call(
        "POST",
        "/api/v1/datasets",
        json={
            "name": "qa",
            "dataset_id": dataset_id,
            "scoring": {"required": required or ["equals"]},
            "source": source,
        },
    )


# --- the HTTP API ---------------------------------------------------------------------------------


def test_a_csv_answer_column_is_the_reference_and_a_run_grades_it(api):
    status, body = create(api, "qa-csv", {"format": "csv", "content": CSV})
    assert status == 201, body
    assert (body["version"]["case_count"], body["version"]["ungraded_cases"]) == (2, 0)
    assert references(api, "qa-csv") == {SIX_SEVEN: "42", TWO_TWO: "4"}
    assert graded(api, "qa-csv") == {SIX_SEVEN: "passed", TWO_TWO: "failed"}


def test_jsonl_answer_and_target_keys_are_references_when_a_scorer_uses_one(api):
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "qa", "dataset_id": "qa-jsonl"})
    versions = f"/api/v1/datasets/{ds['dataset_id']}/versions"
    api.ok(
        "POST",
        versions,
        json={
            "scoring": {"required": ["numeric_answer"]},
            "source": {"format": "jsonl", "content": ANSWERS},
        },
    )
    assert references(api, "qa-jsonl", 1) == {SIX_SEVEN: "42"}
    api.ok(
        "POST",
        versions,
        json={
            "scoring": {"required": ["icontains"]},
            "source": {"format": "jsonl", "content": TARGETS},
        },
    )
    assert references(api, "qa-jsonl", 2) == {SIX_SEVEN: "42", COLOUR: "red"}
    assert graded(api, "qa-jsonl") == {SIX_SEVEN: "passed", COLOUR: "failed"}
    # Graded by a scorer that uses no reference, the answer stays what it was: metadata.
    body = api.ok(
        "POST",
        versions,
        json={
            "scoring": {"required": ["json_valid"]},
            "source": {"format": "jsonl", "content": ANSWERS},
        },
    )
    assert body["version"]["ungraded_cases"] == 0
    [case] = api.ok("GET", f"{versions}/3/cases")["cases"]
    assert (case["reference"], case["metadata"]) == (None, {"answer": 42})


def test_an_explicit_reference_column_wins(api):
    content = "question,reference,gold\nWhat is 6*7?,7,42\n"
    gold = {"format": "csv", "content": content, "reference_column": "gold"}
    assert create(api, "qa-gold", gold)[0] == 201
    [case] = api.ok("GET", "/api/v1/datasets/qa-gold/versions/1/cases")["cases"]
    assert (case["reference"], case["metadata"]) == ("42", {"reference": "7"})
    status, body = api.call(
        "POST",
        "/api/v1/datasets/qa-gold/versions",
        json={
            "scoring": {"required": ["equals"]},
            "source": {"format": "csv", "content": content, "reference_column": "golden"},
        },
    )
    assert status == 400, body
    assert (body["error"]["field"], body["error"]["line"], body["error"]["source_field"]) == (
        "source",
        1,
        "golden",
    )


def test_an_import_nothing_grades_is_refused_unless_allowed_ungraded(api):
    source = {"format": "csv", "content": QUESTIONS}
    status, body = create(api, "q-only", source)
    assert status == 400, body
    error = body["error"]
    assert error["field"] == "source" and error["line"] == 2
    assert error["message"].startswith(
        'line 2: no reference for scorer equals: add an "answer", "target" or "expected" column'
    )
    assert "json_valid" in error["message"] and "source.allow_ungraded" in error["message"]
    assert api.call("GET", "/api/v1/datasets/q-only")[0] == 404

    status, body = create(api, "q-only", {**source, "allow_ungraded": True})
    assert status == 201, body
    assert (body["version"]["case_count"], body["version"]["ungraded_cases"]) == (2, 2)
    # A run on it is refused as before: nothing to grade.
    agent = api.agent(sleepy_spec())
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={"dataset_id": "q-only", "candidate": "draft"},
    )
    assert status == 400 and body["error"]["field"] == "dataset_version", body


def test_an_import_answers_with_the_lines_of_the_cases_nothing_grades(api):
    rows = ["question,answer", "What is 6*7?,42"] + [f"Question {i}?," for i in range(25)]
    status, body = create(
        api, "qa-some-ungraded", {"format": "csv", "content": "\n".join(rows) + "\n"}
    )
    assert status == 201, body  # one case grades: the import is kept
    version = body["version"]
    assert (version["case_count"], version["ungraded_cases"]) == (26, 25)
    assert version["ungraded_lines"] == list(range(3, 3 + UNGRADED_LINES_SHOWN))
    assert version["ungraded_reason"].startswith(
        "no reference for scorer equals: its 'answer' is empty"
    )


def test_a_csv_with_a_quote_left_open_is_refused_naming_its_line(api):
    bad = 'question,answer\nWhat is the capital of France?,Paris\n"unterminated,Madrid\n'
    status, body = create(api, "qa-open-quote", {"format": "csv", "content": bad})
    assert status == 400, body
    assert body["error"]["message"].startswith("line 3: a quoted field is not closed")
    assert body["error"]["field"] == "source" and body["error"]["line"] == 3
    assert api.call("GET", "/api/v1/datasets/qa-open-quote")[0] == 404


# --- the command line -----------------------------------------------------------------------------


def run_cli(api, capsys, *argv: str) -> tuple[int, str, str]:
    url = str(api.http.base_url).rstrip("/")
    token = api.http.headers["Authorization"].removeprefix("Bearer ")
    capsys.readouterr()
    try:
        code = cli.main(["import", *argv, "--url", url, "--token", token])
    except SystemExit as exc:  # argparse refuses a flag's value this way (exit status 3)
        code = int(exc.code or 0)
    out, err = capsys.readouterr()
    return code, out, err


def test_assay_import_of_csv_and_jsonl_answers_and_targets_then_a_run_grades(
    api, tmp_path: Path, capsys
):
    qa = tmp_path / "qa.csv"
    qa.write_text(CSV, encoding="utf-8")
    code, out, err = run_cli(api, capsys, "cli-qa", str(qa), "--create", "QA", "--scorer", "equals")
    assert code == 0, err
    assert out == "imported 2 cases into cli-qa v1 (scorer equals)\n"
    assert references(api, "cli-qa") == {SIX_SEVEN: "42", TWO_TWO: "4"}
    assert graded(api, "cli-qa") == {SIX_SEVEN: "passed", TWO_TWO: "failed"}

    answers = tmp_path / "answers.jsonl"
    answers.write_text(ANSWERS, encoding="utf-8")
    code, out, err = run_cli(api, capsys, "cli-qa", str(answers), "--scorer", "numeric_answer")
    assert code == 0, err
    assert references(api, "cli-qa", 2) == {SIX_SEVEN: "42"}

    targets = tmp_path / "targets.jsonl"
    targets.write_text(TARGETS, encoding="utf-8")
    code, out, err = run_cli(
        api, capsys, "cli-qa", str(targets), "--format", "jsonl", "--scorer", "icontains", "--json"
    )
    assert code == 0, err
    assert json.loads(out)["latest_version"] == 3
    assert references(api, "cli-qa", 3) == {SIX_SEVEN: "42", COLOUR: "red"}
    assert graded(api, "cli-qa") == {SIX_SEVEN: "passed", COLOUR: "failed"}


def test_assay_import_refuses_a_file_nothing_grades_naming_the_flag_that_allows_it(
    api, tmp_path: Path, capsys
):
    questions = tmp_path / "questions.csv"
    questions.write_text(QUESTIONS, encoding="utf-8")
    code, out, err = run_cli(
        api, capsys, "cli-q", str(questions), "--create", "Q", "--scorer", "equals"
    )
    assert (code, out) == (3, "")
    assert err.startswith(
        'assay import: line 2: no reference for scorer equals: add an "answer", "target" or '
        '"expected" column'
    )
    assert err.rstrip().endswith("or give --allow-ungraded to import it ungraded")
    assert "source.allow_ungraded" not in err and len(err.strip().splitlines()) == 1
    assert api.call("GET", "/api/v1/datasets/cli-q")[0] == 404

    code, out, err = run_cli(
        api,
        capsys,
        "cli-q",
        str(questions),
        "--create",
        "Q",
        "--scorer",
        "equals",
        "--allow-ungraded",
        "--json",
    )
    assert code == 0, err
    assert json.loads(out)["version"]["ungraded_cases"] == 2

    # The same file with its answers named explicitly grades.
    questions.write_text("question,gold\nWhat is 6*7?,42\n", encoding="utf-8")
    code, out, err = run_cli(
        api, capsys, "cli-q", str(questions), "--scorer", "equals", "--reference-column", "gold"
    )
    assert code == 0, err
    assert references(api, "cli-q", 2) == {SIX_SEVEN: "42"}
    assert graded(api, "cli-q") == {SIX_SEVEN: "passed"}


def test_assay_import_errors_name_the_flag_and_its_choices(api, tmp_path: Path, capsys):
    every_scorer = sorted(SCORERS)
    qa = tmp_path / "qa.csv"
    qa.write_text(CSV, encoding="utf-8")

    code, _, err = run_cli(api, capsys, "cli-e", str(qa), "--create", "E")
    assert code == 3
    assert "--scorer" in err and "scoring" not in err
    assert all(name in err for name in every_scorer), err

    code, _, err = run_cli(api, capsys, "cli-e", str(qa), "--scorer", "exact_match")
    assert code == 3
    assert "--scorer" in err and "exact_match" in err
    assert all(name in err for name in every_scorer), err

    code, _, err = run_cli(api, capsys, "cli-e", str(qa), "--format", "xlsx", "--scorer", "equals")
    assert code == 3
    assert "--format" in err and all(
        kind in err for kind in ("jsonl", "csv", "gsm8k", "promptfoo", "inspect")
    )

    unknown = tmp_path / "qa.txt"
    unknown.write_text(CSV, encoding="utf-8")
    code, _, err = run_cli(api, capsys, "cli-e", str(unknown), "--scorer", "equals")
    assert code == 3
    assert "--format" in err and "promptfoo" in err

    # The judge scorer without a judge: the API's scoring.settings.judge is the flag --judge.
    code, _, err = run_cli(api, capsys, "cli-e", str(qa), "--create", "E", "--scorer", "judge")
    assert code == 3
    assert err.startswith("assay import: --judge: ") and "scoring" not in err.split(": ", 2)[1]
    assert api.call("GET", "/api/v1/datasets/cli-e")[0] == 404


CAPITALS = (
    "question,answer\nWhat is the capital of France?,Paris\nWhat is the capital of Spain?,\n"
    "What is the capital of Italy?,Rome\n"
)


def test_assay_import_says_in_words_which_lines_will_not_be_graded(api, tmp_path: Path, capsys):
    capitals = tmp_path / "capitals.csv"
    capitals.write_text(CAPITALS, encoding="utf-8")
    code, out, err = run_cli(
        api, capsys, "capitals", str(capitals), "--create", "Capitals", "--scorer", "equals"
    )
    assert code == 0, err
    head, why = out.splitlines()
    assert head == (
        "imported 3 cases into capitals v1 (scorer equals); 1 case has no reference and will not "
        "be graded: line 3 (add what it lacks, or --allow-ungraded to keep such cases quietly)"
    )
    assert why.startswith(
        "  why: no reference for scorer equals: its 'answer' is empty: fill it in"
    )
    code, out, err = run_cli(
        api, capsys, "capitals", str(capitals), "--scorer", "equals", "--allow-ungraded"
    )
    assert code == 0, err
    assert out == (
        "imported 3 cases into capitals v2 (scorer equals); 1 of them will not be graded "
        "(--allow-ungraded)\n"
    )


def test_assay_import_refuses_an_open_quote_naming_its_line(api, tmp_path: Path, capsys):
    bad = tmp_path / "bad.csv"
    bad.write_text(CAPITALS + '"unterminated,Madrid\n', encoding="utf-8")
    code, out, err = run_cli(
        api, capsys, "cli-bad", str(bad), "--create", "B", "--scorer", "equals"
    )
    assert (code, out) == (3, "")
    assert err.startswith(
        'assay import: 400 invalid_input: line 5: a quoted field is not closed (end it with ", '
    )
    assert len(err.splitlines()) == 1
    assert api.call("GET", "/api/v1/datasets/cli-bad")[0] == 404
    jsonl = tmp_path / "bad.jsonl"
    jsonl.write_text('{"input": "a", "reference": "1"}\n{"input": "b"\n', encoding="utf-8")
    code, _, err = run_cli(
        api, capsys, "cli-bad", str(jsonl), "--create", "B", "--scorer", "equals"
    )
    assert code == 3 and err.startswith("assay import: 400 invalid_input: line 2: not valid JSON")


def test_assay_import_names_a_missing_file_an_unknown_dataset_and_a_near_choice(
    api, tmp_path: Path, capsys
):
    code, out, err = run_cli(api, capsys, "capitals8", "nofile.csv", "--scorer", "equals")
    assert (code, out) == (3, "")
    assert err == "assay import: cannot read nofile.csv: no such file\n"

    qa = tmp_path / "qa.csv"
    qa.write_text(CSV, encoding="utf-8")
    code, out, err = run_cli(api, capsys, "nosuch", str(qa), "--scorer", "equals")
    assert (code, out) == (3, "")
    assert err.startswith("assay import: 404 not_found: dataset nosuch not found -- ")
    assert 'add --create "NAME" to create it' in err and len(err.splitlines()) == 1

    code, _, err = run_cli(api, capsys, "cli-e", str(qa), "--scorer", "equal")
    assert code == 3 and "did you mean equals?" in err
    code, _, err = run_cli(api, capsys, "cli-e", str(qa), "--scorer", "equals", "--format", "jsnl")
    assert code == 3 and "did you mean jsonl?" in err
