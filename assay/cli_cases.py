"""The CLI's commands that read a run's cases: `cases`, `comparison`, `export` (a case's line, why
a side failed, the calls of each try)."""

from __future__ import annotations

import argparse
import json
import sys
from collections.abc import Iterable
from pathlib import Path
from typing import Any

from assay import gate as gates
from assay.cli_common import JSON, _confirmed, _emit_json, _remote, _tries, client_of, guarded
from assay.client import AssayClient
from assay.review_text import person_words
from assay.text import call_counts, call_line, case_label, diverged_line


def _case_filters(args: argparse.Namespace) -> JSON:
    return {"outcome": args.outcome, "tag": args.tag, "arm_id": args.arm}


def failure_reasons(side: JSON) -> str:
    """Why one side of a case did not pass, from its first attempt that did not: each failing
    scorer's reason (`exact: expected 42, got 41`), else the attempt's own reason or error; the
    empty string when none is given."""
    for attempt in side.get("attempts") or []:
        if attempt.get("passed"):
            continue
        scores = [
            s for s in attempt.get("scores") or [] if isinstance(s, dict) and not s.get("passed")
        ]
        said = [
            f"{s.get('scorer')}: {' '.join(str(s.get('reason')).split())}"
            if s.get("reason")
            else f"{s.get('scorer')}: {'could not decide' if s.get('passed') is None else 'failed'}"
            for s in scores
        ]
        own = attempt.get("reason") or attempt.get("error")
        if own and not said:
            said.append(" ".join(str(own).split()))
        if said:
            return "; ".join(said)
    return ""


def _case_pages(api: AssayClient, run_id: str, filters: JSON) -> tuple[list[JSON], int]:
    """Every case of a run the filters keep, page after page, and how many of the run's cases
    diverged from the recording (`diverged_cases`, over every case of the run)."""
    out: list[JSON] = []
    diverged = 0
    cursor: str | None = None
    while True:
        page = api.cases_page(run_id, cursor=cursor, **filters)
        out += page.get("cases") or []
        diverged = int(page.get("diverged_cases") or 0)
        cursor = page.get("next_cursor")
        if not cursor:
            return out, diverged


def print_case(case: JSON) -> None:
    """A case as `assay cases` prints it: a line with each side's settled state and its blocked
    and divergent calls, then why a side failed, then each attempt's calls with their status."""
    sides = ", ".join(
        f"{arm} {side.get('settled')} ({_tries(side)})"
        for arm, side in (case.get("arms") or {}).items()
    )
    outcome = f" [{case['outcome']}]" if case.get("outcome") else ""
    counted = call_counts(case.get("blocked_calls"), case.get("divergent_calls"))
    named = case_label(case.get("case_id"), (case.get("expects") or {}).get("input"))
    print(f"{named}{outcome}: {sides}" + (f"; calls {counted}" if counted else ""))
    for arm, side in (case.get("arms") or {}).items():
        review = side.get("review")
        if isinstance(review, dict):
            how = "corrected" if review.get("corrected") else "reviewed"
            print(f"  {arm}: {how} by {person_words(review.get('by'))} ({review.get('verdict')})")
        if side.get("settled") in ("failed", "incomplete", "ungraded"):
            why = failure_reasons(side)
            if why:
                print(f"  {arm}: {why}")
        for n, attempt in enumerate(side.get("attempts") or [], 1):
            calls = [c for c in attempt.get("calls") or [] if isinstance(c, dict)]
            if calls:
                said = "; ".join(call_line(c) for c in calls)
                print(f"  {arm} try {attempt.get('attempt') or n} calls: {said}")


@guarded
def cmd_cases(args: argparse.Namespace) -> int:
    """A run's cases: one line each, with their calls (or one JSON document with --json:
    `{run_id, diverged_cases, cases}`); then how many cases diverged from the recording."""
    api = client_of(args)
    cases, diverged = _case_pages(api, args.run_id, _case_filters(args))
    if args.json:
        _emit_json({"run_id": args.run_id, "diverged_cases": diverged, "cases": cases})
        return gates.PASSED
    for case in cases:
        print_case(case)
    if diverged:
        print(f"{diverged_line(diverged)} (their unmatched calls were held, not made)")
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
            f"  {case_label(flip.get('case_id'), flip.get('question'))}: {flip.get('outcome')} "
            f"({held}; candidate "
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


def register_cases(sub: Any) -> None:
    """Add `cases`, `export`, `comparison`."""
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
