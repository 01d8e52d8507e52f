"""Request ids, logs, metrics and the signing-secret parameter over HTTP on the embedded stack
(issue 13 scopes 5 and 6).

Every answer carries its request id in `X-Request-Id`, and every error body as `error.request_id`,
whoever answered (a view, Chalice itself, the gateway); the id is the `correlation_id` of the
request's log lines. A run's metrics are the EMF lines a deployed stage would print; the case
worker's lines name the run and the case they are about.
"""

from __future__ import annotations

import io
import json
import re
import uuid
from collections.abc import Callable, Iterator
from typing import Any

import boto3
import httpx
import pytest

from chalicelib import bootstrap, telemetry
from chalicelib.adapters.metrics import EmfMetrics
from chalicelib.adapters.tokens import issue
from chalicelib.config import DEV_JWT_SECRET, Settings
from tests.e2e.conftest import cases, sleepy_spec, wait_for
from tests.e2e.manual import Queue

UUID = re.compile(r"^[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}$")


def _request_id(response: httpx.Response) -> str:
    rid = response.headers.get("X-Request-Id", "")
    assert UUID.match(rid), (response.status_code, dict(response.headers))
    return rid


def test_every_answer_carries_its_request_id_and_every_error_body_too(stack, api):
    anonymous = httpx.Client(base_url=stack.api_url, timeout=60.0)
    answers = {
        "a view's 200": api.http.get("/api/v1/agents"),
        "a public route": anonymous.get("/openapi.json"),
        "no token (401)": anonymous.get("/api/v1/agents"),
        "a body that is no JSON (400)": api.http.post(
            "/api/v1/agents", content=b"{", headers={"Content-Type": "application/json"}
        ),
        "a missing thing (404)": api.http.get("/api/v1/agents/nope"),
        "an unknown route (the gateway's 404)": api.http.get("/api/v2/whatever"),
        "a wrong method (405)": api.http.delete("/api/v1/agents"),
        "a method no route has (the gateway's 405)": api.http.request("PROPFIND", "/api/v1/agents"),
        "a body that is not JSON (Chalice's 415)": api.http.post(
            "/api/v1/agents", content=b"x", headers={"Content-Type": "text/plain"}
        ),
    }
    ids = set()
    for what, response in answers.items():
        rid = _request_id(response)
        ids.add(rid)
        if response.status_code >= 400:
            error = response.json()["error"]
            assert error["request_id"] == rid, what
            assert error["code"] and error["message"], what
    assert len(ids) == len(answers)  # one id per request
    statuses = {what: r.status_code for what, r in answers.items()}
    assert statuses["an unknown route (the gateway's 404)"] == 404
    assert statuses["a method no route has (the gateway's 405)"] == 405
    assert statuses["a body that is not JSON (Chalice's 415)"] == 415


@pytest.fixture
def json_logs() -> Iterator[io.StringIO]:
    """The service's log lines as a deployed stage writes them (Powertools JSON), into a buffer."""
    stream = io.StringIO()
    telemetry.reset_logging()
    telemetry.configure_logging(Settings(assay_log_format="json"), stream=stream)
    try:
        yield stream
    finally:
        telemetry.reset_logging()


def _lines(stream: io.StringIO) -> list[dict[str, Any]]:
    return [json.loads(line) for line in stream.getvalue().splitlines() if line.strip()]


@pytest.fixture
def settings_restored(container) -> Iterator[Settings]:
    original = container.settings
    yield original
    bootstrap.override(settings=original)


def _token(settings: Settings, secret: str) -> str:
    return issue(
        f"org_{uuid.uuid4().hex[:10]}",
        "ops@example.com",
        secret=secret,
        issuer=settings.assay_jwt_issuer,
        audience=settings.assay_jwt_audience,
        ttl_seconds=600,
    )


def _get_agents(stack, token: str) -> httpx.Response:
    return httpx.get(
        f"{stack.api_url}/api/v1/agents", headers={"Authorization": f"Bearer {token}"}, timeout=60
    )


def test_tokens_are_checked_with_the_secret_the_stage_s_parameter_holds(stack, settings_restored):
    secret = f"operator-{uuid.uuid4().hex}{uuid.uuid4().hex}"
    name = f"/assay/jwt-secret-{uuid.uuid4().hex[:8]}"
    ssm = boto3.client("ssm", endpoint_url=stack.endpoint_url, region_name="us-east-1")
    ssm.put_parameter(Name=name, Value=secret, Type="SecureString")
    s = settings_restored.model_copy(update={"assay_jwt_secret_parameter": name})
    bootstrap.override(settings=s)
    assert _get_agents(stack, _token(s, secret)).status_code == 200
    refused = _get_agents(stack, _token(s, DEV_JWT_SECRET))
    assert refused.status_code == 401
    assert refused.json()["error"]["request_id"] == _request_id(refused)


def test_a_stage_whose_parameter_is_missing_answers_500_and_logs_why_under_the_request_id(
    stack, settings_restored, json_logs
):
    name = f"/assay/missing-{uuid.uuid4().hex[:8]}"
    s = settings_restored.model_copy(update={"assay_jwt_secret_parameter": name})
    bootstrap.override(settings=s)
    answer = _get_agents(stack, _token(s, DEV_JWT_SECRET))
    rid = _request_id(answer)
    assert answer.status_code == 500
    assert answer.json() == {
        "error": {"code": "internal", "message": "internal error", "request_id": rid}
    }  # the operator's configuration is never shown to a caller
    (line,) = [line for line in _lines(json_logs) if line.get("correlation_id") == rid]
    assert line["level"] == "ERROR" and name in line["message"]
    assert line["service"] == "assay"


@pytest.fixture
def emf(container) -> Iterator[Callable[[], list[dict[str, Any]]]]:
    """`emf()` -> the EMF objects the services' metrics printed so far, as a deployed stage
    prints them (the pollers' threads keep adding lines)."""
    lines: list[str] = []
    original = container.metrics
    bootstrap.override(metrics=EmfMetrics("assay", "assay", write=lines.append))
    yield lambda: [json.loads(line) for line in list(lines)]
    bootstrap.override(metrics=original)


def _total(blobs: Any, metric: str, **dimensions: str) -> float:
    return sum(
        sum(b[metric])
        for b in blobs
        if metric in b and all(b.get(k) == v for k, v in dimensions.items())
    )


def test_a_run_counts_its_start_its_attempts_by_state_its_cost_and_its_end(api, emf):
    ds = api.dataset(cases(5))
    agent = api.agent(sleepy_spec(answers={"c000": "41", "c001": "41"}))
    run = api.start(agent, ds)
    assert api.wait(run["run_id"])["status"] == "completed"
    # The worker that ended it flushes as its invocation returns: wait for that line.
    wait_for(lambda: _total(emf(), "RunsEnded", status="completed"), what="RunsEnded")
    assert _total(emf(), "RunsStarted") == 1
    assert _total(emf(), "Attempts", state="passed") == 3
    assert _total(emf(), "Attempts", state="failed") == 2
    assert _total(emf(), "RunsEnded", status="completed") == 1
    assert _total(emf(), "CostUSD") == 0  # the sleepy agent reports no cost
    for blob in emf():
        (envelope,) = blob["_aws"]["CloudWatchMetrics"]
        assert envelope["Namespace"] == "assay" and blob["service"] == "assay"
        for dims in envelope["Dimensions"]:
            assert all(d in blob for d in dims)  # each dimension has its value on the line


def test_a_cancelled_run_is_counted_as_cancelled(api, emf):
    ds = api.dataset(cases(40))
    agent = api.agent(sleepy_spec(sleep_ms=200))
    run = api.start(agent, ds)
    api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/cancel")
    wait_for(lambda: _total(emf(), "RunsEnded", status="cancelled"), what="RunsEnded cancelled")
    assert _total(emf(), "RunsEnded") == 1


def test_the_case_worker_s_lines_name_the_run_and_the_case_and_a_refused_task_is_counted(
    stack, api, json_logs, emf
):
    ds = api.dataset(cases(2))
    agent = api.agent(sleepy_spec())
    run = api.start(agent, ds)
    assert api.wait(run["run_id"])["status"] == "completed"
    arm_id = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["arms"][0]["arm_id"]
    task = {
        "org_id": api.org_id,
        "run_id": run["run_id"],
        "arm_id": arm_id,
        "case_id": "never-planned",
        "attempt": 1,
    }
    Queue(stack).send(json.dumps(task))

    def refused() -> list[dict[str, Any]]:
        return [
            line
            for line in _lines(json_logs)
            if line.get("run_id") == run["run_id"] and "dead-letter" in str(line["message"])
        ]

    (line,) = wait_for(refused, what="the worker's line")
    assert line["level"] == "WARNING"
    assert (line["org_id"], line["arm_id"], line["case_id"], line["attempt"]) == (
        api.org_id,
        arm_id,
        "never-planned",
        1,
    )
    assert line["correlation_id"] and line["function_request_id"]  # the message, the invocation
    wait_for(
        lambda: _total(emf(), "DeadLetters", queue="case-tasks", cause="refused"),
        what="DeadLetters",
    )
