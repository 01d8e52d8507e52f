"""Part (b) of the scale benchmark (`bench.scale`): many organizations start an eval run each
at once on one embedded stack, and each one's wait for its first case is set against a slot
round (`bench.scale_math.slot_round_s`)."""

from __future__ import annotations

import contextlib
import math
import statistics
import threading
import time
from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from bench.pipeline import _cpu, _load, prepare
from bench.scale_math import carry_margin_for, fair_rounds, slot_round_s


@dataclass
class Org:
    """One organization of part (b)."""

    org_id: str
    call: Any
    dataset_id: str = ""
    agent_id: str = ""
    probe: str = ""
    run_id: str = ""
    started: float = float("nan")
    """monotonic seconds just before its start request."""
    answered: float = float("nan")
    """monotonic seconds when its start request answered."""
    status: str = ""
    recorded: int = 0
    ended: float = float("nan")
    """monotonic seconds when its run was first seen ended."""

    @property
    def first_wait_s(self) -> float:
        from bench import agents

        first = agents.first(self.probe)
        return first - self.started if first is not None else float("nan")


def _prepare_org(o: Org, cases: int, sleep_ms: float) -> None:
    o.dataset_id, o.agent_id, o.probe = prepare(o.call, cases, sleep_ms)


def _threads(target: Any, items: list[Any], *args: Any, at_once: int | None = None) -> None:
    """`target(item, *args)` for every item, `at_once` threads at a time (default: all); the
    first error raised is raised here."""
    from concurrent.futures import ThreadPoolExecutor

    with ThreadPoolExecutor(max_workers=at_once or len(items)) as pool:
        for f in [pool.submit(target, x, *args) for x in items]:
            f.result()


@contextlib.contextmanager
def carry_window(window_s: int | None) -> Iterator[None]:
    """With `window_s`, a case-task delivery of this process carries on with its lane for at
    most `window_s` seconds (0: it never carries on; every next task is a message), by setting
    `run_case.CARRY_MARGIN_SECONDS` for the block (a what-if of the benchmark: the stack's own
    window is its context's timeout less the case timeout and the margin). None: as it is."""
    if window_s is None:
        yield
        return
    from assay_local.poller import LAMBDA_MAX_TIMEOUT_SECONDS
    from chalicelib.config import Settings
    from chalicelib.services import run_case

    settings = Settings()
    context_s = min(settings.visibility_timeout_seconds, LAMBDA_MAX_TIMEOUT_SECONDS)
    saved = run_case.CARRY_MARGIN_SECONDS
    run_case.CARRY_MARGIN_SECONDS = carry_margin_for(
        window_s, settings.evaluation_case_timeout_seconds, context_s
    )
    try:
        yield
    finally:
        run_case.CARRY_MARGIN_SECONDS = saved


def part_b(
    orgs: int,
    cases: int,
    sleep_ms: float,
    workers: int,
    lanes: int,
    timeout_s: float,
    carry_s: int | None = None,
) -> float:
    """Part (b): `orgs` organizations start a run each at once; prints every figure and the goal
    line; returns the worst first-case wait in slot rounds. `carry_s`: see `carry_window`."""
    from assay_local.stack import EmbeddedStack
    from bench import agents
    from bench.client import api_caller

    print(
        f"(b) {orgs} organizations x {cases} cases, agent {sleep_ms:g} ms, {workers} workers, "
        f"EVAL_RUN_CONCURRENCY = EVAL_ORG_CONCURRENCY = {lanes} ({orgs * lanes} slots wanted)",
        flush=True,
    )
    if orgs * lanes <= workers:
        print(f"    note: {orgs * lanes} slots wanted <= {workers} workers: workers are no limit")
    if carry_s is not None:
        print(f"    what-if: a delivery carries on with its lane for at most {carry_s:g} s")
    env = {"EVAL_RUN_CONCURRENCY": str(lanes), "EVAL_ORG_CONCURRENCY": str(lanes)}
    with (
        carry_window(carry_s),
        EmbeddedStack(env=env, workers=workers, scheduler=False, poll_wait_seconds=10) as stack,
    ):
        # Each organization's connection is opened while preparing and kept open (the embedded
        # API listens with socketserver's backlog of 5: 50 connections opened at once are reset)
        # so that the start requests released together do not connect anew.
        org_list = [
            Org(
                f"org_scale_{i:03d}",
                api_caller(stack, f"org_scale_{i:03d}", f"u{i}@x", timeout=120, keepalive_s=3600),
            )
            for i in range(orgs)
        ]
        p0 = time.monotonic()
        _threads(_prepare_org, org_list, cases, sleep_ms, at_once=4)
        print(f"    prepared in {time.monotonic() - p0:.1f} s ({_load()})", flush=True)
        stack.moto.reset_counts()
        cpu0 = _cpu(stack)
        barrier = threading.Barrier(orgs)

        def start(o: Org) -> None:
            barrier.wait()
            o.started = time.monotonic()
            o.run_id = o.call(
                "POST",
                f"/api/v1/agents/{o.agent_id}/eval-runs",
                json={"dataset_id": o.dataset_id, "candidate": "draft"},
            )["run_id"]
            o.answered = time.monotonic()

        _threads(start, org_list)
        t0 = min(o.started for o in org_list)
        deadline = t0 + timeout_s
        open_ = list(org_list)
        while open_ and time.monotonic() < deadline:
            for o in list(open_):
                p = o.call("GET", f"/api/v1/eval-runs/{o.run_id}/progress")
                o.status, o.recorded = p["status"], int(p.get("recorded") or 0)
                if o.status not in ("queued", "running"):
                    o.ended = time.monotonic()
                    open_.remove(o)
            time.sleep(0.5)
        t_end = time.monotonic()
        cpu = _cpu(stack) - cpu0
        counts = stack.moto.requests()
    calls = sum(agents.calls(o.probe) for o in org_list)
    spans = [agents.span(o.probe) for o in org_list]
    firsts = [s[0] for s in spans if s]
    lasts = [s[1] for s in spans if s]
    busy = max(lasts) - min(firsts) if firsts else 0.0
    rnd = slot_round_s(workers, max(calls, 1), busy)
    waits = sorted((o.first_wait_s, o.org_id) for o in org_list)
    known = [w for w, _ in waits if not math.isnan(w)]
    worst = max(known) if len(known) == orgs else float("inf")
    completed = sum(o.status == "completed" for o in org_list)
    recorded = sum(o.recorded for o in org_list)
    received = counts.get("sqs.ReceiveMessage", 0) - counts.get("sqs.ReceiveMessage.empty", 0)
    first_end = min((o.ended for o in org_list if not math.isnan(o.ended)), default=math.inf)
    after_end = sum(1 for o in org_list if (agents.first(o.probe) or math.inf) > first_end)
    print(
        f"    slot round = workers x busy / attempts = {workers} x {busy:.1f} s / {calls} = "
        f"{rnd * 1000:.0f} ms: the agent's {sleep_ms:g} ms + {rnd * 1000 - sleep_ms:.0f} ms "
        "per-case overhead under this load (busy: first agent call to last call's end)"
    )
    print(
        f"    throughput {recorded / (t_end - t0):.1f} attempts/s recorded over "
        f"{t_end - t0:.1f} s ({calls / busy if busy else 0:.1f} agent calls/s while busy); "
        f"CPU {cpu * 1000 / max(calls, 1):.1f} ms per attempt over both processes"
    )
    print(
        f"    runs completed: {completed}/{orgs} ({completed / orgs:.0%}) within "
        f"{timeout_s:g} s; attempts recorded {recorded:,}/{orgs * cases:,}"
    )
    print(
        f"    case-task messages received {received} for {calls} agent calls: "
        f"{calls / max(received, 1):.1f} cases per delivery (a delivery carries on with its "
        "lane while its invocation has time)"
    )
    w_rounds = [w / rnd for w in known]
    if w_rounds:
        print(
            f"    first-case wait (start request to first agent call): min "
            f"{min(known):.2f} s, median {statistics.median(known):.2f} s, max {max(known):.2f}"
            f" s; in slot rounds: median {statistics.median(w_rounds):.1f}, max "
            f"{max(w_rounds):.1f}; orgs over one round: {sum(r > 1 for r in w_rounds)}/{orgs}; "
            f"fair bound ceil(orgs / workers) = {fair_rounds(orgs, workers)}"
        )
    answers = [o.answered - o.started for o in org_list]
    past = [o.first_wait_s - (o.answered - o.started) for o in org_list]
    print(
        f"    of which the start request itself (to its answer): median "
        f"{statistics.median(answers):.2f} s, max {max(answers):.2f} s; from the answer to the "
        f"first agent call: median {statistics.median(past):.2f} s, max {max(past):.2f} s "
        f"({max(past) / rnd:.1f} slot rounds)"
    )
    print(f"    orgs whose first case came after another org's run had ended: {after_end}")
    print("    every first-case wait, s: " + " ".join(f"{w:.1f}" for w, _ in waits))
    worst_rounds = worst / rnd if rnd else float("inf")
    print(
        f"worst first-case wait: {worst_rounds:.1f} slot rounds ({worst:.2f} s; slot round "
        f"{rnd * 1000:.0f} ms; goal <= 1)"
    )
    return worst_rounds
