"""Secrets and placeholders inside a regex pattern (docs/reference/data-protection.md).

A regex check's `pattern` is a reference like any other: a secret it names is replaced before the
case is kept. A pattern writes its literal text with escapes (`re.escape(jwt)` gives
`eyJhbGci...\\.eyJzdW...\\.dozj...`, an OpenAI key `sk\\-proj\\-...`), which hides the secret from
the shape rules of `redaction`. `redact_pattern` reads the pattern's literal escapes first (a
backslash before any character that is not a letter, a digit or `_`; `\\n`, `\\t`, `\\r`, `\\f`,
`\\v`; `\\xhh`, `\\uhhhh`), finds the secrets in that text, and replaces the escaped span each
covers with its placeholder, written unescaped as in any kept text (`token=[REDACTED:jwt]`).

A JSON Schema is redacted the same way (`redact_schema`): its `pattern`s, and under a property
whose name labels a secret (`aws_secret_access_key`) the property's `const`, `enum`, `default`,
`examples` and `pattern` read after that name, as a `key=value` is. A case's checks
(`redact_case_patterns`) and a dataset's scoring settings (`redact_scoring_patterns`) go through
the one rule, `redact_check_patterns`.

A pattern may also spell a secret in a way no escape rule reads (`[A]KIA...`, `(?:A)KIA...`,
`A{1}KIA...`, `\\101KIA...`, `\\N{...}`, `(?x) A K I A ...`, `(?i)akia...`, `orgvalue[-]...`):
`hidden_secrets` reads the texts the pattern's literal parts spell in a row as Python's regex
parser reads them (`pattern_literals.literal_texts`) and finds the secrets in those. A pattern
that spells one so is kept as a whole as its secrets' placeholders (`[REDACTED:aws_access_key]`,
several joined by `[\\s\\S]*`): what else it said cannot be told apart from the secret.

A pattern kept so is read back with its placeholders escaped or not: `\\[REDACTED:jwt\\]` (the
placeholder written literally) and `[REDACTED:jwt]` (as kept) are the same placeholder
(`pattern_holds_placeholder`, `pattern_placeholders_literal`).

Pure: no I/O.
"""

from __future__ import annotations

import re
from collections.abc import Iterable
from typing import Any

from chalicelib.domain.pattern_literals import literal_texts
from chalicelib.domain.redaction import MIN_KNOWN_CHARS, PLACEHOLDER, Known, find, redact

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


def _read_flags(flags: Any) -> int:
    """A check's `flags` (`"ix"`, `["IGNORECASE", "x"]`) as the `re` flags that change how a
    pattern is read for its texts: `re.IGNORECASE` and `re.VERBOSE`; anything else is ignored
    (the scorer refuses bad flags)."""
    words: list[str] = []
    if isinstance(flags, str):
        low = flags.lower()
        words = [low] if low in ("ignorecase", "verbose") else list(low)
    elif isinstance(flags, list):
        words = [str(f).lower() for f in flags]
    result = 0
    for word in words:
        if word in ("i", "ignorecase"):
            result |= re.IGNORECASE
        elif word in ("x", "verbose"):
            result |= re.VERBOSE
    return result


def hidden_secrets(
    pattern: str, known: Iterable[Known] = (), *, context: str = "", flags: int = 0
) -> list[str]:
    """The kinds of the secrets `pattern` spells in its literal parts however it writes them
    (`pattern_literals.literal_texts`: `[A]KIA...`, `(?:A)KIA...`, `(?x) A K I A ...`), in the
    order found, without repeats; [] for a pattern that spells none or cannot be read.

    A text read with the pattern ignoring case is searched for as written, in upper case and in
    lower case, and a stored value (`known`) is found in it ignoring case. A text the pattern can
    start with is also read after `context` (as `redact_pattern` reads the pattern).
    """
    read = literal_texts(pattern, flags)
    if read is None:
        return []
    known = tuple(known)
    kinds: list[str] = []
    for text in sorted(read.texts):
        spellings = {text, text.upper(), text.lower()} if read.ignorecase else {text}
        for spelling in sorted(spellings):
            kinds.extend(kind for _, _, kind in find(spelling, known))
        if read.ignorecase:
            folded = text.casefold()
            for item in known:
                value, kind = (item, "secret") if isinstance(item, str) else item
                if len(value) >= MIN_KNOWN_CHARS and value.casefold() in folded:
                    kinds.append(kind)
    if context:
        for head in sorted(read.heads):
            found = find(context + head, known)
            kinds.extend(kind for _, end, kind in found if end > len(context))
    return list(dict.fromkeys(kinds))


def redact_pattern(
    pattern: str, known: Iterable[Known] = (), *, context: str = "", flags: int = 0
) -> str:
    """A regex `pattern` with every secret it names, escaped or not, replaced by its placeholder.

    The secrets are found (`redaction.find`, with `known`: the organization's stored values and
    `(value, kind)` pairs) in the pattern's literal text (`unescape_pattern`); the escaped span of
    the pattern each covers is replaced: `token=eyJ...\\.eyJ...\\.doz...` -> `token=[REDACTED:jwt]`,
    `orgvalue\\-Qx7Lm2Pz9` (a stored value) -> `[REDACTED:secret]`. A pattern without escapes is
    redacted as `redaction.redact` would.

    Then a pattern that still spells a secret in its literal parts, written some other way
    (`hidden_secrets`: `[A]KIA...`, `(?x) A K I A ...`), is replaced as a whole by its secrets'
    placeholders (joined by `[\\s\\S]*` when there are several): `[REDACTED:aws_access_key]`.

    Args:
        context: what the pattern is read after, never changed or returned (as `redaction.redact`
            takes it): `"aws_secret_access_key="` for the pattern of a schema's property of that
            name. An anchor at the pattern's start (`^`, `\\A`) is read as standing before the
            context, so `^<key>$` after that context is a secret access key.
        flags: the `re` flags the pattern is searched with (`re.IGNORECASE`, `re.VERBOSE`).
    """
    if not pattern:
        return pattern
    known = tuple(known)
    escaped = _redact_escaped(pattern, known, context)
    kinds = hidden_secrets(escaped, known, context=context, flags=flags)
    if not kinds:
        return escaped
    return r"[\s\S]*".join(PLACEHOLDER.format(kind=kind) for kind in kinds)


def _redact_escaped(pattern: str, known: tuple[Known, ...], context: str) -> str:
    """`redact_pattern`'s first pass: the secrets of the pattern's literal text with its escapes
    read (`unescape_pattern`), each escaped span replaced by its placeholder."""
    text, starts, ends = unescape_pattern(pattern)
    skip = 1 if context and (text[:1] == "^" or pattern.startswith("\\A")) else 0
    offset = len(context) - skip
    spans = [
        (max(start - offset, skip), end - offset, kind)
        for start, end, kind in find(context + text[skip:], tuple(known))
        if end - offset > skip
    ]
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


_VALUE_KEYWORDS = ("const", "enum", "default", "examples")
"""The keywords of a schema whose strings are values the schema's property may take."""
_NAMING_KEYWORDS = ("properties", "$defs", "definitions")
"""The keywords of a schema whose keys name the schemas under them (a property, a definition)."""


def _labelled(value: Any, known: tuple[Known, ...], label: str) -> Any:
    """A value a schema gives its property `label` (a `const`, an `enum`'s list...) with each string
    in it read after `label=`: `redaction.redact(value, context="aws_secret_access_key=")`."""
    if isinstance(value, str):
        return redact(value, known, context=f"{label}=") if label else value
    if isinstance(value, list):
        return [_labelled(item, known, label) for item in value]
    return value


def redact_schema(schema: Any, known: Iterable[Known] = ()) -> Any:
    """A JSON Schema with the secrets its keywords name replaced where their place gives them away:
    each `pattern` keyword's string by `redact_pattern`; and, under a property (or a definition)
    whose name labels a secret, the property's own strings read after that name as a `key=value`
    is read (`redaction.redact` with `context`): its `pattern`, and the strings of its `const`,
    `enum`, `default` and `examples`. `{"aws_secret_access_key": {"const": "<40 characters>"}}`
    under `properties` is checked as `aws_secret_access_key=<40 characters>` and kept as
    `{"const": "[REDACTED:aws_secret_key]"}`: an AWS secret access key, recognized only after such a
    name, is redacted here too. Which names label a secret is whatever the redaction rules read as
    one (`redaction.rules`): no list of its own.

    Everything else is left as it is (`redaction.redact_value` redacts the rest by shape). Returns
    a new value; `schema` is not changed.
    """
    return _schema_node(schema, tuple(known), "")


def _schema_node(node: Any, known: tuple[Known, ...], label: str) -> Any:
    """`redact_schema` of one node, `label` the name of the property it describes ("": none)."""
    if isinstance(node, list):
        return [_schema_node(item, known, label) for item in node]
    if not isinstance(node, dict):
        return node
    out: dict[Any, Any] = {}
    for key, value in node.items():
        if key == "pattern" and isinstance(value, str):
            out[key] = redact_pattern(value, known, context=f"{label}=" if label else "")
        elif key in _VALUE_KEYWORDS:
            out[key] = _labelled(value, known, label)
        elif key in _NAMING_KEYWORDS and isinstance(value, dict):
            out[key] = {
                name: _schema_node(sub, known, name if isinstance(name, str) else "")
                for name, sub in value.items()
            }
        else:
            # A subschema (`items`, `anyOf`, `not`...) still describes the same property.
            out[key] = _schema_node(value, known, label)
    return out


def redact_check_patterns(
    scorer: str, params: dict[str, Any], known: Iterable[Known] = ()
) -> dict[str, Any]:
    """A check's parameters, or a scorer's settings (`ScoringConfig.settings[scorer]`: the same
    keys), with what only the pattern rules see redacted: a `regex` one's `pattern` by
    `redact_pattern`, a `json_schema` one's `schema` by `redact_schema`. Other scorers' parameters,
    and the rest of these, are returned as they are (`redaction.redact_value` redacts them).
    Returns a new dict when anything changed; `params` is not changed."""
    known = tuple(known)
    if scorer == "regex" and isinstance(params.get("pattern"), str):
        flags = _read_flags(params.get("flags"))
        return {**params, "pattern": redact_pattern(params["pattern"], known, flags=flags)}
    if scorer == "json_schema" and "schema" in params:
        return {**params, "schema": redact_schema(params["schema"], known)}
    return params


def redact_case_patterns(case: dict[str, Any], known: Iterable[Known] = ()) -> dict[str, Any]:
    """A case (as JSON: `Case.model_dump(mode="json")`) with its checks' parameters redacted by
    `redact_check_patterns` (each `regex` check's `pattern`, each `json_schema` check's `schema`).
    Everything else is left as it is (`redaction.redact_value` redacts the rest). Returns a new
    dict; `case` is not changed."""
    checks = case.get("checks")
    if not isinstance(checks, list):
        return case
    known = tuple(known)
    out = [
        redact_check_patterns(str(check.get("scorer")), check, known)
        if isinstance(check, dict)
        else check
        for check in checks
    ]
    return {**case, "checks": out}


def redact_scoring_patterns(scoring: dict[str, Any], known: Iterable[Known] = ()) -> dict[str, Any]:
    """A dataset's scoring (as JSON: `ScoringConfig.model_dump(mode="json")`) with each scorer's
    settings redacted by `redact_check_patterns`, the rule a case's checks are redacted by: the
    `regex` settings' `pattern`, the `json_schema` settings' `schema`. Everything else is left as
    it is. Returns a new dict; `scoring` is not changed."""
    settings = scoring.get("settings")
    if not isinstance(settings, dict):
        return scoring
    known = tuple(known)
    return {
        **scoring,
        "settings": {
            name: redact_check_patterns(name, params, known) if isinstance(params, dict) else params
            for name, params in settings.items()
        },
    }
