"""What an attempt costs on AWS, on paper, from counts measured on the embedded stack.

Two runs of `--cases` cases against the `sleepy` agent (`bench.pipeline.prepare`: a `python`
agent that sleeps `--sleep-ms`, its spec priced like a small model unless `--unpriced`, so every
answer is charged to the organization's and the agent's month), `EVAL_RUN_CONCURRENCY=
--concurrency`, each on a fresh stack:

1. **requests and sizes**: moto in this process and every AWS request tapped (`bench.aws_tap`):
   per API, how many per attempt, how many items each names, the items' sizes, and the DynamoDB
   read and write request units they would consume (secondary indexes included); which items are
   written most. The run's end is read from moto's table directly, so nothing but the run's own
   work (and its start request) is counted.
2. **Lambda durations**: `bench.pipeline.measure` as it is (moto in its own process), every
   handler invocation timed in this process (wall ms), the memory size from
   `.chalice/config.json`.

Then the bill per 1,000 attempts at AWS's public on-demand prices for us-east-1
(`bench.aws_prices`: each price, its page and the date it was read), what a million cases a day
costs, and last the line `USD per 1,000 attempts: <x>`. Free tiers are left out.

    python -m bench.aws_cost [--cases 500] [--sleep-ms 0] [--concurrency 6] [--unpriced]

Importing this module starts nothing (no stack, no moto, no threads).
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import re
import statistics
import sys
import time
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any

from bench import aws_prices as p

ORG = "org_bench"
SMALL_MODEL_PRICE = {"input_per_mtok_usd": "0.15", "output_per_mtok_usd": "0.60"}
"""The agent's price (USD per 1M tokens) unless `--unpriced`: priced answers are charged to the
month's spend counters, as a real model's are."""
CHALICE_CONFIG = Path(__file__).resolve().parent.parent / ".chalice" / "config.json"
CASE_WORKER = "handle_case_task"
API_FUNCTION = "api_handler"
MILLION = 1_000_000


def lambda_memory_mb(function: str, config: Path = CHALICE_CONFIG) -> int:
    """The memory size (MB) Chalice deploys `function` with: its own `lambda_memory_size` in
    `.chalice/config.json`'s `lambda_functions`, else the file's, else Lambda's 128."""
    data = json.loads(config.read_text())
    own = (data.get("lambda_functions") or {}).get(function) or {}
    return int(own.get("lambda_memory_size", data.get("lambda_memory_size", 128)))


@dataclass
class Measured:
    """What `measure` found: the tapped run's counts and the timed run's Lambda durations."""

    cases: int
    sleep_ms: float
    concurrency: int
    status: str
    attempts: int
    tally: Any
    """`bench.aws_tap.Tally` of the tapped run."""
    start_ms: float
    """The start request's wall ms (the API's Lambda, one per run)."""
    timed_attempts: int = 0
    timed_concurrency: int = 1
    invocations: dict[str, Any] = field(default_factory=dict)
    """`bench.aws_tap.Invocations` by function, of the timed run."""


def _wait_ended(tap: Any, table: str, run_key: str, at_most_s: float) -> tuple[str, int]:
    """(status, attempts recorded) of the run once it is neither queued nor running, read from
    moto's table (no request); what was last seen after `at_most_s`."""
    deadline = time.monotonic() + at_most_s
    item: dict[str, Any] = {}
    while time.monotonic() < deadline:
        item = tap.image(table, {"run_key": {"S": run_key}}) or {}
        if (item.get("status") or {}).get("S", "queued") not in ("queued", "running"):
            break
        time.sleep(0.05)
    status = (item.get("status") or {}).get("S", "queued")
    return status, int((item.get("recorded") or {}).get("N", 0))


def measure_requests(
    cases: int, sleep_ms: float, concurrency: int, price: dict[str, str] | None
) -> tuple[str, int, Any, float]:
    """Run 1 (see the module doc): (status, attempts recorded, the tap's `Tally`, the start
    request's wall ms). The tally is taken after the stack stopped, so the deletes its pollers
    still held are in it."""
    from assay_local.stack import EmbeddedStack
    from bench import pipeline
    from bench.aws_tap import Tap
    from bench.client import api_caller
    from chalicelib.adapters.tables import RunRow

    env = {
        "EVAL_RUN_CONCURRENCY": str(concurrency),
        "EVAL_ORG_CONCURRENCY": str(max(concurrency, 6)),
    }
    # The tap goes in first: the pollers' first long polls, sent as the stack starts, carry the
    # run's first tasks.
    tap = Tap(os.environ.get("AWS_DEFAULT_REGION") or "us-east-1")
    tap.__enter__()
    stack: Any = None
    try:
        stack = EmbeddedStack(
            env=env, workers=concurrency, scheduler=False, poll_wait_seconds=10, moto_process=False
        ).start()
        prefix = stack.settings.assay_resource_prefix
        tap.region = stack.settings.aws_default_region
        tap.short = lambda name: name.removeprefix(prefix)
        call = api_caller(stack, ORG, "bench@assay.local", timeout=60)
        dataset_id, agent_id, _ = pipeline.prepare(call, cases, sleep_ms, price)
        tap.reset()
        t0 = time.perf_counter()
        run = pipeline.start_draft(call, agent_id, dataset_id)
        start_ms = (time.perf_counter() - t0) * 1000
        run_key = f"{ORG}#{run['run_id']}"
        status, attempts = _wait_ended(tap, RunRow.Meta.table_name, run_key, at_most_s=600)
    finally:
        try:
            if stack is not None:
                stack.stop()
        finally:
            tap.__exit__()
    return status, attempts, tap.tally, start_ms


def measure(
    cases: int,
    sleep_ms: float,
    concurrency: int,
    price: dict[str, str] | None,
    timed_concurrency: int = 1,
) -> Measured:
    """Both runs of the module doc, one after the other, each on a fresh stack; the timed one
    with `timed_concurrency` lanes (default 1: on Lambda every invocation has its sandbox to
    itself, while lanes in one process share its interpreter and this machine's cores, and each
    lane's wall time counts the others' work too)."""
    from bench import pipeline
    from bench.aws_tap import HandlerTimes

    status, attempts, tally, start_ms = measure_requests(cases, sleep_ms, concurrency, price)
    with HandlerTimes() as times:
        timed = pipeline.measure(cases, sleep_ms, timed_concurrency, price=price)
    return Measured(
        cases,
        sleep_ms,
        concurrency,
        status,
        attempts,
        tally,
        start_ms,
        timed.attempts,
        timed_concurrency,
        dict(times.by_function),
    )


def usage_of(m: Measured, memory_mb: int, api_memory_mb: int) -> p.Usage:
    """Per attempt, in billed units: the tapped run's requests, the timed run's invocations and
    durations (per attempt of that run), and the start request (one API request and one API
    Lambda invocation of `start_ms` per run) spread over the run's attempts. `Usage.attempts` is
    1."""
    t, n = m.tally, max(m.attempts, 1)
    timed = max(m.timed_attempts, 1)
    invocations = sum(i.count for i in m.invocations.values())
    billed_ms = sum(i.billed_ms for i in m.invocations.values())
    return p.Usage(
        attempts=1,
        dynamodb_rru=sum(t.rru.values()) / n,
        dynamodb_wru=sum(t.wru.values()) / n,
        dynamodb_index_wru=t.index_wru / n,
        sqs_requests=t.sqs_billed / n,
        lambda_requests=invocations / timed + 1 / n,
        lambda_gb_seconds=p.gb_seconds(billed_ms / timed, memory_mb)
        + p.gb_seconds(float(int(m.start_ms) + 1), api_memory_mb) / n,
        s3_puts=t.s3_puts / n,
        s3_gets=t.s3_gets / n,
        api_requests=1 / n,
    )


def _print_requests(m: Measured) -> None:
    t, n = m.tally, max(m.attempts, 1)
    print()
    print("AWS requests per attempt, by API (the run's start request included)")
    print(
        f"  {'API':<30} {'requests':>8} {'/attempt':>9} {'items/req':>9} {'KB/item':>8}"
        f" {'RRU/att':>8} {'WRU/att':>8}"
    )
    for key, count in sorted(t.requests.items(), key=lambda kv: -kv[1]):
        if key.endswith(".empty"):
            continue
        service, _, op = key.partition(".")
        items = t.items.get(op, 0) if service == "dynamodb" else 0
        size = (t.read_bytes.get(op, 0) + t.write_bytes.get(op, 0)) if service == "dynamodb" else 0
        per_item = f"{size / items / 1024:8.2f}" if items else f"{'':8}"
        per_req = f"{items / count:9.2f}" if items else f"{'':9}"
        rru = t.rru.get(op, 0.0) / n if service == "dynamodb" else 0.0
        wru = t.wru.get(op, 0.0) / n if service == "dynamodb" else 0.0
        print(
            f"  {key:<30} {count:>8} {count / n:>9.3f} {per_req} {per_item} {rru:>8.3f} {wru:>8.3f}"
        )
    empty = t.requests.get("sqs.ReceiveMessage.empty", 0)
    print(
        f"  (left out: {empty} empty long-poll receives; SQS billed requests, 64 KB chunks: "
        f"{t.sqs_billed / n:.3f} per attempt)"
    )
    print()
    print("DynamoDB writes by table and secondary index (WRU per attempt)")
    for target, units in sorted(t.wru_by_target.items(), key=lambda kv: -kv[1]):
        print(f"  {target:<44} {units / n:8.3f}")
    print()
    print("Items written most (per attempt; ids shown as <run>, <agent>)")
    print(
        f"  {'table':<16} {'key':<34} {'writes':>7} {'in tx':>6} {'max KB':>7} {'WRU':>7}"
        "  (WRU: table and indexes)"
    )
    hot = sorted(t.written.items(), key=lambda kv: -kv[1].count)[:5]
    for (table, key), h in hot:
        key = re.sub(r"agt_[0-9a-f]+", "<agent>", re.sub(r"run_[0-9a-f]+", "<run>", key))
        shown = key if len(key) <= 34 else key[:31] + "..."
        print(
            f"  {table:<16} {shown:<34} {h.count / n:>7.3f} {h.transactional / n:>6.3f}"
            f" {h.max_bytes / 1024:>7.2f} {h.units / n:>7.2f}"
        )


def _print_lambda(m: Measured, memory_mb: int, api_memory_mb: int) -> None:
    timed = max(m.timed_attempts, 1)
    print()
    print(
        f"Lambda: {memory_mb} MB ({CHALICE_CONFIG.parent.name}/{CHALICE_CONFIG.name} "
        "lambda_memory_size), x86; wall ms per invocation as measured in this process (run 2: "
        f"{m.timed_attempts} attempts, {m.timed_concurrency} lane(s), moto in its own process)"
    )
    print(
        f"  {'function':<22} {'invocations':>11} {'/attempt':>9} {'median ms':>10}"
        f" {'max ms':>9} {'ms/attempt':>10}"
    )
    for name, inv in sorted(m.invocations.items()):
        if not inv.count:
            continue
        print(
            f"  {name:<22} {inv.count:>11} {inv.count / timed:>9.4f}"
            f" {statistics.median(inv.durations_ms):>10.1f} {max(inv.durations_ms):>9.1f}"
            f" {inv.billed_ms / timed:>10.2f}"
        )
    print(
        f"  {API_FUNCTION + ' (start)':<22} {1:>11} {1 / max(m.attempts, 1):>9.4f}"
        f" {m.start_ms:>10.1f} {m.start_ms:>9.1f} {m.start_ms / max(m.attempts, 1):>10.2f}"
        f"   ({api_memory_mb} MB; run 1's start request, client side)"
    )


def report(m: Measured, memory_mb: int, api_memory_mb: int) -> float:
    """Print the tables and the bill; returns USD per 1,000 attempts."""
    print(
        f"command: python -m bench.aws_cost --cases {m.cases} --sleep-ms {m.sleep_ms:g} "
        f"--concurrency {m.concurrency} --timed-concurrency {m.timed_concurrency}"
    )
    print(f"run 1: {m.status}, {m.attempts} attempts recorded of {m.cases} cases")
    _print_requests(m)
    _print_lambda(m, memory_mb, api_memory_mb)
    lines = p.bill(usage_of(m, memory_mb, api_memory_mb))
    usd = p.total(lines)
    print()
    print(f"Bill per 1,000 attempts ({p.REGION}, on-demand, prices read {p.PRICES_READ_ON})")
    print(f"  {'item':<18} {'quantity':>12} {'unit':<14} {'USD per unit':>14} {'USD':>12}")
    for line in lines:
        print(
            f"  {line.item:<18} {line.quantity:>12.3f} {line.unit:<14}"
            f" {p.usd_text(line.unit_usd):>14} {p.usd_text(line.usd):>12}"
        )
    wait = p.gb_seconds(1000.0, memory_mb) * p.LAMBDA_USD_PER_GB_SECOND * 1000
    print(
        f"  each second an agent takes to answer adds {p.usd_text(wait)} USD per 1,000 attempts "
        f"(the case worker waits for it at {memory_mb} MB); this run's agent slept "
        f"{m.sleep_ms:g} ms"
    )
    others = sorted(
        (k, v)
        for k, v in m.tally.requests.items()
        if k.partition(".")[0] not in ("dynamodb", "sqs", "s3")
    )
    print(
        "  not priced: CloudWatch Logs of the Lambdas, the queues' idle long polls and the two "
        "schedules' minute ticks (fixed costs, not per attempt)"
        + "".join(f"; {k} x {v}" for k, v in others)
    )
    day, month = p.at_scale(usd, MILLION)
    print()
    print(
        f"1,000,000 cases a day: {p.usd_text(day)} USD per day, {p.usd_text(month)} USD per "
        "30-day month"
    )
    print(f"USD per 1,000 attempts: {p.usd_text(usd)}")
    return usd


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--sleep-ms", type=float, default=0.0)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument(
        "--timed-concurrency",
        type=int,
        default=1,
        help="lanes of the run whose Lambda durations are timed (default 1, see measure)",
    )
    parser.add_argument(
        "--unpriced", action="store_true", help="an agent without a price: nothing is charged"
    )
    args = parser.parse_args(argv)
    try:
        load = "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "load average unknown"
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {load}"
    )
    price = None if args.unpriced else SMALL_MODEL_PRICE
    m = measure(args.cases, args.sleep_ms, args.concurrency, price, args.timed_concurrency)
    report(m, lambda_memory_mb(CASE_WORKER), lambda_memory_mb(API_FUNCTION))
    return 0 if m.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
