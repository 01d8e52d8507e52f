"""`assay demo` as a person runs it, on the first 40 GSM8K cases: the real command in a
subprocess, with its embedded stack. It prints the four recorded models' exact pass counts
(computed here independently from the recorded answers), speaks one vocabulary (a version's
verdict pass/partial/fail/none, a comparison's better/worse/mixed/no difference, a one-line legend
where they meet, guard outcomes as plain sentences), and ends with how to keep the stack up and
the console link, said to work only while the stack is up."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from pathlib import Path

import pytest

from assay_local import demo, demo_text
from tests.e2e.test_gsm8k_comparison import DATA, final_number

REPO = Path(__file__).resolve().parents[2]
LIMIT = 40


def expected_passes(limit: int) -> dict[str, int]:
    """Each model's passes on the first `limit` questions, read independently of assay's scorer."""
    questions = [
        json.loads(line) for line in (DATA / "test.jsonl").read_text(encoding="utf-8").splitlines()
    ][:limit]
    reference = {q["question"]: final_number(q["answer"]) for q in questions}
    passes = dict.fromkeys(demo.MODELS, 0)
    for line in (DATA / "example_model_solutions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        if row["question"] in reference:
            for model in demo.MODELS:
                passes[model] += final_number(row[model]["solution"]) == reference[row["question"]]
    return passes


def clean_env() -> dict[str, str]:
    """This environment without what the test session's own embedded stack set in it."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.upper().startswith(("AWS_", "ASSAY_", "EVAL_", "EVALUATION_"))
    }
    return env | {"PYTHONUNBUFFERED": "1"}


@pytest.fixture(scope="module")
def output() -> str:
    done = subprocess.run(
        [sys.executable, "-m", "assay_local.cli", "demo", "--limit", str(LIMIT)],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard only: it takes seconds
    )
    assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
    return done.stdout


def flat(text: str) -> str:
    """The output with its wrapped lines joined (rich wraps at 120 columns)."""
    return " ".join(text.split())


def test_the_demo_prints_each_recorded_model_s_exact_pass_count(output):
    passes = expected_passes(LIMIT)
    rows = {
        m.group(2): (int(m.group(1)), int(m.group(3)), m.group(4))
        for m in re.finditer(
            r"│ v(\d) +│ (\w+) +│ [\d.]+% +│ (\d+)/40 +│ (\w+) +│", output, re.MULTILINE
        )
    }
    assert set(rows) == set(demo.MODELS), output
    for version, model in enumerate(demo.MODELS, start=1):
        assert rows[model][:2] == (version, passes[model]), model
        assert rows[model][2] in demo_text.VERSION_VERDICTS
    said = flat(output)
    for version, model in enumerate(demo.MODELS, start=1):
        assert f"v{version} partial ({passes[model]} of {LIMIT} passed)" in said


def test_the_demo_speaks_one_vocabulary_with_a_legend_where_the_two_kinds_meet(output):
    said = flat(output)
    assert said.count(demo_text.LEGEND) == 1
    verdicts = re.findall(r"verdict ([a-z ]+?): \d+ confirmed regression", said)
    assert len(verdicts) == 2 and set(verdicts) <= set(demo_text.COMPARISON_VERDICTS), verdicts
    # The legend comes after the comparisons and before the table of versions' verdicts.
    assert said.rindex("confirmed regression") < said.index(demo_text.LEGEND)
    assert said.index(demo_text.LEGEND) < said.index("passed/total")
    for gone in ("overall (exact McNemar)", "verdict: ", "Before promotion", "result failed"):
        assert gone not in said, gone
    assert not re.search(r"seed \d", said, re.IGNORECASE)


def test_guard_outcomes_are_plain_sentences(output):
    said = flat(output)
    assert re.search(r"v3 onto production: held back: the guard's suite failed \([^)]+\)", said)
    assert re.search(
        r"v4 onto production: promoted: the guard's suite passed \(\d+ confirmed regressions?, up "
        r"to 80 allowed; pass rate [\d.]+%, at least 50\.0%\)",
        said,
    )


def test_the_console_link_comes_last_and_only_works_while_the_stack_is_up(output):
    lines = [line for line in output.splitlines() if line.strip()]
    assert re.fullmatch(
        r"console \(works only while the stack is up\): http://127\.0\.0\.1:\d+/agents/"
        r"gsm8k-solver-\d+#token=[\w.-]+",
        lines[-1],
    ), lines[-1]
    assert output.count("#token=") == 1
    assert lines[-2].startswith("demo finished in ")
    assert "`assay demo --serve` (`make demo ARGS=--serve`)" in lines[-2]
