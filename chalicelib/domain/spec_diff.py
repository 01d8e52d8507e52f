"""What changed between the two specs a run tested (docs/guides/console.md: a run's next steps
"see what changed between the two versions ... against the spec the run tested rather than the
draft as it is now"). Pure: two JSON values in, the changes out.

A change names its place in the spec as a path (`prompt`, `options.temperature`, `tools[2].name`;
a key that is not a plain name is quoted: `headers["x id"]`), what happened there (added, removed,
changed), the value before and after, and, for text of several lines on both sides, the changed
lines as a unified diff.

A tenant writes the specs, so what a diff answers is bounded whatever they hold: at most
`MAX_CHANGES` changes holding `MAX_DIFF_CHARS` characters (the rest counted), a value's JSON
past `MAX_VALUE_CHARS` cut to that many characters, a key in a path past `MAX_KEY_CHARS`, a line
past `MAX_LINE_CHARS`, and a line diff only for texts of at most `MAX_TEXT_LINES` lines (its cost
grows with the square of their length).
"""

from __future__ import annotations

import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

CONTEXT_LINES = 2
"""Unchanged lines kept around each changed one in a text's diff."""
MAX_CHANGES = 500
"""Changes one diff lists; past them it only counts (`SpecDiff.left_out`)."""
MAX_VALUE_CHARS = 4_000
"""A value whose JSON is longer is shown as its first this many characters, then "…"."""
MAX_KEY_CHARS = 100
"""A key in a path longer than this is cut, then "…"."""
MAX_TEXT_LINES = 2_000
"""Texts longer than this (either side) get no line diff: 0.16 s of difflib at 2,000 lines of the
worst kind measured, 1.5 s at 5,000."""
MAX_DIFF_LINES = 1_000
"""Lines of one text's diff kept; past them the diff ends on "…"."""
MAX_LINE_CHARS = 500
"""A line of a text's diff longer than this is cut, then "…"."""
MAX_DIFF_CHARS = 1_000_000
"""Once the changes listed hold this many characters (paths, values, lines), the rest are only
counted: an answer stays near a megabyte, under API Gateway's and Lambda's bounds."""

_PLAIN_KEY = re.compile(r"^[A-Za-z_][A-Za-z0-9_-]*$")


class Change(StrEnum):
    """What happened at one place of the spec."""

    ADDED = "added"
    REMOVED = "removed"
    CHANGED = "changed"


@dataclass(frozen=True)
class SpecChange:
    """One place where the candidate's spec differs from the baseline's."""

    path: str
    change: Change
    before: Any = None
    """The baseline's value (None when added)."""
    after: Any = None
    """The candidate's value (None when removed)."""
    lines: tuple[str, ...] = ()
    """For text of several lines on both sides: the changed lines, each starting with "-", "+"
    or " " (context), hunks headed by "@@ ... @@"; empty otherwise."""
    cut: bool = False
    """Whether `before` or `after` is shown cut (a string of its JSON's first characters) or
    `lines` stops short."""

    def as_json(self) -> dict[str, Any]:
        """`{path, change, before, after, lines, cut}`."""
        return {
            "path": self.path,
            "change": self.change.value,
            "before": self.before,
            "after": self.after,
            "lines": list(self.lines),
            "cut": self.cut,
        }


@dataclass(frozen=True)
class SpecDiff:
    """The changes from one spec to another, at most `MAX_CHANGES` of them."""

    changes: list[SpecChange]
    left_out: int = 0
    """Changes past `MAX_CHANGES`, counted but not listed."""


def _shown(value: Any) -> tuple[Any, bool]:
    """The value as a diff shows it, and whether it was cut."""
    text = json.dumps(value, ensure_ascii=False)
    if len(text) <= MAX_VALUE_CHARS:
        return value, False
    return text[:MAX_VALUE_CHARS] + "…", True


def _change(
    path: str, change: Change, before: Any = None, after: Any = None, lines: tuple[str, ...] = ()
) -> SpecChange:
    before, cut_before = _shown(before)
    after, cut_after = _shown(after)
    cut_lines = len(lines) > MAX_DIFF_LINES or any(len(x) > MAX_LINE_CHARS for x in lines)
    if cut_lines:
        lines = tuple(
            x if len(x) <= MAX_LINE_CHARS else x[:MAX_LINE_CHARS] + "…"
            for x in lines[:MAX_DIFF_LINES]
        ) + (("…",) if len(lines) > MAX_DIFF_LINES else ())
    return SpecChange(path, change, before, after, lines, cut_before or cut_after or cut_lines)


def _key_path(parent: str, key: str) -> str:
    if len(key) > MAX_KEY_CHARS:
        key = key[:MAX_KEY_CHARS] + "…"
    if _PLAIN_KEY.match(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key, ensure_ascii=False)}]"


def text_lines(before: str, after: str) -> tuple[str, ...]:
    """The unified diff of two texts (no file header), `CONTEXT_LINES` lines of context."""
    import difflib  # noqa: PLC0415 - 1.4 ms that only a diff of texts pays, not every cold start

    diff = difflib.unified_diff(
        before.splitlines(), after.splitlines(), lineterm="", n=CONTEXT_LINES
    )
    return tuple(line for line in diff if not line.startswith(("---", "+++")))


class _Found:
    """The changes a walk found: the first `MAX_CHANGES`, and how many more."""

    def __init__(self) -> None:
        self.changes: list[SpecChange] = []
        self.left_out = 0
        self.chars = 0

    @property
    def full(self) -> bool:
        return len(self.changes) >= MAX_CHANGES or self.chars >= MAX_DIFF_CHARS

    def add(self, *change: Any, **fields: Any) -> None:
        if self.full:
            self.left_out += 1
            return
        made = _change(*change, **fields)
        self.changes.append(made)
        self.chars += len(json.dumps(made.as_json(), ensure_ascii=False))


def _walk(path: str, before: Any, after: Any, out: _Found) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            here = _key_path(path, str(key))
            if key not in after:
                out.add(here, Change.REMOVED, before=before[key])
            elif key not in before:
                out.add(here, Change.ADDED, after=after[key])
            else:
                _walk(here, before[key], after[key], out)
        return
    if isinstance(before, list) and isinstance(after, list):
        for i in range(max(len(before), len(after))):
            here = f"{path}[{i}]"
            if i >= len(after):
                out.add(here, Change.REMOVED, before=before[i])
            elif i >= len(before):
                out.add(here, Change.ADDED, after=after[i])
            else:
                _walk(here, before[i], after[i], out)
        return
    if before == after and type(before) is type(after):
        return
    lines: tuple[str, ...] = ()
    if (
        isinstance(before, str)
        and isinstance(after, str)
        and ("\n" in before or "\n" in after)
        and not out.full
        and max(before.count("\n"), after.count("\n")) < MAX_TEXT_LINES
    ):
        lines = text_lines(before, after)
    out.add(path or "(spec)", Change.CHANGED, before, after, lines)


def spec_changes(before: Any, after: Any) -> SpecDiff:
    """Every place where `after` (the candidate's spec) differs from `before` (the baseline's),
    in key order, depth first: a map is compared key by key, a list item by item (an item past
    the shorter list's end is added or removed), anything else by value (`1` and `1.0`, or `1`
    and `true`, differ). Equal specs give no changes. Bounded as the module says."""
    out = _Found()
    _walk("", before, after, out)
    return SpecDiff(out.changes, out.left_out)
