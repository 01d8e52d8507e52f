"""The CLI's commands for where agents' tools run: `connections create|list|delete`, and the
`--map ID=TEST_ID` pairs that `environments test-connections` and `environments create
--test-connection` turn into an environment's test connections (docs/guides/tools.md)."""

from __future__ import annotations

import argparse
from collections.abc import Sequence
from typing import Any

from assay import gate as gates
from assay.cli_common import (
    JSON,
    UsageError,
    _emit_json,
    _remote,
    client_of,
    guarded,
    print_listing,
)


def mapping_of(pairs: Sequence[str] | None, flag: str) -> dict[str, str]:
    """`{connection_id: test_connection_id}` from `ID=TEST_ID` pairs given to `flag`.

    Raises:
        UsageError: naming `flag` for a pair without `=`, with an empty side, or a connection
            given twice.
    """
    out: dict[str, str] = {}
    for pair in pairs or ():
        source, sep, target = pair.partition("=")
        source, target = source.strip(), target.strip()
        if not sep or not source or not target:
            raise UsageError(
                f"{flag} {pair!r}: write CONNECTION=TEST_CONNECTION, e.g. {flag} shop=shop-test"
            )
        if source in out:
            raise UsageError(f"{flag}: connection {source} is given twice; give it once")
        out[source] = target
    return out


def mapping_text(mapped: Any) -> str:
    """An environment's test connections in words: `shop -> shop-test, mail -> mail-test`, or
    `none`."""
    if not isinstance(mapped, dict) or not mapped:
        return "none"
    return ", ".join(f"{k} -> {v}" for k, v in sorted(mapped.items()))


@guarded
def cmd_connections(args: argparse.Namespace) -> int:
    """`connections create|list|delete`."""
    api = client_of(args)
    action = args.connections_command
    if action == "create":
        body: JSON = {
            "connection_id": args.connection_id,
            "kind": args.kind,
            "url": args.connection_url,
        }
        if args.auth_secret is not None:
            body["auth_secret"] = args.auth_secret
        if args.description is not None:
            body["description"] = args.description
        made = api.create_connection(**body)
        if args.json:
            _emit_json(made)
        else:
            secret = made.get("auth_secret")
            print(
                f"connection {made.get('connection_id')} created: {made.get('kind')} "
                f"{made.get('url')}"
                + (f", authorized with secret {secret}" if secret else ", no authorization")
            )
        return gates.PASSED
    if action == "list":
        return print_listing(
            args,
            "connections",
            api.list_connections().get("connections") or [],
            empty=(
                "no connections yet: assay connections create shop --kind http --url "
                "https://shop.example.com/tools creates one"
            ),
            headers=["CONNECTION", "KIND", "URL", "AUTH SECRET", "DESCRIPTION"],
            row=lambda r: [
                r.get("connection_id"),
                r.get("kind"),
                r.get("url"),
                r.get("auth_secret") or "-",
                r.get("description") or "",
            ],
        )
    # delete
    api.delete_connection(args.connection_id)
    if args.json:
        _emit_json({"connection_id": args.connection_id, "deleted": True})
    else:
        print(f"deleted connection {args.connection_id}")
    return gates.PASSED


def register_connections(sub: Any) -> None:
    """Add `connections` to `sub` (the CLI's subparsers)."""
    p = sub.add_parser("connections", help="where agents' tools run: create, list, delete")
    conns = p.add_subparsers(dest="connections_command", required=True)
    q = conns.add_parser("create", help="create a connection (its URL is checked by egress)")
    _remote(q)
    q.add_argument("connection_id", help="its id, e.g. shop; a spec's tools name it")
    # The connection's URL is positional: `--url` is the API's, as in every command.
    q.add_argument("connection_url", metavar="CONNECTION_URL", help="its http(s) URL")
    q.add_argument(
        "--kind",
        default="http",
        choices=["http", "mcp"],
        help="http (default): a call is POST CONNECTION_URL/TOOL with the arguments as JSON; "
        "mcp: an MCP server at CONNECTION_URL",
    )
    q.add_argument(
        "--auth-secret",
        default=None,
        metavar="NAME",
        help="the organization's secret sent as the Authorization header (assay secrets set); "
        "naming one needs the secrets:manage permission",
    )
    q.add_argument("--description", default=None, help="what it is, for people")
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = conns.add_parser("list", help="every connection: kind, URL, the secret it sends")
    _remote(q)
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = conns.add_parser(
        "delete", help="delete a connection (refused while an eval run or environment uses it)"
    )
    _remote(q)
    q.add_argument("connection_id")
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    p.set_defaults(func=cmd_connections)
