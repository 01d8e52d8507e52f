"""The README's five-minute path with the example agent, end to end: `examples/http_agent.py` runs
as its own process on 127.0.0.1, assay asks it through the `http` runtime with the spec in
`examples/http-agent.json`, over the cases of `examples/arith.csv`.

The exact agent answers all ten cases; its `/integer` path divides with integers, so a draft that
points there breaks the three cases whose answer is not a whole number, and a run with a paired
baseline confirms those three regressions (the gate exits 1)."""

from __future__ import annotations

import json
import os
import re
import subprocess
import sys
from collections.abc import Iterator
from pathlib import Path

import pytest

from chalicelib.api.common import issue_token

EXAMPLES = Path(__file__).resolve().parents[2] / "examples"
ASSAY = str(Path(sys.executable).with_name("assay"))
NOT_WHOLE = ["div-fifth", "div-half", "div-quarter"]
"""The cases of `arith.csv` whose answer is not a whole number: what integer division breaks."""


@pytest.fixture
def agent_url() -> Iterator[str]:
    """The example agent's base URL: the process started on a free port of 127.0.0.1 (it prints
    the address once it listens), stopped after the test."""
    yield from _example_agent()


def _example_agent(*args: str, env: dict[str, str] | None = None) -> Iterator[str]:
    """Start `examples/http_agent.py` with `args` (and `env`) on a free port; yield its base URL,
    then stop it."""
    process = subprocess.Popen(
        [sys.executable, str(EXAMPLES / "http_agent.py"), "--port", "0", "--quiet", *args],
        stdout=subprocess.PIPE,
        text=True,
        env=env,
    )
    try:
        assert process.stdout is not None
        line = process.stdout.readline()  # blocks until it listens (or exits: an empty line)
        found = re.search(r"http://127\.0\.0\.1:(\d+)/", line)
        assert found, f"the example agent did not start: {line!r} (exit {process.poll()})"
        yield f"http://127.0.0.1:{found.group(1)}"
    finally:
        process.terminate()
        process.wait(timeout=30)


def spec_file(name: str, agent_url: str) -> dict:
    """The spec in `examples/<name>`, its URL moved to where the test's agent listens."""
    spec = json.loads((EXAMPLES / name).read_text(encoding="utf-8"))
    assert spec["runtime"] == "http" and spec["url"].startswith("http://127.0.0.1:8765/")
    spec["url"] = spec["url"].replace("http://127.0.0.1:8765", agent_url, 1)
    return spec


def import_arith(api) -> str:
    """`examples/arith.csv` imported as a dataset graded by `numeric_answer`."""
    made = api.ok(
        "POST",
        "/api/v1/datasets",
        json={
            "name": "Arithmetic",
            "dataset_id": "arith",
            "scoring": {"required": ["numeric_answer"]},
            "source": {
                "format": "csv",
                "content": (EXAMPLES / "arith.csv").read_text(encoding="utf-8"),
            },
        },
    )
    assert made["version"]["case_count"] == 10
    return made["dataset_id"]


def test_the_example_agent_answers_every_case_of_the_example_dataset(api, agent_url):
    dataset = import_arith(api)
    agent = api.ok(
        "POST",
        "/api/v1/agents",
        json={
            "name": "Arithmetic bot",
            "agent_id": "arith-bot",
            "spec": spec_file("http-agent.json", agent_url),
        },
    )["agent_id"]
    run = api.start(agent, dataset)
    assert api.wait(run["run_id"])["status"] == "completed"
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert (full["outcome"]["passed"], full["outcome"]["failed"]) == (10, 0)
    assert full["outcome"]["verdict"] == "pass"
    page = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/cases?case_id=div-half")["cases"]
    [attempt] = page[0]["arms"]["candidate"]["attempts"]
    assert attempt["answer"] == "7 / 2 = 3.5\n#### 3.5" and attempt["model"] == "arith-solver-1"


def test_a_draft_on_integer_division_is_held_back_with_three_confirmed_regressions(
    stack, api, agent_url
):
    dataset = import_arith(api)
    agent = api.agent(spec_file("http-agent.json", agent_url), publish=1)
    api.ok(
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        json={"spec": spec_file("http-agent-integer.json", agent_url)},
    )
    s = stack.settings
    token = issue_token(
        api.org_id, api.user_id, secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer
    )
    done = subprocess.run(
        [ASSAY, "run", agent, "--dataset", dataset, "--draft", "--paired-baseline"]
        + ["--yes", "--wait", "--json"],
        env={**os.environ, "ASSAY_URL": stack.api_url, "ASSAY_TOKEN": token},
        capture_output=True,
        text=True,
        timeout=280,
    )
    assert done.returncode == 1, done.stderr[-2000:]
    result = json.loads(done.stdout)
    assert result["gate"]["result"] == "broke"
    comparison = result["comparison"]
    assert comparison["verdict"] == "worse"
    assert sorted(f["case_id"] for f in comparison["flips"] if f["confirmed"]) == NOT_WHOLE
    assert comparison["counts"]["regression"] == 3 and comparison["counts"]["unchanged"] == 7
    full = api.ok("GET", f"/api/v1/eval-runs/{result['run']['run_id']}")
    candidate, baseline = full["summaries"]["candidate"], full["summaries"]["baseline"]
    assert (candidate["quality"]["passed"], baseline["quality"]["passed"]) == (7, 10)


def test_the_example_agent_started_with_a_token_rejects_a_spec_without_it_as_credentials(api):
    """The example's 401 is what the agent contract calls credentials rejected, not a crash of
    its own (docs/guides/agents.md)."""
    env = {**os.environ, "EXAMPLE_AGENT_TOKEN": "s3cret-token-for-the-example"}
    for url in _example_agent("--token-env", "EXAMPLE_AGENT_TOKEN", env=env):
        dataset = import_arith(api)
        agent = api.agent(spec_file("http-agent.json", url))  # sends no Authorization header
        run = api.start(agent, dataset)
        assert api.wait(run["run_id"])["status"] == "completed"
        page = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/cases?case_id=div-half")
        [attempt] = page["cases"][0]["arms"]["candidate"]["attempts"]
        assert attempt["state"] == "failed" and "credentials rejected" in attempt["reason"], attempt
