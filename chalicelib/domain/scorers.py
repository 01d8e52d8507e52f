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

This module holds the registry, validation and the grading rule, and names every scorer's public
parts for the rest of assay: the interface and its helpers are in `scorer_base`, the scorers in
`scorer_text` (equals, contains, icontains, regex), `scorer_json` (json_valid, json_schema),
`scorer_numeric_calls` (numeric_answer, tool_calls) and `scorer_judge` (the model judge).

Where a scorer's parameters come from: a case's `checks` naming the scorer (one verdict per
check, all must pass) take precedence; otherwise `ScoringConfig.settings[name]`; otherwise,
for the text scorers, the case's `reference`.

Pure: no I/O, no clock, no environment. `regex`, `jsonschema` and `referencing` are imported by
the checks that use them, so a Lambda's cold start pays for none of them (issue 12).
"""

from __future__ import annotations

from collections.abc import Sequence

from chalicelib.domain.enums import AttemptState
from chalicelib.domain.models import AgentAnswer, Case, Grade, ScoreResult, ScoringConfig
from chalicelib.domain.redaction import Known
from chalicelib.domain.scorer_base import (
    DEFAULT_TOLERANCE,
    Scorer,
    ScorerName,
    Settings,
    check_params,
    final_number,
    format_number,
)
from chalicelib.domain.scorer_json import EMBEDDED_JSON_TRIES, JsonSchemaScorer, JsonValidScorer
from chalicelib.domain.scorer_judge import JudgeFn, JudgeScorer
from chalicelib.domain.scorer_numeric_calls import NumericAnswerScorer, ToolCallsScorer
from chalicelib.domain.scorer_text import (
    REGEX_SECONDS,
    ContainsScorer,
    EqualsScorer,
    IContainsScorer,
    RegexScorer,
)
from chalicelib.errors import InvalidInputError

__all__ = [
    # the scorer interface (scorer_base)
    "DEFAULT_TOLERANCE",
    "Scorer",
    "ScorerName",
    "Settings",
    "check_params",
    "final_number",
    "format_number",
    # the scorers (scorer_text, scorer_json, scorer_numeric_calls, scorer_judge)
    "EMBEDDED_JSON_TRIES",
    "REGEX_SECONDS",
    "ContainsScorer",
    "EqualsScorer",
    "IContainsScorer",
    "JsonSchemaScorer",
    "JsonValidScorer",
    "JudgeFn",
    "JudgeScorer",
    "NumericAnswerScorer",
    "RegexScorer",
    "ToolCallsScorer",
    # the registry and the grading rule (here)
    "SCORERS",
    "applicable_scorers",
    "combine",
    "grade",
    "is_gradable",
    "register_scorer",
    "validate_checks",
    "validate_scoring",
]


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
    case: Case,
    answer: AgentAnswer,
    scoring: ScoringConfig,
    *,
    judge: JudgeFn | None = None,
    known: Sequence[Known] = (),
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
        known: the organization's stored secret values and the secrets learned from the answer
            (`redaction.Known`): a reason quoting the answer writes each of its secrets as its
            placeholder, never a piece of one (`scorer_base.AnswerSecrets`).

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
            scores.append(scorer.score(case, answer, settings, tuple(known)))
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
