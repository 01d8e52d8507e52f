"""Deleting an agent or a dataset end to end (issue 14 scope 6; docs/reference/data-protection.md: a
result "is deleted with its run, and a run with its agent or its dataset").

After the delete no item of any table of the stack and no object of the results bucket under the
organization names what was deleted - its id, its runs', suites', evaluations' and promotions'
ids - while what belongs to something else stays. A delete waits (409) while a run of it runs, a
start on an agent being deleted is refused, and a run that borrowed a deleted run's first answers
keeps its comparison.
"""

from __future__ import annotations

import json
import uuid
from collections.abc import Iterable
from typing import Any

import boto3
import pytest

from chalicelib import bootstrap
from chalicelib.adapters import tables
from chalicelib.clock import iso
from tests.e2e.conftest import Api, cases, sleepy_spec, wait_for
from tests.support import agents as held

LONG = 20_000
"""Characters of the verbose agent's answers: past the inline size set below, so each is kept in
the results bucket."""


@pytest.fixture
def long_answers(container):
    """Answers over 5,000 bytes kept in the results bucket (restored afterwards)."""
    original = container.settings
    bootstrap.override(settings=original.model_copy(update={"assay_answer_inline_bytes": 5_000}))
    yield
    bootstrap.override(settings=original)


def _client(stack, service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=stack.endpoint_url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def mentions(stack, org_id: str, ids: Iterable[str]) -> list[str]:
    """Where any of `ids` is still named: `<table>: <item>` for every item of every table of the
    stack (a scan of the test stack's own tables: the tables hold every test's organizations),
    `s3: <key>` for every object of the results bucket under `org_id` whose key or text names
    one."""
    ids = [i for i in ids if i]
    found: list[str] = []
    ddb = _client(stack, "dynamodb")
    for model in tables.ALL_MODELS:
        name = tables.table_name(model)
        for page in ddb.get_paginator("scan").paginate(TableName=name):
            for item in page["Items"]:
                text = json.dumps(item)
                if any(i in text for i in ids):
                    found.append(f"{name}: {text[:300]}")
    s3 = _client(stack, "s3")
    bucket = stack.settings.names.results_bucket
    for page in s3.get_paginator("list_objects_v2").paginate(Bucket=bucket, Prefix=f"{org_id}/"):
        for obj in page.get("Contents", []):
            body = s3.get_object(Bucket=bucket, Key=obj["Key"])["Body"].read().decode()
            if any(i in obj["Key"] or i in body for i in ids):
                found.append(f"s3: {obj['Key']}")
    return found


def _answers_kept(stack, org_id: str, run_id: str) -> int:
    s3 = _client(stack, "s3")
    listed = s3.list_objects_v2(
        Bucket=stack.settings.names.results_bucket, Prefix=f"{org_id}/answers/{run_id}/"
    )
    return len(listed.get("Contents", []))


def _long_answers(wrong: str | None = None) -> dict[str, Any]:
    """A `python` agent answering `LONG` characters ending in 42 (case `wrong` a short 41)."""
    options: dict[str, Any] = {"answer": "x" * LONG + " 42"}
    if wrong is not None:
        options["answers"] = {wrong: "41"}
    return {"runtime": "python", "entrypoint": "bench.agents:sleepy", "options": options}


def _everything(api: Api, agent: str, ds: str) -> dict[str, Any]:
    """A run of the agent's draft over `ds`, its version 1 promoted onto an environment, a
    suite on `ds` with a failed result (and its owner's notice), an evaluation with a run: the
    ids of each."""
    run = api.start(agent, ds)
    assert api.wait(run["run_id"])["status"] == "completed"
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    promotion = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 1},
    )
    suite = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={
            "dataset_id": ds,
            "environment_id": "production",
            "threshold": {"min_pass_rate": 1.0},
        },
    )
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{suite['suite_id']}/run")
    path = f"/api/v1/agents/{agent}/suites/{suite['suite_id']}/results"
    [result] = wait_for(lambda: api.ok("GET", path)["results"], what="the suite's result")
    assert result["result"] == "failed", result
    wait_for(
        lambda: [
            n
            for n in api.ok("GET", "/api/v1/notifications")["notifications"]
            if n["links"].get("suite_id") == suite["suite_id"]
        ],
        what="the owner's notice",
    )
    evaluation = api.ok("POST", "/api/evaluations", json={"agent_id": agent, "dataset_id": ds})
    evaluated = api.ok("POST", f"/api/evaluations/{evaluation['evaluation_id']}/runs", json={})
    assert api.wait(evaluated["run_id"])["status"] == "completed"
    return {
        "run_ids": [run["run_id"], result["run_id"], evaluated["run_id"]],
        "suite_id": suite["suite_id"],
        "evaluation_id": evaluation["evaluation_id"],
        "promotion_id": promotion["promotion_id"],
    }


def test_deleting_an_agent_leaves_nothing_that_names_it_or_its_runs(api, stack, long_answers):
    ds = api.dataset(cases(3), required=["contains"])
    agent = api.agent(_long_answers(wrong="c001"), publish=1)
    kept = api.agent(_long_answers(), publish=1)  # another agent, measured on the same dataset
    kept_run = api.start(kept, ds)["run_id"]
    assert api.wait(kept_run)["status"] == "completed"
    made = _everything(api, agent, ds)
    api.ok("PUT", f"/api/v1/agents/{agent}/budget", json={"monthly_usd": "5"})
    api.ok("POST", "/api/v1/members", json={"user_id": "guest@example.com", "role": "guest"})
    for granted in (agent, kept):  # a grant on it goes with it; one on another agent stays
        api.ok(
            "PUT",
            f"/api/v1/members/guest@example.com/grants/agent/{granted}",
            json={"permissions": ["agents:run"]},
        )
    runs = [r["run_id"] for r in api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"]]
    assert sorted(runs) == sorted(made["run_ids"])
    assert all(_answers_kept(stack, api.org_id, r) == 2 for r in runs)  # c001 is answered short
    ids = [agent, *runs, made["suite_id"], made["evaluation_id"], made["promotion_id"]]
    assert mentions(stack, api.org_id, ids)  # the check can see them while they are there

    gone = api.ok("DELETE", f"/api/v1/agents/{agent}")

    assert gone == {
        "agent_id": agent,
        "deleted": True,
        "runs_deleted": 3,
        "suites_deleted": 1,
        "evaluations_deleted": 1,
    }
    assert mentions(stack, api.org_id, ids) == []
    for path in (f"/api/v1/agents/{agent}", *(f"/api/v1/eval-runs/{r}" for r in runs)):
        status, body = api.call("GET", path)
        assert status == 404, (path, body)
    status, body = api.call("DELETE", f"/api/v1/agents/{agent}")
    assert status == 404 and body["error"]["field"] == "agent_id", body
    # What is not the agent's stays: the dataset, the other agent and its run and answers.
    assert api.ok("GET", f"/api/v1/datasets/{ds}")["dataset_id"] == ds
    assert api.ok("GET", f"/api/v1/eval-runs/{kept_run}")["status"] == "completed"
    assert _answers_kept(stack, api.org_id, kept_run) == 3
    assert [a["agent_id"] for a in api.ok("GET", "/api/v1/agents")["agents"]] == [kept]
    grants = api.ok("GET", "/api/v1/members/guest@example.com")["grants"]
    assert [g["resource_id"] for g in grants] == [kept]


def test_deleting_a_dataset_leaves_nothing_that_names_it_or_its_runs(api, stack, long_answers):
    ds = api.dataset(cases(3), required=["contains"])
    other = api.dataset(cases(2), required=["contains"])
    agent = api.agent(_long_answers(wrong="c001"), publish=1)
    made = _everything(api, agent, ds)
    elsewhere = api.start(agent, other)["run_id"]  # the agent's run over another dataset
    assert api.wait(elsewhere)["status"] == "completed"
    runs = [r["run_id"] for r in api.ok("GET", f"/api/v1/datasets/{ds}/eval-runs")["runs"]]
    assert sorted(runs) == sorted(made["run_ids"])
    ids = [ds, *runs, made["suite_id"], made["evaluation_id"]]
    assert mentions(stack, api.org_id, ids)

    gone = api.ok("DELETE", f"/api/v1/datasets/{ds}")

    assert (gone["deleted"], gone["runs_deleted"], gone["suites_deleted"]) == (True, 3, 1)
    assert gone["evaluations_deleted"] == 1
    assert mentions(stack, api.org_id, ids) == []
    status, body = api.call("GET", f"/api/v1/datasets/{ds}")
    assert status == 404 and body["error"]["field"] == "dataset_id", body
    assert api.call("DELETE", f"/api/v1/datasets/{ds}")[0] == 404
    # The agent stays, with its run over the other dataset, its promotion and its version served.
    assert api.ok("GET", f"/api/v1/agents/{agent}")["agent_id"] == agent
    assert [r["run_id"] for r in api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"]] == [
        elsewhere
    ]
    assert _answers_kept(stack, api.org_id, elsewhere) == 1  # c001 is answered short
    served = api.ok("GET", "/api/v1/environments/production")
    assert served["serving"] == {agent: 1}
    assert api.ok("GET", f"/api/v1/agents/{agent}/suites")["suites"] == []


def test_an_agent_or_dataset_with_a_run_going_is_a_409_until_the_run_ended(api):
    h = held.hold(f"delete-{uuid.uuid4().hex}")
    agent = api.agent(held.held_spec(h.name))
    ds = api.dataset(cases(4))
    run = api.start(agent, ds)["run_id"]
    h.wait_in_flight(3)  # its cases are held: it cannot end before the test lets it
    for path, field in (
        (f"/api/v1/agents/{agent}", "agent_id"),
        (f"/api/v1/datasets/{ds}", "dataset_id"),
    ):
        status, body = api.call("DELETE", path)
        assert status == 409 and body["error"]["field"] == field, body
        assert run in body["error"]["message"]
    # Refused, nothing is gone and nothing is held back: both read and run as before.
    assert api.ok("GET", f"/api/v1/agents/{agent}")["agent_id"] == agent
    assert api.ok("GET", f"/api/v1/datasets/{ds}")["dataset_id"] == ds
    assert api.ok("GET", f"/api/v1/eval-runs/{run}")["status"] == "running"

    api.ok("POST", f"/api/v1/eval-runs/{run}/cancel")
    status, body = api.call("DELETE", f"/api/v1/agents/{agent}")
    assert status == 409, body  # cancelled, but its running cases still hold their slots
    h.open()
    api.wait(run, until=lambda p: p["in_flight"] == 0 and p["status"] == "cancelled")
    assert api.ok("DELETE", f"/api/v1/agents/{agent}")["runs_deleted"] == 1
    assert api.call("GET", f"/api/v1/eval-runs/{run}")[0] == 404
    assert api.ok("DELETE", f"/api/v1/datasets/{ds}")["runs_deleted"] == 0


def test_an_agent_being_deleted_starts_nothing_and_a_delete_asked_again_finishes(api, container):
    agent = api.agent(sleepy_spec(), publish=1)
    ds = api.dataset(cases(2))
    first = api.start(agent, ds)["run_id"]
    api.wait(first)
    # A delete cut short after its mark: the agent reads as gone and nothing of it starts.
    container.agents.start_deleting(api.org_id, agent, iso(container.clock.now()))
    body = {"dataset_id": ds, "candidate": "draft"}
    for path in (f"/api/v1/agents/{agent}/eval-runs", f"/api/v1/agents/{agent}/eval-runs/estimate"):
        status, reply = api.call("POST", path, json=body)
        assert status == 404 and reply["error"]["field"] == "agent_id", (path, reply)
    status, reply = api.call("POST", f"/api/v1/agents/{agent}/versions")
    assert status == 404, reply
    assert api.call("GET", f"/api/v1/agents/{agent}")[0] == 404
    assert [r["run_id"] for r in api.ok("GET", f"/api/v1/datasets/{ds}/eval-runs")["runs"]] == [
        first
    ]

    assert api.ok("DELETE", f"/api/v1/agents/{agent}")["runs_deleted"] == 1  # asked again
    assert api.call("DELETE", f"/api/v1/agents/{agent}")[0] == 404


def test_a_run_that_borrowed_a_deleted_runs_first_answers_keeps_its_comparison(api, stack):
    ds = api.dataset(cases(6))
    agent = api.agent(sleepy_spec())
    for spec in (sleepy_spec(), sleepy_spec(answers={"c004": "1"})):  # v2 breaks c004
        api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": spec})
        api.ok("POST", f"/api/v1/agents/{agent}/versions")
    body = {"candidate": "version", "version": 2, "paired_baseline": True, "reruns": 1}
    first = api.start(agent, ds, **body)["run_id"]
    api.wait(first)
    second = api.start(agent, ds, **body)
    assert second["reused_baseline_run_id"] == first
    api.wait(second["run_id"])
    path = f"/api/v1/eval-runs/{second['run_id']}"

    def shown() -> tuple[Any, ...]:
        run = api.ok("GET", path)
        return (
            api.ok("GET", f"{path}/comparison"),
            api.ok("GET", f"{path}/cases")["cases"],
            sorted((r["attempt_key"], r["state"], r["answer"]) for r in run["results"]),
            run["outcome"],
            api.ok("GET", f"{path}/answer", params={"attempt_key": "baseline#c004#001"})["answer"],
        )

    before = shown()
    assert before[0]["verdict"] == "worse" and before[0]["baseline"]["source_run_id"] == first
    api.ok("DELETE", f"/api/v1/eval-runs/{first}")
    assert api.call("GET", f"/api/v1/eval-runs/{first}")[0] == 404
    assert shown() == before
