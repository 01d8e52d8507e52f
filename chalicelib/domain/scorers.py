"""Deterministic scorers and the grading rule (docs/reference/scorers.md).

A scorer looks at one answer to one case and says passed/failed with a score in 0..1 and a
reason a person can act on ("expected 18, got 26"). `grade` runs every *required* scorer
that applies to the case and turns their verdicts into the attempt's state:

- any scorer raised -> `incomplete` (its `ScoreResult` has `error=True`; the exception never
  leaves `grade`, so one broken check cannot break other cases), even beside a failure;
- any scorer that applies could not decide (`passed` None: the judge failed or was skipped) ->
  `incomplete` too, even beside a failure: the answer was not graded, and "grade again" decides
  it later (the judge's score is listed in the run's `ungraded_score_ids`);
- no required scorer applies -> `ungraded` (and only then);
- any scorer failed -> `failed`; every scorer that ran passed -> `passed`.

Neither `incomplete` nor `ungraded` is ever a pass (docs/concepts/verdicts.md).

Scorers live in `SCORERS` (name -> `Scorer`). A later scorer (the model judge) subclasses
`Scorer` and calls `register_scorer`; nothing else here needs to know about it.

Where a scorer's parameters come from: a case's `checks` naming the scorer (one verdict per
check, all must pass) take precedence; otherwise `ScoringConfig.settings[name]`; otherwise,
for the text scorers, the case's `reference`.

Pure: no I/O, no clock, no environment. `regex`, `jsonschema` and `referencing` are imported by
the checks that use them, so a Lambda's cold start pays for none of them (issue 12).
"""

from __future__ import annotations

import json
import re
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping, Sequence
from enum import StrEnum
from fractions import Fraction
from functools import cache
from typing import Any, ClassVar

from chalicelib.domain.enums import AttemptState
from chalicelib.domain.models import (
    AgentAnswer,
    Case,
    ExpectedCall,
    Grade,
    ScoreResult,
    ScoringConfig,
    ToolCall,
)
from chalicelib.errors import InvalidInputError

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
    if not text:
        return None
    markers = list(_MARKER.finditer(text))
    if markers:
        match = _NUMBER.search(text, markers[-1].end())
        return _number_value(match) if match else None
    found = list(_NUMBER.finditer(text))
    return _number_value(found[-1]) if found else None


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
    """`text` quoted for a reason, cut to `_SHOWN_CHARS` characters."""
    if len(text) > _SHOWN_CHARS:
        return repr(text[:_SHOWN_CHARS]) + "..."
    return repr(text)


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
    def score(self, case: Case, answer: AgentAnswer, settings: Settings) -> ScoreResult:
        """Grade `answer`. May raise on broken parameters; `grade` records that as an error."""

    def check_settings(self, settings: Settings, field: str) -> None:  # noqa: B027 - an optional hook: most scorers take any settings
        """Raise `InvalidInputError` (field under `field`) for settings this scorer cannot use."""

    def check_params(self, params: Settings, field: str) -> None:
        """Raise `InvalidInputError` (field under `field`) for a check this scorer cannot use."""
        self.check_settings(params, field)


# ---------------------------------------------------------------------------------------
# Text scorers
# ---------------------------------------------------------------------------------------


class _TextScorer(Scorer):
    """equals / contains / icontains: the answer against each check's `value`, else the
    reference.

    A check's `value` is one text, or a list of texts of which ANY may match (an Inspect sample's
    several targets, promptfoo's `contains-any`); every check must pass, as for every scorer.
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

    def score(self, case: Case, answer: AgentAnswer, settings: Settings) -> ScoreResult:
        return _combine(self.name, [self._any(answer.answer, t) for t in self._targets(case)])

    def _any(self, answer: str, targets: list[str]) -> tuple[bool, str]:
        """(passed, reason) of `answer` against one check's acceptable texts: the first that
        matches passes it; with several and none matching, the reason names them all."""
        verdicts = [self._verdict(answer, t) for t in targets]
        passing = next((v for v in verdicts if v[0]), None)
        if passing is not None or len(targets) == 1:
            return passing or verdicts[0]
        shown = ", ".join(_shown(t) for t in targets)
        return False, f"expected {self._expected_any(shown)}, got {_shown(answer)}"

    @abstractmethod
    def _verdict(self, answer: str, target: str) -> tuple[bool, str]:
        """(passed, reason) of `answer` against one target."""

    @abstractmethod
    def _expected_any(self, shown: str) -> str:
        """What a reason says was expected of the answer, given several acceptable texts."""


class EqualsScorer(_TextScorer):
    """The answer, stripped, is exactly the target, stripped (case-sensitive)."""

    name = ScorerName.EQUALS

    def _verdict(self, answer: str, target: str) -> tuple[bool, str]:
        got, want = answer.strip(), target.strip()
        if got == want:
            return True, f"answer equals {_shown(want)}"
        return False, f"expected {_shown(want)}, got {_shown(got)}"

    def _expected_any(self, shown: str) -> str:
        return f"one of {shown}"


class ContainsScorer(_TextScorer):
    """The answer contains the target verbatim."""

    name = ScorerName.CONTAINS

    def _verdict(self, answer: str, target: str) -> tuple[bool, str]:
        if target in answer:
            return True, f"answer contains {_shown(target)}"
        return False, f"expected the answer to contain {_shown(target)}, got {_shown(answer)}"

    def _expected_any(self, shown: str) -> str:
        return f"the answer to contain one of {shown}"


class IContainsScorer(_TextScorer):
    """The answer contains the target, ignoring case (Unicode casefold, so "STRASSE" ~ "straße")."""

    name = ScorerName.ICONTAINS

    def _verdict(self, answer: str, target: str) -> tuple[bool, str]:
        if target.casefold() in answer.casefold():
            return True, f"answer contains {_shown(target)} (ignoring case)"
        return False, (
            f"expected the answer to contain {_shown(target)} (ignoring case), got {_shown(answer)}"
        )

    def _expected_any(self, shown: str) -> str:
        return f"the answer to contain one of {shown} (ignoring case)"


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

    def score(self, case: Case, answer: AgentAnswer, settings: Settings) -> ScoreResult:
        import regex

        sources = check_params(case, self.name) or [dict(settings)]
        verdicts = []
        for params in sources:
            if params.get("pattern") is None:
                raise ValueError("a regex check has no pattern")
            # Flags not given on the check fall back to the settings' flags.
            flags = _regex_flags(params.get("flags", settings.get("flags")))
            pattern = str(params["pattern"])
            try:
                found = regex.search(pattern, answer.answer, int(flags), timeout=REGEX_SECONDS)
            except TimeoutError as exc:
                raise ValueError(
                    f"the regex /{pattern}/ searched this answer for over {REGEX_SECONDS:g} s "
                    "(a pattern that backtracks catastrophically?)"
                ) from exc
            if found:
                verdicts.append((True, f"/{pattern}/ matched {_shown(found.group(0))}"))
            else:
                verdicts.append(
                    (False, f"expected a match for /{pattern}/, got {_shown(answer.answer)}")
                )
        return _combine(self.name, verdicts)


# ---------------------------------------------------------------------------------------
# JSON
# ---------------------------------------------------------------------------------------


def _parse_json(text: str) -> tuple[Any, str | None]:
    """(document, None) when `text` is JSON, else (None, why not). Strict: no code fences."""
    try:
        return json.loads(text), None
    except json.JSONDecodeError as exc:
        return None, f"answer is not valid JSON ({exc.msg} at line {exc.lineno} column {exc.colno})"
    except RecursionError:
        return None, "answer is JSON nested too deeply to read"


class JsonValidScorer(Scorer):
    """The whole answer parses as JSON (surrounding whitespace allowed, nothing else)."""

    name = ScorerName.JSON_VALID

    def applies(self, case: Case, settings: Settings) -> bool:
        return True

    def score(self, case: Case, answer: AgentAnswer, settings: Settings) -> ScoreResult:
        _, error = _parse_json(answer.answer)
        if error:
            return ScoreResult(scorer=self.name, passed=False, score=0.0, reason=error)
        return ScoreResult(scorer=self.name, passed=True, score=1.0, reason="answer is valid JSON")


def _json_path(path: Sequence[Any]) -> str:
    """A jsonschema error path as "$.items[0].name"."""
    return "$" + "".join(f"[{p}]" if isinstance(p, int) else f".{p}" for p in path)


_REFERENCE_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")


@cache
def _no_retrieval() -> Any:
    """A registry that holds nothing and retrieves nothing: jsonschema adds the meta-schemas to it,
    so a schema's references resolve into itself or the meta-schemas only (never a URL or a file).

    jsonschema and referencing are imported on the first JSON Schema check, never at a cold start.
    """
    import referencing

    return referencing.Registry()


def _outside_references(schema: Any) -> list[str]:
    """The references in `schema` that point neither into it nor at a meta-schema (pure)."""
    from jsonschema_specifications import REGISTRY as META_SCHEMAS

    ids: set[str] = set()
    refs: list[str] = []

    def walk(node: Any) -> None:
        if isinstance(node, dict):
            for key, value in node.items():
                if key in ("$id", "id") and isinstance(value, str):
                    ids.add(value.split("#", 1)[0].rstrip("/"))
                elif key in _REFERENCE_KEYWORDS and isinstance(value, str):
                    refs.append(value)
                walk(value)
        elif isinstance(node, list):
            for item in node:
                walk(item)

    walk(schema)
    known = {uri.rstrip("/") for uri in META_SCHEMAS} | {
        uri.rstrip("#").rstrip("/") for uri in META_SCHEMAS
    }
    outside = []
    for ref in refs:
        base = ref.split("#", 1)[0].rstrip("/")
        if not base or base in ids or base in known or any(i.endswith("/" + base) for i in ids):
            continue
        outside.append(ref)
    return outside


EMBEDDED_JSON_TRIES = 50
"""How many `{` / `[` of an answer an `embedded` JSON check tries to read a JSON value from: an
answer of 1 MiB of unclosed brackets must not cost a worker more than that many reads."""


def _embedded_json(text: str) -> list[Any]:
    """The JSON objects and arrays written inside `text`, in order (prose, code fences and other
    text around them ignored; a value inside one found is not listed again).

    The whole text is read first; then a value is read from each `{` or `[` after the last one
    found, at most `EMBEDDED_JSON_TRIES` times.
    """
    whole, error = _parse_json(text)
    if error is None and isinstance(whole, dict | list):
        return [whole]
    decoder = json.JSONDecoder()
    found: list[Any] = []
    position = tries = 0
    while tries < EMBEDDED_JSON_TRIES:
        starts = [i for i in (text.find("{", position), text.find("[", position)) if i >= 0]
        if not starts:
            break
        start = min(starts)
        tries += 1
        try:
            value, end = decoder.raw_decode(text, start)
        except (ValueError, RecursionError):
            position = start + 1
            continue
        found.append(value)
        position = end
    return found


class JsonSchemaScorer(Scorer):
    """The answer is JSON valid against a JSON Schema (each check's `schema`, else settings').

    A check with `embedded: true` asks instead that the answer CONTAIN a JSON object or array
    valid against the schema, prose around it allowed (promptfoo's `contains-json`): any of the
    values `_embedded_json` finds may pass it.

    The schema's own `$schema` picks the draft (default: the latest `jsonschema` knows). A
    broken schema raises (`SchemaError`), so the attempt is `incomplete`, not `failed`: the
    fault is the check's, not the agent's.

    A schema is tenant input: its references (`$ref`, `$dynamicRef`, `$recursiveRef`) may point
    into the schema itself (`#...`, or a `$id` it defines) or at the JSON Schema meta-schemas,
    never elsewhere - jsonschema's default would fetch any URL (or `file:` path) the schema names,
    past every egress check (issue 9). Saving refuses other references; validating uses a registry
    that retrieves nothing, so one that slipped through is unresolvable (the attempt incomplete).
    """

    name = ScorerName.JSON_SCHEMA

    def applies(self, case: Case, settings: Settings) -> bool:
        return bool(check_params(case, self.name)) or settings.get("schema") is not None

    def check_settings(self, settings: Settings, field: str) -> None:
        schema = settings.get("schema")
        if schema is None:
            return
        import jsonschema.validators
        from jsonschema.exceptions import SchemaError

        try:
            jsonschema.validators.validator_for(schema).check_schema(schema)
        except SchemaError as exc:
            raise InvalidInputError(
                f"bad JSON schema: {exc.message}", field=f"{field}.schema"
            ) from exc
        outside = _outside_references(schema)
        if outside:
            raise InvalidInputError(
                f"the JSON schema refers to {outside[0]!r}, outside itself: a schema may refer "
                "only into itself ('#/...' or a $id it defines) or to the JSON Schema "
                "meta-schemas; assay never fetches a schema",
                field=f"{field}.schema",
            )

    def check_params(self, params: Settings, field: str) -> None:
        if params.get("schema") is None:
            raise InvalidInputError("a json_schema check needs a schema", field=f"{field}.schema")
        if not isinstance(params.get("embedded", False), bool):
            raise InvalidInputError("embedded must be true or false", field=f"{field}.embedded")
        self.check_settings(params, field)

    def score(self, case: Case, answer: AgentAnswer, settings: Settings) -> ScoreResult:
        checks = check_params(case, self.name) or [{"schema": settings.get("schema")}]
        whole, error = _parse_json(answer.answer)
        embedded: list[Any] | None = None
        verdicts = []
        for params in checks:
            schema = params.get("schema")
            if schema is None:
                raise ValueError("a json_schema check has no schema")
            if params.get("embedded") is True:
                if embedded is None:
                    embedded = _embedded_json(answer.answer)
                verdicts.append(self._any_matches(schema, embedded))
            elif error:
                verdicts.append((False, error))
            else:
                found = _schema_error(schema, whole)
                verdicts.append((True, "answer matches the schema") if found is None else found)
        return _combine(self.name, verdicts)

    @staticmethod
    def _any_matches(schema: Any, values: list[Any]) -> tuple[bool, str]:
        """(passed, reason): whether any of the JSON values found in an answer matches."""
        if not values:
            return False, "the answer holds no JSON object or array"
        problems = []
        for value in values:
            found = _schema_error(schema, value)
            if found is None:
                return True, "the answer holds JSON that matches the schema"
            problems.append(found[1])
        many = f" (the first of {len(values)} JSON values in it)" if len(values) > 1 else ""
        return False, f"{problems[0]}{many}"


def _schema_error(schema: Any, document: Any) -> tuple[bool, str] | None:
    """None when `document` is valid against `schema`, else (False, where and why not).

    Raises:
        jsonschema.exceptions.SchemaError: a broken schema (the attempt is then `incomplete`).
    """
    import jsonschema.validators
    from jsonschema.exceptions import best_match

    validator_cls = jsonschema.validators.validator_for(schema)
    validator_cls.check_schema(schema)
    worst = best_match(validator_cls(schema, registry=_no_retrieval()).iter_errors(document))
    if worst is None:
        return None
    where = _json_path(worst.absolute_path)
    return False, f"answer does not match the schema at {where}: {worst.message}"


# ---------------------------------------------------------------------------------------
# numeric_answer
# ---------------------------------------------------------------------------------------


def _tolerance(value: Any) -> Fraction:
    """A tolerance setting as an exact non-negative number.

    Raises:
        ValueError: not a number, or negative.
    """
    tolerance = _as_number(value, "tolerance")
    if tolerance < 0:
        raise ValueError(f"tolerance must not be negative, got {value!r}")
    return tolerance


class NumericAnswerScorer(Scorer):
    """The answer's final number equals the expected number within an absolute tolerance.

    Expected: each check's `value` (a number, or a text read by `final_number`), else the
    final number of the case's reference. Both sides are read by `final_number`, so a
    reference "#### 1,000" and an answer "... A: $1000." agree. Tolerance: the check's
    `tolerance`, else the settings' `tolerance`, else `DEFAULT_TOLERANCE` (absolute).
    """

    name = ScorerName.NUMERIC_ANSWER

    def applies(self, case: Case, settings: Settings) -> bool:
        if any(p.get("value") is not None for p in check_params(case, self.name)):
            return True
        return final_number(case.reference) is not None

    def check_settings(self, settings: Settings, field: str) -> None:
        if settings.get("tolerance") is not None:
            try:
                _tolerance(settings["tolerance"])
            except ValueError as exc:
                raise InvalidInputError(str(exc), field=f"{field}.tolerance") from exc

    def check_params(self, params: Settings, field: str) -> None:
        try:
            _as_number(params.get("value"), "value")
        except ValueError as exc:
            raise InvalidInputError(
                f"a numeric_answer check needs a numeric value: {exc}", field=f"{field}.value"
            ) from exc
        self.check_settings(params, field)

    def score(self, case: Case, answer: AgentAnswer, settings: Settings) -> ScoreResult:
        default = _tolerance(settings.get("tolerance", DEFAULT_TOLERANCE))
        checks = [p for p in check_params(case, self.name) if p.get("value") is not None]
        if checks:
            expectations = [
                (
                    _as_number(p["value"], "value"),
                    _tolerance(p["tolerance"]) if p.get("tolerance") is not None else default,
                )
                for p in checks
            ]
        else:
            expected = final_number(case.reference)
            if expected is None:
                raise ValueError("the reference has no number")
            expectations = [(expected, default)]
        got = final_number(answer.answer)
        verdicts = []
        for expected, tolerance in expectations:
            if got is None:
                verdicts.append(
                    (
                        False,
                        f"expected {format_number(expected)}, but the answer has no final number",
                    )
                )
            elif abs(got - expected) <= tolerance:
                verdicts.append(
                    (True, f"expected {format_number(expected)}, got {format_number(got)}")
                )
            else:
                verdicts.append(
                    (False, f"expected {format_number(expected)}, got {format_number(got)}")
                )
        return _combine(self.name, verdicts)


# ---------------------------------------------------------------------------------------
# tool_calls
# ---------------------------------------------------------------------------------------


def _same_json(a: Any, b: Any) -> bool:
    """JSON equality: like `==`, except true/false are not the numbers 1/0 (4 and 4.0 are equal)."""
    if isinstance(a, bool) or isinstance(b, bool):
        return type(a) is type(b) and a == b
    if isinstance(a, dict) and isinstance(b, dict):
        return a.keys() == b.keys() and all(_same_json(a[k], b[k]) for k in a)
    if isinstance(a, list) and isinstance(b, list):
        return len(a) == len(b) and all(_same_json(x, y) for x, y in zip(a, b, strict=True))
    return bool(a == b)


def _call_matches(expected: ExpectedCall, call: ToolCall) -> bool:
    """Same name, and every argument the expectation names has exactly that value."""
    if call.name != expected.name:
        return False
    if not expected.arguments:
        return True
    return all(
        key in call.arguments and _same_json(call.arguments[key], value)
        for key, value in expected.arguments.items()
    )


def _show_call(call: ExpectedCall) -> str:
    """An expected call for a reason: `search(query='tides')`, or `search` for a name-only one."""
    if call.arguments is None:
        return call.name
    args = ", ".join(f"{key}={value!r}" for key, value in call.arguments.items())
    return f"{call.name}({args})"


def _match_unordered(expected: Sequence[ExpectedCall], calls: Sequence[ToolCall]) -> list[bool]:
    """Which expected calls can each be given a DIFFERENT actual call (maximum bipartite matching).

    A greedy pass is wrong here: a name-only expectation could take the one call a stricter
    expectation needed. Sizes are tens at most, so the simple augmenting-path search is fine.
    """
    candidates = [
        [j for j, call in enumerate(calls) if _call_matches(exp, call)] for exp in expected
    ]
    owner: dict[int, int] = {}  # actual call index -> expected index holding it

    def assign(i: int, seen: set[int]) -> bool:
        for j in candidates[i]:
            if j in seen:
                continue
            seen.add(j)
            if j not in owner or assign(owner[j], seen):
                owner[j] = i
                return True
        return False

    for i in range(len(expected)):
        assign(i, set())
    held = set(owner.values())
    return [i in held for i in range(len(expected))]


def _match_ordered(expected: Sequence[ExpectedCall], calls: Sequence[ToolCall]) -> list[bool]:
    """Which expected calls appear, in order, as a subsequence of the calls (greedy is optimal)."""
    found = 0
    for call in calls:
        if found < len(expected) and _call_matches(expected[found], call):
            found += 1
    return [i < found for i in range(len(expected))]


class ToolCallsScorer(Scorer):
    """Every expected call was made: by name, and with the given arguments where there are any.

    Other calls are allowed, and so are extra argument keys. Each expected call needs its own
    call (two expected searches need two searches). Order is not required unless the setting
    `ordered` is true. Every call counts whatever its status (a blocked or intended call was
    still the agent's choice, which is what this judges).
    """

    name = ScorerName.TOOL_CALLS

    def applies(self, case: Case, settings: Settings) -> bool:
        return bool(case.expected_calls)

    def check_settings(self, settings: Settings, field: str) -> None:
        if not isinstance(settings.get("ordered", False), bool):
            raise InvalidInputError("ordered must be true or false", field=f"{field}.ordered")

    def score(self, case: Case, answer: AgentAnswer, settings: Settings) -> ScoreResult:
        ordered = settings.get("ordered", False) is True
        match = _match_ordered if ordered else _match_unordered
        found = match(case.expected_calls, answer.calls)
        missing = [
            _show_call(call) for call, ok in zip(case.expected_calls, found, strict=True) if not ok
        ]
        total = len(case.expected_calls)
        score = (total - len(missing)) / total
        if missing:
            how = "in order " if ordered else ""
            made = ", ".join(call.name for call in answer.calls) or "none"
            reason = (
                f"missing {how}{len(missing)} of {total} expected calls: {', '.join(missing)} "
                f"(calls made: {made})"
            )
            return ScoreResult(scorer=self.name, passed=False, score=score, reason=reason)
        return ScoreResult(
            scorer=self.name, passed=True, score=1.0, reason=f"all {total} expected calls made"
        )


# ---------------------------------------------------------------------------------------
# The model judge
# ---------------------------------------------------------------------------------------


class JudgeScorer(Scorer):
    """`judge`: a published judge grades the answer against its criteria
    (docs/concepts/verdicts.md).

    Settings: `{"judge_id": "...", "version": N}` - `version` pins a published judge version;
    without it the latest version at grading time grades. The service lays the resolved
    judge over the settings as `resolved: {"version", "spec", "fingerprint"}` before grading, so
    `applies` can see which criteria reach a case. The model request itself is made by the
    `judge` callable `grade` is given; this class never asks anything.
    """

    name = "judge"

    def applies(self, case: Case, settings: Settings) -> bool:
        from chalicelib.domain.judge_rules import JudgeSpec, applicable_criteria

        resolved = settings.get("resolved")
        if not resolved:
            return True
        return bool(applicable_criteria(case, JudgeSpec.model_validate(resolved["spec"]).criteria))

    def score(self, case: Case, answer: AgentAnswer, settings: Settings) -> ScoreResult:
        raise RuntimeError("the judge is asked through grade(judge=...)")

    def check_settings(self, settings: Settings, field: str) -> None:
        unknown = sorted(set(settings) - {"judge_id", "version"})
        if unknown:
            raise InvalidInputError(
                f"unknown judge setting {unknown[0]!r}", field=f"{field}.{unknown[0]}"
            )
        if not isinstance(settings.get("judge_id"), str) or not settings["judge_id"]:
            raise InvalidInputError("the judge scorer needs judge_id", field=f"{field}.judge_id")
        version = settings.get("version")
        if version is not None and (
            isinstance(version, bool) or not isinstance(version, int) or version < 1
        ):
            raise InvalidInputError(
                "judge version must be a positive integer (or absent: the latest)",
                field=f"{field}.version",
            )

    def check_params(self, params: Settings, field: str) -> None:
        raise InvalidInputError(
            "the judge is configured in scoring.settings.judge, not per case",
            field=f"{field}.scorer",
        )


JudgeFn = Callable[[Case, AgentAnswer, Settings], ScoreResult]
"""Asks the judge about one answer (settings as laid over by the service) and returns its score;
a judge that fails or is skipped returns a score with `passed` None, never raises."""


# ---------------------------------------------------------------------------------------
# Registry and grading
# ---------------------------------------------------------------------------------------

SCORERS: dict[str, Scorer] = {}
"""Every scorer by name. Grading and validation read only this."""


def register_scorer(scorer: Scorer) -> None:
    """Add (or replace) `scorer` under `scorer.name`; how a model judge joins later."""
    SCORERS[scorer.name] = scorer


for _scorer in (
    EqualsScorer(),
    ContainsScorer(),
    IContainsScorer(),
    RegexScorer(),
    JsonValidScorer(),
    JsonSchemaScorer(),
    NumericAnswerScorer(),
    ToolCallsScorer(),
    JudgeScorer(),
):
    register_scorer(_scorer)


def _settings(scoring: ScoringConfig, name: str) -> Settings:
    """The settings `scoring` gives scorer `name` (none given reads as empty)."""
    return scoring.settings.get(name, {})


def _required(scoring: ScoringConfig) -> list[str]:
    """Required names without repeats, in order (naming one twice must not count it twice)."""
    return list(dict.fromkeys(scoring.required))


def validate_scoring(scoring: ScoringConfig) -> None:
    """Refuse a scoring config that names a scorer we do not have or gives one bad settings.

    Raises:
        InvalidInputError: field `scoring.required[i]` for an unknown scorer name;
            `scoring.settings.<name>` for settings of an unknown scorer;
            `scoring.settings.<name>.<key>` for a bad setting (e.g. a regex that does not compile).
    """
    for i, name in enumerate(scoring.required):
        if name not in SCORERS:
            known = ", ".join(sorted(SCORERS))
            raise InvalidInputError(
                f"unknown scorer {name!r} (known: {known})", field=f"scoring.required[{i}]"
            )
    if JudgeScorer.name in scoring.required and JudgeScorer.name not in scoring.settings:
        raise InvalidInputError(
            "the judge scorer needs scoring.settings.judge = {judge_id, version?}",
            field="scoring.settings.judge",
        )
    for name, settings in scoring.settings.items():
        field = f"scoring.settings.{name}"
        if name not in SCORERS:
            raise InvalidInputError(f"settings for unknown scorer {name!r}", field=field)
        SCORERS[name].check_settings(settings, field)


def validate_checks(case: Case, field: str = "checks") -> None:
    """Refuse checks naming an unknown scorer or missing/bad parameters (e.g. a regex without
    pattern).

    Args:
        case: the case whose `checks` to read.
        field: prefix for the error's field; index and key are appended (`checks[1].pattern`).

    Raises:
        InvalidInputError: naming the check (and its key) at fault.
    """
    for i, check in enumerate(case.checks):
        scorer = SCORERS.get(check.scorer)
        if scorer is None:
            raise InvalidInputError(
                f"unknown scorer {check.scorer!r}", field=f"{field}[{i}].scorer"
            )
        scorer.check_params(dict(check.model_extra or {}), f"{field}[{i}]")


def applicable_scorers(case: Case, scoring: ScoringConfig) -> list[str]:
    """The required scorers that apply to `case`, in `scoring.required` order.

    A scorer whose `applies` raises counts as applicable: `grade` would run it and record the
    error, so the case is not ungraded. Unknown names never apply.
    """
    names = []
    for name in _required(scoring):
        scorer = SCORERS.get(name)
        if scorer is None:
            continue
        try:
            if scorer.applies(case, _settings(scoring, name)):
                names.append(name)
        except Exception:  # noqa: BLE001 - see docstring: grade will record it as an error
            names.append(name)
    return names


def is_gradable(case: Case, scoring: ScoringConfig) -> bool:
    """True when at least one required scorer applies, i.e. an answer can be `passed`/`failed`."""
    return bool(applicable_scorers(case, scoring))


def _error(name: str, exc: Exception) -> ScoreResult:
    """The verdict of a scorer that raised: undecided, flagged as an error, the exception named."""
    reason = f"scorer raised {type(exc).__name__}: {exc}"
    return ScoreResult(scorer=name, passed=None, score=0.0, error=True, reason=reason)


def grade(
    case: Case, answer: AgentAnswer, scoring: ScoringConfig, *, judge: JudgeFn | None = None
) -> Grade:
    """Grade one answer to one case (docs/concepts/verdicts.md: the attempt's `state`).

    Every required scorer that applies is run, in `scoring.required` order. The state:
    `incomplete` if any scorer raised (or is not registered) or could not decide (`passed` None:
    a judge that failed or was skipped), whatever the others said; `ungraded` if none applied;
    `failed` if any scorer failed; else `passed`.

    Args:
        case: the case asked.
        answer: what the agent answered (text and calls).
        scoring: the dataset version's scoring config.
        judge: asks the model judge when `judge` is required and applies; without one the judge
            is skipped and the answer is not graded by it (`passed` None).

    Returns:
        The `Grade`: its state, every `ScoreResult` (only scorers that applied), and a reason
        naming what decided it. Never raises for a scorer's sake.
    """
    scores: list[ScoreResult] = []
    for name in _required(scoring):
        scorer = SCORERS.get(name)
        if scorer is None:
            # A config from before a scorer was removed: the case cannot be decided, and
            # saying so beats crashing the worker for every case.
            unknown = ScoreResult(
                scorer=name, passed=None, error=True, reason=f"unknown scorer {name!r}"
            )
            scores.append(unknown)
            continue
        settings = _settings(scoring, name)
        try:
            if not scorer.applies(case, settings):
                continue
            if name == JudgeScorer.name:
                scores.append(
                    judge(case, answer, settings)
                    if judge is not None
                    else ScoreResult(scorer=name, passed=None, reason="judge skipped: not asked")
                )
                continue
            scores.append(scorer.score(case, answer, settings))
        except Exception as exc:  # noqa: BLE001 - a scorer raising must stay this attempt's problem
            scores.append(_error(name, exc))

    return combine(scores, scoring)


def combine(scores: Sequence[ScoreResult], scoring: ScoringConfig) -> Grade:
    """The grade that `scores` (each applicable scorer's verdict) give an answer; see `grade`.

    The rule (docs/reference/scorers.md): a scorer that raised - or, for the judge, failed or was
    skipped - makes the attempt `incomplete`; `ungraded` is only for an answer no required scorer
    applies to. Grading again replaces one score and combines the set anew, so an `incomplete`
    answer whose judge now grades it becomes `passed` or `failed`.
    """
    scores = list(scores)
    if not scores:
        reason = f"no required scorer applies (required: {', '.join(_required(scoring))})"
        return Grade(state=AttemptState.UNGRADED, scores=scores, reason=reason)
    errors = [s for s in scores if s.error]
    undecided = [s for s in scores if s.passed is None and not s.error]
    if errors or undecided:
        reason = "; ".join(
            [f"{s.scorer}: {s.reason}" for s in errors]
            + [f"{s.scorer} could not decide: {s.reason}" for s in undecided]
        )
        return Grade(state=AttemptState.INCOMPLETE, scores=scores, reason=reason)
    failed = [s for s in scores if s.passed is False]
    if failed:
        reason = "; ".join(f"{s.scorer}: {s.reason}" for s in failed)
        return Grade(state=AttemptState.FAILED, scores=scores, reason=reason)
    reason = "; ".join(f"{s.scorer}: {s.reason}" for s in scores)
    return Grade(state=AttemptState.PASSED, scores=scores, reason=reason)
