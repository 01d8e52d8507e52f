"""The one definition of assay's queues and bucket, and `bootstrap()` that creates every resource.

Tables are defined once, as PynamoDB models, in `chalicelib.adapters.tables`; queues and the
bucket here. `bootstrap()` targets moto server, LocalStack (`endpoint_url` set) or AWS
(`endpoint_url=None`) and may be run any number of times.

One prefix names everything (`chalicelib.names.StackNames`): tables `<prefix><table>`, queues
`<prefix>case-tasks`..., the bucket `<prefix>results` unless named otherwise, secrets
`<prefix without '-'>/<org>/<name>`; two stacks with two prefixes share nothing.
"""

from __future__ import annotations

import json
import logging
from dataclasses import dataclass
from typing import Any

from chalicelib import names

log = logging.getLogger(__name__)

DLQ_RETENTION_SECONDS = 14 * 24 * 3600
"""SQS's maximum. A standard queue's message keeps its first enqueue time when it moves to the
DLQ, so the DLQ must keep messages longer than the source queue (default 4 days) does."""
DLQ_VISIBILITY_TIMEOUT_SECONDS = 120
"""The case-tasks DLQ has a handler (records the attempt `incomplete`): a few DynamoDB writes.
Its Lambda timeout (`.chalice/config.json`, `handle_dead_case`) must not exceed this."""
AGENT_EVENTS_VISIBILITY_TIMEOUT_SECONDS = 60
"""Its Lambda timeout (`.chalice/config.json`, `handle_agent_event`) must not exceed this."""
AGENT_EVENTS_MAX_RECEIVE_COUNT = 5


@dataclass(frozen=True)
class QueueSpec:
    """A work queue and its dead-letter queue.

    `visibility_timeout_seconds` and `max_receive_count` apply to the work queue; SQS moves a
    message to `dlq_name` on the receive after its `max_receive_count`-th. The `dlq_*` fields
    apply to the dead-letter queue. `bootstrap()` and `infra.cloudformation` both read these.
    """

    name: str
    dlq_name: str
    max_receive_count: int
    visibility_timeout_seconds: int
    dlq_visibility_timeout_seconds: int = DLQ_VISIBILITY_TIMEOUT_SECONDS
    dlq_retention_seconds: int = DLQ_RETENTION_SECONDS


def case_tasks_visibility_seconds(case_timeout_seconds: int) -> int:
    """Visibility timeout of the case-tasks queue for a case timeout, in seconds.

    The app's own formula (`Settings.visibility_timeout_seconds`, which the keep-alive also uses
    to extend a long case's message), evaluated for `case_timeout_seconds` without reading the
    environment: the Lambda timeout (case timeout + 60 s) plus a margin (docs/guides/deploy.md).
    """
    from chalicelib.config import Settings

    return Settings.model_construct(
        evaluation_case_timeout_seconds=case_timeout_seconds
    ).visibility_timeout_seconds


def queue_specs(
    case_timeout_seconds: int, stack: names.StackNames = names.DEFAULT
) -> tuple[QueueSpec, ...]:
    """Every queue of the stack `stack` names (default `assay-`), for a case timeout in
    seconds."""
    return (
        QueueSpec(
            name=stack.case_tasks_queue,
            dlq_name=stack.case_tasks_dlq,
            max_receive_count=names.MAX_RECEIVE_COUNT,
            visibility_timeout_seconds=case_tasks_visibility_seconds(case_timeout_seconds),
        ),
        QueueSpec(
            name=stack.agent_events_queue,
            dlq_name=stack.agent_events_dlq,
            max_receive_count=AGENT_EVENTS_MAX_RECEIVE_COUNT,
            visibility_timeout_seconds=AGENT_EVENTS_VISIBILITY_TIMEOUT_SECONDS,
        ),
    )


BUCKET_NAME = names.RESULTS_BUCKET
"""The default stack's results bucket (`assay-results`): the embedded stack's."""


# --- the organizations' secrets (Secrets Manager) ----------------------------------------------
# Secrets are created by the service (`PUT /api/v1/secrets/{name}`), never by bootstrap: nothing to
# create here. Their names are built in `chalicelib.names` (the Lambda bundle needs them) and
# re-exported here with what the IAM policy grants.

secret_name_prefix = names.secret_name_prefix
secret_name = names.secret_name
SECRET_ORG_TAG = names.SECRET_ORG_TAG

SECRET_ACTIONS = (
    "secretsmanager:CreateSecret",
    "secretsmanager:PutSecretValue",
    "secretsmanager:GetSecretValue",
    "secretsmanager:DescribeSecret",
    "secretsmanager:DeleteSecret",
    "secretsmanager:TagResource",
)
"""What the service does to its own secrets (CreateSecret with tags needs TagResource)."""
SECRET_LIST_ACTIONS = ("secretsmanager:ListSecrets", "secretsmanager:BatchGetSecretValue")
"""Listing actions; AWS takes no resource for them (`"Resource": "*"`). BatchGetSecretValue also
needs GetSecretValue on every secret it returns, which `SECRET_ACTIONS` grants on the prefix
only."""


def secret_arn_pattern(
    prefix: str, *, partition: str = "*", region: str = "*", account: str = "*"
) -> str:
    """The ARN pattern of every organization secret of the stack with resource prefix `prefix`.

    `"assay-"` -> `arn:*:secretsmanager:*:*:secret:assay/*` (Secrets Manager appends `-XXXXXX`
    to each secret's ARN, which the trailing `*` covers).
    """
    return (
        f"arn:{partition}:secretsmanager:{region}:{account}:secret:{secret_name_prefix(prefix)}/*"
    )


def secret_policy_statements(prefix: str) -> list[dict[str, object]]:
    """IAM statements for the organizations' secrets: the actions on `secret_arn_pattern(prefix)`
    only, and the two listing actions (which take no resource)."""
    return [
        {
            "Sid": "OrganizationSecrets",
            "Effect": "Allow",
            "Action": list(SECRET_ACTIONS),
            "Resource": [secret_arn_pattern(prefix)],
        },
        {
            "Sid": "OrganizationSecretsListing",
            "Effect": "Allow",
            "Action": list(SECRET_LIST_ACTIONS),
            "Resource": "*",
        },
    ]


RECORDING_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject")
"""What the service does to recordings (`<org>/recordings/<id>.jsonl` in the results bucket);
listing them needs `s3:ListBucket` on the bucket itself."""


def _client(service: str, endpoint_url: str | None, region: str, session: Any = None) -> Any:
    """A boto3 client of `service`, from `session` (default: a new one; a session loads its
    endpoint and service data once, ~40 ms, so `bootstrap` makes its three clients from one)."""
    import boto3

    session = session or boto3.session.Session()
    kwargs: dict[str, Any] = {"endpoint_url": endpoint_url, "region_name": region}
    if endpoint_url and session.get_credentials() is None:
        # moto and LocalStack accept any key, but botocore refuses to sign without one.
        kwargs |= {"aws_access_key_id": "test", "aws_secret_access_key": "test"}
    return session.client(service, **kwargs)


def _error_code(exc: Exception) -> str:
    return getattr(exc, "response", {}).get("Error", {}).get("Code", "")


def ensure_queue(sqs: Any, name: str, attributes: dict[str, str]) -> str:
    """Create queue `name` with `attributes`, or set them on the existing queue; return its URL.

    One request when the queue is new, or exists with these attributes (SQS's CreateQueue then
    answers the existing queue's URL); three when it exists with others (`QueueAlreadyExists`:
    its URL, then the attributes set on it)."""
    from botocore.exceptions import ClientError

    try:
        return sqs.create_queue(QueueName=name, Attributes=attributes)["QueueUrl"]
    except ClientError as exc:  # there already, with other attributes
        if "Exist" not in _error_code(exc):
            raise
    url = sqs.get_queue_url(QueueName=name)["QueueUrl"]
    sqs.set_queue_attributes(QueueUrl=url, Attributes=attributes)
    return url


def ensure_tables(
    endpoint_url: str | None, region: str, prefix: str, *, session: Any = None
) -> list[str]:
    """Create every table of `tables.ALL_MODELS` that does not exist; return all table names.

    Points the PynamoDB models at this stack (`tables.configure`) as a side effect. Waits until
    each new table is ACTIVE: a table CreateTable already answers ACTIVE (moto, LocalStack) is
    not asked again. `session`: the boto3 session its client is made from (default: a new one).
    """
    from chalicelib.adapters import tables

    tables.configure(prefix=prefix, endpoint_url=endpoint_url, region=region)
    dynamodb = _client("dynamodb", endpoint_url, region, session)
    created: list[str] = []
    creating: list[str] = []
    for model in tables.ALL_MODELS:
        params = tables.create_table_params(model)
        try:
            answer = dynamodb.create_table(**params)
        except dynamodb.exceptions.ResourceInUseException:
            continue  # already there
        created.append(params["TableName"])
        if answer.get("TableDescription", {}).get("TableStatus") != "ACTIVE":
            creating.append(params["TableName"])
    if creating:
        waiter = dynamodb.get_waiter("table_exists")
        for name in creating:
            waiter.wait(TableName=name, WaiterConfig={"Delay": 1, "MaxAttempts": 120})
    for model in tables.ALL_MODELS:
        ttl = tables.ttl_attribute(model)
        if ttl and tables.table_name(model) in created:
            dynamodb.update_time_to_live(
                TableName=tables.table_name(model),
                TimeToLiveSpecification={"Enabled": True, "AttributeName": ttl},
            )
    return [tables.table_name(m) for m in tables.ALL_MODELS]


def ensure_bucket(
    endpoint_url: str | None, region: str, bucket: str = BUCKET_NAME, *, session: Any = None
) -> str:
    """Create the results bucket if this account does not own it yet; return its name.

    `session`: the boto3 session its client is made from (default: a new one). Raises
    `botocore.exceptions.ClientError` (`BucketAlreadyExists`) if another account owns the name
    (S3 bucket names are global on AWS).
    """
    s3 = _client("s3", endpoint_url, region, session)
    kwargs: dict[str, Any] = {"Bucket": bucket}
    if region != "us-east-1":  # us-east-1 refuses an explicit LocationConstraint
        kwargs["CreateBucketConfiguration"] = {"LocationConstraint": region}
    try:
        s3.create_bucket(**kwargs)
    except s3.exceptions.BucketAlreadyOwnedByYou:
        pass
    return bucket


def ensure_queues(
    endpoint_url: str | None,
    region: str,
    case_timeout_seconds: int,
    stack: names.StackNames = names.DEFAULT,
    *,
    session: Any = None,
) -> dict[str, str]:
    """Create every queue of `queue_specs` and its DLQ (RedrivePolicy); return URLs by queue
    name. `session`: the boto3 session its client is made from (default: a new one)."""
    sqs = _client("sqs", endpoint_url, region, session)
    urls: dict[str, str] = {}
    for spec in queue_specs(case_timeout_seconds, stack):
        dlq_url = ensure_queue(
            sqs,
            spec.dlq_name,
            {
                "MessageRetentionPeriod": str(spec.dlq_retention_seconds),
                "VisibilityTimeout": str(spec.dlq_visibility_timeout_seconds),
            },
        )
        dlq_arn = sqs.get_queue_attributes(QueueUrl=dlq_url, AttributeNames=["QueueArn"])[
            "Attributes"
        ]["QueueArn"]
        urls[spec.dlq_name] = dlq_url
        urls[spec.name] = ensure_queue(
            sqs,
            spec.name,
            {
                "VisibilityTimeout": str(spec.visibility_timeout_seconds),
                "RedrivePolicy": json.dumps(
                    {
                        "deadLetterTargetArn": dlq_arn,
                        "maxReceiveCount": spec.max_receive_count,
                    }
                ),
            },
        )
    return urls


def bootstrap(
    endpoint_url: str | None,
    region: str,
    prefix: str,
    case_timeout_seconds: int,
    *,
    bucket: str = "",
) -> dict[str, str]:
    """Create every table, queue (with its DLQ) and the bucket; safe to run again.

    Args:
        endpoint_url: moto server or LocalStack URL; None for AWS itself.
        region: AWS region name, e.g. `us-east-1`.
        prefix: the stack's resource prefix, e.g. `assay-`: it names every table and queue.
        case_timeout_seconds: bound on one case attempt; the case-tasks visibility timeout is
            `case_tasks_visibility_seconds(case_timeout_seconds)`.
        bucket: the results bucket (`ASSAY_RESULTS_BUCKET`); empty: `<prefix>results`.

    Returns:
        Queue URL by queue name, DLQs included (`{"assay-case-tasks": "http://...", ...}`).

    Raises:
        botocore.exceptions.ClientError: any refusal other than "already exists".
    """
    import boto3

    stack = names.StackNames(prefix, bucket)
    session = boto3.session.Session()
    table_names = ensure_tables(endpoint_url, region, prefix, session=session)
    urls = ensure_queues(endpoint_url, region, case_timeout_seconds, stack, session=session)
    ensure_bucket(endpoint_url, region, stack.results_bucket, session=session)
    log.info(
        "bootstrapped %d tables, %d queues, bucket %s at %s",
        len(table_names),
        len(urls),
        stack.results_bucket,
        endpoint_url or "AWS",
    )
    return urls
