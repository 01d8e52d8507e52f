"""Secrets and placeholders inside a regex pattern (docs/reference/data-protection.md).

A regex check's `pattern` is a reference like any other: a secret it names is replaced before the
case is kept. A pattern writes its literal text with escapes (`re.escape(jwt)` gives
`eyJhbGci...\\.eyJzdW...\\.dozj...`, an OpenAI key `sk\\-proj\\-...`), which hides the secret from
the shape rules of `redaction`. `redact_pattern` reads the pattern's literal escapes first (a
backslash before any character that is not a letter, a digit or `_`; `\\n`, `\\t`, `\\r`, `\\f`,
`\\v`; `\\xhh`, `\\uhhhh`), finds the secrets in that text, and replaces the escaped span each
covers with its placeholder, written unescaped as in any kept text (`token=[REDACTED:jwt]`).

A pattern kept so is read back with its placeholders escaped or not: `\\[REDACTED:jwt\\]` (the
placeholder written literally) and `[REDACTED:jwt]` (as kept) are the same placeholder
(`pattern_holds_placeholder`, `pattern_placeholders_literal`).

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from chalicelib.domain.redaction import PLACEHOLDER, Known, find

_PLACED_IN_PATTERN = re.compile(r"\\?\[REDACTED\\?:([a-z_]+)\\?\]")
"""A placeholder in a pattern, each of its brackets (and its colon) perhaps escaped."""

_LETTER_ESCAPES = {"n": "\n", "t": "\t", "r": "\r", "f": "\f", "v": "\v"}
_HEX_ESCAPES = {"x": 2, "u": 4}
_HEX = frozenset("0123456789abcdefABCDEF")
_NOT_LITERAL = "\x00"
"""What an escape that writes no literal character (`\\d`, `\\b`, `\\1`) reads as."""


def pattern_holds_placeholder(pattern: str) -> bool:
    """Whether a regex `pattern` holds a redaction placeholder, escaped (`\\[REDACTED:jwt\\]`) or
    as kept (`[REDACTED:jwt]`): a pattern that named a secret."""
    return _PLACED_IN_PATTERN.search(pattern) is not None


def pattern_placeholders_literal(pattern: str) -> str:
    """`pattern` with each placeholder, escaped or not, written so that it matches that
    placeholder as written (`[REDACTED:jwt]` is otherwise a character class):
    `key=[REDACTED:jwt]` -> `key=\\[REDACTED:jwt\\]`."""
    return _PLACED_IN_PATTERN.sub(lambda m: re.escape(PLACEHOLDER.format(kind=m.group(1))), pattern)


def _literal_escape(pattern: str, at: int) -> tuple[str, int] | None:
    """The character the escape at `pattern[at]` (a backslash) writes and the escape's length, or
    None when it is not a literal escape."""
    nxt = pattern[at + 1]
    if not (nxt.isascii() and (nxt.isalnum() or nxt == "_")):
        return nxt, 2
    if nxt in _LETTER_ESCAPES:
        return _LETTER_ESCAPES[nxt], 2
    if nxt in _HEX_ESCAPES:
        digits = pattern[at + 2 : at + 2 + _HEX_ESCAPES[nxt]]
        if len(digits) == _HEX_ESCAPES[nxt] and set(digits) <= _HEX:
            return chr(int(digits, 16)), 2 + len(digits)
    return None


def unescape_pattern(pattern: str) -> tuple[str, list[int], list[int]]:
    """The literal text a regex `pattern` writes with escapes, and where each of its characters
    came from.

    Returns:
        `(text, starts, ends)`: `text[i]` is written by `pattern[starts[i]:ends[i]]` (one
        character, or its escape: `\\.` -> `.`, `\\x41` -> `A`). An escape that is not literal
        (`\\d`, `\\b`, `\\1`, ...) reads as one NUL character, which no secret holds; a lone
        trailing backslash stays as written.
    """
    text: list[str] = []
    starts: list[int] = []
    ends: list[int] = []
    at = 0
    while at < len(pattern):
        char, length = pattern[at], 1
        if char == "\\" and at + 1 < len(pattern):
            literal = _literal_escape(pattern, at)
            if literal is None:
                # A class or an assertion (`\d`, `\b`): it stands for no letter, so it never
                # glues onto a secret beside it (`\bAKIA...\b` holds a key id).
                literal = _NOT_LITERAL, 2
            char, length = literal
        text.append(char)
        starts.append(at)
        ends.append(at + length)
        at += length
    return "".join(text), starts, ends


def redact_pattern(pattern: str, known: Iterable[Known] = ()) -> str:
    """A regex `pattern` with every secret it names, escaped or not, replaced by its placeholder.

    The secrets are found (`redaction.find`, with `known`: the organization's stored values and
    `(value, kind)` pairs) in the pattern's literal text (`unescape_pattern`); the escaped span of
    the pattern each covers is replaced: `token=eyJ...\\.eyJ...\\.doz...` -> `token=[REDACTED:jwt]`,
    `orgvalue\\-Qx7Lm2Pz9` (a stored value) -> `[REDACTED:secret]`. A pattern without escapes is
    redacted as `redaction.redact` would.
    """
    if not pattern:
        return pattern
    text, starts, ends = unescape_pattern(pattern)
    spans = find(text, tuple(known))
    if not spans:
        return pattern
    out: list[str] = []
    at = 0
    for start, end, kind in spans:
        out.append(pattern[at : starts[start]])
        out.append(PLACEHOLDER.format(kind=kind))
        at = ends[end - 1]
    out.append(pattern[at:])
    return "".join(out)


def _schema_patterns(node: Any, known: tuple[Known, ...]) -> Any:
    """A JSON Schema with each `pattern` keyword's string redacted by `redact_pattern`."""
    if isinstance(node, dict):
        return {
            key: redact_pattern(value, known)
            if key == "pattern" and isinstance(value, str)
            else _schema_patterns(value, known)
            for key, value in node.items()
        }
    if isinstance(node, list):
        return [_schema_patterns(item, known) for item in node]
    return node


def redact_case_patterns(case: dict[str, Any], known: Iterable[Known] = ()) -> dict[str, Any]:
    """A case (as JSON: `Case.model_dump(mode="json")`) with the regex patterns of its checks
    redacted by `redact_pattern`: each `regex` check's `pattern`, and each `pattern` keyword in a
    `json_schema` check's `schema`. Everything else is left as it is (`redaction.redact_value`
    redacts the rest). Returns a new dict; `case` is not changed."""
    checks = case.get("checks")
    if not isinstance(checks, list):
        return case
    known = tuple(known)
    out = []
    for check in checks:
        if not isinstance(check, dict):
            out.append(check)
        elif check.get("scorer") == "regex" and isinstance(check.get("pattern"), str):
            out.append({**check, "pattern": redact_pattern(check["pattern"], known)})
        elif check.get("scorer") == "json_schema" and "schema" in check:
            out.append({**check, "schema": _schema_patterns(check["schema"], known)})
        else:
            out.append(check)
    return {**case, "checks": out}
