"""What every API command of the CLI shares: the client from `--url`/`--token`, `guarded` (an
error is exit 3 and one line), the common flags, and the small wording helpers.

Output: what a person reads goes to stdout, progress to stderr; with `--json` stdout holds one
JSON document and nothing else (an error too: `{"error": ..., "exit_code": 3}`). Exit codes are
`assay.gate`'s: 0 passed, 1 broke, 2 inconclusive, 3 error.
"""

from __future__ import annotations

import argparse
import json
import os
import sys
from collections.abc import Callable
from pathlib import Path
from typing import Any, TextIO

from assay import gate as gates
from assay.client import ApiError, ApiUnreachable, AssayClient
from assay.hints import fix_for, unreachable_text
from assay.text import count, table

JSON = dict[str, Any]


class UsageError(Exception):
    """A command cannot go on as asked (exit 3, one line)."""


# --- plumbing --------------------------------------------------------------------------------


def client_of(args: argparse.Namespace) -> AssayClient:
    """The API client from `--url`/`--token` or `$ASSAY_URL`/`$ASSAY_TOKEN`."""
    url = getattr(args, "url", None) or os.environ.get("ASSAY_URL")
    token = getattr(args, "token", None) or os.environ.get("ASSAY_TOKEN")
    if not url or not token:
        raise UsageError(
            "set --url and --token, or ASSAY_URL and ASSAY_TOKEN (assay dev prints both)"
        )
    return AssayClient(url, token)


def _emit_json(doc: Any, out: TextIO | None = None) -> None:
    (out or sys.stdout).write(json.dumps(doc, indent=2, ensure_ascii=False) + "\n")


def error_line(exc: BaseException) -> tuple[str, str | None]:
    """What the CLI says of an error on its one line, and the fix alone (None when no rule of
    `assay.hints` knows one): an API error's own words then `-- <the command that fixes it>`;
    for no answer at all, that the API at its URL is not answering and what starts one."""
    if isinstance(exc, ApiUnreachable):
        return unreachable_text(exc.url, exc.cause), None
    if isinstance(exc, ApiError):
        fix = None if "assay " in exc.message else fix_for(exc)
        said = one_line(str(exc))
        return (f"{said} -- {fix}" if fix else said), fix
    return one_line(str(exc)), None  # a usage error or an OSError may quote a file's text


def one_line(text: str) -> str:
    """`text` with each control character (a newline, a terminal's escape) written as its escape
    (`\\n`, `\\x1b`): an API message may quote tenant data, and what the CLI prints of it must
    stay one line that cannot move the cursor or recolor the terminal."""
    return "".join(ch if ch.isprintable() else ascii(ch)[1:-1] for ch in text)


def guarded(command: Callable[[argparse.Namespace], int]) -> Callable[[argparse.Namespace], int]:
    """`command` with API errors, usage errors and timeouts turned into exit code 3 and one line
    on stderr (and a JSON error document on stdout under `--json`)."""

    def run(args: argparse.Namespace) -> int:
        try:
            return command(args)
        except BrokenPipeError:
            # stdout was closed by its reader (`assay export ... | head`): nothing more to say
            devnull = os.open(os.devnull, os.O_WRONLY)
            os.dup2(devnull, sys.stdout.fileno())
            return gates.ERROR
        except (ApiError, ApiUnreachable, UsageError, TimeoutError, OSError) as exc:
            said, fix = error_line(exc)
            print(f"assay: {said}", file=sys.stderr)
            if getattr(args, "json", False):
                error: JSON = {"message": str(exc)}
                if isinstance(exc, ApiError):
                    error |= {
                        "status": exc.status,
                        "code": exc.code,
                        "field": exc.field,
                        "request_id": exc.request_id,
                    }
                    permission = exc.error.get("permission")
                    if permission:  # what was missing: a 403 names it
                        error["permission"] = permission
                if fix:
                    error["fix"] = fix
                _emit_json({"error": error, "exit_code": gates.ERROR})
            return gates.ERROR

    run.__name__ = command.__name__
    run.__doc__ = command.__doc__
    return run


def _run_named(result: JSON) -> str:
    """`run <id>`, or that no run started (a result that did not run has none)."""
    run_id = result.get("run_id")
    return f"run {run_id}" if run_id else "no run started"


def _remote(p: argparse.ArgumentParser) -> None:
    p.add_argument("--url", default=None, help="the API's base URL (default $ASSAY_URL)")
    p.add_argument("--token", default=None, help="a bearer token (default $ASSAY_TOKEN)")


def _reports(p: argparse.ArgumentParser) -> None:
    p.add_argument("--json", action="store_true", help="write only JSON to stdout")
    p.add_argument(
        "--junit", metavar="FILE", help="write a JUnit XML report (one testcase per case)"
    )
    p.add_argument(
        "--markdown", metavar="FILE", help="write the verdict as Markdown (a PR comment)"
    )
    p.add_argument(
        "--min-pass-rate",
        type=_fraction,
        default=None,
        help="fail (exit 1) below this pass rate: 0.8 or 80%%",
    )
    p.add_argument(
        "--max-luck",
        type=_luck_bound,
        default=None,
        help="inconclusive (exit 2) when confirmed regressions are likelier luck than this: "
        "0.01 or 1%% (above 0)",
    )
    p.add_argument(
        "--timeout",
        type=float,
        default=None,
        help="stop waiting after N seconds: inconclusive (exit 2), the run goes on",
    )
    p.add_argument(
        "--cancel-on-timeout", action="store_true", help="with --timeout: cancel the run then"
    )


def _fraction(text: str) -> float:
    """A fraction flag (`--min-pass-rate`, `--max-luck`): `0.8` or `80%`, within 0..1."""
    try:
        value = float(text[:-1]) / 100 if text.endswith("%") else float(text)
    except ValueError:
        value = -1.0
    if not 0 <= value <= 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a fraction between 0 and 1 (or 0-100%)")
    return value


def _luck_bound(text: str) -> float:
    """`--max-luck`: a fraction as `_fraction` reads it, above 0. A measured chance of luck is
    never 0, so a bound of 0 would make every confirmed regression inconclusive."""
    value = _fraction(text)
    if value <= 0:
        raise argparse.ArgumentTypeError(
            f"{text!r} would call every confirmed regression luck: give a chance above 0, "
            "e.g. 1% or 0.01"
        )
    return value


def _confirmed(comparison: JSON) -> str:
    """`N confirmed regressions, M confirmed fixes; overall worse|better|not significant`."""
    regressions = count(comparison.get("confirmed_regressions"), "confirmed regression")
    fixes = count(comparison.get("confirmed_fixes"), "confirmed fix", "confirmed fixes")
    return f"{regressions}, {fixes}; overall {comparison.get('overall') or 'not significant'}"


def _tries(side: JSON) -> str:
    return count(len(side.get("attempts") or []), "try", "tries")


def positive_count(text: str) -> int:
    """An argparse type: a whole number of runs of 1 or more (`--limit`)."""
    try:
        value = int(text)
    except ValueError:
        value = 0
    if value < 1:
        raise argparse.ArgumentTypeError(f"{text!r} is not a whole number of runs of 1 or more")
    return value


def print_listing(
    args: argparse.Namespace,
    key: str,
    items: list[JSON],
    *,
    empty: str,
    headers: list[str],
    row: Callable[[JSON], list[Any]],
) -> int:
    """A `list` command's output: `{key: items}` under `--json`; else `empty` (the next step, as
    the command that makes one) when there is nothing, or one table row per item. Exit 0."""
    if args.json:
        _emit_json({key: items})
    elif not items:
        print(empty)
    else:
        print(table(headers, [row(item) for item in items]))
    return gates.PASSED


def _usd(value: Any) -> str:
    return "unlimited" if value is None else f"${float(value):,.2f}"


def load_document(path: str, *, what: str, example: str) -> JSON:
    """The one JSON (or YAML) object in the file at `path` (`-`: stdin). Raises UsageError naming
    the file for a missing file, text that is neither, or a document that is not an object (`what`
    it should hold, with `example`)."""
    try:
        text = sys.stdin.read() if path == "-" else Path(path).read_text(encoding="utf-8")
    except FileNotFoundError:
        raise UsageError(f"{path}: no such file (it should hold {what})") from None
    except (IsADirectoryError, UnicodeDecodeError) as exc:
        raise UsageError(f"{path} cannot be read as text: {exc}") from None
    try:
        doc = json.loads(text)
    except ValueError:
        try:
            import yaml
        except ImportError:
            raise UsageError(
                f"{path} is not JSON (and PyYAML is not installed to read YAML)"
            ) from None
        try:
            doc = yaml.safe_load(text)
        except yaml.YAMLError as exc:
            raise UsageError(f"{path} is neither JSON nor YAML: {exc}") from None
    if not isinstance(doc, dict):
        raise UsageError(f"{path} must hold one JSON (or YAML) object of {what}, e.g. {example}")
    return doc


SUITE_EXAMPLE = '{"dataset_id": "ds", "threshold": {"min_pass_rate": 0.9}, "guards": true}'


def _load_document(path: str) -> JSON:
    """A suite's fields from a JSON or YAML file (`load_document`)."""
    return load_document(path, what="the suite's fields", example=SUITE_EXAMPLE)
