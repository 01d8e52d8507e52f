"""`assay demo` as a person runs it, on the first 40 GSM8K cases: the real command in a
subprocess, with its embedded stack. It prints the four recorded models' exact pass counts
(computed here independently from the recorded answers), speaks one vocabulary (a version's
verdict pass/partial/fail/none, a comparison's better/worse/mixed/no difference, a one-line legend
where they meet, guard outcomes as plain sentences, progress counted in attempts with each state
word once), and ends saying the stack has stopped, how to keep it up with a live console link, and
the next step for one's own agent - with no link to the stack it stopped."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import pytest

from assay_local import demo, demo_text
from tests.e2e.test_gsm8k_comparison import DATA, final_number
from tests.localstack.check import demo_figures

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


def table_rows(output: str, limit: int) -> dict[str, tuple[int, int, str]]:
    """The demo's table of versions: model -> (version, passed, verdict)."""
    return {
        m.group(2): (int(m.group(1)), int(m.group(3)), m.group(4))
        for m in re.finditer(
            rf"│ v(\d) +│ (\w+) +│ [\d.]+% +│ (\d+)/{limit} +│ (\w+) +│", output, re.MULTILINE
        )
    }


def test_the_demo_prints_each_recorded_model_s_exact_pass_count(output):
    passes = expected_passes(LIMIT)
    rows = table_rows(output, LIMIT)
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


def test_each_guarded_comparison_says_how_likely_its_confirmed_regressions_are_luck(output):
    said = flat(output)
    verdicts = re.findall(r"verdict [a-z ]+?: (\d+) confirmed regressions?,", said)
    luck = re.findall(r"noise: (\d+|No) confirmed regressions?\.? (?:With|Without) [^;.]+", said)
    assert len(verdicts) == 2 and len(luck) == 2, said
    # Each noise line follows its comparison's verdict and counts the same regressions.
    assert [("0" if n == "No" else n) for n in luck] == verdicts
    assert "a candidate that changed nothing would show one in" in said


def test_the_demo_ends_without_a_dead_link_and_says_what_to_do_next(output):
    lines = [line for line in output.splitlines() if line.strip()]
    assert "#token=" not in output and "console (" not in output
    assert lines[-3].startswith("demo finished in ")
    assert lines[-3].endswith("; the stack has stopped, and its console with it")
    assert lines[-2] == (
        "to look around in the console, run `make demo ARGS=--serve` (`assay demo --serve`): it "
        "prints a live signed-in console link and keeps the stack up until Ctrl-C"
    )
    assert lines[-1] == demo_text.OWN_AGENT_LINE
    assert "/api/evaluations/" not in output
    assert "each version's summary (POST /api/v1/agent-summaries): " in flat(output)


def test_the_progress_counts_attempts_and_says_each_state_once(output):
    said = flat(output)
    assert "completed done" not in said
    assert re.search(r"guard: v3 beside v2 \(40 cases\), attempts .*\d+/\d+", said), said
    assert "(reruns of flips included) completed" in said


def test_the_demo_names_the_embedded_moto_server_it_starts(output):
    assert output.splitlines()[0].startswith(
        "assay demo: starting the embedded stack (moto server on 127.0.0.1)"
    )


def test_the_demo_on_another_endpoint_names_it_and_counts_the_same(output):
    """`AWS_ENDPOINT_URL` (LocalStack, a moto server of one's own): the demo's first line names
    that endpoint, never the embedded moto server, and its figures are the recorded models'
    exact pass counts, and every figure the same as on the embedded stack (what
    `make test-localstack` compares on LocalStack)."""
    import boto3

    from assay_local.motoserver import start_moto_process

    limit = LIMIT  # at 40 cases the guard holds v3 back and promotes v4: the demo exits 0
    external = start_moto_process()  # stands in for LocalStack: any AWS endpoint
    try:
        done = subprocess.run(
            [sys.executable, "-m", "assay_local.cli", "demo", "--limit", str(limit)],
            cwd=REPO,
            env=clean_env() | {"AWS_ENDPOINT_URL": external.url},
            capture_output=True,
            text=True,
            timeout=600,  # a hang guard only
        )
        assert done.returncode == 0, done.stdout[-3000:] + done.stderr[-3000:]
        first = done.stdout.splitlines()[0]
        assert first == (
            f"assay demo: starting the embedded stack (AWS at {external.url}, AWS_ENDPOINT_URL)…"
        )
        assert "moto server" not in done.stdout
        rows = table_rows(done.stdout, limit)
        passes = expected_passes(limit)
        assert {model: row[1] for model, row in rows.items()} == passes, done.stdout
        figures = demo_figures(done.stdout)
        assert len(figures["versions"]) == 4 and len(figures["guard"]) == 2, figures
        assert len(figures["comparisons"]) == 2 and len(figures["summaries"]) == 4, figures
        assert figures == demo_figures(output)
        # What the demo made is at that endpoint.
        dynamodb = boto3.client(
            "dynamodb",
            endpoint_url=external.url,
            region_name="us-east-1",
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
        )
        assert any(name.endswith("datasets") for name in dynamodb.list_tables()["TableNames"])
    finally:
        external.stop()


def test_the_demo_on_an_endpoint_that_does_not_answer_is_one_line():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        closed = f"http://127.0.0.1:{s.getsockname()[1]}"
    done = subprocess.run(
        [sys.executable, "-m", "assay_local.cli", "demo", "--limit", "5"],
        cwd=REPO,
        env=clean_env() | {"AWS_ENDPOINT_URL": closed},
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard only
    )
    assert done.returncode == 3, done.stdout + done.stderr
    lines = done.stderr.splitlines()
    assert len(lines) == 1, done.stderr
    assert lines[0].startswith(f"assay demo: AWS_ENDPOINT_URL={closed} does not answer")
    assert "unset AWS_ENDPOINT_URL" in lines[0]
    assert f"AWS at {closed}" in done.stdout


@pytest.mark.parametrize(
    ("command", "setting", "said"),
    [
        (["demo", "--limit", "5"], "EVAL_RERUNS=9", "assay demo: EVAL_RERUNS=9: must be 0-5"),
        (
            ["bench"],
            "EVAL_MAX_LUCK=2",
            "assay bench: EVAL_MAX_LUCK=2: must be a number, over 0 and under 1",
        ),
        (
            ["token"],
            "ASSAY_TOKEN_TTL_SECONDS=",
            "assay token: ASSAY_TOKEN_TTL_SECONDS=: must be a whole number, at least 60",
        ),
    ],
)
def test_a_bad_setting_in_the_shell_is_one_line_naming_its_variable(
    command: list[str], setting: str, said: str
):
    name, _, value = setting.partition("=")
    done = subprocess.run(
        [sys.executable, "-m", "assay_local.cli", *command],
        cwd=REPO,
        env=clean_env() | {name: value},
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard only
    )
    assert done.returncode == 2, done.stdout + done.stderr
    assert done.stdout == ""
    assert done.stderr.splitlines() == [said]


def test_a_bench_concurrency_the_setting_refuses_is_a_usage_error_naming_its_bounds():
    done = subprocess.run(
        [sys.executable, "-m", "assay_local.cli", "bench", "--concurrency", "0"],
        cwd=REPO,
        env=clean_env(),
        capture_output=True,
        text=True,
        timeout=600,  # a hang guard only
    )
    assert done.returncode == 3, done.stdout + done.stderr
    assert "Traceback" not in done.stderr
    assert done.stderr.splitlines()[-1] == (
        "assay bench: error: argument --concurrency: '0' is not a concurrency "
        "EVAL_RUN_CONCURRENCY takes: give 1-100"
    )
