"""`assay run --wait` and `assay gate` in a pipeline (issue 13, scope 1): the real command, run as
a subprocess against the embedded stack, exits 1 on a confirmed regression, 0 when nothing broke,
2 when the cases could not be decided, 3 when the API refuses; `--json` writes only JSON to stdout;
`--junit` and `--markdown` write their reports."""

from __future__ import annotations

import json
import os
import subprocess
import sys
import xml.etree.ElementTree as ET
from pathlib import Path
from typing import Any

import pytest

from chalicelib.api.common import issue_token
from tests.e2e.conftest import cases, sleepy_spec

ASSAY = str(Path(sys.executable).with_name("assay"))


@pytest.fixture
def cli(stack, api):
    """`cli(*args) -> CompletedProcess` of the real `assay` command as `api`'s organization."""
    s = stack.settings
    token = issue_token(
        api.org_id, api.user_id, secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer
    )
    env = {**os.environ, "ASSAY_URL": stack.api_url, "ASSAY_TOKEN": token}

    def run(*args: str, token_override: str | None = None) -> subprocess.CompletedProcess[str]:
        if token_override is not None:
            env["ASSAY_TOKEN"] = token_override
        return subprocess.run(
            [ASSAY, *args],
            env=env,
            capture_output=True,
            text=True,
            timeout=240,
            stdin=subprocess.DEVNULL,
        )

    run.env = env  # the environment the command gets, for a shell pipeline
    return run


def _publish(api, agent_id: str, spec: dict[str, Any]) -> None:
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": spec})
    api.ok("POST", f"/api/v1/agents/{agent_id}/versions")


def test_a_confirmed_regression_fails_the_gate_with_json_junit_and_markdown(api, cli, tmp_path):
    ds = api.dataset(cases(10))
    agent = api.agent(sleepy_spec())
    _publish(api, agent, sleepy_spec())  # v1: every case passes
    _publish(api, agent, sleepy_spec(answers={"c002": "7", "c005": "7", "c007": "7"}))
    junit, md = tmp_path / "report.xml", tmp_path / "comment.md"
    done = cli(
        "run", agent, "--dataset", ds, "--version", "2", "--paired-baseline", "--yes", "--wait",
        "--json", "--junit", str(junit), "--markdown", str(md),
    )  # fmt: skip
    assert done.returncode == 1, done.stderr
    out = json.loads(done.stdout)  # stdout is JSON and nothing else
    assert out["gate"] == {
        "exit_code": 1,
        "result": "broke",
        "reasons": [
            '3 confirmed regressions: c002 "question 2", c005 "question 5", c007 "question 7"'
        ],
    }
    assert out["comparison"]["verdict"] == "worse" and "results" not in out["run"]
    assert "estimate:" in done.stderr  # the estimate and the progress went to stderr
    # The progress says what it counts (attempts, reruns of flips included), each state once.
    last = [line for line in done.stderr.splitlines() if ": attempts " in line][-1]
    assert last.endswith(
        "(10 cases, 2 arms; reruns of flips included, so the total grows as flips are found) "
        "completed"
    ), done.stderr
    assert "completed done" not in done.stderr

    root = ET.fromstring(junit.read_text())
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("10", "3", "0")
    failed = {tc.get("name"): tc.find("failure") for tc in root.iter("testcase")}
    assert failed["c005"] is not None and failed["c005"].get("type") == "regression"
    assert (failed["c005"].get("message") or "").startswith('c005 "question 5": ')
    assert "expected: 42" in (failed["c005"].text or "") and "answer: 7" in (
        failed["c005"].text or ""
    )

    comment = md.read_text()
    assert comment.startswith("### assay: broke (exit 1)")
    assert "Version 2 against version 1" in comment and "verdict **worse**" in comment
    assert comment.count("| c00") == 3 and "| c005 | question 5 | 42 | 7 |" in comment


def test_nothing_broke_passes_and_assay_gate_decides_an_existing_run(api, cli):
    ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec())
    _publish(api, agent, sleepy_spec())
    _publish(api, agent, sleepy_spec())  # v2 answers as v1 does
    started = cli("run", agent, "--dataset", ds, "--paired-baseline", "--yes", "--json")
    assert started.returncode == 0, started.stderr
    run_id = json.loads(started.stdout)["run"]["run_id"]
    gated = cli("gate", run_id)
    assert gated.returncode == 0, gated.stdout + gated.stderr
    assert "gate: passed (exit 0)" in gated.stdout
    assert "no confirmed regression; pass rate 100.0 %" in gated.stdout
    below = cli("gate", run_id, "--min-pass-rate", "100%")
    assert below.returncode == 0
    watched = cli("watch", run_id, "--json")
    assert watched.returncode == 0 and json.loads(watched.stdout)["gate"]["result"] == "passed"


def test_cases_nobody_could_decide_are_inconclusive(api, cli):
    ds = api.dataset(cases(3), required=["contains"])
    spec = {
        "runtime": "openai",
        "base_url": "https://api.openai.com/v1",
        "model": "m",
        "api_key_secret": "gone-key",  # nothing is sent without the key: every case incomplete
    }
    # a published version whose secret was removed since: a draft (or a publish) naming a secret
    # the organization lacks is refused before it runs
    api.ok("PUT", "/api/v1/secrets/gone-key", json={"value": "tok-0123456789abcdef"})
    agent = api.agent(spec, publish=1)
    api.ok("DELETE", "/api/v1/secrets/gone-key")
    done = cli("run", agent, "--dataset", ds, "--yes", "--wait")
    assert done.returncode == 2, done.stdout + done.stderr
    assert "gate: inconclusive (exit 2)" in done.stdout
    assert "3 cases undecided" in done.stdout


def test_an_api_refusal_is_exit_3_with_one_line_and_json_under_json(api, cli):
    ds = api.dataset(cases(1))
    refused = cli("run", "agt_nope", "--dataset", ds, "--yes", "--json")
    assert refused.returncode == 3
    body = json.loads(refused.stdout)
    assert body["exit_code"] == 3 and body["error"]["status"] == 404
    assert refused.stderr.count("\n") == 1 and refused.stderr.startswith("assay: ")
    unauthorized = cli("gate", "run_x", token_override="not-a-token")
    assert unauthorized.returncode == 3 and "401" in unauthorized.stderr


def test_without_a_terminal_a_start_needs_yes(api, cli):
    ds = api.dataset(cases(1))
    agent = api.agent(sleepy_spec())
    done = cli("run", agent, "--dataset", ds, "--draft")
    assert done.returncode == 3
    assert "pass --yes" in done.stderr
    listed = api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")
    assert listed.get("runs", listed.get("items")) == []  # nothing was started


def test_estimate_cases_comparison_and_export_cover_a_run(api, cli, tmp_path):
    ds = api.dataset(cases(4))
    agent = api.agent(sleepy_spec())
    _publish(api, agent, sleepy_spec())
    _publish(api, agent, sleepy_spec(answers={"c001": "=1+1"}))
    est = cli("estimate", agent, "--dataset", ds, "--paired-baseline", "--json")
    assert est.returncode == 0 and json.loads(est.stdout)["cases"] == 4
    human = cli("estimate", agent, "--dataset", ds)
    assert human.stdout.startswith("estimate: 4 cases, $") and "budgets after it" in human.stdout
    # Nothing prices the agent yet: the text says what it assumes instead, and where to price it.
    assert "  basis: candidate (no model named): no run history for it, so $0.05 a case" in (
        human.stdout
    )
    assert "give a price in the spec or a model profile" in human.stdout
    run_id = json.loads(
        cli("run", agent, "--dataset", ds, "--paired-baseline", "--yes", "--wait", "--json").stdout
    )["run"]["run_id"]

    listed = cli("cases", run_id, "--outcome", "regression")
    assert listed.returncode == 0
    first, reason = listed.stdout.splitlines()
    assert first == (
        'c001 "question 1" [regression]: candidate failed (3 tries), baseline passed (3 tries)'
    )
    assert reason.startswith("  candidate: equals: ")  # why it failed, the scorer's own words
    compared = cli("comparison", run_id)
    assert compared.stdout.startswith("verdict worse: 1 confirmed regression, 0 confirmed fixes")
    assert 'c001 "question 1": regression (confirmed; candidate failed,failed,failed' in (
        compared.stdout
    )

    jsonl = cli("export", run_id)
    lines = [json.loads(line) for line in jsonl.stdout.splitlines()]
    assert [c["case_id"] for c in lines] == ["c000", "c001", "c002", "c003"]
    out = tmp_path / "cases.csv"
    assert cli("export", run_id, "--format", "csv", "-o", str(out)).returncode == 0
    import csv

    rows = list(csv.DictReader(out.open()))
    assert len(rows) == 8 and {r["arm_id"] for r in rows} == {"candidate", "baseline"}
    broken = next(r for r in rows if r["case_id"] == "c001" and r["arm_id"] == "candidate")
    assert broken["answer"] == "'=1+1" and broken["tries"] == "failed,failed,failed"
    assert not (tmp_path / "cases.csv.part").exists()


def test_a_run_is_cancelled_from_the_command_line(api, cli):
    ds = api.dataset(cases(40))
    agent = api.agent(sleepy_spec(sleep_ms=300))
    run_id = cli("run", agent, "--dataset", ds, "--draft", "--yes").stdout.strip()
    cancelled = cli("cancel", run_id, "--json")
    assert cancelled.returncode == 0 and json.loads(cancelled.stdout)["run_id"] == run_id
    gated = cli("gate", run_id)
    assert gated.returncode == 2 and "the run ended cancelled" in gated.stdout


def test_suites_and_a_guarded_promotion_from_the_command_line(api, cli, tmp_path):
    ds = api.dataset(cases(5))
    agent = api.agent(sleepy_spec())
    _publish(api, agent, sleepy_spec())  # v1 all pass
    _publish(api, agent, sleepy_spec())  # v2 the same
    _publish(api, agent, sleepy_spec(answers={f"c00{i}": "41" for i in range(4)}))  # v3 breaks 4
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 1},
    )
    body = tmp_path / "suite.json"
    body.write_text(
        json.dumps(
            {
                "dataset_id": ds,
                "guards": True,
                "threshold": {"min_pass_rate": 0.5, "max_regressions": 1},
            }
        )
    )
    made = cli("suites", "create", agent, str(body), "--json")
    assert made.returncode == 0, made.stderr
    suite_id = json.loads(made.stdout)["suite_id"]
    assert suite_id in cli("suites", "list", agent).stdout

    promoted = cli("promote", agent, "--environment", "production", "--version", "2", "--wait")
    assert promoted.returncode == 0, promoted.stdout + promoted.stderr
    assert "promoted" in promoted.stdout
    refused = cli("promote", agent, "--environment", "production", "--version", "3", "--wait")
    assert refused.returncode == 1, refused.stdout + refused.stderr
    assert "refused" in refused.stdout

    ran = cli("suites", "run", agent, suite_id, "--wait", "--json")
    assert ran.returncode == 0, ran.stderr  # production serves v2, which passes
    assert json.loads(ran.stdout)["gate"]["exit_code"] == 0
    results = cli("suites", "results", agent, suite_id, "--json")
    assert len(json.loads(results.stdout)["results"]) == 3


def test_a_run_still_going_at_the_timeout_is_inconclusive_and_may_be_cancelled(api, cli):
    ds = api.dataset(cases(30))
    agent = api.agent(sleepy_spec(sleep_ms=400))
    going = cli("run", agent, "--dataset", ds, "--draft", "--yes", "--wait", "--timeout", "0.5")
    assert going.returncode == 2, going.stdout + going.stderr
    assert "did not end within 0.5 s; it goes on (assay cancel run_" in going.stdout
    stopped = cli(
        "run", agent, "--dataset", ds, "--draft", "--yes", "--wait", "--json",
        "--timeout", "0.5", "--cancel-on-timeout",
    )  # fmt: skip
    assert stopped.returncode == 2
    out = json.loads(stopped.stdout)
    assert "it was cancelled (--cancel-on-timeout)" in out["gate"]["reasons"][0]
    status = api.ok("GET", f"/api/v1/eval-runs/{out['run']['run_id']}")["status"]
    assert status in ("cancelled", "running")  # cancelled; its last cases may still be ending
    assert api.ok("GET", f"/api/v1/eval-runs/{out['run']['run_id']}")["status"] != "completed"


def test_a_mistyped_flag_a_missing_file_and_a_closed_pipe_are_errors_in_one_line(
    api, cli, tmp_path
):
    typo = cli("run", "agt", "--dataset", "ds", "--verison", "3", "--yes", "--wait")
    assert typo.returncode == 3 and "unrecognized arguments: --verison" in typo.stderr
    missing = cli("suites", "create", "agt", str(tmp_path / "nope.json"))
    assert missing.returncode == 3 and "Traceback" not in missing.stderr
    assert missing.stderr.startswith("assay: ") and missing.stderr.count("\n") == 1
    imported = cli("import", "ds1", str(tmp_path / "nope.jsonl"), "--create", "D")
    assert imported.returncode == 3 and "Traceback" not in imported.stderr

    ds = api.dataset(cases(200))
    agent = api.agent(sleepy_spec())
    run_id = json.loads(
        cli("run", agent, "--dataset", ds, "--draft", "--yes", "--wait", "--json").stdout
    )["run"]["run_id"]
    assert len(cli("export", run_id).stdout) > 150_000  # more than a pipe holds (64 KiB)
    piped = subprocess.run(
        f"{ASSAY} export {run_id} | head -c 100 > /dev/null",
        shell=True, capture_output=True, text=True, timeout=120, env=cli.env,
    )  # fmt: skip
    assert piped.stderr == ""  # no BrokenPipeError traceback


def test_a_stability_run_says_how_steady_the_answers_were(api, cli):
    flaky = {"runtime": "python", "entrypoint": "bench.agents:flaky", "options": {"p": 1.0}}
    agent = api.agent(flaky)
    done = cli(
        "run",
        agent,
        "--dataset",
        api.dataset(cases(3)),
        "--draft",
        "--stability",
        "--yes",
        "--wait",
    )
    assert done.returncode == 0, done.stdout + done.stderr
    assert "stability: 0 of 3 cases changed their answer when asked again (steady)" in done.stdout
