"""The `assay` command: demo, dev, run, watch, import, summaries, secrets, recordings, bench, token.

`demo` and `dev` start the embedded stack (moto's server on 127.0.0.1, the routes over HTTP, a
poller per queue handler, the schedules). The other commands talk to a running assay over HTTP
(`--url`, default `$ASSAY_URL`, and `--token`, default `$ASSAY_TOKEN`).
"""

from __future__ import annotations

import argparse
import json
import os
import re
import sys
import time
from pathlib import Path
from typing import Any

from assay_local.demo import ApiError
from assay_local.extras import STACK_COMMANDS, require_local_stack

DEFAULT_ORG = "org_default"
DEFAULT_USER = "dev@assay.local"


def _token(org: str = DEFAULT_ORG, user: str = DEFAULT_USER, ttl_seconds: int | None = None) -> str:
    """An HS256 token for `org`/`user`, valid `ttl_seconds` (default
    `ASSAY_TOKEN_TTL_SECONDS`, 8 h)."""
    from chalicelib.api.common import issue_token
    from chalicelib.config import get_settings

    s = get_settings()
    return issue_token(
        org,
        user,
        secret=s.assay_jwt_secret,
        issuer=s.assay_jwt_issuer,
        audience=s.assay_jwt_audience,
        ttl_seconds=ttl_seconds or s.assay_token_ttl_seconds,
    )


_TTL = re.compile(r"^\s*(\d+)\s*([smhd]?)\s*$")
_TTL_UNITS = {"": 1, "s": 1, "m": 60, "h": 3600, "d": 86400}


def parse_ttl(text: str) -> int:
    """`"3600"`, `"90s"`, `"30m"`, `"12h"`, `"7d"` -> seconds. Raises
    `argparse.ArgumentTypeError`."""
    m = _TTL.match(text.lower())
    if not m or int(m.group(1)) <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a lifetime: seconds, or a number with s, m, h or d (e.g. 30m, 12h)"
        )
    return int(m.group(1)) * _TTL_UNITS[m.group(2)]


def _quiet_logs() -> None:
    import logging

    logging.basicConfig(level=logging.WARNING, format="%(levelname)s %(name)s: %(message)s")
    for noisy in ("werkzeug", "botocore", "moto", "urllib3"):
        logging.getLogger(noisy).setLevel(logging.ERROR)


def _stack(workers: int, env: dict[str, str] | None = None, tick_seconds: float | None = None):
    from assay_local.stack import EmbeddedStack

    # Long polls: an idle stack asks the queues a few times a minute, not a few times a second.
    return EmbeddedStack(
        env=env or {}, workers=workers, tick_seconds=tick_seconds, poll_wait_seconds=10
    ).start()


# --- demo ------------------------------------------------------------------------------------


def cmd_demo(args: argparse.Namespace) -> int:
    from rich.console import Console
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )
    from rich.table import Table

    from assay_local import demo
    from chalicelib import names

    console = Console()
    if not console.is_terminal:
        console = Console(width=120)  # a log file gets the whole table, not 80 columns of it
    data_dir = Path(args.data_dir) if args.data_dir else demo.default_data_dir()
    if not (data_dir / "test.jsonl").exists():
        console.print(f"[red]GSM8K data not found in {data_dir}[/red] (use --data-dir)")
        return 2
    _quiet_logs()
    t0 = time.monotonic()
    console.print(
        "[bold]assay demo[/bold]: starting the embedded stack (moto server on 127.0.0.1)…"
    )
    # Flips are rerun once (not EVAL_RERUNS' default twice): the recorded answers never change, and
    # the demo stays within its few minutes.
    # One run may use every slot of the organization: the guard runs go one after the other.
    stack = _stack(args.workers, env={"EVAL_RERUNS": "1", "EVAL_RUN_CONCURRENCY": "6"})
    try:
        import boto3

        sqs = boto3.client(
            "sqs", endpoint_url=stack.endpoint_url, region_name=stack.settings.aws_default_region
        )
        events_url = stack.queue_urls[names.AGENT_EVENTS_QUEUE]

        def send_event(body: dict[str, Any]) -> None:
            sqs.send_message(QueueUrl=events_url, MessageBody=json.dumps(body))

        api = demo.Api(stack.api_url, _token())
        console.print(
            f"API on {stack.api_url}; uploading four models' GSM8K recordings, publishing them "
            f"through the agent-events queue, importing GSM8K ({args.limit or 'all'} cases), "
            "measuring v1 and v2 in production…"
        )
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]}"),
            TimeElapsedColumn(),
            console=console,
        ) as bar:
            tasks: dict[int, Any] = {}

            def on_progress(progress: dict[int, dict[str, Any]]) -> None:
                for version, p in progress.items():
                    if version not in tasks:
                        tasks[version] = bar.add_task(
                            f"v{version} {demo.MODELS[version - 1]:<18}",
                            total=p["expected"],
                            status=p["status"],
                        )
                    bar.update(
                        tasks[version],
                        completed=p["recorded"],
                        total=p["expected"],
                        status=p["status"],
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
        console.print(
            f"[bold]Guarded promotions[/bold]: {demo.ENVIRONMENT} serves v2; a suite guards it "
            f"with a {demo.GUARD['min_pass_rate']:.0%} minimum pass rate and up to "
            f"{demo.GUARD['max_regressions']} confirmed regressions; promoting v3, then v4 "
            "(each guard run checks the version beside v2; flips rerun once, EVAL_RERUNS=1)…"
        )
        with Progress(
            TextColumn("{task.description}"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn("{task.fields[status]} {task.fields[phase]}"),
            TimeElapsedColumn(),
            console=console,
        ) as bar:
            gate_tasks: dict[int, Any] = {}

            def on_gate(version: int, p: dict[str, Any]) -> None:
                if version not in gate_tasks:
                    gate_tasks[version] = bar.add_task(
                        f"guard: v{version} beside v2", total=None, status="", phase=""
                    )
                bar.update(
                    gate_tasks[version],
                    completed=p["recorded"],
                    total=p["expected"],
                    status=p["status"],
                    phase=p["phase"],
                )

            _, outcomes = demo.run_promotions(api, agent_id, dataset_id, on_gate)
        for outcome in outcomes:
            print_gate(console, outcome)
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
        console.print(
            "queued: waiting for a slot (the organization runs at most EVAL_ORG_CONCURRENCY cases "
            "at once); wall time: from the first slot to completion. Verdict words (seed 000): "
            "pass = every case passed, fail = none did, partial = some did, none = never evaluated."
        )
        console.print(table)
        console.print("[bold]POST /api/evaluations/agent-summaries[/bold]")
        console.print_json(data=demo.summaries(api, agent_id))
        console.print(f"demo finished in {time.monotonic() - t0:.1f} s")
        bad = [r for r in results if r.status != "completed"] + [
            o for o in outcomes if not o.run or o.run["status"] != "completed"
        ]
        expected = {3: "refused", 4: "promoted"}
        bad += [o for o in outcomes if o.promotion["status"] != expected[o.version]]
        return 1 if bad else 0
    finally:
        stack.stop()


def print_gate(console: Any, outcome: Any) -> None:
    """A guarded promotion: what the guard said and why, then its comparison."""
    promotion, result = outcome.promotion, outcome.result or {}
    word = {"promoted": "[green]promoted[/green]", "refused": "[red]held back[/red]"}.get(
        promotion["status"], promotion["status"]
    )
    console.print(
        f"\n[bold]Promoting v{outcome.version} onto {promotion['environment_id']}[/bold]: {word} — "
        f"{result.get('label') or 'guard'} result [bold]{result.get('result')}[/bold]"
    )
    for reason in result.get("reasons") or ["it met the threshold"]:
        console.print(f"  - {reason}")
    if outcome.run and outcome.comparison:
        print_comparison(console, outcome.run, outcome.comparison)


def print_comparison(console: Any, full: dict[str, Any], comparison: dict[str, Any]) -> None:
    """The comparison of a run with its baseline, as a person reads it."""
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
        counts.add_column(name)
    counts.add_row(*(str(n) for n in comparison["counts"].values()))
    console.print(counts)
    quality = {arm: s["quality"] for arm, s in (full.get("summaries") or {}).items()}
    cand, before = quality.get("candidate", {}), quality.get("baseline", {})
    p = comparison.get("p_value")
    console.print(
        f"confirmed flips: {comparison['confirmed_regressions']} regressions, "
        f"{comparison['confirmed_fixes']} fixes (of {len(comparison['flips'])} flips)"
    )
    console.print(
        f"verdict: [bold]{comparison['verdict']}[/bold]   overall (exact McNemar): "
        f"{comparison['overall']}" + (f", p = {p:.3g}" if p is not None else "")
    )
    console.print(
        f"pass rate before: {rate(before.get('pass_rate'), before.get('pass_rate_interval_95'))}   "
        f"after: {rate(cand.get('pass_rate'), cand.get('pass_rate_interval_95'))}"
    )
    for note in comparison.get("notes", []):
        console.print(f"note: {note}")
    broke = [f for f in comparison["flips"] if f["confirmed"] and f["outcome"] == "regression"][:1]
    for f in broke:
        console.print(f"for example, it now breaks {f['case_id']}: {f['question'][:100]}…")


# --- dev -------------------------------------------------------------------------------------


def cmd_dev(args: argparse.Namespace) -> int:
    _quiet_logs()
    stack = _stack(args.workers)
    print(f"assay dev: API on {stack.api_url}, AWS (moto) on {stack.endpoint_url}")
    print(f"export ASSAY_URL={stack.api_url}")
    print(f"export ASSAY_TOKEN={_token()}")
    print(
        f"# the token is for organization {DEFAULT_ORG}, user {DEFAULT_USER}, valid "
        f"{stack.settings.assay_token_ttl_seconds // 3600} h (`assay token --ttl 12h` signs "
        "another); to reach the queues with boto3 or the aws CLI:"
    )
    print(
        f"export AWS_ENDPOINT_URL={stack.endpoint_url} "
        f"AWS_DEFAULT_REGION={stack.settings.aws_default_region} AWS_ACCESS_KEY_ID=testing "
        "AWS_SECRET_ACCESS_KEY=testing"
    )
    print("# Ctrl-C stops", flush=True)
    import signal

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    finally:
        stack.stop()
    return 0


# --- HTTP commands ---------------------------------------------------------------------------


def _api(args: argparse.Namespace):
    from assay_local.demo import Api

    url = args.url or os.environ.get("ASSAY_URL")
    token = args.token or os.environ.get("ASSAY_TOKEN")
    if not url or not token:
        sys.exit("set --url/--token or ASSAY_URL/ASSAY_TOKEN (assay dev prints both)")
    return Api(url, token)


def watch(api: Any, run_id: str) -> dict[str, Any]:
    """Show a progress bar fed by the progress endpoint until the run ends; returns the last
    progress."""
    from rich.progress import (
        BarColumn,
        MofNCompleteColumn,
        Progress,
        TextColumn,
        TimeElapsedColumn,
    )

    with Progress(
        TextColumn(run_id),
        BarColumn(),
        MofNCompleteColumn(),
        TextColumn("{task.fields[status]}"),
        TimeElapsedColumn(),
    ) as bar:
        task = None
        while True:
            p = api.call("GET", f"/api/v1/eval-runs/{run_id}/progress")
            if task is None:
                task = bar.add_task(run_id, total=p["expected"], status=p["status"])
            bar.update(task, completed=p["recorded"], total=p["expected"], status=p["status"])
            if p["status"] not in ("queued", "running"):
                return p
            time.sleep(0.5)


def cmd_run(args: argparse.Namespace) -> int:
    api = _api(args)
    body: dict[str, Any] = {"dataset_id": args.dataset}
    if args.draft:
        body["candidate"] = "draft"
    else:
        body["candidate"] = "version"
        body["version"] = int(args.version) if str(args.version).isdigit() else args.version
    run = api.call("POST", f"/api/v1/agents/{args.agent}/eval-runs", json=body)
    for w in run.get("warnings", []):
        print(f"warning: {w}")
    print(run["run_id"])
    if args.watch:
        watch(api, run["run_id"])
        print(
            json.dumps(api.call("GET", f"/api/v1/eval-runs/{run['run_id']}")["outcome"], indent=2)
        )
    return 0


def cmd_watch(args: argparse.Namespace) -> int:
    p = watch(_api(args), args.run_id)
    return 0 if p["status"] == "completed" else 1


def cmd_import(args: argparse.Namespace) -> int:
    api = _api(args)
    text = Path(args.file).read_text(encoding="utf-8")
    fmt = args.format or ("gsm8k" if "gsm8k" in args.file else Path(args.file).suffix.lstrip("."))
    if args.create:
        api.call("POST", "/api/v1/datasets", json={"name": args.create, "dataset_id": args.dataset})
    source: dict[str, Any] = {"format": fmt, "content": text}
    if args.limit:
        source["limit"] = args.limit
    out = api.call(
        "POST",
        f"/api/v1/datasets/{args.dataset}/versions",
        json={"scoring": {"required": args.scorer}, "source": source},
    )
    print(json.dumps(out, indent=2))
    return 0


def cmd_summaries(args: argparse.Namespace) -> int:
    api = _api(args)
    agents = []
    for item in args.agent_versions:
        agent_id, _, version = item.partition("@")
        agents.append(
            {
                "agentId": agent_id,
                "version": int(version) if version.isdigit() else version or "draft",
            }
        )
    print(
        json.dumps(api.call("POST", "/api/v1/agent-summaries", json={"agents": agents}), indent=2)
    )
    return 0


def cmd_secrets(args: argparse.Namespace) -> int:
    """`assay secrets set|list|delete`: the organization's secrets (write-only: no value is ever
    shown)."""
    from urllib.parse import quote

    api = _api(args)
    if args.action == "list":
        for secret in api.call("GET", "/api/v1/secrets")["secrets"]:
            print(f"{secret['name']}\t{secret['updated_at']}")
        return 0
    path = f"/api/v1/secrets/{quote(args.name, safe='')}"
    if args.action == "delete":
        api.call("DELETE", path)
        print(f"deleted secret {args.name}")
        return 0
    if args.from_env:
        # The operator copies one variable of their own shell in, explicitly; the service never
        # reads it.
        value = os.environ.get(args.from_env)
        if value is None:
            print(f"assay: environment variable {args.from_env} is not set", file=sys.stderr)
            return 2
    else:
        value = sys.stdin.read().rstrip("\r\n")
    if not value:
        print("assay: the secret's value is empty", file=sys.stderr)
        return 2
    out = api.call("PUT", path, json={"value": value})
    print(f"secret {out['name']} set at {out['updated_at']}")
    return 0


def cmd_recordings(args: argparse.Namespace) -> int:
    """`assay recordings upload|list|delete`: the organization's recordings (JSONL answers by
    case)."""
    from urllib.parse import quote

    api = _api(args)
    if args.action == "upload":
        try:
            body: dict[str, Any] = {"content": Path(args.file).read_text(encoding="utf-8")}
        except (OSError, UnicodeDecodeError) as exc:
            print(f"assay: cannot read {args.file}: {exc}", file=sys.stderr)
            return 2
        if args.id:
            body["recording_id"] = args.id
        print(json.dumps(api.call("POST", "/api/v1/recordings", json=body), indent=2))
    elif args.action == "list":
        print(json.dumps(api.call("GET", "/api/v1/recordings"), indent=2))
    else:
        api.call("DELETE", f"/api/v1/recordings/{quote(args.recording_id, safe='')}")
        print(f"deleted recording {args.recording_id}")
    return 0


def cmd_token(args: argparse.Namespace) -> int:
    from chalicelib.domain.identity import is_org_id

    if not is_org_id(args.org):
        print(
            f"assay: {args.org!r} is not an organization id (letters, digits, '_', '.', '@', '-'; "
            "starting with a letter or digit; at most 100)",
            file=sys.stderr,
        )
        return 2
    try:
        print(_token(args.org, args.user, args.ttl))
    except ValueError as exc:
        print(f"assay: {exc}", file=sys.stderr)
        return 2
    return 0


def cmd_bench(args: argparse.Namespace) -> int:
    from bench.pipeline import main as bench_main

    return bench_main(
        [
            "--cases",
            str(args.cases),
            "--sleep-ms",
            str(args.sleep_ms),
            "--concurrency",
            str(args.concurrency),
        ]
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(prog="assay", description=__doc__.splitlines()[0])
    sub = parser.add_subparsers(dest="command", required=True)

    p = sub.add_parser("demo", help="the embedded stack and a real eval run on GSM8K")
    p.add_argument("--limit", type=int, default=None, help="cases to import (default: all 1,319)")
    p.add_argument(
        "--latency-ms", type=float, default=20.0, help="simulated agent latency per answer"
    )
    p.add_argument(
        "--data-dir", default=None, help="folder with test.jsonl and example_model_solutions.jsonl"
    )
    p.add_argument("--workers", type=int, default=8, help="threads polling the case-task queue")
    p.set_defaults(func=cmd_demo)

    p = sub.add_parser("dev", help="run the embedded stack until Ctrl-C and print a token")
    p.add_argument("--workers", type=int, default=8, help="threads polling the case-task queue")
    p.set_defaults(func=cmd_dev)

    def remote(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--url", default=None, help="assay's API (default $ASSAY_URL; `assay dev` prints it)"
        )
        p.add_argument("--token", default=None, help="a bearer token (default $ASSAY_TOKEN)")

    p = sub.add_parser("run", help="start an eval run")
    remote(p)
    p.add_argument("agent", help="the agent's id")
    p.add_argument("--dataset", required=True, help="the dataset's id (its latest version runs)")
    p.add_argument(
        "--version", default="latest", help="a version number, latest or published (default latest)"
    )
    p.add_argument(
        "--draft", action="store_true", help="run the agent's draft instead of a version"
    )
    p.add_argument("--watch", action="store_true", help="show a progress bar, then the outcome")
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("watch", help="a progress bar for a run")
    remote(p)
    p.add_argument("run_id")
    p.set_defaults(func=cmd_watch)

    p = sub.add_parser("import", help="add a dataset version from a JSONL, CSV or GSM8K file")
    remote(p)
    p.add_argument("dataset")
    p.add_argument("file")
    p.add_argument("--format", choices=["jsonl", "csv", "gsm8k"])
    p.add_argument(
        "--scorer", action="append", required=True, help="a required scorer (repeatable)"
    )
    p.add_argument("--create", metavar="NAME", help="create the dataset first, with this name")
    p.add_argument("--limit", type=int)
    p.set_defaults(func=cmd_import)

    p = sub.add_parser(
        "summaries", help="verdicts for agent versions (AGENT@VERSION or AGENT@draft)"
    )
    remote(p)
    p.add_argument("agent_versions", nargs="+")
    p.set_defaults(func=cmd_summaries)

    p = sub.add_parser(
        "secrets", help="the organization's secrets: set, list, delete (values are write-only)"
    )
    secrets = p.add_subparsers(dest="action", required=True)
    q = secrets.add_parser("set", help="create or replace a secret")
    remote(q)
    q.add_argument("name", help="the secret's name, e.g. openai (letters, digits, '_', '.', '-')")
    source = q.add_mutually_exclusive_group(required=True)
    source.add_argument(
        "--from-env", metavar="VAR", help="copy the value of this variable of your shell"
    )
    source.add_argument(
        "--value-stdin", action="store_true", help="read the value from standard input"
    )
    q = secrets.add_parser("list", help="names and when each changed")
    remote(q)
    q = secrets.add_parser("delete", help="delete a secret at once")
    remote(q)
    q.add_argument("name")
    p.set_defaults(func=cmd_secrets)

    p = sub.add_parser("recordings", help="the organization's recordings: upload, list, delete")
    recordings = p.add_subparsers(dest="action", required=True)
    q = recordings.add_parser(
        "upload", help="upload a JSONL recording ({case_id, input?, answer} per line)"
    )
    remote(q)
    q.add_argument("file")
    q.add_argument(
        "--id", default=None, help="its recording_id (default: derived from the content)"
    )
    q = recordings.add_parser("list", help="the organization's recordings")
    remote(q)
    q = recordings.add_parser("delete", help="delete a recording for good")
    remote(q)
    q.add_argument("recording_id")
    p.set_defaults(func=cmd_recordings)

    p = sub.add_parser("token", help="print a bearer token signed with the configured secret")
    p.add_argument("--org", default=DEFAULT_ORG)
    p.add_argument("--user", default=DEFAULT_USER)
    p.add_argument(
        "--ttl",
        type=parse_ttl,
        default=None,
        help=(
            "how long it is valid: seconds, or e.g. 30m, 12h (default ASSAY_TOKEN_TTL_SECONDS, 8 h)"
        ),
    )
    p.set_defaults(func=cmd_token)

    p = sub.add_parser("bench", help="the pipeline benchmark (bench/pipeline.py)")
    p.add_argument("--cases", type=int, default=500, help="cases in the run")
    p.add_argument("--sleep-ms", type=float, default=200, help="the agent's latency per case")
    p.add_argument("--concurrency", type=int, default=6, help="EVAL_RUN_CONCURRENCY")
    p.set_defaults(func=cmd_bench)

    args = parser.parse_args(argv)
    if args.command in STACK_COMMANDS:
        require_local_stack(args.command)
    try:
        return args.func(args)
    except ApiError as exc:
        print(f"assay: {exc}", file=sys.stderr)
        return 1


if __name__ == "__main__":
    sys.exit(main())
