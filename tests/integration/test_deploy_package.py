"""`python -m infra package` (issue 13 scope 5): both stacks of a deployment from one prefix, with
no code edited - the README's deploy recipe, run as far as it runs offline.

`chalice package` really runs (it builds the Lambda zip), the result is linted by cfn-lint, and
the data stack is created by moto's CloudFormation.
"""

from __future__ import annotations

import json
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest

from chalicelib import names
from infra.cloudformation import data_stack
from infra.deployment import Deployment, sub
from infra.gateway import gateway_responses
from infra.package import functions
from infra.policy import policy

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "staging-"
CASE_TIMEOUT = 300
DEPLOYMENT = Deployment(
    prefix=PREFIX,
    case_timeout_seconds=CASE_TIMEOUT,
    email_sender="ops@example.com",
    environment=(("ASSAY_OIDC_ORG_CLAIM", "tenant"),),
)


@pytest.fixture(scope="module")
def built(tmp_path_factory) -> dict[str, Any]:
    out = tmp_path_factory.mktemp("build")
    done = subprocess.run(
        [sys.executable, "-m", "infra", "package", str(out), "--prefix", PREFIX]
        + ["--case-timeout-seconds", str(CASE_TIMEOUT), "--email-sender", "ops@example.com"]
        + ["--env", "ASSAY_OIDC_ORG_CLAIM=tenant"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=600,
    )
    assert done.returncode == 0, done.stdout + done.stderr
    return {
        "out": out,
        "stdout": done.stdout,
        "app": json.loads((out / "sam.json").read_text()),
        "data": json.loads((out / "data.json").read_text()),
    }


def _queue_of(event: dict[str, Any]) -> str:
    return event["Properties"]["Queue"]["Fn::Sub"].rsplit(":", 1)[-1]


def test_every_queue_trigger_is_the_stack_s_own_queue(built):
    triggers = {
        props["Handler"]: [
            _queue_of(e) for e in props.get("Events", {}).values() if e["Type"] == "SQS"
        ]
        for props in (f["Properties"] for f in functions(built["app"]).values())
    }
    stack = names.StackNames(PREFIX)
    assert triggers["chalicelib.workers.cases.handle_case_task"] == [stack.case_tasks_queue]
    assert triggers["chalicelib.workers.cases.handle_dead_case"] == [stack.case_tasks_dlq]
    assert triggers["chalicelib.workers.handlers.handle_agent_event"] == [stack.agent_events_queue]
    assert triggers["app.app"] == []


def test_every_function_runs_with_the_deployment_s_settings(built):
    expected = sub(DEPLOYMENT.variables())
    assert expected["ASSAY_RESULTS_BUCKET"] == {"Fn::Sub": "staging-results-${AWS::AccountId}"}
    assert expected["ASSAY_JWT_SECRET_PARAMETER"] == "/staging/jwt-secret"
    for logical_id, function in functions(built["app"]).items():
        variables = function["Properties"]["Environment"]["Variables"]
        assert variables == expected, logical_id
        assert "ASSAY_JWT_SECRET" not in variables  # the secret is read from SSM, never set here


def test_the_case_worker_outlives_a_case_and_not_its_queue_s_visibility(built):
    (case_worker,) = [
        f["Properties"]
        for f in functions(built["app"]).values()
        if f["Properties"]["Handler"].endswith("handle_case_task")
    ]
    assert case_worker["Timeout"] == CASE_TIMEOUT + 60
    queue = next(
        r["Properties"]
        for r in built["data"]["Resources"].values()
        if r["Properties"].get("QueueName") == f"{PREFIX}case-tasks"
    )
    assert queue["VisibilityTimeout"] == CASE_TIMEOUT + 120 > case_worker["Timeout"]


def test_every_role_has_the_deployment_s_policy_and_the_api_its_gateway_responses(built):
    expected = sub(
        policy(
            PREFIX,
            "staging-agent-",
            bucket="staging-results-${AWS::AccountId}",
            jwt_secret_parameter="/staging/jwt-secret",
        )
    )
    roles = [r for r in built["app"]["Resources"].values() if r["Type"] == "AWS::IAM::Role"]
    assert len(roles) == len(functions(built["app"]))
    for role in roles:
        assert [p["PolicyDocument"] for p in role["Properties"]["Policies"]] == [expected]
    api = built["app"]["Resources"]["RestAPI"]["Properties"]
    assert api["GatewayResponses"] == gateway_responses()


def test_nothing_of_either_stack_names_the_default_stack_s_resources(built):
    text = json.dumps(built["app"]) + json.dumps(built["data"])
    for default in (
        *names.DEFAULT.queues,
        names.DEFAULT.results_bucket,
        "table/assay-",
        "secret:assay/",
    ):
        assert default not in text, default


def test_the_data_stack_is_the_deployment_s(built):
    assert built["data"] == json.loads(json.dumps(data_stack(DEPLOYMENT)))
    assert "staging-results-${AWS::AccountId}" in built["stdout"]


def test_cfn_lint_finds_nothing_in_either_stack(built):
    cfn_lint = Path(sys.executable).with_name("cfn-lint")  # installed with the local extra
    done = subprocess.run(
        [str(cfn_lint), str(built["out"] / "data.json"), str(built["out"] / "sam.json")],
        capture_output=True,
        text=True,
        timeout=300,
    )
    assert done.returncode == 0, done.stdout + done.stderr


def test_the_data_stack_deploys_on_moto_cloudformation(built, monkeypatch):
    import boto3
    from moto import mock_aws

    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws():
        cfn = boto3.client("cloudformation", region_name="us-east-1")
        cfn.create_stack(StackName="staging-assay-data", TemplateBody=json.dumps(built["data"]))
        stack = cfn.describe_stacks(StackName="staging-assay-data")["Stacks"][0]
        assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
        account = boto3.client("sts", region_name="us-east-1").get_caller_identity()["Account"]
        tables = boto3.client("dynamodb", region_name="us-east-1").list_tables()["TableNames"]
        assert tables and all(t.startswith(PREFIX) for t in tables)
        queues = boto3.client("sqs", region_name="us-east-1").list_queues()["QueueUrls"]
        assert sorted(u.rsplit("/", 1)[-1] for u in queues) == sorted(
            names.StackNames(PREFIX).queues
        )
        buckets = [b["Name"] for b in boto3.client("s3").list_buckets()["Buckets"]]
        assert buckets == [f"staging-results-{account}"]


def test_a_prefix_aws_would_refuse_fails_before_anything_is_built(tmp_path):
    done = subprocess.run(
        [sys.executable, "-m", "infra", "package", str(tmp_path / "out"), "--prefix", "Staging_"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=120,
    )
    assert done.returncode == 1 and "assay_resource_prefix" in done.stderr
    assert not (tmp_path / "out").exists()
