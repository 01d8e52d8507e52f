"""The CLI's commands that call the API (issue 13, scopes 1 and 2; issue 14): `run`, `gate`,
`watch`, `estimate`, `cancel`, `cases`, `comparison`, `export`, `suites`, `promote`, and who may
do what: `whoami`, `members`, `keys`. Each takes
`--url`/`--token` (default `$ASSAY_URL`/`$ASSAY_TOKEN`) and talks to the API through
`assay.client` only, so it works against a deployed assay without the embedded stack installed.

Output: what a person reads goes to stdout, progress to stderr; with `--json` stdout holds one
JSON document and nothing else (an error too: `{"error": ..., "exit_code": 3}`). Exit codes are
`assay.gate`'s: 0 passed, 1 broke, 2 inconclusive, 3 error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
import time
from collections.abc import Callable, Iterable
from pathlib import Path
from typing import Any, TextIO

from assay import gate as gates
from assay.client import ENDED, ApiError, ApiUnreachable, AssayClient

JSON = dict[str, Any]


class UsageError(Exception):
    """A command cannot go on as asked (exit 3, one line)."""


# --- plumbing --------------------------------------------------------------------------------


def client_of(args: argparse.Namespace) -> AssayClient:
    """The API client from `--url`/`--token` or `$ASSAY_URL`/`$ASSAY_TOKEN`."""
    url = getattr(args, "url", None) or os.environ.get("ASSAY_URL")
    token = getattr(args, "token", None) or os.environ.get("ASSAY_TOKEN")
    if not url or not token:
        raise UsageError(
            "set --url and --token, or ASSAY_URL and ASSAY_TOKEN (assay dev prints both)"
        )
    return AssayClient(url, token)


def _emit_json(doc: Any, out: TextIO | None = None) -> None:
    (out or sys.stdout).write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """`command` with API errors, usage errors and timeouts turned into exit code 3 and one line
    on stderr (and a JSON error document on stdout under `--json`)."""

    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except BrokenPipeError:
            # stdout was closed by its reader (`assay export ... | head`): nothing more to say
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return gates.ERROR
        except (ApiError, ApiUnreachable, UsageError, TimeoutError, OSError) as exc:
            print(f"assay: {exc}", file=sys.stderr)
            if getattr(args, "json", False):
                error: JSON = {"message": str(exc)}
                if isinstance(exc, ApiError):
                    error |= {
                        "status": exc.status,
                        "code": exc.code,
                        "field": exc.field,
                        "request_id": exc.request_id,
                    }
                    permission = exc.error.get("permission")
                    if permission:  # what was missing: a 403 names it
                        error["permission"] = permission
                _emit_json({"error": error, "exit_code": gates.ERROR})
            return gates.ERROR

    run.__name__ = command.__name__
    run.__doc__ = command.__doc__
    return run


def _run_named(result: JSON) -> str:
    """`run <id>`, or that no run started (a result that did not run has none)."""
    run_id = result.get("run_id")
    return f"run {run_id}" if run_id else "no run started"


def _remote(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default=None, help="the API's base URL (default $ASSAY_URL)")
    p.add_argument("--token", default=None, help="a bearer token (default $ASSAY_TOKEN)")


def _reports(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="write only JSON to stdout")
    p.add_argument(
        "--junit", metavar="FILE", help="write a JUnit XML report (one testcase per case)"
    )
    p.add_argument(
        "--markdown", metavar="FILE", help="write the verdict as Markdown (a PR comment)"
    )
    p.add_argument(
        "--min-pass-rate",
        type=_fraction,
        default=None,
        help="fail (exit 1) below this pass rate: 0.8 or 80%%",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="stop waiting after N seconds: inconclusive (exit 2), the run goes on",
    )
    p.add_argument(
        "--cancel-on-timeout", action="store_true", help="with --timeout: cancel the run then"
    )


def _fraction(text: str) -> float:
    value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a pass rate between 0 and 1 (or 0-100%)")
    return value


def _count(n: Any, one: str, many: str | None = None) -> str:
    count = int(n or 0)
    return f"{count} {one if count == 1 else (many or one + 's')}"


def _confirmed(comparison: JSON) -> str:
    """`N confirmed regressions, M confirmed fixes; overall worse|better|not told apart`."""
    regressions = _count(comparison.get("confirmed_regressions"), "confirmed regression")
    fixes = _count(comparison.get("confirmed_fixes"), "confirmed fix", "confirmed fixes")
    return f"{regressions}, {fixes}; overall {comparison.get('overall') or 'not told apart'}"


def _tries(side: JSON) -> str:
    return _count(len(side.get("attempts") or []), "try", "tries")


def _usd(value: Any) -> str:
    return "unlimited" if value is None else f"${float(value):,.2f}"


# --- progress --------------------------------------------------------------------------------


def watch_progress(api: AssayClient, run_id: str, *, timeout_s: float | None = None) -> JSON:
    """Wait for the run to end, showing its progress on stderr (a bar on a terminal, a line every
    10 s elsewhere); returns the last progress."""
    err = sys.stderr
    if err.isatty():
        from rich.console import Console
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
            console=Console(stderr=True),
        ) as bar:
            task: list[Any] = []

            def show(p: JSON) -> None:
                if not task:
                    task.append(bar.add_task(run_id, total=p["expected"], status=p["status"]))
                bar.update(
                    task[0], completed=p["recorded"], total=p["expected"], status=p["status"]
                )

            return api.wait(run_id, every_s=0.5, timeout_s=timeout_s, on_progress=show)
    last = [0.0]

    def line(p: JSON) -> None:
        now = time.monotonic()
        if now - last[0] >= 10 or p.get("status") in ENDED:
            last[0] = now
            print(f"{run_id}: {p['recorded']}/{p['expected']} {p['status']}", file=err, flush=True)

    return api.wait(run_id, every_s=1.0, timeout_s=timeout_s, on_progress=line)


# --- deciding and reporting a run ------------------------------------------------------------


def _run_summary(run: JSON) -> JSON:
    """The run without its attempts (`results`: `assay export` writes those)."""
    return {k: v for k, v in run.items() if k != "results"}


def wait_and_report(api: AssayClient, run_id: str, args: argparse.Namespace) -> int:
    """Wait for the run (at most `--timeout` seconds), then `report_run`. A run still going at
    the timeout is inconclusive (exit 2): it goes on, unless `--cancel-on-timeout` cancels it."""
    try:
        watch_progress(api, run_id, timeout_s=args.timeout)
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
    decision = gates.decide_run(run, comparison, min_pass_rate=args.min_pass_rate)
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
    if comparison is not None:
        p = comparison.get("p_value")
        print(
            f"  against the baseline: {comparison.get('verdict')}; {_confirmed(comparison)}"
            + (f" (exact McNemar p = {p:.3g})" if isinstance(p, int | float) else "")
        )
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
    for w in est.get("warnings") or []:
        print(f"  warning: {w}", file=out)


@guarded
def cmd_run(args: argparse.Namespace) -> int:
    """Start an eval run (after its estimate), and with --wait gate it."""
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
    for w in run.get("warnings") or []:
        print(f"warning: {w}", file=sys.stderr)
    if not (args.wait or args.junit or args.markdown):
        if args.json:
            _emit_json({"run": run})
        else:
            print(run["run_id"])
        return gates.PASSED
    print(f"started {run['run_id']}", file=sys.stderr)
    return wait_and_report(api, run["run_id"], args)


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


# --- cases, comparison, export ---------------------------------------------------------------


def _case_filters(args: argparse.Namespace) -> JSON:
    return {"outcome": args.outcome, "tag": args.tag, "arm_id": args.arm}


@guarded
def cmd_cases(args: argparse.Namespace) -> int:
    """A run's cases: one line each (or JSON lines with --json)."""
    api = client_of(args)
    cases = api.cases(args.run_id, **_case_filters(args))
    if args.json:
        _emit_json({"run_id": args.run_id, "cases": list(cases)})
        return gates.PASSED
    for case in cases:
        sides = ", ".join(
            f"{arm} {side.get('settled')} ({_tries(side)})"
            for arm, side in (case.get("arms") or {}).items()
        )
        outcome = f" [{case['outcome']}]" if case.get("outcome") else ""
        print(f"{case.get('case_id')}{outcome}: {sides}")
    return gates.PASSED


@guarded
def cmd_comparison(args: argparse.Namespace) -> int:
    """The candidate against its baseline."""
    comparison = client_of(args).comparison(args.run_id)
    if args.json:
        _emit_json(comparison)
        return gates.PASSED
    print(
        f"verdict {comparison.get('verdict')}: {_confirmed(comparison)}; pass rate "
        f"{gates.percent(comparison.get('pass_rate_before'))} -> "
        f"{gates.percent(comparison.get('pass_rate_after'))}"
    )
    for flip in comparison.get("flips") or []:
        held = "confirmed" if flip.get("confirmed") else "not confirmed"
        print(
            f"  {flip.get('case_id')}: {flip.get('outcome')} ({held}; candidate "
            f"{','.join(flip.get('candidate_tries') or [])}, baseline "
            f"{','.join(flip.get('baseline_tries') or [])})"
        )
    for note in comparison.get("notes") or []:
        print(f"  note: {note}")
    return gates.PASSED


@guarded
def cmd_export(args: argparse.Namespace) -> int:
    """Every case of a run, page after page: JSON lines (each case as `/cases` gives it) or CSV
    (a row per case and side)."""
    api = client_of(args)
    cases = api.cases(args.run_id, **_case_filters(args))
    chunks: Iterable[str]
    if args.format == "csv":
        chunks = gates.csv_text(gates.export_rows(cases))
    else:
        chunks = (json.dumps(c, ensure_ascii=False) + "\n" for c in cases)
    if args.output in (None, "-"):
        for chunk in chunks:
            sys.stdout.write(chunk)
        return gates.PASSED
    target = Path(args.output)
    temp = target.with_name(target.name + ".part")
    with temp.open("w", encoding="utf-8", newline="") as out:
        for chunk in chunks:
            out.write(chunk)
    temp.replace(target)  # a failed export never leaves half a file under the name asked for
    print(f"wrote {target}", file=sys.stderr)
    return gates.PASSED


# --- suites, promotions ----------------------------------------------------------------------


def _load_document(path: str) -> JSON:
    text = Path(path).read_text(encoding="utf-8")
    try:
        doc = json.loads(text)
    except ValueError:
        try:
            import yaml
        except ImportError:
            raise UsageError(
                f"{path} is not JSON (and PyYAML is not installed to read YAML)"
            ) from None
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UsageError(f"{path} is neither JSON nor YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError(
            f"{path} must hold one JSON (or YAML) object of the suite's fields, e.g. "
            '{"dataset_id": "ds", "threshold": {"min_pass_rate": 0.9}, "guards": true}'
        )
    return doc


def _latest_result_after(api: AssayClient, agent: str, suite: str, before: set[str]) -> JSON | None:
    results = api.suite_results(agent, suite).get("results") or []
    fresh = [r for r in results if r.get("result_id") not in before]
    return fresh[0] if fresh else None


@guarded
def cmd_suites(args: argparse.Namespace) -> int:
    """`suites list|show|create|run|results`."""
    api = client_of(args)
    if args.suites_command == "list":
        suites = api.list_suites(args.agent)
        if args.json:
            _emit_json(suites)
            return gates.PASSED
        for s in suites.get("suites") or []:
            last = s.get("last_result") or {}
            word = last.get("result") if isinstance(last, dict) else last
            print(
                f"{s.get('suite_id')}: {s.get('name') or ''} on {s.get('dataset_id')}, "
                f"threshold {json.dumps(s.get('threshold'))}, last {word or 'never run'}"
                + (" (paused)" if s.get("paused") else "")
            )
        return gates.PASSED
    if args.suites_command == "create":
        suite = api.create_suite(args.agent, **_load_document(args.file))
        if args.json:
            _emit_json(suite)
        else:
            print(suite.get("suite_id"))
        return gates.PASSED
    if args.suites_command == "results":
        results = api.suite_results(args.agent, args.suite)
        if args.json:
            _emit_json(results)
            return gates.PASSED
        for r in results.get("results") or []:
            print(
                f"{r.get('started_at')}: {r.get('result')} ({_run_named(r)}; "
                f"{len(r.get('cases_broken') or [])} broke, "
                f"{len(r.get('cases_undecided') or [])} undecided)"
            )
            for reason in r.get("reasons") or []:
                print(f"  - {reason}")
        return gates.PASSED
    # run
    before = {
        r.get("result_id") for r in api.suite_results(args.agent, args.suite).get("results") or []
    }
    suite = api.run_suite(args.agent, args.suite)
    if not args.wait:
        if args.json:
            _emit_json(suite)
        else:
            print(suite.get("active_run_id") or "queued")
        return gates.PASSED
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    run_id = suite.get("active_run_id")
    while True:
        if run_id:
            watch_progress(
                api,
                run_id,
                timeout_s=None if deadline is None else max(1.0, deadline - time.monotonic()),
            )
        result = _latest_result_after(api, args.agent, args.suite, before)
        if result is not None:
            break
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(f"suite {args.suite} gave no result within {args.timeout:g} s")
        time.sleep(1.0)
        run_id = run_id or api.get_suite(args.agent, args.suite).get("active_run_id")
    decision = gates.decide_suite_result(result)
    if args.json:
        _emit_json({"result": result, "gate": decision.as_json()})
    else:
        print(f"suite {args.suite}: {result.get('result')} ({_run_named(result)})")
        print(f"gate: {decision.word} (exit {decision.code})")
        for reason in decision.reasons:
            print(f"  - {reason}")
    return decision.code


@guarded
def cmd_promote(args: argparse.Namespace) -> int:
    """Promote a version onto an environment; with --wait, wait for its guards."""
    api = client_of(args)
    promotion = api.promote(args.agent, environment_id=args.environment, version=args.version)
    deadline = None if args.timeout is None else time.monotonic() + args.timeout
    while args.wait and promotion.get("status") == "waiting":
        if deadline is not None and time.monotonic() > deadline:
            raise TimeoutError(
                f"promotion {promotion.get('promotion_id')} still waiting after {args.timeout:g} s"
            )
        guards = promotion.get("guards") or {}
        told = ", ".join(
            f"{sid} {(g or {}).get('result') or 'running'}" for sid, g in sorted(guards.items())
        )
        print(f"waiting for its guards: {told or 'none yet'}", file=sys.stderr)
        time.sleep(2.0)
        promotion = api.get_promotion(args.agent, promotion["promotion_id"])
    decision = gates.decide_promotion(promotion)
    if args.json:
        _emit_json({"promotion": promotion, "gate": decision.as_json()})
    else:
        print(f"promotion {promotion.get('promotion_id')}: {promotion.get('status')}")
        for reason in decision.reasons:
            print(f"  - {reason}")
    return decision.code if args.wait or promotion.get("status") != "waiting" else gates.PASSED


# --- access: whoami, members, keys (issue 14, seed 004 "Access") ----------------------------


def _grants_text(grants: list[JSON]) -> str:
    """`agent a1: agents:run; dataset d1: datasets:view` (or `none`)."""
    return (
        "; ".join(
            f"{g.get('kind')} {g.get('resource_id')}: {', '.join(g.get('permissions') or [])}"
            for g in grants
        )
        or "none"
    )


@guarded
def cmd_whoami(args: argparse.Namespace) -> int:
    """Who the token (or API key) is resolved as, and what it may do now."""
    me = client_of(args).me()
    if args.json:
        _emit_json(me)
        return gates.PASSED
    if me.get("api_key_id"):
        how = f"API key {me['api_key_id']} acting for {me.get('user_id')}"
    elif me.get("actor"):
        how = f"{me['actor']} signed in as {me.get('user_id')}"
    else:
        how = f"{me.get('user_id')}, a person signed in as themselves"
    role = f"role {me['role']}" if me.get("role") else "not a member: no role"
    print(f"organization {me.get('org_id')}: {how}; {role}")
    print(f"  permissions: {', '.join(me.get('permissions') or []) or 'none'}")
    print(f"  grants: {_grants_text(me.get('grants') or [])}")
    return gates.PASSED


def _print_member(m: JSON) -> None:
    print(f"{m.get('user_id')}\t{m.get('role')}\tgrants: {_grants_text(m.get('grants') or [])}")


@guarded
def cmd_members(args: argparse.Namespace) -> int:
    """`members list|add|role|remove|grant|revoke-grant` (each needs members:manage)."""
    api = client_of(args)
    action = args.members_command
    out: JSON
    if action == "list":
        out = api.list_members()
        if args.json:
            _emit_json(out)
        else:
            for m in out.get("members") or []:
                _print_member(m)
        return gates.PASSED
    if action == "add":
        out = api.add_member(user_id=args.user, role=args.role)
        said = f"added {out.get('user_id')} as {out.get('role')}"
    elif action == "role":
        out = api.change_member(args.user, role=args.role)
        said = f"{out.get('user_id')} is now {out.get('role')}"
    elif action == "remove":
        out = api.remove_member(args.user)
        said = f"removed {args.user}"
    elif action == "grant":
        out = api.put_grant(args.user, args.kind, args.resource_id, permissions=args.permissions)
        said = (
            f"{args.user} holds {', '.join(sorted(set(args.permissions)))} on {args.kind} "
            f"{args.resource_id}"
        )
    else:  # revoke-grant
        out = api.delete_grant(args.user, args.kind, args.resource_id)
        said = f"{args.user} holds no grant on {args.kind} {args.resource_id}"
    if args.json:
        _emit_json(out)
    else:
        print(said)
    return gates.PASSED


@guarded
def cmd_keys(args: argparse.Namespace) -> int:
    """`keys create|list|revoke`: API keys, a program's credential acting for its creator."""
    api = client_of(args)
    if args.keys_command == "create":
        made = api.create_api_key(scopes=args.scopes, name=args.name)
        if args.json:
            _emit_json(made)
            return gates.PASSED
        # The key alone on stdout (`KEY=$(assay keys create ...)`); what a person reads on stderr.
        print(made["key"])
        print(
            f"API key {made.get('key_id')} ({', '.join(made.get('scopes') or [])}): it is shown "
            "this once, only its SHA-256 is kept. Use it as the token: export ASSAY_TOKEN=<the "
            f"key above>; assay keys revoke {made.get('key_id')} stops it.",
            file=sys.stderr,
        )
        return gates.PASSED
    if args.keys_command == "list":
        keys = api.list_api_keys()
        if args.json:
            _emit_json(keys)
            return gates.PASSED
        for k in keys.get("api_keys") or []:
            state = f"revoked {k['revoked_at']}" if k.get("revoked_at") else "active"
            print(
                f"{k.get('key_id')}\t{k.get('name') or '-'}\t{','.join(k.get('scopes') or [])}"
                f"\tby {k.get('created_by')} at {k.get('created_at')}\t{state}"
            )
        return gates.PASSED
    revoked = api.revoke_api_key(args.key_id)
    if args.json:
        _emit_json(revoked)
    else:
        print(f"revoked {revoked.get('key_id')} at {revoked.get('revoked_at')}")
    return gates.PASSED


# --- the parsers -----------------------------------------------------------------------------


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
    p.add_argument("--reruns", type=int, default=None, help="reruns of each flipped case (0-5)")
    p.add_argument("--baseline-run", default=None, help="an earlier run to compare with")
    p.add_argument(
        "--model-profile", action="append", default=[], help="a model profile id (repeat for more)"
    )
    p.add_argument("--stability", action="store_true", help="measure how steady the answers are")


def register(sub: Any) -> None:
    """Add the API commands to `sub` (the CLI's subparsers)."""
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

    for name, func, helptext in (
        ("cases", cmd_cases, "a run's cases, every page"),
        ("export", cmd_export, "every case of a run as JSON lines or CSV"),
    ):
        p = sub.add_parser(name, help=helptext)
        _remote(p)
        p.add_argument("run_id")
        p.add_argument(
            "--outcome", default=None, help="only this outcome (regression, fixed, failed...)"
        )
        p.add_argument("--tag", default=None, help="only cases with this tag")
        p.add_argument("--arm", default=None, help="only this arm's side")
        if name == "export":
            p.add_argument("--format", choices=["jsonl", "csv"], default="jsonl")
            p.add_argument("--output", "-o", default=None, help="a file (default: stdout)")
        else:
            p.add_argument("--json", action="store_true")
        p.set_defaults(func=func)

    p = sub.add_parser("comparison", help="the candidate against its baseline")
    _remote(p)
    p.add_argument("run_id")
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_comparison)

    p = sub.add_parser("suites", help="an agent's suites: list, create, run, results")
    suites = p.add_subparsers(dest="suites_command", required=True)
    q = suites.add_parser("list", help="the agent's suites and how each last came out")
    _remote(q)
    q.add_argument("agent")
    q.add_argument("--json", action="store_true")
    q = suites.add_parser("create", help="save a suite from a JSON (or YAML) file of its fields")
    _remote(q)
    q.add_argument("agent")
    q.add_argument("file")
    q.add_argument("--json", action="store_true")
    q = suites.add_parser("run", help="run a suite now; --wait gates its result (exit 0/1/2/3)")
    _remote(q)
    q.add_argument("agent")
    q.add_argument("suite")
    q.add_argument("--wait", action="store_true")
    q.add_argument("--json", action="store_true")
    q.add_argument("--timeout", type=float, default=None)
    q = suites.add_parser("results", help="a suite's results, newest first")
    _remote(q)
    q.add_argument("agent")
    q.add_argument("suite")
    q.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_suites)

    p = sub.add_parser(
        "promote", help="promote a version onto an environment; --wait for its guards"
    )
    _remote(p)
    p.add_argument("agent")
    p.add_argument("--environment", required=True)
    p.add_argument("--version", type=int, required=True)
    p.add_argument("--wait", action="store_true", help="wait until promoted or refused (exit 0/1)")
    p.add_argument("--json", action="store_true")
    p.add_argument("--timeout", type=float, default=None)
    p.set_defaults(func=cmd_promote)

    p = sub.add_parser("whoami", help="who your token or API key is: role, permissions, grants")
    _remote(p)
    p.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_whoami)

    p = sub.add_parser(
        "members", help="the organization's members: list, add, role, remove, grant, revoke-grant"
    )
    members = p.add_subparsers(dest="members_command", required=True)
    q = members.add_parser("list", help="every member, their role and grants")
    _remote(q)
    q.add_argument("--json", action="store_true")
    q = members.add_parser("add", help="add a person with a role")
    _remote(q)
    q.add_argument("user", help="their user id (the token's sub, e.g. an email address)")
    q.add_argument("--role", required=True, help="guest, viewer, runner, editor or admin")
    q.add_argument("--json", action="store_true")
    q = members.add_parser("role", help="give a member another role (from their next request)")
    _remote(q)
    q.add_argument("user")
    q.add_argument("role", help="guest, viewer, runner, editor or admin")
    q.add_argument("--json", action="store_true")
    q = members.add_parser("remove", help="remove a member (their runs and suites stop)")
    _remote(q)
    q.add_argument("user")
    q.add_argument("--json", action="store_true")
    q = members.add_parser(
        "grant", help="grant a member permissions on one agent or dataset (replacing that grant)"
    )
    _remote(q)
    q.add_argument("user")
    q.add_argument("kind", choices=["agent", "dataset"])
    q.add_argument("resource_id", help="the agent's or dataset's id")
    q.add_argument(
        "permissions",
        nargs="+",
        help="that kind's own: agents:view|run|edit, or datasets:view|run|edit",
    )
    q.add_argument("--json", action="store_true")
    q = members.add_parser("revoke-grant", help="take a member's grant on one agent or dataset")
    _remote(q)
    q.add_argument("user")
    q.add_argument("kind", choices=["agent", "dataset"])
    q.add_argument("resource_id")
    q.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_members)

    p = sub.add_parser("keys", help="API keys for programs: create, list, revoke")
    keys = p.add_subparsers(dest="keys_command", required=True)
    q = keys.add_parser(
        "create", help="issue an API key within your permissions; it is printed this once"
    )
    _remote(q)
    q.add_argument(
        "--scope",
        dest="scopes",
        nargs="+",
        action="extend",
        required=True,
        metavar="PERM",
        help="what it may do (a subset of yours), e.g. --scope runs:view agents:run datasets:run",
    )
    q.add_argument("--name", default=None, help="a name to know it by")
    q.add_argument("--json", action="store_true")
    q = keys.add_parser(
        "list", help="your keys (every key of the organization with members:manage)"
    )
    _remote(q)
    q.add_argument("--json", action="store_true")
    q = keys.add_parser("revoke", help="revoke a key at once (its next request is a 401)")
    _remote(q)
    q.add_argument("key_id")
    q.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_keys)
