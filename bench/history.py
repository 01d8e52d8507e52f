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

Then, unless `--no-interleave`, two more agents get the smaller histories in the same tables and
the three are measured in turn, one summary and one start each per round, so that a machine whose
load drifts during the minutes the growing history takes weighs on every size alike.

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

DATASETS_OF_HISTORY = 4
"""The history is spread over the bench's dataset and three others (never read but by id)."""


def _history(template: Any, start: int, stop: int) -> list[Any]:
    """Runs `start..stop-1` of history: copies of the completed `template` (of its agent), each a
    minute older than the one before it (all older than the template), over
    `DATASETS_OF_HISTORY` datasets."""
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
                run_id=f"run_hist_{template.agent_id}_{i:06d}",
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
    from chalicelib.adapters.stores.ledger import outcome_values, stored_arm
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
            for name, value in outcome_values(run.outcome).items():
                setattr(row, name, value)
            batch.save(row)
    bootstrap.container().runs.remember(runs)


def _dynamodb(counts: dict[str, int]) -> int:
    """DynamoDB requests among what moto served."""
    return sum(n for op, n in counts.items() if op.startswith("dynamodb."))


def _median_ms(samples: list[float]) -> float:
    return statistics.median(samples) * 1000


def _table(sizes: list[int], samples: dict[int, dict[str, list[float]]]) -> None:
    """The medians, then the fastest samples, of each figure, with their ratios to the first
    size's."""
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


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=" ".join(__doc__.split("\n\n")[0].split()))
    parser.add_argument("--sizes", default="10,1000,10000")
    parser.add_argument("--repeat", type=int, default=11, help="starts per size")
    parser.add_argument("--summary-repeat", type=int, default=31, help="summaries per size")
    parser.add_argument("--no-interleave", action="store_true", help="skip the interleaved pass")
    args = parser.parse_args(argv)
    sizes = [int(s) for s in args.sizes.split(",")]

    from assay_local.stack import EmbeddedStack
    from bench.client import api_caller
    from chalicelib import bootstrap

    env = {"EVAL_RUN_CONCURRENCY": "2", "EVAL_ORG_CONCURRENCY": "6"}
    with EmbeddedStack(env=env, workers=4, scheduler=False) as stack:
        call = api_caller(stack, "org_bench", "bench@assay.local", timeout=900)

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
        start_body = {"dataset_id": ds["dataset_id"], "candidate": "draft"}

        def new_agent(name: str) -> Any:
            """An agent with version 1 published and one real completed run of it (the template
            its history copies)."""
            agent_id = call("POST", "/api/v1/agents", json={"name": name, "spec": spec})["agent_id"]
            call("POST", f"/api/v1/agents/{agent_id}/versions", json={})
            body = {"dataset_id": ds["dataset_id"], "candidate": "version", "version": 1}
            first = call("POST", f"/api/v1/agents/{agent_id}/eval-runs", json=body)
            done = finish(first["run_id"])
            if done["status"] != "completed":
                raise RuntimeError(f"the template run ended {done['status']}")
            template = bootstrap.container().runs.get("org_bench", first["run_id"])
            assert template is not None
            return template

        def summary(agent_id: str) -> tuple[float, Any]:
            body = {"agents": [{"agentId": agent_id, "version": 1}]}
            t = time.monotonic()
            reply = call("POST", "/api/evaluations/agent-summaries", json=body)
            return time.monotonic() - t, reply

        def start(agent_id: str) -> tuple[float, float]:
            """One estimate and one start of the agent's draft (the run left to finish): their
            seconds."""
            t = time.monotonic()
            call("POST", f"/api/v1/agents/{agent_id}/eval-runs/estimate", json=start_body)
            t1 = time.monotonic()
            run = call("POST", f"/api/v1/agents/{agent_id}/eval-runs", json=start_body)
            t2 = time.monotonic()
            finish(run["run_id"])
            return t1 - t, t2 - t1

        def figures(
            summary_s: list[float], times: list[tuple[float, float]]
        ) -> dict[str, list[float]]:
            return {
                "summaries": summary_s,
                "estimate": [e for e, _ in times],
                "start": [b for _, b in times],
                "estimate+start": [e + b for e, b in times],
            }

        template = new_agent("historic")
        agent_id = template.agent_id
        samples: dict[int, dict[str, list[float]]] = {}
        written = 0
        for size in sizes:
            t0 = time.monotonic()
            write_history(_history(template, written, size))
            wrote_s = time.monotonic() - t0
            written = size
            summary(agent_id)  # warm
            summary_s = []
            for _ in range(args.summary_repeat):
                stack.moto.reset_counts()
                took, reply = summary(agent_id)
                summary_s.append(took)
            summary_requests = _dynamodb(stack.moto.requests())
            stack.moto.reset_counts()
            call("POST", f"/api/v1/agents/{agent_id}/eval-runs/estimate", json=start_body)
            estimate_requests = _dynamodb(stack.moto.requests())
            samples[size] = figures(summary_s, [start(agent_id) for _ in range(args.repeat)])
            [kept] = reply["summaries"]
            print(
                f"{size:>6} runs of history (written in {wrote_s:.1f} s): "
                + "  ".join(f"{k} {_median_ms(v):.0f} ms" for k, v in samples[size].items())
                + f"   [summary: {kept['evaluations']} evaluations, {kept['total']} cases,"
                f" {kept['verdict']}; DynamoDB requests: summary {summary_requests}, estimate"
                f" {estimate_requests}; load average {os.getloadavg()[0]:.2f}]",
                flush=True,
            )
        interleaved: dict[int, dict[str, list[float]]] = {}
        if not args.no_interleave:
            agents = {sizes[-1]: agent_id}
            for size in sizes[:-1]:
                other = new_agent(f"historic-{size}")
                write_history(_history(other, 0, size))
                agents[size] = other.agent_id
            summary_s_of: dict[int, list[float]] = {size: [] for size in sizes}
            times_of: dict[int, list[tuple[float, float]]] = {size: [] for size in sizes}
            for round_ in range(max(args.repeat, args.summary_repeat)):
                for size in sizes:
                    summary_s_of[size].append(summary(agents[size])[0])
                    if round_ < args.repeat:
                        times_of[size].append(start(agents[size]))
            interleaved = {size: figures(summary_s_of[size], times_of[size]) for size in sizes}
    print(
        f"machine: {platform.machine()} {os.cpu_count()} cores, Python {platform.python_version()}"
    )
    print(
        f"command: python -m bench.history --sizes {args.sizes} --repeat {args.repeat}"
        f" --summary-repeat {args.summary_repeat}{' --no-interleave' if args.no_interleave else ''}"
    )
    print("one agent, its history growing:")
    _table(sizes, samples)
    if interleaved:
        print("three agents with those histories in the same tables, measured in turn:")
        _table(sizes, interleaved)
    return 0


if __name__ == "__main__":
    sys.exit(main())
