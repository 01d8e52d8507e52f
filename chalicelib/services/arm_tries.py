"""An arm's tries per case, as every figure of a run reads them (docs/concepts/verdicts.md).

Each attempt row becomes its summary-relevant facts (`facts`); an arm's tries are grouped by case,
first first, keeping the majority judge's grades and a person's verdict from the review queue over
the scorers' (`by_case`). The run's outcome, its comparison, its noise and a suite's result all
read the tries this way.
"""

from __future__ import annotations

from dataclasses import replace

from chalicelib.domain import judge_rules
from chalicelib.domain.enums import AttemptState
from chalicelib.domain.records import Attempt, Run
from chalicelib.domain.review_rules import ReviewVerdict, reviewed_tries
from chalicelib.domain.run_rules import AttemptFacts

__all__ = ["by_case", "facts"]


def facts(row: Attempt) -> AttemptFacts:
    """The summary-relevant facts of an attempt row."""
    scores = row.scores or []
    decided = [s.get("score", 0.0) for s in scores if s.get("passed") is not None]
    return AttemptFacts(
        case_id=row.case_id,
        attempt=int(row.attempt),
        state=AttemptState(row.state),
        score=(sum(decided) / len(decided)) if decided else 0.0,
        cost_micros=int(row.cost_micros or 0),
        input_tokens=int(row.input_tokens or 0),
        output_tokens=int(row.output_tokens or 0),
        latency_ms=float(row.latency_ms or 0),
        crash=bool(row.crash),
        reason=row.reason or "",
        judge=judge_rules.score_judge_key(scores),
    )


def by_case(run: Run, attempts: list[Attempt], arm_id: str) -> dict[str, list[AttemptFacts]]:
    """An arm's tries per case, first first (a case graded by two judges keeps the majority
    judge's); a case whose answer a person decided in the review queue counts the person's verdict
    over every try (`domain.review_rules.reviewed_tries`)."""
    out: dict[str, list[AttemptFacts]] = {}
    reviewed: dict[str, ReviewVerdict] = {}
    for row in attempts:
        if row.arm_id == arm_id:
            out.setdefault(row.case_id, []).append(facts(row))
            if row.review:
                reviewed[row.case_id] = ReviewVerdict(row.review["verdict"])
    for case_id, tries in out.items():
        tries.sort(key=lambda a: a.attempt)
        tries = judge_rules.majority_judge(tries, lambda a: a.judge)
        if case_id in reviewed:
            # A person's verdict stands for the scorers' over every try of the case.
            states = reviewed_tries([a.state for a in tries], reviewed[case_id])
            tries = [replace(a, state=state) for a, state in zip(tries, states, strict=True)]
        out[case_id] = tries
    return out
