"""The CLI's eval-run commands: `run`, `gate`, `watch`, `estimate`, `cancel`; the progress shown
while a run goes on and the gate's report of it (a run's cases, its comparison and its export:
`assay.cli_cases`)."""

from __future__ import annotations

import argparse
import sys
import time
from pathlib import Path
from typing import Any, TextIO

from assay import gate as gates
from assay.cli_common import (
    JSON,
    UsageError,
    _confirmed,
    _emit_json,
    _remote,
    _reports,
    _usd,
    client_of,
    guarded,
)
from assay.client import ENDED, ApiError, AssayClient
from assay.text import (
    attempts_line,
    duration_ms,
    estimate_basis,
    reruns_auto_line,
    run_state,
    usd,
    warnings_besides_reruns_auto,
)

# --- progress --------------------------------------------------------------------------------


def watch_progress(
    api: AssayClient, run_id: str, *, timeout_s: float | None = None, cases: int | None = None
) -> JSON:
    """Wait for the run to end, showing its progress on stderr (a bar on a terminal, a line every
    10 s elsewhere) as attempts recorded of those asked, with the run's arms and `cases` (its
    case count, when the caller knows it: `assay run` has it from the estimate); returns the last
    progress."""
    err = sys.stderr
    try:
        arms: int | None = len(api.get_run(run_id).get("arms") or []) or None
    except ApiError:
        arms = None  # the progress alone still says what it counts
    if err.isatty():
        from rich.console import Console
        from rich.progress import (
            BarColumn,
            MofNCompleteColumn,
            Progress,
            TextColumn,
            TimeElapsedColumn,
        )

        sides = (f", {cases} cases" if cases else "") + (f", {arms} arms" if arms else "")
        with Progress(
            TextColumn(f"{run_id} attempts"),
            BarColumn(),
            MofNCompleteColumn(),
            TextColumn(f"(reruns of flips included{sides})" + " {task.fields[status]}"),
            TimeElapsedColumn(),
            console=Console(stderr=True),
        ) as bar:
            task: list[Any] = []

            def show(p: JSON) -> None:
                state = run_state(p.get("status"), p.get("phase"))
                if not task:
                    task.append(bar.add_task(run_id, total=p["expected"], status=state))
                bar.update(task[0], completed=p["recorded"], total=p["expected"], status=state)

            return api.wait(run_id, every_s=0.5, timeout_s=timeout_s, on_progress=show)
    last = [0.0]

    def line(p: JSON) -> None:
        now = time.monotonic()
        if now - last[0] >= 10 or p.get("status") in ENDED:
            last[0] = now
            print(f"{run_id}: {attempts_line(p, arms=arms, cases=cases)}", file=err, flush=True)

    return api.wait(run_id, every_s=1.0, timeout_s=timeout_s, on_progress=line)


# --- deciding and reporting a run ------------------------------------------------------------


def _run_summary(run: JSON) -> JSON:
    """The run without its attempts (`results`: `assay export` writes those)."""
    return {k: v for k, v in run.items() if k != "results"}


def wait_and_report(
    api: AssayClient, run_id: str, args: argparse.Namespace, *, cases: int | None = None
) -> int:
    """Wait for the run (at most `--timeout` seconds), then `report_run`. A run still going at
    the timeout is inconclusive (exit 2): it goes on, unless `--cancel-on-timeout` cancels it."""
    try:
        watch_progress(api, run_id, timeout_s=args.timeout, cases=cases)
    except TimeoutError:
        reason = f"the run {run_id} did not end within {args.timeout:g} s"
        if args.cancel_on_timeout:
            api.cancel(run_id)
            reason += "; it was cancelled (--cancel-on-timeout)"
        else:
            reason += f"; it goes on (assay cancel {run_id} stops it)"
        decision = gates.Gate(gates.INCONCLUSIVE, [reason])
        if args.json:
            _emit_json({"run": {"run_id": run_id}, "comparison": None, "gate": decision.as_json()})
        else:
            print(f"gate: {decision.word} (exit {decision.code})")
            print(f"  - {reason}")
        return decision.code
    return report_run(api, run_id, args)


def report_run(api: AssayClient, run_id: str, args: argparse.Namespace) -> int:
    """Decide the ended run's gate, write the reports asked for, print the result; the exit
    code."""
    run = api.get_run(run_id)
    comparison = api.comparison_or_none(run_id)
    decision = gates.decide_run(
        run,
        comparison,
        min_pass_rate=args.min_pass_rate,
        max_luck=getattr(args, "max_luck", None),
    )
    cases: list[JSON] | None = None
    if args.junit or args.markdown:
        cases = list(api.cases(run_id))
    if args.junit:
        Path(args.junit).write_text(gates.junit(run, cases or [], decision), encoding="utf-8")
    if args.markdown:
        broken_ids = {
            f["case_id"]
            for f in (comparison or {}).get("flips") or []
            if f.get("outcome") == "regression" and f.get("confirmed")
        }
        arm = gates.candidate_arm(run)
        broken = [
            c
            for c in cases or []
            if c.get("case_id") in broken_ids
            or (
                not broken_ids and ((c.get("arms") or {}).get(arm) or {}).get("settled") == "failed"
            )
        ]
        Path(args.markdown).write_text(
            gates.markdown(run, comparison, decision, broken), encoding="utf-8"
        )
    if args.json:
        _emit_json({"run": _run_summary(run), "comparison": comparison, "gate": decision.as_json()})
    else:
        print_run(run, comparison, decision)
    return decision.code


def candidate_efficiency(run: JSON) -> str | None:
    """The candidate's latency and cost in words (`latency p50 11 ms, p95 1.2 s; cost $0.0042`),
    from its arm's summary; None when the run has none yet."""
    summaries = run.get("summaries") or {}
    summary = summaries.get(gates.candidate_arm(run)) if isinstance(summaries, dict) else None
    efficiency = (summary or {}).get("efficiency") if isinstance(summary, dict) else None
    if not isinstance(efficiency, dict):
        return None
    return (
        f"latency p50 {duration_ms(efficiency.get('latency_p50_ms'))}, p95 "
        f"{duration_ms(efficiency.get('latency_p95_ms'))}; cost {usd(efficiency.get('cost_usd'))}"
    )


def compared_text(comparison: JSON | None) -> str:
    """What the gate compared, in words: the verdict against the baseline with its confirmed
    flips; why there is none when the comparison could not be told (a side could not run, an
    invalid comparison); `no baseline: the pass rate alone` without a baseline."""
    if comparison is None:
        return "no baseline: the pass rate alone (and --min-pass-rate) decides"
    verdict = comparison.get("verdict")
    if verdict is None:
        why = comparison.get("invalid_reason") or "; ".join(
            f"{arm}: {error}" for arm, error in (comparison.get("could_not_run") or {}).items()
        )
        return "against the baseline: no verdict" + (f" ({why})" if why else "")
    p = comparison.get("p_value")
    return f"against the baseline: {str(verdict).replace('_', ' ')}; {_confirmed(comparison)}" + (
        f" (exact McNemar p = {p:.3g})" if isinstance(p, int | float) else ""
    )


def print_run(run: JSON, comparison: JSON | None, decision: gates.Gate) -> None:
    """The run's result for a person, on stdout."""
    outcome = run.get("outcome") or {}
    print(f"run {run.get('run_id')}: {run.get('status')}")
    if outcome:
        print(
            f"  pass rate {gates.percent(outcome.get('pass_rate'))}: {outcome.get('passed')}/"
            f"{outcome.get('total')} passed, {outcome.get('failed')} failed, "
            f"{outcome.get('undecided', 0)} undecided"
        )
    stability = run.get("stability")
    if isinstance(stability, dict):
        print(
            f"  stability: {stability.get('unstable')} of {stability.get('asked')} cases changed "
            f"their answer when asked again ({'noisy' if stability.get('noisy') else 'steady'})"
        )
    efficiency = candidate_efficiency(run)
    if efficiency:
        print(f"  {efficiency}")
    print(f"  {compared_text(comparison)}")
    luck = gates.noise_sentence(run)
    if luck:
        print(f"  noise: {luck}")
    print(f"gate: {decision.word} (exit {decision.code})")
    for reason in decision.reasons:
        print(f"  - {reason}")


# --- run, gate, watch, estimate, cancel ------------------------------------------------------


def start_body(args: argparse.Namespace) -> JSON:
    """The start (and estimate) body from `run`'s and `estimate`'s flags."""
    body: JSON = {}
    if args.draft:
        body["candidate"] = "draft"
    elif args.version is not None:
        body["candidate"] = "version"
        body["version"] = int(args.version) if str(args.version).isdigit() else args.version
    for name, value in (
        ("dataset_version", _int_or(args.dataset_version)),
        ("environment_id", args.environment),
        ("reruns", args.reruns),
        ("baseline_run_id", args.baseline_run),
        ("model_profile_ids", args.model_profile or None),
    ):
        if value is not None:
            body[name] = value
    if args.paired_baseline:
        body["paired_baseline"] = True
    if args.stability:
        body["stability"] = True
    if args.from_recording is not None:
        body["from_recordings"] = True
        body["recording_id"] = args.from_recording
    if args.live_reads:
        body["live_reads"] = True
    return body


def _int_or(value: str | None) -> int | str | None:
    return int(value) if value is not None and value.isdigit() else value


def print_estimate(est: JSON, out: TextIO) -> None:
    """An estimate for a person: what it costs, what grades the answers, what the budgets keep."""
    judge = est.get("judge")
    grading = (
        f"judge {judge.get('judge_id')}" if isinstance(judge, dict) else "scorers only (no judge)"
    )
    print(
        f"estimate: {est.get('cases')} cases, {_usd(est.get('total_usd'))} at most "
        f"(first pass {_usd(est.get('first_pass_usd'))}, reruns of flips up to "
        f"{_usd(est.get('rerun_ceiling_usd'))}; basis {est.get('basis')}); graded by {grading}",
        file=out,
    )
    print(
        f"  budgets after it: agent {_usd(est.get('agent_after_usd'))}, "
        f"organization {_usd(est.get('org_after_usd'))}"
        + ("" if est.get("within_budget", True) else "  -- over budget: the start will be refused"),
        file=out,
    )
    replay = est.get("replay")
    if isinstance(replay, dict):
        print(f"  tool calls: {replay.get('label')}", file=out)
    auto = reruns_auto_line(est.get("reruns_auto"), est.get("rerun_ceiling_usd"))
    if auto:
        print(f"  {auto}", file=out)
    elif isinstance(luck := est.get("luck"), dict) and luck.get("sentence"):
        print(f"  Luck: {luck['sentence']}", file=out)
    for line in estimate_basis(est):
        print(f"  basis: {line}", file=out)
    for w in warnings_besides_reruns_auto(est):
        print(f"  warning: {w}", file=out)


@guarded
def cmd_run(args: argparse.Namespace) -> int:
    """Start an eval run (after its estimate), and with --wait gate it. A gate's flag without
    --wait (or a report) is a usage error before anything is asked: the run would start and the
    command exit 0 whatever it found."""
    gating = bool(args.wait or args.junit or args.markdown)
    for flag, value in (
        ("--max-luck", args.max_luck),
        ("--min-pass-rate", args.min_pass_rate),
        ("--timeout", args.timeout),
    ):
        if value is not None and not gating:
            raise UsageError(
                f"{flag} gates the run only when the command waits for it: add --wait "
                f"(or gate it later with assay gate RUN_ID {flag} ...)"
            )
    api = client_of(args)
    body = start_body(args)
    est = api.estimate(args.agent, dataset_id=args.dataset, **body)
    print_estimate(est, sys.stderr)
    if not args.yes:
        if not sys.stdin.isatty():
            raise UsageError("no terminal to confirm the estimate on: pass --yes to start")
        answer = input(f"start for up to {_usd(est.get('total_usd'))}? [y/N] ")
        if answer.strip().lower() not in ("y", "yes"):
            print("not started", file=sys.stderr)
            return gates.ERROR
    run = api.start_run(args.agent, dataset_id=args.dataset, **body)
    chosen = reruns_auto_line(run.get("reruns_auto"), started=True)
    if chosen:
        print(chosen, file=sys.stderr)
    for w in warnings_besides_reruns_auto(run):
        print(f"warning: {w}", file=sys.stderr)
    if not (args.wait or args.junit or args.markdown):
        if args.json:
            _emit_json({"run": run})
        else:
            print(run["run_id"])
        return gates.PASSED
    print(f"started {run['run_id']}", file=sys.stderr)
    return wait_and_report(api, run["run_id"], args, cases=est.get("cases"))


@guarded
def cmd_gate(args: argparse.Namespace) -> int:
    """Wait for a run to end and gate it (exit 0/1/2/3)."""
    return wait_and_report(client_of(args), args.run_id, args)


@guarded
def cmd_estimate(args: argparse.Namespace) -> int:
    """What a start would cost and leave of the budgets."""
    est = client_of(args).estimate(args.agent, dataset_id=args.dataset, **start_body(args))
    if args.json:
        _emit_json(est)
    else:
        print_estimate(est, sys.stdout)
    return gates.PASSED


@guarded
def cmd_cancel(args: argparse.Namespace) -> int:
    """Cancel a queued or running run."""
    run = client_of(args).cancel(args.run_id)
    if args.json:
        _emit_json(run)
    else:
        print(f"run {run.get('run_id', args.run_id)}: {run.get('status')}")
    return gates.PASSED


def _reruns(text: str) -> int | str:
    """`--reruns`: a count 0-5, or `auto`."""
    if text == "auto":
        return text
    if not (text.isascii() and text.isdigit()) or int(text) > 5:
        raise argparse.ArgumentTypeError(f"{text!r} is not a count of reruns 0-5 or auto")
    return int(text)


def _start_flags(p: argparse.ArgumentParser) -> None:
    p.add_argument("agent", help="the agent's id")
    p.add_argument("--dataset", required=True, help="the dataset's id")
    p.add_argument("--dataset-version", default=None, help="a dataset version (default: latest)")
    which = p.add_mutually_exclusive_group()
    which.add_argument("--draft", action="store_true", help="run the agent's draft")
    which.add_argument(
        "--version", default=None, help="a version number, latest or published (default: latest)"
    )
    p.add_argument(
        "--environment", default=None, help="the environment whose connections the cases use"
    )
    p.add_argument(
        "--paired-baseline", action="store_true", help="run the version before it in the same run"
    )
    p.add_argument(
        "--reruns",
        type=_reruns,
        default=None,
        help="reruns of each flipped case (0-5), or auto: the fewest that keep a confirmed "
        "regression unlikely to be luck (with a baseline)",
    )
    p.add_argument("--baseline-run", default=None, help="an earlier run to compare with")
    p.add_argument(
        "--model-profile", action="append", default=[], help="a model profile id (repeat for more)"
    )
    p.add_argument("--stability", action="store_true", help="measure how steady the answers are")
    p.add_argument(
        "--from-recording",
        default=None,
        metavar="RECORDING_ID",
        help="answer every tool call from this recording's calls (a call it lacks is held)",
    )
    p.add_argument(
        "--live-reads",
        action="store_true",
        help="with --from-recording: run read tools the recording lacks on their connection",
    )


def register_runs(sub: Any) -> None:
    """Add `run`, `gate`, `watch`, `estimate`, `cancel`."""
    p = sub.add_parser(
        "run", help="estimate, then start an eval run; --wait gates it (exit 0/1/2/3)"
    )
    _remote(p)
    _start_flags(p)
    p.add_argument("--yes", "-y", action="store_true", help="start without confirming the estimate")
    p.add_argument("--wait", "--watch", action="store_true", help="wait for the end and gate it")
    _reports(p)
    p.set_defaults(func=cmd_run)

    p = sub.add_parser("gate", help="wait for a run to end and gate it (exit 0/1/2/3)")
    _remote(p)
    p.add_argument("run_id")
    _reports(p)
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("watch", help="a run's progress until it ends, then its gate")
    _remote(p)
    p.add_argument("run_id")
    _reports(p)
    p.set_defaults(func=cmd_gate)

    p = sub.add_parser("estimate", help="what a start would cost and leave of the budgets")
    _remote(p)
    _start_flags(p)
    p.add_argument("--json", action="store_true", help="write only JSON to stdout")
    p.set_defaults(func=cmd_estimate)

    p = sub.add_parser("cancel", help="cancel a queued or running run")
    _remote(p)
    p.add_argument("run_id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_cancel)
