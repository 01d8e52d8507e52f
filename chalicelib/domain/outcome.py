"""A run's outcome: what finalizing computes once and the run keeps (`Run.outcome`), so listings,
verdicts, suites, baselines and estimates never compute it again (docs/concepts/verdicts.md).

Frozen pydantic values whose JSON (`as_json`) is the `outcome` map runs have always kept: the
store writes `as_json()` and reads it back with `Outcome.model_validate`. Money is in USD as it
was kept (`*_usd`, with each arm's own cost in micro-USD beside it), rates 0..1, latencies in
milliseconds. A field an older run never kept takes its default when read and stays left out when
written again, so an old run reads and shows as it always did.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Iterable
from typing import Any

from pydantic import BaseModel, ConfigDict

from chalicelib.domain import compare
from chalicelib.domain.enums import (
    AttemptState,
    CaseOutcome,
    ComparisonVerdict,
    EfficiencyAxis,
    Verdict,
)
from chalicelib.domain.money import micros_to_usd
from chalicelib.domain.run_rules import ArmSummary, verdict_word


class Kept(BaseModel):
    """Base of what a run keeps as JSON: immutable; a key it does not know (another version's
    writer) is kept as it was.

    Built at the first validation, not at import: a case worker reads and writes an outcome only as
    its run ends (issue 12, scope 3)."""

    model_config = ConfigDict(frozen=True, extra="allow", defer_build=True)

    def as_json(self) -> dict[str, Any]:
        """The JSON kept: every field it was built or read with, in declaration order (a field
        left unset is left out, as the writers always left it out)."""
        return self.model_dump(mode="json", exclude_unset=True)


class Quality(Kept):
    """One arm's quality axis: cases settled over their tries; `pass_rate` over decided cases."""

    cases: int
    passed: int
    failed: int
    incomplete: int
    ungraded: int
    crashed: int
    pass_rate: float | None
    pass_rate_interval_95: tuple[float, float] | None = None
    """95 % Wilson interval of `pass_rate`; None with no decided case."""
    first_pass_rate: float | None
    average_score: float | None
    undecided: int
    """`incomplete` + `ungraded`."""
    undecided_reasons: dict[str, int]
    """Why cases were left undecided, with how many."""


class Efficiency(Kept):
    """One arm's efficiency axis (lower is better): USD, tokens, milliseconds."""

    cost_usd: float
    cost_per_passed_case_usd: float | None
    tokens_per_case: float | None
    input_tokens: int
    output_tokens: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    cost_micros: int | None = None
    """What the arm's own answers cost (micro-USD; 0 for borrowed ones): the next estimate's
    history. Set on an arm's summary, never on a tag's."""
    attempts: int | None = None
    """How many answers the arm asked itself (as `cost_micros`)."""


class Summary(Kept):
    """One arm (or one tag of it) summarised, quality and efficiency kept apart."""

    quality: Quality
    efficiency: Efficiency


class ArmResult(Summary):
    """One arm's summary with its per-tag summaries, why it could not run, and its judges."""

    tags: dict[str, Summary] = {}
    """Per tag, in sorted order."""
    could_not_run: str | None = None
    """The one error every first answer failed with (a setup error), else None."""
    judges: tuple[str, ...] = ()
    """The fingerprint keys of the judges that graded its answers, sorted."""
    model: str | None = None
    """The model its answers reported (`reported_model`); left out when none reported one."""


class Stability(Kept):
    """How steady a stability run's answers are (`compare.stability`)."""

    asked: int
    unstable: int
    noisy: bool


class Flip(Kept):
    """A case whose first answers flipped between the sides (`compare.Flip`)."""

    case_id: str
    outcome: CaseOutcome
    confirmed: bool
    question: str
    candidate_tries: tuple[AttemptState, ...]
    baseline_tries: tuple[AttemptState, ...]


class ComparedBaseline(Kept):
    """Which baseline a comparison is against (from its arm)."""

    version: int | None = None
    source_run_id: str | None = None
    source_completed_at: str | None = None
    source_dataset_version: int | None = None
    rerun: bool = True


class CaseCompared(Kept):
    """One case's outcome in a comparison."""

    case_id: str
    outcome: CaseOutcome


class Comparison(Kept):
    """A candidate arm compared with the baseline (docs/concepts/verdicts.md):
    `compare.ComparisonResult` with the arms, the baseline, the efficiency axes and each case's
    outcome; `verdict` and `overall` None when a side could not run (`could_not_run`)."""

    candidate_arm_id: str
    baseline_arm_id: str
    baseline: ComparedBaseline
    verdict: ComparisonVerdict | None = None
    overall: ComparisonVerdict | None = None
    p_value: float | None = None
    invalid_reason: str | None = None
    counts: dict[str, int] = {}
    """Cases per outcome (a `CaseOutcome` value) on first answers."""
    confirmed_regressions: int = 0
    confirmed_fixes: int = 0
    flips: tuple[Flip, ...] = ()
    pass_rate_before: float | None = None
    pass_rate_after: float | None = None
    first_pass_rate_before: float | None = None
    first_pass_rate_after: float | None = None
    interval_before: tuple[float, float] | None = None
    interval_after: tuple[float, float] | None = None
    notes: tuple[str, ...] = ()
    efficiency: dict[str, EfficiencyAxis | None] = {}
    """Each efficiency quantity of the candidate against the baseline."""
    cases: tuple[CaseCompared, ...] = ()
    could_not_run: dict[str, str] | None = None
    """Per arm id, the error a side that could not run failed with; set only then."""


class Outcome(Kept):
    """A completed run's outcome: the first candidate's numbers (what listings and verdicts read),
    every arm's summary, and the stability figures or the comparison with the baseline."""

    arm_id: str
    """The first candidate arm, whose numbers these are."""
    total: int
    passed: int
    failed: int
    incomplete: int
    ungraded: int
    crashed: int
    pass_rate: float | None
    first_pass_rate: float | None
    average_score: float | None
    verdict: Verdict
    """The pass/partial/fail/none word of `total` and `passed`."""
    undecided: int
    arms: dict[str, ArmResult] = {}
    stability: Stability | None = None
    """Set on a stability run only."""
    comparison: Comparison | None = None
    """Set when the run has a baseline."""
    comparison_verdict: ComparisonVerdict | None = None
    """`comparison.verdict`, set with `comparison`."""
    noise: dict[str, Any] | None = None
    """How likely the comparison's confirmed flips are luck (`domain.noise.Noise.as_json()` and
    its `sentence`, docs/concepts/noise.md); set with a valid comparison."""


# --- building them -------------------------------------------------------------------------


def quality_of(s: ArmSummary) -> Quality:
    """An arm summary's quality axis."""
    interval = compare.wilson_interval(s.passed, s.decided)
    return Quality(
        cases=s.cases,
        passed=s.passed,
        failed=s.failed,
        incomplete=s.incomplete,
        ungraded=s.ungraded,
        crashed=s.crashed,
        pass_rate=s.pass_rate,
        pass_rate_interval_95=interval,
        first_pass_rate=s.first_pass_rate,
        average_score=s.average_score,
        undecided=s.incomplete + s.ungraded,
        undecided_reasons=s.undecided_reasons,
    )


def efficiency_of(s: ArmSummary, *, own: tuple[int, int] | None = None) -> Efficiency:
    """An arm summary's efficiency axis; `own` = (micro-USD, attempts) of the arm's own answers,
    for an arm's summary (a tag's has none)."""
    values: dict[str, Any] = {
        "cost_usd": micros_to_usd(s.cost_micros),
        "cost_per_passed_case_usd": micros_to_usd(s.cost_micros // s.passed) if s.passed else None,
        "tokens_per_case": ((s.input_tokens + s.output_tokens) / s.cases) if s.cases else None,
        "input_tokens": s.input_tokens,
        "output_tokens": s.output_tokens,
        "latency_p50_ms": s.latency_p50_ms,
        "latency_p95_ms": s.latency_p95_ms,
    }
    if own is not None:
        values |= {"cost_micros": own[0], "attempts": own[1]}
    return Efficiency(**values)


def summary_of(s: ArmSummary) -> Summary:
    """A tag's summary: both axes of `s`."""
    return Summary(quality=quality_of(s), efficiency=efficiency_of(s))


def reported_model(models: Iterable[str | None]) -> str | None:
    """The model an arm's answers reported (each answer's `model`, None where it reported none):
    the one most of them reported, the alphabetically first of a tie; None when none did."""
    counts = Counter(m for m in models if m)
    if not counts:
        return None
    return min(counts, key=lambda m: (-counts[m], m))


def arm_result(
    s: ArmSummary,
    *,
    tags: dict[str, ArmSummary],
    could_not_run: str | None,
    judges: set[str],
    own: tuple[int, int],
    model: str | None = None,
) -> ArmResult:
    """One arm's result: its summary `s`, its tags' (sorted), why it could not run, its judges
    (sorted), what its own answers cost, `(micro-USD, attempts)`, and the model its answers
    reported (`reported_model`; left out when None)."""
    return ArmResult(
        quality=quality_of(s),
        efficiency=efficiency_of(s, own=own),
        tags={tag: summary_of(t) for tag, t in sorted(tags.items())},
        could_not_run=could_not_run,
        judges=tuple(sorted(judges)),
        **({"model": model} if model else {}),
    )


def outcome_of(
    arm_id: str,
    s: ArmSummary,
    arms: dict[str, ArmResult] | None = None,
    *,
    stability: Stability | None = None,
    comparison: Comparison | None = None,
    noise: dict[str, Any] | None = None,
) -> Outcome:
    """The outcome of a run whose first candidate is `arm_id`, summarised `s`, with every arm's
    result `arms` and its stability figures, comparison and its noise when given (else left
    unset)."""
    values: dict[str, Any] = {
        "arm_id": arm_id,
        "total": s.cases,
        "passed": s.passed,
        "failed": s.failed,
        "incomplete": s.incomplete,
        "ungraded": s.ungraded,
        "crashed": s.crashed,
        "pass_rate": s.pass_rate,
        "first_pass_rate": s.first_pass_rate,
        "average_score": s.average_score,
        "verdict": verdict_word(s.cases, s.passed),
        "undecided": s.incomplete + s.ungraded,
    }
    if arms is not None:
        values["arms"] = arms
    if stability is not None:
        values["stability"] = stability
    if comparison is not None:
        values |= {"comparison": comparison, "comparison_verdict": comparison.verdict}
    if noise is not None:
        values["noise"] = noise
    return Outcome(**values)
