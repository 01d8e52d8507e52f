"""Scale benchmark on the embedded stack (issue 33, scope 4): one large eval run, and many
organizations starting at once.

Part (a), one large run: an eval run of `--cases-large` cases (20,000) and one of
`--cases-small` (500) against the `sleepy` agent answering at once (`--sleep-ms 0`), each on a
fresh embedded stack with `--concurrency` lanes (as `bench.pipeline` runs one). For each: wall,
CPU ms per case attempt of the benchmark's process (routes, pollers, handlers) and of moto's
child process, separately and summed; AWS requests per attempt; and each process's resident
memory (RSS) just before the run's start request and at its peak during the run. Goals: the
CPU per case at the large size within 1.2x of the small; memory that does not grow with cases.

Part (b), many organizations: `--orgs` (50) organizations, each its own caller (token) with its
own dataset of `--org-cases` (200) cases and its own `sleepy` agent of `--org-sleep-ms` (50 ms)
counted under a probe of its own, start one eval run each at once (threads released by a
barrier). `EVAL_RUN_CONCURRENCY` = `EVAL_ORG_CONCURRENCY` = `--lanes` (2): the organizations
want `orgs x lanes` slots, more than the stack's `--workers` (50) case-task workers, so the
workers are the limit. For each organization: the time from its start request to its agent's
first call. A **slot round** is the mean time one worker takes per case during the bench:
`workers x busy / attempts`, where busy runs from the first agent call of any organization to
the end of the last, and attempts are every agent call; it is the agent's latency plus the
per-case overhead measured under this very load (recording, AWS round trips, waiting for a
core). Goal: no organization waits more than one slot round for its first case. Also printed:
the throughput (attempts/s), the share of runs completed within `--timeout-s`, and how many
cases a case-task delivery carried on with. `--carry-s N` is a what-if: a delivery carries on
with its lane for at most N seconds (0: never; every next task goes through the queue), where
the embedded stack's own window is 90 s (its context's 720 s less the 600 s case timeout and the
30 s margin) and a deployed case worker's 30 s (its 660 s Lambda timeout). Part (b) is in
`bench.scale_orgs`.

    python -m bench.scale [--part a|b|both] [--cases-large 20000] [--cases-small 500]
        [--concurrency 6] [--orgs 50] [--org-cases 200] [--org-sleep-ms 50] [--workers 50]
        [--lanes 2] [--timeout-s 900] [--carry-s N]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import threading
import time
from dataclasses import dataclass, field

from bench.pipeline import _cpu, _load, prepare, start_draft, wait_ended
from bench.scale_math import cases_at_limit, quarters, ratio, status_kb
from bench.scale_orgs import part_b

# -- memory ------------------------------------------------------------------------------------


def _status(pid: int) -> dict[str, int]:
    try:
        with open(f"/proc/{pid}/status") as f:
            return status_kb(f.read())
    except OSError:
        return {}


class RssWatch:
    """Samples the RSS of `pids` (name -> pid) every `every_s` seconds from `start()` to `stop()`;
    the kernel's own peak (`VmHWM`, reset at `start()` through `/proc/<pid>/clear_refs` where
    allowed) counts too. `before` and `peak` in kB by name."""

    def __init__(self, pids: dict[str, int], every_s: float = 0.05) -> None:
        self.pids = pids
        self.every_s = every_s
        self.before: dict[str, int] = {}
        self.peak: dict[str, int] = {}
        self.timeline: list[tuple[float, dict[str, int]]] = []
        """(seconds since `start()`, RSS kB by name), one sample a second."""
        self._t0 = 0.0
        self._reset: set[str] = set()
        self._done = threading.Event()
        self._thread = threading.Thread(target=self._loop, name="rss-watch", daemon=True)

    def start(self) -> None:
        """Read each process's RSS as `before`, reset its `VmHWM` where allowed, start sampling."""
        self._t0 = time.monotonic()
        for name, pid in self.pids.items():
            self.before[name] = _status(pid).get("VmRSS", 0)
            self.peak[name] = self.before[name]
            try:
                with open(f"/proc/{pid}/clear_refs", "w") as f:
                    f.write("5")  # resets VmHWM to the current RSS
                self._reset.add(name)
            except OSError:
                pass
        self._thread.start()

    def _sample(self) -> None:
        now: dict[str, int] = {}
        for name, pid in self.pids.items():
            s = _status(pid)
            now[name] = s.get("VmRSS", 0)
            seen = [now[name]] + ([s.get("VmHWM", 0)] if name in self._reset else [])
            self.peak[name] = max(self.peak[name], *seen)
        at = time.monotonic() - self._t0
        if not self.timeline or at - self.timeline[-1][0] >= 1.0:
            self.timeline.append((at, now))

    def _loop(self) -> None:
        while not self._done.wait(self.every_s):
            self._sample()

    def stop(self) -> None:
        """Stop sampling (one last sample first); `peak` holds the highest RSS seen."""
        self._done.set()
        self._thread.join()
        self._sample()


# -- part (a): one large run -------------------------------------------------------------------


@dataclass
class Sized:
    """One run of part (a)."""

    cases: int
    status: str
    attempts: int
    expected: int
    wall_s: float
    cpu_bench_s: float
    cpu_moto_s: float
    polls: int
    empty_receives: int
    per_op: dict[str, int] = field(default_factory=dict)
    rss_before_kb: dict[str, int] = field(default_factory=dict)
    rss_peak_kb: dict[str, int] = field(default_factory=dict)
    prepare_s: float = 0.0
    timeline: list[tuple[float, dict[str, int]]] = field(default_factory=list)
    """(seconds into the run, RSS kB by process), about one sample a second."""
    largest: dict[str, int] = field(default_factory=dict)
    """The largest item of each DynamoDB table after the run, in bytes as DynamoDB counts them."""
    stored: tuple[int, int] = (0, 0)
    """(items, bytes as DynamoDB counts them) in every table after the run."""
    tail_s: float = float("nan")
    """From the agent's last call's end to the run seen ended (its finalizing, mostly)."""

    def per_case_ms(self, cpu_s: float) -> float:
        """`cpu_s` seconds in ms per recorded attempt."""
        return cpu_s * 1000 / max(self.attempts, 1)

    @property
    def cpu_ms(self) -> float:
        """CPU ms per case attempt, both processes summed."""
        return self.per_case_ms(self.cpu_bench_s + self.cpu_moto_s)

    @property
    def requests_per_attempt(self) -> float:
        """AWS requests per recorded attempt (the benchmark's own left out)."""
        return sum(self.per_op.values()) / max(self.attempts, 1)


def run_sized(cases: int, concurrency: int, poll_s: float = 1.0) -> Sized:
    """One run of `cases` cases at an instant agent on a fresh stack (`bench.pipeline.measure`'s
    set-up), with both processes' RSS watched from the start request to the run's end. The
    benchmark's own progress polls (a `GetItem` of the run and a `BatchGetItem` of the caller's
    membership each) and empty long-poll receives are left out of the request counts."""
    from assay_local.moto_http import EMPTY_RECEIVE_KEY
    from assay_local.stack import EmbeddedStack
    from bench import agents
    from bench.client import api_caller

    env = {
        "EVAL_RUN_CONCURRENCY": str(concurrency),
        "EVAL_ORG_CONCURRENCY": str(max(concurrency, 6)),
    }
    with EmbeddedStack(
        env=env, workers=concurrency, scheduler=False, poll_wait_seconds=10
    ) as stack:
        call = api_caller(stack, "org_bench", "bench@assay.local", timeout=120)
        p0 = time.monotonic()
        dataset_id, agent_id, probe = prepare(call, cases, 0)
        prepare_s = time.monotonic() - p0
        pids = {"bench": os.getpid()}
        if stack.moto.pid is not None:
            pids["moto"] = stack.moto.pid
        watch = RssWatch(pids)
        stack.moto.reset_counts()
        cpu0, moto0 = _cpu(stack), stack.moto.cpu_seconds()
        watch.start()
        t0 = time.monotonic()
        run = start_draft(call, agent_id, dataset_id)
        p, polls = wait_ended(call, run["run_id"], poll_s)
        t1 = time.monotonic()
        wall = t1 - t0
        watch.stop()
        asked = agents.span(probe)
        cpu_all, cpu_moto = _cpu(stack) - cpu0, stack.moto.cpu_seconds() - moto0
        counts = stack.moto.requests()
        largest, stored = largest_items(stack.endpoint_url, stack.settings.aws_default_region)
    empty = counts.get(EMPTY_RECEIVE_KEY, 0)
    per_op = {k: v for k, v in counts.items() if k != EMPTY_RECEIVE_KEY}
    if "sqs.ReceiveMessage" in per_op:
        per_op["sqs.ReceiveMessage"] -= empty
    for own in ("dynamodb.GetItem", "dynamodb.BatchGetItem"):
        if own in per_op:
            per_op[own] -= polls
    return Sized(
        cases,
        p["status"],
        int(p.get("recorded") or 0),
        int(p.get("expected") or 0),
        wall,
        cpu_all - cpu_moto,
        cpu_moto,
        polls,
        empty,
        per_op,
        watch.before,
        watch.peak,
        prepare_s,
        watch.timeline,
        largest,
        stored,
        t1 - asked[1] if asked else float("nan"),
    )


def largest_items(endpoint_url: str, region: str) -> tuple[dict[str, int], tuple[int, int]]:
    """The largest item of every DynamoDB table at `endpoint_url`, in bytes as DynamoDB counts
    them (`bench.aws_prices.item_bytes`), by table name; and (items, bytes) over every table
    (scanned after the measurement)."""
    import boto3

    from bench.aws_prices import item_bytes

    client = boto3.client("dynamodb", endpoint_url=endpoint_url, region_name=region)
    out: dict[str, int] = {}
    items = total = 0
    for table in client.list_tables()["TableNames"]:
        for page in client.get_paginator("scan").paginate(TableName=table):
            for item in page.get("Items", ()):
                size = item_bytes(item)
                out[table] = max(out.get(table, 0), size)
                items, total = items + 1, total + size
    return out, (items, total)


def _mb(kb: int) -> str:
    return f"{kb / 1024:.0f} MB"


def print_sized(m: Sized) -> None:
    """Print one run of part (a): wall, CPU per attempt, requests, items, memory."""
    print(
        f"  {m.cases:,} cases: {m.status}, {m.attempts:,}/{m.expected:,} attempts recorded; "
        f"import and agent {m.prepare_s:.1f} s"
    )
    print(
        f"    wall {m.wall_s:.1f} s ({m.attempts / m.wall_s if m.wall_s else 0:.1f} attempts/s); "
        f"CPU per attempt: benchmark process {m.per_case_ms(m.cpu_bench_s):.1f} ms + moto "
        f"{m.per_case_ms(m.cpu_moto_s):.1f} ms = {m.cpu_ms:.1f} ms"
    )
    print(
        f"    AWS requests per attempt {m.requests_per_attempt:.2f} "
        f"(left out: {m.polls} progress polls, {m.empty_receives} empty receives)"
    )
    top = sorted(m.per_op.items(), key=lambda kv: -kv[1])[:6]
    print("      " + ", ".join(f"{op} {n / max(m.attempts, 1):.3f}" for op, n in top))
    big = sorted(m.largest.items(), key=lambda kv: -kv[1])[:3]
    print(
        "    largest items: "
        + ", ".join(f"{table} {size / 1024:.1f} KB" for table, size in big)
        + " (DynamoDB's limit: 400 KB)"
    )
    print(
        f"    stored after the run: {m.stored[0]:,} items, {m.stored[1] / 2**20:.1f} MB as "
        f"DynamoDB counts them; last agent call to the run seen ended: {m.tail_s:.1f} s"
    )
    for name in m.rss_before_kb:
        before, peak = m.rss_before_kb[name], m.rss_peak_kb[name]
        print(
            f"    RSS {name}: {_mb(before)} before the run, {_mb(peak)} at its peak "
            f"(+{_mb(peak - before)})"
        )
        marks = quarters(m.timeline)
        print(
            f"      RSS {name} through the run: "
            + ", ".join(f"{q}% {_mb(kb.get(name, 0))}" for q, kb in marks)
        )


def part_a(large: int, small: int, concurrency: int) -> tuple[Sized, Sized]:
    """Part (a): the small run, then the large, each on a fresh stack; prints both and the
    goals' lines."""
    print(
        f"(a) one eval run at an instant agent, {concurrency} lanes: {small:,} cases, then "
        f"{large:,}",
        flush=True,
    )
    s = run_sized(small, concurrency)
    print_sized(s)
    print(f"    ({_load()})", flush=True)
    g = run_sized(large, concurrency)
    print_sized(g)
    print(f"    ({_load()})", flush=True)
    for name in s.rss_before_kb:
        grow_s = s.rss_peak_kb[name] - s.rss_before_kb[name]
        grow_g = g.rss_peak_kb.get(name, 0) - g.rss_before_kb.get(name, 0)
        print(
            f"memory growth during the run, {name}: +{_mb(grow_s)} at {small:,} cases, "
            f"+{_mb(grow_g)} at {large:,} (goal: no growth with cases)"
        )
    for table in sorted(g.largest, key=lambda t: -g.largest[t]):
        a, b = s.largest.get(table, 0), g.largest[table]
        if b > a and large > small and b >= 50 * 1024:
            print(
                f"item growing with cases: {table} {a / 1024:.1f} KB at {small:,} cases, "
                f"{b / 1024:.1f} KB at {large:,}; 400 KB at about "
                f"{cases_at_limit(small, a, large, b):,} cases (ids as these)"
            )
    print(
        f"CPU per case ratio {large}/{small}: {ratio(g.cpu_ms, s.cpu_ms):.2f} "
        f"({g.cpu_ms:.1f} ms / {s.cpu_ms:.1f} ms; goal <= 1.2)"
    )
    return s, g


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--part", choices=("a", "b", "both"), default="both")
    parser.add_argument("--cases-large", type=int, default=20_000)
    parser.add_argument("--cases-small", type=int, default=500)
    parser.add_argument("--concurrency", type=int, default=6, help="(a): the run's lanes")
    parser.add_argument("--sleep-ms", type=float, default=0.0, help="(a): must be 0 (instant)")
    parser.add_argument("--orgs", type=int, default=50)
    parser.add_argument("--org-cases", type=int, default=200)
    parser.add_argument("--org-sleep-ms", type=float, default=50.0)
    parser.add_argument("--workers", type=int, default=50, help="(b): case-task workers")
    parser.add_argument("--lanes", type=int, default=2, help="(b): run and org concurrency")
    parser.add_argument("--timeout-s", type=float, default=900.0, help="(b): wait for the runs")
    parser.add_argument(
        "--carry-s",
        type=int,
        default=None,
        help="(b) what-if: a delivery carries on with its lane at most this long (0: never)",
    )
    args = parser.parse_args(argv)
    if args.sleep_ms != 0:
        parser.error("--sleep-ms: part (a) measures an instant agent; leave it at 0")
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {_load()}",
        flush=True,
    )
    ok = True
    if args.part in ("a", "both"):
        s, g = part_a(args.cases_large, args.cases_small, args.concurrency)
        ok = ok and s.status == g.status == "completed"
    if args.part in ("b", "both"):
        part_b(
            args.orgs,
            args.org_cases,
            args.org_sleep_ms,
            args.workers,
            args.lanes,
            args.timeout_s,
            args.carry_s,
        )
    print(f"machine at the end: {_load()}")
    return 0 if ok else 1


if __name__ == "__main__":
    sys.exit(main())
