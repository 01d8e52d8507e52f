"""Where a case's time beyond its agent goes: the critical path of a lane, measured.

A lane asks its cases one after another; between one agent call's end and the next call's start
it grades the answer, records the attempt (one DynamoDB transaction that also claims the lane's
next task, conditional on the run still running) and reads the budgets for the next case beside
that write. Whatever that gap costs, every case of the lane pays: efficiency is at most
`sleep / (sleep + mean gap)`.

This benchmark runs `bench.pipeline`'s run (`--cases` x `--sleep-ms` x `--concurrency`) with
timers around those steps (wrapped in this process only: the embedded stack runs here), and first
times the same DynamoDB requests one at a time on an idle stack, so the figures say how much of
the gap is the requests themselves and how much is waiting for the machine's cores (two
processes and every lane's thread share them). It ends with what moving the recording off the
critical path ("claim ahead": the recording of one case claims the case after next) could gain at
most: the lane would still need one read before each case (the run still running, its budgets),
because nothing may start once a run is cancelled or over budget
(docs/architecture/benchmarks.md, "The critical path of a case").

    python -m bench.critical_path [--cases 500] [--sleep-ms 200] [--concurrency 6]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import threading
import time
from collections.abc import Callable, Iterator
from contextlib import contextmanager
from typing import Any

IDLE_ROUNDS = 200
"""Requests timed one at a time on the idle stack (the first 20 are left out: connections)."""


def quantiles(xs: list[float]) -> tuple[float, float, float, float]:
    """(mean, median, p10, p90) of `xs` in the same unit; NaNs when empty."""
    if not xs:
        return (float("nan"),) * 4
    s = sorted(xs)
    p10, p90 = s[len(s) // 10], s[min(len(s) - 1, 9 * len(s) // 10)]
    return statistics.fmean(s), statistics.median(s), p10, p90


def idle_round_trips(rounds: int = IDLE_ROUNDS) -> tuple[float, float]:
    """(median ms of a 5-item TransactWriteItems, median ms of a GetItem) sent one at a time to a
    fresh embedded stack's DynamoDB with a plain boto3 client: the requests' own cost, nothing
    else running."""
    import boto3

    from assay_local.stack import EmbeddedStack

    with EmbeddedStack(scheduler=False, workers=1) as stack:
        ddb = boto3.client(
            "dynamodb",
            endpoint_url=stack.endpoint_url,
            region_name=stack.settings.aws_default_region,
            aws_access_key_id="bench",
            aws_secret_access_key="bench",
        )
        table = next(t for t in ddb.list_tables()["TableNames"] if t.endswith("attempts"))
        txs, gets = [], []
        for i in range(rounds):
            items = [
                {
                    "Put": {
                        "TableName": table,
                        "Item": {
                            "run_key": {"S": f"org_bench#run{i}"},
                            "attempt_key": {"S": f"a#{j}"},
                            "answer": {"S": "x" * 500},
                        },
                    }
                }
                for j in range(5)
            ]
            t = time.perf_counter()
            ddb.transact_write_items(TransactItems=items)
            txs.append(time.perf_counter() - t)
            t = time.perf_counter()
            ddb.get_item(
                TableName=table,
                Key={"run_key": {"S": f"org_bench#run{i}"}, "attempt_key": {"S": "a#0"}},
            )
            gets.append(time.perf_counter() - t)
    skip = min(20, rounds // 2)
    return statistics.median(txs[skip:]) * 1000, statistics.median(gets[skip:]) * 1000


class Timers:
    """Durations (seconds) collected by the wrappers `timed` installs, by name, and each lane
    thread's agent-call gaps."""

    def __init__(self) -> None:
        self.lock = threading.Lock()
        self.spans: dict[str, list[float]] = {}
        self.gaps: list[float] = []
        self._left: dict[int, float] = {}

    def add(self, name: str, seconds: float) -> None:
        with self.lock:
            self.spans.setdefault(name, []).append(seconds)

    def entered(self) -> None:
        """An agent call starts on this thread: the gap since its last call on it ended."""
        now, me = time.perf_counter(), threading.get_ident()
        with self.lock:
            left = self._left.get(me)
            if left is not None:
                self.gaps.append(now - left)

    def left(self) -> None:
        with self.lock:
            self._left[threading.get_ident()] = time.perf_counter()


def _wrap(timers: Timers, name: str, fn: Callable[..., Any]) -> Callable[..., Any]:
    def timed_call(*args: Any, **kwargs: Any) -> Any:
        t = time.perf_counter()
        try:
            return fn(*args, **kwargs)
        finally:
            timers.add(name, time.perf_counter() - t)

    return timed_call


@contextmanager
def timed(timers: Timers) -> Iterator[None]:
    """Wrap, for the block, the agent's entry and exit (`bench.agents`), a lane's recording
    (`run_case.record`), its transaction (`RunStore.record_attempt`) and the budgets read beside
    it (`budgets.read`); everything is put back after."""
    from bench import agents
    from chalicelib.adapters.stores.ledger import RunStore
    from chalicelib.services import budgets, run_case

    saved = [
        (agents, "_enter", agents._enter),
        (agents, "_leave", agents._leave),
        (run_case, "record", run_case.record),
        (RunStore, "record_attempt", RunStore.record_attempt),
        (budgets, "read", budgets.read),
    ]
    enter, leave = agents._enter, agents._leave

    def entering(keys: list[str]) -> None:
        timers.entered()
        enter(keys)

    def leaving(keys: list[str]) -> None:
        leave(keys)
        timers.left()

    agents._enter, agents._leave = entering, leaving
    run_case.record = _wrap(timers, "record", run_case.record)
    RunStore.record_attempt = _wrap(timers, "transaction", RunStore.record_attempt)
    budgets.read = _wrap(timers, "budgets read", budgets.read)
    try:
        yield
    finally:
        for owner, attr, value in saved:
            setattr(owner, attr, value)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--sleep-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=6)
    args = parser.parse_args(argv)
    from bench.pipeline import _load, measure

    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {_load()}"
    )
    idle_tx, idle_get = idle_round_trips()
    timers = Timers()
    with timed(timers):
        m = measure(args.cases, args.sleep_ms, args.concurrency)
    print(
        f"command: python -m bench.critical_path --cases {args.cases} --sleep-ms "
        f"{args.sleep_ms:g} --concurrency {args.concurrency}"
    )
    print(
        f"status: {m.status}  attempts recorded: {m.attempts}/{m.expected}  wall {m.wall_s:.2f} s"
        f"  efficiency {m.efficiency:.3f}  ({_load()})"
    )

    def row(label: str, xs: list[float]) -> float:
        """Print `xs` (seconds) in ms; returns the mean: the wall time is the gaps' sum."""
        mean, med, p10, p90 = (x * 1000 for x in quantiles(xs))
        print(
            f"  {label:<46} mean {mean:6.2f} ms  median {med:6.2f}  p10 {p10:6.2f}  "
            f"p90 {p90:6.2f}  n={len(xs)}"
        )
        return mean

    print("a lane between one agent call's end and its next call's start:")
    gap = row("the gap", [g for g in timers.gaps if g < 1.0])
    rec = row("recording the attempt (run_case.record)", timers.spans.get("record", []))
    row("  of which its transaction", timers.spans.get("transaction", []))
    read = row("the budgets read beside it (another thread)", timers.spans.get("budgets read", []))
    print(f"  the rest (grading, the next case's setup, waiting for the GIL): {gap - rec:.2f} ms")
    print("the same requests one at a time on an idle stack (plain boto3 client):")
    print(f"  a 5-item TransactWriteItems {idle_tx:.2f} ms, a GetItem {idle_get:.2f} ms")
    busy = statistics.median(timers.spans.get("transaction", [float("nan")])) * 1000
    print(f"  the transaction under the run's load takes {busy / idle_tx:.1f}x its idle time")
    if args.sleep_ms:
        bound = args.sleep_ms / (args.sleep_ms + gap)
        ahead = args.sleep_ms / (args.sleep_ms + gap - rec + read)
        print(f"bound from the gap: efficiency <= {bound:.3f} (sleep / (sleep + mean gap))")
        print(
            f"claiming ahead (the recording off the path, one read before each case instead): "
            f"gap {gap - rec + read:.2f} ms, efficiency <= {ahead:.3f}"
        )
    return 0 if m.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
