"""The demo's data in a fresh organization, for the console's browser tests: four real models'
GSM8K answers (40 cases) as versions 1-4 of one agent, v1 and v2 measured alone (the demo's own
runs), v4 against v3, a draft that answers as v4 does against v4 (no change), then a draft that
answers as v1 does against v4 (it breaks cases). The agent's draft is that last one."""

from __future__ import annotations

import json
from dataclasses import dataclass

import boto3
import pytest

from assay.client import AssayClient
from assay_local import demo
from chalicelib import names
from tests.conftest import make_api
from tests.support.e2e import Api


@dataclass(frozen=True)
class World:
    api: Api
    agent_id: str
    dataset_id: str
    v4_run_id: str
    clean_draft_run_id: str
    draft_run_id: str
    clean_spec: dict
    draft_spec: dict
    changed_spec: dict


def spec(recording: str, model: str, latency_ms: float = 0) -> dict:
    return {
        "runtime": "recorded",
        "recording_id": recording,
        "model": model,
        "latency_ms": latency_ms,
    }


@pytest.fixture(scope="session")
def agent_world(stack) -> World:
    api = make_api(stack)
    client = AssayClient(stack.api_url, api.http.headers["Authorization"].split(" ", 1)[1])
    sqs = boto3.client(
        "sqs", endpoint_url=stack.endpoint_url, region_name=stack.settings.aws_default_region
    )
    queue = stack.queue_urls[names.AGENT_EVENTS_QUEUE]
    _, (agent_id, dataset_id) = demo.run_demo(
        client,
        send_event=lambda body: sqs.send_message(QueueUrl=queue, MessageBody=json.dumps(body)),
        org_id=api.org_id,
        data_dir=demo.default_data_dir(),
        limit=40,
        latency_ms=0,
    )

    def measure(**body) -> str:
        run = api.start(agent_id, dataset_id, environment_id="production", **body)
        api.wait(run["run_id"])
        return run["run_id"]

    v4 = measure(candidate="version", version=4, paired_baseline=True)
    clean = spec("gsm8k-175b_verification", "175b_verification", latency_ms=1)
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": clean})
    clean_run = measure(candidate="draft", paired_baseline=True)
    broken = spec("gsm8k-6b_finetuning", "6b_finetuning")
    api.ok("PUT", f"/api/v1/agents/{agent_id}/draft", json={"spec": broken})
    draft_run = measure(candidate="draft", paired_baseline=True)
    return World(
        api,
        agent_id,
        dataset_id,
        v4,
        clean_run,
        draft_run,
        clean,
        broken,
        changed_spec=spec("gsm8k-175b_verification", "175b_verification", latency_ms=2),
    )
