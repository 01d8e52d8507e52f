"""The names a person gives things (agents, datasets, judges, evaluations, model profiles,
environments, suites, API keys): what such a name may hold, and what two names are compared by
(docs/reference/limits.md, the row "names"; docs/guides/suites.md, "A suite's name").

A name is one line of text a person reads. It never holds a control character (Unicode category
Cc: NUL, ESC, a tab, a line break, DEL, U+0080-U+009F): a name is refused with one, rather than
kept and shown as a terminal escape or a second line. A format character (category Cf: a
zero-width space U+200B, a soft hyphen U+00AD, a zero-width joiner U+200D, a byte order mark
U+FEFF, the bidirectional controls) is kept as written - a joiner holds an emoji together, a
bidirectional mark orders a mixed-script name - but it is invisible, so two names are compared
without any (`comparison_key`): "Night\\u200bly" reads as "Nightly" and is the same name.

Pure: no I/O.
"""

from __future__ import annotations

import unicodedata
from collections.abc import Iterable

CONTROL = "Cc"
"""Unicode's general category of control characters: never in a name."""

FORMAT = "Cf"
"""Unicode's general category of format characters: invisible, left out when names are
compared."""


def code_points(chars: Iterable[str]) -> str:
    """Characters as a person can read them whatever they are: `U+0000, U+001B` (each once, in
    the order given)."""
    return ", ".join(f"U+{ord(ch):04X}" for ch in dict.fromkeys(chars))


def of_category(text: str, category: str) -> list[str]:
    """The characters of `text` in the Unicode general category `category` (`"Cc"`, `"Cf"`),
    in order, repeats included."""
    return [ch for ch in text if unicodedata.category(ch) == category]


def without_format(text: str) -> str:
    """`text` with every format character (category Cf) left out: `"Night\\u200bly"` ->
    `"Nightly"`, `"\\ufeffNig\\u00adhtly\\u200d"` -> `"Nightly"`."""
    return "".join(ch for ch in text if unicodedata.category(ch) != FORMAT)


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a name, None when it can.

    Rule: a name holds no control character (category Cc). The message names each one found as
    `U+XXXX` (never the character itself, which could be an escape sequence's start).
    """
    controls = of_category(name, CONTROL)
    if not controls:
        return None
    return (
        f"must not contain control characters (found {code_points(controls)}): a name is one "
        "line of text a person reads"
    )


def comparison_key(name: str) -> str:
    """What a name is compared by: two names are one when their keys are equal.

    Two names are the same name when they read the same to a person: every format character
    (category Cf, invisible) left out, then in Unicode's compatibility form (NFKC: a full-width
    "Ｎｉｇｈｔｌｙ" is "Nightly"), case-folded ("Straße" is "STRASSE"), with the spaces at
    either end trimmed and every run of spaces inside counted as one space. Accents are kept
    ("résumé" is not "resume"). The empty string for a name that is blank or invisible.

    `comparison_key("  Night\\u200bLY ")` == `comparison_key("nightly")` == `"nightly"`.
    """
    folded = unicodedata.normalize("NFKC", without_format(name)).casefold()
    return " ".join(unicodedata.normalize("NFKC", folded).split())
