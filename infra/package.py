"""Both stacks of one deployment, from one prefix (issue 13): `python -m infra package OUT_DIR`.

    python -m infra package build/ --prefix staging- [--stage dev] [--bucket NAME]
        [--jwt-secret-parameter /staging/jwt-secret] [--email-sender ops@example.com]
        [--lambda-prefix staging-agent-] [--case-timeout-seconds 600] [--env NAME=VALUE ...]

writes `OUT_DIR/data.json` (tables, queues with DLQs, the results bucket: deploy it first) and
`OUT_DIR/sam.json` + `OUT_DIR/deployment.zip` (API Gateway and the Lambdas), named by the same
`infra.deployment.Deployment`, so nothing is edited by hand and two prefixes share nothing:

1. `chalice package --stage STAGE OUT_DIR`, with `ASSAY_RESOURCE_PREFIX` set for it: the worker
   modules name their queues from the settings as `app.py` is imported, so the SQS event sources
   are the stack's own queues;
2. `retarget()` on its `sam.json`: every function's environment (`Deployment.variables`: the
   prefix, the bucket, the signing secret's SSM parameter...), every role's policy (`infra.policy`
   for this deployment, instead of the default stack's `.chalice/policy.json`), the case worker's
   timeout (the case timeout + 60 s, under its queue's visibility), and API Gateway's own errors
   in the API's shape (`infra.gateway`);
3. `infra.cloudformation.data_stack()` as `data.json`.

A name that holds `${AWS::AccountId}` (the default bucket) is an `Fn::Sub`: CloudFormation fills
the account in, in both stacks alike.
"""

from __future__ import annotations

import argparse
import json
import os
import subprocess
import sys
from pathlib import Path
from typing import Any

from infra.deployment import (
    DEFAULT_CASE_TIMEOUT_SECONDS,
    Deployment,
    sub,
)

ROOT = Path(__file__).resolve().parents[1]
CASE_WORKER_MARGIN_SECONDS = 60
"""The case worker's Lambda timeout over the case timeout (docs/guides/deploy.md); its queue's
visibility is the case timeout + 120 s."""


def _sqs_queue(event: dict[str, Any]) -> str | None:
    """The queue name an `SQS` event source of a SAM function names (Chalice writes
    `{"Fn::Sub": "arn:...:${AWS::AccountId}:<name>"}`), or None for another event type."""
    if event.get("Type") != "SQS":
        return None
    queue = event.get("Properties", {}).get("Queue")
    text = queue.get("Fn::Sub") if isinstance(queue, dict) else queue
    return str(text).rsplit(":", 1)[-1] if text else None


def functions(template: dict[str, Any]) -> dict[str, dict[str, Any]]:
    """The template's `AWS::Serverless::Function` resources by logical id."""
    return {
        k: v
        for k, v in template.get("Resources", {}).items()
        if v.get("Type") == "AWS::Serverless::Function"
    }


def retarget(template: dict[str, Any], deployment: Deployment) -> dict[str, Any]:
    """`template` (the `sam.json` `chalice package` wrote) made `deployment`'s, in place.

    Returns:
        The template.
    Raises:
        ValueError: a function's SQS event source names a queue that is not the deployment's (the
            app was packaged for another prefix), or an SQS-triggered function could outlive its
            queue's visibility timeout; or there is no `RestAPI` (`infra.gateway`).
    """
    from infra.gateway import add_gateway_responses
    from infra.policy import policy
    from infra.resources import queue_specs

    stack = deployment.names
    visibility = {
        name: seconds
        for spec in queue_specs(deployment.case_timeout_seconds, stack)
        for name, seconds in (
            (spec.name, spec.visibility_timeout_seconds),
            (spec.dlq_name, spec.dlq_visibility_timeout_seconds),
        )
    }
    variables = sub(deployment.variables())
    for logical_id, function in functions(template).items():
        props = function.setdefault("Properties", {})
        props.setdefault("Environment", {}).setdefault("Variables", {}).update(variables)
        for event in props.get("Events", {}).values():
            queue = _sqs_queue(event)
            if queue is None:
                continue
            if queue not in visibility:
                raise ValueError(
                    f"{logical_id} is triggered by queue {queue!r}, which is not one of this "
                    f"deployment's ({', '.join(stack.queues)}): package with "
                    f"ASSAY_RESOURCE_PREFIX={deployment.prefix} (python -m infra package does)"
                )
            if queue == stack.case_tasks_queue:
                props["Timeout"] = deployment.case_timeout_seconds + CASE_WORKER_MARGIN_SECONDS
            if int(props.get("Timeout", 3)) > visibility[queue]:
                raise ValueError(
                    f"{logical_id} may run {props['Timeout']} s, longer than queue {queue!r} hides "
                    f"a message ({visibility[queue]} s): lower its lambda_timeout"
                )
    document = sub(
        policy(
            deployment.prefix,
            deployment.agent_functions,
            bucket=deployment.bucket_name,
            jwt_secret_parameter=deployment.parameter,
        )
    )
    for resource in template.get("Resources", {}).values():
        if resource.get("Type") == "AWS::IAM::Role":
            for attached in resource.get("Properties", {}).get("Policies", []):
                attached["PolicyDocument"] = document
    add_gateway_responses(template)
    return template


def chalice_package(out_dir: Path, deployment: Deployment, stage: str) -> None:
    """Run `chalice package --stage STAGE OUT_DIR` for `deployment`'s prefix.

    Raises:
        RuntimeError: chalice failed (its output is in the message).
    """
    env = {k: v for k, v in os.environ.items() if not k.startswith(("AWS_LAMBDA", "_HANDLER"))}
    env.setdefault("AWS_DEFAULT_REGION", "us-east-1")  # chalice package refuses to run without one
    env["ASSAY_RESOURCE_PREFIX"] = deployment.prefix
    env["EVALUATION_CASE_TIMEOUT_SECONDS"] = str(deployment.case_timeout_seconds)
    env.pop("ASSAY_RESULTS_BUCKET", None)  # the stage's comes from the template
    done = subprocess.run(
        [sys.executable, "-c", "import sys; from chalice.cli import main; sys.exit(main())"]
        + ["package", "--stage", stage, str(out_dir)],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    if done.returncode != 0:
        raise RuntimeError(f"chalice package failed:\n{done.stdout}{done.stderr}")


def package(out_dir: Path, deployment: Deployment, stage: str = "dev") -> dict[str, Path]:
    """Write both stacks of `deployment` into `out_dir` (see the module's doc).

    Returns:
        `{"data": data.json, "app": sam.json, "code": deployment.zip}`.
    Raises:
        RuntimeError: `chalice package` failed; ValueError: see `retarget`.
    """
    from infra.cloudformation import data_stack

    out_dir.mkdir(parents=True, exist_ok=True)
    chalice_package(out_dir, deployment, stage)
    app = out_dir / "sam.json"
    app.write_text(json.dumps(retarget(json.loads(app.read_text()), deployment), indent=2) + "\n")
    data = out_dir / "data.json"
    data.write_text(json.dumps(data_stack(deployment), indent=2) + "\n")
    return {"data": data, "app": app, "code": out_dir / "deployment.zip"}


def _pair(text: str) -> tuple[str, str]:
    name, sep, value = text.partition("=")
    if not sep or not name:
        raise argparse.ArgumentTypeError(f"expected NAME=VALUE, got {text!r}")
    return name, value


def main(argv: list[str]) -> int:
    """`python -m infra package ...`; returns the exit status."""
    from chalicelib.config import get_settings

    settings = get_settings()
    parser = argparse.ArgumentParser(
        prog="python -m infra package", description=__doc__.splitlines()[0]
    )
    parser.add_argument("out_dir", type=Path, help="where data.json, sam.json and the zip go")
    parser.add_argument(
        "--prefix",
        default=settings.assay_resource_prefix,
        help="names every table, queue, the bucket and the policy's resources (default assay-)",
    )
    parser.add_argument("--stage", default="dev", help="the Chalice stage (.chalice/config.json)")
    parser.add_argument(
        "--bucket", default="", help="results bucket (default <prefix>results-<account id>)"
    )
    parser.add_argument(
        "--jwt-secret-parameter",
        default=None,
        help="SSM SecureString holding the token signing secret (default /<root>/jwt-secret; "
        "'' for none: an identity provider through --env)",
    )
    parser.add_argument("--email-sender", default="", help="SES-verified sender of owner notices")
    parser.add_argument(
        "--lambda-prefix",
        default=None,
        help="the functions `lambda` agents may be (default <prefix>agent-; '' for none)",
    )
    parser.add_argument("--case-timeout-seconds", type=int, default=DEFAULT_CASE_TIMEOUT_SECONDS)
    parser.add_argument(
        "--env",
        type=_pair,
        action="append",
        default=[],
        metavar="NAME=VALUE",
        help="another stage variable, e.g. ASSAY_OIDC_JWKS_URL=... (repeatable)",
    )
    args = parser.parse_args(argv)
    try:
        deployment = Deployment(
            prefix=args.prefix,
            bucket=args.bucket,
            case_timeout_seconds=args.case_timeout_seconds,
            lambda_prefix=args.lambda_prefix,
            jwt_secret_parameter=args.jwt_secret_parameter,
            email_sender=args.email_sender,
            environment=tuple(args.env),
        )
        written = package(args.out_dir, deployment, args.stage)
    except (ValueError, RuntimeError) as exc:
        print(f"python -m infra package: {exc}", file=sys.stderr)
        return 1
    print(
        f"{written['data']}: the data stack ({deployment.prefix}* tables, queues, bucket "
        f"{deployment.bucket_name})"
    )
    print(f"{written['app']} + {written['code'].name}: the app stack (API Gateway, the Lambdas)")
    if deployment.parameter:
        print(f"the Lambdas read the signing secret from the SSM parameter {deployment.parameter}")
    return 0
