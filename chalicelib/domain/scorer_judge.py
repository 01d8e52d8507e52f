"""The model judge as a scorer: `JudgeScorer` (whether the judge applies to a case, and its
settings checked) and `JudgeFn`, the callable `grade` is given to ask it
(docs/concepts/verdicts.md).

This module never asks a model: the service does, through the `JudgeFn` it hands `grade`. Pure.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence

from chalicelib.domain.models import AgentAnswer, Case, ScoreResult
from chalicelib.domain.redaction import Known
from chalicelib.domain.scorer_base import Scorer, Settings
from chalicelib.errors import InvalidInputError


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

    def score(
        self, case: Case, answer: AgentAnswer, settings: Settings, known: Sequence[Known] = ()
    ) -> ScoreResult:
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
