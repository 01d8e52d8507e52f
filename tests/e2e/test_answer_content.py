"""What an agent sends, kept whatever it holds, and within the operator's bounds (issue 11, scopes 6
and 7; docs/concepts/verdicts.md, docs/reference/data-protection.md, docs/reference/access.md).

Through the HTTP API against the embedded stack: the agents are an `http` agent on 127.0.0.1
sending raw bytes (`tests.support.raw_agent`) and `python` agents.
"""

from __future__ import annotations

import json

import httpx
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


def scripted_spec(payloads: dict[str, dict], probe: str) -> dict:
    """A `python` agent answering each case with its payload (`tests.support.agents:scripted`)."""
    return {
        "runtime": "python",
        "entrypoint": "tests.support.agents:scripted",
        "options": {
            "probe": probe,
            "payloads": {k: json.dumps(v, ensure_ascii=False) for k, v in payloads.items()},
        },
    }


def test_a_cost_or_tokens_past_the_bounds_leave_the_attempt_incomplete_and_charge_nothing(api):
    payloads = {
        "c000": {"answer": "42", "cost_usd": "1e30"},
        "c001": {"answer": "42", "cost_usd": "0.25"},
        "c002": {"answer": "42", "usage": {"input_tokens": 10**15, "output_tokens": 1}},
    }
    agent = api.agent(scripted_spec(payloads, f"bounds-{api.org_id}"))
    api.ok("PUT", f"/api/v1/agents/{agent}/budget", json={"monthly_usd": "5.00"})
    run = api.start(agent, api.dataset(cases(3), required=["contains"]))
    assert api.wait(run["run_id"])["status"] == "completed"
    got = attempts(api, run["run_id"])
    assert got["c000"]["state"] == "incomplete" and got["c000"]["cost_usd"] == 0
    assert got["c000"]["reason"] == (
        "the agent reported a cost of $1E+30 for one request, over ASSAY_REQUEST_MAX_COST_USD "
        "($10.00): not believed, nothing charged"
    )
    assert got["c000"]["answer"] == "42"  # kept, not graded
    assert (
        got["c002"]["state"] == "incomplete" and "ASSAY_REQUEST_MAX_TOKENS" in got["c002"]["reason"]
    )
    assert got["c002"]["tokens"] == {"input": 0, "output": 0}
    assert got["c001"]["state"] == "passed" and got["c001"]["cost_usd"] == 0.25
    # Only the believable request was charged: the monthly budget is far from spent.
    budget = api.ok("GET", f"/api/v1/agents/{agent}/budget")
    assert budget["spent_usd"] == 0.25 and budget["remaining_usd"] == 4.75
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert view["cost_usd"] == 0.25 and view["tokens"] == {"input": 0, "output": 0}


def test_a_long_answer_shows_its_size_and_cut_and_the_answer_route_gives_it_back(
    api, new_api, operator
):
    operator(assay_answer_inline_bytes=2_000, assay_answer_max_bytes=5_000)
    long_ = "42 " + "é" * 10_000  # 20,003 bytes: kept cut at 4,999 (no "é" split in two)
    medium = "42 " + "a" * 2_997  # 3,000 bytes: in the bucket, whole
    payloads = {"c000": {"answer": "42"}, "c001": {"answer": medium}, "c002": {"answer": long_}}
    agent = api.agent(scripted_spec(payloads, f"long-{api.org_id}"))
    run_id = api.start(agent, api.dataset(cases(3), required=["contains"]))["run_id"]
    assert api.wait(run_id)["status"] == "completed"

    view = api.ok("GET", f"/api/v1/eval-runs/{run_id}/cases")
    shown = {case["case_id"]: case["arms"]["candidate"]["attempts"][0] for case in view["cases"]}
    assert {
        k: (a["answer_bytes"], a["answer_truncated"], a["answer_whole"]) for k, a in shown.items()
    } == {
        "c000": (2, False, True),
        "c001": (3_000, False, False),
        "c002": (20_003, True, False),
    }
    assert shown["c000"]["answer"] == "42" and len(shown["c002"]["answer"]) == 1_000
    assert all(a["state"] == "passed" for a in shown.values())  # graded on the whole answer

    small = api.ok("GET", shown["c000"]["answer_url"])
    assert (small["attempt_key"], small["answer"], small["answer_bytes"]) == (
        "candidate#c000#001",
        "42",
        2,
    )
    for case_id, whole, kept in (("c001", medium, medium), ("c002", long_, "42 " + "é" * 2_498)):
        read = api.ok("GET", shown[case_id]["answer_url"])
        assert read["answer"] is None and read["answer_bytes"] == len(whole.encode())
        assert read["answer_truncated"] is (case_id == "c002") and read["expires_in_seconds"] == 300
        assert read["url"].startswith("http://127.0.0.1:")  # the embedded stack's S3
        fetched = httpx.get(read["url"], timeout=30)
        assert fetched.status_code == 200 and fetched.content.decode("utf-8") == kept

    # Another organization's run is a 404, as on every run read; a bad key names the field.
    other = new_api()
    status, body = other.call("GET", shown["c000"]["answer_url"])
    assert status == 404 and body["error"]["code"] == "not_found", body
    status, body = api.call(
        "GET", f"/api/v1/eval-runs/{run_id}/answer?attempt_key=candidate%23c9%23001"
    )
    assert status == 404 and body["error"]["field"] == "attempt_key"
    status, body = api.call("GET", f"/api/v1/eval-runs/{run_id}/answer")
    assert status == 400 and body["error"]["field"] == "attempt_key"


def test_calls_nested_too_deeply_are_the_agents_malformed_answer_and_the_run_completes(api):
    def nested(levels: int) -> str:
        return "[" * levels + "]" * levels

    # The agent's JSON text, decoded by the agent as it answers (`tests.support.agents:scripted`).
    def answer(call: str) -> str:
        return '{"answer": "42", "calls": [' + call + "]}"

    texts = {
        # A call's result 300 levels deep, its arguments 900 deep: past what is kept (24).
        "c000": answer('{"name": "t", "arguments": {}, "result": ' + nested(300) + "}"),
        "c001": answer('{"name": "s", "arguments": {"a": ' + nested(900) + "}}"),
        # A number too long to keep exactly: kept as the nearest float, not malformed.
        "c002": answer('{"name": "t", "arguments": {"x": 1' + "0" * 60 + "}}"),
    }
    spec = scripted_spec({}, f"deep-{api.org_id}")
    spec["options"]["payloads"] = texts
    spec["options"]["payload"] = '{"answer": "42"}'
    agent = api.agent(spec)
    run = api.start(agent, api.dataset(cases(4), required=["contains"]))
    progress = api.wait(run["run_id"])
    assert progress["status"] == "completed" and progress["recorded"] == 4, progress
    got = attempts(api, run["run_id"])
    for case_id, where in (("c000", "call 1 (t) result"), ("c001", "call 1 (s) arguments")):
        attempt = got[case_id]
        assert attempt["state"] == "failed" and attempt["crash"] is True, attempt
        assert attempt["reason"] == (
            f"agent crashed: the agent returned a malformed answer: {where} nests deeper than "
            "24 levels"
        )
    assert got["c002"]["state"] == "passed"
    assert got["c002"]["calls"][0]["arguments"] == {"x": 1e60}
    assert got["c003"]["state"] == "passed" and got["c003"]["calls"] == []


def test_an_answer_and_calls_too_large_for_one_row_together_are_kept_and_the_run_completes(api):
    # 40 calls of 15 KB results (600 KB) and a 250 KB answer: each within its own bound.
    options = {"answer_bytes": 250_000, "calls": 40, "result_bytes": 15_000}
    spec = {"runtime": "python", "entrypoint": "tests.support.agents:bulky", "options": options}
    run = api.start(api.agent(spec), api.dataset(cases(2), required=["contains"]))
    progress = api.wait(run["run_id"])
    assert progress["status"] == "completed" and progress["recorded"] == 2, progress
    got = attempts(api, run["run_id"])["c000"]
    assert got["state"] == "passed"
    kept = json.dumps(got["calls"])
    assert len(kept) <= 300_000 and "_dropped" in kept
    view = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/cases?case_id=c000")
    [attempt] = view["cases"][0]["arms"]["candidate"]["attempts"]
    assert attempt["answer_bytes"] == 250_003 and attempt["answer_whole"] is False
