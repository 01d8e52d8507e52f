"""The IAM policy of assay's Lambdas (`.chalice/policy.json`), generated from the same definitions
as the resources it covers.

`chalice gen-policy` misses every PynamoDB call, so the policy is ours
(`autogen_policy: false`), and it is generated here rather than written by hand, from the one
prefix that names the stack's resources (`infra.deployment`): tables (`<prefix>*`), the queues of
`resources.queue_specs`, the results bucket, the organizations' secrets
(`resources.secret_policy_statements`), the SSM parameter of the signing secret, and
`lambda:InvokeFunction` on
`function:<ASSAY_LAMBDA_FUNCTION_PREFIX>*` alone - never `function:*`, which would let any tenant's
`lambda` agent invoke every function of the account. A unit test checks that the committed file
is what `policy()` gives: the default stack's, as plain `chalice package` uses it;
`python -m infra package` puts the policy of its own deployment on every role it packages.

    python -m infra policy [--prefix assay-] [--lambda-prefix assay-agent-] [--write]
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from chalicelib import names
from infra.resources import secret_policy_statements

POLICY_FILE = Path(__file__).resolve().parents[1] / ".chalice" / "policy.json"

DYNAMODB_ITEM_ACTIONS = (
    "dynamodb:GetItem",
    "dynamodb:BatchGetItem",
    "dynamodb:PutItem",
    "dynamodb:UpdateItem",
    "dynamodb:DeleteItem",
    "dynamodb:ConditionCheckItem",
    "dynamodb:BatchWriteItem",
    "dynamodb:Query",
    "dynamodb:DescribeTable",
)
"""Every call the stores make (TransactWriteItems has no action of its own: each part needs its
single-item action). Never `Scan`."""
SQS_ACTIONS = (
    "sqs:SendMessage",
    "sqs:ReceiveMessage",
    "sqs:DeleteMessage",
    "sqs:ChangeMessageVisibility",
    "sqs:GetQueueUrl",
    "sqs:GetQueueAttributes",
)
"""The workers' sends and visibility extensions, and what Lambda's SQS event source mapping does
with the function's role."""
BUCKET_OBJECT_ACTIONS = ("s3:GetObject", "s3:PutObject", "s3:DeleteObject")
"""Large answers and the organizations' recordings (HeadObject needs GetObject)."""


def parameter_arn(name: str) -> str:
    """The ARN pattern of SSM parameter `name` (`/assay/jwt-secret` ->
    `arn:*:ssm:*:*:parameter/assay/jwt-secret`)."""
    return f"arn:*:ssm:*:*:parameter/{name.lstrip('/')}"


def policy(
    prefix: str = names.DEFAULT_PREFIX,
    lambda_prefix: str = "assay-agent-",
    *,
    bucket: str = "",
    jwt_secret_parameter: str = "",
) -> dict[str, Any]:
    """The policy document as a JSON-ready dict.

    Args:
        prefix: the stack's resource prefix (`ASSAY_RESOURCE_PREFIX`): tables `<prefix>*`, queues
            `<prefix>case-tasks`..., secrets `<prefix without '-'>/*`.
        lambda_prefix: `ASSAY_LAMBDA_FUNCTION_PREFIX`; the only functions `lambda` agents may be.
            Empty: no function may be invoked (no statement at all).
        bucket: the results bucket (`ASSAY_RESULTS_BUCKET`); empty: `<prefix>results`. It may hold
            `${AWS::AccountId}` (`infra.deployment.sub` it in a template).
        jwt_secret_parameter: the SSM parameter the signing secret is read from
            (`ASSAY_JWT_SECRET_PARAMETER`); empty: none, and no SSM statement.
    """
    stack = names.StackNames(prefix, bucket)
    bucket_name = stack.results_bucket
    statements: list[dict[str, Any]] = [
        {
            "Sid": "TablesItemsAndTransactWriteItemsParts",
            "Effect": "Allow",
            "Action": list(DYNAMODB_ITEM_ACTIONS),
            "Resource": [f"arn:*:dynamodb:*:*:table/{prefix}*"],
        },
        {
            "Sid": "TableIndexesQuery",
            "Effect": "Allow",
            "Action": ["dynamodb:Query"],
            "Resource": [f"arn:*:dynamodb:*:*:table/{prefix}*/index/*"],
        },
        {
            "Sid": "QueuesSendReceiveAndEventSourceMappings",
            "Effect": "Allow",
            "Action": list(SQS_ACTIONS),
            "Resource": [f"arn:*:sqs:*:*:{q}" for q in stack.queues],
        },
        {
            "Sid": "ResultsBucketObjects",
            "Effect": "Allow",
            "Action": list(BUCKET_OBJECT_ACTIONS),
            "Resource": [f"arn:*:s3:::{bucket_name}/*"],
        },
        {
            "Sid": "ResultsBucketListing",
            "Effect": "Allow",
            "Action": ["s3:ListBucket"],
            "Resource": [f"arn:*:s3:::{bucket_name}"],
        },
    ]
    if lambda_prefix:
        statements.append(
            {
                "Sid": "LambdaAgentRuntime",
                "Effect": "Allow",
                "Action": ["lambda:InvokeFunction"],
                "Resource": [f"arn:*:lambda:*:*:function:{lambda_prefix}*"],
            }
        )
    statements += secret_policy_statements(prefix)
    if jwt_secret_parameter:
        statements.append(
            {
                "Sid": "StageSigningSecretParameter",
                "Effect": "Allow",
                "Action": ["ssm:GetParameter"],
                "Resource": [parameter_arn(jwt_secret_parameter)],
            }
        )
    statements += [
        {
            "Sid": "Logs",
            "Effect": "Allow",
            "Action": ["logs:CreateLogGroup", "logs:CreateLogStream", "logs:PutLogEvents"],
            "Resource": ["arn:*:logs:*:*:*"],
        },
        {
            "Sid": "OwnerNoticesByEmail",
            "Effect": "Allow",
            "Action": ["ses:SendEmail"],
            "Resource": ["*"],
        },
    ]
    return {"Version": "2012-10-17", "Statement": statements}


def render(document: dict[str, Any]) -> str:
    """The file's text: 2-space JSON with a final newline."""
    return json.dumps(document, indent=2) + "\n"


def main(argv: list[str]) -> int:
    """`python -m infra policy ...`: print the policy, or `--write` it to `.chalice/policy.json`."""
    import argparse

    from chalicelib.config import get_settings

    settings = get_settings()
    parser = argparse.ArgumentParser(
        prog="python -m infra policy", description=__doc__.splitlines()[0]
    )
    parser.add_argument("--prefix", default=settings.assay_resource_prefix, help="resource prefix")
    parser.add_argument(
        "--lambda-prefix",
        default=settings.assay_lambda_function_prefix,
        help="the only function-name prefix `lambda` agents may invoke",
    )
    parser.add_argument(
        "--bucket", default=settings.assay_results_bucket, help="default <prefix>results"
    )
    parser.add_argument(
        "--jwt-secret-parameter",
        default=settings.assay_jwt_secret_parameter,
        help="the SSM parameter of the signing secret (default: none)",
    )
    parser.add_argument(
        "--write", action="store_true", help=f"write {POLICY_FILE} instead of printing"
    )
    args = parser.parse_args(argv)
    document = policy(
        args.prefix,
        args.lambda_prefix,
        bucket=args.bucket,
        jwt_secret_parameter=args.jwt_secret_parameter,
    )
    text = render(document)
    if args.write:
        POLICY_FILE.write_text(text)
    else:
        print(text, end="")
    return 0
