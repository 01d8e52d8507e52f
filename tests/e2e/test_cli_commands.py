"""The CLI's other API commands through the typed client (issue 13, scope 2), as the real command
against the embedded stack: secrets, recordings, summaries, and what a usage error exits with."""

from __future__ import annotations

import json
import os
import subprocess
import sys
from pathlib import Path

import pytest

from chalicelib.api.common import issue_token
from tests.e2e.conftest import cases, sleepy_spec

ASSAY = str(Path(sys.executable).with_name("assay"))


@pytest.fixture
def cli(stack, api):
    s = stack.settings
    token = issue_token(
        api.org_id, api.user_id, secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer
    )
    env = {**os.environ, "ASSAY_URL": stack.api_url, "ASSAY_TOKEN": token, "MY_KEY": "sk-test-1"}

    def run(*args: str, stdin: str | None = None) -> subprocess.CompletedProcess[str]:
        return subprocess.run(
            [ASSAY, *args], env=env, capture_output=True, text=True, timeout=120, input=stdin
        )

    return run


def test_secrets_are_set_listed_and_deleted_and_never_printed(cli):
    done = cli("secrets", "set", "openai", "--from-env", "MY_KEY")
    assert done.returncode == 0 and done.stdout.startswith("secret openai set at ")
    assert cli("secrets", "set", "gw", "--value-stdin", stdin="tok-2\n").returncode == 0
    listed = cli("secrets", "list")
    assert [line.split("\t")[0] for line in listed.stdout.splitlines()] == ["gw", "openai"]
    assert "sk-test-1" not in listed.stdout + done.stdout
    assert cli("secrets", "delete", "gw").returncode == 0
    assert cli("secrets", "set", "x", "--from-env", "NOT_SET_ANYWHERE").returncode == 3


def test_a_secret_without_a_value_names_the_flag_and_the_fix_and_none_listed_says_how(cli):
    listed = cli("secrets", "list")
    assert listed.returncode == 0, listed.stderr
    assert listed.stdout.splitlines() == [
        "no secrets yet: assay secrets set NAME --from-env VAR (or --value-stdin) adds one"
    ]

    unset = cli("secrets", "set", "k2", "--from-env", "NOPE_UNSET_VAR")
    assert unset.returncode == 3
    assert unset.stderr.splitlines() == [
        "assay: --from-env NOPE_UNSET_VAR: that variable is not set in this shell: export "
        "NOPE_UNSET_VAR=<the value> first, or pipe the value in with --value-stdin"
    ]

    empty = cli("secrets", "set", "k2", "--value-stdin", stdin="\n")
    assert empty.returncode == 3
    (line,) = empty.stderr.splitlines()
    assert line.startswith("assay: --value-stdin: standard input was empty: pipe the value in")
    assert "assay secrets set k2 --value-stdin" in line and "--from-env VAR" in line
    assert cli("secrets", "list").stdout.startswith("no secrets yet")  # neither was set


def test_recordings_upload_list_delete_and_a_run_replays_one(cli, api, tmp_path):
    answers = tmp_path / "answers.jsonl"
    answers.write_text('{"case_id": "c000", "answer": "42"}\n{"case_id": "c001", "answer": "7"}\n')
    up = cli("recordings", "upload", str(answers), "--id", "mine")
    assert up.returncode == 0 and json.loads(up.stdout)["recording_id"] == "mine"
    assert [
        r["recording_id"] for r in json.loads(cli("recordings", "list").stdout)["recordings"]
    ] == ["mine"]
    agent = api.agent({"runtime": "recorded", "recording_id": "mine"})
    ran = cli("run", agent, "--dataset", api.dataset(cases(2)), "--draft", "--yes", "--wait")
    assert ran.returncode == 0 and "1/2 passed" in ran.stdout
    assert cli("recordings", "delete", "mine").returncode == 0


def test_summaries_print_the_verdicts_of_agent_versions(cli, api):
    agent = api.agent(sleepy_spec(), publish=1)
    ds = api.dataset(cases(2))
    assert cli("run", agent, "--dataset", ds, "--version", "1", "--yes", "--wait").returncode == 0
    out = json.loads(cli("summaries", f"{agent}@1", "--json").stdout)
    [summary] = out["summaries"] if "summaries" in out else out["agents"]
    assert (summary["version"], summary["verdict"], summary["passed"]) == (1, "pass", 2)
    # By default one line per version, in words (the draft was never measured).
    said = cli("summaries", f"{agent}@1", f"{agent}@draft")
    assert said.returncode == 0, said.stderr
    assert said.stdout.splitlines() == [
        f"{agent} v1: pass (2 of 2 passed)",
        f"{agent} draft: none (not measured yet)",
    ]


def test_missing_url_and_token_is_exit_3_in_one_line(tmp_path):
    env = {k: v for k, v in os.environ.items() if k not in ("ASSAY_URL", "ASSAY_TOKEN")}
    done = subprocess.run(
        [ASSAY, "gate", "run_1"], env=env, capture_output=True, text=True, timeout=60
    )
    assert done.returncode == 3
    assert done.stderr.strip() == (
        "assay: set --url and --token, or ASSAY_URL and ASSAY_TOKEN (assay dev prints both)"
    )


def test_the_readme_s_example_files_import_and_upload(cli):
    """The files the README's by-hand flow names are in `examples/` and do what it says."""
    root = Path(__file__).resolve().parents[2] / "examples"
    done = cli(
        "import", "greetings", str(root / "greetings.promptfoo.yaml"), "--create", "Greetings",
        "--json",
    )  # fmt: skip
    assert done.returncode == 0, done.stderr
    made = json.loads(done.stdout)["version"]
    assert (made["case_count"], made["ungraded_cases"]) == (3, 0)
    done = cli(
        "import",
        "mmlu-mini",
        str(root / "mmlu-mini.inspect.jsonl"),
        "--create",
        "MMLU mini",
        "--scorer",
        "icontains",
        "--json",
    )
    assert done.returncode == 0, done.stderr
    assert json.loads(done.stdout)["version"]["case_count"] == 3
    up = cli("recordings", "upload", str(root / "arith-answers.jsonl"), "--id", "my-answers")
    assert up.returncode == 0 and json.loads(up.stdout)["recording_id"] == "my-answers"
