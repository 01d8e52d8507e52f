"""The CLI's commands for what runs use: `environments create|list|delete|test-connections`,
`datasets list|show|add-criterion` and `profiles create|list|delete` (model profiles), each
through the API."""

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
from assay.cli_connections import mapping_of, mapping_text
from assay.client import AssayClient
from assay.text import count, usd

# --- environments ----------------------------------------------------------------------------


@guarded
def cmd_environments(args: argparse.Namespace) -> int:
    """`environments create|list|delete|test-connections`."""
    api = client_of(args)
    action = args.environments_command
    if action == "test-connections":
        return _set_test_connections(api, args)
    if action == "create":
        body: JSON = {}
        if args.file:
            body = load_document(
                args.file,
                what="the environment's fields",
                example='{"name": "Production", "default": true}',
            )
        body["environment_id"] = args.environment_id
        if args.name is not None:
            body["name"] = args.name
        if args.default:
            body["default"] = True
        if args.test_connection:
            body["test_connections"] = mapping_of(args.test_connection, "--test-connection")
        env = api.create_environment(**body)
        if args.json:
            _emit_json(env)
        else:
            print(
                f"environment {env.get('environment_id')} created"
                + (
                    f" ({env['name']})"
                    if env.get("name") and env.get("name") != env.get("environment_id")
                    else ""
                )
                + ("; it is the organization's default" if env.get("default") else "")
                + (
                    f"; test connections {mapping_text(env['test_connections'])}"
                    if env.get("test_connections")
                    else ""
                )
            )
        return gates.PASSED
    if action == "list":
        return print_listing(
            args,
            "environments",
            api.list_environments().get("environments") or [],
            empty="no environments yet: assay environments create production --default creates one",
            headers=["ENVIRONMENT", "NAME", "DEFAULT", "SERVING", "CREATED"],
            row=lambda e: [
                e.get("environment_id"),
                e.get("name"),
                bool(e.get("default")),
                ", ".join(f"{a} v{v}" for a, v in sorted((e.get("serving") or {}).items())),
                e.get("created_at"),
            ],
        )
    # delete
    if not args.yes:
        raise UsageError(
            f"not deleted: pass --yes to delete environment {args.environment_id} (what it "
            "serves is forgotten; suites that guard it pause)"
        )
    gone = api.delete_environment(args.environment_id)
    if args.json:
        _emit_json(gone if isinstance(gone, dict) else {"environment_id": args.environment_id})
    else:
        print(f"deleted environment {args.environment_id}")
    return gates.PASSED


def _set_test_connections(api: AssayClient, args: argparse.Namespace) -> int:
    """`environments test-connections ENV --map ID=TEST_ID ... | --clear`."""
    if args.clear and args.map:
        raise UsageError("give --map pairs or --clear, not both")
    if not args.clear and not args.map:
        raise UsageError(
            "give the whole map as --map CONNECTION=TEST_CONNECTION (once per connection), "
            "or --clear to remove every test connection"
        )
    env = api.set_test_connections(args.environment_id, mapping_of(args.map, "--map"))
    if args.json:
        _emit_json(env)
    else:
        print(
            f"environment {env.get('environment_id')}: test connections "
            f"{mapping_text(env.get('test_connections'))}"
        )
    return gates.PASSED


# --- datasets --------------------------------------------------------------------------------


def scorers_text(scoring: Any) -> str:
    """A dataset version's `scoring` in words: `exact, regex (regex: {"pattern": ...})` or
    `none`."""
    if not isinstance(scoring, dict):
        return "none"
    required = [str(s) for s in scoring.get("required") or []]
    settings = scoring.get("settings") or {}
    parts = []
    for name in required:
        setting = settings.get(name) if isinstance(settings, dict) else None
        parts.append(f"{name} {setting}" if setting else name)
    return ", ".join(parts) or "none"


@guarded
def cmd_datasets(args: argparse.Namespace) -> int:
    """`datasets list|show|add-criterion`."""
    api = client_of(args)
    if args.datasets_command == "add-criterion":
        return _add_criterion(api, args)
    if args.datasets_command == "list":
        return print_listing(
            args,
            "datasets",
            api.list_datasets().get("datasets") or [],
            empty="no datasets yet: assay import DATASET_ID FILE --create NAME adds one",
            headers=["DATASET", "NAME", "LATEST", "CREATED"],
            row=lambda d: [
                d.get("dataset_id"),
                d.get("name"),
                f"v{d['latest_version']}" if d.get("latest_version") else "none yet",
                d.get("created_at"),
            ],
        )
    dataset = api.get_dataset(args.dataset_id)
    if args.json:
        _emit_json(dataset)
        return gates.PASSED
    latest = dataset.get("latest_version")
    print(f"dataset {dataset.get('dataset_id')}: {dataset.get('name')}")
    if not latest:
        print(f"  no versions yet: assay import {args.dataset_id} FILE adds the first")
        return gates.PASSED
    version: JSON = dataset.get("version") or {}
    print(f"  versions: v1 to v{latest}" if int(latest) > 1 else "  versions: v1")
    ungraded = int(version.get("ungraded_cases") or 0)
    print(
        f"  v{latest}: {count(version.get('case_count'), 'case')}"
        + (f" ({ungraded} without a way to grade them)" if ungraded else "")
        + f", added {version.get('created_at')} by {version.get('created_by')}"
    )
    print(f"  scorers: {scorers_text(version.get('scoring'))}")
    shown = list(range(int(latest) - 1, max(0, int(latest) - 1 - EARLIER_COUNTED), -1))
    for n in shown:
        print(f"  v{n}: {count(count_cases(api, args.dataset_id, n), 'case')}")
    if shown and shown[-1] > 1:
        print(f"  (v1 to v{shown[-1] - 1} not counted)")
    return gates.PASSED


def _add_criterion(api: AssayClient, args: argparse.Namespace) -> int:
    """`datasets add-criterion DATASET --note TEXT --tag TAG... [--criterion-id ID]`: publish the
    dataset's judge's next version with the note as a criterion for cases tagged TAG."""
    if not (args.note or "").strip():
        raise UsageError(
            "--note is empty: write what the judge should check, e.g. "
            "--note 'The reply names the refund window.'"
        )
    if not args.tag:
        raise UsageError(
            "no --tag: name the case tags the criterion grades with --tag TAG (repeatable)"
        )
    body: JSON = {}
    if args.criterion_id:
        body["criterion_id"] = args.criterion_id
    added = api.add_criterion(args.dataset_id, note=args.note, tags=list(args.tag), **body)
    if args.json:
        _emit_json(added)
    else:
        print(str(added.get("message") or ""))
    return gates.PASSED


EARLIER_COUNTED = 5
"""How many versions before the latest `datasets show` counts the cases of."""


def count_cases(api: AssayClient, dataset_id: str, version: int) -> int:
    """How many cases a dataset version holds, counted page by page (500 a page): the API gives
    the count of the latest version only."""
    total, cursor = 0, None
    while True:
        page = api.dataset_cases(dataset_id, version, limit=500, cursor=cursor)
        total += len(page.get("cases") or [])
        cursor = page.get("next_cursor")
        if not cursor:
            return total


# --- model profiles --------------------------------------------------------------------------


def price_text(price: Any) -> str:
    """A profile's `price` in words: `$2.50 in / $10.00 out per 1M tokens`, or `-`."""
    if not isinstance(price, dict):
        return "-"
    return (
        f"{usd(price.get('input_per_mtok_usd'))} in / {usd(price.get('output_per_mtok_usd'))} "
        "out per 1M tokens"
    )


@guarded
def cmd_profiles(args: argparse.Namespace) -> int:
    """`profiles create|list|delete`: model profiles (never changed in place: to point one
    elsewhere, delete it and create it again). A delete needs `--yes` (a `UsageError` without)."""
    api = client_of(args)
    if args.profiles_command == "delete":
        if not args.yes:
            raise UsageError(
                f"not deleted: pass --yes to delete model profile {args.profile_id} (assay "
                f"profiles create {args.profile_id} FILE makes it again)"
            )
        gone = api.delete_model_profile(args.profile_id)
        if args.json:
            _emit_json(gone if isinstance(gone, dict) else {"model_profile_id": args.profile_id})
        else:
            print(
                f"deleted model profile {args.profile_id} (assay profiles create "
                f"{args.profile_id} FILE makes it again)"
            )
        return gates.PASSED
    if args.profiles_command == "create":
        body = load_document(
            args.file,
            what="the model profile's fields",
            example='{"model": "gpt-4o-mini", "temperature": 0, "settings": {"base_url": "..."}}',
        )
        body["model_profile_id"] = args.profile_id
        made = api.create_model_profile(**body)
        if args.json:
            _emit_json(made)
        else:
            print(
                f"model profile {made.get('model_profile_id')} created: model "
                f"{made.get('model')}, price {price_text(made.get('price'))}"
            )
        return gates.PASSED
    return print_listing(
        args,
        "model_profiles",
        api.list_model_profiles().get("model_profiles") or [],
        empty="no model profiles yet: assay profiles create PROFILE_ID FILE creates one",
        headers=["PROFILE", "NAME", "MODEL", "TEMPERATURE", "PRICE"],
        row=lambda p: [
            p.get("model_profile_id"),
            p.get("name"),
            p.get("model"),
            p.get("temperature"),
            price_text(p.get("price")),
        ],
    )


# --- the parsers -----------------------------------------------------------------------------


def register_resources(sub: Any) -> None:
    """Add `environments`, `datasets` and `profiles` to `sub` (the CLI's subparsers)."""
    p = sub.add_parser("environments", help="where versions are served: create, list, delete")
    envs = p.add_subparsers(dest="environments_command", required=True)
    q = envs.add_parser("create", help="create an environment (--default: the organization's)")
    _remote(q)
    q.add_argument("environment_id", help="its id, e.g. production")
    q.add_argument("--default", action="store_true", help="make it the organization's default")
    q.add_argument("--name", default=None, help="a name for people")
    q.add_argument(
        "--test-connection",
        action="append",
        metavar="ID=TEST_ID",
        help="during its eval runs, tools of connection ID run on TEST_ID instead (repeatable)",
    )
    q.add_argument(
        "--file", default=None, help="its fields as JSON or YAML (flags override the file)"
    )
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = envs.add_parser("list", help="every environment, which is the default, what each serves")
    _remote(q)
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = envs.add_parser("delete", help="delete an environment (needs --yes)")
    _remote(q)
    q.add_argument("environment_id")
    q.add_argument("--yes", action="store_true", help="yes, delete it")
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = envs.add_parser(
        "test-connections",
        help="replace an environment's test connections: where its eval runs' tools run",
    )
    _remote(q)
    q.add_argument("environment_id")
    q.add_argument(
        "--map",
        action="append",
        metavar="ID=TEST_ID",
        help="tools of connection ID run on TEST_ID in this environment's eval runs (repeatable; "
        "the pairs given are the whole map)",
    )
    q.add_argument("--clear", action="store_true", help="remove every test connection")
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    p.set_defaults(func=cmd_environments)

    p = sub.add_parser("datasets", help="the organization's datasets: list, show, add-criterion")
    datasets = p.add_subparsers(dest="datasets_command", required=True)
    q = datasets.add_parser("list", help="every dataset and its latest version")
    _remote(q)
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = datasets.add_parser("show", help="one dataset: its versions, case count, scorers")
    _remote(q)
    q.add_argument("dataset_id")
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = datasets.add_parser(
        "add-criterion",
        help="add a note as a criterion of the dataset's judge for cases with a tag (publishes "
        "the judge's next version; a pinned dataset stays pinned)",
    )
    _remote(q)
    q.add_argument("dataset_id")
    q.add_argument("--note", default="", help="what the judge should check, in a sentence")
    q.add_argument(
        "--tag",
        action="append",
        default=[],
        help="a case tag the criterion grades (repeatable; a tag the dataset's cases carry)",
    )
    q.add_argument("--criterion-id", default=None, help="its id (default: from the note's hash)")
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    p.set_defaults(func=cmd_datasets)

    p = sub.add_parser("profiles", help="model profiles: create, list, delete")
    profiles = p.add_subparsers(dest="profiles_command", required=True)
    q = profiles.add_parser(
        "create", help="create a model profile from a JSON or YAML file of its fields"
    )
    _remote(q)
    q.add_argument("profile_id", help="its id")
    q.add_argument(
        "file", help="model, and optionally name, temperature, price, settings (JSON or YAML)"
    )
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = profiles.add_parser("list", help="every model profile: model, temperature, price")
    _remote(q)
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    q = profiles.add_parser(
        "delete",
        help="delete a model profile (needs --yes; refused while a queued or running eval run "
        "uses it)",
    )
    _remote(q)
    q.add_argument("profile_id")
    q.add_argument("--yes", action="store_true", help="yes, delete it")
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")
    p.set_defaults(func=cmd_profiles)
