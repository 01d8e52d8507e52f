"""`assay demo`: the embedded stack, four recorded models' GSM8K answers, two guarded promotions,
printed as a person reads them (the work itself is `assay_local.demo`)."""

from __future__ import annotations

import argparse
import json
import sys
import time
from pathlib import Path
from typing import Any

from assay.text import run_state
from assay_local import demo_text
from assay_local.cli_common import DEFAULT_ORG, dev_token, quiet_logs, start_stack


def _bars(console: Any) -> Any:
    """The demo's progress bars (a rich `Progress`): what runs, how far, its state, how long."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    return Progress(
        TextColumn("{task.description}"),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
        console=console,
    )


def cmd_demo(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.table import Table

    from assay_local import demo
    from assay_local.stack import EndpointUnreachableError
    from chalicelib import names
    from chalicelib.config import Settings

    console = Console()
    if not console.is_terminal:
        console = Console(width=120)  # a log file gets the whole table, not 80 columns of it
    data_dir = Path(args.data_dir) if args.data_dir else demo.default_data_dir()
    if not (data_dir / "test.jsonl").exists():
        console.print(f"[red]GSM8K data not found in {data_dir}[/red] (use --data-dir)")
        return 3  # an error (`assay.gate`)
    quiet_logs()
    t0 = time.monotonic()
    console.print(demo_text.starting_line(Settings().aws_endpoint_url))
    # Flips are rerun once (not EVAL_RERUNS' default twice): the recorded answers never change, and
    # the demo stays within its few minutes.
    # One run may use every slot of the organization: the guard runs go one after the other.
    try:
        stack = start_stack(args.workers, env={"EVAL_RERUNS": "1", "EVAL_RUN_CONCURRENCY": "6"})
    except EndpointUnreachableError as exc:
        print(f"assay demo: {exc}", file=sys.stderr)
        return 3  # an error (`assay.gate`)
    try:
        import boto3

        sqs = boto3.client(
            "sqs", endpoint_url=stack.endpoint_url, region_name=stack.settings.aws_default_region
        )
        events_url = stack.queue_urls[names.AGENT_EVENTS_QUEUE]

        def send_event(body: dict[str, Any]) -> None:
            sqs.send_message(QueueUrl=events_url, MessageBody=json.dumps(body))

        api = demo.Api(stack.api_url, dev_token())
        console.print(
            f"API on {stack.api_url}; uploading four models' GSM8K recordings, publishing them "
            f"through the agent-events queue, importing GSM8K ({args.limit or 'all'} cases), "
            "measuring v1 and v2 in production…"
        )
        with _bars(console) as bar:
            tasks: dict[int, Any] = {}

            def on_progress(progress: dict[int, dict[str, Any]]) -> None:
                for version, p in progress.items():
                    if version not in tasks:
                        tasks[version] = bar.add_task(
                            f"v{version} {demo.MODELS[version - 1]:<18} attempts",
                            total=p["expected"],
                            status=run_state(p["status"], p.get("phase")),
                        )
                    bar.update(
                        tasks[version],
                        completed=p["recorded"],
                        total=p["expected"],
                        status=run_state(p["status"], p.get("phase")),
                    )

            results, (agent_id, dataset_id) = demo.run_demo(
                api,
                send_event=send_event,
                org_id=DEFAULT_ORG,
                data_dir=data_dir,
                limit=args.limit,
                latency_ms=args.latency_ms,
                on_progress=on_progress,
            )
        console_url = f"{stack.api_url}/agents/{agent_id}#token={dev_token()}"
        cases = f" ({results[0].total:,} cases)" if results else ""
        console.print(
            f"[bold]Guarded promotions[/bold]: {demo.ENVIRONMENT} serves v2; a suite guards it "
            f"with a {demo.GUARD['min_pass_rate']:.0%} minimum pass rate and up to "
            f"{demo.GUARD['max_regressions']} confirmed regressions; promoting v3, then v4 "
            "(each guard run checks the version beside v2; flips rerun once, EVAL_RERUNS=1)…"
        )
        with _bars(console) as bar:
            gate_tasks: dict[int, Any] = {}

            def on_gate(version: int, p: dict[str, Any]) -> None:
                if version not in gate_tasks:
                    gate_tasks[version] = bar.add_task(
                        f"guard: v{version} beside v2{cases}, attempts",
                        total=None,
                        status="",
                    )
                bar.update(
                    gate_tasks[version],
                    completed=p["recorded"],
                    total=p["expected"],
                    status=demo_text.progress_state(p),
                )

            _, outcomes = demo.run_promotions(api, agent_id, dataset_id, on_gate)
        for outcome in outcomes:
            print_gate(console, outcome)
        console.print(f"\n{demo_text.LEGEND}")
        results += [
            demo.version_result(api, o.version, o.run["run_id"], o.run) for o in outcomes if o.run
        ]
        table = Table(
            title="GSM8K: each published version's eval run (graded by numeric_answer; v3 and v4 "
            "measured by the guard)"
        )
        for col in (
            "version",
            "model",
            "pass rate",
            "passed/total",
            "verdict",
            "queued",
            "wall time",
            "run",
        ):
            table.add_column(col)
        for r in results:
            rate = f"{r.pass_rate * 100:.1f}%" if r.pass_rate is not None else "-"
            table.add_row(
                f"v{r.version}",
                r.model,
                rate,
                f"{r.passed}/{r.total}",
                r.verdict,
                f"{r.queued_s:.1f} s",
                f"{r.wall_s:.1f} s",
                r.run_id,
            )
        console.print(table)
        console.print(
            "queued: waiting for a slot (the organization runs at most EVAL_ORG_CONCURRENCY cases "
            "at once); wall time: from the first slot to completion"
        )
        summaries = demo.summaries(api, agent_id).get("summaries") or []
        console.print(
            "each version's summary (POST /api/v1/agent-summaries): "
            + demo_text.summary_line(summaries)
        )
        bad = [r for r in results if r.status != "completed"] + [
            o for o in outcomes if not o.run or o.run["status"] != "completed"
        ]
        expected = {3: "refused", 4: "promoted"}
        bad += [o for o in outcomes if o.promotion["status"] != expected[o.version]]
        if args.serve:
            for line in demo_text.closing_lines(
                console_url, serve=True, seconds=time.monotonic() - t0
            ):
                console.print(line, soft_wrap=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
    finally:
        stack.stop()
    if not args.serve:  # said once true: the stack has stopped, so no link to it is printed
        for line in demo_text.closing_lines(
            console_url, serve=False, seconds=time.monotonic() - t0
        ):
            console.print(line, soft_wrap=True)
    return 1 if bad else 0


def print_gate(console: Any, outcome: Any) -> None:
    """A guarded promotion: one sentence of what the guard said and why, then its comparison."""
    from assay_local import demo

    sentence = demo_text.gate_sentence(
        outcome.version,
        outcome.promotion,
        outcome.result,
        outcome.run,
        outcome.comparison,
        demo.GUARD,
    )
    colour = {"promoted": "green", "refused": "red"}.get(outcome.promotion.get("status"))
    console.print(f"\n[bold {colour}]{sentence}[/]" if colour else f"\n{sentence}")
    if outcome.run and outcome.comparison:
        print_comparison(console, outcome.run, outcome.comparison)


def print_comparison(console: Any, full: dict[str, Any], comparison: dict[str, Any]) -> None:
    """The comparison of a run with its baseline, as a person reads it: its counts of cases by
    outcome, its verdict in the CLI's words and how likely its confirmed regressions are luck
    (`demo_text.noise_line`), the pass rates, one confirmed regression."""
    from rich.table import Table

    def rate(r: float | None, interval: list[float] | None) -> str:
        if r is None:
            return "-"
        text = f"{r * 100:.1f}%"
        return (
            f"{text} (95% CI {interval[0] * 100:.1f}-{interval[1] * 100:.1f}%)"
            if interval
            else text
        )

    base = comparison.get("baseline") or {}
    source = f", first answers from {base['source_run_id']}" if base.get("source_run_id") else ""
    console.print(
        f"[bold]v{full['resolved_version']} against v{base.get('version')}[/bold] "
        f"(run {full['run_id']}{source}; every flip rerun on both sides)"
    )
    counts = Table(title="cases by outcome")
    for name in comparison["counts"]:
        counts.add_column(name.replace("_", " "))
    counts.add_row(*(str(n) for n in comparison["counts"].values()))
    console.print(counts)
    quality = {arm: s["quality"] for arm, s in (full.get("summaries") or {}).items()}
    cand, before = quality.get("candidate", {}), quality.get("baseline", {})
    console.print(demo_text.verdict_line(comparison))
    luck = demo_text.noise_line(full)
    if luck:
        console.print(luck, soft_wrap=True)
    console.print(
        f"pass rate before: {rate(before.get('pass_rate'), before.get('pass_rate_interval_95'))}   "
        f"after: {rate(cand.get('pass_rate'), cand.get('pass_rate_interval_95'))}"
    )
    for note in comparison.get("notes", []):
        console.print(f"note: {note}")
    broke = [f for f in comparison["flips"] if f["confirmed"] and f["outcome"] == "regression"][:1]
    for f in broke:
        console.print(f"for example, it now breaks {f['case_id']}: {f['question'][:100]}…")
