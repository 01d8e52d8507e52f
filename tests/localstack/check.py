"""`make test-localstack`: assay on LocalStack run on this machine without Docker, measured against
the embedded moto (docs/guides/local-stack.md, "LocalStack without Docker").

Optional, and never part of `make test` or CI: it needs LocalStack installed by
`tests/localstack/install.sh` (which the make target runs first). In order, each step failing the
whole with one line saying which:

1. LocalStack starts on a free port of 127.0.0.1 (its own process group, a fresh in-memory
   state; every outbound HTTP request it might try goes to a dead proxy on 127.0.0.1, so it can
   reach nothing else) and says every service assay uses is available.
2. The end-to-end smoke tests (`tests/e2e/test_smoke.py`) pass with `AWS_ENDPOINT_URL` on it.
3. `assay dev --endpoint` on it, stopped while its pollers long-poll, leaves no receive behind:
   a message sent to the case-task queue right after the stop is received at once.
4. `assay demo --limit N` (default 100) runs on it and on the embedded moto, and the figures
   they print (`demo_figures`: each version's passes, verdicts, guard outcomes, comparisons'
   counts and summaries; not the timings or ids) are the same.

Exit status 0 when all hold, 1 otherwise. `python -m tests.localstack.check --limit 40`.
"""

from __future__ import annotations

import argparse
import json
import os
import re
import signal
import socket
import subprocess
import sys
import time
import urllib.request
import uuid
from collections.abc import Iterator
from contextlib import contextmanager
from pathlib import Path
from typing import Any

REPO = Path(__file__).resolve().parents[2]
ROOT = REPO / ".localstack"
SERVICES = "dynamodb,sqs,s3,secretsmanager,ssm,ses,lambda"
"""What `localstack-compose.yml` starts: every service assay builds a client for."""
USED = ("dynamodb", "sqs", "s3", "secretsmanager", "ssm", "ses")
"""The services the stack uses as it starts and runs (`lambda` only invokes `lambda` agents)."""
DEAD_PROXY = "http://127.0.0.1:9"
"""Where LocalStack's own outbound HTTP goes: nothing listens there, so it reaches nothing."""
START_GUARD_S = 180.0
"""How long LocalStack may take to say it is ready: a hang guard, not a measure."""


class CheckFailed(Exception):
    """A step did not hold; the message is one line saying which and why."""


def say(text: str) -> None:
    print(f"test-localstack: {text}", flush=True)


def free_port() -> int:
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return int(s.getsockname()[1])


def clean_env(**extra: str) -> dict[str, str]:
    """This environment without AWS, assay and eval settings, plus `extra`."""
    env = {
        k: v
        for k, v in os.environ.items()
        if not k.upper().startswith(("AWS_", "ASSAY_", "EVAL_", "EVALUATION_"))
    }
    return env | {"PYTHONUNBUFFERED": "1"} | extra


def localstack_env(port: int) -> dict[str, str]:
    """LocalStack's settings: on the host (not in a container, whatever this machine is), its
    file system under `.localstack/fs`, its edge on `port` of 127.0.0.1, no telemetry, no DNS
    server, no certificate download, and a dead proxy for anything else it would fetch."""
    return clean_env(
        OVERRIDE_IN_DOCKER="0",
        FILESYSTEM_ROOT=str(ROOT / "fs"),
        GATEWAY_LISTEN=f"127.0.0.1:{port}",
        LOCALSTACK_HOST=f"127.0.0.1:{port}",
        SERVICES=SERVICES,
        SQS_ENDPOINT_STRATEGY="path",
        DISABLE_EVENTS="1",
        SKIP_SSL_CERT_DOWNLOAD="1",
        DNS_ADDRESS="0",
        HTTP_PROXY=DEAD_PROXY,
        HTTPS_PROXY=DEAD_PROXY,
        http_proxy=DEAD_PROXY,
        https_proxy=DEAD_PROXY,
        NO_PROXY="127.0.0.1,localhost",
        no_proxy="127.0.0.1,localhost",
    )


def health(url: str) -> dict[str, Any] | None:
    try:
        with urllib.request.urlopen(f"{url}/_localstack/health", timeout=5) as reply:
            return dict(json.load(reply))
    except (OSError, ValueError):
        return None


@contextmanager
def localstack(log: Path) -> Iterator[str]:
    """LocalStack running until the block ends; yields its endpoint URL.

    Raises:
        CheckFailed: it is not installed, ended, or did not say every service in `USED` is
            available within `START_GUARD_S`.
    """
    python = ROOT / "venv" / "bin" / "python"
    if not python.exists():
        raise CheckFailed(f"LocalStack is not installed in {ROOT}: run tests/localstack/install.sh")
    port = free_port()
    url = f"http://127.0.0.1:{port}"
    with log.open("w") as out:
        process = subprocess.Popen(
            [str(python), "-m", "localstack.runtime.main"],
            cwd=ROOT,
            env=localstack_env(port),
            stdout=out,
            stderr=subprocess.STDOUT,
            start_new_session=True,
        )
    try:
        started = time.monotonic()
        while True:
            if process.poll() is not None:
                raise CheckFailed(
                    f"LocalStack ended ({process.returncode}) as it started: see {log}"
                )
            said = health(url)
            services = (said or {}).get("services", {})
            if all(services.get(s) in ("available", "running") for s in USED):
                break
            if time.monotonic() - started > START_GUARD_S:
                raise CheckFailed(
                    f"LocalStack did not say it was ready in {START_GUARD_S:.0f} s: {said}"
                )
            time.sleep(0.5)
        say(f"LocalStack {said.get('version') if said else '?'} on {url} (log: {log})")
        yield url
    finally:
        if process.poll() is None:
            os.killpg(process.pid, signal.SIGTERM)
            try:
                process.wait(timeout=30)
            except subprocess.TimeoutExpired:
                os.killpg(process.pid, signal.SIGKILL)
                process.wait()


def smoke_tests(endpoint: str) -> None:
    """The end-to-end smoke tests, their session's stack on `endpoint`."""
    done = subprocess.run(
        [sys.executable, "-m", "pytest", "tests/e2e/test_smoke.py", "-p", "no:cacheprovider"],
        cwd=REPO,
        env=clean_env(AWS_ENDPOINT_URL=endpoint),
        capture_output=True,
        text=True,
    )
    last = (done.stdout.strip().splitlines() or ["(no output)"])[-1]
    counted = re.search(r"\d+ (passed|failed|error)\w*(, \d+ \w+)*", last)
    last = counted.group(0) if counted else last
    if done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
        raise CheckFailed(f"the smoke tests failed on LocalStack: {last}")
    say(f"smoke tests on LocalStack: {last}")


def dev_stop_strands_nothing(endpoint: str, data: Path) -> None:
    """`assay dev --endpoint`, stopped once its pollers long-poll, then a message to the
    case-task queue: received at once by the next consumer (nothing hidden by a receive left
    behind)."""
    import boto3

    from chalicelib import names

    dev = subprocess.Popen(
        [
            sys.executable,
            "-m",
            "assay_local.cli",
            "dev",
            "--data",
            str(data),
            "--port",
            "0",
            "--endpoint",
            endpoint,
        ],
        cwd=REPO,
        env=clean_env(),
        stdout=subprocess.PIPE,
        stderr=subprocess.STDOUT,
        text=True,
    )
    lines: list[str] = []
    assert dev.stdout is not None
    for line in dev.stdout:  # the pollers start before it prints its last line
        lines.append(line.rstrip("\n"))
        if line.startswith("# Ctrl-C"):
            break
    else:
        raise CheckFailed(f"assay dev on LocalStack ended ({dev.wait()}): {lines[-5:]}")
    dev.send_signal(signal.SIGTERM)
    lines += dev.communicate(timeout=120)[0].splitlines()
    if dev.returncode != 0:
        raise CheckFailed(f"assay dev on LocalStack stopped with {dev.returncode}: {lines[-5:]}")
    sqs = boto3.client(
        "sqs",
        endpoint_url=endpoint,
        region_name="us-east-1",
        aws_access_key_id="test",
        aws_secret_access_key="test",
    )
    url = sqs.get_queue_url(QueueName=names.CASE_TASKS_QUEUE)["QueueUrl"]
    body = f"sent after the stop {uuid.uuid4()}"
    sqs.send_message(QueueUrl=url, MessageBody=body)
    got = sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0, MaxNumberOfMessages=10)
    bodies = [m["Body"] for m in got.get("Messages", [])]
    for message in got.get("Messages", []):
        sqs.delete_message(QueueUrl=url, ReceiptHandle=message["ReceiptHandle"])
    if body not in bodies:
        hidden = sqs.get_queue_attributes(
            QueueUrl=url, AttributeNames=["ApproximateNumberOfMessagesNotVisible"]
        )["Attributes"]
        raise CheckFailed(
            "a message sent right after assay dev stopped was not received at once (a receive "
            f"left behind took it? {hidden})"
        )
    say("assay dev on LocalStack stopped with no receive left behind")


def demo(limit: int, endpoint: str | None) -> str:
    """`assay demo --limit limit`'s output, on `endpoint` (None: the embedded moto)."""
    env = clean_env(AWS_ENDPOINT_URL=endpoint) if endpoint else clean_env()
    done = subprocess.run(
        [sys.executable, "-m", "assay_local.cli", "demo", "--limit", str(limit)],
        cwd=REPO,
        env=env,
        capture_output=True,
        text=True,
    )
    where = endpoint or "the embedded moto"
    if done.returncode != 0:
        print(done.stdout[-4000:], done.stderr[-2000:], sep="\n")
        raise CheckFailed(f"assay demo --limit {limit} on {where} exited {done.returncode}")
    return done.stdout


def demo_figures(output: str) -> dict[str, list[str]]:
    """What `assay demo` measured, from its output, without timings or ids: each version's row
    of the table (version, model, pass rate, passed/total, verdict), the guard's sentences, each
    comparison's verdict line and counts of cases by outcome, and the versions' summaries."""
    flat = " ".join(output.split())
    rows = re.findall(r"│ (v\d) +│ (\w+) +│ ([\d.]+%) +│ (\d+/\d+) +│ (\w+) +│", output)
    return {
        "versions": [" ".join(row) for row in rows],
        "guard": re.findall(r"v\d onto production: [^()]+\([^)]*\)", flat),
        "comparisons": re.findall(r"verdict [a-z ]+: \d+ confirmed [^;]+?\)", flat),
        "cases by outcome": [
            " ".join(line.strip("│ ").split())
            for line in output.splitlines()
            if re.fullmatch(r"│(\s+\d+\s+│)+", line.strip())
        ],
        "summaries": re.findall(r"v\d \w+ \(\d+ of \d+ passed\)", flat),
    }


def compare_demos(limit: int, endpoint: str) -> None:
    on_localstack = demo_figures(demo(limit, endpoint))
    on_moto = demo_figures(demo(limit, None))
    if not on_moto["versions"]:
        raise CheckFailed("the demo's table of versions was not found in its output")
    for name, figures in on_moto.items():
        if on_localstack[name] != figures:
            raise CheckFailed(
                f"the demo's {name} differ: LocalStack {on_localstack[name]}, moto {figures}"
            )
    say(f"assay demo --limit {limit}: the same figures on LocalStack and on moto:")
    for row in on_moto["versions"] + on_moto["guard"]:
        say(f"  {row}")


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="python -m tests.localstack.check", description=__doc__)
    parser.add_argument("--limit", type=int, default=100, help="the demo's GSM8K cases")
    args = parser.parse_args(argv)
    work = ROOT / "check"
    work.mkdir(parents=True, exist_ok=True)
    try:
        with localstack(work / "localstack.log") as endpoint:
            smoke_tests(endpoint)
            dev_stop_strands_nothing(endpoint, work / f"dev-{uuid.uuid4().hex[:8]}")
            compare_demos(args.limit, endpoint)
    except CheckFailed as exc:
        say(f"FAILED: {exc}")
        return 1
    say("passed")
    return 0


if __name__ == "__main__":
    sys.exit(main())
