"""Pipeline benchmark: how close a run comes to its concurrency floor, and what it costs in AWS
requests.

500 cases against a `python` agent that sleeps 200 ms, `EVAL_RUN_CONCURRENCY=6`, on the embedded
stack (moto server on 127.0.0.1, pollers, HTTP routes). Prints wall time, the floor
(cases x sleep / concurrency), efficiency = floor / wall, the most attempts seen in flight at once,
and AWS requests per case attempt by operation (every request moto served, empty long-poll
receives left out). Targets (DESIGN, issue 2): efficiency >= 0.9, in flight never above the limit,
<= 8 AWS requests per case attempt.

    python -m bench.pipeline [--cases 500] [--sleep-ms 200] [--concurrency 6]
"""

from __future__ import annotations

import argparse
import os
import platform
import sys
import time

import httpx


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
    args = parser.parse_args(argv)

    from assay_local.motoserver import EMPTY_RECEIVE_KEY
    from assay_local.stack import EmbeddedStack
    from bench import agents
    from chalicelib.api.common import issue_token

    env = {
        "EVAL_RUN_CONCURRENCY": str(args.concurrency),
        "EVAL_ORG_CONCURRENCY": str(max(args.concurrency, 6)),
    }
    workers = args.workers or args.concurrency
    with EmbeddedStack(env=env, workers=workers, scheduler=False, poll_wait_seconds=10) as stack:
        s = stack.settings
        token = issue_token(
            "org_bench", "bench@assay.local", secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer
        )
        http = httpx.Client(
            base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=60
        )

        def call(method: str, path: str, **kw):
            r = http.request(method, path, **kw)
            r.raise_for_status()
            return r.json()

        cases = [
            {"case_id": f"c{i:05d}", "input": f"question {i}", "reference": "42"}
            for i in range(args.cases)
        ]
        ds = call("POST", "/api/v1/datasets", json={"name": "bench"})
        call(
            "POST",
            f"/api/v1/datasets/{ds['dataset_id']}/versions",
            json={"scoring": {"required": ["equals"]}, "cases": cases},
        )
        probe = f"bench-{time.time_ns()}"
        agent = call(
            "POST",
            "/api/v1/agents",
            json={
                "name": "sleepy",
                "spec": {
                    "runtime": "python",
                    "entrypoint": "bench.agents:sleepy",
                    "options": {"sleep_ms": args.sleep_ms, "probe": probe},
                },
            },
        )
        stack.moto.reset_counts()
        cpu0, moto0 = _cpu(stack), stack.moto.cpu_seconds()
        t0 = time.monotonic()
        run = call(
            "POST",
            f"/api/v1/agents/{agent['agent_id']}/eval-runs",
            json={"dataset_id": ds["dataset_id"], "candidate": "draft"},
        )
        polls = 0
        while True:
            p = call("GET", f"/api/v1/eval-runs/{run['run_id']}/progress?")
            polls += 1
            if p["status"] not in ("queued", "running"):
                break
            time.sleep(0.2)
        wall = time.monotonic() - t0
        cpu, moto_cpu = _cpu(stack) - cpu0, stack.moto.cpu_seconds() - moto0
        counts = stack.moto.requests()
    # The benchmark's own API calls go to the Chalice routes, which read DynamoDB too: count only
    # what the pipeline did by leaving out the progress polls' GetItem (one per poll).
    attempts = p["recorded"]
    empty = counts.get(EMPTY_RECEIVE_KEY, 0)
    per_op = {k: v for k, v in counts.items() if k != EMPTY_RECEIVE_KEY}
    if "sqs.ReceiveMessage" in per_op:
        per_op["sqs.ReceiveMessage"] -= empty
    if "dynamodb.GetItem" in per_op:
        per_op["dynamodb.GetItem"] -= polls
    floor = args.cases * args.sleep_ms / 1000.0 / args.concurrency
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"command: python -m bench.pipeline --cases {args.cases} --sleep-ms {args.sleep_ms:g} "
        f"--concurrency {args.concurrency}"
    )
    print(f"status: {p['status']}  attempts recorded: {attempts}/{p['expected']}")
    print(f"wall: {wall:.2f} s   floor: {floor:.2f} s   efficiency: {floor / wall:.3f}")
    print(
        f"CPU: {cpu:.2f} s over the process tree (moto's process {moto_cpu:.2f} s), "
        f"{cpu * 1000 / max(attempts, 1):.1f} ms per case attempt"
    )
    print(f"most in flight at once: {agents.peak(probe)} (limit {args.concurrency})")
    total = sum(per_op.values())
    print(
        f"AWS requests per case attempt: {total / max(attempts, 1):.2f} "
        f"(total {total}; left out: {empty} empty long-poll receives, the benchmark's own "
        f"{polls} progress polls)"
    )
    for op, n in sorted(per_op.items(), key=lambda kv: -kv[1]):
        print(f"  {op:<36} {n:>7}  {n / max(attempts, 1):6.2f}")
    return 0 if p["status"] == "completed" else 1


def _cpu(stack) -> float:
    """CPU seconds used so far by this process (routes, pollers, handlers) and moto's."""
    t = os.times()
    return t.user + t.system + stack.moto.cpu_seconds()


if __name__ == "__main__":
    sys.exit(main())
