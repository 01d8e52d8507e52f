"""What people do in the review queue (docs/guides/review.md): a decision, Undo, and **Send
failed to review**.

A decision puts a person's verdict (pass or fail) on an answer; its case then counts that verdict
over every try, in the run that gave the answer and in every run whose baseline borrowed it
(`domain.review_rules.reviewed_tries`, read by `arm_tries.by_case`). Undo takes the verdict back.

Each is written as ONE transaction (`ReviewQueue.decide`) that cannot half-apply: the item (only
while it is as read: of two people deciding one item, one wins and the other gets 409), its audit
entry (who, the item's state and verdict before and after, and every changed run's and suite
result's numbers before and after, computed before the write), the verdict on the attempt, and a
mark on every run and suite result resting on the answer (`outcome_stale`, `stale`), each run's
conditional on its grades as read (past `TX_MARKS` of them - an answer many baselines borrowed -
the rest are marked right after it, the item naming every one as `pending_runs`). The outcomes
and suite results computed for the audit are then written in place of the marked ones before the
call answers; a process that dies in between leaves the marks, and the next read of such a run
or decision of the queue completes them (`complete_pending`). A suite result whose word changed
tells its owner (`SuiteResultChanged`) and records who reviewed it; a gate's result changed by
review never moves a promotion by itself.
"""

from __future__ import annotations

import logging
import uuid
from dataclasses import dataclass, replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import from_epoch_ms, iso
from chalicelib.domain import access
from chalicelib.domain.enums import ArmRole, AttemptState, RunStatus
from chalicelib.domain.events import SuiteResultChanged
from chalicelib.domain.identity import Identity
from chalicelib.domain.outcome import Outcome
from chalicelib.domain.records import Attempt, Run, Suite, SuiteResultEntry
from chalicelib.domain.review_items import ItemState, ReviewAudit, ReviewItem
from chalicelib.domain.review_rules import ReviewReason, ReviewVerdict
from chalicelib.domain.suite_rules import Threshold, decide_result
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError
from chalicelib.retrying import jitter
from chalicelib.services import access as access_service
from chalicelib.services import finalize, messagebus, redacting, run_noise
from chalicelib.services import review as queue
from chalicelib.services.ports.review import Decision, Mark, StaleRun
from chalicelib.services.run_deletion import borrowers, borrowers_of
from chalicelib.services.suite_results import facts_of
from chalicelib.services.suite_saving import change_suite, touch

log = logging.getLogger(__name__)

NOTE_MAX_CHARS = 4_000
"""The longest note a decision keeps."""
TRIES = 5
"""Decisions tried again after a run they rest on was graded meanwhile."""
TX_MARKS = 90
"""Runs, suite results and borrowed copies of the answer one decision's transaction marks at
most: DynamoDB takes 100 writes in a transaction, and the item, its waiting mark, the count, the
audit entry, the attempt and the dataset's check take up to 6. The runs past it (baselines that
borrowed the answer) are marked right after the transaction (`ReviewQueue.mark_stale`) and their
numbers put in place with the others'."""


@dataclass(frozen=True)
class Planned:
    """One run a decision changes: as read, its new outcome, and its suite result before and
    after (None when no suite started it or its suite kept no result)."""

    run: Run
    outcome: Outcome
    result: SuiteResultEntry | None
    new_result: SuiteResultEntry | None
    copy_key: str | None = None
    """The attempt key of the run's own copy of the answer: a baseline that borrowed it keeps
    one once the answer's run is deleted, and the verdict is written on it too."""


@dataclass(frozen=True)
class Decided:
    """What a decision or Undo did: the item as it is now, its audit entry, and the runs and
    suite results it changed."""

    item: ReviewItem
    audit: ReviewAudit


def _counts(outcome: Outcome | None) -> dict[str, Any]:
    if outcome is None:
        return {}
    comparison = outcome.comparison
    return {
        "cases": outcome.total,
        "passed": outcome.passed,
        "failed": outcome.failed,
        "pass_rate": outcome.pass_rate,
        "verdict": str(outcome.verdict),
        "comparison": str(comparison.verdict) if comparison and comparison.verdict else None,
        "confirmed_regressions": comparison.confirmed_regressions if comparison else None,
    }


def _with_review(
    run: Run, attempts: list[Attempt], item: ReviewItem, review: dict[str, Any] | None
) -> list[Attempt]:
    """`attempts` of `run` with the item's answer carrying `review`: the answer itself in its own
    run, the first answer a baseline arm borrowed from it in another."""
    borrowed_arms = {
        a.arm_id
        for a in run.arms
        if not a.answers and a.source_run_id == item.run_id and a.source_arm_id == item.arm_id
    }
    first = item.attempt_key.endswith("#001")
    out = []
    for row in attempts:
        mine = (run.run_id == item.run_id and row.attempt_key == item.attempt_key) or (
            first
            and row.arm_id in borrowed_arms
            and row.case_id == item.case_id
            and int(row.attempt) == 1
        )
        out.append(replace(row, review=review) if mine else row)
    return out


def _borrowers_of_gone(c: Container, item: ReviewItem) -> list[Run]:
    """The runs whose baseline borrowed the item's first answer from a run that is gone (each
    keeps a copy of it): runs of the item's agent created since the answer was recorded."""
    since = iso(from_epoch_ms(item.answered_at_ms))
    return [
        run
        for run in borrowers_of(c, item.org_id, item.agent_id, item.run_id, since)
        if any(a.source_arm_id == item.arm_id for a in run.arms if not a.answers)
    ]


def _dependents(c: Container, item: ReviewItem) -> list[Run]:
    """The completed runs whose numbers rest on the item's answer: its own run and the runs whose
    baseline borrowed it (those alone, keeping their copy of it, when its run is gone)."""
    own = c.runs.get(item.org_id, item.run_id)
    if own is None:
        if not item.attempt_key.endswith("#001"):
            return []
        runs = _borrowers_of_gone(c, item)
        return [r for r in runs if r.status == RunStatus.COMPLETED and r.outcome is not None]
    runs = [own]
    if item.attempt_key.endswith("#001") and own.status == RunStatus.COMPLETED:
        runs += [
            r
            for r in borrowers(c, own)
            if any(a.source_arm_id == item.arm_id for a in r.arms if not a.answers)
        ]
    return [r for r in runs if r.status == RunStatus.COMPLETED and r.outcome is not None]


def _reviewers(attempts: list[Attempt]) -> list[str]:
    return sorted({str(r.review.get("by")) for r in attempts if r.review and r.review.get("by")})


def _planned(
    c: Container, run: Run, attempts: list[Attempt], seen: run_noise.Seen | None = None
) -> Planned:
    """What `run` comes to over `attempts` (its answers with the verdicts as they will stand):
    its outcome, and its suite result recomputed by the suite's threshold. `seen`: how other
    runs' answers its noise rests on are to be read (the decision's verdict on them too)."""
    outcome = finalize.compute_outcome(c, run, attempts, seen)
    result = new_result = None
    suite_id = (run.settings or {}).get("suite_id")
    if suite_id:
        result = c.suites.result_of_run(run.org_id, run.agent_id, suite_id, run.run_id)
        suite = c.suites.get(run.org_id, run.agent_id, suite_id)
        if result is not None and suite is not None:
            decision = decide_result(
                Threshold.model_validate(suite.threshold or {}),
                facts_of(c, replace(run, outcome=outcome), attempts),
            )
            reviewers = _reviewers(attempts)
            scorers_said = result.result_before_review or result.result
            new_result = replace(
                result,
                result=decision.result.value,
                reasons=redacting.for_org(c, run.org_id).value(list(decision.reasons)),
                cases_broken=decision.broken,
                cases_undecided=decision.undecided,
                overall=decision.overall,
                reviewed_by=reviewers or None,
                result_before_review=scorers_said if reviewers else None,
                stale=None,
            )
    return Planned(run, outcome, result, new_result)


def _plan(c: Container, item: ReviewItem, review: dict[str, Any] | None) -> list[Planned]:
    """What the decision makes of every run resting on the item's answer, computed before
    anything is written."""

    def seen(other: Run, rows: list[Attempt]) -> list[Attempt]:
        return _with_review(other, rows, item, review)

    return [
        replace(
            _planned(c, run, seen(run, finalize.all_attempts(c, run)), seen),
            copy_key=_copy_of(c, run, item),
        )
        for run in _dependents(c, item)
    ]


def _copy_of(c: Container, run: Run, item: ReviewItem) -> str | None:
    """The attempt key of `run`'s own copy of the item's answer (a baseline that borrowed it,
    once its run was deleted), None when it keeps none."""
    if run.run_id == item.run_id or not item.attempt_key.endswith("#001"):
        return None
    for arm in run.arms:
        if not arm.answers and arm.source_run_id == item.run_id:
            key = f"{arm.arm_id}#{item.case_id}#001"
            if c.runs.get_attempt(run.org_id, run.run_id, key) is not None:
                return key
    return None


def _audit(
    who: Identity, before: ReviewItem, after: ReviewItem, action: str, plans: list[Planned], at: str
) -> ReviewAudit:
    return ReviewAudit(
        audit_id=uuid.uuid4().hex[:16],
        org_id=after.org_id,
        dataset_id=after.dataset_id,
        item_id=after.item_id,
        action=action,
        by=who.user_id,
        key_id=who.key_id,
        actor=who.actor,
        at=at,
        state_before=before.state,
        state_after=after.state,
        verdict_before=before.verdict,
        verdict_after=after.verdict,
        note=after.note if action == "decide" else None,
        runs=[
            {"run_id": p.run.run_id, "before": _counts(p.run.outcome), "after": _counts(p.outcome)}
            for p in plans
        ],
        suite_results=[
            {
                "suite_id": p.result.suite_id,
                "run_id": p.run.run_id,
                "before": p.result.result,
                "after": p.new_result.result,
            }
            for p in plans
            if p.result is not None and p.new_result is not None
        ],
    )


def _split(plans: list[Planned]) -> tuple[list[Planned], list[Planned]]:
    """The plans whose runs (and suite results) the decision's one transaction marks - its own
    run first, as many as `TX_MARKS` allows - and the rest, marked right after it."""
    used = 0
    for i, plan in enumerate(plans):
        used += 1 + (plan.result is not None) + (plan.copy_key is not None)
        if used > TX_MARKS:
            return plans[:i], plans[i:]
    return plans, []


def _write(
    c: Container,
    who: Identity,
    before: ReviewItem,
    make: Any,
    action: str,
) -> Decided:
    """Plan, then write in one transaction, the change `make(item) -> (after, review, mark)` of
    the item; then put the planned numbers in place. Raises ConflictError when the item changed
    meanwhile (field `item_id`) or its runs kept being graded (field `run_id`)."""
    for _ in range(TRIES):
        after, review, mark = make(before)
        plans = _plan(c, before, review)
        now = iso(c.clock.now())
        after = replace(
            after, version=int(before.version) + 1, pending_runs=[p.run.run_id for p in plans]
        )
        audit = _audit(who, before, after, action, plans, now)
        own = c.runs.get_attempt(before.org_id, before.run_id, before.attempt_key)
        inside, beyond = _split(plans)
        decision = Decision(
            before=before,
            after=after,
            audit=audit,
            run_id=before.run_id if own is not None else None,
            attempt_key=before.attempt_key,
            review=review,
            runs=[StaleRun(p.run.run_id, p.run.regrades) for p in inside],
            results=[p.result for p in inside if p.result is not None],
            mark=mark,
            copies=[(p.run.run_id, p.copy_key) for p in inside if p.copy_key is not None],
        )
        if c.review.decide(decision):
            if beyond:
                c.review.mark_stale(
                    before.org_id,
                    [p.run.run_id for p in beyond],
                    [p.result for p in beyond if p.result is not None],
                    [(p.run.run_id, p.copy_key) for p in beyond if p.copy_key is not None],
                    review,
                )
            complete(c, who, after, [_as_written(p) for p in plans])
            fresh = c.review.get(before.org_id, before.dataset_id, before.item_id) or after
            return Decided(fresh, audit)
        now_item = c.review.get(before.org_id, before.dataset_id, before.item_id)
        if now_item is None:
            raise NotFoundError(
                f"review item {before.item_id} was removed meanwhile (its run or agent was "
                "deleted)",
                field="item_id",
            )
        if (now_item.state, now_item.version) != (
            before.state,
            before.version,
        ):
            raise ConflictError(
                f"review item {before.item_id} was decided or changed by somebody else meanwhile: "
                "read it again",
                field="item_id",
            )
        jitter()  # a run it rests on was graded meanwhile: plan again
    raise ConflictError(
        f"the runs review item {before.item_id} rests on keep being graded: try again",
        field="run_id",
    )


def _as_written(plan: Planned) -> Planned:
    """`plan` with its run's `regrades` as the decision's transaction left them (one more)."""
    return replace(plan, run=replace(plan.run, regrades=int(plan.run.regrades or 0) + 1))


def _outcome_in_place(c: Container, plan: Planned) -> Planned | None:
    """Write `plan`'s outcome, conditional on the run's grades being as the plan saw them
    (`plan.run.regrades`). A run graded again since (another decision on another of its answers,
    a grade again) is planned again from its grades as they stand: a plan put in place late never
    writes numbers older than the grades. Returns the plan written, None when the run is gone or
    kept being graded (it stays marked `outcome_stale`: its next read settles it)."""
    for _ in range(TRIES):
        run = c.runs.get(plan.run.org_id, plan.run.run_id)
        if run is None or run.status != RunStatus.COMPLETED:
            return None
        if c.runs.record_outcome(replace(run, regrades=plan.run.regrades), plan.outcome):
            return plan
        plan = _planned(c, run, finalize.all_attempts(c, run))
    log.warning("eval run %s kept being graded: its outcome is left marked", plan.run.run_id)
    return None


def complete(
    c: Container, who: Identity | None, item: ReviewItem | None, plans: list[Planned]
) -> None:
    """Put planned outcomes and suite results in place of the marked ones, each plan's run
    conditional on its `regrades` as the plan holds them (a written decision's: as its
    transaction left them, `_as_written`); a run graded again meanwhile is planned again from
    its grades as they stand (`_outcome_in_place`). Then tell the owners of suite results whose
    word changed, and clear the item's pending runs."""
    by = who.user_id if who is not None else ((item.decided_by if item else None) or "")
    for planned in plans:
        plan = _outcome_in_place(c, planned)
        if plan is None or plan.result is None or plan.new_result is None:
            continue
        run = plan.run
        stored = c.suites.result_of_run(
            plan.result.org_id, plan.result.agent_id, plan.result.suite_id, run.run_id
        )
        if stored is None or not c.suites.replace_result(stored, plan.new_result):
            log.warning("suite result of run %s changed meanwhile: left marked", run.run_id)
            continue
        _show_last(c, plan.new_result)
        if stored.result != plan.new_result.result:
            messagebus.publish(
                c,
                SuiteResultChanged(
                    stored.org_id,
                    stored.agent_id,
                    stored.suite_id,
                    stored.result_id,
                    stored.run_id,
                    stored.result,
                    plan.new_result.result,
                    by,
                ),
            )
    if item is not None:
        c.review.finish(item, [])


def _show_last(c: Container, result: SuiteResultEntry) -> None:
    """The suite's last result reads the word people's verdicts left, when it is that result."""

    def shown(suite: Suite) -> Suite | None:
        last = dict(suite.last_result or {})
        if last.get("result_id") != result.result_id or last.get("result") == result.result:
            return None
        return touch(c, suite, last_result={**last, "result": result.result})

    try:
        change_suite(c, result.org_id, result.agent_id, result.suite_id, shown)
    except ConflictError:
        log.warning("suite %s kept changing: its last result word was not updated", result.suite_id)


def complete_pending(c: Container, item: ReviewItem) -> ReviewItem:
    """Finish what a decision of `item` left marked (its process died before it put the numbers
    in place): its runs' outcomes and suite results are computed again as the verdict now stands.
    Returns the item as it is then."""
    if not item.pending_runs:
        return item
    review = _review_of(item) if item.state == ItemState.DECIDED else None
    plans = [p for p in _plan(c, item, review) if p.run.run_id in set(item.pending_runs)]
    complete(c, None, item, plans)
    return c.review.get(item.org_id, item.dataset_id, item.item_id) or item


def settle_run(c: Container, run: Run) -> Run:
    """A run a decision left marked (`outcome_stale`: its process died before it put the new
    numbers in place): its outcome and suite result computed again as the verdicts on its
    answers stand now. Returns the run as it is then."""
    complete(c, None, None, [_planned(c, run, finalize.all_attempts(c, run))])
    return c.runs.get(run.org_id, run.run_id) or run


def _review_of(item: ReviewItem) -> dict[str, Any]:
    return {
        "verdict": item.verdict,
        "item_id": item.item_id,
        "by": item.decided_by,
        "at": item.decided_at,
        "corrected": item.corrected,
    }


def _editable(c: Container, who: Identity, dataset_id: str, item_id: str, what: str) -> ReviewItem:
    who.require_on(access.DATASETS_EDIT, "dataset", dataset_id, what)
    item = queue.item(c, who, dataset_id, item_id)
    if item.pending_runs:
        item = complete_pending(c, item)
    return item


def decide(
    c: Container,
    who: Identity,
    dataset_id: str,
    item_id: str,
    verdict: str,
    note: str | None = None,
) -> Decided:
    """A person's verdict on a waiting item (`pass` or `fail`, with an optional note).

    Raises:
        NotFoundError: a dataset or item the caller may not see; a dataset gone or being
        deleted (field `dataset_id`, also when its delete starts meanwhile). ForbiddenError: no
        `datasets:edit` on the dataset. InvalidInputError: another verdict (field `verdict`), a
        note over `NOTE_MAX_CHARS` (field `note`). ConflictError: the item is not waiting (decided
        already, or replaced), or somebody decided it meanwhile.
    """
    try:
        word = ReviewVerdict(verdict)
    except ValueError:
        raise InvalidInputError("verdict must be pass or fail", field="verdict") from None
    if note is not None and len(note) > NOTE_MAX_CHARS:
        raise InvalidInputError(f"a note is at most {NOTE_MAX_CHARS} characters", field="note")
    item = _editable(c, who, dataset_id, item_id, "deciding a review item")
    if item.state != ItemState.WAITING:
        how = (
            f"decided already ({item.verdict}): undo it first"
            if item.state == ItemState.DECIDED
            else f"replaced by a newer answer of its case (item {item.replaced_by})"
        )
        raise ConflictError(f"review item {item_id} is {how}", field="item_id")
    kept_note = redacting.for_org(c, who.org_id).text(note) if note else None
    now = iso(c.clock.now())

    def make(before: ReviewItem) -> tuple[ReviewItem, dict[str, Any], Mark]:
        after = replace(
            before,
            state=ItemState.DECIDED.value,
            verdict=word.value,
            note=kept_note,
            decided_by=who.user_id,
            decided_at=now,
        )
        return after, _review_of(after), Mark.RELEASE

    return _write(c, who, item, make, "decide")


def undo(c: Container, who: Identity, dataset_id: str, item_id: str) -> Decided:
    """Take a decision back: the item waits again (or, when another answer of its case and agent
    waits now, stays aside as replaced by it) and every number that rested on the verdict is as
    the scorers left it.

    Raises as `decide`; ConflictError when the item is not decided.
    """
    item = _editable(c, who, dataset_id, item_id, "undoing a review decision")
    if item.state != ItemState.DECIDED:
        raise ConflictError(
            f"review item {item_id} is not decided: nothing to undo", field="item_id"
        )

    def make(before: ReviewItem) -> tuple[ReviewItem, None, Mark]:
        other = c.review.waiting(
            before.org_id, before.dataset_id, [(before.case_id, before.agent_id)]
        )
        held = other.get((before.case_id, before.agent_id))
        undone = replace(before, verdict=None, note=None, decided_by=None, decided_at=None)
        if held is not None:
            return (
                replace(undone, state=ItemState.REPLACED.value, replaced_by=held.item_id),
                None,
                Mark.KEEP,
            )
        return replace(undone, state=ItemState.WAITING.value), None, Mark.TAKE

    return _write(c, who, item, make, "undo")


def audit(c: Container, who: Identity, dataset_id: str, item_id: str | None) -> list[ReviewAudit]:
    """The dataset's review audit entries, oldest first (one item's when given). Raises
    NotFoundError for a dataset or item the caller may not see."""
    who.require_sight("dataset", dataset_id)
    c.datasets.get(who.org_id, dataset_id)
    if item_id is not None:
        queue.item(c, who, dataset_id, item_id)
    return c.review.audit(who.org_id, dataset_id, item_id)


def send_failed(c: Container, who: Identity, run_id: str, side: str) -> queue.SendResult:
    """**Send failed to review**: the failed first answers of one side of an ended run
    (`candidate` or `baseline`) that are not in the queue yet go in, as sent by hand.

    Raises:
        NotFoundError: a run the caller may not read. ForbiddenError: no `datasets:edit` on its
        dataset. InvalidInputError: an unknown side, or a run without that side (field `side`).
        ConflictError: a run still running (field `run_id`).
    """
    run = access_service.readable_run(c, who, run_id)
    who.require(
        access.DATASETS_EDIT,
        "sending answers to the review queue",
        access.dataset(run.dataset_id),
    )
    roles = {"candidate": ArmRole.CANDIDATE, "baseline": ArmRole.BASELINE}
    if side not in roles:
        raise InvalidInputError("side must be candidate or baseline", field="side")
    if not RunStatus(run.status).ended:
        raise ConflictError(
            f"eval run {run_id} is still running: send its failed answers once it has ended",
            field="run_id",
        )
    arm = next((a for a in run.arms if a.role is roles[side]), None)
    if arm is None:
        raise InvalidInputError(f"eval run {run_id} has no {side} side", field="side")
    attempts = finalize.all_attempts(c, run)
    failed = [
        queue.answered(run, row, ReviewReason.SENT_BY_HAND)
        for row in sorted(attempts, key=lambda r: r.attempt_key)
        if row.arm_id == arm.arm_id
        and int(row.attempt) == 1
        and row.state == AttemptState.FAILED.value
    ]
    return queue.send(c, run, failed, queue.attempt_rows(run, attempts), sent_by=who.user_id)
