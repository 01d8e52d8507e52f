"""The `assay` command: demo, dev, import, summaries, secrets, recordings, bench, token, and the API
commands of `assay.commands` (run, gate, watch, estimate, cancel, cases, comparison, export,
suites, promote, whoami, members, keys).

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
from typing import Any, NoReturn

from assay.client import ApiError, ApiUnreachable
from assay.commands import UsageError
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
        return 3  # an error (`assay.gate`)
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
        console_url = f"{stack.api_url}/agents/{agent_id}#token={_token()}"
        console.print(f"console (signed in, while the stack runs): {console_url}", soft_wrap=True)
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
        if args.serve:
            console.print(f"console: {console_url}\nserving it until Ctrl-C", soft_wrap=True)
            try:
                while True:
                    time.sleep(3600)
            except KeyboardInterrupt:
                pass
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
        f"{comparison['overall'] or 'not told apart'}" + (f", p = {p:.3g}" if p is not None else "")
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


def _port(text: str) -> int:
    """A TCP port for `assay dev`: 0 (any free port) to 65535. Raises
    `argparse.ArgumentTypeError`."""
    if not text.isdigit() or int(text) > 65535:
        raise argparse.ArgumentTypeError(f"{text!r} is not a port (0-65535; 0: any free port)")
    return int(text)


def cmd_dev(args: argparse.Namespace) -> int:
    """`assay dev`: the embedded stack until Ctrl-C or SIGTERM, on stable ports, its state kept
    in a data folder across restarts (issue 13 scope 4; `assay_local.devstate`). Exit status 0,
    or 2 with one line on stderr when it cannot start (1 when the last save failed)."""
    import signal

    from assay_local import devstate

    _quiet_logs()
    data = Path(args.data)

    def waiting() -> None:
        print(f"assay dev: waiting for the last assay dev to finish saving {data}…", flush=True)

    try:
        session = devstate.start(
            data=data,
            port=args.port,
            aws_port=args.aws_port,
            fresh=args.fresh,
            localstack=args.localstack,
            endpoint=args.endpoint,
            workers=args.workers,
            on_wait=waiting,
        )
    except devstate.DevError as exc:
        print(f"assay dev: {exc}", file=sys.stderr)
        return 2
    stack = session.stack
    if session.endpoint is not None:
        print(
            f"assay dev: AWS at {session.endpoint} (it keeps its own state); the signing "
            f"secret in {data}"
        )
    elif session.discarded is not None:
        print(
            f"assay dev: --fresh: starting empty; the previous state is kept as {session.discarded}"
        )
    elif args.fresh:
        print(f"assay dev: --fresh: starting empty (there was no saved state in {data})")
    elif session.restored is not None:
        print(f"assay dev: state in {data}, restored (saved {session.restored.get('saved_at')})")
    else:
        print(f"assay dev: state in {data} (new: nothing saved there yet)")
    kind = "moto" if session.endpoint is None else "external"
    print(f"assay dev: API on {stack.api_url}, AWS ({kind}) on {stack.endpoint_url}")
    print(f"export ASSAY_URL={stack.api_url}")
    try:
        token = _token()
        print(f"export ASSAY_TOKEN={token}")
        # the fragment signs the browser in; it never reaches a server or a log
        print(f"assay dev: console on {stack.api_url}/#token={token}")
    except ValueError as exc:  # ASSAY_JWT_SECRET="" turns HS256 off: no token to sign
        print(f"# no token: {exc}")
    if not session.secret_from_env:
        # Where it is, not what it is: the value stays out of terminals and logs.
        secret_file = (data / devstate.SECRET_FILE).resolve()
        print(f'export ASSAY_JWT_SECRET="$(cat {secret_file})"')
    print(
        f"# the token is for organization {DEFAULT_ORG}, user {DEFAULT_USER}, valid "
        f"{stack.settings.assay_token_ttl_seconds // 3600} h (`assay token --ttl 12h` signs "
        "another with ASSAY_JWT_SECRET, kept in the data folder); to reach the queues with boto3 "
        "or the aws CLI:"
    )
    print(
        f"export AWS_ENDPOINT_URL={stack.endpoint_url} "
        f"AWS_DEFAULT_REGION={stack.settings.aws_default_region} AWS_ACCESS_KEY_ID=testing "
        "AWS_SECRET_ACCESS_KEY=testing"
    )
    if session.endpoint is None:
        print(f"# Ctrl-C stops and saves the state in {data} (`assay dev --fresh` starts empty)")
    else:
        print("# Ctrl-C stops", flush=True)
    sys.stdout.flush()

    def stop(*_: object) -> None:
        raise KeyboardInterrupt

    signal.signal(signal.SIGTERM, stop)
    try:
        while True:
            time.sleep(3600)
    except KeyboardInterrupt:
        pass
    running = session.running_cases()
    if running:
        print(
            f"assay dev: stopping: letting {running} running case(s) finish (Ctrl-C again stops "
            "at once; those come back when their message's visibility lapses)",
            flush=True,
        )
    try:
        # A case may take up to its timeout; each finished one queues its lane's next task,
        # which the next start delivers.
        said = session.stop(grace_s=stack.settings.evaluation_case_timeout_seconds)
    except KeyboardInterrupt:
        print(f"assay dev: stopped at once; moto saves its state in {data} as it exits")
        return 0
    if said and "error" in said:
        print(f"assay dev: {said['error']}", file=sys.stderr)
        return 1
    if said and "saved" in said:
        print(f"assay dev: stopped; state saved in {said['saved']} ({said['bytes']:,} bytes)")
    elif said:
        print(f"assay dev: stopped; state in {said['unchanged']} (saved already)")
    return 0


# --- HTTP commands ---------------------------------------------------------------------------


def _api(args: argparse.Namespace):
    from assay.commands import client_of

    return client_of(args)


def cmd_import(args: argparse.Namespace) -> int:
    """`assay import DATASET FILE`: a new dataset version from a file; with `--create NAME` the
    dataset is created with it in one request (both or neither)."""
    from chalicelib.domain.dataset_sources import detect_kind

    api = _api(args)
    text = Path(args.file).read_text(encoding="utf-8")
    fmt = args.format or detect_kind(Path(args.file).name, text)
    if fmt is None:
        print(f"assay: cannot tell the format of {args.file}: give --format", file=sys.stderr)
        return 3  # an error (`assay.gate`)
    source: dict[str, Any] = {"format": str(fmt), "content": text}
    if args.limit:
        source["limit"] = args.limit
    body: dict[str, Any] = {"source": source}
    if args.scorer or args.judge:
        required = list(args.scorer or [])
        scoring: dict[str, Any] = {"required": required}
        if args.judge:
            if "judge" not in required:
                required.append("judge")
            scoring["settings"] = {"judge": {"judge_id": args.judge}}
        body["scoring"] = scoring
    if args.create:
        out = api.request(
            "POST",
            "/api/v1/datasets",
            json={"name": args.create, "dataset_id": args.dataset, **body},
        )
    else:
        out = api.request("POST", f"/api/v1/datasets/{args.dataset}/versions", json=body)
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
        json.dumps(
            api.request("POST", "/api/v1/agent-summaries", json={"agents": agents}), indent=2
        )
    )
    return 0


def cmd_secrets(args: argparse.Namespace) -> int:
    """`assay secrets set|list|delete`: the organization's secrets (write-only: no value is ever
    shown)."""
    from urllib.parse import quote

    api = _api(args)
    if args.action == "list":
        for secret in api.request("GET", "/api/v1/secrets")["secrets"]:
            print(f"{secret['name']}\t{secret['updated_at']}")
        return 0
    path = f"/api/v1/secrets/{quote(args.name, safe='')}"
    if args.action == "delete":
        api.request("DELETE", path)
        print(f"deleted secret {args.name}")
        return 0
    if args.from_env:
        # The operator copies one variable of their own shell in, explicitly; the service never
        # reads it.
        value = os.environ.get(args.from_env)
        if value is None:
            print(f"assay: environment variable {args.from_env} is not set", file=sys.stderr)
            return 3  # an error (`assay.gate`)
    else:
        value = sys.stdin.read().rstrip("\r\n")
    if not value:
        print("assay: the secret's value is empty", file=sys.stderr)
        return 3  # an error (`assay.gate`)
    out = api.request("PUT", path, json={"value": value})
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
            return 3  # an error (`assay.gate`)
        if args.id:
            body["recording_id"] = args.id
        print(json.dumps(api.request("POST", "/api/v1/recordings", json=body), indent=2))
    elif args.action == "list":
        print(json.dumps(api.request("GET", "/api/v1/recordings"), indent=2))
    else:
        api.request("DELETE", f"/api/v1/recordings/{quote(args.recording_id, safe='')}")
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
        return 3  # an error (`assay.gate`)
    try:
        print(_token(args.org, args.user, args.ttl))
    except ValueError as exc:
        print(f"assay: {exc}", file=sys.stderr)
        return 3  # an error (`assay.gate`)
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


class _Parser(argparse.ArgumentParser):
    """argparse, with a usage error exiting 3 (an error, `assay.gate`) instead of 2: a pipeline
    that lets "inconclusive" (2) through must not pass a mistyped flag."""

    def error(self, message: str) -> NoReturn:
        self.print_usage(sys.stderr)
        self.exit(3, f"{self.prog}: error: {message}\n")


def main(argv: list[str] | None = None) -> int:
    parser = _Parser(prog="assay", description=__doc__.splitlines()[0])
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
    p.add_argument(
        "--serve", action="store_true", help="keep the stack and its console up after the demo"
    )
    p.set_defaults(func=cmd_demo)

    from assay_local.devstate import DEFAULT_API_PORT, DEFAULT_DATA_DIR, LOCALSTACK_ENDPOINT

    p = sub.add_parser(
        "dev",
        help="run the embedded stack until Ctrl-C and print a token; its state is kept in a data "
        "folder across restarts",
    )
    p.add_argument("--workers", type=int, default=8, help="threads polling the case-task queue")
    p.add_argument(
        "--port",
        type=_port,
        default=DEFAULT_API_PORT,
        help=f"the API's port on 127.0.0.1 (default {DEFAULT_API_PORT}; 0: any free port)",
    )
    p.add_argument(
        "--aws-port",
        type=_port,
        default=None,
        help="moto's port on 127.0.0.1 (default: the API's port + 1)",
    )
    p.add_argument(
        "--data",
        default=str(DEFAULT_DATA_DIR),
        help=f"the folder the state is kept in (default {DEFAULT_DATA_DIR} under the current "
        "directory)",
    )
    p.add_argument(
        "--fresh",
        action="store_true",
        help="start empty (the previous state is kept as moto-state.old in the data folder)",
    )
    p.add_argument(
        "--localstack",
        action="store_true",
        help="use LocalStack (localstack-compose.yml) at --endpoint, default "
        f"{LOCALSTACK_ENDPOINT}",
    )
    p.add_argument(
        "--endpoint",
        default=None,
        help="an AWS endpoint to use instead of the embedded moto (default $AWS_ENDPOINT_URL)",
    )
    p.set_defaults(func=cmd_dev)

    def remote(p: argparse.ArgumentParser) -> None:
        p.add_argument(
            "--url", default=None, help="assay's API (default $ASSAY_URL; `assay dev` prints it)"
        )
        p.add_argument("--token", default=None, help="a bearer token (default $ASSAY_TOKEN)")

    from assay import commands

    commands.register(sub)  # run, gate, watch, estimate, cancel, cases, comparison, export, ...

    p = sub.add_parser(
        "import",
        help="add a dataset version from a JSONL, CSV, GSM8K, promptfoo or Inspect file",
    )
    remote(p)
    p.add_argument("dataset")
    p.add_argument("file")
    p.add_argument(
        "--format",
        choices=["jsonl", "csv", "gsm8k", "promptfoo", "inspect"],
        help="default: told from the file (.yaml is promptfoo; Inspect's target/id/choices)",
    )
    p.add_argument(
        "--scorer",
        action="append",
        help="a required scorer (repeatable); a promptfoo file's assertions add their own",
    )
    p.add_argument("--judge", metavar="JUDGE_ID", help="grade with this judge (llm-rubric)")
    p.add_argument(
        "--create", metavar="NAME", help="create the dataset with this version (both or neither)"
    )
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

    p = sub.add_parser(
        "token",
        help="print a bearer token signed with the configured secret (ASSAY_JWT_SECRET)",
        description="Print a bearer token for USER of ORG, signed with ASSAY_JWT_SECRET. What it "
        "may do is the user's membership, read on every request, never the token: the first "
        "token used in an organization that has no member yet makes its user that "
        "organization's admin; anybody else is a person of no role there until an admin adds "
        "them (assay members add USER --role R).",
        epilog="examples:\n"
        "  assay token                                      # dev@assay.local of org_default\n"
        "  assay token --org acme --user you@acme.com       # first use: you are acme's admin\n"
        "  assay members add ana@acme.com --role runner     # (as acme's admin) then:\n"
        "  ASSAY_TOKEN=$(assay token --org acme --user ana@acme.com --ttl 30m) assay whoami",
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    p.add_argument("--org", default=DEFAULT_ORG, help=f"the organization (default {DEFAULT_ORG})")
    p.add_argument(
        "--user",
        default=DEFAULT_USER,
        help=f"the user, the token's sub (default {DEFAULT_USER}); the first to sign in to a new "
        "organization becomes its admin",
    )
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
        return int(args.func(args))
    except (ApiError, ApiUnreachable, UsageError, OSError) as exc:
        print(f"assay: {exc}", file=sys.stderr)
        return 3  # an error: `assay.gate`'s exit codes


if __name__ == "__main__":
    sys.exit(main())
