"""`assay import DATASET FILE`: a dataset version from a JSONL, CSV, GSM8K, promptfoo or Inspect
file (`POST /api/v1/datasets/{id}/versions`, or `POST /api/v1/datasets` with `--create`).

Which column is a case's reference (`chalicelib.domain.import_grading`): `--reference-column NAME`
when given (it wins), else the file's `reference`, else - when a `--scorer` uses a reference
(equals, contains, icontains, numeric_answer, and the judge) - the first of `answer`, `target`,
`expected` the case gives. A file in which no case can be graded by the scorers is refused, naming
its first line and what to add, unless `--allow-ungraded`.

Output: what was imported, in words (`imported 5 cases into capitals v1 (scorer equals)`), and
the lines of the cases no scorer grades with why, unless `--allow-ungraded` keeps them quietly;
`--json` prints the API's document instead.

Errors name the flag at fault and its valid choices, never the API's field: one line on stderr,
exit status 3 (an error, `assay.gate`). A file that cannot be read says so (`cannot read
my.csv: no such file`); a file the API refuses is named by its line (`400 invalid_input: line 3:
a quoted field is not closed ...`); an unknown dataset says how to create it with the import
(`--create`).
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
        help="import the file even when no case of it can be graded by the scorers, and keep "
        "cases no scorer grades without a word",
    )
    p.add_argument("--json", action="store_true", help="print the API's answer as JSON")
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
    API's field, or for an unknown dataset how `--create` makes it; None when the refusal is
    about neither (the caller prints it as it is)."""
    error = exc.error
    if exc.status == 404 and exc.message.startswith(f"dataset {_dataset_of(exc)} not found"):
        return (
            f'{exc.status} {exc.code}: {exc.message} -- add --create "NAME" to create it '
            "(assay datasets list shows the datasets there are)"
        )

    if error.get("allow") and error.get("reason"):
        where = f"line {error['line']}: " if error.get("line") is not None else ""
        return f"{where}{error['reason']}; or give --allow-ungraded to import it ungraded"
    field = exc.field or ""
    if field == "source" and error.get("line") is not None:  # the file is at fault, by line
        return f"{exc.status} {exc.code}: {exc.message}"
    for prefix, flag in _FLAGS:
        if field == prefix or field.startswith((f"{prefix}.", f"{prefix}[")):
            if flag == "--scorer":
                return f"{flag}: {exc.message} (scorers: {', '.join(scorer_names())})"
            if flag == "--format":
                return f"{flag}: {exc.message} (formats: {', '.join(FORMATS)})"
            return f"{flag}: {exc.message}"
    return None


def _dataset_of(exc: ApiError) -> str:
    """The dataset id a 404's message names (`dataset nosuch not found`), else ''."""
    words = exc.message.split()
    return words[1] if len(words) > 2 and words[0] == "dataset" else ""


def _lines(numbers: list[int], total: int) -> str:
    """`line 3`, `lines 3, 7 and 9`, `lines 3, 7, ... (and 12 more)` for the cases not graded."""
    shown = [str(n) for n in numbers]
    if not shown:
        return ""
    listed = shown[0] if len(shown) == 1 else ", ".join(shown[:-1]) + f" and {shown[-1]}"
    more = total - len(shown)
    if more > 0:
        listed = ", ".join(shown) + f" (and {more} more)"
    return f"line{'s' * (total != 1)} {listed}"


def imported_text(out: dict[str, Any], *, allow_ungraded: bool = False) -> list[str]:
    """What `assay import` prints of the API's answer (`POST /datasets`, `POST .../versions`):
    `imported 5 cases into capitals v1 (scorer equals)`, then - unless `allow_ungraded` - the
    cases no scorer grades: `1 case will not be graded: line 3 (no reference for scorer
    equals: ...); add what it lacks, or --allow-ungraded to keep such cases quietly`."""
    version = out.get("version") or {}
    count = int(version.get("case_count") or 0)
    required = list((version.get("scoring") or {}).get("required") or [])
    scorers = f"scorer{'s' * (len(required) != 1)} {', '.join(required)}" if required else ""
    head = (
        f"imported {count} case{'s' * (count != 1)} into {out.get('dataset_id')} "
        f"v{version.get('version')}" + (f" ({scorers})" if scorers else "")
    )
    ungraded = int(version.get("ungraded_cases") or 0)
    if not ungraded:
        return [head]
    if allow_ungraded:
        return [f"{head}; {ungraded} of them will not be graded (--allow-ungraded)"]
    where = _lines(list(version.get("ungraded_lines") or []), ungraded)
    reason = version.get("ungraded_reason")
    has = "case has" if ungraded == 1 else "cases have"
    what = "no reference" if str(reason or "").startswith("no reference") else "nothing to grade"
    return [
        f"{head}; {ungraded} {has} {what} and will not be graded"
        + (f": {where}" if where else "")
        + " (add what it lacks, or --allow-ungraded to keep such cases quietly)",
        *([f"  why: {reason}"] if reason else []),
    ]


def cmd_import(args: argparse.Namespace) -> int:
    """`assay import DATASET FILE`: a new dataset version from a file; with `--create NAME` the
    dataset is created with it in one request (both or neither). Prints what was imported in
    words (`imported_text`; `--json`: the API's document); exit status 0, or 3 with one line on
    stderr."""
    from assay.commands import client_of
    from chalicelib.domain.dataset_sources import detect_kind

    try:
        text = Path(args.file).read_text(encoding="utf-8")
    except FileNotFoundError:
        return _fail(f"cannot read {args.file}: no such file")
    except IsADirectoryError:
        return _fail(f"cannot read {args.file}: it is a folder, not a file")
    except PermissionError:
        return _fail(f"cannot read {args.file}: permission denied")
    except UnicodeDecodeError:
        return _fail(f"cannot read {args.file}: it is not UTF-8 text")
    except OSError as exc:
        return _fail(f"cannot read {args.file}: {exc.strerror or exc}")
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
    if args.json:
        print(json.dumps(out, indent=2))
    else:
        for line in imported_text(out, allow_ungraded=bool(args.allow_ungraded)):
            print(line)
    return 0
