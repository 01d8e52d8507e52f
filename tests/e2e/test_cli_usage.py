"""`assay usage` and `assay activity` (docs/reference/usage.md): the month's production usage
with the eval traffic beside it, and runs newest first with the source filters; in-process
through the real entry point against the embedded stack."""

from __future__ import annotations

import json
import re

from tests.e2e.conftest import cases, sleepy_spec


def _rows(out: str) -> list[list[str]]:
    return [re.split(r"\s{2,}", line.strip()) for line in out.splitlines() if line.strip()]


def test_usage_and_activity_from_the_command_line(cli, api):
    agent = api.agent(
        {**sleepy_spec(), "price": {"input_per_mtok_usd": "10", "output_per_mtok_usd": "50"}}
    )
    done = cli("run", agent, "--dataset", api.dataset(cases(2)), "--draft", "--yes", "--wait")
    assert done.code == 0, done.out + done.err
    api.ok(
        "POST",
        "/api/v1/usage/runs",
        json={"runs": [{"key": "k1", "agent_id": agent, "cost_usd": 3, "asked": "Hi\nthere"}]},
    )

    usage = cli("usage")
    assert usage.code == 0, usage.err
    rows = _rows(usage.out)
    assert rows[0][0].startswith("Usage 20")
    assert rows[1] == ["COST", "RUNS", "TOKENS"]
    assert rows[2] == ["production", "$3.00", "1 runs", "0 tokens"]
    # 2 answers x (100 x 10 + 20 x 50) micro-USD = $0.004, beside production, not in it
    assert rows[3] == ["eval (beside it)", "$0.0040", "2 cases", "240 tokens"]
    assert rows[4] == ["grader (beside it)", "$0.00", "0 gradings", "0 tokens"]
    assert rows[5] == ["AGENT", "PRODUCTION", "EVAL", "GRADER", "PRODUCTION RUNS"]
    assert rows[6] == [agent, "$3.00", "$0.0040", "$0.00", "1"]
    doc = json.loads(cli("usage", "--json").out)
    assert doc["cost"]["production_usd"] == 3 and doc["runs"]["eval"] == 2

    listed = cli("activity", "--limit", "2")
    header, *runs = _rows(listed.out)
    assert header == ["RUN", "SOURCE", "AGENT", "ASKED", "EVAL CASE", "COST", "STARTED"]
    assert len(runs) == 2 and runs[0][1:4] == ["Production", agent, "Hi there"]
    evals = json.loads(cli("activity", "--agent", agent, "--surface", "eval", "--json").out)
    assert [r["surface"] for r in evals["runs"]] == ["eval", "eval"]
    without = json.loads(cli("activity", "--exclude-surface", "eval", "--json").out)
    assert [r["label"] for r in without["runs"]] == ["Production"]

    bad = cli("usage", "--month", "2026-13")
    assert bad.code != 0 and "--month" in bad.err
