"""The `assay` command: demo, dev, import, summaries, secrets, recordings, bench, token, and the API
commands of `assay.commands` (run, gate, watch, estimate, cancel, cases, comparison, export,
suites, promote, whoami, members, keys).

`demo` (`assay_local.cli_demo`) and `dev` (`assay_local.cli_dev`) start the embedded stack
(moto's server on 127.0.0.1, the routes over HTTP, a poller per queue handler, the schedules).
The other commands (`assay_local.cli_remote`) talk to a running assay over HTTP (`--url`, default
`$ASSAY_URL`, and `--token`, default `$ASSAY_TOKEN`). This module is the parser and `main`.
"""

from __future__ import annotations

import argparse
import sys
from typing import NoReturn

from assay.client import ApiError, ApiUnreachable
from assay.commands import UsageError
from assay_local import cli_import
from assay_local.cli_common import DEFAULT_ORG, DEFAULT_USER, parse_ttl
from assay_local.cli_demo import cmd_demo
from assay_local.cli_dev import cmd_dev, port
from assay_local.cli_import import cmd_import
from assay_local.cli_remote import (
    cmd_bench,
    cmd_recordings,
    cmd_secrets,
    cmd_summaries,
    cmd_token,
)
from assay_local.extras import STACK_COMMANDS, require_local_stack


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error exiting 3 (an error, `assay.gate`) instead of 2: a pipeline
    that lets "inconclusive" (2) through must not pass a mistyped flag."""

    def error(self, message: str) -> NoReturn:
        from assay.text import did_you_mean

        self.print_usage(sys.stderr)
        self.exit(3, f"{self.prog}: error: {did_you_mean(message)}\n")


SETTINGS_COMMANDS = (*STACK_COMMANDS, "token")
"""The `assay` commands that read assay's settings (`chalicelib.config.Settings`) from the
environment: a bad one refuses them before they start (`settings_refusal`)."""


def run_concurrency(text: str) -> int:
    """`assay bench --concurrency`: a whole number the setting it sets, `EVAL_RUN_CONCURRENCY`,
    takes (1-100). Raises `argparse.ArgumentTypeError` naming the bounds."""
    from chalicelib.config import Settings

    field = Settings.model_fields["eval_run_concurrency"]
    low = next(m.ge for m in field.metadata if getattr(m, "ge", None) is not None)
    high = next(m.le for m in field.metadata if getattr(m, "le", None) is not None)
    if not text.strip().isdigit() or not low <= int(text) <= high:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a concurrency EVAL_RUN_CONCURRENCY takes: give {low}-{high}"
        )
    return int(text)


def settings_refusal() -> str | None:
    """None when the environment's settings validate; else one line naming each bad one by its
    variable, its value and the rule (`EVAL_RERUNS=9: must be 0-5`)."""
    from pydantic import ValidationError

    from chalicelib.config import Settings, settings_error_line

    try:
        Settings()
    except ValidationError as exc:
        return settings_error_line(exc)
    return None


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="assay", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="the embedded stack and a real eval run on GSM8K")
    p.add_argument("--limit", type=int, default=None, help="cases to import (default: all 1,319)")
    p.add_argument(
        "--latency-ms", type=float, default=20.0, help="simulated agent latency per answer"
    )
    p.add_argument(
        "--data-dir", default=None, help="folder with test.jsonl and example_model_solutions.jsonl"
    )
    p.add_argument("--workers", type=int, default=8, help="threads polling the case-task queue")
    p.add_argument(
        "--serve", action="store_true", help="keep the stack and its console up after the demo"
    )
    p.set_defaults(func=cmd_demo)

    from assay_local.devstate import DEFAULT_API_PORT, DEFAULT_DATA_DIR, LOCALSTACK_ENDPOINT

    p = sub.add_parser(
        "dev",
        help="run the embedded stack until Ctrl-C and print a token; its state is kept in a data "
        "folder across restarts",
    )
    p.add_argument("--workers", type=int, default=8, help="threads polling the case-task queue")
    p.add_argument(
        "--port",
        type=port,
        default=DEFAULT_API_PORT,
        help=f"the API's port on 127.0.0.1 (default {DEFAULT_API_PORT}; 0: any free port)",
    )
    p.add_argument(
        "--aws-port",
        type=port,
        default=None,
        help="moto's port on 127.0.0.1 (default: the API's port + 1)",
    )
    p.add_argument(
        "--data",
        default=str(DEFAULT_DATA_DIR),
        help=f"the folder the state is kept in (default {DEFAULT_DATA_DIR} under the current "
        "directory)",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="start empty (the previous state is kept as moto-state.old in the data folder)",
    )
    p.add_argument(
        "--localstack",
        action="store_true",
        help="use LocalStack (localstack-compose.yml) at --endpoint, default "
        f"{LOCALSTACK_ENDPOINT}",
    )
    p.add_argument(
        "--endpoint",
        default=None,
        help="an AWS endpoint to use instead of the embedded moto (default $AWS_ENDPOINT_URL)",
    )
    p.set_defaults(func=cmd_dev)

    def remote(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--url", default=None, help="assay's API (default $ASSAY_URL; `assay dev` prints it)"
        )
        p.add_argument("--token", default=None, help="a bearer token (default $ASSAY_TOKEN)")

    from assay import commands

    commands.register(sub)  # run, gate, watch, estimate, cancel, cases, comparison, export, ...

    p = sub.add_parser(
        "import",
        help="add a dataset version from a JSONL, CSV, GSM8K, promptfoo or Inspect file",
    )
    remote(p)
    cli_import.add_arguments(p)
    p.set_defaults(func=cmd_import)

    p = sub.add_parser(
        "summaries", help="verdicts for agent versions (AGENT@VERSION or AGENT@draft)"
    )
    remote(p)
    p.add_argument("agent_versions", nargs="+")
    p.add_argument("--json", action="store_true", help="print the API's answer as JSON")
    p.set_defaults(func=cmd_summaries)

    p = sub.add_parser(
        "secrets", help="the organization's secrets: set, list, delete (values are write-only)"
    )
    secrets = p.add_subparsers(dest="action", required=True)
    q = secrets.add_parser("set", help="create or replace a secret")
    remote(q)
    q.add_argument("name", help="the secret's name, e.g. openai (letters, digits, '_', '.', '-')")
    source = q.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from-env", metavar="VAR", help="copy the value of this variable of your shell"
    )
    source.add_argument(
        "--value-stdin", action="store_true", help="read the value from standard input"
    )
    q = secrets.add_parser("list", help="names and when each changed")
    remote(q)
    q = secrets.add_parser("delete", help="delete a secret at once")
    remote(q)
    q.add_argument("name")
    p.set_defaults(func=cmd_secrets)

    p = sub.add_parser(
        "recordings", help="the organization's recordings: upload, from-run, list, delete"
    )
    recordings = p.add_subparsers(dest="action", required=True)
    q = recordings.add_parser(
        "upload", help="upload a JSONL recording ({case_id, input?, answer} per line)"
    )
    remote(q)
    q.add_argument("file")
    q.add_argument(
        "--id", default=None, help="its recording_id (default: derived from the content)"
    )
    q = recordings.add_parser(
        "from-run",
        help="make a recording of a completed run's first answers and tool calls",
    )
    remote(q)
    q.add_argument("run_id")
    q.add_argument("--recording-id", required=True, help="the new recording's id")
    q.add_argument("--arm", default=None, help="the run's arm to record (default: candidate)")
    q = recordings.add_parser("list", help="the organization's recordings")
    remote(q)
    q = recordings.add_parser("delete", help="delete a recording for good")
    remote(q)
    q.add_argument("recording_id")
    p.set_defaults(func=cmd_recordings)

    p = sub.add_parser(
        "token",
        help="print a bearer token signed with the configured secret (ASSAY_JWT_SECRET)",
        description="Print a bearer token for USER of ORG, signed with ASSAY_JWT_SECRET. What it "
        "may do is the user's membership, read on every request, never the token: the first "
        "token used in an organization that has no member yet makes its user that "
        "organization's admin; anybody else is a person of no role there until an admin adds "
        "them (assay members add USER --role R).",
        epilog="examples:\n"
        "  assay token                                      # dev@assay.local of org_default\n"
        "  assay token --org acme --user you@acme.com       # first use: you are acme's admin\n"
        "  assay members add ana@acme.com --role runner     # (as acme's admin) then:\n"
        "  ASSAY_TOKEN=$(assay token --org acme --user ana@acme.com --ttl 30m) assay whoami",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--org", default=DEFAULT_ORG, help=f"the organization (default {DEFAULT_ORG})")
    p.add_argument(
        "--user",
        default=DEFAULT_USER,
        help=f"the user, the token's sub (default {DEFAULT_USER}); the first to sign in to a new "
        "organization becomes its admin",
    )
    p.add_argument(
        "--ttl",
        type=parse_ttl,
        default=None,
        help=(
            "how long it is valid: seconds, or e.g. 30m, 12h (default ASSAY_TOKEN_TTL_SECONDS, 8 h)"
        ),
    )
    p.set_defaults(func=cmd_token)

    p = sub.add_parser("bench", help="the pipeline benchmark (bench/pipeline.py)")
    p.add_argument("--cases", type=int, default=500, help="cases in the run")
    p.add_argument("--sleep-ms", type=float, default=200, help="the agent's latency per case")
    p.add_argument(
        "--concurrency", type=run_concurrency, default=6, help="EVAL_RUN_CONCURRENCY (1-100)"
    )
    p.set_defaults(func=cmd_bench)

    args = parser.parse_args(argv)
    if args.command in STACK_COMMANDS:
        require_local_stack(args.command)
    if args.command in SETTINGS_COMMANDS:
        refused = settings_refusal()
        if refused:
            print(f"assay {args.command}: {refused}", file=sys.stderr)
            return 2  # cannot start (docs/guides/local-stack.md)
    try:
        return int(args.func(args))
    except (ApiError, ApiUnreachable, UsageError, OSError) as exc:
        from assay.cli_common import error_line

        said, _ = error_line(exc)  # with the fix `assay.hints` knows, if it knows one
        print(f"assay: {said}", file=sys.stderr)
        return 3  # an error: `assay.gate`'s exit codes


if __name__ == "__main__":
    sys.exit(main())
