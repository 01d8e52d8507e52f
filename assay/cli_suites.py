"""The CLI's suite and promotion commands: `suites list|create|run|results|guards` and
`promote`."""

from __future__ import annotations

import argparse
import sys
import time
from typing import Any

from assay import gate as gates
from assay.cli_common import (
    JSON,
    _emit_json,
    _load_document,
    _remote,
    _run_named,
    client_of,
    guarded,
)
from assay.cli_runs import watch_progress
from assay.client import AssayClient
from assay.text import schedule_words, table, usd


def _latest_result_after(api: AssayClient, agent: str, suite: str, before: set[str]) -> JSON | None:
    results = api.suite_results(agent, suite).get("results") or []
    fresh = [r for r in results if r.get("result_id") not in before]
    return fresh[0] if fresh else None


def _dataset_text(suite: JSON) -> str:
    pinned = suite.get("dataset_version")
    return f"{suite.get('dataset_id')} " + (f"v{pinned}" if pinned else "(latest)")


def _guard_text(suite: JSON) -> str:
    """`guards production`, `checks the default environment` or `checks staging`."""
    env = suite.get("environment_id")
    where = env or "the default environment"
    return f"guards {where}" if suite.get("guards") else f"checks {where}"


def last_result_text(suite: JSON) -> str:
    """How the suite last came out (`passed`, `failed`, ... and `paused` when it is), or `never
    run`."""
    last = suite.get("last_result")
    word = last.get("result") if isinstance(last, dict) else last
    text = str(word) if word else "never run"
    if suite.get("paused"):
        text += (
            f" (paused: {suite.get('paused_reason')})"
            if suite.get("paused_reason")
            else (" (paused)")
        )
    return text


def print_saved_suite(agent: str, suite: JSON) -> None:
    """What a saved suite checks, against which bar, when, and what it may cost."""
    print(
        f"suite {suite.get('suite_id')} saved for agent {agent}"
        + (f" ({suite['name']})" if suite.get("name") else "")
    )
    print(f"  dataset: {_dataset_text(suite)}; {_guard_text(suite)}")
    threshold = suite.get("threshold") or {}
    bars = [
        f"{name.replace('_', ' ')} {value}"
        for name, value in threshold.items()
        if value is not None
    ]
    print(f"  threshold: {', '.join(bars) or 'none (a first result sets the baseline)'}")
    print(f"  runs: {schedule_words(suite.get('triggers'))}")
    price = suite.get("price") or {}
    if price.get("one_run_usd") is not None:
        print(
            f"  price: about {usd(price.get('one_run_usd'))} a run"
            + (
                f", {usd(price.get('month_usd'))} over 30 days"
                if price.get("month_usd") is not None and price.get("runs_per_30_days")
                else ""
            )
        )
    print(f"  run it now: assay suites run {agent} {suite.get('suite_id')} --wait")


def guard_word(guard: JSON) -> str:
    """A guard's state in words: `passed`, `failed (inconclusive)`, `corrected by ana, a former
    member (failed -> passed)`, `out of date: <why>` or `not checked`."""
    state = guard.get("state")
    if state == "corrected":
        names = ", ".join(
            r.get("name") or "a former member" for r in guard.get("reviewed_by") or []
        )
        return (
            f"corrected by {names or 'review'} "
            f"({guard.get('result_before_review')} -> {guard.get('result')})"
        )
    if state == "out_of_date":
        return f"out of date: {guard.get('why_out_of_date')}"
    if state == "failed" and guard.get("result") != "failed":
        return f"failed ({guard.get('result')})"
    return str(state or "?").replace("_", " ")


def print_guard_status(agent: str, status: JSON) -> None:
    """Each environment, what it serves and each guard's state with its run."""
    rows = [
        [
            env.get("environment_id"),
            f"v{env['serving']}" if env.get("serving") is not None else "nothing",
            g.get("suite_id"),
            f"v{g['version']}" if g.get("version") is not None else "",
            g.get("run_id") or "",
            guard_word(g),
        ]
        for env in status.get("environments") or []
        for g in env.get("guards") or []
    ]
    if not rows:
        print(f'agent {agent} has no guards: a suite with "guards": true guards its environment')
        return
    print(table(["ENVIRONMENT", "SERVES", "GUARD", "VERSION", "RUN", "STATE"], rows))


@guarded
def cmd_suites(args: argparse.Namespace) -> int:
    """`suites list|show|create|run|results|guards`."""
    api = client_of(args)
    if args.suites_command == "list":
        suites = api.list_suites(args.agent)
        if args.json:
            _emit_json(suites)
            return gates.PASSED
        listed = suites.get("suites") or []
        if not listed:
            print(
                f"agent {args.agent} has no suites yet: assay suites create {args.agent} FILE "
                "saves one"
            )
            return gates.PASSED
        print(
            table(
                ["SUITE", "NAME", "DATASET", "GUARD / ENVIRONMENT", "SCHEDULE", "LAST"],
                [
                    [
                        s.get("suite_id"),
                        s.get("name"),
                        _dataset_text(s),
                        _guard_text(s),
                        schedule_words(s.get("triggers")),
                        last_result_text(s),
                    ]
                    for s in listed
                ],
            )
        )
        return gates.PASSED
    if args.suites_command == "create":
        suite = api.create_suite(args.agent, **_load_document(args.file))
        if args.json:
            _emit_json(suite)
        else:
            print_saved_suite(args.agent, suite)
        return gates.PASSED
    if args.suites_command == "guards":
        status = api.guard_status(args.agent)
        if args.json:
            _emit_json(status)
        else:
            print_guard_status(args.agent, status)
        return gates.PASSED
    if args.suites_command == "results":
        results = api.suite_results(args.agent, args.suite)
        if args.json:
            _emit_json(results)
            return gates.PASSED
        if not results.get("results"):
            print(
                f"suite {args.suite} has no result yet: assay suites run {args.agent} "
                f"{args.suite} --wait runs it now"
            )
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
    if promotion.get("status") == "waiting" and not args.json:
        print(
            f"  it waits for its guards' eval runs; the version is not promoted yet (exit "
            f"{gates.INCONCLUSIVE}). assay promote ... --wait waits for the result"
        )
    return decision.code


def register_suites(sub: Any) -> None:
    """Add `suites` and `promote`."""
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
    q = suites.add_parser(
        "guards", help="each guard of the agent on each environment: its state and its run"
    )
    _remote(q)
    q.add_argument("agent")
    q.add_argument("--json", action="store_true")
    p.set_defaults(func=cmd_suites)

    p = sub.add_parser(
        "promote",
        help="promote a version onto an environment; --wait for its guards",
        description="Promote a version onto an environment. Exit codes: 0 promoted, 1 refused "
        "(a guard failed), 2 still waiting for its guards' eval runs (without --wait the command "
        "does not wait: it says so and exits 2), 3 an error.",
    )
    _remote(p)
    p.add_argument("agent")
    p.add_argument("--environment", required=True)
    p.add_argument("--version", type=int, required=True)
    p.add_argument(
        "--wait",
        action="store_true",
        help="wait until promoted or refused (exit 0/1); without it a promotion that waits for "
        "its guards' eval runs exits 2 (inconclusive)",
    )
    p.add_argument("--json", action="store_true")
    p.add_argument("--timeout", type=float, default=None)
    p.set_defaults(func=cmd_promote)
