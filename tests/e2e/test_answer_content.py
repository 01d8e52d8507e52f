"""What an agent sends, kept whatever it holds, and within the operator's bounds (issue 11, scopes 6
and 7; seed 004 "Results", "What a run keeps", "What each case runs as").

Through the HTTP API against the embedded stack: the agents are an `http` agent on 127.0.0.1
sending raw bytes (`tests.support.raw_agent`) and `python` agents.
"""

from __future__ import annotations

import pytest

from tests.e2e.conftest import cases
from tests.support.raw_agent import RawAgent


def attempts(api, run_id: str) -> dict[str, dict]:
    return {r["case_id"]: r for r in api.ok("GET", f"/api/v1/eval-runs/{run_id}")["results"]}


@pytest.fixture
def raw_agent():
    bodies = {
        # A lone surrogate and NUL as JSON escapes, in the answer, a call and the model.
        "c000": b'{"answer": "42 \\ud800 \\u0000 ok", "model": "m\\udfff",'
        b' "calls": [{"name": "look\\ud800up", "arguments": {"q": "\\udc00"}}]}',
        # Bytes that are not UTF-8 inside the answer's string.
        "c001": b'{"answer": "42 caf\xe9 \xff\xfe"}',
        # The agent's own failure, its message holding a lone surrogate.
        "c002": b'{"error": "tool exploded \\ud800", "crash": true}',
    }
    with RawAgent(bodies) as agent:
        yield agent


def test_text_no_encoder_accepts_is_kept_with_replacement_characters_and_the_run_completes(
    api, raw_agent
):
    agent = api.agent({"runtime": "http", "url": raw_agent.url})
    run = api.start(agent, api.dataset(cases(4), required=["contains"]))
    progress = api.wait(run["run_id"])
    assert progress["status"] == "completed" and progress["recorded"] == 4
    got = attempts(api, run["run_id"])
    assert got["c000"]["state"] == "passed"
    assert got["c000"]["answer"] == "42 \ufffd \ufffd ok" and got["c000"]["model"] == "m\ufffd"
    assert got["c000"]["calls"][0]["name"] == "look\ufffdup"
    assert got["c000"]["calls"][0]["arguments"] == {"q": "\ufffd"}
    assert got["c001"]["state"] == "passed" and got["c001"]["answer"] == "42 caf\ufffd \ufffd\ufffd"
    assert got["c002"]["state"] == "failed" and got["c002"]["crash"] is True
    assert "tool exploded \ufffd" in got["c002"]["error"]
    assert got["c003"]["state"] == "passed"
    # Each case was asked once: nothing was left for SQS to deliver again.
    assert dict(raw_agent.asked) == {"c000": 1, "c001": 1, "c002": 1, "c003": 1}
    # The cases view and the live updates carry the same text.
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/cases?case_id=c000")
    [attempt] = view["cases"][0]["arms"]["candidate"]["attempts"]
    assert attempt["answer"] == "42 \ufffd \ufffd ok"
