"""History benchmark: what an agent's past runs cost the reads that should not depend on them.

On the embedded stack (moto server on 127.0.0.1, pollers, HTTP routes) one agent gets 10, then
1,000, then 10,000 completed runs of history, written straight into the tables in batches (copies
of one real completed run, older than it, over four datasets). At each size it measures

- `POST /api/evaluations/agent-summaries` for the agent's version 1: the median of
  `--summary-repeat` requests;
- a start: `POST .../eval-runs/estimate` then `POST .../eval-runs` of the draft on a two-case
  dataset (its baseline is chosen from the history, its estimate priced from it, its committed
  spend read), the median of `--repeat` starts, each run left to finish before the next;

and prints each figure (the median, and the fastest sample: on a loaded machine the one least
disturbed) with its ratio to the 10-run one, the DynamoDB requests one summary and one estimate
made, and the machine's load average. Goal (issue 12): within 1.2x from 10 to 10,000 runs.

    python -m bench.history [--sizes 10,1000,10000] [--repeat 11] [--summary-repeat 31]
"""

from __future__ import annotations

import argparse
import os
import platform
import statistics
import sys
import time
from dataclasses import replace
from datetime import timedelta
from typing import Any

import httpx

DATASETS_OF_HISTORY = 4
"""The history is spread over the bench's dataset and three others (never read but by id)."""


def _history(template: Any, start: int, stop: int) -> list[Any]:
    """Runs `start..stop-1` of history: copies of the completed `template`, each a minute older
    than the one before it (all older than the template), over `DATASETS_OF_HISTORY` datasets."""
    from chalicelib.clock import iso, parse_iso

    created = parse_iso(template.created_at)
    out = []
    for i in range(start, stop):
        at = created - timedelta(minutes=i + 1)
        dataset_id = (
            template.dataset_id
            if i % DATASETS_OF_HISTORY == 0
            else f"ds_hist_{i % DATASETS_OF_HISTORY}"
        )
        out.append(
            replace(
                template,
                run_id=f"run_hist_{i:06d}",
                dataset_id=dataset_id,
                created_at=iso(at),
                started_at=iso(at),
                completed_at=iso(at + timedelta(seconds=30)),
            )
        )
    return out


def write_history(runs: list[Any]) -> None:
    """Write completed runs straight into the runs table (batch writes), then fold them into the
    agent's history rows through the store (`RunStore.remember`: the same rules, and the same
    conditional writes, as the transaction that completes a run)."""
    from chalicelib import bootstrap
    from chalicelib.adapters.stores.base import row_of
    from chalicelib.adapters.stores.ledger import stored_arm
    from chalicelib.adapters.tables import RunRow, org_key

    with RunRow.batch_write() as batch:
        for run in runs:
            row = row_of(
                run,
                RunRow,
                run_key=org_key(run.org_id, run.run_id),
                agent_key=org_key(run.org_id, run.agent_id),
                dataset_key=org_key(run.org_id, run.dataset_id),
            )
            row.arms = [stored_arm(a) for a in run.arms]
            row.outcome = run.outcome.as_json() if run.outcome is not None else None
            batch.save(row)
    bootstrap.container().runs.remember(runs)


def _dynamodb(counts: dict[str, int]) -> int:
    """DynamoDB requests among what moto served."""
    return sum(n for op, n in counts.items() if op.startswith("dynamodb."))


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--repeat", type=int, default=11, help="starts per size")
    parser.add_argument("--summary-repeat", type=int, default=31, help="summaries per size")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    from assay_local.stack import EmbeddedStack
    from chalicelib import bootstrap
    from chalicelib.api.common import issue_token

    env = {"EVAL_RUN_CONCURRENCY": "2", "EVAL_ORG_CONCURRENCY": "6"}
    with EmbeddedStack(env=env, workers=4, scheduler=False) as stack:
        s = stack.settings
        token = issue_token(
            "org_bench", "bench@assay.local", secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer
        )
        http = httpx.Client(
            base_url=stack.api_url, headers={"Authorization": f"Bearer {token}"}, timeout=900
        )

        def call(method: str, path: str, **kw: Any) -> Any:
            r = http.request(method, path, **kw)
            r.raise_for_status()
            return r.json()

        def finish(run_id: str) -> dict[str, Any]:
            while True:
                p = call("GET", f"/api/v1/eval-runs/{run_id}/progress")
                if p["status"] not in ("queued", "running"):
                    return p
                time.sleep(0.05)

        cases = [
            {"case_id": f"c{i}", "input": f"question {i}", "reference": "42"} for i in range(2)
        ]
        ds = call("POST", "/api/v1/datasets", json={"name": "history"})
        call(
            "POST",
            f"/api/v1/datasets/{ds['dataset_id']}/versions",
            json={"scoring": {"required": ["equals"]}, "cases": cases},
        )
        spec = {
            "runtime": "python",
            "entrypoint": "bench.agents:sleepy",
            "model": "bench-model",
            "options": {"sleep_ms": 0},
        }
        agent = call("POST", "/api/v1/agents", json={"name": "historic", "spec": spec})
        agent_id = agent["agent_id"]
        call("POST", f"/api/v1/agents/{agent_id}/versions", json={})
        body = {"dataset_id": ds["dataset_id"], "candidate": "version", "version": 1}
        first = call("POST", f"/api/v1/agents/{agent_id}/eval-runs", json=body)
        done = finish(first["run_id"])
        if done["status"] != "completed":
            print(f"the template run ended {done['status']}", file=sys.stderr)
            return 1
        template = bootstrap.container().runs.get("org_bench", first["run_id"])
        assert template is not None

        start_body = {"dataset_id": ds["dataset_id"], "candidate": "draft"}
        summary_body = {"agents": [{"agentId": agent_id, "version": 1}]}
        samples: dict[int, dict[str, list[float]]] = {}
        written = 0
        for size in sizes:
            t0 = time.monotonic()
            write_history(_history(template, written, size))
            wrote_s = time.monotonic() - t0
            written = size
            call("POST", "/api/evaluations/agent-summaries", json=summary_body)  # warm
            summary_s, estimate_s, start_s = [], [], []
            for _ in range(args.summary_repeat):
                stack.moto.reset_counts()
                t = time.monotonic()
                reply = call("POST", "/api/evaluations/agent-summaries", json=summary_body)
                summary_s.append(time.monotonic() - t)
            summary_requests = _dynamodb(stack.moto.requests())
            stack.moto.reset_counts()
            call("POST", f"/api/v1/agents/{agent_id}/eval-runs/estimate", json=start_body)
            estimate_requests = _dynamodb(stack.moto.requests())
            for _ in range(args.repeat):
                t = time.monotonic()
                call("POST", f"/api/v1/agents/{agent_id}/eval-runs/estimate", json=start_body)
                t1 = time.monotonic()
                run = call("POST", f"/api/v1/agents/{agent_id}/eval-runs", json=start_body)
                t2 = time.monotonic()
                estimate_s.append(t1 - t)
                start_s.append(t2 - t1)
                finish(run["run_id"])
            samples[size] = {
                "summaries": summary_s,
                "estimate": estimate_s,
                "start": start_s,
                "estimate+start": [a + b for a, b in zip(estimate_s, start_s, strict=True)],
            }
            [summary] = reply["summaries"]
            print(
                f"{size:>6} runs of history (written in {wrote_s:.1f} s): "
                + "  ".join(f"{k} {_median_ms(v):.0f} ms" for k, v in samples[size].items())
                + f"   [summary: {summary['evaluations']} evaluations, {summary['total']} cases,"
                f" {summary['verdict']}; DynamoDB requests: summary {summary_requests}, estimate"
                f" {estimate_requests}; load average {os.getloadavg()[0]:.2f}]",
                flush=True,
            )
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"command: python -m bench.history --sizes {args.sizes} --repeat {args.repeat}"
        f" --summary-repeat {args.summary_repeat}"
    )
    for name, of in (("median", _median_ms), ("fastest", lambda v: min(v) * 1000)):
        base = {k: of(v) for k, v in samples[sizes[0]].items()}
        print(f"{name:>7}  " + "  ".join(f"{k:>20}" for k in base))
        for size in sizes:
            print(
                f"{size:>7}  "
                + "  ".join(
                    f"{of(v):>10.0f} ms {of(v) / base[k]:>5.2f}x" for k, v in samples[size].items()
                )
            )
    return 0


if __name__ == "__main__":
    sys.exit(main())
