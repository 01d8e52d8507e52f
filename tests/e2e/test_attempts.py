"""What each attempt keeps and how it comes out (docs/concepts/verdicts.md,
docs/architecture/run-lifecycle.md, docs/reference/runtimes.md)."""

from __future__ import annotations

import uuid

import pytest

from bench import agents
from chalicelib import bootstrap
from tests.e2e.conftest import cases, sleepy_spec, wait_for
from tests.support.agents import held_spec, hold
from tests.support.fake_openai import FakeOpenAI


@pytest.fixture
def settings(container):
    """Change settings for what runs next; restored afterwards."""
    original = container.settings

    def apply(**update):
        bootstrap.override(settings=original.model_copy(update=update))

    yield apply
    bootstrap.override(settings=original)


def results(api, run_id) -> dict[str, dict]:
    return {r["case_id"]: r for r in api.ok("GET", f"/api/v1/eval-runs/{run_id}")["results"]}


def test_an_openai_compatible_agent_is_asked_and_its_usage_priced(api):
    script = {
        "rules": [
            {
                "contains": "question 0",
                "answer": "The answer is 42",
                "usage": {"prompt_tokens": 1000, "completion_tokens": 200},
                "model": "m-1",
            },
            {
                "contains": "question 1",
                "answer": "41",
                "usage": {"prompt_tokens": 10, "completion_tokens": 2},
            },
            {
                "contains": "question 2",
                "turns": [
                    {"tool_calls": [{"name": "refund", "arguments": {"id": 7}}], "answer": "41"},
                    {"answer": "42"},
                ],
            },
        ]
    }
    with FakeOpenAI(script) as fake:
        spec = {
            "runtime": "openai",
            "base_url": fake.base_url,
            "model": "m-1",
            "temperature": 0,
            "system_prompt": "Answer with a number.",
            "tools": [{"name": "refund", "effect": "write"}],
            "price": {"input_per_mtok_usd": "0.15", "output_per_mtok_usd": "0.60"},
        }
        run = api.start(api.agent(spec), api.dataset(cases(3), required=["contains"]))
        assert api.wait(run["run_id"])["status"] == "completed"
        sent = fake.requests()
    by_case = results(api, run["run_id"])
    assert [by_case[c]["state"] for c in ("c000", "c001", "c002")] == ["passed", "failed", "passed"]
    # 1000 in at $0.15/M + 200 out at $0.60/M = 150 + 120 micro-USD
    assert by_case["c000"]["cost_usd"] == 0.00027
    assert (
        by_case["c000"]["tokens"] == {"input": 1000, "output": 200}
        and by_case["c000"]["model"] == "m-1"
    )
    # the model's call was made through the attempt's tools: a write with nowhere to go, blocked
    [refund] = by_case["c002"]["calls"]
    assert (refund["name"], refund["arguments"], refund["status"], refund["result"]) == (
        "refund",
        {"id": 7},
        "blocked",
        None,
    )
    assert (
        by_case["c001"]["scores"][0]["scorer"] == "contains"
        and by_case["c001"]["scores"][0]["passed"] is False
    )
    assert all(
        r["body"]["messages"][0] == {"role": "system", "content": "Answer with a number."}
        for r in sent
    )
    assert all(r["body"]["temperature"] == 0 for r in sent)


def test_provider_failures_after_retries_are_incomplete_and_a_rejected_key_says_so(api):
    script = {
        "rules": [
            {"contains": "question 0", "status": 503, "error": "overloaded"},
            {"contains": "question 1", "fail_status": 429, "fail_times": 1, "answer": "42"},
            {"contains": "question 2", "status": 401, "error": "bad key"},
        ]
    }
    with FakeOpenAI(script) as fake:
        spec = {"runtime": "openai", "base_url": fake.base_url, "model": "m"}
        run = api.start(api.agent(spec), api.dataset(cases(3), required=["contains"]))
        assert api.wait(run["run_id"])["status"] == "completed"
        asked = [r["body"]["messages"][-1]["content"] for r in fake.requests()]
    by_case = results(api, run["run_id"])
    assert by_case["c000"]["state"] == "incomplete"
    assert by_case["c000"]["reason"].startswith("provider error after 3 tries")  # 1 try + 2 retries
    assert asked.count("question 0") == 3
    assert by_case["c001"]["state"] == "passed"  # a 429 once, then fine
    assert by_case["c002"]["state"] == "incomplete"
    assert by_case["c002"]["reason"] == "provider rejected the credentials"
    assert asked.count("question 2") == 1  # not retried
    outcome = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]
    assert (outcome["passed"], outcome["incomplete"], outcome["pass_rate"]) == (1, 2, 1.0)


def test_a_secret_the_organization_no_longer_has_leaves_the_attempt_incomplete_saying_which(api):
    with FakeOpenAI({"rules": [{"contains": "question", "answer": "42"}]}) as fake:
        spec = {
            "runtime": "openai",
            "base_url": fake.base_url,
            "model": "m",
            "api_key_secret": "gone-key",
        }
        # a published version whose secret was removed since: a draft (or a publish) naming a
        # secret the organization lacks is refused before it runs
        api.ok("PUT", "/api/v1/secrets/gone-key", json={"value": "tok-0123456789abcdef"})
        agent = api.agent(spec, publish=1)
        api.ok("DELETE", "/api/v1/secrets/gone-key")
        run = api.start(agent, api.dataset(cases(1), required=["contains"]), candidate="version")
        assert api.wait(run["run_id"])["status"] == "completed"
        assert fake.requests() == []  # nothing sent without the key
    attempt = results(api, run["run_id"])["c000"]
    assert attempt["state"] == "incomplete"
    assert (
        "credentials missing: secret gone-key is not set in this organization" in attempt["reason"]
    )


def test_the_agents_own_failure_is_a_failed_attempt_marked_as_a_crash(api):
    spec = {"runtime": "python", "entrypoint": "bench.agents:crashing"}
    run = api.start(api.agent(spec), api.dataset(cases(2)))
    assert api.wait(run["run_id"])["status"] == "completed"
    r = results(api, run["run_id"])["c000"]
    assert (r["state"], r["crash"]) == ("failed", True)
    assert "tool lookup_order raised on c000" in r["reason"]
    outcome = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]
    assert (outcome["failed"], outcome["crashed"], outcome["verdict"]) == (2, 2, "fail")


def test_a_guardrail_block_is_graded_as_a_refusal_not_a_crash(api):
    script = {
        "rules": [
            {"contains": "question 0", "answer": None, "finish_reason": "content_filter"},
            {"contains": "question 1", "refusal": "I can't help with that."},
            {"contains": "question 2", "answer": "42"},
        ]
    }
    cases_ = [
        {"case_id": "c000", "input": "question 0", "reference": "blocked"},  # expects the refusal
        {"case_id": "c001", "input": "question 1", "reference": "42"},
        {"case_id": "c002", "input": "question 2", "reference": "42"},
    ]
    with FakeOpenAI(script) as fake:
        spec = {"runtime": "openai", "base_url": fake.base_url, "model": "m"}
        run = api.start(api.agent(spec), api.dataset(cases_, required=["icontains"]))
        assert api.wait(run["run_id"])["status"] == "completed"
    by_case = results(api, run["run_id"])
    blocked, refused, fine = by_case["c000"], by_case["c001"], by_case["c002"]
    assert (blocked["state"], blocked["crash"], blocked["guardrail"]) == (
        "passed",
        False,
        "provider content filter",
    )
    assert blocked["answer"] == "Blocked by the provider's content filter"
    assert (refused["state"], refused["crash"], refused["guardrail"]) == (
        "failed",
        False,
        "model refusal",
    )
    assert (
        refused["answer"] == "I can't help with that."
        and refused["scores"][0]["scorer"] == "icontains"
    )
    assert (fine["state"], fine["guardrail"]) == ("passed", None)
    outcome = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]
    assert (outcome["passed"], outcome["failed"], outcome["crashed"], outcome["incomplete"]) == (
        2,
        1,
        0,
        0,
    )


def test_a_case_past_its_timeout_is_incomplete(api, settings):
    settings(evaluation_case_timeout_seconds=1, assay_agent_retries=0)
    h = hold(f"timeout-{uuid.uuid4().hex}")
    run = api.start(api.agent(held_spec(h.name)), api.dataset(cases(1)))
    # The agent cannot answer until the test lets it, whatever the machine's speed: only the
    # case timeout can end the attempt.
    try:
        assert api.wait(run["run_id"])["status"] == "completed"
        r = results(api, run["run_id"])["c000"]
        assert r["state"] == "incomplete" and "timed out" in r["reason"]
        assert (h.calls, h.answered) == (1, 0), h.seen()
    finally:
        h.open()  # the timed-out call still waits in the background: let it end


def test_a_long_case_heartbeats_and_keeps_its_message_invisible(api, settings, stack, container):
    settings(eval_heartbeat_seconds=0.3)
    before = stack.moto.requests().get("sqs.ChangeMessageVisibility", 0)
    h = hold(f"beat-{uuid.uuid4().hex}")
    run = api.start(api.agent(held_spec(h.name)), api.dataset(cases(1)))
    h.wait_in_flight(1)

    def beat() -> int | None:
        return container.runs.get(api.org_id, run["run_id"]).heartbeat_at_ms

    # While the case is held (it cannot end by itself), the run heartbeats, more than once, and
    # the message's visibility is extended each time.
    first_beat = wait_for(beat, what="a first heartbeat")
    wait_for(lambda: (beat() or 0) > first_beat, what="a heartbeat after the first")
    wait_for(
        lambda: stack.moto.requests().get("sqs.ChangeMessageVisibility", 0) - before >= 2,
        what="two visibility extensions",
    )
    assert (h.in_flight, h.answered) == (1, 0), "the case ended before the test let it"
    h.open()
    assert api.wait(run["run_id"])["status"] == "completed"
    assert h.answered == 1


def test_an_answer_too_large_for_dynamodb_is_kept_in_the_results_bucket(api, settings):
    settings(assay_answer_inline_bytes=5_000)
    spec = {"runtime": "python", "entrypoint": "bench.agents:verbose", "options": {"size": 20_000}}
    run = api.start(api.agent(spec), api.dataset(cases(1), required=["contains"]))
    assert api.wait(run["run_id"])["status"] == "completed"
    r = results(api, run["run_id"])["c000"]
    assert r["state"] == "passed"
    assert r["answer_ref"].startswith(
        f"s3://assay-results/{api.org_id}/answers/{run['run_id']}/"
    )  # the org's prefix
    assert len(r["answer"]) == 1000
    events = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/events?wait=0")
    assert events["events"][0]["answer_ref"] == r["answer_ref"]


def test_deleting_a_run_deletes_the_answers_it_kept_in_the_results_bucket(api, settings, stack):
    import boto3

    settings(assay_answer_inline_bytes=5_000)
    spec = {"runtime": "python", "entrypoint": "bench.agents:verbose", "options": {"size": 20_000}}
    agent, ds = api.agent(spec), api.dataset(cases(3), required=["contains"])
    kept, deleted = (api.start(agent, ds)["run_id"] for _ in range(2))
    for run_id in (kept, deleted):
        assert api.wait(run_id)["status"] == "completed"
    s3 = boto3.client(
        "s3",
        endpoint_url=stack.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )

    def keys(run_id: str) -> list[str]:
        prefix = f"{api.org_id}/answers/{run_id}/"
        listed = s3.list_objects_v2(Bucket=stack.settings.names.results_bucket, Prefix=prefix)
        return [o["Key"] for o in listed.get("Contents", [])]

    assert len(keys(deleted)) == 3 and len(keys(kept)) == 3
    assert api.call("DELETE", f"/api/v1/eval-runs/{deleted}")[0] == 200
    assert keys(deleted) == [] and len(keys(kept)) == 3


def test_the_draft_is_copied_onto_the_run_when_it_starts(api, container):
    probe = f"d-{uuid.uuid4().hex}"
    agent = api.agent(sleepy_spec(sleep_ms=200, probe=probe, answer="42"))
    run = api.start(agent, api.dataset(cases(6)))
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answer="wrong")})
    assert api.wait(run["run_id"])["status"] == "completed"
    outcome = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"]
    assert outcome["passed"] == 6, "cases answered by the edited draft"
    assert agents.calls(probe) == 6


def test_latest_is_resolved_once_when_the_run_starts(api):
    agent = api.agent(sleepy_spec(sleep_ms=100), publish=1)
    run = api.start(agent, api.dataset(cases(4)), candidate="version", version="latest")
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answer="0")})
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    assert api.wait(run["run_id"])["status"] == "completed"
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert full["resolved_version"] == 1 and full["outcome"]["passed"] == 4
