"""The CLI's usage: `assay usage [--month YYYY-MM] [--json]` (production this month, the eval and
grader traffic beside it, per agent) and `assay activity [--agent A] [--surface S]
[--exclude-surface S] [--limit N] [--json]` (runs newest first), through `GET /api/v1/usage`,
`GET /api/v1/runs` and `GET /api/v1/agents/{id}/runs` (docs/reference/usage.md)."""

from __future__ import annotations

import argparse
import re
from typing import Any

from assay.cli_common import (
    JSON,
    _emit_json,
    _remote,
    client_of,
    guarded,
    positive_count,
    print_listing,
)
from assay.client import AssayClient
from assay.gate import PASSED
from assay.text import table

SURFACES = ("production", "eval", "grader")
PAGE_MOST = 100
"""The most runs one page of the API's run listings holds."""


def _money(usd: Any) -> str:
    value = float(usd or 0)
    return f"${value:,.4f}" if 0 < value < 0.01 else f"${value:,.2f}"


def _month(text: str) -> str:
    if not re.fullmatch(r"\d{4}-\d{2}", text) or not 1 <= int(text[5:]) <= 12:
        raise argparse.ArgumentTypeError(f"{text!r} is not a month as YYYY-MM (e.g. 2026-12)")
    return text


def usage_text(doc: JSON) -> str:
    """The month's usage as `assay usage` prints it: production first, the eval traffic beside
    it (never added in), then one row per agent."""
    tokens = doc["tokens"]

    def line(name: str, surface: str, unit: str) -> list[Any]:
        t = tokens.get(surface) or {}
        return [
            name,
            _money(doc["cost"][f"{surface}_usd"]),
            f"{doc['runs'][surface]} {unit}",
            f"{int(t.get('input', 0)) + int(t.get('output', 0)):,} tokens",
        ]

    out = [
        f"Usage {doc['month']}",
        table(
            ["", "COST", "RUNS", "TOKENS"],
            [
                line("production", "production", "runs"),
                line("eval (beside it)", "eval", "cases"),
                line("grader (beside it)", "grader", "gradings"),
            ],
        ),
    ]
    if doc.get("agents"):
        out += [
            "",
            table(
                ["AGENT", "PRODUCTION", "EVAL", "GRADER", "PRODUCTION RUNS"],
                [
                    [
                        a["agent_id"],
                        _money(a["cost"]["production_usd"]),
                        _money(a["cost"]["eval_usd"]),
                        _money(a["cost"]["grader_usd"]),
                        a["runs"]["production"],
                    ]
                    for a in doc["agents"]
                ],
            ),
        ]
    return "\n".join(out)


@guarded
def cmd_usage(args: argparse.Namespace) -> int:
    """`usage`: the month's usage as text, or the API's document under `--json`."""
    doc = client_of(args).usage(args.month)
    if args.json:
        _emit_json(doc)
    else:
        print(usage_text(doc))
    return PASSED


def list_activity(api: AssayClient, args: argparse.Namespace) -> list[JSON]:
    """At most `args.limit` runs, newest first, of one agent or every one, with the surface
    filters."""
    runs: list[JSON] = []
    before: str | None = None
    while len(runs) < args.limit:
        query = {
            "surface": args.surface,
            "exclude_surface": args.exclude_surface,
            "before": before,
            "limit": min(PAGE_MOST, args.limit - len(runs)),
        }
        page = api.agent_run_history(args.agent, **query) if args.agent else api.activity(**query)
        runs += page.get("runs") or []
        before = page.get("next")
        if not before:
            break
    return runs[: args.limit]


def _row(run: JSON) -> list[Any]:
    case = run.get("eval_case")
    asked = str(run.get("asked") or "").replace("\n", " ")
    return [
        run.get("agent_run_id"),
        run.get("label"),
        run.get("agent_id"),
        asked[:60] + ("…" if len(asked) > 60 else ""),
        f"{case['run_id']} {case['case_id']}" if case else "",
        _money(run.get("cost_usd")),
        str(run.get("started_at") or "")[:16].replace("T", " "),
    ]


@guarded
def cmd_activity(args: argparse.Namespace) -> int:
    """`activity`: a table of runs, newest first, or `{"runs": [...]}` under `--json`."""
    runs = list_activity(client_of(args), args)
    return print_listing(
        args,
        "runs",
        runs,
        empty="no runs yet",
        headers=["RUN", "SOURCE", "AGENT", "ASKED", "EVAL CASE", "COST", "STARTED"],
        row=_row,
    )


def register_usage(sub: Any) -> None:
    """Add `usage` and `activity`."""
    p = sub.add_parser(
        "usage", help="this month's usage: production, with the eval traffic beside it"
    )
    _remote(p)
    p.add_argument("--month", type=_month, default=None, help="YYYY-MM (default this month)")
    p.add_argument("--json", action="store_true", help="write only JSON to stdout")
    p.set_defaults(func=cmd_usage)
    p = sub.add_parser(
        "activity", help="runs of every agent, newest first: Production, Eval, Grader"
    )
    _remote(p)
    p.add_argument("--agent", metavar="AGENT_ID", help="only this agent's runs")
    p.add_argument("--surface", choices=SURFACES, help="only runs of this source")
    p.add_argument("--exclude-surface", choices=SURFACES, help="every source but this one")
    p.add_argument(
        "--limit", type=positive_count, default=20, metavar="N", help="at most N runs (default 20)"
    )
    p.add_argument("--json", action="store_true", help="write only JSON to stdout")
    p.set_defaults(func=cmd_activity)
