"""`python -m infra [--endpoint-url URL] [--region R] [--prefix P] [--case-timeout-seconds N]`,
`python -m infra package --prefix P OUT_DIR` (both stacks of a deployment: the README's recipe),
`python -m infra cloudformation [--prefix P] [--bucket B] [--case-timeout-seconds N]`,
`python -m infra policy [--write]` (the Lambdas' IAM policy, `.chalice/policy.json`) and
`python -m infra gateway-responses build/sam.json` (API Gateway's own errors in the API's shape).

Without a command: creates every table, queue and the bucket (idempotent) against an endpoint
and prints the queue URLs as JSON. `cloudformation`: prints the CloudFormation template of the
same resources. `package`: `chalice package` for one prefix, with the data stack beside it
(`infra.package`). Defaults come from the same settings the app reads (`AWS_ENDPOINT_URL`,
`AWS_DEFAULT_REGION`, `ASSAY_RESOURCE_PREFIX`, `ASSAY_RESULTS_BUCKET`,
`EVALUATION_CASE_TIMEOUT_SECONDS`).
"""

from __future__ import annotations

import argparse
import json
import logging
import sys

from chalicelib.config import get_settings


def cloudformation_main(argv: list[str]) -> int:
    """`python -m infra cloudformation ...`: print the template as JSON; returns the exit status."""
    from infra.cloudformation import template

    settings = get_settings()
    parser = argparse.ArgumentParser(
        prog="python -m infra cloudformation",
        description="Print the CloudFormation template (JSON) of "
        "assay's tables, queues and bucket.",
    )
    parser.add_argument(
        "--prefix",
        default=settings.assay_resource_prefix,
        help="resource prefix: names every table, queue and (by default) the bucket",
    )
    parser.add_argument(
        "--bucket",
        default=settings.assay_results_bucket,
        help="results bucket (default <prefix>results-<account id>)",
    )
    parser.add_argument(
        "--case-timeout-seconds", type=int, default=settings.evaluation_case_timeout_seconds
    )
    args = parser.parse_args(argv)
    try:
        tpl = template(args.prefix, args.case_timeout_seconds, args.bucket)
    except ValueError as exc:
        parser.error(str(exc))
    json.dump(tpl, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


def main(argv: list[str] | None = None) -> int:
    """Parse `argv`, bootstrap, print `{queue name: url}`; returns the exit status."""
    argv = sys.argv[1:] if argv is None else argv
    if argv[:1] == ["cloudformation"]:
        return cloudformation_main(argv[1:])
    if argv[:1] == ["package"]:
        from infra.package import main as package_main

        return package_main(argv[1:])
    if argv[:1] == ["policy"]:
        from infra.policy import main as policy_main

        return policy_main(argv[1:])
    if argv[:1] == ["gateway-responses"]:
        from infra.gateway import main as gateway_main

        return gateway_main(argv[1:])
    from infra.resources import bootstrap

    settings = get_settings()
    parser = argparse.ArgumentParser(
        prog="python -m infra",
        description=__doc__.splitlines()[0],
        epilog="`python -m infra cloudformation --help`: the CloudFormation template instead; "
        "`policy --help`: the IAM policy; `gateway-responses --help`: API Gateway's error answers.",
    )
    parser.add_argument(
        "--endpoint-url",
        default=settings.aws_endpoint_url,
        help="moto server or LocalStack URL; omit for AWS itself",
    )
    parser.add_argument("--region", default=settings.aws_default_region)
    parser.add_argument(
        "--prefix",
        default=settings.assay_resource_prefix,
        help="resource prefix: names every table, queue and (by default) the bucket",
    )
    parser.add_argument(
        "--bucket",
        default=settings.assay_results_bucket,
        help="results bucket (default <prefix>results)",
    )
    parser.add_argument(
        "--case-timeout-seconds", type=int, default=settings.evaluation_case_timeout_seconds
    )
    args = parser.parse_args(argv)
    logging.basicConfig(level=logging.INFO, format="%(message)s")
    urls = bootstrap(
        args.endpoint_url or None,
        args.region,
        args.prefix,
        args.case_timeout_seconds,
        bucket=args.bucket,
    )
    json.dump(urls, sys.stdout, indent=2)
    sys.stdout.write("\n")
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
