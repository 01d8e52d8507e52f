"""The scorers of what an answer says or does beyond its wording: `numeric_answer` (its final
number, within a tolerance) and `tool_calls` (the calls it made) (docs/reference/scorers.md).

Pure: no I/O, no clock, no environment.
"""

from __future__ import annotations

from collections.abc import Sequence
from fractions import Fraction
from typing import Any

from chalicelib.domain.models import AgentAnswer, Case, ExpectedCall, ScoreResult, ToolCall
from chalicelib.domain.redaction import Known, redact, redact_value, value_holds_placeholder
from chalicelib.domain.scorer_base import (
    DEFAULT_TOLERANCE,
    AnswerSecrets,
    Scorer,
    ScorerName,
    Settings,
    _as_number,
    _combine,
    check_params,
    final_number,
    final_number_at,
    format_number,
)
from chalicelib.errors import InvalidInputError

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

    The reason quotes the answer's final number unless it is written inside a secret the answer
    holds (the digits of an organization's stored value `pin-83920174`): then it says so instead.
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

    def score(
        self, case: Case, answer: AgentAnswer, settings: Settings, known: Sequence[Known] = ()
    ) -> ScoreResult:
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
        at = final_number_at(answer.answer)
        got = at[0] if at else None
        shown = format_number(got) if got is not None else ""
        if at and AnswerSecrets.of(answer.answer, known).touches(at[1], at[2]):
            shown = "a number written inside a secret the answer holds (not quoted)"
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
                verdicts.append((True, f"expected {format_number(expected)}, got {shown}"))
            else:
                verdicts.append((False, f"expected {format_number(expected)}, got {shown}"))
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


def holds_secret(call: ExpectedCall) -> bool:
    """Whether an expected call was kept redacted: its name or an argument (key or value, at any
    depth) holds a placeholder (`{"key": "[REDACTED:aws_access_key]"}`)."""
    return value_holds_placeholder(call.name) or value_holds_placeholder(call.arguments)


def redacted_call(call: ToolCall) -> ToolCall:
    """`call` as it is kept: its name and arguments redacted by the same rules as a case (an
    argument's value read after its key, `redaction.redact_value`)."""
    return call.model_copy(
        update={"name": redact(call.name), "arguments": redact_value(call.arguments)}
    )


def compared_calls(
    expected: Sequence[ExpectedCall], calls: Sequence[ToolCall]
) -> list[Sequence[ToolCall]]:
    """For each expected call, the calls it is compared with: in the redacted space
    (`redacted_call`) when it holds a placeholder, so that a call with a secret of that kind
    stands where the placeholder does; else the calls as made."""
    if not any(holds_secret(e) for e in expected):
        return [calls] * len(expected)
    redacted = [redacted_call(c) for c in calls]
    return [redacted if holds_secret(e) else calls for e in expected]


def _match_unordered(expected: Sequence[ExpectedCall], calls: Sequence[ToolCall]) -> list[bool]:
    """Which expected calls can each be given a DIFFERENT actual call (maximum bipartite matching).

    A greedy pass is wrong here: a name-only expectation could take the one call a stricter
    expectation needed. Sizes are tens at most, so the simple augmenting-path search is fine.
    An expected call holding a placeholder is compared in the redacted space (`compared_calls`).
    """
    views = compared_calls(expected, calls)
    candidates = [
        [j for j, call in enumerate(views[i]) if _call_matches(exp, call)]
        for i, exp in enumerate(expected)
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
    """Which expected calls appear, in order, as a subsequence of the calls (greedy is optimal).
    An expected call holding a placeholder is compared in the redacted space (`compared_calls`)."""
    views = compared_calls(expected, calls)
    found = 0
    for j in range(len(calls)):
        if found < len(expected) and _call_matches(expected[found], views[found][j]):
            found += 1
    return [i < found for i in range(len(expected))]


class ToolCallsScorer(Scorer):
    """Every expected call was made: by name, and with the given arguments where there are any.

    Other calls are allowed, and so are extra argument keys. Each expected call needs its own
    call (two expected searches need two searches). Order is not required unless the setting
    `ordered` is true. Every call counts whatever its status (a blocked or intended call was
    still the agent's choice, which is what this judges).

    An expected call kept redacted (its arguments named a secret, saved as
    `[REDACTED:aws_access_key]`) is compared in the redacted space, as a text check is: each call's
    name and arguments are redacted by the same rules first, so a call passing a key of that kind
    matches (an organization's own stored values, kept as `[REDACTED:secret]`, are recognized by
    shape only, so such an expectation cannot match). A failure's reason names the expected calls
    as kept and the calls made by name only, never their arguments.
    """

    name = ScorerName.TOOL_CALLS

    def applies(self, case: Case, settings: Settings) -> bool:
        return bool(case.expected_calls)

    def check_settings(self, settings: Settings, field: str) -> None:
        if not isinstance(settings.get("ordered", False), bool):
            raise InvalidInputError("ordered must be true or false", field=f"{field}.ordered")

    def score(
        self, case: Case, answer: AgentAnswer, settings: Settings, known: Sequence[Known] = ()
    ) -> ScoreResult:
        ordered = settings.get("ordered", False) is True
        match = _match_ordered if ordered else _match_unordered
        found = match(case.expected_calls, answer.calls)
        secret = any(holds_secret(call) for call in case.expected_calls)
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
                f"(calls made: {made}{_BY_KIND if secret else ''})"
            )
            return ScoreResult(scorer=self.name, passed=False, score=score, reason=reason)
        reason = f"all {total} expected calls made"
        if secret:
            reason += " (secrets compared by their kind)"
        return ScoreResult(scorer=self.name, passed=True, score=1.0, reason=reason)


_BY_KIND = (
    "; arguments holding a secret are compared by their kind, with the calls' secrets redacted"
)
