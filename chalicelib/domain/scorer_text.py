"""The text scorers: `equals`, `contains`, `icontains` and `regex` (docs/reference/scorers.md).

Each compares the answer's text with each of a case's checks naming it - for the first three,
else with the case's `reference`; for `regex`, else with the pattern in the settings.

Pure: `regex` (the package that stops a slow search) is imported by the check that searches, so
a Lambda's cold start does not pay for it (issue 12).
"""

from __future__ import annotations

import re
from abc import abstractmethod
from collections.abc import Sequence
from typing import Any

from chalicelib.domain.models import AgentAnswer, Case, ScoreResult
from chalicelib.domain.redaction import Known, find, holds_placeholder, redact
from chalicelib.domain.redaction_patterns import (
    pattern_holds_placeholder,
    pattern_placeholders_literal,
    unescape_pattern,
)
from chalicelib.domain.scorer_base import (
    AnswerSecrets,
    Scorer,
    ScorerName,
    Settings,
    _combine,
    _shown,
    check_params,
)
from chalicelib.errors import InvalidInputError

# ---------------------------------------------------------------------------------------
# Text scorers
# ---------------------------------------------------------------------------------------


class _TextScorer(Scorer):
    """equals / contains / icontains: the answer against each check's `value`, else the
    reference.

    A check's `value` is one text, or a list of texts of which ANY may match (an Inspect sample's
    several targets, promptfoo's `contains-any`); every check must pass, as for every scorer.

    A target kept redacted (it holds a placeholder, `[REDACTED:aws_access_key]`: a case whose
    reference named a secret is saved so) is compared in the redacted space: the answer is
    redacted by the same rules first, so a secret of that kind in the answer stands where the
    placeholder does (`redaction.redact`, by shape: an organization's own stored values, kept as
    `[REDACTED:secret]`, are not known here). A failure's reason never reads as a pass: when the
    target holds a placeholder or a secret, or the answer redacted would seem to match it, the
    reason says the answer does not match and does not quote the answer (redacted, as every reason
    is kept, it would show the very placeholder the target holds). A reason that quotes the answer
    writes each of its secrets (by shape, or among the organization's stored values) as its
    placeholder (`AnswerSecrets`).
    """

    def applies(self, case: Case, settings: Settings) -> bool:
        return case.reference is not None or bool(check_params(case, self.name))

    def _targets(self, case: Case) -> list[list[str]]:
        """Each check's acceptable texts (one list per check), else `[[reference]]`."""
        checks = check_params(case, self.name)
        if not checks:
            return [[case.reference or ""]]
        targets = []
        for params in checks:
            value = params.get("value")
            if value is None or value == []:
                raise ValueError(f"a {self.name} check has no value")
            targets.append([str(v) for v in value] if isinstance(value, list) else [str(value)])
        return targets

    def check_params(self, params: Settings, field: str) -> None:
        value = params.get("value")
        if value is None:
            raise InvalidInputError(f"a {self.name} check needs a value", field=f"{field}.value")
        if isinstance(value, list) and (
            not value or not all(isinstance(v, str | int | float) for v in value)
        ):
            raise InvalidInputError(
                f"a {self.name} check's value is a text or a non-empty list of texts",
                field=f"{field}.value",
            )
        if isinstance(value, dict):
            raise InvalidInputError(
                f"a {self.name} check's value is a text, not an object", field=f"{field}.value"
            )

    def score(
        self, case: Case, answer: AgentAnswer, settings: Settings, known: Sequence[Known] = ()
    ) -> ScoreResult:
        return _combine(
            self.name, [self._any(answer.answer, t, known) for t in self._targets(case)]
        )

    def _any(self, answer: str, targets: list[str], known: Sequence[Known]) -> tuple[bool, str]:
        """(passed, reason) of `answer` against one check's acceptable texts: the first that
        matches passes it; with several and none matching, the reason names them all (the
        answer's secrets are looked for only then: a pass quotes no answer)."""
        redacted: str | None = None
        for target in targets:
            if holds_placeholder(target):
                redacted = redact(answer) if redacted is None else redacted
                if self._matches(redacted, target):
                    return True, f"{self._passed(target)} (secrets compared by their kind)"
            elif self._matches(answer, target):
                return True, self._passed(target)
        shown = ", ".join(_shown(t) for t in targets)
        secrets = AnswerSecrets.of(answer, known)
        if not self._quotable(answer, targets, secrets):
            return False, (
                f"{self._missing(shown if len(targets) == 1 else f'any of {shown}')} (the answer "
                "is not quoted: the reference holds a secret, compared by its kind with the "
                "answer's secrets redacted)"
            )
        got = self._got(secrets)
        if len(targets) == 1:
            return False, self._failed(got, targets[0])
        return False, f"expected {self._expected_any(shown)}, got {got}"

    def _got(self, secrets: AnswerSecrets) -> str:
        """The answer as a failure's reason quotes it, its secrets as placeholders."""
        return secrets.quote()

    def _quotable(self, answer: str, targets: list[str], secrets: AnswerSecrets) -> bool:
        """Whether a failure's reason may quote `answer`: no target holds a placeholder or a
        secret, and the answer redacted (as the reason quotes it) matches none (else the quote
        would read as a match)."""
        if any(holds_placeholder(t) or find(t) for t in targets):
            return False
        redacted = secrets.redacted()
        return redacted == answer or not any(self._matches(redacted, t) for t in targets)

    @abstractmethod
    def _matches(self, answer: str, target: str) -> bool:
        """Whether `answer` passes against one target."""

    @abstractmethod
    def _passed(self, target: str) -> str:
        """The reason of a pass against `target`."""

    @abstractmethod
    def _failed(self, got: str, target: str) -> str:
        """The reason of a failure against one target, quoting the answer (`got`, quoted)."""

    @abstractmethod
    def _missing(self, shown: str) -> str:
        """The reason of a failure that does not quote the answer (`shown`: the target(s))."""

    @abstractmethod
    def _expected_any(self, shown: str) -> str:
        """What a reason says was expected of the answer, given several acceptable texts."""


class EqualsScorer(_TextScorer):
    """The answer, stripped, is exactly the target, stripped (case-sensitive)."""

    name = ScorerName.EQUALS

    def _matches(self, answer: str, target: str) -> bool:
        return answer.strip() == target.strip()

    def _passed(self, target: str) -> str:
        return f"answer equals {_shown(target.strip())}"

    def _got(self, secrets: AnswerSecrets) -> str:
        text = secrets.text
        return secrets.quote(len(text) - len(text.lstrip()), len(text.rstrip()))

    def _failed(self, got: str, target: str) -> str:
        return f"expected {_shown(target.strip())}, got {got}"

    def _missing(self, shown: str) -> str:
        return f"the answer does not equal {shown}"

    def _expected_any(self, shown: str) -> str:
        return f"one of {shown}"


class ContainsScorer(_TextScorer):
    """The answer contains the target verbatim."""

    name = ScorerName.CONTAINS
    _note = ""
    """What each reason adds after the target (the case-insensitive form's "(ignoring case)")."""

    def _matches(self, answer: str, target: str) -> bool:
        return target in answer

    def _passed(self, target: str) -> str:
        return f"answer contains {_shown(target)}{self._note}"

    def _failed(self, got: str, target: str) -> str:
        return f"expected the answer to contain {_shown(target)}{self._note}, got {got}"

    def _missing(self, shown: str) -> str:
        return f"the answer does not contain {shown}{self._note}"

    def _expected_any(self, shown: str) -> str:
        return f"the answer to contain one of {shown}{self._note}"


class IContainsScorer(ContainsScorer):
    """The answer contains the target, ignoring case (Unicode casefold, so "STRASSE" ~ "straße")."""

    name = ScorerName.ICONTAINS
    _note = " (ignoring case)"

    def _matches(self, answer: str, target: str) -> bool:
        return target.casefold() in answer.casefold()


# ---------------------------------------------------------------------------------------
# regex
# ---------------------------------------------------------------------------------------

_FLAG_NAMES: dict[str, re.RegexFlag] = {
    "i": re.IGNORECASE,
    "ignorecase": re.IGNORECASE,
    "m": re.MULTILINE,
    "multiline": re.MULTILINE,
    "s": re.DOTALL,
    "dotall": re.DOTALL,
    "x": re.VERBOSE,
    "verbose": re.VERBOSE,
}


def _regex_flags(flags: Any) -> re.RegexFlag:
    """`flags` as given in a check or settings: "ims", ["IGNORECASE", "m"], or None.

    Raises:
        ValueError: an unknown flag.
    """
    if flags is None or flags == "":
        return re.RegexFlag(0)
    if isinstance(flags, str):
        words = [flags.lower()] if flags.lower() in _FLAG_NAMES else list(flags.lower())
    elif isinstance(flags, list):
        words = [str(f).lower() for f in flags]
    else:
        raise ValueError(f"regex flags must be a string or a list, not {flags!r}")
    result = re.RegexFlag(0)
    for word in words:
        if word not in _FLAG_NAMES:
            raise ValueError(f"unknown regex flag {word!r} (known: i, m, s, x)")
        result |= _FLAG_NAMES[word]
    return result


REGEX_SECONDS = 1.0
"""How long one regex check may search one answer (the pattern is the tenant's: a catastrophic one,
`(a+)+$`, would otherwise hold a worker for hours)."""


class RegexScorer(Scorer):
    """`regex.search(pattern, answer, flags)` finds a match. Pattern from each check, else settings.

    Patterns are Python `re` syntax, searched with the `regex` package (the same matching for that
    syntax) because it stops a search after `REGEX_SECONDS`: a search that takes longer raises, so
    the attempt is `incomplete` - the check's fault, not the agent's.

    A pattern kept redacted (it named a secret: `[REDACTED:aws_access_key]` stands where the key
    was) is searched for in the redacted space, as a text target is: each placeholder, written as
    kept or escaped (`\\[REDACTED:aws_access_key\\]`), matches itself as written
    (`redaction_patterns.pattern_placeholders_literal`), in the answer redacted by the same rules.
    A failure's reason never reads as a pass: it does not quote the answer when the pattern holds a
    placeholder or a secret, nor when the answer redacted (as every reason is kept) would match
    the pattern (`REDACTED`, `^the key is .{25}$` against an answer holding a key).

    A reason never quotes a piece of a secret the answer holds: a match that touches one
    (`(?<=AKIA)[A-Z0-9]{16}` matching an AWS key id's last 16 characters, `(?<=orgvalue-).{14}` the
    tail of an organization's stored value) is quoted widened to the whole secret, written as its
    placeholder (`matched '[REDACTED:aws_access_key]'`), and so is an answer a failure quotes
    (`AnswerSecrets`).
    """

    name = ScorerName.REGEX

    def applies(self, case: Case, settings: Settings) -> bool:
        return bool(check_params(case, self.name)) or settings.get("pattern") is not None

    def check_settings(self, settings: Settings, field: str) -> None:
        try:
            if settings.get("pattern") is not None:
                re.compile(str(settings["pattern"]), _regex_flags(settings.get("flags")))
            else:
                _regex_flags(settings.get("flags"))
        except (re.error, ValueError) as exc:
            raise InvalidInputError(f"bad regex: {exc}", field=f"{field}.pattern") from exc

    def check_params(self, params: Settings, field: str) -> None:
        if params.get("pattern") is None:
            raise InvalidInputError("a regex check needs a pattern", field=f"{field}.pattern")
        self.check_settings(params, field)

    def score(
        self, case: Case, answer: AgentAnswer, settings: Settings, known: Sequence[Known] = ()
    ) -> ScoreResult:
        sources = check_params(case, self.name) or [dict(settings)]
        verdicts = []
        for params in sources:
            if params.get("pattern") is None:
                raise ValueError("a regex check has no pattern")
            # Flags not given on the check fall back to the settings' flags.
            flags = _regex_flags(params.get("flags", settings.get("flags")))
            verdicts.append(_regex_verdict(str(params["pattern"]), flags, answer.answer, known))
        return _combine(self.name, verdicts)


_NOT_QUOTED_PATTERN = (
    " (the answer is not quoted: the pattern holds a secret, compared by its kind with the "
    "answer's secrets redacted)"
)
_NOT_QUOTED_REDACTED = (
    " (the answer is not quoted: it holds a secret, and redacted as every reason is kept it "
    "would seem to match)"
)


def _search(pattern: str, searched: str, flags: re.RegexFlag, subject: str) -> Any:
    """`regex.search` of `searched` (the pattern as run) in `subject`, stopped after
    `REGEX_SECONDS`.

    Raises:
        ValueError: the search took longer (named by `pattern`, as the check gives it).
    """
    import regex

    try:
        return regex.search(searched, subject, int(flags), timeout=REGEX_SECONDS)
    except TimeoutError as exc:
        raise ValueError(
            f"the regex /{pattern}/ searched this answer for over {REGEX_SECONDS:g} s "
            "(a pattern that backtracks catastrophically?)"
        ) from exc


def _regex_verdict(
    pattern: str, flags: re.RegexFlag, answer: str, known: Sequence[Known] = ()
) -> tuple[bool, str]:
    """(passed, reason) of one regex check against `answer` (see `RegexScorer`).

    A pattern holding a placeholder, escaped or not, is searched for in the answer redacted, each
    placeholder matching itself; its failure's reason does not quote the answer. Any other pattern
    is searched for in the answer as given; its failure's reason quotes the answer unless the
    pattern's literal text holds a secret (a pattern kept before patterns were redacted), or the
    answer holds a secret and, redacted (as the reason quotes it), would match the pattern. A
    match, and an answer, are quoted with each secret they touch (by shape, or among `known`)
    widened and written as its placeholder (`AnswerSecrets`): never a piece of a secret.

    Raises:
        ValueError: a search ran past `REGEX_SECONDS`.
    """
    if pattern_holds_placeholder(pattern):
        searched = redact(answer)
        found = _search(pattern, pattern_placeholders_literal(pattern), flags, searched)
        if found:
            shown = AnswerSecrets.of(searched, known).quote(*found.span())
            return True, f"/{pattern}/ matched {shown}"
        return False, f"no match for /{pattern}/{_NOT_QUOTED_PATTERN}"
    secrets = AnswerSecrets.of(answer, known)
    found = _search(pattern, pattern, flags, answer)
    if found:
        return True, f"/{pattern}/ matched {secrets.quote(*found.span())}"
    if find(unescape_pattern(pattern)[0]):
        # Kept redacted, the reason would show the pattern's secret as a placeholder beside the
        # answer's.
        return False, f"no match for /{pattern}/{_NOT_QUOTED_PATTERN}"
    redacted = secrets.redacted()
    if redacted != answer and _search(pattern, pattern, flags, redacted):
        return False, f"no match for /{pattern}/{_NOT_QUOTED_REDACTED}"
    return False, f"expected a match for /{pattern}/, got {secrets.quote()}"
