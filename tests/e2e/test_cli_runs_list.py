"""`assay runs list` lists the organization's eval runs newest first, by agent or by dataset, as a
table or as JSON, and says how to start one when there is none; run in-process through the real
entry point (`assay_local.cli.main`) against the embedded stack."""

from __future__ import annotations

import json
import re

from tests.e2e.conftest import cases, sleepy_spec


def _rows(out: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in out.splitlines()]


def test_runs_are_listed_newest_first_by_agent_or_dataset_and_as_json(cli, api):
    empty = cli("runs", "list")
    assert empty.code == 0, empty.err
    assert empty.out.strip() == (
        "no eval runs yet: assay run AGENT --dataset DS --draft --yes --wait starts one"
    )
    assert json.loads(cli("runs", "list", "--json").out) == {"runs": []}

    first_agent = api.agent(sleepy_spec(), publish=1)
    first_ds = api.dataset(cases(2))
    first = cli("run", first_agent, "--dataset", first_ds, "--version", "1", "--yes", "--wait")
    assert first.code == 0, first.out + first.err
    second_agent = api.agent(sleepy_spec())
    second_ds = api.dataset(cases(3))
    second = cli("run", second_agent, "--dataset", second_ds, "--draft", "--yes", "--wait")
    assert second.code == 0, second.out + second.err

    listed = cli("runs", "list")
    assert listed.code == 0, listed.err
    header, newest, oldest = _rows(listed.out)
    assert header == ["RUN", "AGENT", "TESTED", "DATASET", "VERDICT", "STARTED"]
    assert newest[1:5] == [second_agent, "The draft alone", f"{second_ds} v1", "No baseline"]
    assert oldest[1:5] == [first_agent, "v1 alone", f"{first_ds} v1", "No baseline"]
    assert re.fullmatch(r"\d{4}-\d\d-\d\d \d\d:\d\d", newest[5]), newest
    assert "None" not in listed.out

    as_json = json.loads(cli("runs", "list", "--json").out)
    run_ids = [r["run_id"] for r in as_json["runs"]]
    assert run_ids == [newest[0], oldest[0]]
    assert [r["tested"] for r in as_json["runs"]] == ["The draft alone", "v1 alone"]

    by_agent = _rows(cli("runs", "list", "--agent", first_agent).out)
    assert [row[0] for row in by_agent[1:]] == [oldest[0]]
    by_dataset = _rows(cli("runs", "list", "--dataset", second_ds).out)
    assert [row[0] for row in by_dataset[1:]] == [newest[0]]
    both = cli("runs", "list", "--agent", first_agent, "--dataset", second_ds, "--json")
    assert json.loads(both.out) == {"runs": []}
    one = _rows(cli("runs", "list", "--limit", "1").out)
    assert [row[0] for row in one[1:]] == [newest[0]]


def test_runs_list_of_an_unknown_agent_is_one_line_and_exit_3(cli):
    missing = cli("runs", "list", "--agent", "agt_nope")
    assert missing.code == 3
    assert missing.out == ""
    [line] = missing.err.splitlines()
    assert line.startswith("assay: ")
