"""Pure rules of a comparison: a candidate against its baseline, case by case.

The rules docs/concepts/verdicts.md describes, from choosing the baseline to the two axes, and
the per-tag summaries. A first answer that flipped counts only once its reruns confirm it, so
the verdict reads confirmed flips alone; the pass rates settle each case by the majority of its
decided tries (`runs.settle`) so that they agree with the flips. Quality and efficiency are
reported side by side and never folded into one number.

Everything here takes plain data and returns plain data. The one heavy dependency, scipy (for the
exact McNemar test), is imported inside `mcnemar`: it takes seconds to import, and most callers
of this module never need it.
"""

from __future__ import annotations

import hashlib
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field, fields
from fractions import Fraction
from typing import Any

from chalicelib.domain.enums import (
    AttemptState,
    CaseOutcome,
    ComparisonVerdict,
    EfficiencyAxis,
)
from chalicelib.domain.run_rules import ArmSummary, AttemptFacts, summarize_arm
from chalicelib.domain.spec import canonical_json

__all__ = [
    "CaseOutcome",
    "ComparisonVerdict",
    "EfficiencyAxis",
    "Flip",
    "ComparisonResult",
    "Efficiency",
    "NOTE_NOTHING_HELD",
    "NOTE_PASS_RATES_APART",
    "NOTE_UNCONFIRMED_WITHOUT_RERUNS",
    "case_fingerprint",
    "compare_case",
    "confirmed",
    "comparison_verdict",
    "mcnemar",
    "wilson_interval",
    "efficiency_axis",
    "efficiency_of",
    "efficiency_axes",
    "compare_arms",
    "rerun_tasks",
    "stability",
    "summarize_by_tag",
]

_DECIDED = (AttemptState.PASSED, AttemptState.FAILED)
_FLIPS = (CaseOutcome.REGRESSION, CaseOutcome.FIXED)

FINGERPRINT_PARTS: Mapping[str, Any] = {
    "input": "",
    "history": [],
    "reference": None,
    "counter_example": None,
    "expected_calls": [],
    "checks": [],
}
"""The parts of a case that define it for a comparison, each with the value an absent part takes."""

NOTE_NOTHING_HELD = "Nothing held, but {n} cases changed once."
NOTE_PASS_RATES_APART = "The pass rates are {n} points apart."
NOTE_UNCONFIRMED_WITHOUT_RERUNS = (
    "None of its flips is confirmed: the run was compared without reruns."
)
PASS_RATES_APART_POINTS = 20
"""Pass rates this many percentage points apart (or more) are worth a note when nothing held."""
NOTHING_HELD_FLIPS = 3
"""This many first-answer flips (or more), none confirmed, are worth a note."""


# --- One case ------------------------------------------------------------------------------------


def case_fingerprint(case: Mapping[str, Any]) -> str:
    """sha256 hex digest of the canonical JSON of the parts that define a case for comparison.

    The rule (docs/concepts/verdicts.md): a case whose input, history, reference answer,
    counter-example, expected calls or checks changed between the two sides is `changed`; a change
    of its tags or note does not count (nor does its split or metadata). An absent part counts as
    its default (`history: []` and no `history` give the same fingerprint), so a stored row and a
    `Case.model_dump(mode="json")` of it agree.

    Args:
        case: the case as a JSON-shaped dict; keys other than the defining parts are ignored.
    """
    parts = {
        key: default if case.get(key) is None else case[key]
        for key, default in FINGERPRINT_PARTS.items()
    }
    return hashlib.sha256(canonical_json(parts).encode("utf-8")).hexdigest()


def compare_case(
    candidate_first: AttemptState | None,
    baseline_first: AttemptState | None,
    *,
    candidate_fp: str | None,
    baseline_fp: str | None,
) -> CaseOutcome:
    """How one case compares, on the first answers of the two sides.

    The rule (docs/concepts/verdicts.md), in this order: a case only one side answered is
    `not_compared`; a case whose fingerprints differ is `changed` (fingerprints are compared only
    when both are known); a case either side left undecided (incomplete or ungraded) is
    `incomplete`; passed then failed is a `regression`; failed then passed is `fixed`; the rest is
    `unchanged`.

    Args:
        candidate_first: the candidate's first answer, None when it has none.
        baseline_first: the baseline's first answer, None when it has none.
        candidate_fp: the case's fingerprint on the candidate's dataset version.
        baseline_fp: the case's fingerprint on the baseline's dataset version.
    """
    if candidate_first is None or baseline_first is None:
        return CaseOutcome.NOT_COMPARED
    if candidate_fp is not None and baseline_fp is not None and candidate_fp != baseline_fp:
        return CaseOutcome.CHANGED
    if candidate_first not in _DECIDED or baseline_first not in _DECIDED:
        return CaseOutcome.INCOMPLETE
    if baseline_first is AttemptState.PASSED and candidate_first is AttemptState.FAILED:
        return CaseOutcome.REGRESSION
    if baseline_first is AttemptState.FAILED and candidate_first is AttemptState.PASSED:
        return CaseOutcome.FIXED
    return CaseOutcome.UNCHANGED


def confirmed(
    outcome: CaseOutcome,
    candidate_reruns: Sequence[AttemptState],
    baseline_reruns: Sequence[AttemptState] | None,
) -> bool:
    """True when a flip held on every rerun of both sides.

    The rule (docs/concepts/verdicts.md): a regression is confirmed when every rerun of
    the candidate fails again and every rerun of the baseline passes again; a fix mirrors it. A
    side with no rerun confirms nothing, and an undecided rerun (incomplete or ungraded) does not
    hold, so more reruns confirm fewer flips. `baseline_reruns=None` is the one baseline that is
    not rerun - the candidate itself at an earlier time - and the candidate's reruns alone decide.

    Args:
        outcome: the case's outcome on first answers; anything but a flip is never confirmed.
        candidate_reruns: the candidate's reruns (attempts 2, 3, ...), first answer excluded.
        baseline_reruns: the baseline's reruns, or None when the baseline is not rerun.
    """
    if outcome is CaseOutcome.REGRESSION:
        candidate_again, baseline_again = AttemptState.FAILED, AttemptState.PASSED
    elif outcome is CaseOutcome.FIXED:
        candidate_again, baseline_again = AttemptState.PASSED, AttemptState.FAILED
    else:
        return False
    if not _all_are(candidate_reruns, candidate_again):
        return False
    return baseline_reruns is None or _all_are(baseline_reruns, baseline_again)


def _all_are(states: Sequence[AttemptState], wanted: AttemptState) -> bool:
    return len(states) > 0 and all(s is wanted for s in states)


# --- The verdict ---------------------------------------------------------------------------------


def comparison_verdict(
    confirmed_regressions: int, confirmed_fixes: int, *, invalid: bool
) -> ComparisonVerdict:
    """The comparison's verdict from its confirmed flips only.

    The rule (docs/concepts/verdicts.md): one confirmed regression makes the candidate `worse`,
    confirmed fixes alone make it `better`, both make it `mixed`, no confirmed flip is
    `no_difference`. A comparison a different judge made invalid (docs/guides/judges.md) is
    `invalid` whatever its flips.
    """
    if invalid:
        return ComparisonVerdict.INVALID
    if confirmed_regressions > 0 and confirmed_fixes > 0:
        return ComparisonVerdict.MIXED
    if confirmed_regressions > 0:
        return ComparisonVerdict.WORSE
    if confirmed_fixes > 0:
        return ComparisonVerdict.BETTER
    return ComparisonVerdict.NO_DIFFERENCE


def mcnemar(b: int, c: int, significance: float) -> tuple[float | None, ComparisonVerdict | None]:
    """The exact two-sided McNemar test over the confirmed flips, and the `overall` it gives.

    The rule (docs/concepts/verdicts.md): `overall` is `worse` or `better` when the test tells the
    two sides apart at `EVAL_SIGNIFICANCE`, and null when the flips are too few. The exact test is a
    binomial test of `b` successes in `b + c` trials at one half; scipy is imported here only.

    Args:
        b: confirmed regressions (passed on the baseline, failed on the candidate).
        c: confirmed fixes.
        significance: `EVAL_SIGNIFICANCE`; `p < significance` tells the sides apart.

    Returns:
        `(p_value, overall)`; `(None, None)` when there is no flip at all. `overall` is a
        `ComparisonVerdict` (`worse`/`better`, a `str`) or None.

    Raises:
        ValueError: a negative count.
    """
    if b < 0 or c < 0:
        raise ValueError(f"flip counts cannot be negative: b={b}, c={c}")
    if b + c == 0:
        return None, None
    from scipy.stats import binomtest  # noqa: PLC0415 - seconds to import; only this rule needs it

    p = float(binomtest(b, b + c, 0.5).pvalue)
    if p < significance and b > c:
        return p, ComparisonVerdict.WORSE
    if p < significance and c > b:
        return p, ComparisonVerdict.BETTER
    return p, None


def wilson_interval(
    passed: int, n: int, z: float = 1.959963984540054
) -> tuple[float, float] | None:
    """The Wilson score interval of a pass rate (95 % by default), exactly 0 and 1 at its ends.

    The interval a run shows beside each pass rate (issue 3, "Summaries per arm"): unlike the
    normal approximation it stays inside [0, 1] and is not empty at 0 % or 100 %.

    Args:
        passed: decided cases that passed.
        n: decided cases; None is returned for 0.
        z: the standard normal quantile of the confidence level.

    Raises:
        ValueError: `passed` outside `0..n`.
    """
    if n == 0:
        return None
    if not 0 <= passed <= n:
        raise ValueError(f"passed must be within 0..n: passed={passed}, n={n}")
    p = passed / n
    z2 = z * z
    denominator = 1 + z2 / n
    centre = (p + z2 / (2 * n)) / denominator
    half = z * math.sqrt(p * (1 - p) / n + z2 / (4 * n * n)) / denominator
    low = 0.0 if passed == 0 else max(0.0, centre - half)
    high = 1.0 if passed == n else min(1.0, centre + half)
    return low, high


# --- Efficiency ----------------------------------------------------------------------------------


def efficiency_axis(
    candidate: float | None, baseline: float | None, tolerance: float
) -> EfficiencyAxis | None:
    """How a lower-is-better quantity moved from the baseline to the candidate.

    The rule (docs/concepts/verdicts.md): each of cost per passed case, tokens and latency is
    `better`, `worse` or `unchanged`, a change within `EVAL_EFFICIENCY_TOLERANCE` being unchanged
    (a relative change exactly at the tolerance is within it). From a zero baseline any positive
    increase is `worse`.

    Args:
        candidate: the candidate's value, None when it has none (e.g. no passed case to divide by).
        baseline: the baseline's value, None when it has none.
        tolerance: the relative change still counted as unchanged, e.g. 0.05.

    Returns:
        The axis, or None when either side has no value.

    Raises:
        ValueError: a negative tolerance or a negative baseline.
    """
    if tolerance < 0:
        raise ValueError(f"tolerance cannot be negative: {tolerance}")
    if candidate is None or baseline is None:
        return None
    if baseline < 0:
        raise ValueError(f"a lower-is-better quantity cannot be negative: {baseline}")
    if baseline == 0:
        return EfficiencyAxis.WORSE if candidate > 0 else EfficiencyAxis.UNCHANGED
    change = (candidate - baseline) / baseline
    if change > tolerance:
        return EfficiencyAxis.WORSE
    if change < -tolerance:
        return EfficiencyAxis.BETTER
    return EfficiencyAxis.UNCHANGED


@dataclass(frozen=True, slots=True)
class Efficiency:
    """One arm's efficiency axis (docs/concepts/verdicts.md): every value lower is better."""

    cost_per_passed_case_micros: float | None
    """Everything the arm spent, over its settled passed cases; None with no passed case."""
    tokens_per_case: float | None
    """Input plus output tokens over the arm's cases; None with no case."""
    latency_p50_ms: float | None
    """Median latency of the answers that came back."""
    latency_p95_ms: float | None
    """95th-percentile latency of the answers that came back."""


def efficiency_of(summary: ArmSummary) -> Efficiency:
    """The efficiency quantities of one arm's summary (docs/concepts/verdicts.md, the Efficiency
    row)."""
    return Efficiency(
        cost_per_passed_case_micros=(summary.cost_micros / summary.passed)
        if summary.passed
        else None,
        tokens_per_case=((summary.input_tokens + summary.output_tokens) / summary.cases)
        if summary.cases
        else None,
        latency_p50_ms=summary.latency_p50_ms,
        latency_p95_ms=summary.latency_p95_ms,
    )


def efficiency_axes(
    candidate: ArmSummary, baseline: ArmSummary, tolerance: float
) -> dict[str, EfficiencyAxis | None]:
    """Each efficiency quantity of the candidate against the baseline, by `Efficiency` field name.

    The rule (docs/concepts/verdicts.md): reported beside the verdict, never folded into it.
    """
    cand, base = efficiency_of(candidate), efficiency_of(baseline)
    return {
        name: efficiency_axis(getattr(cand, name), getattr(base, name), tolerance)
        for name in (f.name for f in fields(Efficiency))
    }


# --- Two arms ------------------------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class Flip:
    """A case whose first answers flipped, and whether its reruns confirmed it."""

    case_id: str
    """The case's stable id."""
    outcome: CaseOutcome
    """`regression` or `fixed`, on first answers."""
    confirmed: bool
    """True when the flip held on every rerun of both sides (never in an invalid comparison)."""
    question: str
    """The case's question, so the flip names it (docs/concepts/verdicts.md)."""
    candidate_tries: tuple[AttemptState, ...]
    """The candidate's tries, first answer first."""
    baseline_tries: tuple[AttemptState, ...]
    """The baseline's tries, first answer first."""

    def as_dict(self) -> dict[str, Any]:
        """The API JSON of the flip."""
        return {
            "case_id": self.case_id,
            "outcome": self.outcome.value,
            "confirmed": self.confirmed,
            "question": self.question,
            "candidate_tries": [s.value for s in self.candidate_tries],
            "baseline_tries": [s.value for s in self.baseline_tries],
        }


@dataclass(frozen=True, slots=True)
class ComparisonResult:
    """A candidate arm compared with its baseline (docs/concepts/verdicts.md)."""

    verdict: ComparisonVerdict
    """On confirmed flips only; `invalid` when the grading differed."""
    overall: ComparisonVerdict | None
    """Exact McNemar over the confirmed flips: `worse`, `better`, or None."""
    p_value: float | None
    """McNemar's two-sided p-value; None with no confirmed flip (or an invalid comparison)."""
    counts: Mapping[CaseOutcome, int]
    """Cases per outcome on first answers, every outcome present."""
    outcomes: Mapping[str, CaseOutcome]
    """Each case's outcome by case id (for filtering a run's cases)."""
    flips: tuple[Flip, ...]
    """Every regression and fix on first answers, in case order."""
    confirmed_regressions: int
    """Regressions that held on every rerun."""
    confirmed_fixes: int
    """Fixes that held on every rerun."""
    pass_rate_before: float | None
    """The baseline's settled pass rate over its decided cases."""
    pass_rate_after: float | None
    """The candidate's settled pass rate over its decided cases."""
    first_pass_rate_before: float | None
    """The baseline's pass rate on first answers alone."""
    first_pass_rate_after: float | None
    """The candidate's pass rate on first answers alone."""
    interval_before: tuple[float, float] | None
    """95 % Wilson interval of `pass_rate_before`."""
    interval_after: tuple[float, float] | None
    """95 % Wilson interval of `pass_rate_after`."""
    invalid_reason: str | None = None
    """Why the comparison gives no verdict (a different judge or scoring), else None."""
    notes: tuple[str, ...] = field(default_factory=tuple)
    """Sentences the run's page shows beside the verdict."""

    def as_dict(self) -> dict[str, Any]:
        """The API JSON of the comparison (per-case outcomes are left to the cases listing)."""
        return {
            "verdict": self.verdict.value,
            "overall": self.overall.value if self.overall is not None else None,
            "p_value": self.p_value,
            "invalid_reason": self.invalid_reason,
            "counts": {o.value: self.counts.get(o, 0) for o in CaseOutcome},
            "confirmed_regressions": self.confirmed_regressions,
            "confirmed_fixes": self.confirmed_fixes,
            "flips": [f.as_dict() for f in self.flips],
            "pass_rate_before": self.pass_rate_before,
            "pass_rate_after": self.pass_rate_after,
            "first_pass_rate_before": self.first_pass_rate_before,
            "first_pass_rate_after": self.first_pass_rate_after,
            "interval_before": list(self.interval_before) if self.interval_before else None,
            "interval_after": list(self.interval_after) if self.interval_after else None,
            "notes": list(self.notes),
        }


def compare_arms(
    candidate: Mapping[str, Sequence[AttemptFacts]],
    baseline: Mapping[str, Sequence[AttemptFacts]],
    *,
    candidate_fps: Mapping[str, str],
    baseline_fps: Mapping[str, str],
    baseline_rerun: bool,
    reruns_expected: int,
    invalid_reason: str | None,
    significance: float,
    questions: Mapping[str, str],
) -> ComparisonResult:
    """Compare a candidate arm with its baseline, case by case, and give the verdict.

    The rules of docs/concepts/verdicts.md: outcomes on first answers, flips confirmed by reruns,
    the verdict, `overall` and settled pass rates; a comparison a different judge made invalid
    (docs/guides/judges.md) is `invalid`: no verdict, no flip confirmed, no `overall`.

    A side's first answer is its attempt 1; its reruns are attempts 2 and on. A rerun that was
    expected but never recorded counts as undecided, so it confirms nothing. The pass rates settle
    each side over its own cases by `runs.summarize_arm`. Notes: "Nothing held" when no flip was
    confirmed but three or more flipped; the pass rates' distance when no flip was confirmed and
    they are 20 points apart or more (neither in an invalid comparison, whose flips say nothing);
    and, with no reruns at all, that none of its flips is confirmed.

    Args:
        candidate: every attempt of the candidate arm, by case id.
        baseline: every attempt of the baseline arm, by case id.
        candidate_fps: `case_fingerprint` of each case on the candidate's dataset version.
        baseline_fps: `case_fingerprint` of each case on the baseline's dataset version.
        baseline_rerun: False for the one baseline that is not rerun (the candidate itself at an
            earlier time); its flips are confirmed by the candidate's reruns alone.
        reruns_expected: `EVAL_RERUNS` as the run asked for it (0 confirms nothing).
        invalid_reason: why the grading of the two sides differs, or None when it does not.
        significance: `EVAL_SIGNIFICANCE` for the McNemar test.
        questions: each case's question, named by its flip.
    """
    invalid = invalid_reason is not None
    case_ids = list(dict.fromkeys([*candidate, *baseline]))
    counts = {o: 0 for o in CaseOutcome}
    outcomes: dict[str, CaseOutcome] = {}
    flips: list[Flip] = []
    for case_id in case_ids:
        cand_tries = _tries(candidate.get(case_id, ()))
        base_tries = _tries(baseline.get(case_id, ()))
        outcome = compare_case(
            _first(cand_tries),
            _first(base_tries),
            candidate_fp=candidate_fps.get(case_id),
            baseline_fp=baseline_fps.get(case_id),
        )
        counts[outcome] += 1
        outcomes[case_id] = outcome
        if outcome not in _FLIPS:
            continue
        held = not invalid and confirmed(
            outcome,
            _reruns(cand_tries, reruns_expected),
            _reruns(base_tries, reruns_expected) if baseline_rerun else None,
        )
        flips.append(
            Flip(
                case_id=case_id,
                outcome=outcome,
                confirmed=held,
                question=questions.get(case_id, ""),
                candidate_tries=tuple(a.state for a in cand_tries),
                baseline_tries=tuple(a.state for a in base_tries),
            )
        )
    regressions = sum(1 for f in flips if f.confirmed and f.outcome is CaseOutcome.REGRESSION)
    fixes = sum(1 for f in flips if f.confirmed and f.outcome is CaseOutcome.FIXED)
    p_value, overall = (None, None) if invalid else mcnemar(regressions, fixes, significance)
    after = summarize_arm(_all(candidate), list(candidate))
    before = summarize_arm(_all(baseline), list(baseline))
    return ComparisonResult(
        verdict=comparison_verdict(regressions, fixes, invalid=invalid),
        overall=overall,
        p_value=p_value,
        counts=counts,
        outcomes=outcomes,
        flips=tuple(flips),
        confirmed_regressions=regressions,
        confirmed_fixes=fixes,
        pass_rate_before=before.pass_rate,
        pass_rate_after=after.pass_rate,
        first_pass_rate_before=before.first_pass_rate,
        first_pass_rate_after=after.first_pass_rate,
        interval_before=wilson_interval(before.passed, before.decided),
        interval_after=wilson_interval(after.passed, after.decided),
        invalid_reason=invalid_reason,
        notes=tuple(_notes(flips, before, after, invalid=invalid, reruns_expected=reruns_expected)),
    )


def _tries(attempts: Iterable[AttemptFacts]) -> list[AttemptFacts]:
    return sorted(attempts, key=lambda a: a.attempt)


def _first(tries: Sequence[AttemptFacts]) -> AttemptState | None:
    return next((a.state for a in tries if a.attempt == 1), None)


def _reruns(tries: Sequence[AttemptFacts], expected: int) -> list[AttemptState]:
    states = [a.state for a in tries if a.attempt >= 2]
    return states + [AttemptState.INCOMPLETE] * max(0, expected - len(states))


def _all(by_case: Mapping[str, Sequence[AttemptFacts]]) -> list[AttemptFacts]:
    return [a for tries in by_case.values() for a in tries]


def _notes(
    flips: Sequence[Flip],
    before: ArmSummary,
    after: ArmSummary,
    *,
    invalid: bool,
    reruns_expected: int,
) -> list[str]:
    notes: list[str] = []
    if reruns_expected == 0:
        notes.append(NOTE_UNCONFIRMED_WITHOUT_RERUNS)
    if invalid or any(f.confirmed for f in flips):
        return notes
    if len(flips) >= NOTHING_HELD_FLIPS:
        notes.append(NOTE_NOTHING_HELD.format(n=len(flips)))
    if before.decided and after.decided:
        apart = (
            abs(Fraction(after.passed, after.decided) - Fraction(before.passed, before.decided))
            * 100
        )
        if apart >= PASS_RATES_APART_POINTS:
            notes.append(NOTE_PASS_RATES_APART.format(n=math.floor(apart + Fraction(1, 2))))
    return notes


def rerun_tasks(
    flipped_case_ids: Sequence[str],
    candidate_arm_ids: Sequence[str],
    baseline_arm_id: str | None,
    reruns: int,
) -> list[tuple[str, str, int]]:
    """The tasks of the confirming phase, as `(arm_id, case_id, attempt)`.

    The rule (docs/concepts/verdicts.md): a flipped case is rerun `EVAL_RERUNS` times
    on the candidate and beside it on the baseline, so both sides confirm a flip the same day -
    except the baseline that is the candidate itself at an earlier time (`baseline_arm_id=None`).
    Case by case, attempt by attempt, every arm of a case side by side (as `runs.task_at` orders
    first answers): attempts `2 .. reruns + 1`. A case id named twice is rerun once.

    Raises:
        ValueError: a negative number of reruns.
    """
    if reruns < 0:
        raise ValueError(f"reruns cannot be negative: {reruns}")
    arms = [*candidate_arm_ids, *([baseline_arm_id] if baseline_arm_id is not None else [])]
    return [
        (arm_id, case_id, attempt)
        for case_id in dict.fromkeys(flipped_case_ids)
        for attempt in range(2, reruns + 2)
        for arm_id in arms
    ]


# --- One arm -------------------------------------------------------------------------------------


def stability(tries_by_case: Mapping[str, Sequence[AttemptState]]) -> dict[str, Any]:
    """How steady one arm's answers are, from each case's tries (first answer first).

    The rule (docs/concepts/verdicts.md): only a case with a graded first answer and at least one
    graded re-ask is `asked`; it is `unstable` when graded passing one time and failing another
    (among its graded tries); the arm is `noisy` when as many as two cases, or a fifth of those
    asked, are unstable.

    Returns:
        `{"asked": int, "unstable": int, "noisy": bool}`.
    """
    asked = unstable = 0
    for tries in tries_by_case.values():
        if not tries or tries[0] not in _DECIDED:
            continue
        graded = [s for s in tries if s in _DECIDED]
        if len(graded) < 2:
            continue
        asked += 1
        if AttemptState.PASSED in graded and AttemptState.FAILED in graded:
            unstable += 1
    noisy = asked > 0 and (unstable >= 2 or unstable * 5 >= asked)
    return {"asked": asked, "unstable": unstable, "noisy": noisy}


def summarize_by_tag(
    attempts_by_case: Mapping[str, Sequence[AttemptFacts]],
    tags_by_case: Mapping[str, Sequence[str]],
) -> dict[str, ArmSummary]:
    """One arm summarised per tag, each over the cases carrying it (docs/concepts/verdicts.md:
    summaries are also given per tag).

    A case counts once under each of its tags; a tagged case the arm never answered counts as
    `incomplete`, as `runs.summarize_arm` has it. Tags come out in sorted order.
    """
    cases_by_tag: dict[str, list[str]] = {}
    for case_id, tags in tags_by_case.items():
        for tag in dict.fromkeys(tags):
            cases_by_tag.setdefault(tag, []).append(case_id)
    return {
        tag: summarize_arm([a for cid in case_ids for a in attempts_by_case.get(cid, ())], case_ids)
        for tag, case_ids in sorted(cases_by_tag.items())
    }
