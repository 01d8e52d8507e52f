"""The CLI sets up what it runs (issue 29): an agent from a YAML spec, its drafts and versions, an
environment, a dataset, a suite and a gate, all with the `assay` command alone against the embedded
stack; an error that has a fix names the command that fixes it; a delete needs --yes.

Most commands run in-process through the real entry point (`assay_local.cli.main`, stdout and
stderr captured); one runs as a subprocess, as a pipeline would."""

from __future__ import annotations

import json
import os
import re
import socket
import subprocess
import sys
from pathlib import Path

import yaml

from tests.e2e.conftest import sleepy_spec

ASSAY = str(Path(sys.executable).with_name("assay"))


def _yaml(path: Path, doc: object) -> str:
    path.write_text(yaml.safe_dump(doc, sort_keys=False), encoding="utf-8")
    return str(path)


def _cases(tmp_path: Path, n: int) -> str:
    path = tmp_path / "cases.jsonl"
    path.write_text(
        "".join(
            json.dumps({"case_id": f"c{i:03d}", "input": f"question {i}", "reference": "42"}) + "\n"
            for i in range(n)
        ),
        encoding="utf-8",
    )
    return str(path)


def test_an_agent_environment_suite_and_gate_are_set_up_with_the_cli_alone(cli, tmp_path):
    spec = _yaml(tmp_path / "agent.yaml", sleepy_spec())
    made = cli("agents", "create", "support-bot", "--name", "Support bot", "--spec", spec)
    assert made.code == 0, made.err
    assert made.out.startswith("agent support-bot created (Support bot)")

    listed = cli("agents", "list")
    assert listed.code == 0, listed.err
    header, row = listed.out.splitlines()
    assert re.split(r"\s{2,}", header.strip()) == [
        "AGENT", "NAME", "LIVE", "DRAFT", "LIVE VERDICT", "DRAFT VERDICT",
    ]  # fmt: skip
    assert re.split(r"\s{2,}", row.strip()) == [
        "support-bot", "Support bot", "-", "not published yet", "-", "none (not measured yet)",
    ]  # fmt: skip
    assert "None" not in listed.out and "null" not in listed.out

    first = cli("agents", "publish", "support-bot")
    assert first.code == 0 and first.out.startswith("published agent support-bot v1 (spec ")

    draft = _yaml(tmp_path / "draft.yaml", {"spec": sleepy_spec(sleep_ms=1), "name": "Bot 2"})
    changed = cli("agents", "draft", "support-bot", draft)
    assert changed.code == 0, changed.err
    assert changed.out.rstrip().endswith("differs from v1")
    shown = cli("agents", "show", "support-bot")
    assert shown.code == 0, shown.err
    assert shown.out.startswith("agent support-bot: Bot 2\n  live v1, latest v1;")
    assert "  draft: differs from v1 (spec " in shown.out and "runtime python" in shown.out
    assert re.search(r"^v1 +\S+ +\S+ +[0-9a-f]{12} ", shown.out, re.M), shown.out

    second = cli("agents", "publish", "support-bot")
    assert second.code == 0 and second.out.startswith("published agent support-bot v2")
    again = cli("agents", "publish", "support-bot", "--version", "2")
    assert again.out.startswith("agent support-bot v2 holds this spec already")
    as_json = json.loads(cli("agents", "list", "--json").out)
    [agent] = as_json["agents"]
    assert (agent["agent_id"], agent["latest_version"]) == ("support-bot", 2)
    assert "same as v2" in cli("agents", "list").out

    env = cli("environments", "create", "production", "--default", "--name", "Production")
    assert env.code == 0, env.err
    assert env.out.strip() == (
        "environment production created (Production); it is the organization's default"
    )
    envs = cli("environments", "list")
    assert envs.out.splitlines()[1].split()[:3] == ["production", "Production", "yes"]

    imported = cli("import", "faq", _cases(tmp_path, 3), "--create", "FAQ", "--scorer", "equals")
    assert imported.code == 0, imported.err
    assert cli("datasets", "list").out.splitlines()[1].split()[:3] == ["faq", "FAQ", "v1"]
    ds = cli("datasets", "show", "faq")
    assert ds.out.splitlines()[:4] == [
        "dataset faq: FAQ",
        "  versions: v1",
        ds.out.splitlines()[2],
        "  scorers: equals",
    ]
    assert ds.out.splitlines()[2].startswith("  v1: 3 cases, added ")
    assert json.loads(cli("datasets", "show", "faq", "--json").out)["version"]["case_count"] == 3
    more = cli("import", "faq", _cases(tmp_path, 5), "--scorer", "equals", "--scorer", "contains")
    assert more.code == 0, more.err
    two = cli("datasets", "show", "faq").out.splitlines()
    assert two[1] == "  versions: v1 to v2" and two[2].startswith("  v2: 5 cases, added ")
    assert two[3:] == ["  scorers: equals, contains", "  v1: 3 cases"]

    suite_file = _yaml(
        tmp_path / "suite.yaml",
        {
            "suite_id": "nightly",
            "dataset_id": "faq",
            "threshold": {"min_pass_rate": 0.9},
            "triggers": {"schedule": {"cron": "0 6 * * *", "timezone": "UTC"}},
        },
    )
    suite = cli("suites", "create", "support-bot", suite_file)
    assert suite.code == 0, suite.err
    assert suite.out.splitlines()[:4] == [
        "suite nightly saved for agent support-bot",
        "  dataset: faq (latest); checks the default environment",
        "  threshold: min pass rate 0.9, max regressions 0",
        "  runs: every day at 06:00 UTC",
    ]
    none_yet = cli("suites", "results", "support-bot", "nightly")
    assert none_yet.out.strip() == (
        "suite nightly has no result yet: assay suites run support-bot nightly --wait runs it now"
    )
    suites = cli("suites", "list", "support-bot")
    assert suites.out.splitlines()[1].split() == [
        "nightly", "-", "faq", "(latest)", "checks", "the", "default", "environment",
        "every", "day", "at", "06:00", "UTC", "never", "run",
    ]  # fmt: skip

    gated = cli("run", "support-bot", "--dataset", "faq", "--version", "2", "--yes", "--wait")
    assert gated.code == 0, gated.out + gated.err
    assert "  no baseline: the pass rate alone (and --min-pass-rate) decides" in gated.out
    assert "against the baseline: None" not in gated.out
    assert re.search(r"^  latency p50 (<1 ms|\d+ ms|\d+\.\d s), p95 ", gated.out, re.M), gated.out
    paired = cli(
        "run", "support-bot", "--dataset", "faq", "--version", "2", "--paired-baseline",
        "--yes", "--wait",
    )  # fmt: skip
    assert paired.code == 0, paired.out + paired.err
    assert "  against the baseline: no difference; 0 confirmed regressions" in paired.out
    assert "None" not in paired.out

    promoted = cli("promote", "support-bot", "--environment", "production", "--version", "2")
    assert promoted.code == 0 and "promoted" in promoted.out  # no suite guards production
    # the list reads v2's verdict from the run just made, with no read per agent
    live = re.split(r"\s{2,}", cli("agents", "list").out.splitlines()[1].strip())
    assert live[:4] == ["support-bot", "Bot 2", "v2", "same as v2"], live
    assert re.fullmatch(r"(pass|partial|fail) \(\d+/\d+\)", live[4]), live
    ran = cli("suites", "run", "support-bot", "nightly", "--wait")
    assert ran.code == 0, ran.out + ran.err
    assert ran.out.startswith("suite nightly: passed")
    assert cli("suites", "list", "support-bot").out.splitlines()[1].split()[-1] == "passed"


def test_a_promotion_that_waits_for_its_guards_says_so_and_exits_2(cli, tmp_path):
    spec = _yaml(tmp_path / "agent.yaml", sleepy_spec(sleep_ms=200))
    assert cli("agents", "create", "bot", "--spec", spec).code == 0
    assert cli("agents", "publish", "bot").code == 0
    assert cli("agents", "publish", "bot", "--version", "2").code == 0
    assert cli("environments", "create", "production").code == 0  # the first is the default
    assert (
        cli("import", "qa", _cases(tmp_path, 20), "--create", "QA", "--scorer", "equals").code == 0
    )
    promoted = cli("promote", "bot", "--environment", "production", "--version", "1")
    assert promoted.code == 0 and "promoted" in promoted.out  # nothing guards it yet
    guard = _yaml(tmp_path / "guard.yaml", {"dataset_id": "qa", "guards": True})
    saved = cli("suites", "create", "bot", guard)
    assert saved.code == 0 and "  dataset: qa (latest); guards production\n" in saved.out

    waiting = cli("promote", "bot", "--environment", "production", "--version", "2")
    assert waiting.code == 2, waiting.out + waiting.err
    assert "it waits for its guards' eval runs; the version is not promoted yet (exit 2)" in (
        waiting.out
    )
    twice = cli("promote", "bot", "--environment", "production", "--version", "2")
    assert twice.code == 3
    assert "is still waiting for its guards (field environment_id)" in twice.err
    assert twice.err.strip().endswith(
        "-- its guards' eval runs decide it first: assay suites list bot shows how they came out"
    )


def test_a_404_names_the_command_that_fixes_it(cli, tmp_path):
    spec = _yaml(tmp_path / "agent.yaml", sleepy_spec())
    assert cli("agents", "create", "bot", "--spec", spec).code == 0
    assert (
        cli("import", "qa", _cases(tmp_path, 2), "--create", "QA", "--scorer", "equals").code == 0
    )
    suite = _yaml(tmp_path / "suite.yaml", {"dataset_id": "qa"})

    refused = cli("suites", "create", "bot", suite)
    assert refused.code == 3 and refused.out == ""
    [line] = refused.err.splitlines()
    assert "404" in line and "no default environment" in line
    assert "assay environments create production --default" in line

    unknown = cli("agents", "show", "nobody")
    assert unknown.code == 3
    assert unknown.err.strip().endswith(
        "-- create it: assay agents create nobody --spec FILE (assay agents list shows the "
        "agents there are)"
    )
    as_json = cli("agents", "show", "nobody", "--json")
    error = json.loads(as_json.out)["error"]
    assert (error["status"], error["fix"]) == (
        404,
        "create it: assay agents create nobody --spec FILE (assay agents list shows the agents "
        "there are)",
    )
    taken = cli("agents", "create", "bot", "--spec", spec)
    assert taken.code == 3
    assert taken.err.strip().endswith("-- change its draft instead: assay agents draft bot FILE")
    never = cli("run", "bot", "--dataset", "qa", "--yes")
    assert never.code == 3
    assert never.err.strip().endswith(
        "-- publish it: assay agents publish bot (or run the draft: --draft)"
    )
    assert cli("agents", "publish", "bot").code == 0
    no_version = cli("run", "bot", "--dataset", "qa", "--version", "3", "--yes")
    assert no_version.code == 3
    assert "-- publish the draft: assay agents publish bot" in no_version.err


def test_a_credential_in_plain_text_names_assay_secrets_set(cli, tmp_path):
    spec = {
        "runtime": "openai",
        "base_url": "https://api.openai.com/v1",
        "model": "m",
        "extra_headers": {"Authorization": "Bearer not-a-real-key"},
    }
    refused = cli("agents", "create", "keyed", "--spec", _yaml(tmp_path / "agent.yaml", spec))
    assert refused.code == 3 and refused.out == ""
    [line] = refused.err.splitlines()
    assert "400" in line and "holds a credential in plain text" in line
    assert line.endswith(
        "-- store the value as a secret: assay secrets set NAME --from-env VARIABLE (or "
        "--value-stdin), then refer to it by NAME"
    )


def test_a_delete_is_refused_without_yes_and_done_with_it(cli, tmp_path):
    spec = _yaml(tmp_path / "agent.yaml", sleepy_spec())
    assert cli("agents", "create", "bot", "--spec", spec).code == 0
    assert cli("environments", "create", "staging").code == 0

    refused = cli("agents", "delete", "bot")
    assert refused.code == 3 and refused.out == ""
    assert refused.err.strip().endswith("pass --yes to delete it")
    assert cli("agents", "show", "bot").code == 0  # still there
    assert cli("environments", "delete", "staging").code == 3
    assert "staging" in cli("environments", "list").out

    gone = cli("agents", "delete", "bot", "--yes")
    assert gone.code == 0 and gone.out.startswith("deleted agent bot with 0 eval runs")
    assert cli("agents", "show", "bot").code == 3
    assert cli("environments", "delete", "staging", "--yes").code == 0
    assert cli("environments", "list").out.startswith("no environments yet: ")


def test_a_failed_case_shows_the_scorers_reason_and_profiles_are_listed(cli, tmp_path):
    spec = _yaml(tmp_path / "agent.yaml", sleepy_spec(answers={"c001": "41"}))
    assert cli("agents", "create", "bot", "--spec", spec).code == 0
    assert (
        cli("import", "qa", _cases(tmp_path, 2), "--create", "QA", "--scorer", "equals").code == 0
    )
    run = cli("run", "bot", "--dataset", "qa", "--draft", "--yes", "--json")
    run_id = json.loads(run.out)["run"]["run_id"]
    assert cli("gate", run_id).code == 0  # no minimum pass rate, no baseline
    listed = cli("cases", run_id)
    lines = listed.out.splitlines()
    assert lines[0] == 'c000 "question 0": candidate passed (1 try)'
    assert lines[1] == 'c001 "question 1": candidate failed (1 try)'
    assert lines[2].startswith("  candidate: equals: ") and "41" in lines[2]

    profile = _yaml(
        tmp_path / "profile.yaml",
        {
            "model": "gpt-4o-mini",
            "name": "Small",
            "temperature": 0,
            "price": {"input_per_mtok_usd": 0.15, "output_per_mtok_usd": 0.6},
        },
    )
    made = cli("profiles", "create", "small", profile)
    assert made.code == 0, made.err
    assert made.out.strip() == (
        "model profile small created: model gpt-4o-mini, price $0.15 in / $0.60 out per 1M tokens"
    )
    row = cli("profiles", "list").out.splitlines()[1]
    assert row.split()[:4] == ["small", "Small", "gpt-4o-mini", "0"]
    assert json.loads(cli("profiles", "list", "--json").out)["model_profiles"][0]["model"] == (
        "gpt-4o-mini"
    )


def test_a_model_profile_is_deleted_with_yes_and_made_again(cli, tmp_path):
    profile = _yaml(tmp_path / "profile.yaml", {"model": "gpt-4o-mini", "temperature": 0})
    assert cli("profiles", "create", "small", profile).code == 0

    refused = cli("profiles", "delete", "small")
    assert refused.code == 3 and "pass --yes" in refused.err, refused.err
    assert "small" in cli("profiles", "list").out  # still there

    gone = cli("profiles", "delete", "small", "--yes")
    assert gone.code == 0, gone.err
    assert gone.out.startswith("deleted model profile small")
    assert cli("profiles", "list").out.strip().startswith("no model profiles yet")
    again = cli("profiles", "delete", "small", "--yes")
    assert again.code == 3 and "small" in again.err and len(again.err.splitlines()) == 1

    elsewhere = _yaml(tmp_path / "other.yaml", {"model": "gpt-4o", "temperature": 0})
    assert cli("profiles", "create", "small", elsewhere).code == 0  # the id is free again
    listed = json.loads(cli("profiles", "delete", "small", "--yes", "--json").out)
    assert listed == {"model_profile_id": "small", "deleted": True}
    assert "delete" in cli("profiles", "--help").out


def test_no_api_at_the_url_is_said_plainly_by_the_real_command():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        port = s.getsockname()[1]  # closed again below: nobody answers there
    env = {**os.environ, "ASSAY_URL": f"http://127.0.0.1:{port}", "ASSAY_TOKEN": "t"}
    done = subprocess.run(
        [ASSAY, "agents", "list"], env=env, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 3
    [line] = done.stderr.splitlines()
    assert line.startswith(f"assay: the API at http://127.0.0.1:{port} is not answering (")
    assert line.endswith(
        "start one with `assay dev`, or point ASSAY_URL (or --url) at a running assay"
    )
