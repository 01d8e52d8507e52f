"""Review decision benchmark: what one person's decision costs when 10 runs and 3 suite results
rest on the answer (docs/guides/review.md), in wall time, CPU and AWS requests.

On the embedded stack (moto server on 127.0.0.1, the HTTP routes, the SQS workers): an agent whose
version 2 breaks one case of 10 that version 1 passed; run R0 (v2 beside v1) confirms the
regression and sends it to the review queue; six runs of version 3 compare with R0's first
answers (`baseline_run_id`), and three suites each start a run of version 3 against R0 the way a
suite starts its runs: ten runs rest on R0's failed answer, three of them with a suite result.
Then `--rounds` times: a decision (`pass`) on the item, then its Undo, each through
`POST /api/v1/datasets/{id}/review/{item}/...`. Printed per decision and per Undo: wall ms, CPU
ms over the process tree (this process: the client, the routes; and moto's), and moto's requests
by operation; beside the floor measured in the same run: one `GET /api/v1/eval-runs/{id}` of R0.

    python -m bench.review [--rounds 5]
"""

from __future__ import annotations

import argparse
import json
import os
import platform
import sys
import time
from collections.abc import Callable
from typing import Any

ORG = "org_bench_review"
CASES = [{"case_id": f"c{i:03d}", "input": f"question {i}", "reference": "42"} for i in range(10)]


def _spec(answers: dict[str, str] | None = None) -> dict[str, Any]:
    options: dict[str, Any] = {"sleep_ms": 0, "answer": "42"}
    if answers:
        options["answers"] = answers
    return {"runtime": "python", "entrypoint": "bench.agents:sleepy", "options": options}


def _cpu(stack: Any) -> float:
    """CPU seconds used so far by this process and moto's."""
    t = os.times()
    return t.user + t.system + stack.moto.cpu_seconds()


def _wait(call: Callable[..., Any], run_id: str) -> dict[str, Any]:
    while True:
        run = call("GET", f"/api/v1/eval-runs/{run_id}")
        if run["status"] not in ("queued", "running"):
            return run
        time.sleep(0.1)


def _world(call: Callable[..., Any]) -> tuple[str, str, str, list[str]]:
    """The agent, dataset, R0 and the item of its regression; returns (dataset, item, R0, the
    ids of the nine runs resting on it)."""
    ds = call(
        "POST",
        "/api/v1/datasets",
        json={"name": "review", "scoring": {"required": ["equals"]}, "cases": CASES},
    )["dataset_id"]
    agent = call("POST", "/api/v1/agents", json={"name": "bench", "spec": _spec()})["agent_id"]

    def publish(answers: dict[str, str] | None) -> None:
        call("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": _spec(answers)})
        call("POST", f"/api/v1/agents/{agent}/versions")

    publish(None)
    publish({"c002": "7"})
    start = {"dataset_id": ds, "candidate": "version"}
    r0 = call(
        "POST",
        f"/api/v1/agents/{agent}/eval-runs",
        json={**start, "version": 2, "paired_baseline": True},
    )["run_id"]
    assert _wait(call, r0)["routed_to_review"] == 1, "R0 did not send its regression"
    publish({"c002": "7"})
    call("POST", "/api/v1/environments", json={"environment_id": "production"})
    others = [_suite_run(call, agent, ds, r0, n) for n in range(3)]
    for _ in range(6):
        run = call(
            "POST",
            f"/api/v1/agents/{agent}/eval-runs",
            json={**start, "version": 3, "baseline_run_id": r0},
        )["run_id"]
        _wait(call, run)
        others.append(run)
    [item] = call("GET", f"/api/v1/datasets/{ds}/review?state=waiting")["items"]
    return ds, item["item_id"], r0, others


def _suite_run(call: Callable[..., Any], agent: str, ds: str, r0: str, n: int) -> str:
    """A suite's run of version 3 started as a suite starts its runs (`services.suites`), with R0
    as its baseline: its end keeps the suite's result. Returns the run id."""
    from chalicelib import bootstrap
    from chalicelib.services import access, runs

    sid = call(
        "POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": ds, "name": f"nightly {n}"}
    )["suite_id"]
    call("POST", f"/api/v1/agents/{agent}/suites/{sid}/pause", json={"reason": "bench"})
    c = bootstrap.container()
    suite = c.suites.get(ORG, agent, sid)
    assert suite is not None
    who = access.as_member(c, ORG, suite.owner)
    body = {"dataset_id": ds, "candidate": "version", "version": 3, "baseline_run_id": r0}
    run, _ = runs.start_run(
        c,
        who,
        agent,
        body,
        purpose="suite",
        extra_settings={
            "suite_id": sid,
            "suite_created_at": suite.created_at,
            "suite_trigger": {"kind": "manual", "version": 3, "by": suite.owner},
        },
    )
    _wait(call, run.run_id)
    path = f"/api/v1/agents/{agent}/suites/{sid}/results"
    while not call("GET", path)["results"]:
        time.sleep(0.1)
    return run.run_id


def _timed(stack: Any, one: Callable[[], Any]) -> tuple[float, float, dict[str, int], Any]:
    """Wall seconds, CPU seconds over the process tree, moto's requests by operation, and what
    `one()` returned."""
    from assay_local.moto_http import EMPTY_RECEIVE_KEY

    stack.moto.reset_counts()
    cpu0, t0 = _cpu(stack), time.perf_counter()
    out = one()
    wall, cpu = time.perf_counter() - t0, _cpu(stack) - cpu0
    counts = {k: v for k, v in stack.moto.requests().items() if k != EMPTY_RECEIVE_KEY}
    return wall, cpu, counts, out


def measure(rounds: int) -> int:
    """Build the world, time `rounds` decisions and Undos and the floor; print the figures; 0
    when every decision rested on 10 runs and 3 suite results and every Undo restored R0."""
    from assay_local.stack import EmbeddedStack
    from bench.client import api_caller

    with EmbeddedStack(workers=4, scheduler=False) as stack:
        call = api_caller(stack, ORG, "bench@assay.local", timeout=120)
        ds, item, r0, _ = _world(call)
        stack.pause_pollers()  # nothing runs meanwhile: the requests counted are the decision's
        before = call("GET", f"/api/v1/eval-runs/{r0}")["outcome"]
        base = f"/api/v1/datasets/{ds}/review/{item}"
        figures: dict[str, list[tuple[float, float, dict[str, int]]]] = {
            "floor": [],
            "decision": [],
            "undo": [],
        }
        ok, found = True, (0, 0)
        for _ in range(rounds):
            wall, cpu, counts, _ = _timed(stack, lambda: call("GET", f"/api/v1/eval-runs/{r0}"))
            figures["floor"].append((wall, cpu, counts))
            wall, cpu, counts, decided = _timed(
                stack, lambda: call("POST", f"{base}/decision", json={"verdict": "pass"})
            )
            figures["decision"].append((wall, cpu, counts))
            audit = decided["audit"]
            found = (len(audit["runs"]), len(audit["suite_results"]))
            ok &= found == (10, 3)
            wall, cpu, counts, _ = _timed(stack, lambda: call("POST", f"{base}/undo"))
            figures["undo"].append((wall, cpu, counts))
            ok &= call("GET", f"/api/v1/eval-runs/{r0}")["outcome"] == before
        stack.resume_pollers()
    print(f"the last decision changed {found[0]} runs and {found[1]} suite results")
    print(f"command: python -m bench.review --rounds {rounds}")
    print(
        "rests on the answer: 10 runs (R0 and nine that compare with its first answers), 3 of "
        f"them with a suite result; every decision found them all and every Undo restored R0: {ok}"
    )
    floor_ms = min(w for w, _, _ in figures["floor"]) * 1000
    summary: dict[str, Any] = {}
    for name in ("floor", "decision", "undo"):
        walls = sorted(w * 1000 for w, _, _ in figures[name])
        cpus = sorted(c * 1000 for _, c, _ in figures[name])
        counts = figures[name][-1][2]
        total = sum(counts.values())
        median = walls[len(walls) // 2]
        print(
            f"{name:<9} wall ms median {median:7.1f} (min {walls[0]:.1f}, max {walls[-1]:.1f}; "
            f"{median / floor_ms:5.1f}x the floor), CPU ms median {cpus[len(cpus) // 2]:7.1f}, "
            f"AWS requests {total}"
        )
        for op, n in sorted(counts.items(), key=lambda kv: -kv[1]):
            print(f"    {op:<40} {n:>5}")
        summary[name] = {"wall_ms": round(median, 1), "aws_requests": total}
    print(json.dumps(summary))
    return 0 if ok else 1


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--rounds", type=int, default=5)
    args = parser.parse_args(argv)
    try:
        load = " ".join(f"{x:.2f}" for x in os.getloadavg())
    except OSError:
        load = "unknown"
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python "
        f"{platform.python_version()}, load average {load}"
    )
    return measure(args.rounds)


if __name__ == "__main__":
    sys.exit(main())
