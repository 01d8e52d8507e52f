"""The CloudFormation template of assay's data stack: every table, both queues with DLQs, the
bucket.

Built from the same definitions `infra.resources.bootstrap()` creates locally: tables from
`chalicelib.adapters.tables` (`ALL_MODELS`, `create_table_params`), queues from
`infra.resources.queue_specs`, and every name from one `infra.deployment.Deployment` (the prefix
names the tables, the queues and, unless `--bucket` names it, the bucket
`<prefix>results-<account id>`). Deploy it before the app stack: the SQS event sources of the
Lambdas name these queues. `python -m infra package` writes it beside the app stack.

    python -m infra cloudformation [--prefix assay-] [--bucket NAME] [--case-timeout-seconds 600]
"""

from __future__ import annotations

import copy
from typing import Any

from chalicelib.adapters import tables
from infra.deployment import Deployment, sub
from infra.resources import QueueSpec, queue_specs

RETAIN = {"DeletionPolicy": "Retain", "UpdateReplacePolicy": "Retain"}
"""Tables and the bucket hold evaluation history: deleting or replacing the stack keeps them."""


def _logical_id(*words: str) -> str:
    """`("agent_versions", "table")` -> `AgentVersionsTable` (CloudFormation wants
    alphanumerics)."""
    parts: list[str] = []
    for word in words:
        parts.extend(p for p in word.replace("-", "_").split("_") if p)
    return "".join(p[:1].upper() + p[1:] for p in parts)


def table_resources(prefix: str) -> dict[str, dict[str, Any]]:
    """One `AWS::DynamoDB::Table` per model of `tables.ALL_MODELS`, keyed by logical id.

    Properties are `tables.create_table_params(model)` (same names as CloudFormation's:
    `AttributeDefinitions`, `KeySchema`, `BillingMode`, `GlobalSecondaryIndexes`,
    `LocalSecondaryIndexes`), with the table name `prefix + base name`. The models' configured
    names are not touched.
    """
    out: dict[str, dict[str, Any]] = {}
    for model in tables.ALL_MODELS:
        base = tables._BASE_NAMES[model]  # noqa: SLF001 - the unprefixed name, whatever is configured
        properties = copy.deepcopy(tables.create_table_params(model))
        properties["TableName"] = f"{prefix}{base}"
        ttl = tables.ttl_attribute(model)
        if ttl:
            properties["TimeToLiveSpecification"] = {"AttributeName": ttl, "Enabled": True}
        out[_logical_id(base, "table")] = {
            "Type": "AWS::DynamoDB::Table",
            **RETAIN,
            "Properties": properties,
        }
    return out


def queue_resources(specs: tuple[QueueSpec, ...]) -> dict[str, dict[str, Any]]:
    """An `AWS::SQS::Queue` per work queue and per DLQ, with the work queue's RedrivePolicy."""
    out: dict[str, dict[str, Any]] = {}
    for spec in specs:
        dlq_id = _logical_id(spec.dlq_name, "queue")
        out[dlq_id] = {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": spec.dlq_name,
                "VisibilityTimeout": spec.dlq_visibility_timeout_seconds,
                "MessageRetentionPeriod": spec.dlq_retention_seconds,
            },
        }
        out[_logical_id(spec.name, "queue")] = {
            "Type": "AWS::SQS::Queue",
            "Properties": {
                "QueueName": spec.name,
                "VisibilityTimeout": spec.visibility_timeout_seconds,
                "RedrivePolicy": {
                    "deadLetterTargetArn": {"Fn::GetAtt": [dlq_id, "Arn"]},
                    "maxReceiveCount": spec.max_receive_count,
                },
            },
        }
    return out


def bucket_resources(bucket: str) -> dict[str, dict[str, Any]]:
    """The results bucket: private, encrypted at rest (`bucket` may hold `${AWS::AccountId}`)."""
    return {
        "ResultsBucket": {
            "Type": "AWS::S3::Bucket",
            **RETAIN,
            "Properties": {
                "BucketName": sub(bucket),
                "PublicAccessBlockConfiguration": {
                    "BlockPublicAcls": True,
                    "BlockPublicPolicy": True,
                    "IgnorePublicAcls": True,
                    "RestrictPublicBuckets": True,
                },
                "BucketEncryption": {
                    "ServerSideEncryptionConfiguration": [
                        {"ServerSideEncryptionByDefault": {"SSEAlgorithm": "AES256"}},
                    ]
                },
            },
        }
    }


def template(
    prefix: str | None = None,
    case_timeout_seconds: int | None = None,
    bucket: str | None = None,
) -> dict[str, Any]:
    """The whole template as a JSON-ready dict.

    Args:
        prefix: the stack's resource prefix; default the settings' `ASSAY_RESOURCE_PREFIX`
            (`assay-`): tables `<prefix><table>`, queues `<prefix>case-tasks`...
        case_timeout_seconds: default the settings' `EVALUATION_CASE_TIMEOUT_SECONDS`; the
            case-tasks visibility timeout follows it (`Settings.visibility_timeout_seconds`).
        bucket: the results bucket; default the settings' `ASSAY_RESULTS_BUCKET`, and without it
            `<prefix>results-${AWS::AccountId}` (`Deployment.bucket_name`).

    Raises:
        ValueError: a prefix or bucket name AWS would refuse (`Deployment`).
    """
    from chalicelib.config import Settings

    settings = Settings()
    deployment = Deployment(
        prefix=settings.assay_resource_prefix if prefix is None else prefix,
        bucket=settings.assay_results_bucket if bucket is None else bucket,
        case_timeout_seconds=(
            settings.evaluation_case_timeout_seconds
            if case_timeout_seconds is None
            else case_timeout_seconds
        ),
    )
    return data_stack(deployment)


def data_stack(deployment: Deployment) -> dict[str, Any]:
    """The data stack of `deployment`: its tables, queues with DLQs and results bucket."""
    prefix = deployment.prefix
    specs = queue_specs(deployment.case_timeout_seconds, deployment.names)
    resources = {
        **table_resources(prefix),
        **queue_resources(specs),
        **bucket_resources(deployment.bucket_name),
    }
    outputs: dict[str, Any] = {}
    for logical_id, resource in resources.items():
        if resource["Type"] == "AWS::SQS::Queue":
            outputs[f"{logical_id}Url"] = {"Value": {"Ref": logical_id}}
            outputs[f"{logical_id}Arn"] = {"Value": {"Fn::GetAtt": [logical_id, "Arn"]}}
        elif resource["Type"] == "AWS::DynamoDB::Table":
            outputs[f"{logical_id}Name"] = {"Value": {"Ref": logical_id}}
    outputs["ResultsBucketName"] = {"Value": {"Ref": "ResultsBucket"}}
    return {
        "AWSTemplateFormatVersion": "2010-09-09",
        "Description": (
            f"assay data stack: {len(tables.ALL_MODELS)} DynamoDB tables (prefix "
            f"{prefix!r}, on-demand), SQS queues with DLQs, results bucket. Deploy "
            "before the Chalice stack."
        ),
        "Resources": resources,
        "Outputs": outputs,
    }
