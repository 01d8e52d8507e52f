"""The literal texts a regex pattern spells, however it writes them (docs/reference/
data-protection.md, "A secret in a regex reference").

A pattern can write one text in many ways: `AKIA` is also `[A]KIA`, `(?:A)KIA`, `(A)KIA`,
`A{1}KIA`, `A(?#c)KIA`, `\\101KIA`, `\\U00000041KIA`, `\\N{LATIN CAPITAL LETTER A}KIA`, `A()KIA`,
`(?-i:AKIA)`, `(?x) A K I A`, `(?i)akia`. `literal_texts` reads the pattern as Python's own regex
parser does and rebuilds the texts its literal parts spell in a row: literals, groups of any kind
(capturing, non-capturing, with inline flags, atomic), a class of one character (or a few:
`[Aa]` gives both), a repeat (`X{1}`, `X?`, `X*`: each of its first counts, none included),
alternatives (`A|B`, each one), and zero-width parts (anchors, lookarounds, comments) through
which the texts around them run on; a lookaround's own texts are texts too. Anything else
(`.`, `\\d`, a class of many characters, a back-reference) ends a text.

Bounded: each part keeps at most `MAX_VARIANTS` alternative texts (past that, the texts so far
end there and a new one starts), and a repeat is spelled out only up to `MAX_REPEAT_CHARS`.

Pure: no I/O. Python's regex parser (`re._parser`, the `sre_parse` of older Pythons) is read
through `importlib`: it is the parser `re.compile` uses, so the texts are those the pattern
matches, not a guess at its syntax.
"""

from __future__ import annotations

import importlib
import re
from dataclasses import dataclass, field
from typing import Any

MAX_VARIANTS = 32
"""The most alternative texts one part of a pattern keeps (`[Aa][Bb]...` doubles them)."""
MAX_REPEAT_CHARS = 256
"""The longest text a repeat (`X{3}`) is spelled out to."""
_MAX_CLASS = 4
"""A character class of at most this many single characters gives each as an alternative."""

_parser: Any = importlib.import_module("re._parser")
_c: Any = importlib.import_module("re._constants")


@dataclass(frozen=True)
class PatternTexts:
    """What `literal_texts` read in a pattern.

    Attributes:
        texts: every literal text the pattern spells in a row (each alternative of each).
        heads: the texts the pattern can start with (read after a context: `key=` before the
            pattern of a schema's property `key`).
        ignorecase: some literal is matched ignoring case (`(?i)`, the `i` flag, `(?i:...)`):
            a text stands for each of its spellings in upper and lower case.
    """

    texts: frozenset[str]
    heads: frozenset[str]
    ignorecase: bool


@dataclass
class _Lit:
    """One part of a pattern: `full`, the texts it matches whole when it is literal throughout
    (None otherwise); `head`/`tail`, the texts it starts/ends with; `runs`, texts inside it."""

    full: set[str] | None
    head: set[str]
    tail: set[str]
    runs: set[str] = field(default_factory=set)


@dataclass
class _Reading:
    ignorecase: bool = False


def _break(runs: set[str] | None = None) -> _Lit:
    return _Lit(None, {""}, {""}, runs or set())


def _full(texts: set[str], runs: set[str] | None = None) -> _Lit:
    return _Lit(texts, texts, texts, runs or set())


def _join(left: set[str], right: set[str], runs: set[str]) -> set[str]:
    """Every left text followed by every right one; past `MAX_VARIANTS`, the left texts end (into
    `runs`) and the right ones start anew."""
    if len(left) * len(right) > MAX_VARIANTS:
        runs |= left
        return set(right)
    return {a + b for a in left for b in right}


def _sequence(items: Any, icase: bool, reading: _Reading) -> _Lit:
    current: set[str] = {""}
    head: set[str] | None = None
    runs: set[str] = set()
    for op, av in items:
        part = _node(op, av, icase, reading)
        runs |= part.runs
        if part.full is not None:
            current = _join(current, part.full, runs)
            continue
        joined = _join(current, part.head, runs)
        if head is None:
            head = joined
        else:
            runs |= joined
        current = set(part.tail)
    if head is None:
        return _full(current, runs)
    return _Lit(None, head, current, runs)


def _node(op: Any, av: Any, icase: bool, reading: _Reading) -> _Lit:
    if op is _c.LITERAL:
        reading.ignorecase = reading.ignorecase or icase
        return _full({chr(av)})
    if op is _c.IN:
        if 0 < len(av) <= _MAX_CLASS and all(item[0] is _c.LITERAL for item in av):
            reading.ignorecase = reading.ignorecase or icase
            return _full({chr(item[1]) for item in av})
        return _break()
    if op is _c.SUBPATTERN:
        _group, add, remove, sub = av
        inner = (icase or bool(add & re.IGNORECASE)) and not remove & re.IGNORECASE
        return _sequence(sub, inner, reading)
    if op is _c.ATOMIC_GROUP:
        return _sequence(av, icase, reading)
    if op is _c.BRANCH:
        return _branch([_sequence(b, icase, reading) for b in av[1]])
    if op in (_c.MAX_REPEAT, _c.MIN_REPEAT, _c.POSSESSIVE_REPEAT):
        return _repeat(av, icase, reading)
    if op is _c.AT:
        return _full({""})
    if op in (_c.ASSERT, _c.ASSERT_NOT):
        looked = _sequence(av[1], icase, reading)
        return _full({""}, _texts_of(looked))
    if op is _c.GROUPREF_EXISTS:
        runs: set[str] = set()
        for branch in av[1:]:
            if branch is not None:
                runs |= _texts_of(_sequence(branch, icase, reading))
        return _break(runs)
    return _break()


def _texts_of(part: _Lit) -> set[str]:
    return part.runs | part.head | part.tail | (part.full or set())


def _branch(parts: list[_Lit]) -> _Lit:
    runs = set().union(*(p.runs for p in parts))
    if all(p.full is not None for p in parts):
        texts = set().union(*(p.full or set() for p in parts))
        if len(texts) <= MAX_VARIANTS:
            return _full(texts, runs)
        return _break(runs | texts)
    head = set().union(*(p.head for p in parts))
    tail = set().union(*(p.tail for p in parts))
    if len(head) > MAX_VARIANTS or len(tail) > MAX_VARIANTS:
        return _break(runs | head | tail)
    return _Lit(None, head, tail, runs)


def _repeat(av: Any, icase: bool, reading: _Reading) -> _Lit:
    low, high, sub = av
    inner = _sequence(sub, icase, reading)
    if inner.full is None:
        return _break(_texts_of(inner))
    counts = [k for k in (low, low + 1) if k <= high]
    texts: set[str] = set()
    for text in inner.full:
        for k in counts:
            if len(text) * k > MAX_REPEAT_CHARS:
                return _break(inner.runs | inner.full)
            texts.add(text * k)
    if len(texts) > MAX_VARIANTS:
        return _break(inner.runs | inner.full)
    return _full(texts, inner.runs)


def literal_texts(pattern: str, flags: int = 0) -> PatternTexts | None:
    """The literal texts `pattern` spells (see the module), read with `flags` (`re.IGNORECASE`,
    `re.VERBOSE`: a check's `flags`); None when it is no Python regex (it cannot be read)."""
    try:
        parsed = _parser.parse(pattern, flags)
    except (re.error, RecursionError, OverflowError, ValueError):
        return None
    reading = _Reading()
    icase = bool(parsed.state.flags & re.IGNORECASE)
    top = _sequence(parsed, icase, reading)
    texts = frozenset(t for t in _texts_of(top) if t)
    return PatternTexts(texts, frozenset(top.head), reading.ignorecase)
