"""What the console says about a run (docs/guides/console.md): the verdict phrase of a runs
table, the few sentences a run's page opens on, and whether Publish is its main action.

Pure: it reads a run's kept outcome and counters, never a store or the clock.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass

from chalicelib.domain.enums import ComparisonVerdict, RunStatus
from chalicelib.domain.import_grading import NEEDS_REFERENCE
from chalicelib.domain.outcome import ArmResult, Comparison, Flip, Outcome
from chalicelib.domain.scorers import ScorerName

PENDING = "Pending"
NO_BASELINE = "No baseline"
"""The verdict phrase of a run without a baseline, in the CLI's words ("no baseline: the pass rate
alone decides")."""
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
    """The runs table's verdict (docs/guides/console.md): "Pending" while it runs, "No baseline"
    without one, "Could not run", "Breaks 2", "Worse overall · 4 broke", "Fixes 3", "Better
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
        return NO_BASELINE
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
    """A run's page header (docs/guides/console.md): `phrase` (the verdict phrase), `headline` (the
    comparison in the CLI's words, `compared_words`; None without one), `sentences` (the verdict in
    a few sentences), `main_action` ("publish", "test_again" or None), `publish_blockers`
    (why Publish is not the main action; empty when it is), `draft_changed` (a draft run whose draft
    changed since), `published_as` (a draft run whose draft, unchanged since, is published already
    as that version: nothing to publish; else None)."""

    phrase: str
    headline: str | None
    sentences: tuple[str, ...]
    main_action: str | None
    publish_blockers: tuple[str, ...]
    draft_changed: bool
    published_as: int | None = None


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


def _count(n: int, one: str, many: str) -> str:
    return f"{n} {one if n == 1 else many}"


def overall_words(comparison: Comparison) -> str:
    """The overall clause as the CLI prints it: "overall: worse (exact McNemar p = 0.031)",
    "overall: not significant (exact McNemar p = 1)"; without a McNemar p (no confirmed flip),
    "overall: not significant (no confirmed flip to test)"."""
    overall = comparison.overall.value if comparison.overall else "not significant"
    p = comparison.p_value
    why = f"exact McNemar p = {p:.3g}" if p is not None else "no confirmed flip to test"
    return f"overall: {overall} ({why})"


def compared_words(comparison: Comparison, against: str | None = None) -> str:
    """A comparison in the CLI's words (`assay runs show`): "against v3: worse; 1 confirmed
    regression, 0 confirmed fixes; overall: not significant (exact McNemar p = 1)" ("against the
    baseline" when `against` is None); "against v3: no verdict (<why>)" when it gives none (a side
    could not run, an invalid comparison)."""
    side = f"against {against}" if against else "against the baseline"
    if comparison.verdict is None or comparison.verdict is ComparisonVerdict.INVALID:
        why = comparison.invalid_reason or "; ".join(
            f"{arm}: {error}" for arm, error in (comparison.could_not_run or {}).items()
        )
        return f"{side}: no verdict" + (f" ({why})" if why else "")
    regressions = _count(
        comparison.confirmed_regressions, "confirmed regression", "confirmed regressions"
    )
    fixes = _count(comparison.confirmed_fixes, "confirmed fix", "confirmed fixes")
    verdict = comparison.verdict.value.replace("_", " ")
    return f"{side}: {verdict}; {regressions}, {fixes}; {overall_words(comparison)}"


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
    if comparison.overall is not None or broke or fixed:
        overall = overall_words(comparison)
        out.append(f"{overall[:1].upper()}{overall[1:]}.")
    out.append(
        f"Pass rate {_pct(comparison.pass_rate_before)} before ({against}), "
        f"{_pct(comparison.pass_rate_after)} after."
    )
    return out


def ungraded_sentence(n: int, required: Sequence[str]) -> str:
    """Why `n` (> 0) of the candidate's cases are ungraded, in one sentence: no required scorer
    applies to them (`domain.scorers.combine`; a judge that failed leaves a case incomplete, not
    ungraded). When every required scorer grades against a reference, they have none it can use:
    "1 case could not be graded (it has no reference for its scorer equals): it counts as neither
    passed nor failed."; else "3 cases could not be graded (none of the required scorers regex and
    json_schema applies to them): they count as neither passed nor failed."."""
    one = n == 1
    names = list(dict.fromkeys(required))
    listed = " and ".join([", ".join(names[:-1]), names[-1]] if len(names) > 1 else names)
    scorers = f"scorer {listed}" if len(names) == 1 else f"scorers {listed}"
    if names and all(name in NEEDS_REFERENCE for name in names):
        # numeric_answer also finds nothing in a reference without a number
        usable = "usable reference" if ScorerName.NUMERIC_ANSWER in names else "reference"
        why = f"{'it has' if one else 'they have'} no {usable} for {'its' if one else 'their'} "
        why += scorers
    elif len(names) == 1:
        why = f"the required {scorers} does not apply to {'it' if one else 'them'}"
    elif names:
        why = f"none of the required {scorers} applies to {'it' if one else 'them'}"
    else:
        why = f"no required scorer applies to {'it' if one else 'them'}"
    return (
        f"{_cases(n)} could not be graded ({why}): {'it counts' if one else 'they count'} as "
        "neither passed nor failed."
    )


def run_story(
    *,
    status: str,
    name: str,
    against: str | None,
    draft: bool,
    draft_changed: bool,
    published_as: int | None = None,
    recorded: int,
    expected: int,
    reason: str | None,
    outcome: Outcome | None,
    summaries: Mapping[str, ArmResult] | None = None,
    judge_failed: int = 0,
    required: Sequence[str] = (),
) -> RunStory:
    """What a run's page opens on (docs/guides/console.md).

    Args:
        name: what ran, capitalised for a sentence's start ("v4", "The draft").
        against: the baseline's name ("v3"), None for a run without one.
        draft: the candidate is the draft; `draft_changed`: the draft's spec changed since.
        published_as: the latest version when the draft as it is now is that version's spec (the
            draft is published already), else None.
        recorded, expected: first answers (and reruns) in, of all the run expects.
        reason: why the run ended, for one that did not complete.
        outcome, summaries: the kept outcome; the arm results computed now for a run without one.
        judge_failed: answers the judge failed to grade (its scores that graded nothing).
        required: the run's required scorers (its scoring's `required`), to say why a case is
            ungraded: no required scorer applies to it (`domain.scorers.combine`).

    Publish is the main action only for a completed draft run with no confirmed regression and
    none of the candidate's cases unanswered or ungraded and whose draft is not published already;
    a draft that changed since offers Test again instead.
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
                f"No baseline: {name} passed {outcome.passed} of {_cases(outcome.total)} "
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
            one = judge_failed == 1
            sentences.append(
                f"The judge failed to grade {_count(judge_failed, 'answer', 'answers')}: "
                f"{'it counts' if one else 'they count'} as neither passed nor failed until "
                f"Grade again grades {'it' if one else 'them'}, without asking the agent."
            )
        if outcome.ungraded:
            sentences.append(ungraded_sentence(outcome.ungraded, required))
        if undecided:
            blockers.append(f"{_cases(undecided)} left unanswered or ungraded")
    published = published_as if draft and not draft_changed else None
    if published is not None:
        blockers.append(f"the draft is published as v{published}")
    main: str | None = None
    if draft and status == RunStatus.COMPLETED:
        if draft_changed:
            main = "test_again"
        elif not blockers:
            main = "publish"
    if draft and draft_changed:
        blockers.append("the draft changed since this run")
    headline = None
    if status == RunStatus.COMPLETED and outcome is not None and outcome.comparison is not None:
        headline = compared_words(outcome.comparison, against)
        headline = headline[:1].upper() + headline[1:]
    return RunStory(
        phrase,
        headline,
        tuple(sentences),
        main,
        tuple(blockers),
        draft and draft_changed,
        published,
    )
