"""`assay dev`: the embedded stack until Ctrl-C, its state kept across restarts."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path

from assay_local.cli_common import DEFAULT_ORG, DEFAULT_USER, dev_token, quiet_logs


def port(text: str) -> int:
    """A TCP port for `assay dev`: 0 (any free port) to 65535. Raises
    `argparse.ArgumentTypeError`."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535; 0: any free port)")
    return int(text)


def cmd_dev(args: argparse.Namespace) -> int:
    """`assay dev`: the embedded stack until Ctrl-C or SIGTERM, on stable ports, its state kept
    in a data folder across restarts (issue 13 scope 4; `assay_local.devstate`). Exit status 0,
    or 2 with one line on stderr when it cannot start (1 when the last save failed)."""
    import signal

    from assay_local import devstate

    quiet_logs()
    data = Path(args.data)

    def waiting() -> None:
        print(f"assay dev: waiting for the last assay dev to finish saving {data}…", flush=True)

    try:
        session = devstate.start(
            data=data,
            port=args.port,
            aws_port=args.aws_port,
            fresh=args.fresh,
            localstack=args.localstack,
            endpoint=args.endpoint,
            workers=args.workers,
            on_wait=waiting,
        )
    except devstate.DevError as exc:
        print(f"assay dev: {exc}", file=sys.stderr)
        return 2
    stack = session.stack
    if session.endpoint is not None:
        print(
            f"assay dev: AWS at {session.endpoint} (it keeps its own state); the signing "
            f"secret in {data}"
        )
    elif session.discarded is not None:
        print(
            f"assay dev: --fresh: starting empty; the previous state is kept as {session.discarded}"
        )
    elif args.fresh:
        print(f"assay dev: --fresh: starting empty (there was no saved state in {data})")
    elif session.restored is not None:
        print(f"assay dev: state in {data}, restored (saved {session.restored.get('saved_at')})")
    else:
        print(f"assay dev: state in {data} (new: nothing saved there yet)")
    kind = "moto" if session.endpoint is None else "external"
    print(f"assay dev: API on {stack.api_url}, AWS ({kind}) on {stack.endpoint_url}")
    print(f"export ASSAY_URL={stack.api_url}")
    try:
        token = dev_token()
        print(f"export ASSAY_TOKEN={token}")
        # the fragment signs the browser in; it never reaches a server or a log
        print(f"assay dev: console on {stack.api_url}/#token={token}")
    except ValueError as exc:  # ASSAY_JWT_SECRET="" turns HS256 off: no token to sign
        print(f"# no token: {exc}")
    if not session.secret_from_env:
        # Where it is, not what it is: the value stays out of terminals and logs.
        secret_file = (data / devstate.SECRET_FILE).resolve()
        print(f'export ASSAY_JWT_SECRET="$(cat {secret_file})"')
    print(
        f"# the token is for organization {DEFAULT_ORG}, user {DEFAULT_USER}, valid "
        f"{stack.settings.assay_token_ttl_seconds // 3600} h (`assay token --ttl 12h` signs "
        "another with ASSAY_JWT_SECRET, kept in the data folder); to reach the queues with boto3 "
        "or the aws CLI:"
    )
    print(
        f"export AWS_ENDPOINT_URL={stack.endpoint_url} "
        f"AWS_DEFAULT_REGION={stack.settings.aws_default_region} AWS_ACCESS_KEY_ID=testing "
        "AWS_SECRET_ACCESS_KEY=testing"
    )
    if session.endpoint is None:
        print(f"# Ctrl-C stops and saves the state in {data} (`assay dev --fresh` starts empty)")
    else:
        print("# Ctrl-C stops", flush=True)
    sys.stdout.flush()

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    running = session.running_cases()
    if running:
        print(
            f"assay dev: stopping: letting {running} running case(s) finish (Ctrl-C again stops "
            "at once; those come back when their message's visibility lapses)",
            flush=True,
        )
    if stack.queues_outlive_it:
        # Its queues outlive it: a long poll left behind would hide the next message sent there.
        print(
            f"assay dev: stopping: waiting up to {stack.poll_wait_seconds} s for the queue "
            "receives in flight to return",
            flush=True,
        )
    try:
        # A case may take up to its timeout; each finished one queues its lane's next task,
        # which the next start delivers.
        said = session.stop(grace_s=stack.settings.evaluation_case_timeout_seconds)
    except KeyboardInterrupt:
        print(f"assay dev: stopped at once; moto saves its state in {data} as it exits")
        return 0
    if said and "error" in said:
        print(f"assay dev: {said['error']}", file=sys.stderr)
        return 1
    if said and "saved" in said:
        print(f"assay dev: stopped; state saved in {said['saved']} ({said['bytes']:,} bytes)")
    elif said:
        print(f"assay dev: stopped; state in {said['unchanged']} (saved already)")
    return 0
