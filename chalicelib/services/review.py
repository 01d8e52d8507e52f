"""The review queue (docs/guides/review.md): what a finished run sends to its dataset's queue,
and reading the queue. What people do in it (decisions, Undo, **Send failed to review**) is
`services.review_decisions`.

A run routes once its reruns are in, as a step of finalizing (`route_finished`, its counts kept by
the write that completes it): its confirmed regressions and the answers its judge failed to grade
go in by `domain.review_rules`. Every item's id is its answer's
(`review_rules.item_id_of`), so a finalize delivered twice routes nothing twice, and the run's
counts (`routed_to_review`, `routed_replacing`) count the answers of the run in the queue whoever
put them there. A refused send (the queue is full, the dataset is being deleted, the store fails)
leaves the run completed and says why (`routing_error`).
"""

from __future__ import annotations

import logging
from collections.abc import Sequence
from dataclasses import dataclass, replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain import access
from chalicelib.domain.enums import CaseOutcome
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Arm, Attempt, Run
from chalicelib.domain.review_items import ReviewItem
from chalicelib.domain.review_rules import (
    Answered,
    ReviewReason,
    Waiting,
    answers_to_send,
    item_id_of,
    route,
)
from chalicelib.errors import NotFoundError
from chalicelib.services import redacting
from chalicelib.services.ports.review import ItemPage, QueueFull, Sent

log = logging.getLogger(__name__)

ANSWER_KEPT_CHARS = 16_000
"""How much of an answer an item keeps (the attempt keeps all of it)."""
SEND_TRIES = 5
"""Sends of one answer tried again after the waiting item of its case and agent changed."""


@dataclass(frozen=True)
class SendResult:
    """What one send did: how many answers went in, how many of them replaced one waiting, why
    each other one did not (`[{case_id, agent_id, run_id, attempt_key, why}]`), and why the
    queue refused the rest, when it did (`error`)."""

    routed_to_review: int
    routed_replacing: int
    not_sent: list[dict[str, str]]
    error: str | None = None


def answered_at_ms(row: Attempt) -> int:
    """When an attempt was recorded (epoch ms), from its `recorded_key`."""
    head = row.recorded_key.partition("#")[0]
    return int(head) if head.isdigit() else 0


def _source(run: Run, row: Attempt) -> tuple[str, str, str]:
    """The run, arm and attempt key an answer really belongs to: a first answer a baseline
    borrowed from an earlier run is that run's."""
    arm = next((a for a in run.arms if a.arm_id == row.arm_id), None)
    if arm is not None and not arm.answers and arm.source_run_id and arm.source_arm_id:
        key = f"{arm.source_arm_id}#{row.case_id}#{int(row.attempt):03d}"
        return arm.source_run_id, arm.source_arm_id, key
    return run.run_id, row.arm_id, row.attempt_key


def answered(run: Run, row: Attempt, reason: ReviewReason) -> Answered:
    """An attempt as an answer a send may route (a borrowed first answer as its own run's)."""
    run_id, arm_id, key = _source(run, row)
    return Answered(row.case_id, run.agent_id, run_id, arm_id, key, answered_at_ms(row), reason)


def _label(arm: Arm | None) -> str:
    if arm is None:
        return ""
    if arm.draft:
        return "draft"
    return f"v{arm.version}" if arm.version is not None else arm.arm_id


def _expected(case: dict[str, Any]) -> dict[str, Any]:
    return {
        k: case[k]
        for k in ("reference", "counter_example", "expected_calls", "checks")
        if case.get(k) not in (None, [], "")
    }


def _item(
    c: Container,
    run: Run,
    rows: dict[tuple[str, str], Attempt],
    cases: dict[str, dict[str, Any]],
    answer: Answered,
    sent_by: str | None,
) -> ReviewItem:
    """The queue item of `answer` (its attempt `rows[(run_id, attempt_key)]`)."""
    row = rows[(answer.run_id, answer.attempt_key)]
    case = cases.get(answer.case_id) or {}
    text = c.bucket.get_text(row.answer_ref) if row.answer_ref else (row.answer or "")
    r = redacting.for_org(c, run.org_id)  # kept answers are redacted already; scores' reasons too
    arm = next((a for a in run.arms if a.arm_id == row.arm_id), None)
    return ReviewItem(
        item_id=item_id_of(answer.run_id, answer.attempt_key, answer.answered_at_ms),
        org_id=run.org_id,
        dataset_id=run.dataset_id,
        dataset_version=int(run.dataset_version),
        case_id=answer.case_id,
        agent_id=answer.agent_id,
        run_id=answer.run_id,
        arm_id=answer.arm_id,
        arm_label=_label(arm),
        attempt_key=answer.attempt_key,
        answered_at_ms=answer.answered_at_ms,
        reason=answer.reason.value,
        sent_at=iso(c.clock.now()),
        sent_by=sent_by,
        question=r.text(str(case.get("input", "")))[:ANSWER_KEPT_CHARS],
        answer=r.text(text[:ANSWER_KEPT_CHARS]),
        answer_truncated=len(text) > ANSWER_KEPT_CHARS or bool(row.answer_truncated),
        expected=r.value(_expected(case)),
        scores=r.value(
            [
                {k: s.get(k) for k in ("scorer", "passed", "score", "reason")}
                for s in row.scores or []
            ]
        ),
        scored_state=row.state,
        tags=[str(t) for t in case.get("tags") or []],
    )


def send(
    c: Container,
    run: Run,
    answers: Sequence[Answered],
    rows: dict[tuple[str, str], Attempt],
    *,
    sent_by: str | None = None,
) -> SendResult:
    """Send `answers` of `run` (their attempts in `rows` by (run_id, attempt_key)) to the run's
    dataset's queue by `domain.review_rules.route`. When the run sends by itself (`sent_by`
    None), an answer of it waiting in the queue already counts as sent: an earlier delivery of
    the same finalize put it there. A person's send counts only what it put in.

    When the queue refuses an answer (it holds `ASSAY_REVIEW_QUEUE_LIMIT` waiting answers, the
    dataset is being deleted) the rest are not sent and `error` says why.
    """
    if not answers:
        return SendResult(0, 0, [])
    org, dataset = run.org_id, run.dataset_id
    cases = {
        case["case_id"]: case for case in c.datasets.cases(org, dataset, int(run.dataset_version))
    }
    limit = c.settings.assay_review_queue_limit
    pending = list(answers)
    routed = replacing = 0
    not_sent: list[dict[str, str]] = []
    for _ in range(SEND_TRIES):
        held = c.review.waiting(org, dataset, {(a.case_id, a.agent_id) for a in pending})
        waiting = {
            key: Waiting(
                item.item_id,
                item.case_id,
                item.agent_id,
                item.answered_at_ms,
                item.run_id,
                item.attempt_key,
            )
            for key, item in held.items()
        }
        routing = route(pending, waiting)
        lost: list[Answered] = []
        for answer, why in routing.not_sent:
            mine = item_id_of(answer.run_id, answer.attempt_key, answer.answered_at_ms)
            own = held.get((answer.case_id, answer.agent_id))
            if own is not None and own.item_id == mine and sent_by is None:
                routed += 1  # an earlier delivery of the same finalize sent it
                replacing += own.replacing is not None
            else:
                not_sent.append(_why(answer, why))
        replaced_ids = dict((id(a), item_id) for a, item_id in routing.replacing)
        for answer in routing.sent:
            old = replaced_ids.get(id(answer))
            item = _item(c, run, rows, cases, answer, sent_by)
            if old is not None:
                item = replace(item, replacing=old)
            try:
                outcome = c.review.send(item, held.get((answer.case_id, answer.agent_id)), limit)
            except (QueueFull, NotFoundError) as exc:
                return SendResult(routed, replacing, not_sent, str(exc))
            if outcome is Sent.LOST:
                lost.append(answer)
                continue
            if outcome is Sent.EXISTS:
                kept = c.review.get(org, dataset, item.item_id)
                if kept is None or kept.state != "waiting" or sent_by is not None:
                    not_sent.append(_why(answer, f"in the queue already as item {item.item_id}"))
                    continue
                old = kept.replacing
            routed += 1
            replacing += old is not None
        if not lost:
            break
        pending = lost
    else:
        not_sent += [_why(a, "its case kept changing in the queue: send again") for a in pending]
    return SendResult(routed, replacing, not_sent)


def _why(answer: Answered, why: str) -> dict[str, str]:
    return {
        "case_id": answer.case_id,
        "agent_id": answer.agent_id,
        "run_id": answer.run_id,
        "attempt_key": answer.attempt_key,
        "why": why,
    }


def attempt_rows(run: Run, attempts: list[Attempt]) -> dict[tuple[str, str], Attempt]:
    out = {}
    for row in attempts:
        run_id, _arm, key = _source(run, row)
        out[(run_id, key)] = row
    return out


def what_run_sends(run: Run, attempts: list[Attempt]) -> list[Answered]:
    """What a completed run sends by itself: the candidate's failed first answer of each
    regression its comparison confirmed, then each answer of its own that its judge failed to
    grade (a skipped judge sends nothing)."""
    comparison = run.outcome.comparison if run.outcome is not None else None
    firsts = {(r.arm_id, r.case_id): r for r in attempts if int(r.attempt) == 1}
    confirmed = []
    if comparison is not None:
        cand = comparison.candidate_arm_id
        for flip in comparison.flips:
            row = firsts.get((cand, flip.case_id))
            if flip.outcome is CaseOutcome.REGRESSION and flip.confirmed and row is not None:
                confirmed.append(answered(run, row, ReviewReason.CONFIRMED_REGRESSION))
    borrowed = {a.arm_id for a in run.arms if not a.answers}
    judged = [
        (answered(run, row, ReviewReason.JUDGE_FAILED), row.scores or [])
        for row in sorted(attempts, key=lambda r: r.attempt_key)
        if row.arm_id not in borrowed
    ]
    return answers_to_send(confirmed, judged)


def route_finished(c: Container, run: Run, attempts: list[Attempt]) -> tuple[int, int, str | None]:
    """Send what a finished run stands behind (`what_run_sends`; `run` carries the outcome its
    finalizing computed) to its dataset's queue: `(routed_to_review, routed_replacing,
    routing_error)` for the write that completes it. Never raises: a refused or failed send says
    why and the run completes all the same. A finalize delivered again sends nothing twice and
    counts the same."""
    try:
        result = send(c, run, what_run_sends(run, attempts), attempt_rows(run, attempts))
    except Exception as exc:  # noqa: BLE001 - the run completes; its page says why nothing went
        log.exception("routing run %s to review failed", run.run_id)
        return 0, 0, f"the review queue could not be reached ({type(exc).__name__})"
    return result.routed_to_review, result.routed_replacing, result.error


def items(
    c: Container,
    who: Identity,
    dataset_id: str,
    *,
    state: str | None = None,
    agent_id: str | None = None,
    tag: str | None = None,
    limit: int = 50,
    start: str | None = None,
) -> ItemPage:
    """A page of the dataset's queue, newest answer first (only `state`, `agent_id`, `tag` when
    given). Items of agents the caller may not see are left out: they neither count toward
    `limit` nor name the next page's start, and filtering by such an agent lists nothing.

    Raises NotFoundError for a dataset the caller may not see (or another organization's)."""
    who.require_sight("dataset", dataset_id)
    c.datasets.get(who.org_id, dataset_id)
    if agent_id is not None and not who.sees("agent", agent_id):
        return ItemPage([], None)
    return c.review.page(
        who.org_id,
        dataset_id,
        state=state,
        agent_id=agent_id,
        tag=tag,
        limit=limit,
        start=start,
        keep=lambda i: who.sees("agent", i.agent_id),
    )


def waiting_count(c: Container, who: Identity, dataset_id: str) -> int:
    """How many items of the dataset's queue wait, of the agents the caller may see (a person
    seeing only some agents is not told how many answers of the others wait)."""
    if who.may(access.AGENTS_VIEW):
        return c.review.count_waiting(who.org_id, dataset_id)
    by_agent = c.review.waiting_by_agent(who.org_id, dataset_id)
    return sum(n for agent, n in by_agent.items() if who.sees("agent", agent))


def item(c: Container, who: Identity, dataset_id: str, item_id: str) -> ReviewItem:
    """One item of the dataset's queue. Raises NotFoundError (field `dataset_id`) for a dataset
    the caller may not see, that is gone or being deleted; (field `item_id`) for an item the
    caller may not see."""
    who.require_sight("dataset", dataset_id)
    c.datasets.get(who.org_id, dataset_id)
    found = c.review.get(who.org_id, dataset_id, item_id)
    if found is None or not who.sees("agent", found.agent_id):
        raise NotFoundError(f"review item {item_id} not found", field="item_id")
    return found


def names(c: Container, org_id: str, user_ids: Sequence[str]) -> dict[str, str | None]:
    """Each user id's name as the organization's members have it now (None: no longer a member):
    reviewers are shown by who they are today, never by a name copied into a result."""
    members = {m.user_id for m in c.members.list(org_id)} if user_ids else set()
    return {u: (u if u in members else None) for u in user_ids}
