"""`assay import DATASET FILE`: a dataset version from a JSONL, CSV, GSM8K, promptfoo or Inspect
file (`POST /api/v1/datasets/{id}/versions`, or `POST /api/v1/datasets` with `--create`).

Which column is a case's reference (`chalicelib.domain.import_grading`): `--reference-column NAME`
when given (it wins), else the file's `reference`, else - when a `--scorer` uses a reference
(equals, contains, icontains, numeric_answer, and the judge) - the first of `answer`, `target`,
`expected` the case gives. A file in which no case can be graded by the scorers is refused, naming
its first line and what to add, unless `--allow-ungraded`.

Errors name the flag at fault and its valid choices, never the API's field: one line on stderr,
exit status 3 (an error, `assay.gate`).
"""

from __future__ import annotations

import argparse
import json
import sys
from pathlib import Path
from typing import Any

from assay.cli_common import one_line
from assay.client import ApiError

FORMATS = ("jsonl", "csv", "gsm8k", "promptfoo", "inspect")
"""The values of `--format` (the API's `source.format`)."""

OWN_SCORING = ("promptfoo", "inspect")
"""Formats whose files say how they are graded: `--scorer` may be left out."""


def scorer_names() -> list[str]:
    """Every scorer `--scorer` takes, sorted."""
    from chalicelib.domain.scorers import SCORERS

    return sorted(str(name) for name in SCORERS)


def add_arguments(p: argparse.ArgumentParser) -> None:
    """`assay import`'s arguments (besides `--url`/`--token`)."""
    names = scorer_names()
    p.add_argument("dataset")
    p.add_argument("file")
    p.add_argument(
        "--format",
        choices=FORMATS,
        help="default: told from the file (.yaml is promptfoo; Inspect's target/id/choices)",
    )
    p.add_argument(
        "--scorer",
        action="append",
        choices=names,
        metavar="SCORER",
        help="a scorer every case must pass (repeatable), one of: "
        f"{', '.join(names)}; required for jsonl, csv and gsm8k (a promptfoo or Inspect file's "
        "own assertions add theirs)",
    )
    p.add_argument("--judge", metavar="JUDGE_ID", help="grade with this judge (llm-rubric)")
    p.add_argument(
        "--reference-column",
        metavar="COLUMN",
        help="the jsonl/csv column holding each case's reference (default: reference, else "
        "answer, target or expected when a scorer uses a reference)",
    )
    p.add_argument(
        "--allow-ungraded",
        action="store_true",
        help="import the file even when no case of it can be graded by the scorers",
    )
    p.add_argument(
        "--create", metavar="NAME", help="create the dataset with this version (both or neither)"
    )
    p.add_argument("--limit", type=int)


def _fail(message: str) -> int:
    """Print `message` on one line (`assay.cli_common.one_line`: a file's column names and cells
    may hold a terminal's escapes) and return exit code 3."""
    print(f"assay import: {one_line(message)}", file=sys.stderr)
    return 3  # an error (`assay.gate`)


def body_of(args: argparse.Namespace, fmt: str, text: str) -> dict[str, Any]:
    """The request body of an import: `{"source": {...}, "scoring"?: {...}}`."""
    source: dict[str, Any] = {"format": fmt, "content": text}
    if args.limit:
        source["limit"] = args.limit
    if args.reference_column:
        source["reference_column"] = args.reference_column
    if args.allow_ungraded:
        source["allow_ungraded"] = True
    body: dict[str, Any] = {"source": source}
    if args.scorer or args.judge:
        required = list(dict.fromkeys(args.scorer or []))
        scoring: dict[str, Any] = {"required": required}
        if args.judge:
            if "judge" not in required:
                required.append("judge")
            scoring["settings"] = {"judge": {"judge_id": args.judge}}
        body["scoring"] = scoring
    return body


_FLAGS = (
    ("scoring.settings.judge", "--judge"),
    ("scoring", "--scorer"),
    ("source.format", "--format"),
    ("source.limit", "--limit"),
    ("source.reference_column", "--reference-column"),
    ("source.allow_ungraded", "--allow-ungraded"),
)
"""The API's fields of an import -> the flag that sets each (the first prefix that matches)."""


def explain(exc: ApiError) -> str | None:
    """The one line `assay import` prints for an API refusal, naming the flag rather than the
    API's field; None when the refusal is about neither (the caller prints it as it is)."""
    error = exc.error
    if error.get("allow") and error.get("reason"):
        where = f"line {error['line']}: " if error.get("line") is not None else ""
        return f"{where}{error['reason']}; or give --allow-ungraded to import it ungraded"
    field = exc.field or ""
    for prefix, flag in _FLAGS:
        if field == prefix or field.startswith((f"{prefix}.", f"{prefix}[")):
            if flag == "--scorer":
                return f"{flag}: {exc.message} (scorers: {', '.join(scorer_names())})"
            if flag == "--format":
                return f"{flag}: {exc.message} (formats: {', '.join(FORMATS)})"
            return f"{flag}: {exc.message}"
    return None


def cmd_import(args: argparse.Namespace) -> int:
    """`assay import DATASET FILE`: a new dataset version from a file; with `--create NAME` the
    dataset is created with it in one request (both or neither). Prints the dataset as the API
    returns it; exit status 0, or 3 with one line on stderr."""
    from assay.commands import client_of
    from chalicelib.domain.dataset_sources import detect_kind

    text = Path(args.file).read_text(encoding="utf-8")
    fmt = args.format or detect_kind(Path(args.file).name, text)
    if fmt is None:
        return _fail(
            f"cannot tell the format of {args.file}: give --format, one of: {', '.join(FORMATS)}"
        )
    if not args.scorer and not args.judge and str(fmt) not in OWN_SCORING:
        return _fail(
            f"a {fmt} file needs --scorer (repeatable): the scorer(s) every case must pass, one "
            f"of: {', '.join(scorer_names())}"
        )
    body = body_of(args, str(fmt), text)
    api = client_of(args)
    try:
        if args.create:
            out = api.request(
                "POST",
                "/api/v1/datasets",
                json={"name": args.create, "dataset_id": args.dataset, **body},
            )
        else:
            out = api.request("POST", f"/api/v1/datasets/{args.dataset}/versions", json=body)
    except ApiError as exc:
        line = explain(exc)
        if line is None:
            raise
        return _fail(line)
    print(json.dumps(out, indent=2))
    return 0
