"""The names a person gives things (agents, datasets, judges, evaluations, model profiles,
environments, suites, API keys): what such a name may hold, and what two names are compared by
(docs/reference/limits.md, the row "names"; docs/guides/suites.md, "A suite's name").

A name is one line of text a person reads. It never holds a control character (Unicode category
Cc: NUL, ESC, a tab, a line break, DEL, U+0080-U+009F) nor a line or paragraph separator (U+2028,
U+2029): a name is refused with one, rather than kept and shown as a terminal escape or a second
line. Nor does it hold U+FFFC (the object replacement character): it stands for an embedded object
(an image in a document) that a name cannot carry, and is drawn as a box or nothing.

An invisible character is kept as written - a joiner holds an emoji together, a bidirectional mark
orders a mixed-script name, a variation selector picks an emoji's or an ideograph's look, a Hangul
filler completes a jamo sequence - but two names are compared without any (`comparison_key`):
"Night\\u200bly" and "Nightly\\ufe0f" read as "Nightly" and are the same name. Invisible means a
format character (category Cf) or a default-ignorable code point (`DEFAULT_IGNORABLE_RANGES`).
U+2800 (the braille pattern blank) reads as a space and is compared as one. A name that holds
something other than spaces, but nothing a person can see once compared ("\\u3164", "\\u2800",
"\\u200b"), is refused: it would read as blank.

Pure: no I/O.
"""

from __future__ import annotations

import bisect
import unicodedata
from collections.abc import Iterable

CONTROL = "Cc"
"""Unicode's general category of control characters: never in a name."""

FORMAT = "Cf"
"""Unicode's general category of format characters: invisible, left out when names are
compared."""

SEPARATORS = frozenset({"Zl", "Zp"})
"""Unicode's general categories of the line separator (U+2028) and the paragraph separator
(U+2029): never in a name, which is one line."""

DEFAULT_IGNORABLE_RANGES: tuple[tuple[int, int], ...] = (
    (0x00AD, 0x00AD),  # SOFT HYPHEN
    (0x034F, 0x034F),  # COMBINING GRAPHEME JOINER
    (0x061C, 0x061C),  # ARABIC LETTER MARK
    (0x115F, 0x1160),  # HANGUL CHOSEONG FILLER, HANGUL JUNGSEONG FILLER
    (0x17B4, 0x17B5),  # KHMER VOWEL INHERENT AQ, AA
    (0x180B, 0x180F),  # MONGOLIAN FREE VARIATION SELECTORS, VOWEL SEPARATOR
    (0x200B, 0x200F),  # ZERO WIDTH SPACE .. RIGHT-TO-LEFT MARK
    (0x202A, 0x202E),  # the bidirectional embeddings and overrides
    (0x2060, 0x206F),  # WORD JOINER .. the invisible operators, the bidirectional isolates
    (0x3164, 0x3164),  # HANGUL FILLER
    (0xFE00, 0xFE0F),  # VARIATION SELECTOR-1 .. -16
    (0xFEFF, 0xFEFF),  # ZERO WIDTH NO-BREAK SPACE (byte order mark)
    (0xFFA0, 0xFFA0),  # HALFWIDTH HANGUL FILLER
    (0xFFF0, 0xFFF8),  # reserved
    (0x1BCA0, 0x1BCA3),  # SHORTHAND FORMAT LETTER OVERLAP .. UP STEP
    (0x1D173, 0x1D17A),  # MUSICAL SYMBOL BEGIN BEAM .. END PHRASE
    (0xE0000, 0xE0FFF),  # the tag characters, VARIATION SELECTOR-17 .. -256, reserved
)
"""Unicode's derived core property Default_Ignorable_Code_Point (the Unicode Character Database's
DerivedCoreProperties.txt), as inclusive ranges of code points in order: characters a renderer shows
as nothing when it does not support them. Unassigned code points of these ranges are included, as
Unicode includes them, so a character assigned later is already invisible here."""

_IGNORABLE_STARTS = tuple(start for start, _ in DEFAULT_IGNORABLE_RANGES)

BRAILLE_BLANK = "\u2800"
"""U+2800 BRAILLE PATTERN BLANK: a braille cell with no dot, drawn as a space. Kept in a name as
written, compared as a space (so at either end it is trimmed, like a space)."""

OBJECT_REPLACEMENT = "\ufffc"
"""U+FFFC OBJECT REPLACEMENT CHARACTER: stands for an embedded object; never in a name."""

BLANK_LOOKING = frozenset({BRAILLE_BLANK, OBJECT_REPLACEMENT})
"""Characters that are neither format characters nor default-ignorable but read as nothing or a
space: a user id never holds one (`domain.access`)."""


def code_points(chars: Iterable[str]) -> str:
    """Characters as a person can read them whatever they are: `U+0000, U+001B` (each once, in
    the order given)."""
    return ", ".join(f"U+{ord(ch):04X}" for ch in dict.fromkeys(chars))


def of_category(text: str, category: str) -> list[str]:
    """The characters of `text` in the Unicode general category `category` (`"Cc"`, `"Cf"`),
    in order, repeats included."""
    return [ch for ch in text if unicodedata.category(ch) == category]


def is_default_ignorable(ch: str) -> bool:
    """True when the one character `ch` is a Default_Ignorable_Code_Point
    (`DEFAULT_IGNORABLE_RANGES`): `"\\ufe0f"`, `"\\u3164"`, `"\\U000e0100"` are; `"a"`, `" "`,
    `"\\u2800"` are not."""
    cp = ord(ch)
    i = bisect.bisect_right(_IGNORABLE_STARTS, cp) - 1
    return i >= 0 and cp <= DEFAULT_IGNORABLE_RANGES[i][1]


def is_invisible(ch: str) -> bool:
    """True when the one character `ch` is a format character (category Cf) or a
    default-ignorable code point: what names are compared without."""
    return unicodedata.category(ch) == FORMAT or is_default_ignorable(ch)


def without_format(text: str) -> str:
    """`text` with every format character (category Cf) left out: `"Night\\u200bly"` ->
    `"Nightly"`, `"\\ufeffNig\\u00adhtly\\u200d"` -> `"Nightly"`."""
    return "".join(ch for ch in text if unicodedata.category(ch) != FORMAT)


def without_invisible(text: str) -> str:
    """`text` with every invisible character (`is_invisible`) left out: `"Night\\u034fly\\ufe0f"`
    -> `"Nightly"`, `"\\u115fNightly\\u3164"` -> `"Nightly"`."""
    return "".join(ch for ch in text if not is_invisible(ch))


def name_problem(name: str) -> str | None:
    """Why `name` cannot be a name, None when it can.

    Rule, in this order: a name holds no control character (category Cc), no line or paragraph
    separator (U+2028, U+2029), no U+FFFC; and a name that is not blank as written (only spaces,
    or empty) is not blank once compared (`comparison_key`): invisible characters and braille
    blanks alone read as nothing. The message names each character found as `U+XXXX` (never the
    character itself, which could be an escape sequence's start).
    """
    controls = of_category(name, CONTROL)
    if controls:
        return (
            f"must not contain control characters (found {code_points(controls)}): a name is "
            "one line of text a person reads"
        )
    separators = [ch for ch in name if unicodedata.category(ch) in SEPARATORS]
    if separators:
        return (
            f"must not contain line or paragraph separators (found {code_points(separators)}): "
            "a name is one line of text a person reads"
        )
    if OBJECT_REPLACEMENT in name:
        return (
            "must not contain the object replacement character (found U+FFFC): it stands for "
            "an embedded object a name cannot hold"
        )
    if name.strip() and not comparison_key(name):
        unseen = [ch for ch in name if not ch.isspace()]
        return (
            f"must hold a character a person can see (found only {code_points(unseen)} and "
            "spaces, which read as blank): leave the name empty or write one"
        )
    return None


def comparison_key(name: str) -> str:
    """What a name is compared by: two names are one when their keys are equal.

    Two names are the same name when they read the same to a person: every invisible character
    (`is_invisible`: a format character or a default-ignorable code point, such as a zero-width
    space, a variation selector or a Hangul filler) left out, a braille blank (U+2800) read as a
    space, then in Unicode's compatibility form (NFKC: a full-width "Ｎｉｇｈｔｌｙ" is
    "Nightly"), case-folded ("Straße" is "STRASSE"), with the spaces at either end trimmed and
    every run of spaces inside counted as one space. Accents are kept ("résumé" is not
    "resume"). The empty string for a name that is blank or invisible.

    `comparison_key("  Night\\u200bLY\\ufe0f ")` == `comparison_key("nightly")` == `"nightly"`.
    """
    visible = without_invisible(name).replace(BRAILLE_BLANK, " ")
    folded = unicodedata.normalize("NFKC", visible).casefold()
    # NFKC makes a Hangul filler of a half-width one (U+FFA0 -> U+1160): left out again
    return " ".join(without_invisible(unicodedata.normalize("NFKC", folded)).split())
