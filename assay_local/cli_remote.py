"""The `assay` commands that talk to a running assay over HTTP and live beside the embedded
stack: summaries, secrets, recordings (import is `cli_import`); and token, bench."""

from __future__ import annotations

import argparse
import json
import os
import sys
from pathlib import Path
from typing import Any

from assay_local.cli_common import dev_token


def _api(args: argparse.Namespace):
    from assay.commands import client_of

    return client_of(args)


def summary_text(summary: dict[str, Any]) -> str:
    """One version's verdict on one line: `capbot v1: none (not measured yet)`, `capbot draft:
    pass (5 of 5 passed)`, `... (5 of 5 passed; stale: the draft changed since)` for a draft
    measured before its last change."""
    version = summary.get("version")
    named = f"v{version}" if isinstance(version, int) else str(version or "draft")
    verdict = summary.get("verdict") or "none"
    if verdict == "none" or not summary.get("total"):
        return f"{summary.get('agent_id')} {named}: {verdict} (not measured yet)"
    stale = "; stale: the draft changed since" if summary.get("stale") else ""
    return (
        f"{summary.get('agent_id')} {named}: {verdict} ({summary.get('passed')} of "
        f"{summary.get('total')} passed{stale})"
    )


def cmd_summaries(args: argparse.Namespace) -> int:
    """`assay summaries AGENT@VERSION ...`: each version's verdict, one line each
    (`summary_text`); `--json`: the API's document."""
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
    out = api.request("POST", "/api/v1/agent-summaries", json={"agents": agents})
    if getattr(args, "json", False):
        print(json.dumps(out, indent=2))
        return 0
    for summary in out.get("summaries") or []:
        print(summary_text(summary))
    return 0


def cmd_secrets(args: argparse.Namespace) -> int:
    """`assay secrets set|list|delete`: the organization's secrets (write-only: no value is ever
    shown)."""
    from urllib.parse import quote

    api = _api(args)
    if args.action == "list":
        secrets = api.request("GET", "/api/v1/secrets")["secrets"]
        if not secrets:
            print(
                "no secrets yet: assay secrets set NAME --from-env VAR (or --value-stdin) adds one"
            )
        for secret in secrets:
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
        if not value:
            state = "is not set" if value is None else "is empty"
            print(
                f"assay: --from-env {args.from_env}: that variable {state} in this shell: export "
                f"{args.from_env}=<the value> first, or pipe the value in with --value-stdin",
                file=sys.stderr,
            )
            return 3  # an error (`assay.gate`)
    else:
        value = sys.stdin.read().rstrip("\r\n")
        if not value:
            print(
                "assay: --value-stdin: standard input was empty: pipe the value in (e.g. "
                f'printf %s "$KEY" | assay secrets set {args.name} --value-stdin), or use '
                "--from-env VAR",
                file=sys.stderr,
            )
            return 3  # an error (`assay.gate`)
    out = api.request("PUT", path, json={"value": value})
    print(f"secret {out['name']} set at {out['updated_at']}")
    return 0


def cmd_recordings(args: argparse.Namespace) -> int:
    """`assay recordings upload|from-run|list|delete`: the organization's recordings (JSONL
    answers and tool calls by case)."""
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
    elif args.action == "from-run":
        from_run: dict[str, Any] = {"recording_id": args.recording_id}
        if args.arm:
            from_run["arm_id"] = args.arm
        path = f"/api/v1/recordings/from-run/{quote(args.run_id, safe='')}"
        print(json.dumps(api.request("POST", path, json=from_run), indent=2))
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
        print(dev_token(args.org, args.user, args.ttl))
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
