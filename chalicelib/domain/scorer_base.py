"""What every scorer shares: the scorer interface and its helpers (docs/reference/scorers.md).

- `ScorerName`, the names of the built-in scorers, and `Settings`, one scorer's settings or one
  check's parameters;
- final numbers: `final_number` reads the number an answer or a reference ends on,
  `format_number` writes one for a reason (`numeric_answer` and the importers use both);
- `check_params` (a case's checks that feed a scorer), `_combine` (one verdict from several
  checks'), `_shown` (a text quoted in a reason), `AnswerSecrets` (the secrets an answer holds,
  and the answer quoted with each of them written as its placeholder);
- the `Scorer` ABC every scorer subclasses.

The concrete scorers live in `scorer_text`, `scorer_json`, `scorer_numeric_calls` and
`scorer_judge`; the registry and the grading rule in `scorers`, which imports them all. This module
imports none of them. Pure: no I/O, no clock, no environment.
"""

from __future__ import annotations

import re
from abc import ABC, abstractmethod
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any, ClassVar

from chalicelib.domain.models import AgentAnswer, Case, ScoreResult
from chalicelib.domain.redaction import PLACEHOLDER, Known, find

Settings = Mapping[str, Any]
"""One scorer's settings (`ScoringConfig.settings[name]`) or one check's parameters."""


class ScorerName(StrEnum):
    """Names of the built-in deterministic scorers (the values go in `ScoringConfig.required`)."""

    EQUALS = "equals"
    CONTAINS = "contains"
    ICONTAINS = "icontains"
    REGEX = "regex"
    JSON_VALID = "json_valid"
    JSON_SCHEMA = "json_schema"
    NUMERIC_ANSWER = "numeric_answer"
    TOOL_CALLS = "tool_calls"
    JUDGE = "judge"


DEFAULT_TOLERANCE = 1e-6
"""Absolute tolerance of `numeric_answer` when neither the check nor the settings give one."""

_SHOWN_CHARS = 80
"""How much of an answer a reason quotes; enough to recognise it, short enough to list."""


# ---------------------------------------------------------------------------------------
# Final numbers (numeric_answer)
# ---------------------------------------------------------------------------------------

# The last "####" (GSM8K references) or "A:" (the GSM8K example solutions, and a common
# answer convention). "A:" must not be the tail of a word ("DATA:", "NASA:").
_MARKER = re.compile(r"####|(?<!\w)A:")

# One number as people write them in answers: "-$1,234.50", "$-90", "18%", ".5", "7/14".
# - The lookbehind keeps "16-3" from reading as "-3", and "x2", "1.5.3", "3/4/2020" from
#   yielding numbers glued to what precedes them.
# - Thousands groups must be exactly 3 digits, so "1,2,3" is three numbers, not 123.
# - An integer fraction "a/b" is one value (1/2 for "7/14"); "3/4/2020" is not a fraction.
# - "%" and a trailing "." are simply not part of the number, which is what tolerating them means.
_NUMBER = re.compile(
    r"""
    (?<![\w./])
    (?P<sign1>[-\u2212])?
    (?:[$\u20ac\u00a3]\s?)?
    (?P<sign2>-)?
    (?:
        (?P<num>\d+)/(?P<den>\d+)(?![\d/]|\.\d)
      | (?P<body>(?:\d{1,3}(?:,\d{3})+|\d+)(?:\.\d+)?|\.\d+)(?!\d)
    )
    """,
    re.VERBOSE,
)


def _number_value(match: re.Match[str]) -> Fraction:
    """The exact value of one `_NUMBER` match."""
    if match.group("num") is not None:
        num, den = int(match.group("num")), int(match.group("den"))
        # "x/0" is not a fraction anyone means; read the numerator alone rather than divide by zero.
        value = Fraction(num, den) if den else Fraction(num)
    else:
        value = Fraction(match.group("body").replace(",", ""))
    if match.group("sign1") or match.group("sign2"):
        value = -value
    return value


def final_number(text: str | None) -> Fraction | None:
    """The final number of an answer or reference, exactly.

    The rule: if the text has a `####` or `A:` marker, the first number after the LAST marker;
    otherwise the last number anywhere in the text. Commas as thousands separators are
    ignored ("1,000" is 1000), a currency sign (`$`, `€`, `£`), a `%` and a trailing `.` are
    tolerated ("$18.00", "18%", "18." are all 18), negatives and decimals are read
    ("-1.8", ".5"), and an integer fraction is one value ("7/14" is 1/2).

    Args:
        text: the answer or reference text; None reads as no number.

    Returns:
        The number as an exact `Fraction` (so "0.1" is 1/10, not a float), or None when the
        text has no number (or has a marker with no number after it: the agent committed to a
        non-numeric final answer, and a number from its working is not its answer).
    """
    found = final_number_at(text)
    return found[0] if found else None


def final_number_at(text: str | None) -> tuple[Fraction, int, int] | None:
    """`final_number` with where it is written: `(number, start, end)`, `text[start:end]` being
    the number as written ("-$1,234.50"); None when `final_number` is None."""
    if not text:
        return None
    markers = list(_MARKER.finditer(text))
    if markers:
        match = _NUMBER.search(text, markers[-1].end())
    else:
        found = list(_NUMBER.finditer(text))
        match = found[-1] if found else None
    return (_number_value(match), match.start(), match.end()) if match else None


def format_number(value: Fraction) -> str:
    """A number for a reason: "18", "-90", "10.833333333333332", "0.2"."""
    if value.denominator == 1:
        return str(value.numerator)
    return repr(float(value))


def _as_number(value: Any, what: str) -> Fraction:
    """A check's `value` or a `tolerance` as an exact number.

    Raises:
        ValueError: `value` is not a number nor a text with a number in it.
    """
    if isinstance(value, bool):  # bool is an int subclass; True is not the number 1 here
        raise ValueError(f"{what} must be a number, not {value!r}")
    if isinstance(value, int):
        return Fraction(value)
    if isinstance(value, float):
        # Through str() so 0.1 stays 1/10 rather than the binary float's expansion.
        return Fraction(str(value))
    if isinstance(value, str):
        number = final_number(value)
        if number is not None:
            return number
    raise ValueError(f"{what} must be a number, not {value!r}")


# ---------------------------------------------------------------------------------------
# The scorer interface and helpers
# ---------------------------------------------------------------------------------------


def _shown(text: str) -> str:
    """`text` quoted for a reason, cut to `_SHOWN_CHARS` characters (never inside a placeholder:
    a cut that would split `[REDACTED:aws_access_key]` falls before it)."""
    if len(text) > _SHOWN_CHARS:
        cut = _SHOWN_CHARS
        for placed in _PLACED.finditer(text, 0, _SHOWN_CHARS + len(_LONGEST_PLACEHOLDER)):
            if placed.start() < cut < placed.end():
                cut = placed.start()
        return repr(text[:cut]) + "..."
    return repr(text)


_PLACED = re.compile(r"\[REDACTED:[a-z_]+\]")
_LONGEST_PLACEHOLDER = PLACEHOLDER.format(kind="x" * 40)


@dataclass(frozen=True)
class AnswerSecrets:
    """The secrets an answer holds, for the reasons that quote it
    (docs/reference/data-protection.md).

    A reason is kept redacted, but redaction recognizes a secret whole: a piece of one
    (`Z3Q7M2P9X4K8LW5R` of an AWS key id, the tail of an organization's stored value) reads as
    ordinary text. A check's author picks what a reason quotes (a regex's match:
    `(?<=AKIA)[A-Z0-9]{16}`), so a reason never quotes the answer's text as it is: it quotes
    `redacted(start, end)`, the span widened to every secret it touches, each written as its
    placeholder (`[REDACTED:aws_access_key]`).

    Attributes:
        text: the answer's text (or the text a scorer searched: the answer redacted).
        spans: its secrets as sorted, non-overlapping `(start, end, kind)` character spans
            (`redaction.find` with the organization's stored values and the secrets learned).
    """

    text: str
    spans: tuple[tuple[int, int, str], ...]

    @classmethod
    def of(cls, text: str, known: Iterable[Known] = ()) -> AnswerSecrets:
        """The secrets of `text`, found by shape and among `known` (`redaction.Known`)."""
        return cls(text, tuple(find(text, tuple(known))) if text else ())

    def touches(self, start: int, end: int) -> bool:
        """Whether `text[start:end]` shares a character with a secret (an empty span: none)."""
        return start < end and any(s < end and start < e for s, e, _ in self.spans)

    def redacted(self, start: int = 0, end: int | None = None) -> str:
        """`text[start:end]` widened to the whole of each secret it touches, each secret written
        as its placeholder: the part of the answer a reason may quote."""
        end = len(self.text) if end is None else end
        if start >= end:
            return ""
        for s, e, _ in self.spans:
            if s < end and start < e:
                start, end = min(start, s), max(end, e)
        out: list[str] = []
        at = start
        for s, e, kind in self.spans:
            if start <= s and e <= end:
                out.append(self.text[at:s])
                out.append(PLACEHOLDER.format(kind=kind))
                at = e
        out.append(self.text[at:end])
        return "".join(out)

    def quote(self, start: int = 0, end: int | None = None) -> str:
        """`redacted(start, end)` quoted for a reason (`_shown`: cut to `_SHOWN_CHARS`)."""
        return _shown(self.redacted(start, end))


def check_params(case: Case, scorer: str) -> list[dict[str, Any]]:
    """The parameters of each of `case`'s checks that feed `scorer`, in the case's order."""
    return [dict(check.model_extra or {}) for check in case.checks if check.scorer == scorer]


def _combine(name: str, verdicts: Sequence[tuple[bool, str]]) -> ScoreResult:
    """One `ScoreResult` from several (passed, reason) verdicts: all must pass; score = share
    passed."""
    passed = sum(1 for ok, _ in verdicts if ok)
    failing = [reason for ok, reason in verdicts if not ok]
    return ScoreResult(
        scorer=name,
        passed=not failing,
        score=passed / len(verdicts),
        # A failure's reason is what a person needs; passes only when there is nothing else.
        reason="; ".join(failing or [reason for _, reason in verdicts]),
    )


class Scorer(ABC):
    """A way to grade one answer to one case.

    Subclasses set `name` and implement `applies` and `score`; `check_settings` and
    `check_params` let `validate_scoring` / `validate_checks` refuse bad configuration before
    a run instead of every attempt coming out `incomplete`.
    """

    name: ClassVar[str]

    @abstractmethod
    def applies(self, case: Case, settings: Settings) -> bool:
        """True when this scorer can decide answers to `case` with these settings."""

    @abstractmethod
    def score(
        self, case: Case, answer: AgentAnswer, settings: Settings, known: Sequence[Known] = ()
    ) -> ScoreResult:
        """Grade `answer`. May raise on broken parameters; `grade` records that as an error.

        `known`: the organization's stored secret values and the secrets learned from the answer
        (`redaction.Known`): a reason that quotes the answer writes each secret of the answer,
        by shape or among these, as its placeholder (`AnswerSecrets`), never a piece of one."""

    def check_settings(self, settings: Settings, field: str) -> None:  # noqa: B027 - an optional hook: most scorers take any settings
        """Raise `InvalidInputError` (field under `field`) for settings this scorer cannot use."""

    def check_params(self, params: Settings, field: str) -> None:
        """Raise `InvalidInputError` (field under `field`) for a check this scorer cannot use."""
        self.check_settings(params, field)
