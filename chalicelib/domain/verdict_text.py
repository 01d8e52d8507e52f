"""What the console says about a run (docs/guides/console.md): the verdict phrase of a runs
table, the few sentences a run's page opens on, and whether Publish is its main action.

Pure: it reads a run's kept outcome and counters, never a store or the clock.
"""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass

from chalicelib.domain.enums import ComparisonVerdict, RunStatus
from chalicelib.domain.outcome import ArmResult, Comparison, Flip, Outcome

PENDING = "Pending"
FIRST_RESULT = "First result"
COULD_NOT_RUN = "Could not run"
ENDED = {
    RunStatus.FAILED: "Failed",
    RunStatus.CANCELLED: "Cancelled",
    RunStatus.BUDGET_EXCEEDED: "Stopped at the budget",
}
QUOTE_CHARS = 160
"""How much of a case's question a sentence quotes."""


def side_name(version: int | None, draft: bool) -> str:
    """How a sentence names a side: "the draft" or "v4"."""
    return "the draft" if draft or version is None else f"v{version}"


def tested(candidate: str, baseline: str | None) -> str:
    """What a runs table says was tested against what: "v4 against v3", "The draft alone"."""
    subject = "The draft" if candidate == "the draft" else candidate
    return f"{subject} against {baseline}" if baseline else f"{subject} alone"


def could_not_run(outcome: Outcome | None, summaries: Mapping[str, ArmResult] | None) -> str | None:
    """Why a side could not run (every first answer failed with the same setup error), else None:
    the comparison's reason for either side, else any arm's."""
    if outcome is not None and outcome.comparison is not None and outcome.comparison.could_not_run:
        return "; ".join(outcome.comparison.could_not_run.values())
    arms = summaries if summaries is not None else (outcome.arms if outcome else {})
    reasons = [r.could_not_run for r in arms.values() if r.could_not_run]
    return "; ".join(reasons) if reasons else None


def verdict_phrase(
    status: str, outcome: Outcome | None, summaries: Mapping[str, ArmResult] | None = None
) -> str:
    """The runs table's verdict (docs/guides/console.md): "Pending" while it runs, "First result"
    without a baseline, "Could not run", "Breaks 2", "Worse overall · 4 broke", "Fixes 3", "Better
    overall · 3 fixed", "Breaks 1 · fixes 2", "No change", "Not comparable", or how it ended
    ("Failed", "Cancelled", "Stopped at the budget")."""
    if status in (RunStatus.QUEUED, RunStatus.RUNNING):
        return PENDING
    if status in ENDED:
        return ENDED[RunStatus(status)]
    if could_not_run(outcome, summaries):
        return COULD_NOT_RUN
    if outcome is None:
        return PENDING
    comparison = outcome.comparison
    if comparison is None:
        return FIRST_RESULT
    if comparison.invalid_reason or comparison.verdict is ComparisonVerdict.INVALID:
        return "Not comparable"
    broke, fixed = comparison.confirmed_regressions, comparison.confirmed_fixes
    if comparison.overall is ComparisonVerdict.WORSE:
        return f"Worse overall · {broke} broke" if broke else "Worse overall"
    if comparison.overall is ComparisonVerdict.BETTER and not broke:
        return f"Better overall · {fixed} fixed" if fixed else "Better overall"
    if broke and fixed:
        return f"Breaks {broke} · fixes {fixed}"
    if broke:
        return f"Breaks {broke}"
    if fixed:
        return f"Fixes {fixed}"
    return "No change"


@dataclass(frozen=True)
class RunStory:
    """A run's page header (docs/guides/console.md): `phrase` (the verdict phrase), `sentences` (the
    verdict in a few sentences), `main_action` ("publish", "test_again" or None), `publish_blockers`
    (why Publish is not the main action; empty when it is), `draft_changed` (a draft run whose draft
    changed since)."""

    phrase: str
    sentences: tuple[str, ...]
    main_action: str | None
    publish_blockers: tuple[str, ...]
    draft_changed: bool


def _cases(n: int) -> str:
    return f"{n} case" if n == 1 else f"{n} cases"


def _pct(rate: float | None) -> str:
    return "—" if rate is None else f"{rate * 100:.1f}%"


def _quote(text: str) -> str:
    flat = " ".join(text.split())
    return flat if len(flat) <= QUOTE_CHARS else flat[: QUOTE_CHARS - 1].rstrip() + "…"


def _example(comparison: Comparison, against: str) -> str | None:
    """One confirmed flip quoted with how many of its tries repeated it (a regression first)."""
    confirmed = [f for f in comparison.flips if f.confirmed]
    pick: Flip | None = next((f for f in confirmed if f.outcome == "regression"), None)
    pick = pick or next((f for f in confirmed if f.outcome == "fixed"), None)
    if pick is None:
        return None
    broke = pick.outcome == "regression"
    state = "failed" if broke else "passed"
    repeated = sum(1 for t in pick.candidate_tries if t == state)
    tries = len(pick.candidate_tries)
    verb = "fails" if broke else "passes"
    other = "passed" if broke else "failed"
    return (
        f"For example, it now {verb} “{_quote(pick.question or pick.case_id)}” "
        f"({pick.case_id}): {repeated} of {tries} tries {'failed' if broke else 'passed'}, "
        f"where {against} {other} it."
    )


def _comparison_sentences(name: str, against: str, comparison: Comparison) -> list[str]:
    broke, fixed = comparison.confirmed_regressions, comparison.confirmed_fixes
    if broke and fixed:
        first = f"{name} breaks {_cases(broke)} and fixes {_cases(fixed)} every time it is asked."
    elif broke:
        first = f"{name} breaks {_cases(broke)} every time it is asked, and fixes none."
    elif fixed:
        first = f"{name} fixes {_cases(fixed)} every time it is asked, and breaks none."
    else:
        first = f"{name} breaks and fixes no case every time it is asked."
    out = [first]
    if example := _example(comparison, against):
        out.append(example)
    if comparison.overall is ComparisonVerdict.WORSE:
        out.append(f"It is worse overall than {against}.")
    elif comparison.overall is ComparisonVerdict.BETTER:
        out.append(f"It is better overall than {against}.")
    elif broke or fixed:
        out.append("The confirmed changes cannot tell whether it is better or worse overall.")
    out.append(
        f"Pass rate {_pct(comparison.pass_rate_before)} before ({against}), "
        f"{_pct(comparison.pass_rate_after)} after."
    )
    return out


def run_story(
    *,
    status: str,
    name: str,
    against: str | None,
    draft: bool,
    draft_changed: bool,
    recorded: int,
    expected: int,
    reason: str | None,
    outcome: Outcome | None,
    summaries: Mapping[str, ArmResult] | None = None,
    judge_failed: int = 0,
) -> RunStory:
    """What a run's page opens on (docs/guides/console.md).

    Args:
        name: what ran, capitalised for a sentence's start ("v4", "The draft").
        against: the baseline's name ("v3"), None for a run without one.
        draft: the candidate is the draft; `draft_changed`: the draft's spec changed since.
        recorded, expected: first answers (and reruns) in, of all the run expects.
        reason: why the run ended, for one that did not complete.
        outcome, summaries: the kept outcome; the arm results computed now for a run without one.
        judge_failed: answers the judge failed to grade (its scores that graded nothing).

    Publish is the main action only for a completed draft run with no confirmed regression and
    none of the candidate's cases unanswered or ungraded; a draft that changed since offers Test
    again instead.
    """
    phrase = verdict_phrase(status, outcome, summaries)
    sentences: list[str] = []
    blockers: list[str] = []
    if status in (RunStatus.QUEUED, RunStatus.RUNNING):
        sentences.append(f"{recorded} of {expected} answers are in.")
        if against is not None:
            sentences.append(f"The comparison with {against} waits for both sides.")
        blockers.append("the run has not finished")
    elif status in ENDED:
        sentences.append(f"The run ended: {reason or ENDED[RunStatus(status)].lower()}.")
        blockers.append("the run did not complete")
    elif (cause := could_not_run(outcome, summaries)) is not None:
        sentences.append(f"It could not run: every answer failed with the same error ({cause}).")
        sentences.append("It is left out of the pass-rate trend.")
        blockers.append("it could not run")
    elif outcome is not None:
        if outcome.comparison is None or against is None:
            sentences.append(
                f"First result: {name} passed {outcome.passed} of {_cases(outcome.total)} "
                f"({_pct(outcome.pass_rate)}). There is nothing to compare it with yet."
            )
        else:
            sentences.extend(_comparison_sentences(name, against, outcome.comparison))
            if outcome.comparison.confirmed_regressions:
                blockers.append(
                    f"{_cases(outcome.comparison.confirmed_regressions)} confirmed broken"
                )
        undecided = outcome.incomplete + outcome.ungraded
        if judge_failed:
            sentences.append(
                f"The judge failed to grade {judge_failed} "
                f"{'answer' if judge_failed == 1 else 'answers'}: they count as neither passed "
                "nor failed until Grade again grades them, without asking the agent."
            )
        if outcome.ungraded:
            sentences.append(
                f"{_cases(outcome.ungraded)} the judge could not grade count as neither passed "
                "nor failed."
            )
        if undecided:
            blockers.append(f"{_cases(undecided)} left unanswered or ungraded")
    main: str | None = None
    if draft and status == RunStatus.COMPLETED:
        if draft_changed:
            main = "test_again"
        elif not blockers:
            main = "publish"
    if draft and draft_changed:
        blockers.append("the draft changed since this run")
    return RunStory(phrase, tuple(sentences), main, tuple(blockers), draft and draft_changed)
