"""The CLI's commands that call the API (issue 13, scopes 1 and 2; issue 14): `run`, `gate`,
`watch`, `estimate`, `cancel`, `runs list`, `cases`, `comparison`, `export`, `suites`,
`promote`; who may do what: `whoami`, `members`, `keys`; and what runs use: `agents`,
`environments`, `connections`, `datasets`, `profiles`; and the review queue: `review`. Each takes
`--url`/`--token` (default `$ASSAY_URL`/`$ASSAY_TOKEN`) and talks to the API through
`assay.client` only, so it works against a deployed assay without the embedded stack installed.

Output: what a person reads goes to stdout, progress to stderr; with `--json` stdout holds one
JSON document and nothing else (an error too: `{"error": ..., "exit_code": 3}`). Exit codes are
`assay.gate`'s: 0 passed, 1 broke, 2 inconclusive, 3 error.
"""

from __future__ import annotations

from typing import Any

from assay.cli_access import register_access
from assay.cli_agents import register_agents
from assay.cli_cases import register_cases
from assay.cli_common import UsageError, client_of, guarded
from assay.cli_connections import register_connections
from assay.cli_resources import register_resources
from assay.cli_review import register_review
from assay.cli_runlist import register_runlist
from assay.cli_runs import register_runs, report_run, wait_and_report, watch_progress
from assay.cli_suites import register_suites
from assay.cli_usage import register_usage

__all__ = [
    "UsageError",
    "client_of",
    "guarded",
    "register",
    "report_run",
    "wait_and_report",
    "watch_progress",
]


def register(sub: Any) -> None:
    """Add the API commands to `sub` (the CLI's subparsers)."""
    register_runs(sub)
    register_cases(sub)
    register_runlist(sub)
    register_usage(sub)
    register_suites(sub)
    register_access(sub)
    register_agents(sub)
    register_resources(sub)
    register_connections(sub)
    register_review(sub)
