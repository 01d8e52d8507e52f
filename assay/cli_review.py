"""The CLI's commands of the review queue, each through the API: `review list|show|decide|undo|
send|criterion`. A dataset's queue holds the answers a person should look at (a run's confirmed
regressions, answers its judge could not grade, failed answers sent by hand); a person's verdict
on one stands for the scorers' and moves every number resting on it, and Undo puts them back.

Text by default (`assay.review_text` words it), one JSON document with `--json` (the API's answer
as it is); an API error is exit 3 and one line (`cli_common.guarded`)."""

from __future__ import annotations

import argparse
from typing import Any

from assay import gate as gates
from assay.cli_common import JSON, UsageError, _emit_json, _remote, client_of, guarded
from assay.client import AssayClient
from assay.review_text import (
    answered_by,
    audit_head,
    changes_lines,
    decided_lines,
    expected_lines,
    flat,
    item_row,
    queue_header,
    reason_words,
    safe,
    score_line,
    send_lines,
    text_lines,
    verdict_words,
)
from assay.text import case_label, table

PAGE_MOST = 200
"""The most items one page of `GET /api/v1/datasets/{id}/review` holds."""
PAGE_DEFAULT = 50
"""Items `review list` shows without `--limit` or `--all`: the API's own page."""
HEADERS = ["ITEM", "CASE", "ANSWERED BY", "WHY", "STATE"]


def _page_size(text: str) -> int:
    try:
        value = int(text)
    except ValueError:
        value = 0
    if not 1 <= value <= PAGE_MOST:
        raise argparse.ArgumentTypeError(
            f"{text!r} is not a whole number of items from 1 to {PAGE_MOST}"
        )
    return value


# --- list ----------------------------------------------------------------------------------------


def list_items(api: AssayClient, dataset_id: str, args: argparse.Namespace) -> JSON:
    """The listing `review list` shows: the first page of `--limit` items (default 50), or with
    `--all` every page (`next_cursor` followed to the end, 200 a page unless `--limit` says
    less). `{items, next_cursor, waiting}` as the API gives it; `next_cursor` None after `--all`.
    Raises ApiError for a dataset the caller may not read or a filter the API refuses."""
    query: JSON = {"state": args.state, "agent_id": args.agent, "tag": args.tag}
    size = args.limit or (PAGE_MOST if args.all else PAGE_DEFAULT)
    page = api.review_items(dataset_id, limit=size, **query)
    items = list(page.get("items") or [])
    while args.all and page.get("next_cursor"):
        page = api.review_items(dataset_id, limit=size, cursor=page["next_cursor"], **query)
        items += page.get("items") or []
    return {
        "items": items,
        "next_cursor": None if args.all else page.get("next_cursor"),
        "waiting": page.get("waiting"),
    }


def _filters_said(args: argparse.Namespace) -> str:
    said = [
        f"{flag} {value}"
        for flag, value in (("--state", args.state), ("--agent", args.agent), ("--tag", args.tag))
        if value
    ]
    return f" ({', '.join(said)})" if said else ""


def _list(api: AssayClient, args: argparse.Namespace) -> int:
    listing = list_items(api, args.dataset_id, args)
    if args.json:
        _emit_json(listing)
        return gates.PASSED
    print(queue_header(args.dataset_id, listing))
    items = listing["items"]
    if not items:
        print(
            f"no items{_filters_said(args)}: assay review send RUN sends a run's failed answers "
            "to review"
        )
        return gates.PASSED
    print(table(HEADERS, [item_row(i) for i in items]))
    if listing.get("next_cursor"):
        print(f"(the first {len(items)}; --all lists every item)")
    return gates.PASSED


# --- show ----------------------------------------------------------------------------------------


def print_item(item: JSON) -> None:
    """An item with its audit, as `review show` prints it: where it came from and where it
    stands, the question, the answer, what the case expects, each scorer's reason, its note, and
    each audit entry with what it changed."""
    case = safe(case_label(item.get("case_id"), None))
    print(
        f"review item {item.get('item_id')} of dataset {item.get('dataset_id')} "
        f"v{item.get('dataset_version')}: case {case}, answered by {answered_by(item)} in run "
        f"{item.get('run_id')} ({reason_words(item)}); {verdict_words(item)}"
    )
    if item.get("tags"):
        print(f"tags: {', '.join(safe(t) for t in item['tags'])}")
    for title, body in (("question", item.get("question")), ("answer", item.get("answer"))):
        print(f"{title}:")
        for line in text_lines(body):
            print(f"  {line}")
    if item.get("answer_truncated"):
        print("  (the answer is cut: the queue keeps its start)")
    print("expects:")
    for line in expected_lines(item.get("expected")):
        print(f"  {line}")
    print(f"scorers ({item.get('scored_state') or 'not graded'}):")
    scores = [s for s in item.get("scores") or [] if isinstance(s, dict)]
    for line in [score_line(s) for s in scores] or ["none graded it"]:
        print(f"  {line}")
    if item.get("note"):
        print(f"note: {flat(item['note'])}")
    audit = [a for a in item.get("audit") or [] if isinstance(a, dict)]
    print("audit:" if audit else "audit: nobody has decided it yet")
    for entry in audit:
        print(f"  {audit_head(entry)}")
        for line in changes_lines(entry):
            print(f"    {line}")


def _show(api: AssayClient, args: argparse.Namespace) -> int:
    item = api.review_item(args.dataset_id, args.item_id)
    if args.json:
        _emit_json(item)
    else:
        print_item(item)
    return gates.PASSED


# --- decide, undo, send, criterion ---------------------------------------------------------------


def _decide(api: AssayClient, args: argparse.Namespace) -> int:
    note = args.note.strip() if args.note is not None else None
    if args.note is not None and not note:
        raise UsageError(
            "--note is empty: say why in a sentence, e.g. --note '7 is right for this phrasing', "
            "or leave --note out"
        )
    decided = api.decide_review(args.dataset_id, args.item_id, args.verdict, note)
    return _print_decided(decided, args, action="decide")


def _undo(api: AssayClient, args: argparse.Namespace) -> int:
    return _print_decided(api.undo_review(args.dataset_id, args.item_id), args, action="undo")


def _print_decided(decided: JSON, args: argparse.Namespace, *, action: str) -> int:
    if args.json:
        _emit_json(decided)
    else:
        for line in decided_lines(decided, action=action):
            print(line)
    return gates.PASSED


def _send(api: AssayClient, args: argparse.Namespace) -> int:
    sent = api.send_failed_to_review(args.run_id, side=args.side)
    if args.json:
        _emit_json(sent)
    else:
        for line in send_lines(args.run_id, args.side, sent):
            print(line)
    return gates.PASSED


def _criterion(api: AssayClient, args: argparse.Namespace) -> int:
    tags = [t.strip() for t in args.tag if t.strip()]
    if not tags:
        raise UsageError(
            "no --tag: name the case tags the note grades as a criterion with --tag TAG "
            "(repeatable; a tag the dataset's cases carry)"
        )
    added = api.review_note_as_criterion(
        args.dataset_id, args.item_id, tags, criterion_id=args.criterion_id
    )
    if args.json:
        _emit_json(added)
    else:
        print(safe(added.get("message") or ""))
    return gates.PASSED


_ACTIONS = {
    "list": _list,
    "show": _show,
    "decide": _decide,
    "undo": _undo,
    "send": _send,
    "criterion": _criterion,
}


@guarded
def cmd_review(args: argparse.Namespace) -> int:
    """`review list|show|decide|undo|send|criterion`."""
    return _ACTIONS[args.review_command](client_of(args), args)


# --- the parser ----------------------------------------------------------------------------------

DESCRIPTION = (
    "A dataset's review queue holds the answers a person should look at: the confirmed "
    "regressions of a run with a baseline, answers its judge could not grade, and failed answers "
    "sent by hand (assay review send). A person's verdict (pass or fail) on an answer stands for "
    "the scorers' over every try of its case: the runs whose numbers rest on it, and their suite "
    "results, change before the command answers, and the audit keeps who decided, when, and each "
    "number before and after. Undo puts every one back as the scorers left it. Deciding, undoing "
    "and sending need datasets:edit on the dataset; listing and showing need datasets:view."
)

EPILOG = """examples:
  assay review list support                          # the queue, newest answer first
  assay review list support --state waiting --agent bot --all
  assay review show support ri1733446800000a1b2c3d4e5f6a7b8
  assay review decide support ri1733446800000a1b2c3d4e5f6a7b8 pass --note '7 is right here'
  assay review undo support ri1733446800000a1b2c3d4e5f6a7b8
  assay review send run_123 --side candidate         # a run's failed answers, by hand
  assay review criterion support ri1733446800000a1b2c3d4e5f6a7b8 --tag refunds"""


def _item_args(q: argparse.ArgumentParser) -> None:
    q.add_argument("dataset_id", metavar="DATASET", help="the dataset whose queue holds the item")
    q.add_argument(
        "item_id", metavar="ITEM", help="the item's id, as assay review list shows it (ri...)"
    )


def _json_flag(q: argparse.ArgumentParser) -> None:
    q.add_argument("--json", action="store_true", help="write only JSON to stdout")


def register_review(sub: Any) -> None:
    """Add `review list|show|decide|undo|send|criterion` to `sub` (the CLI's subparsers)."""
    p = sub.add_parser(
        "review",
        help="a dataset's review queue: list, show, decide, undo, send, criterion",
        description=DESCRIPTION,
        epilog=EPILOG,
        formatter_class=argparse.RawDescriptionHelpFormatter,
    )
    review = p.add_subparsers(dest="review_command", required=True)

    q = review.add_parser(
        "list",
        help="the items of a dataset's queue, newest answer first: case, who answered, why it "
        "was sent, where it stands",
    )
    _remote(q)
    q.add_argument("dataset_id", metavar="DATASET", help="the dataset whose queue to list")
    q.add_argument(
        "--state", choices=["waiting", "decided", "replaced"], default=None, help="only items so"
    )
    q.add_argument("--agent", metavar="AGENT_ID", default=None, help="only this agent's answers")
    q.add_argument("--tag", default=None, help="only answers to cases carrying this tag")
    q.add_argument(
        "--limit",
        type=_page_size,
        default=None,
        metavar="N",
        help=f"at most N items (1-{PAGE_MOST}, default {PAGE_DEFAULT}); with --all, N a page",
    )
    q.add_argument("--all", action="store_true", help="every item, page after page")
    _json_flag(q)

    q = review.add_parser(
        "show",
        help="one item: the question, the answer, what the case expects, each scorer's reason, "
        "and its audit (who decided, when, what each run's numbers were before and after)",
    )
    _remote(q)
    _item_args(q)
    _json_flag(q)

    q = review.add_parser(
        "decide",
        help="a person's verdict on a waiting item; prints what it changed (each run's passed "
        "count and verdict, each suite result, before -> after)",
    )
    _remote(q)
    _item_args(q)
    q.add_argument(
        "verdict",
        choices=["pass", "fail"],
        help="pass or fail: it stands for the scorers' over every try of the case",
    )
    q.add_argument(
        "--note",
        default=None,
        help="why, in a sentence (at most 4,000 characters; kept redacted; assay review "
        "criterion can make it a judge criterion)",
    )
    _json_flag(q)

    q = review.add_parser(
        "undo",
        help="take a decision back: every number that rested on it is as the scorers left it",
    )
    _remote(q)
    _item_args(q)
    _json_flag(q)

    q = review.add_parser(
        "send",
        help="Send failed to review: one side's failed first answers of an ended run that are "
        "not in the queue yet; prints how many went and why the others did not",
    )
    _remote(q)
    q.add_argument("run_id", metavar="RUN", help="an ended eval run")
    q.add_argument(
        "--side",
        choices=["candidate", "baseline"],
        default="candidate",
        help="whose failed answers: the candidate's or the baseline's (default candidate)",
    )
    _json_flag(q)

    q = review.add_parser(
        "criterion",
        help="the decision's note becomes a criterion of the dataset's judge for cases with a "
        "tag (publishes the judge's next version; a pinned dataset stays pinned)",
    )
    _remote(q)
    _item_args(q)
    q.add_argument(
        "--tag",
        action="append",
        default=[],
        help="a case tag the criterion grades (repeatable; a tag the dataset's cases carry)",
    )
    q.add_argument("--criterion-id", default=None, help="its id (default: from the note's hash)")
    _json_flag(q)
    p.set_defaults(func=cmd_review)
