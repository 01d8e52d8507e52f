"""Deploy artefacts: the CloudFormation template, `.chalice/policy.json`, `.chalice/config.json`.

The template must describe exactly what `infra.resources.bootstrap()` creates locally (one
definition: `tables.create_table_params`, `resources.queue_specs`); the hand-written IAM policy
must cover every DynamoDB, SQS, S3 and Lambda call the code makes (`chalice gen-policy` misses
every PynamoDB call), on assay's resources only, and never allow `Scan`.
"""

from __future__ import annotations

import ast
import json
import re
import subprocess
import sys
import tomllib
from functools import cache
from pathlib import Path
from typing import Any

import pytest

from chalicelib import names
from chalicelib.adapters import tables
from chalicelib.config import Settings
from infra.cloudformation import template
from infra.resources import queue_specs

ROOT = Path(__file__).resolve().parents[2]
PREFIX = "assay-"
CASE_TIMEOUT = 600
ACCOUNT_REGION = "us-east-1:123456789012"


def _resources(tpl: dict[str, Any], kind: str) -> dict[str, dict[str, Any]]:
    return {k: v for k, v in tpl["Resources"].items() if v["Type"] == kind}


@pytest.fixture(scope="module")
def tpl() -> dict[str, Any]:
    return template(prefix=PREFIX, case_timeout_seconds=CASE_TIMEOUT)


def _base_name(model: Any) -> str:
    return tables._BASE_NAMES[model]  # noqa: SLF001 - the unprefixed table name


def _indexes(params: dict[str, Any], key: str) -> dict[str, Any]:
    return {i["IndexName"]: (i["KeySchema"], i["Projection"]) for i in params.get(key, [])}


# --- tables ----------------------------------------------------------------------------------


def test_one_table_per_model_with_the_same_keys_and_indexes(tpl):
    by_name = {
        r["Properties"]["TableName"]: r for r in _resources(tpl, "AWS::DynamoDB::Table").values()
    }
    assert len(by_name) == len(tables.ALL_MODELS)
    for model in tables.ALL_MODELS:
        expected = tables.create_table_params(model)
        resource = by_name[f"{PREFIX}{_base_name(model)}"]
        props = resource["Properties"]
        assert props["KeySchema"] == expected["KeySchema"]
        assert sorted(props["AttributeDefinitions"], key=lambda a: a["AttributeName"]) == sorted(
            expected["AttributeDefinitions"], key=lambda a: a["AttributeName"]
        )
        assert props["BillingMode"] == "PAY_PER_REQUEST"
        assert "ProvisionedThroughput" not in props
        for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
            assert _indexes(props, key) == _indexes(expected, key), (model.__name__, key)
            for index in props.get(key, []):
                assert "ProvisionedThroughput" not in index
        assert resource["DeletionPolicy"] == "Retain"  # evaluation history outlives the stack


def test_every_index_the_models_declare_is_in_the_template(tpl):
    declared = {
        (_base_name(m), i.Meta.index_name) for m in tables.ALL_MODELS for i in m._indexes.values()
    }
    in_template = {
        (r["Properties"]["TableName"].removeprefix(PREFIX), i["IndexName"])
        for r in _resources(tpl, "AWS::DynamoDB::Table").values()
        for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes")
        for i in r["Properties"].get(key, [])
    }
    assert declared == in_template
    assert ("attempts", "recorded_order") in in_template  # the LSI
    assert ("eval_runs", "status_heartbeat") in in_template  # the sweep's GSI


def test_the_template_does_not_repoint_the_models():
    before = [(m.Meta.table_name, getattr(m.Meta, "host", None)) for m in tables.ALL_MODELS]
    template(prefix="elsewhere-", case_timeout_seconds=CASE_TIMEOUT)
    assert [(m.Meta.table_name, getattr(m.Meta, "host", None)) for m in tables.ALL_MODELS] == before


# --- queues and bucket -----------------------------------------------------------------------


def _queues(tpl: dict[str, Any]) -> dict[str, tuple[str, dict[str, Any]]]:
    return {
        r["Properties"]["QueueName"]: (k, r["Properties"])
        for k, r in _resources(tpl, "AWS::SQS::Queue").items()
    }


@pytest.mark.parametrize("case_timeout", [CASE_TIMEOUT, 30, 900])
def test_queues_have_their_dlq_and_follow_the_case_timeout(case_timeout):
    queues = _queues(template(prefix=PREFIX, case_timeout_seconds=case_timeout))
    specs = queue_specs(case_timeout)
    assert set(queues) == {s.name for s in specs} | {s.dlq_name for s in specs}
    assert {
        names.CASE_TASKS_QUEUE,
        names.CASE_TASKS_DLQ,
        names.AGENT_EVENTS_QUEUE,
        names.AGENT_EVENTS_DLQ,
    } <= set(queues)
    for spec in specs:
        _, props = queues[spec.name]
        dlq_id, dlq = queues[spec.dlq_name]
        redrive = props["RedrivePolicy"]
        assert redrive["deadLetterTargetArn"] == {"Fn::GetAtt": [dlq_id, "Arn"]}
        assert redrive["maxReceiveCount"] == spec.max_receive_count >= 5
        assert props["VisibilityTimeout"] == spec.visibility_timeout_seconds
        assert "RedrivePolicy" not in dlq
        # A message keeps its first enqueue time in the DLQ: the DLQ must keep it longer.
        assert dlq["MessageRetentionPeriod"] > props.get("MessageRetentionPeriod", 4 * 24 * 3600)
    case_tasks = queues[names.CASE_TASKS_QUEUE][1]
    assert case_tasks["RedrivePolicy"]["maxReceiveCount"] == names.MAX_RECEIVE_COUNT
    assert case_tasks["VisibilityTimeout"] >= case_timeout + 60
    assert (
        case_tasks["VisibilityTimeout"]
        == Settings(evaluation_case_timeout_seconds=case_timeout).visibility_timeout_seconds
    )


def test_default_template_follows_the_settings(monkeypatch):
    monkeypatch.setenv("EVALUATION_CASE_TIMEOUT_SECONDS", "300")
    monkeypatch.setenv("ASSAY_RESOURCE_PREFIX", "team7-")
    tpl = template()
    assert (
        _queues(tpl)["team7-case-tasks"][1]["VisibilityTimeout"]
        == Settings().visibility_timeout_seconds
    )
    assert all(
        r["Properties"]["TableName"].startswith("team7-")
        for r in _resources(tpl, "AWS::DynamoDB::Table").values()
    )
    monkeypatch.setenv("ASSAY_RESULTS_BUCKET", "team7-results-eu")
    (bucket,) = _resources(template(), "AWS::S3::Bucket").values()
    assert bucket["Properties"]["BucketName"] == "team7-results-eu"


def test_bucket_is_the_results_bucket_named_after_the_account_and_private(tpl):
    (bucket,) = _resources(tpl, "AWS::S3::Bucket").values()
    # S3 names are global: the default names the account, which CloudFormation fills in.
    assert bucket["Properties"]["BucketName"] == {"Fn::Sub": "assay-results-${AWS::AccountId}"}
    assert all(bucket["Properties"]["PublicAccessBlockConfiguration"].values())
    named = template(prefix=PREFIX, case_timeout_seconds=CASE_TIMEOUT, bucket="acme-assay-data")
    (bucket,) = _resources(named, "AWS::S3::Bucket").values()
    assert bucket["Properties"]["BucketName"] == "acme-assay-data"


@pytest.mark.parametrize("prefix", ["staging-", "team7-"])
def test_one_prefix_names_every_table_queue_and_the_bucket(prefix):
    """Two stacks with two prefixes share no resource name (issue 13 scope 5)."""
    tpl = template(prefix=prefix, case_timeout_seconds=CASE_TIMEOUT)
    ours = template(prefix=PREFIX, case_timeout_seconds=CASE_TIMEOUT)

    def physical_names(t: dict[str, Any]) -> set[str]:
        out = set()
        for r in t["Resources"].values():
            props = r["Properties"]
            name = props.get("TableName") or props.get("QueueName") or props.get("BucketName")
            out.add(name["Fn::Sub"] if isinstance(name, dict) else name)
        return out

    theirs = physical_names(tpl)
    assert len(theirs) == len(tpl["Resources"])
    assert all(n.startswith(prefix) for n in theirs), sorted(theirs)
    assert not theirs & physical_names(ours)
    assert set(_queues(tpl)) == {
        f"{prefix}case-tasks",
        f"{prefix}case-tasks-dlq",
        f"{prefix}agent-events",
        f"{prefix}agent-events-dlq",
    }
    for _, props in _queues(tpl).values():
        target = props.get("RedrivePolicy", {}).get("deadLetterTargetArn")
        if target:  # the DLQ of the same stack
            assert tpl["Resources"][target["Fn::GetAtt"][0]]["Properties"]["QueueName"].startswith(
                prefix
            )


@pytest.mark.parametrize(
    "prefix",
    ["Staging-", "staging_", "staging", "-staging-", "", "a" * 40 + "-", "st ack-"],
    ids=repr,
)
def test_a_prefix_aws_would_refuse_is_refused_naming_it(prefix):
    with pytest.raises(ValueError, match="assay_resource_prefix"):
        template(prefix=prefix, case_timeout_seconds=CASE_TIMEOUT)
    done = subprocess.run(
        [sys.executable, "-m", "infra", "cloudformation", f"--prefix={prefix}"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert done.returncode == 2 and "assay_resource_prefix" in done.stderr
    assert done.stdout == ""


def test_cli_prints_the_template_as_json():
    out = subprocess.run(
        [
            sys.executable,
            "-m",
            "infra",
            "cloudformation",
            "--prefix",
            "cli-",
            "--case-timeout-seconds",
            "120",
        ],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    tpl = json.loads(out)
    assert tpl["AWSTemplateFormatVersion"] == "2010-09-09"
    assert tpl == template(prefix="cli-", case_timeout_seconds=120)


def test_template_deploys_on_moto_cloudformation(tpl, monkeypatch):
    """moto's CloudFormation creates every resource; what it builds matches the template."""
    import boto3
    from moto import mock_aws

    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)  # an e2e stack may have pointed boto3 elsewhere
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    region = "us-east-1"
    with mock_aws():
        cfn = boto3.client("cloudformation", region_name=region)
        cfn.create_stack(StackName="assay-data", TemplateBody=json.dumps(tpl))
        stack = cfn.describe_stacks(StackName="assay-data")["Stacks"][0]
        assert stack["StackStatus"] == "CREATE_COMPLETE", stack.get("StackStatusReason")
        dynamodb = boto3.client("dynamodb", region_name=region)
        assert sorted(dynamodb.list_tables()["TableNames"]) == sorted(
            f"{PREFIX}{_base_name(m)}" for m in tables.ALL_MODELS
        )
        sqs = boto3.client("sqs", region_name=region)
        url = sqs.get_queue_url(QueueName=names.CASE_TASKS_QUEUE)["QueueUrl"]
        attrs = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["All"])["Attributes"]
        assert (
            int(attrs["VisibilityTimeout"])
            == queue_specs(CASE_TIMEOUT)[0].visibility_timeout_seconds
        )
        redrive = json.loads(attrs["RedrivePolicy"])
        assert redrive["deadLetterTargetArn"].endswith(f":{names.CASE_TASKS_DLQ}")
        assert int(redrive["maxReceiveCount"]) == names.MAX_RECEIVE_COUNT
        account = boto3.client("sts", region_name=region).get_caller_identity()["Account"]
        boto3.client("s3", region_name=region).head_bucket(Bucket=f"assay-results-{account}")


# --- Lambda settings against the queues ------------------------------------------------------


@cache
def _chalice_config() -> dict[str, Any]:
    return json.loads((ROOT / ".chalice" / "config.json").read_text())


def _lambda_setting(function_name: str, stage: str, name: str) -> Any:
    from chalice.config import Config

    config = Config(
        chalice_stage=stage, function_name=function_name, config_from_disk=_chalice_config()
    )
    return getattr(config, name)


def _stages() -> list[str]:
    return sorted(_chalice_config().get("stages", {})) or ["dev"]


def test_chalice_config_uses_the_hand_written_policy():
    cfg = _chalice_config()
    assert cfg["autogen_policy"] is False
    assert cfg["iam_policy_file"] == "policy.json"


def test_lambda_runtime_is_python_312():
    assert _lambda_setting("api_handler", "dev", "lambda_python_version") == "python3.12"


@pytest.mark.parametrize("stage", _stages())
def test_sqs_handlers_finish_within_their_queue_visibility(stage):
    """AWS refuses an SQS event source whose queue is visible again before the function times
    out."""
    from app import app

    visibility = {
        name: props.get("VisibilityTimeout", 30)
        for name, (_, props) in _queues(template(prefix=PREFIX)).items()
    }
    sqs_sources = [e for e in app.event_sources if type(e).__name__ == "SQSEventConfig"]
    assert {e.queue for e in sqs_sources} == {
        names.CASE_TASKS_QUEUE,
        names.CASE_TASKS_DLQ,
        names.AGENT_EVENTS_QUEUE,
    }
    for source in sqs_sources:
        timeout = _lambda_setting(source.name, stage, "lambda_timeout")
        assert source.batch_size == 1  # Chalice cannot report partial batch failures
        assert timeout <= visibility[source.queue], (source.name, timeout, source.queue)
    case_handler = next(e.name for e in sqs_sources if e.queue == names.CASE_TASKS_QUEUE)
    assert (
        _lambda_setting(case_handler, stage, "lambda_timeout")
        >= Settings().evaluation_case_timeout_seconds
    )


# --- IAM policy ------------------------------------------------------------------------------


@cache
def _policy() -> dict[str, Any]:
    return json.loads((ROOT / ".chalice" / "policy.json").read_text())


def _pattern(value: str, *, ignore_case: bool) -> re.Pattern[str]:
    regex = "".join(".*" if c == "*" else "." if c == "?" else re.escape(c) for c in value)
    return re.compile(f"^{regex}$", re.IGNORECASE if ignore_case else 0)


def _listed(statement: dict[str, Any], key: str) -> list[str]:
    value = statement.get(key, [])
    return [value] if isinstance(value, str) else list(value)


def _matches(statement: dict[str, Any], action: str, resource: str) -> bool:
    return any(
        _pattern(a, ignore_case=True).match(action) for a in _listed(statement, "Action")
    ) and any(
        _pattern(r, ignore_case=False).match(resource) for r in _listed(statement, "Resource")
    )


def allowed(action: str, resource: str, document: dict[str, Any] | None = None) -> bool:
    """IAM's verdict on `action` over `resource` for `document` alone (default the committed
    policy; no conditions used)."""
    statements = (document or _policy())["Statement"]
    if any(s["Effect"] == "Deny" and _matches(s, action, resource) for s in statements):
        return False
    return any(s["Effect"] == "Allow" and _matches(s, action, resource) for s in statements)


PYNAMODB_ACTIONS: dict[str, set[str]] = {
    # PynamoDB method (on a model, an index, a batch or a TransactWrite) -> DynamoDB IAM actions.
    # `TransactWriteItems` has no IAM action of its own: each of its parts needs the action of the
    # matching single-item call (PutItem, UpdateItem, DeleteItem, ConditionCheckItem).
    "get": {"GetItem"},
    "refresh": {"GetItem"},
    "batch_get": {"BatchGetItem"},
    "save": {"PutItem"},
    "update": {"UpdateItem"},
    "delete": {"DeleteItem"},
    "condition_check": {"ConditionCheckItem"},
    "batch_write": {"BatchWriteItem"},
    "query": {"Query"},
    "count": {"Query"},
    "scan": {"Scan"},
    "exists": {"DescribeTable"},
    "describe_table": {"DescribeTable"},
}
"""Dict `.get`/`.update` calls in the stores map to actions we need anyway: harmless."""


STORES = ROOT / "chalicelib" / "adapters" / "stores"


def _called_methods(path: Path) -> set[str]:
    """Attribute calls in a module, or in every module of a package."""
    files = sorted(path.glob("*.py")) if path.is_dir() else [path]
    return {
        node.func.attr
        for file in files
        for node in ast.walk(ast.parse(file.read_text()))
        if isinstance(node, ast.Call) and isinstance(node.func, ast.Attribute)
    }


def _store_actions() -> set[str]:
    called = _called_methods(STORES)
    return {f"dynamodb:{a}" for m in called & PYNAMODB_ACTIONS.keys() for a in PYNAMODB_ACTIONS[m]}


def _table_arn(base: str, prefix: str = PREFIX) -> str:
    return f"arn:aws:dynamodb:{ACCOUNT_REGION}:table/{prefix}{base}"


def test_policy_is_a_valid_document():
    policy = _policy()
    assert policy["Version"] == "2012-10-17"
    for statement in policy["Statement"]:
        assert statement["Effect"] in ("Allow", "Deny")
        assert _listed(statement, "Action") and _listed(statement, "Resource")
        assert all(
            re.fullmatch(r"[a-z0-9-]+:[A-Za-z0-9*?]+", a) for a in _listed(statement, "Action")
        )


def test_stores_make_the_calls_we_expect():
    actions = _store_actions()
    # The run engine's writes (docs/architecture/exactly-once.md, docs/architecture/slots.md) and
    # its reads; if this fails, the stores changed.
    assert {
        "dynamodb:GetItem",
        "dynamodb:PutItem",
        "dynamodb:UpdateItem",
        "dynamodb:DeleteItem",
        "dynamodb:Query",
        "dynamodb:BatchWriteItem",
    } <= actions
    assert any("TransactWrite" in f.read_text() for f in STORES.glob("*.py"))


def test_policy_covers_every_dynamodb_call_of_the_stores_on_every_table():
    needed = _store_actions() | {"dynamodb:ConditionCheckItem", "dynamodb:DescribeTable"}
    for model in tables.ALL_MODELS:
        for action in sorted(needed):
            assert allowed(action, _table_arn(_base_name(model))), (action, _base_name(model))


def test_policy_allows_queries_on_every_index():
    for model in tables.ALL_MODELS:
        params = tables.create_table_params(model)
        for key in ("GlobalSecondaryIndexes", "LocalSecondaryIndexes"):
            for index in params.get(key, []):
                arn = f"{_table_arn(_base_name(model))}/index/{index['IndexName']}"
                assert allowed("dynamodb:Query", arn), arn


def test_policy_never_allows_scan_nor_other_tables():
    statements = _policy()["Statement"]
    assert not any(
        _pattern(a, ignore_case=True).match("dynamodb:Scan")
        for s in statements
        if s["Effect"] == "Allow"
        for a in _listed(s, "Action")
    )
    assert "scan" not in _called_methods(STORES)
    for action in ("dynamodb:GetItem", "dynamodb:PutItem", "dynamodb:Query"):
        assert not allowed(action, _table_arn("organizations", prefix="billing-"))
        assert not allowed(action, "arn:aws:dynamodb:us-east-1:123456789012:table/*")
    assert not allowed("dynamodb:DeleteTable", _table_arn("eval_runs"))
    assert not allowed("dynamodb:CreateTable", _table_arn("eval_runs"))


def _boto3_actions(path: Path, service: str) -> set[str]:
    """`client.send_message_batch(` -> `sqs:SendMessage` (a batch needs its single call's
    action); a presigned URL is used with the signer's authority, so `get_object`'s needs
    `s3:GetObject`."""
    special = {
        "invoke": "InvokeFunction",
        "generate_presigned_url": "GetObject",
        # the only paginator is ListObjectsV2's, whose action is s3:ListBucket; a DeleteObjects
        # needs s3:DeleteObject on every key it names
        "get_paginator": "ListBucket",
        "delete_objects": "DeleteObject",
    }
    out = set()
    for method in re.findall(r"client\.([a-z_]+)\(", path.read_text()):
        camel = special.get(method) or "".join(p.capitalize() for p in method.split("_"))
        out.add(f"{service}:{camel.removesuffix('Batch')}")
    return out


def test_policy_covers_the_queue_bucket_and_lambda_calls():
    from app import app

    sqs_calls = _boto3_actions(
        ROOT / "chalicelib" / "adapters" / "queue.py", "sqs"
    ) | _boto3_actions(ROOT / "chalicelib" / "workers" / "handlers.py", "sqs")
    assert {"sqs:SendMessage", "sqs:ChangeMessageVisibility", "sqs:GetQueueUrl"} <= sqs_calls
    for queue in (
        names.CASE_TASKS_QUEUE,
        names.CASE_TASKS_DLQ,
        names.AGENT_EVENTS_QUEUE,
        names.AGENT_EVENTS_DLQ,
    ):
        for action in sqs_calls:
            assert allowed(action, f"arn:aws:sqs:{ACCOUNT_REGION}:{queue}"), (action, queue)
    # What Lambda's SQS event source mapping does with the function's role.
    for source in app.event_sources:
        queue = getattr(source, "queue", None)
        if queue:
            for action in ("sqs:ReceiveMessage", "sqs:DeleteMessage", "sqs:GetQueueAttributes"):
                assert allowed(action, f"arn:aws:sqs:{ACCOUNT_REGION}:{queue}"), (action, queue)
    assert not allowed("sqs:SendMessage", f"arn:aws:sqs:{ACCOUNT_REGION}:someone-elses-queue")

    s3_calls = _boto3_actions(ROOT / "chalicelib" / "adapters" / "bucket.py", "s3")
    assert s3_calls == {"s3:PutObject", "s3:GetObject", "s3:DeleteObject", "s3:ListBucket"}
    for action in s3_calls - {"s3:ListBucket"}:
        assert allowed(
            action, f"arn:aws:s3:::{names.RESULTS_BUCKET}/org-1/answers/run-1/a#c#001.txt"
        )
        assert not allowed(action, "arn:aws:s3:::another-bucket/key")
    assert allowed("s3:ListBucket", f"arn:aws:s3:::{names.RESULTS_BUCKET}")  # a run's answers
    assert not allowed("s3:ListBucket", "arn:aws:s3:::another-bucket")

    lambda_calls = _boto3_actions(
        ROOT / "chalicelib" / "adapters" / "runtimes" / "lambda_.py", "lambda"
    )
    assert lambda_calls == {"lambda:InvokeFunction"}
    assert allowed(
        "lambda:InvokeFunction", f"arn:aws:lambda:{ACCOUNT_REGION}:function:assay-agent-my-agent"
    )
    assert not allowed(
        "lambda:InvokeFunction", f"arn:aws:lambda:{ACCOUNT_REGION}:function:my-agent"
    )

    for action in ("logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"):
        assert allowed(action, f"arn:aws:logs:{ACCOUNT_REGION}:log-group:/aws/lambda/assay-dev:*")


def test_committed_policy_is_the_one_infra_generates():
    """`.chalice/policy.json` is `python -m infra policy --write`'s output, never edited by hand."""
    from infra.policy import POLICY_FILE, policy, render

    assert POLICY_FILE == ROOT / ".chalice" / "policy.json"
    assert POLICY_FILE.read_text() == render(policy())


def test_policy_never_grants_every_function_and_follows_the_lambda_prefix():
    from infra.policy import policy

    text = json.dumps(_policy())
    assert "function:*" not in text
    resources = [
        r
        for s in _policy()["Statement"]
        if "lambda:InvokeFunction" in _listed(s, "Action")
        for r in _listed(s, "Resource")
    ]
    assert resources == [f"arn:*:lambda:*:*:function:{Settings().assay_lambda_function_prefix}*"]
    assert not allowed(
        "lambda:InvokeFunction", f"arn:aws:lambda:{ACCOUNT_REGION}:function:assay-api_handler"
    )
    other = policy(lambda_prefix="team7-agents-")
    assert [r for s in other["Statement"] for r in _listed(s, "Resource") if ":lambda:" in r] == [
        "arn:*:lambda:*:*:function:team7-agents-*"
    ]
    # No prefix: no function may be invoked at all.
    assert not any(
        "lambda:InvokeFunction" in _listed(s, "Action")
        for s in policy(lambda_prefix="")["Statement"]
    )


def test_policy_covers_the_organizations_secrets_and_recordings_and_no_others():
    secret = f"arn:aws:secretsmanager:{ACCOUNT_REGION}:secret:assay/org_a/openai-AbCdEf"
    for action in (
        "GetSecretValue",
        "CreateSecret",
        "PutSecretValue",
        "DeleteSecret",
        "DescribeSecret",
        "TagResource",
    ):
        assert allowed(f"secretsmanager:{action}", secret), action
        assert not allowed(
            f"secretsmanager:{action}",
            f"arn:aws:secretsmanager:{ACCOUNT_REGION}:secret:prod/db-password-AbCdEf",
        ), action
    recording = f"arn:aws:s3:::{names.RESULTS_BUCKET}/org_a/recordings/gsm8k.jsonl"
    for action in ("s3:GetObject", "s3:PutObject", "s3:DeleteObject"):
        assert allowed(action, recording), action
    assert allowed("s3:ListBucket", f"arn:aws:s3:::{names.RESULTS_BUCKET}")
    assert allowed("secretsmanager:ListSecrets", "*")
    assert allowed("secretsmanager:BatchGetSecretValue", "*")
    assert not allowed("secretsmanager:GetSecretValue", "*")


def test_a_prefix_s_policy_covers_its_own_resources_and_none_of_another_stack():
    from infra.policy import policy

    account = "123456789012"
    doc = policy(
        "staging-",
        "staging-agent-",
        bucket=f"staging-results-{account}",
        jwt_secret_parameter="/staging/jwt-secret",
    )
    ours, theirs = names.StackNames("staging-"), names.DEFAULT
    for queue in ours.queues:
        assert allowed("sqs:SendMessage", f"arn:aws:sqs:{ACCOUNT_REGION}:{queue}", doc)
    for queue in theirs.queues:
        assert not allowed("sqs:SendMessage", f"arn:aws:sqs:{ACCOUNT_REGION}:{queue}", doc)
    assert allowed("dynamodb:PutItem", _table_arn("eval_runs", "staging-"), doc)
    assert not allowed("dynamodb:PutItem", _table_arn("eval_runs", PREFIX), doc)
    assert allowed("s3:PutObject", f"arn:aws:s3:::staging-results-{account}/org/answers/x", doc)
    assert not allowed("s3:PutObject", f"arn:aws:s3:::{names.RESULTS_BUCKET}/org/answers/x", doc)
    secret = f"arn:aws:secretsmanager:{ACCOUNT_REGION}:secret:staging/org_a/openai-AbCdEf"
    assert allowed("secretsmanager:GetSecretValue", secret, doc)
    assert not allowed("secretsmanager:GetSecretValue", secret.replace("staging/", "assay/"), doc)
    parameter = f"arn:aws:ssm:{ACCOUNT_REGION}:parameter/staging/jwt-secret"
    assert allowed("ssm:GetParameter", parameter, doc)
    assert not allowed("ssm:GetParameter", parameter.replace("staging/", "assay/"), doc)
    assert not allowed("ssm:PutParameter", parameter, doc)
    assert allowed(
        "lambda:InvokeFunction", f"arn:aws:lambda:{ACCOUNT_REGION}:function:staging-agent-x", doc
    )
    # The committed policy (plain `chalice package`) reads no parameter: the stage names none.
    assert not allowed("ssm:GetParameter", parameter.replace("staging/", "assay/"))


def test_policy_cli_prints_what_policy_gives():
    from infra.policy import policy

    out = subprocess.run(
        [sys.executable, "-m", "infra", "policy", "--prefix", "cli-", "--lambda-prefix", "fn-"],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    ).stdout
    assert json.loads(out) == policy("cli-", "fn-")


# --- API Gateway's own errors ------------------------------------------------------------------


def test_gateway_responses_answer_in_the_api_shape_and_never_echo_the_request():
    from infra.gateway import RESPONSE_STATUS, gateway_responses

    responses = gateway_responses()
    assert set(responses) == set(RESPONSE_STATUS)
    assert {
        "MISSING_AUTHENTICATION_TOKEN",
        "DEFAULT_4XX",
        "DEFAULT_5XX",
        "THROTTLED",
        "INTEGRATION_TIMEOUT",
    } <= set(responses)
    assert responses["MISSING_AUTHENTICATION_TOKEN"]["StatusCode"] == "404"  # an unknown path
    for response_type, response in responses.items():
        template = response["ResponseTemplates"]["application/json"]
        # No $input, no $context.error.message: nothing of the request is echoed; the one
        # variable is API Gateway's request id.
        assert template.replace("$context.requestId", "").count("$") == 0, (response_type, template)
        error = json.loads(template)["error"]
        assert (
            set(error) == {"code", "message", "request_id"} and error["code"] and error["message"]
        )
        assert error["request_id"] == "$context.requestId"
        assert response["ResponseParameters"]["Headers"]["Content-Type"] == "'application/json'"
        if RESPONSE_STATUS[response_type] is None:
            assert "StatusCode" not in response


def test_gateway_responses_cli_adds_them_to_chalice_s_rest_api(tmp_path):
    from infra.gateway import gateway_responses

    sam = tmp_path / "sam.json"
    sam.write_text(
        json.dumps(
            {
                "Resources": {
                    "RestAPI": {"Type": "AWS::Serverless::Api", "Properties": {"StageName": "api"}}
                }
            }
        )
    )
    subprocess.run(
        [sys.executable, "-m", "infra", "gateway-responses", str(sam)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
        check=True,
    )
    props = json.loads(sam.read_text())["Resources"]["RestAPI"]["Properties"]
    assert props["StageName"] == "api" and props["GatewayResponses"] == gateway_responses()
    sam.write_text(json.dumps({"Resources": {}}))
    failed = subprocess.run(
        [sys.executable, "-m", "infra", "gateway-responses", str(sam)],
        cwd=ROOT,
        capture_output=True,
        text=True,
        timeout=60,
    )
    assert failed.returncode != 0 and "RestAPI" in failed.stderr


# --- what Chalice bundles --------------------------------------------------------------------


def test_requirements_txt_is_pyproject_without_the_local_only_packages():
    """`chalice package` bundles requirements.txt; it must match pyproject's pins."""
    project = tomllib.loads((ROOT / "pyproject.toml").read_text())["project"]
    local_only = {"chalice", "rich", "moto"}  # the CLI, the embedded stack and the tests
    expected = {
        d
        for d in project["dependencies"]
        if re.match(r"[A-Za-z0-9_.-]+", d).group(0).lower() not in local_only
    }
    lines = (ROOT / "requirements.txt").read_text().splitlines()
    bundled = {line.strip() for line in lines if line.strip() and not line.startswith("#")}
    assert bundled == expected
    assert any(d.startswith("scipy") for d in bundled)  # the McNemar test runs in the Lambda
