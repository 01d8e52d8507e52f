"""Grade again: the judge grades kept answers anew, without asking the agent
(docs/concepts/verdicts.md).

An answer the judge failed on or skipped is not graded (the attempt is `incomplete`, its judge
score listed in `ungraded_score_ids`); grading it again reads the answer kept on the attempt,
asks the judge grading the dataset now (checking the budgets before each request), and replaces
that attempt's judge score. The other scorers' verdicts stay, and the attempt becomes `passed` or
`failed` once the judge decides. The run's counters move with each changed grade in the same
transaction, and a completed run's summaries,
comparison and outcome are computed again. Who did it is kept on each attempt and on the run.
"""

from __future__ import annotations

import time
from collections.abc import Callable, Sequence
from dataclasses import dataclass, replace

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.identity import Identity
from chalicelib.domain.judge_rules import JUDGE_SCORER
from chalicelib.domain.models import AgentAnswer, Case, Grade, ScoreResult, ToolCall
from chalicelib.domain.money import micros_to_usd
from chalicelib.domain.records import Attempt, Run
from chalicelib.errors import (
    BudgetExceededError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
)
from chalicelib.retrying import change, jitter
from chalicelib.services import access as access_service
from chalicelib.services import budgets, eval_agent_runs, finalize, redacting
from chalicelib.services.run_case import grade_answer


@dataclass(frozen=True)
class Regraded:
    """What grading one judge score again did: a new grade (`state`, which may be the one it had),
    the earlier grade `kept` because the judge failed now (`reason` says how), or `skipped`
    because somebody graded it meanwhile."""

    score_id: str
    state_before: str | None = None
    state: str | None = None
    kept: str | None = None
    reason: str | None = None
    skipped: str | None = None


@dataclass(frozen=True)
class GradeAgain:
    """What one "grade again" of a run did: each score's `Regraded`, in order; how many grades
    `changed`; the scores still not graded; those left for another call (`pending`, the time ran
    out); the judge's cost in micro-USD; and the budget that stopped it, if one did."""

    run_id: str
    scores: list[Regraded]
    changed: int
    still_ungraded: list[str]
    pending: list[str]
    judge_cost_micros: int
    stopped: str | None

    @property
    def graded(self) -> int:
        """Scores graded anew (kept and skipped ones are not)."""
        return sum(1 for r in self.scores if r.state is not None)


@dataclass(frozen=True)
class Rescore:
    """A rescore of a dataset's scores: one `GradeAgain` per run."""

    dataset_id: str
    runs: list[GradeAgain]


def _judged(row: Attempt) -> bool:
    return any(s.get("scorer") == JUDGE_SCORER for s in row.scores or [])


def _undecided(row: Attempt) -> bool:
    return any(
        s.get("scorer") == JUDGE_SCORER and s.get("passed") is None for s in row.scores or []
    )


def _targets(
    run: Run, rows: list[Attempt], score_ids: Sequence[str] | None, field: str
) -> list[Attempt]:
    """The attempts whose judge scores to grade again: the named ones, else the ungraded ones."""
    if score_ids is None:
        wanted = set(finalize.ungraded_score_ids(run, rows))
        return [r for r in rows if finalize.score_id(run.run_id, r.attempt_key) in wanted]
    by_id = {finalize.score_id(run.run_id, r.attempt_key): r for r in rows}
    out = []
    for i, sid in enumerate(score_ids):
        row = by_id.get(sid)
        if row is None:
            raise NotFoundError(
                f"score {sid} not found in eval run {run.run_id}", field=f"{field}[{i}]"
            )
        if not _judged(row):
            raise InvalidInputError(
                f"score {sid}: no judge graded this answer (nothing to grade again)",
                field=f"{field}[{i}]",
            )
        if row not in out:
            out.append(row)
    return out


def grade_again(
    c: Container,
    who: Identity,
    run_id: str,
    score_ids: Sequence[str] | None = None,
    *,
    field: str = "score_ids",
) -> GradeAgain:
    """Grade again the judge scores `score_ids` of a run (default: every one not graded).

    Answers are graded one after another until `ASSAY_GRADE_AGAIN_SECONDS` have passed (an API
    call must answer within API Gateway's 29 s); what was left is listed as `pending`: call again.
    Raises:
        NotFoundError: unknown run or score. ConflictError: the run is still running (its grades
        would race the final computation). InvalidInputError: a score no judge gave.
        BudgetExceededError: a budget was spent before the first answer could be graded.
    """
    run = access_service.readable_run(c, who, run_id)
    access_service.check_start(who, run.agent_id, run.dataset_id, draft=False)
    if not RunStatus(run.status).ended:
        raise ConflictError(
            f"eval run {run_id} is still running: grade again once it has ended", field="run_id"
        )
    rows = c.runs.attempts(who.org_id, run_id)
    targets = _targets(run, rows, score_ids, field)
    # One grader at a time per run: two would ask (and pay) the judge twice for the same answers.
    now_ms = epoch_ms(c.clock.now())
    lease_ms = int((c.settings.assay_grade_again_seconds + 10) * 1000)
    if not c.runs.claim_grading(who.org_id, run_id, now_ms + lease_ms, now_ms):
        raise ConflictError(
            f"eval run {run_id} is being graded again by somebody else: try again in a moment",
            field="run_id",
        )
    try:
        return _grade(c, who, run, targets)
    finally:
        c.runs.release_grading(who.org_id, run_id, now_ms + lease_ms)


def _grade(c: Container, who: Identity, run: Run, targets: list[Attempt]) -> GradeAgain:
    run_id = run.run_id
    cases = {
        case["case_id"]: case
        for case in c.datasets.cases(run.org_id, run.dataset_id, int(run.dataset_version))
    }
    now = iso(c.clock.now())
    results: list[Regraded] = []
    cost = changed = 0
    stopped = None
    deadline = time.monotonic() + c.settings.assay_grade_again_seconds
    r = redacting.for_org(c, run.org_id)
    pending: list[str] = []
    for i, row in enumerate(targets):
        if time.monotonic() >= deadline:
            pending = [finalize.score_id(run_id, r.attempt_key) for r in targets[i:]]
            break
        sid = finalize.score_id(run_id, row.attempt_key)
        answer_text = c.bucket.get_text(row.answer_ref) if row.answer_ref else (row.answer or "")
        # The kept answer is the redacted one: grading again never sees a secret.
        answer = AgentAnswer(
            answer=answer_text, calls=[ToolCall.model_validate(x) for x in row.calls or []]
        )
        grade, asker = grade_answer(
            c,
            run,
            Case.model_validate(cases[row.case_id]),
            answer,
            scores=row.scores or [],
            known=r.known,
        )
        grade = Grade(
            state=grade.state,
            scores=[
                ScoreResult.model_validate(r.value(s.model_dump(mode="json"))) for s in grade.scores
            ],
            reason=r.text(grade.reason),
        )
        spent = asker.cost_micros if asker else 0
        if asker is not None and asker.exhausted is not None and not asker.calls:
            stopped = asker.exhausted.reason
            break
        if asker is not None and asker.calls:  # the judge was asked: a grader run
            c.usage.add_grader(
                eval_agent_runs.of_grading(
                    run,
                    row,
                    cost_micros=spent,
                    grading=len(run.gradings or []) + 1,
                    now_ms=epoch_ms(c.clock.now()),
                ),
                budgets.month_of(c.clock.now()),
            )
        new_judge = next((s for s in grade.scores if s.scorer == JUDGE_SCORER), None)
        if new_judge is not None and new_judge.passed is None and not _undecided(row):
            # A judge that fails now never takes away a grade it gave before.
            c.runs.add_judge_cost(run.org_id, row.run_id, spent, asker.calls if asker else 0)
            results.append(
                Regraded(
                    sid,
                    state_before=row.state,
                    kept=row.state,
                    reason=f"the earlier grade is kept: {new_judge.reason}",
                )
            )
            cost += spent
            continue
        entry = {
            "by": who.user_id,
            "at": now,
            "state_before": row.state,
            "state": grade.state.value,
        }
        regraded = replace(
            row,
            state=grade.state.value,
            reason=grade.reason,
            scores=[s.model_dump(mode="json") for s in grade.scores],
            judge_cost_micros=int(row.judge_cost_micros or 0) + spent,
            judge_calls=int(row.judge_calls or 0) + (asker.calls if asker else 0),
            regraded=[*(row.regraded or []), entry],
        )
        if not c.runs.regrade(run.org_id, row, regraded):
            c.runs.add_judge_cost(run.org_id, row.run_id, spent, asker.calls if asker else 0)
            cost += spent
            results.append(Regraded(sid, skipped="graded meanwhile"))
            continue
        cost += spent
        changed += grade.state.value != row.state
        results.append(
            Regraded(sid, state_before=row.state, state=grade.state.value, reason=grade.reason)
        )
    if stopped and not results:
        raise BudgetExceededError(f"nothing was graded again: {stopped}", field="budget")
    graded = [r for r in results if r.state is not None]
    if graded:
        c.runs.add_grading(
            run.org_id,
            run_id,
            {
                "by": who.user_id,
                "at": now,
                "graded": len(graded),
                "changed": changed,
                "judge_cost_usd": micros_to_usd(cost),
            },
        )
        recompute_outcome(c, run.org_id, run_id)
    still = finalize.ungraded_score_ids(run, c.runs.attempts(run.org_id, run_id))
    return GradeAgain(run_id, results, changed, still, pending, cost, stopped)


RECOMPUTE_TRIES = 10
"""Outcomes computed again before giving up (each lost to somebody grading the same run)."""


def recompute_outcome(
    c: Container, org_id: str, run_id: str, *, pause: Callable[[], None] = jitter
) -> None:
    """A completed run's outcome computed again from its grades as they stand (no reruns: a flip
    that appears now stays unconfirmed). Written only if no grade moved since it was read
    (`regrades`), so two people grading at once never leave an outcome older than the grades.

    Raises ConflictError when `RECOMPUTE_TRIES` writes in a row lost to other graders.
    """

    def recomputed(run: Run) -> Run | None:
        if run.status != RunStatus.COMPLETED:
            return None
        return replace(run, outcome=finalize.compute_outcome(c, run, finalize.all_attempts(c, run)))

    def write(before: Run, after: Run) -> bool:
        return after.outcome is not None and c.runs.record_outcome(before, after.outcome)

    change(
        lambda: c.runs.get(org_id, run_id),
        recomputed,
        write,
        tries=RECOMPUTE_TRIES,
        pause=pause,
        field="run_id",
        conflict=f"eval run {run_id} keeps being graded again: try again",
    )


def rescore(
    c: Container,
    who: Identity,
    dataset_id: str,
    *,
    score_ids: Sequence[str] | None,
    run_id: str | None,
) -> Rescore:
    """`POST /datasets/{id}/scores/rescore`: grade again scores of runs over this dataset - the
    named `score_ids` (`<run_id>:<attempt_key>:judge`), or every ungraded one of `run_id`.

    Raises NotFoundError for an unknown dataset, run or score, or a run over another dataset;
    InvalidInputError when neither is given.
    """
    c.datasets.get(who.org_id, dataset_id)
    if not score_ids and not run_id:
        raise InvalidInputError("name the score_ids to grade again, or a run_id", field="score_ids")
    by_run: dict[str, list[str]] = {}
    for i, sid in enumerate(score_ids or []):
        owner = sid.split(":", 1)[0] if ":" in sid else ""
        if run_id and owner != run_id:
            raise InvalidInputError(f"score {sid} is not of run {run_id}", field=f"score_ids[{i}]")
        by_run.setdefault(owner, []).append(sid)
    if run_id and not score_ids:
        by_run[run_id] = []
    for owner in by_run:
        run = c.runs.get(who.org_id, owner) if owner else None
        if run is None or run.dataset_id != dataset_id:
            raise NotFoundError(
                f"eval run {owner or '?'} over dataset {dataset_id} not found",
                field="score_ids" if score_ids else "run_id",
            )
    return Rescore(
        dataset_id, [grade_again(c, who, owner, ids or None) for owner, ids in by_run.items()]
    )
