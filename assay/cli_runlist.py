"""The CLI's listing of eval runs: `assay runs list [--agent AGENT_ID] [--dataset DATASET_ID]
[--limit N] [--json]`, newest first, through `GET /api/v1/eval-runs` (every run the caller may
see), `GET /api/v1/agents/{id}/eval-runs` or `GET /api/v1/datasets/{id}/eval-runs`."""

from __future__ import annotations

import argparse
from collections.abc import Iterator
from typing import Any

from assay.cli_common import JSON, _remote, client_of, guarded, positive_count, print_listing
from assay.client import AssayClient
from assay.text import run_state

EMPTY = "no eval runs yet: assay run AGENT --dataset DS --draft --yes --wait starts one"
HEADERS = ["RUN", "AGENT", "TESTED", "DATASET", "VERDICT", "STARTED"]
PAGE_MOST = 200
"""The most runs one page of the API's listings holds."""


def _pages(api: AssayClient, agent_id: str | None, dataset_id: str | None) -> Iterator[JSON]:
    """Every run of the listing that fits the filters, page after page, newest first. With both
    filters the agent's runs are read and those on other datasets skipped (no listing takes
    both)."""
    cursor: str | None = None
    while True:
        query: JSON = {"limit": PAGE_MOST, "cursor": cursor}
        if agent_id:
            page = api.agent_runs(agent_id, **query)
        elif dataset_id:
            page = api.dataset_runs(dataset_id, **query)
        else:
            page = api.runs(**query)
        for run in page.get("runs") or []:
            if not dataset_id or run.get("dataset_id") == dataset_id:
                yield run
        cursor = page.get("next_cursor")
        if not cursor:
            return


def list_runs(
    api: AssayClient, *, agent_id: str | None, dataset_id: str | None, limit: int
) -> list[JSON]:
    """At most `limit` runs (`run_view`s of the API) of `agent_id` and/or on `dataset_id` (None:
    any), newest first. Raises ApiError for an agent or dataset the caller may not read."""
    runs: list[JSON] = []
    for run in _pages(api, agent_id, dataset_id):
        runs.append(run)
        if len(runs) >= limit:
            break
    return runs


def verdict_cell(run: JSON) -> str:
    """A run's state while it is queued or running (`running, rerunning flips`), else the API's
    verdict phrase ("No baseline", "Breaks 2", "Cancelled")."""
    status = run.get("status")
    if status in ("queued", "running"):
        return run_state(status, run.get("phase"))
    return str(run.get("verdict_phrase") or status or "")


def started_cell(run: JSON) -> str:
    """When the run started (else was made), to the minute in UTC: `2026-12-05 20:36`."""
    when = str(run.get("started_at") or run.get("created_at") or "")
    return when[:16].replace("T", " ")


def _row(run: JSON) -> list[Any]:
    return [
        run.get("run_id"),
        run.get("agent_id"),
        run.get("tested"),
        f"{run.get('dataset_id')} v{run.get('dataset_version')}",
        verdict_cell(run),
        started_cell(run),
    ]


@guarded
def cmd_runs(args: argparse.Namespace) -> int:
    """`runs list`: a table of eval runs, newest first, or `{"runs": [...]}` under `--json`."""
    runs = list_runs(
        client_of(args), agent_id=args.agent, dataset_id=args.dataset, limit=args.limit
    )
    return print_listing(args, "runs", runs, empty=EMPTY, headers=HEADERS, row=_row)


def register_runlist(sub: Any) -> None:
    """Add `runs list`."""
    p = sub.add_parser("runs", help="list eval runs, newest first")
    actions = p.add_subparsers(dest="action", required=True, metavar="{list}")
    q = actions.add_parser("list", help="eval runs, newest first: run, agent, tested, verdict")
    _remote(q)
    q.add_argument("--agent", metavar="AGENT_ID", help="only this agent's runs")
    q.add_argument("--dataset", metavar="DATASET_ID", help="only runs on this dataset")
    q.add_argument(
        "--limit", type=positive_count, default=20, metavar="N", help="at most N runs (default 20)"
    )
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q.set_defaults(func=cmd_runs)
