"""Pipeline benchmark: how close a run comes to its concurrency floor, what it costs in CPU, and
what it costs in AWS requests.

One run of `--cases` cases against a `python` agent that sleeps `--sleep-ms`,
`EVAL_RUN_CONCURRENCY=--concurrency`, on the embedded stack (moto server on 127.0.0.1, pollers,
HTTP routes), each measurement on a fresh stack. Prints wall time, the floor
(cases x sleep / concurrency), efficiency = floor / wall, the CPU the whole process tree used
(this process: routes, pollers, handlers; and moto's), the most attempts seen in flight at once,
and AWS requests per case attempt by operation (every request moto served, empty long-poll
receives left out).

`--suite` measures what issue 12 asks, in one go: `--rounds` runs of 500 x 200 ms x 6 (the
efficiency's median and range), one of 2,000 x 200 ms, and an instant agent's CPU per case at 500
and at 2,000 cases (the ratio of the two says whether the cost per case grows with the run).
Targets: efficiency >= 0.90; CPU <= 15 ms per case at an instant agent, within 1.2x from 500 to
2,000 cases; <= 8 AWS requests per case attempt; in flight never above the limit.

`--latency lognormal` or `--latency one-slow` (one case in twenty takes twenty times the median)
draws each case's duration up front from `--seed` (`--sleep-ms` is then the median), and prints
the efficiency against the list-scheduling floor of those exact durations: the makespan of the
greedy list schedule (cases in plan order, each on the first slot free) at the run's concurrency,
beside the lower bound max(total / concurrency, longest case).

    python -m bench.pipeline [--cases 500] [--sleep-ms 200] [--concurrency 6]
    python -m bench.pipeline --latency one-slow [--seed 1] [--cases 500] [--concurrency 6]
    python -m bench.pipeline --suite [--rounds 3]
"""

from __future__ import annotations

import argparse
import heapq
import os
import platform
import statistics
import sys
import time
from collections.abc import Callable
from dataclasses import dataclass, field
from typing import Any


@dataclass
class Measured:
    """One run of the pipeline: figures of `measure`."""

    cases: int
    sleep_ms: float
    concurrency: int
    status: str
    attempts: int
    expected: int
    wall_s: float
    cpu_s: float
    """CPU seconds of the process tree (this process and moto's) from the start to the end."""
    moto_cpu_s: float
    peak: int
    polls: int
    empty_receives: int
    per_op: dict[str, int] = field(default_factory=dict)
    startup_s: float = float("nan")
    """From the start request to the agent's first call."""
    tail_s: float = float("nan")
    """From the agent's last call's end to the run seen completed."""
    latency: str = "fixed"
    seed: int = 0
    durations_ms: list[float] = field(default_factory=list)
    """Each case's drawn duration, in case order (empty for `fixed`)."""

    @property
    def floor_s(self) -> float:
        """cases x sleep / concurrency: the least a run can take."""
        return self.cases * self.sleep_ms / 1000.0 / self.concurrency

    @property
    def efficiency(self) -> float:
        return self.floor_s / self.wall_s if self.wall_s else 0.0

    @property
    def list_floor_s(self) -> float:
        """The greedy list schedule's makespan over the drawn durations (`list_schedule_s`)."""
        return list_schedule_s(self.durations_ms, self.concurrency)

    @property
    def lower_bound_s(self) -> float:
        """max(total / concurrency, longest) over the drawn durations, in seconds."""
        if not self.durations_ms:
            return 0.0
        return max(sum(self.durations_ms) / self.concurrency, max(self.durations_ms)) / 1000.0

    @property
    def cpu_ms_per_case(self) -> float:
        return self.cpu_s * 1000 / max(self.attempts, 1)

    @property
    def requests_per_attempt(self) -> float:
        return sum(self.per_op.values()) / max(self.attempts, 1)


def list_schedule_s(durations_ms: list[float], slots: int) -> float:
    """The makespan in seconds of the greedy list schedule: the durations (ms) taken in order,
    each started on the first of `slots` slots to fall free. Raises ValueError for `slots < 1`."""
    if slots < 1:
        raise ValueError(f"slots must be at least 1, not {slots}")
    free = [0.0] * slots
    for d in durations_ms:
        heapq.heappush(free, heapq.heappop(free) + d)
    return max(free) / 1000.0


def _cpu(stack: Any) -> float:
    """CPU seconds used so far by this process (routes, pollers, handlers) and moto's."""
    t = os.times()
    return t.user + t.system + stack.moto.cpu_seconds()


def prepare(
    call: Any,
    cases: int,
    sleep_ms: float,
    price: dict[str, str] | None = None,
    latency: str = "fixed",
    seed: int = 1,
) -> tuple[str, str, str]:
    """Import a dataset of `cases` cases (reference "42", scored `equals`) and make the `sleepy`
    agent that sleeps `sleep_ms` (the median, drawn per case by `latency` and `seed`: see
    `bench.agents.durations_ms`) through `call` (`bench.client.api_caller`); the agent's spec is
    priced with `price` (`{"input_per_mtok_usd", "output_per_mtok_usd"}`) when given. Returns
    (dataset id, agent id, the probe its calls are counted under in `bench.agents`)."""
    ds = call("POST", "/api/v1/datasets", json={"name": "bench"})
    call(
        "POST",
        f"/api/v1/datasets/{ds['dataset_id']}/versions",
        json={
            "scoring": {"required": ["equals"]},
            "cases": [
                {"case_id": f"c{i:05d}", "input": f"question {i}", "reference": "42"}
                for i in range(cases)
            ],
        },
    )
    probe = f"bench-{time.time_ns()}"
    spec: dict[str, Any] = {
        "runtime": "python",
        "entrypoint": "bench.agents:sleepy",
        "options": {
            "sleep_ms": sleep_ms,
            "probe": probe,
            "latency": latency,
            "cases": cases,
            "seed": seed,
        },
    }
    if price:
        spec["price"] = price
    agent = call("POST", "/api/v1/agents", json={"name": "sleepy", "spec": spec})
    return ds["dataset_id"], agent["agent_id"], probe


def start_draft(call: Any, agent_id: str, dataset_id: str) -> dict[str, Any]:
    """Start an eval run of the agent's draft on the dataset through `call`; the run as started."""
    return call(  # type: ignore[no-any-return]
        "POST",
        f"/api/v1/agents/{agent_id}/eval-runs",
        json={"dataset_id": dataset_id, "candidate": "draft"},
    )


def wait_ended(
    call: Any,
    run_id: str,
    poll_s: float | None = None,
    settled: Callable[[float], bool] | None = None,
) -> tuple[dict[str, Any], int]:
    """Poll the run's progress until it is neither queued nor running; (its last progress, how
    many polls). `poll_s` None: every 0.2 s while cases are asked, every 10 ms once all are in,
    so the run's end is seen within ~10 ms of it and the polls do not compete with the lanes.
    `settled(timeout_s)`: blocks until every agent call of the run ended (True) or the timeout
    (False); with it the run is polled once a second while its cases are asked (a poll is API
    work the run would not do without the benchmark: 3 ms of CPU each)."""
    polls = 0
    while True:
        p = call("GET", f"/api/v1/eval-runs/{run_id}/progress")
        polls += 1
        if p["status"] not in ("queued", "running"):
            return p, polls
        if poll_s is not None:
            time.sleep(poll_s)
            continue
        done = int(p.get("recorded") or 0) >= int(p.get("expected") or 1)
        if done or (settled is not None and settled(1.0)):
            time.sleep(0.01)
        elif settled is None:
            time.sleep(0.2)


def measure(
    cases: int,
    sleep_ms: float,
    concurrency: int,
    workers: int | None = None,
    *,
    price: dict[str, str] | None = None,
    latency: str = "fixed",
    seed: int = 1,
) -> Measured:
    """Start a stack, import `cases` cases, run them once against the sleepy agent (its spec
    priced with `price` when given, see `prepare`), stop.

    `latency`/`seed`: how each case's duration is drawn (`bench.agents.durations_ms`, `sleep_ms`
    its median).

    The benchmark's own API calls go to the Chalice routes, which read DynamoDB too: a progress
    poll's `GetItem` of the run and `BatchGetItem` of the caller's membership are left out of the
    request counts, and so are empty long-poll receives."""
    from assay_local.moto_http import EMPTY_RECEIVE_KEY
    from assay_local.stack import EmbeddedStack
    from bench import agents
    from bench.client import api_caller

    drawn = agents.durations_ms(latency, cases, sleep_ms, seed) if latency != "fixed" else []

    env = {
        "EVAL_RUN_CONCURRENCY": str(concurrency),
        "EVAL_ORG_CONCURRENCY": str(max(concurrency, 6)),
    }
    with EmbeddedStack(
        env=env, workers=workers or concurrency, scheduler=False, poll_wait_seconds=10
    ) as stack:
        call = api_caller(stack, "org_bench", "bench@assay.local", timeout=60)
        dataset_id, agent_id, probe = prepare(call, cases, sleep_ms, price, latency, seed)
        stack.moto.reset_counts()
        cpu0, moto0 = _cpu(stack), stack.moto.cpu_seconds()
        t0 = time.monotonic()
        run = start_draft(call, agent_id, dataset_id)
        p, polls = wait_ended(
            call, run["run_id"], settled=lambda t: agents.wait_calls(probe, cases, t)
        )
        t1 = time.monotonic()
        wall = t1 - t0
        asked = agents.span(probe)
        cpu, moto_cpu = _cpu(stack) - cpu0, stack.moto.cpu_seconds() - moto0
        counts = stack.moto.requests()
    empty = counts.get(EMPTY_RECEIVE_KEY, 0)
    per_op = {k: v for k, v in counts.items() if k != EMPTY_RECEIVE_KEY}
    if "sqs.ReceiveMessage" in per_op:
        per_op["sqs.ReceiveMessage"] -= empty
    for own in ("dynamodb.GetItem", "dynamodb.BatchGetItem"):  # a poll: the run, the caller
        if own in per_op:
            per_op[own] -= polls
    return Measured(
        cases,
        sleep_ms,
        concurrency,
        p["status"],
        p["recorded"],
        p["expected"],
        wall,
        cpu,
        moto_cpu,
        agents.peak(probe),
        polls,
        empty,
        per_op,
        asked[0] - t0 if asked else float("nan"),
        t1 - asked[1] if asked else float("nan"),
        latency,
        seed,
        drawn,
    )


def _print_one(m: Measured) -> None:
    skew = f" --latency {m.latency} --seed {m.seed}" if m.durations_ms else ""
    print(
        f"command: python -m bench.pipeline --cases {m.cases} --sleep-ms {m.sleep_ms:g} "
        f"--concurrency {m.concurrency}{skew}"
    )
    print(f"status: {m.status}  attempts recorded: {m.attempts}/{m.expected}")
    if m.durations_ms:
        total = sum(m.durations_ms) / 1000.0
        print(
            f"durations drawn: total {total:.2f} s, median {statistics.median(m.durations_ms):.0f}"
            f" ms, longest {max(m.durations_ms):.0f} ms"
        )
        print(
            f"wall: {m.wall_s:.2f} s   list-scheduling floor (greedy makespan): "
            f"{m.list_floor_s:.2f} s   lower bound max(total/c, longest): {m.lower_bound_s:.2f} s"
        )
        print(f"efficiency against the list-scheduling floor: {m.list_floor_s / m.wall_s:.3f}")
        print(f"efficiency against the lower bound: {m.lower_bound_s / m.wall_s:.3f}")
    else:
        print(f"wall: {m.wall_s:.2f} s   floor: {m.floor_s:.2f} s   efficiency: {m.efficiency:.3f}")
    print(
        f"start request to first agent call: {m.startup_s:.2f} s; last agent call to the run "
        f"seen ended: {m.tail_s:.2f} s (progress polled once a second while cases are asked, "
        "every 10 ms once every agent call ended)"
    )
    print(
        f"CPU: {m.cpu_s:.2f} s over the process tree (moto's process {m.moto_cpu_s:.2f} s), "
        f"{m.cpu_ms_per_case:.1f} ms per case attempt"
    )
    print(f"most in flight at once: {m.peak} (limit {m.concurrency})")
    total = sum(m.per_op.values())
    print(
        f"AWS requests per case attempt: {m.requests_per_attempt:.2f} "
        f"(total {total}; left out: {m.empty_receives} empty long-poll receives, the benchmark's "
        f"own {m.polls} progress polls)"
    )
    for op, n in sorted(m.per_op.items(), key=lambda kv: -kv[1]):
        print(f"  {op:<36} {n:>7}  {n / max(m.attempts, 1):6.2f}")


def _load() -> str:
    try:
        return "load average " + " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        return "load average unknown"


def suite(rounds: int, concurrency: int) -> int:
    """Issue 12's pipeline figures, each on a fresh stack; returns 0 when every run completed."""
    rows: list[tuple[str, Measured]] = []
    for i in range(rounds):
        rows.append((f"500 x 200 ms, round {i + 1}", measure(500, 200, concurrency)))
        print(f"  {rows[-1][0]}: efficiency {rows[-1][1].efficiency:.3f} ({_load()})", flush=True)
    for label, args in (
        ("2,000 x 200 ms", (2000, 200)),
        ("500 x instant", (500, 0)),
        ("2,000 x instant", (2000, 0)),
    ):
        rows.append((label, measure(*args, concurrency)))
        print(f"  {label}: done ({_load()})", flush=True)
    print()
    print(
        f"{'run':<26} {'wall s':>8} {'floor s':>8} {'eff.':>6} {'CPU ms/case':>12} {'req/att':>8}"
        f" {'start s':>8} {'tail s':>7}"
    )
    for label, m in rows:
        print(
            f"{label:<26} {m.wall_s:>8.2f} {m.floor_s:>8.2f} "
            f"{m.efficiency if m.sleep_ms else float('nan'):>6.3f} "
            f"{m.cpu_ms_per_case:>12.1f} {m.requests_per_attempt:>8.2f}"
            f" {m.startup_s:>8.2f} {m.tail_s:>7.2f}"
        )
    effs = [m.efficiency for label, m in rows if label.startswith("500 x 200")]
    small = next(m for label, m in rows if label == "500 x instant")
    big = next(m for label, m in rows if label == "2,000 x instant")
    print()
    print(
        f"efficiency at 500 x 200 ms x {concurrency}: median {statistics.median(effs):.3f} "
        f"(range {min(effs):.3f}-{max(effs):.3f} over {len(effs)} runs; goal >= 0.90)"
    )
    print(
        f"CPU per case at an instant agent: {small.cpu_ms_per_case:.1f} ms at 500, "
        f"{big.cpu_ms_per_case:.1f} ms at 2,000: ratio "
        f"{big.cpu_ms_per_case / small.cpu_ms_per_case:.2f} (goals <= 15 ms, ratio <= 1.2)"
    )
    print(f"most in flight at once: {max(m.peak for _, m in rows)} (limit {concurrency})")
    return 0 if all(m.status == "completed" for _, m in rows) else 1


def agents_latencies() -> tuple[str, ...]:
    """The `--latency` choices (`bench.agents.LATENCIES`)."""
    from bench.agents import LATENCIES

    return LATENCIES


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--cases", type=int, default=500)
    parser.add_argument("--sleep-ms", type=float, default=200.0)
    parser.add_argument("--concurrency", type=int, default=6)
    parser.add_argument(
        "--workers",
        type=int,
        default=None,
        help="threads polling the case-task queue (default: the concurrency)",
    )
    parser.add_argument(
        "--latency",
        choices=agents_latencies(),
        default="fixed",
        help="each case's duration: fixed (--sleep-ms), lognormal or one-slow (median --sleep-ms)",
    )
    parser.add_argument("--seed", type=int, default=1, help="--latency: the draw's seed")
    parser.add_argument("--suite", action="store_true", help="issue 12's figures (see above)")
    parser.add_argument("--rounds", type=int, default=3, help="--suite: runs of 500 x 200 ms")
    args = parser.parse_args(argv)
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, {_load()}"
    )
    if args.suite:
        return suite(args.rounds, args.concurrency)
    m = measure(
        args.cases,
        args.sleep_ms,
        args.concurrency,
        args.workers,
        latency=args.latency,
        seed=args.seed,
    )
    _print_one(m)
    return 0 if m.status == "completed" else 1


if __name__ == "__main__":
    sys.exit(main())
