"""The CLI's access commands (issue 14, docs/reference/access.md): `whoami`, `members`, `keys`."""

from __future__ import annotations

import argparse
import sys
from typing import Any

from assay import gate as gates
from assay.cli_common import (
    JSON,
    _emit_json,
    _remote,
    client_of,
    guarded,
)


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


def register_access(sub: Any) -> None:
    """Add `whoami`, `members` and `keys`."""
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
