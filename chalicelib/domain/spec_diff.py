"""What changed between the two specs a run tested (seed 004 "In the console": a run's next steps
"see what changed between the two versions ... against the spec the run tested rather than the
draft as it is now"). Pure: two JSON values in, the changes out.

A change names its place in the spec as a path (`prompt`, `options.temperature`, `tools[2].name`;
a key that is not a plain name is quoted: `headers["x-id"]`), what happened there (added, removed,
changed), the value before and after, and, for text of several lines on both sides, the changed
lines as a unified diff.
"""

from __future__ import annotations

import difflib
import json
import re
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

CONTEXT_LINES = 2
"""Unchanged lines kept around each changed one in a text's diff."""

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

    def as_json(self) -> dict[str, Any]:
        """`{path, change, before, after, lines}`."""
        return {
            "path": self.path,
            "change": self.change.value,
            "before": self.before,
            "after": self.after,
            "lines": list(self.lines),
        }


def _key_path(parent: str, key: str) -> str:
    if _PLAIN_KEY.match(key):
        return f"{parent}.{key}" if parent else key
    return f"{parent}[{json.dumps(key)}]"


def text_lines(before: str, after: str) -> tuple[str, ...]:
    """The unified diff of two texts (no file header), `CONTEXT_LINES` lines of context."""
    diff = difflib.unified_diff(
        before.splitlines(), after.splitlines(), lineterm="", n=CONTEXT_LINES
    )
    return tuple(line for line in diff if not line.startswith(("---", "+++")))


def _walk(path: str, before: Any, after: Any, out: list[SpecChange]) -> None:
    if isinstance(before, dict) and isinstance(after, dict):
        for key in sorted(set(before) | set(after), key=str):
            here = _key_path(path, str(key))
            if key not in after:
                out.append(SpecChange(here, Change.REMOVED, before=before[key]))
            elif key not in before:
                out.append(SpecChange(here, Change.ADDED, after=after[key]))
            else:
                _walk(here, before[key], after[key], out)
        return
    if isinstance(before, list) and isinstance(after, list):
        for i in range(max(len(before), len(after))):
            here = f"{path}[{i}]"
            if i >= len(after):
                out.append(SpecChange(here, Change.REMOVED, before=before[i]))
            elif i >= len(before):
                out.append(SpecChange(here, Change.ADDED, after=after[i]))
            else:
                _walk(here, before[i], after[i], out)
        return
    if before == after and type(before) is type(after):
        return
    lines: tuple[str, ...] = ()
    if isinstance(before, str) and isinstance(after, str) and ("\n" in before or "\n" in after):
        lines = text_lines(before, after)
    out.append(SpecChange(path or "(spec)", Change.CHANGED, before, after, lines))


def spec_changes(before: Any, after: Any) -> list[SpecChange]:
    """Every place where `after` (the candidate's spec) differs from `before` (the baseline's),
    in key order, depth first: a map is compared key by key, a list item by item (an item past
    the shorter list's end is added or removed), anything else by value (`1` and `1.0`, or `1`
    and `true`, differ). Equal specs give []."""
    out: list[SpecChange] = []
    _walk("", before, after, out)
    return out
