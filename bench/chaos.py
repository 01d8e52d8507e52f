"""Chaos benchmark (issue 11): case-task deliveries on the embedded stack with duplicates, killed
workers and throttling, and what the runs come to.

Several runs of one organization (more than its slots, so hand-offs between runs happen) are
answered by worker processes that take case tasks off the real queue (moto's server on
127.0.0.1) and hand them to `run_case.handle_task` as Lambda would, while this process plays the
one-minute sweep every two seconds. The workers misbehave on purpose:

- a **copy** of a task (a message of its own) is sent before it is handled (`--copy`), and some
  deliveries are handled twice at once, as the same message (`--twin`) or beside a copy
  (`--concurrent-copy`);
- a delivery **carries on** with up to `CARRIES` tasks of its lane (drawn per delivery: the
  Lambda context's time runs out after that many), as `handle_task` does with time left;
- a worker process is **killed** (`os._exit`, nothing cleaned up) at a random moment
  (`--kill` per delivery): before the handler, after the agent answered and before the write,
  between the write that starts a task and its send (a recording's successor, or a hand-off's
  claim), between the write that claims a task to carry on with and that task, or after the
  handler and before the delete (after the answer and before a carried task: at any task of a
  lane carried on with); this process starts a new one;
- ~`--throttle` of DynamoDB and SQS requests answer `ThrottlingException` (the AWS SDK retries
  them, as against AWS).

A killed worker's message comes back after the case queue's visibility timeout (`--visibility`
seconds, shortened for the benchmark, as is the attempt lease). At the end it prints, from the
tables and the agent's own call log:

- **inflated**: counter units above the attempts kept (a run counting an attempt twice);
- **lost**: planned attempts without a row once the runs ended;
- **not ended**: runs still queued or running;
- **slots leaked**: the organization's `in_flight` and the runs' `slots` once all ended;
- **agent calls per attempt** (and the most calls any attempt got).

Goal: 0, 0, 0, 0 and <= 1.05.

    python -m bench.chaos [--runs 8] [--cases 1000] [--workers 3] [--threads 4]
"""

from __future__ import annotations

import argparse
import importlib
import json
import multiprocessing
import os
import platform
import random
import shutil
import sys
import tempfile
import threading
import time
import uuid
from collections import Counter
from pathlib import Path
from typing import Any

KILLED = 137
"""Exit code of a worker that killed itself on purpose."""

KILL_POINTS = (
    "before the handler",
    "after the answer",
    "between write and send",
    "between write and carry",
    "before delete",
)
CARRIES = (0, 0, 1, 3, 10, 50)
"""How many tasks of its lane a delivery may carry on with (issue 12), one drawn per delivery: the
invocation's time runs out after that many."""


# --- worker processes ------------------------------------------------------------------------


class _Raw:
    """The raw body botocore reads of a response (`stream()`)."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, **_: Any) -> Any:
        yield self._body


def _throttle(rate: float, rng: random.Random) -> None:
    """Answer ~`rate` of DynamoDB and SQS requests of this process with a throttling error, before
    they leave it (botocore retries them as it would AWS's)."""
    from botocore import endpoint
    from botocore.awsrequest import AWSResponse

    real = endpoint.Endpoint._send

    def send(self: Any, request: Any) -> Any:
        prefix = getattr(self, "_endpoint_prefix", "")
        if prefix in ("dynamodb", "sqs") and rng.random() < rate:
            json_protocol = "json" in str(request.headers.get("Content-Type", b""))
            if json_protocol or prefix == "dynamodb":
                body = json.dumps(
                    {"__type": "ThrottlingException", "message": "Rate exceeded (chaos)"}
                ).encode()
                headers = {"Content-Type": "application/x-amz-json-1.0"}
            else:
                body = (
                    b"<ErrorResponse><Error><Type>Sender</Type><Code>ThrottlingException</Code>"
                    b"<Message>Rate exceeded (chaos)</Message></Error></ErrorResponse>"
                )
                headers = {"Content-Type": "text/xml"}
            _count("throttled")
            return AWSResponse(request.url, 400, headers, _Raw(body))
        return real(self, request)

    endpoint.Endpoint._send = send  # type: ignore[method-assign]


_log_dir = ""


def _count(what: str) -> None:
    """Count `what` in this process's log (one append per event: it survives a kill)."""
    fd = os.open(
        os.path.join(_log_dir, f"events-{os.getpid()}.log"),
        os.O_WRONLY | os.O_CREAT | os.O_APPEND,
        0o600,
    )
    try:
        os.write(fd, f"{what}\n".encode())
    finally:
        os.close(fd)


_doom = threading.local()


def _die_if(point: str) -> None:
    if getattr(_doom, "point", None) != point:
        return
    if getattr(_doom, "skip", 0) > 0:  # on a later task of the lane this delivery carries on with
        _doom.skip -= 1
        return
    _count(f"killed {point}")
    os._exit(KILLED)


def worker_main(config: dict[str, Any]) -> None:
    """One worker process: `threads` pollers of the case queue and one of its DLQ."""
    global _log_dir
    _log_dir = config["log_dir"]
    rng = random.Random(config["seed"])
    import boto3

    from chalicelib import bootstrap
    from chalicelib.config import Settings
    from chalicelib.services import run_case, slots

    # The lease is as long as the message's visibility; both are shortened together.
    Settings.visibility_timeout_seconds = property(  # type: ignore[assignment,method-assign]
        lambda self: config["visibility"]
    )
    c = bootstrap.reset()
    importlib.import_module(
        "app"
    )  # as Lambda does: the handlers, and the events they publish wired
    _throttle(config["throttle"], random.Random(config["seed"] + 1))
    real_record, real_send, real_carried = run_case.record, slots.send_tasks, run_case._carried

    def record(*a: Any, **kw: Any) -> Any:
        _die_if("after the answer")
        return real_record(*a, **kw)

    def send_tasks(*a: Any, **kw: Any) -> Any:
        _die_if("between write and send")
        return real_send(*a, **kw)

    def carried(*a: Any, **kw: Any) -> Any:
        _die_if("between write and carry")
        return real_carried(*a, **kw)

    run_case.record = record  # type: ignore[assignment]
    slots.send_tasks = send_tasks  # type: ignore[assignment]
    run_case._carried = carried  # type: ignore[assignment]
    enough_ms = (
        c.settings.evaluation_case_timeout_seconds + run_case.CARRY_MARGIN_SECONDS
    ) * 1000 + 1
    sqs = boto3.client("sqs", endpoint_url=config["endpoint"], region_name="us-east-1")
    stop = Path(config["stop_file"])

    def handle(
        body: str, message_id: str, receipt: str | None, count: int, carries: int = 0
    ) -> bool:
        _count("delivery")
        left = [carries]

        def remaining_ms() -> int:
            # The Lambda context's time left: enough for `carries` more tasks, then not.
            left[0] -= 1
            return enough_ms if left[0] >= 0 else 0

        try:
            run_case.handle_task(
                c,
                body,
                receive_count=count,
                receipt_handle=receipt,
                message_id=message_id,
                remaining_ms=remaining_ms,
            )
            return True
        except run_case.LeaseHeld:
            _count("left: lease held")
        except Exception as exc:  # noqa: BLE001 - as Lambda: the message stays and comes back
            _count("left: handler raised")
            _count(f"raised {type(exc).__name__}: {str(exc)[:120]}".replace("\n", " "))
        return False

    def poll(url: str, dead: bool) -> None:
        local = random.Random(rng.random())
        while not stop.exists():
            try:
                reply = sqs.receive_message(
                    QueueUrl=url,
                    MaxNumberOfMessages=1,
                    WaitTimeSeconds=1,
                    MessageSystemAttributeNames=["All"],
                )
            except Exception:  # noqa: BLE001 - throttled past the SDK's retries: poll again
                continue
            for m in reply.get("Messages", []):
                body, mid, receipt = m["Body"], m["MessageId"], m["ReceiptHandle"]
                count = int(m["Attributes"]["ApproximateReceiveCount"])
                if dead:
                    _count("dead delivery")
                    try:
                        run_case.handle_dead_task(c, body, receive_count=count, message_id=mid)
                        sqs.delete_message(QueueUrl=url, ReceiptHandle=receipt)
                    except Exception:  # noqa: BLE001 - it comes back
                        _count("left: dead handler raised")
                    continue
                carries = local.choice(CARRIES)
                _doom.point = local.choice(KILL_POINTS) if local.random() < config["kill"] else None
                _doom.skip = local.randint(0, carries)
                _die_if("before the handler")
                if local.random() < config["copy"]:
                    try:
                        sqs.send_message(QueueUrl=url, MessageBody=body)
                        _count("copy sent")
                    except Exception:  # noqa: BLE001 - a copy that was not sent is no copy
                        pass
                beside: threading.Thread | None = None
                roll = local.random()
                if roll < config["twin"]:
                    _count("twin")
                    beside = threading.Thread(target=handle, args=(body, mid, None, count))
                elif roll < config["twin"] + config["concurrent_copy"]:
                    _count("concurrent copy")
                    copy_id = f"copy-{uuid.uuid4().hex}"
                    beside = threading.Thread(target=handle, args=(body, copy_id, None, 1))
                if beside is not None:
                    beside.start()
                done = handle(body, mid, receipt, count, carries)
                if beside is not None:
                    beside.join()
                _die_if("before delete")
                _doom.point = None
                if done:
                    try:
                        sqs.delete_message(QueueUrl=url, ReceiptHandle=receipt)
                    except Exception:  # noqa: BLE001 - undeleted: redelivered, a duplicate
                        _count("delete failed")

    threads = [
        threading.Thread(target=poll, args=(config["queue_url"], False), daemon=True)
        for _ in range(config["threads"])
    ]
    threads.append(threading.Thread(target=poll, args=(config["dlq_url"], True), daemon=True))
    for t in threads:
        t.start()
    for t in threads:
        t.join()


# --- the benchmark ---------------------------------------------------------------------------


def _measure(c: Any, org_id: str, run_ids: list[str]) -> dict[str, Any]:
    """What the runs came to, read from the tables (no throttling here)."""
    inflated = uncounted = lost = unended = leaked = rows_total = incomplete = 0
    for run_id in run_ids:
        run = c.runs.get(org_id, run_id)
        attempts = c.runs.attempts(org_id, run_id)
        rows_total += len(attempts)
        states = Counter(a.state for a in attempts)
        incomplete += states["incomplete"]
        for name, kept in [("recorded", len(attempts))] + [
            (s, states[s]) for s in ("passed", "failed", "incomplete", "ungraded")
        ]:
            counted = int(getattr(run, name))
            inflated += max(0, counted - kept)
            uncounted += max(0, kept - counted)
        inflated += max(0, len(attempts) - int(run.expected))
        if run.status in ("queued", "running"):
            unended += 1
        lost += max(0, int(run.expected) - len(attempts))
        leaked += int(run.slots) + sum(bool(b) for b in run.lanes.busy)
    org = c.orgs.get(org_id)
    leaked += int(org.in_flight) if org else 0
    return {
        "inflated": inflated,
        "uncounted": uncounted,
        "lost": lost,
        "not_ended": unended,
        "leaked": leaked,
        "attempts": rows_total,
        "incomplete": incomplete,
    }


def _tally(log_dir: Path) -> tuple[Counter[str], Counter[str]]:
    """Agent calls by attempt and worker events, from every process's logs."""
    calls: Counter[str] = Counter()
    events: Counter[str] = Counter()
    for path in log_dir.glob("calls-*.log"):
        calls.update(line for line in path.read_text().splitlines() if line)
    for path in log_dir.glob("events-*.log"):
        events.update(line for line in path.read_text().splitlines() if line)
    return calls, events


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--runs", type=int, default=8)
    parser.add_argument("--cases", type=int, default=1000)
    parser.add_argument("--workers", type=int, default=3, help="worker processes")
    parser.add_argument("--threads", type=int, default=4, help="pollers per worker process")
    parser.add_argument("--run-concurrency", type=int, default=4)
    parser.add_argument("--org-concurrency", type=int, default=10)
    parser.add_argument("--copy", type=float, default=0.2, help="deliveries copied first")
    parser.add_argument("--twin", type=float, default=0.03, help="handled twice at once")
    parser.add_argument("--concurrent-copy", type=float, default=0.03)
    parser.add_argument("--kill", type=float, default=0.004, help="deliveries killing a worker")
    parser.add_argument("--throttle", type=float, default=0.05)
    parser.add_argument("--visibility", type=int, default=6, help="seconds (and the lease)")
    parser.add_argument("--timeout", type=float, default=3600, help="give up after, seconds")
    parser.add_argument("--seed", type=int, default=11)
    args = parser.parse_args(argv)

    from assay_local.stack import EmbeddedStack
    from bench.client import api_caller
    from chalicelib import names
    from chalicelib.services import sweep

    log_dir = Path(tempfile.mkdtemp(prefix="assay-chaos-"))
    env = {
        "EVAL_RUN_CONCURRENCY": str(args.run_concurrency),
        "EVAL_ORG_CONCURRENCY": str(args.org_concurrency),
        "EVAL_RESEND_AFTER_SECONDS": str(max(2, args.visibility)),
        "ASSAY_BENCH_CALL_LOG": str(log_dir),
    }
    stop_file = log_dir / "stop"
    procs: list[multiprocessing.Process] = []
    kills = 0
    t0 = time.monotonic()
    try:
        with EmbeddedStack(env=env, pollers=False, scheduler=False) as stack:
            import boto3

            queue_url = stack.queue_urls[names.CASE_TASKS_QUEUE]
            boto3.client(
                "sqs", endpoint_url=stack.endpoint_url, region_name="us-east-1"
            ).set_queue_attributes(
                QueueUrl=queue_url, Attributes={"VisibilityTimeout": str(args.visibility)}
            )
            org_id = f"org_chaos{uuid.uuid4().hex[:8]}"
            call = api_caller(stack, org_id, "chaos@assay.local", timeout=120)

            ds = call("POST", "/api/v1/datasets", json={"name": "chaos"})
            cases = [
                {"case_id": f"c{i:05d}", "input": f"q{i}", "reference": "42"}
                for i in range(args.cases)
            ]
            call(
                "POST",
                f"/api/v1/datasets/{ds['dataset_id']}/versions",
                json={"scoring": {"required": ["equals"]}, "cases": cases},
            )
            agent = call(
                "POST",
                "/api/v1/agents",
                json={
                    "name": "logged",
                    "spec": {"runtime": "python", "entrypoint": "bench.agents:logged"},
                },
            )
            config = {
                "endpoint": stack.endpoint_url,
                "queue_url": queue_url,
                "dlq_url": stack.queue_urls[names.CASE_TASKS_DLQ],
                "log_dir": str(log_dir),
                "stop_file": str(stop_file),
                "threads": args.threads,
                "copy": args.copy,
                "twin": args.twin,
                "concurrent_copy": args.concurrent_copy,
                "kill": args.kill,
                "throttle": args.throttle,
                "visibility": args.visibility,
            }
            spawn = multiprocessing.get_context("spawn")

            def start_worker(n: int) -> multiprocessing.Process:
                p = spawn.Process(target=worker_main, args=({**config, "seed": args.seed + n},))
                p.start()
                return p

            procs = [start_worker(n) for n in range(args.workers)]
            run_ids = [
                call(
                    "POST",
                    f"/api/v1/agents/{agent['agent_id']}/eval-runs",
                    json={"dataset_id": ds["dataset_id"], "candidate": "draft"},
                )["run_id"]
                for _ in range(args.runs)
            ]
            from chalicelib import bootstrap

            c = bootstrap.container()
            spawned = args.workers
            last_sweep = 0.0
            while time.monotonic() - t0 < args.timeout:
                for i, p in enumerate(procs):
                    if not p.is_alive():
                        kills += p.exitcode == KILLED
                        procs[i] = start_worker(spawned)
                        spawned += 1
                if time.monotonic() - last_sweep >= 2:
                    sweep.sweep(c)
                    last_sweep = time.monotonic()
                runs = [c.runs.get(org_id, r) for r in run_ids]
                if all(r is not None and r.status not in ("queued", "running") for r in runs):
                    break
                time.sleep(0.5)
            wall = time.monotonic() - t0
            stop_file.touch()
            for p in procs:
                p.join(10)
                if p.is_alive():
                    p.kill()
            figures = _measure(c, org_id, run_ids)
            statuses = Counter(
                f"{run.status}/{run.phase}" for run in (c.runs.get(org_id, r) for r in run_ids)
            )
    finally:
        stop_file.touch()
        for p in procs:
            if p.is_alive():
                p.kill()
    calls, events = _tally(log_dir)
    shutil.rmtree(log_dir, ignore_errors=True)
    per_attempt = sum(calls.values()) / max(1, figures["attempts"])
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"command: python -m bench.chaos --runs {args.runs} --cases {args.cases} "
        f"--workers {args.workers} --threads {args.threads} --copy {args.copy:g} "
        f"--twin {args.twin:g} --concurrent-copy {args.concurrent_copy:g} --kill {args.kill:g} "
        f"--throttle {args.throttle:g} --visibility {args.visibility}"
    )
    print(f"wall: {wall:.1f} s   runs: {dict(statuses)}")
    print(
        f"deliveries: {events['delivery']} case tasks (+{events['dead delivery']} from the DLQ); "
        f"copies sent: {events['copy sent']}; handled twice at once: {events['twin']} as one "
        f"message, {events['concurrent copy']} beside a copy"
    )
    killed = {p: events[f"killed {p}"] for p in KILL_POINTS}
    print(f"workers killed: {kills} ({', '.join(f'{k}: {v}' for k, v in killed.items())})")
    print(
        f"requests throttled: {events['throttled']}; deliveries left for SQS: "
        f"{events['left: lease held']} (lease held), {events['left: handler raised']} (raised)"
    )
    for what, n in sorted(events.items()):
        if what.startswith("raised "):
            print(f"  {n} x {what}")
    print(f"attempts: {figures['attempts']} ({figures['incomplete']} incomplete)")
    print(
        f"inflated: {figures['inflated']}   lost: {figures['lost']}   "
        f"not ended: {figures['not_ended']}   slots leaked: {figures['leaked']}   "
        f"uncounted: {figures['uncounted']}"
    )
    print(
        f"agent calls per attempt: {per_attempt:.3f} (total {sum(calls.values())}; "
        f"most for one attempt: {max(calls.values(), default=0)})"
    )
    ok = (
        figures["inflated"] == figures["lost"] == figures["not_ended"] == figures["leaked"] == 0
        and per_attempt <= 1.05
    )
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
