"""The CLI's agent commands: `agents create|list|show|draft|publish|delete`, each through the API
(`POST /api/v1/agents`, `PUT .../draft`, `POST .../versions`, ...), so an agent is set up from a
spec file in the repository without any other tool.

A spec file is JSON or YAML: the draft spec itself (`{"runtime": ..., ...}`), or an object with
`spec` (and optionally `name`) around it."""

from __future__ import annotations

import argparse
from typing import Any

from assay import gate as gates
from assay.cli_common import (
    JSON,
    UsageError,
    _emit_json,
    _remote,
    client_of,
    guarded,
    load_document,
    print_listing,
)
from assay.client import AssayClient
from assay.text import table

SPEC_EXAMPLE = '{"runtime": "python", "entrypoint": "my_agent:answer"}'


def read_spec(path: str) -> tuple[JSON, str | None]:
    """The draft spec in the JSON or YAML file at `path`, and the `name` beside it when the file
    wraps it (`{"spec": {...}, "name": ...}`). Raises UsageError for a file that is not one
    object."""
    doc = load_document(path, what="the agent's spec", example=SPEC_EXAMPLE)
    if isinstance(doc.get("spec"), dict) and "runtime" not in doc:
        name = doc.get("name")
        return doc["spec"], name if isinstance(name, str) else None
    return doc, None


def _short(spec_hash: Any) -> str:
    text = str(spec_hash or "")
    return text.removeprefix("sha256:")[:12] or "-"


def draft_state(api: AssayClient, agent: JSON) -> str:
    """Whether the agent's draft differs from its latest version: `differs from vN`, `same as vN`,
    or `not published yet` (one `GET .../versions/{latest}`)."""
    latest = agent.get("latest_version")
    if not latest:
        return "not published yet"
    version = api.get_version(agent["agent_id"], latest)
    same = version.get("spec_hash") == (agent.get("draft") or {}).get("spec_hash")
    return f"same as v{latest}" if same else f"differs from v{latest}"


def verdict_text(summary: JSON | None) -> str:
    """`pass (9/10)`, `fail (3/10)`; `none (not measured yet)`, never read as a failure; `-` where
    there is no verdict to give (nothing published, or a reader without runs:view)."""
    if not summary or summary.get("verdict") is None:
        return "-"
    if summary["verdict"] == "none":
        return "none (not measured yet)"
    stale = ", stale" if summary.get("stale") else ""
    return f"{summary['verdict']} ({summary.get('passed')}/{summary.get('total')}{stale})"


def _version_text(n: Any) -> str:
    return f"v{n}" if n else "-"


def _draft_text(agent: JSON) -> str:
    """`differs from vN` or `same as vN` (N the latest version), `not published yet`."""
    latest = agent.get("latest_version")
    if not latest:
        return "not published yet"
    return f"{'differs from' if agent.get('draft_differs') else 'same as'} v{latest}"


@guarded
def cmd_agents(args: argparse.Namespace) -> int:
    """`agents create|list|show|draft|publish|delete`."""
    api = client_of(args)
    action = args.agents_command
    if action == "create":
        if not args.spec:
            raise UsageError(
                "agents create needs --spec FILE: the agent's first draft spec (JSON or YAML), "
                f"e.g. {SPEC_EXAMPLE}"
            )
        spec, named = read_spec(args.spec)
        agent = api.create_agent(
            name=args.name or named or args.agent_id, spec=spec, agent_id=args.agent_id
        )
        if args.json:
            _emit_json(agent)
        else:
            print(
                f"agent {agent.get('agent_id')} created ({agent.get('name')}); its draft is the "
                f"spec of {args.spec} (runtime {spec.get('runtime')}). Publish it as v1: "
                f"assay agents publish {agent.get('agent_id')}"
            )
        return gates.PASSED
    if action == "list":
        # The list carries whether each draft differs and both verdicts: no read per agent.
        def row(a: JSON) -> list[Any]:
            seen = a.get("verdicts") or {}
            return [
                a.get("agent_id"),
                a.get("name"),
                _version_text(a.get("live_version")),
                _draft_text(a),
                verdict_text(seen.get("live")),
                verdict_text(seen.get("draft")),
            ]

        return print_listing(
            args,
            "agents",
            api.list_agents().get("agents") or [],
            empty="no agents yet: assay agents create AGENT_ID --spec FILE creates one",
            headers=["AGENT", "NAME", "LIVE", "DRAFT", "LIVE VERDICT", "DRAFT VERDICT"],
            row=row,
        )
    if action == "show":
        return _show(api, args)
    if action == "draft":
        spec, named = read_spec(args.file)
        agent = api.put_draft(args.agent_id, spec=spec, name=named)
        if args.json:
            _emit_json(agent)
        else:
            print(
                f"draft of agent {args.agent_id} saved from {args.file} (runtime "
                f"{spec.get('runtime')}, spec {_short((agent.get('draft') or {}).get('spec_hash'))}"
                f"); {draft_state(api, agent)}"
            )
        return gates.PASSED
    if action == "publish":
        version = api.publish(args.agent_id, version=args.version)
        if args.json:
            _emit_json(version)
        elif version.get("created", True):
            print(
                f"published agent {args.agent_id} v{version.get('version')} (spec "
                f"{_short(version.get('spec_hash'))})"
            )
        else:
            print(
                f"agent {args.agent_id} v{version.get('version')} holds this spec already: "
                "nothing new was published"
            )
        return gates.PASSED
    # delete
    if not args.yes:
        raise UsageError(
            f"not deleted: deleting agent {args.agent_id} deletes its versions, eval runs, suites "
            "and promotions for good; pass --yes to delete it"
        )
    gone = api.delete_agent(args.agent_id)
    if args.json:
        _emit_json(gone)
    else:
        print(
            f"deleted agent {args.agent_id} with {gone.get('runs_deleted', 0)} eval runs, "
            f"{gone.get('suites_deleted', 0)} suites and {gone.get('evaluations_deleted', 0)} "
            "evaluations"
        )
    return gates.PASSED


def _show(api: AssayClient, args: argparse.Namespace) -> int:
    agent = api.get_agent(args.agent_id)
    versions = api.list_versions(args.agent_id).get("versions") or []
    serving = {
        str(e.get("environment_id")): (e.get("serving") or {}).get(args.agent_id)
        for e in api.list_environments().get("environments") or []
    }
    serving = {env: v for env, v in serving.items() if v}
    if args.json:
        _emit_json({"agent": agent, "versions": versions, "serving": serving})
        return gates.PASSED
    draft = agent.get("draft") or {}
    latest = next((v for v in versions if v.get("version") == agent.get("latest_version")), None)
    if latest is None:
        differs = "not published yet"
    elif latest.get("spec_hash") == draft.get("spec_hash"):
        differs = f"same as v{latest.get('version')}"
    else:
        differs = f"differs from v{latest.get('version')}"
    print(f"agent {agent.get('agent_id')}: {agent.get('name')}")
    print(
        f"  live {_version_text(agent.get('live_version'))}, latest "
        f"{_version_text(agent.get('latest_version'))}; created {agent.get('created_at')}"
    )
    runtime = (
        (draft.get("spec") or {}).get("runtime") if isinstance(draft.get("spec"), dict) else None
    )
    print(
        f"  draft: {differs} (spec {_short(draft.get('spec_hash'))}"
        + (f", runtime {runtime}" if runtime else "")
        + f", saved {draft.get('updated_at')})"
    )
    if serving:
        print("  serving: " + ", ".join(f"{env} v{v}" for env, v in sorted(serving.items())))
    else:
        print("  serving: no environment serves it")
    if versions:
        print()
        rows = [
            [
                f"v{v.get('version')}",
                v.get("published_at"),
                v.get("published_by"),
                _short(v.get("spec_hash")),
                v.get("model_profile_id"),
            ]
            for v in sorted(versions, key=lambda v: int(v.get("version") or 0), reverse=True)
        ]
        print(table(["VERSION", "PUBLISHED", "BY", "SPEC", "PROFILE"], rows))
    else:
        print(f"  no versions: assay agents publish {args.agent_id} publishes the draft as v1")
    return gates.PASSED


def register_agents(sub: Any) -> None:
    """Add `agents` and its actions to `sub` (the CLI's subparsers)."""
    p = sub.add_parser(
        "agents", help="the organization's agents: create, list, show, draft, publish, delete"
    )
    agents = p.add_subparsers(dest="agents_command", required=True)
    q = agents.add_parser("create", help="create an agent whose draft is a spec file")
    _remote(q)
    q.add_argument("agent_id", help="the agent's id (letters, digits, _ and -)")
    q.add_argument("--name", default=None, help="a name for people (default: the id)")
    q.add_argument(
        "--spec", metavar="FILE", default=None, help="the draft spec, JSON or YAML (required)"
    )
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = agents.add_parser(
        "list", help="every agent: live and latest version, whether the draft differs, verdict"
    )
    _remote(q)
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = agents.add_parser("show", help="one agent: its versions, draft and where it is served")
    _remote(q)
    q.add_argument("agent_id")
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = agents.add_parser("draft", help="replace the agent's draft with a spec file")
    _remote(q)
    q.add_argument("agent_id")
    q.add_argument("file", help="the spec, JSON or YAML")
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = agents.add_parser("publish", help="publish the draft as the next version")
    _remote(q)
    q.add_argument("agent_id")
    q.add_argument(
        "--version", type=int, default=None, help="the version number (default: the latest + 1)"
    )
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = agents.add_parser(
        "delete", help="delete an agent and its versions, runs, suites (needs --yes)"
    )
    _remote(q)
    q.add_argument("agent_id")
    q.add_argument("--yes", action="store_true", help="yes, delete it and everything of it")
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    p.set_defaults(func=cmd_agents)
