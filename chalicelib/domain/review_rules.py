"""The review queue's rules (to be documented in docs/guides/datasets.md): what a finished run sends
to its dataset's review queue, how an answer takes the place of one waiting, and how a person's
verdict stands in for the scorers' outcome of a case.

What a run sends, once its reruns are in (`answers_to_send`): each regression it confirmed (the
candidate's failed first answer of the case) and each answer its judge failed to grade, one per
case and agent. A judge that was skipped sends nothing: its answers wait on the run's page to be
graded again. **Send failed to review** sends one side's other failed answers (`SENT_BY_HAND`).

Routing (`route`), per (case, agent): an answer takes the place of an older one still waiting
(counted as replacing: the queue stays undecided for the case); an answer older than the one
waiting is not sent, nor is the very answer waiting (a finalize delivered twice routes nothing
twice); another agent's answer to the case waits beside it. Of several answers of one case and
agent in one send, the newest goes (a confirmed regression before a judge failure of the same
moment).

A person's verdict (`reviewed_tries`) replaces every try of the case: a case a person passed
counts passed over both tries, whatever its scorers said.

Pure: no I/O, no clock.
"""

from __future__ import annotations

import hashlib
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from typing import Any

from chalicelib.domain.enums import AttemptState
from chalicelib.domain.judge_rules import JUDGE_SCORER

__all__ = [
    "SKIPPED_PREFIX",
    "Answered",
    "ReviewReason",
    "ReviewVerdict",
    "Routing",
    "Waiting",
    "answers_to_send",
    "item_id_of",
    "judge_failed",
    "reviewed_tries",
    "route",
]

SKIPPED_PREFIX = "judge skipped"
"""How the reason of a judge score that was skipped (not asked) begins; a judge that was asked and
could not grade says anything else."""


class ReviewReason(StrEnum):
    """Why an answer was sent to review: a regression the run confirmed, an answer its judge
    failed to grade, or a person sent it (**Send failed to review**)."""

    CONFIRMED_REGRESSION = "confirmed_regression"
    JUDGE_FAILED = "judge_failed"
    SENT_BY_HAND = "sent_by_hand"


class ReviewVerdict(StrEnum):
    """A person's verdict on an answer in the queue."""

    PASS = "pass"
    FAIL = "fail"


_PRECEDENCE = {
    ReviewReason.CONFIRMED_REGRESSION: 0,
    ReviewReason.JUDGE_FAILED: 1,
    ReviewReason.SENT_BY_HAND: 2,
}


@dataclass(frozen=True)
class Answered:
    """An answer a run may send to review.

    `answered_at_ms`: when the attempt was recorded (epoch ms): which of two answers of a case and
    agent is the newer. `attempt_key`: the attempt (`arm#case#attempt`) of run `run_id`.
    """

    case_id: str
    agent_id: str
    run_id: str
    arm_id: str
    attempt_key: str
    answered_at_ms: int
    reason: ReviewReason


@dataclass(frozen=True)
class Waiting:
    """An item of the queue still waiting for a person: its case and agent, and when the answer it
    holds was recorded (epoch ms), of which run and attempt."""

    item_id: str
    case_id: str
    agent_id: str
    answered_at_ms: int
    run_id: str
    attempt_key: str


@dataclass(frozen=True)
class Routing:
    """What one send does.

    `sent`: the answers that go into the queue (those replacing a waiting item included), in the
    order given. `replacing`: `(answer, item_id)` for each sent answer that takes the place of a
    waiting item. `not_sent`: `(answer, why)` for each that does not go.
    """

    sent: tuple[Answered, ...]
    replacing: tuple[tuple[Answered, str], ...]
    not_sent: tuple[tuple[Answered, str], ...]

    @property
    def routed_to_review(self) -> int:
        """How many answers went into the queue (the run's `routed_to_review`)."""
        return len(self.sent)

    @property
    def routed_replacing(self) -> int:
        """How many of them took the place of one waiting (the run's `routed_replacing`)."""
        return len(self.replacing)


def item_id_of(run_id: str, attempt_key: str, answered_at_ms: int) -> str:
    """The queue item of an answer: the same for the same answer, so an answer goes into the
    queue at most once whoever sends it and however often; items sort by when the answer was
    recorded (`ri<epoch ms, 13 digits><16 hex>`)."""
    digest = hashlib.sha256(f"{run_id}#{attempt_key}".encode()).hexdigest()[:16]
    return f"ri{answered_at_ms:013d}{digest}"


def judge_failed(scores: Iterable[Mapping[str, Any]]) -> bool:
    """Whether an attempt's judge was asked and failed to grade it: its judge score decides
    nothing (`passed` None) and does not say the judge was skipped."""
    for score in scores:
        if score.get("scorer") != JUDGE_SCORER or score.get("passed") is not None:
            continue
        reason = str(score.get("reason") or "")
        if not reason.startswith(SKIPPED_PREFIX):
            return True
    return False


def answers_to_send(
    confirmed_regressions: Iterable[Answered], judged: Iterable[tuple[Answered, Sequence[Any]]]
) -> list[Answered]:
    """What a finished run sends by itself: its confirmed regressions (given as the candidate's
    failed answers, reason `CONFIRMED_REGRESSION`), then each answer whose judge failed to grade it
    (`judged`: `(answer, its scores)`; a skipped judge sends nothing), as `JUDGE_FAILED`."""
    out = list(confirmed_regressions)
    for answer, scores in judged:
        if judge_failed(scores):
            out.append(
                Answered(
                    answer.case_id,
                    answer.agent_id,
                    answer.run_id,
                    answer.arm_id,
                    answer.attempt_key,
                    answer.answered_at_ms,
                    ReviewReason.JUDGE_FAILED,
                )
            )
    return out


def _newest(answers: Iterable[Answered]) -> dict[tuple[str, str], Answered]:
    """The answer that goes for each (case, agent): the newest; at the same moment the one of the
    stronger reason, then the first given."""
    chosen: dict[tuple[str, str], Answered] = {}
    for answer in answers:
        key = (answer.case_id, answer.agent_id)
        held = chosen.get(key)
        if held is None or (answer.answered_at_ms, -_PRECEDENCE[answer.reason]) > (
            held.answered_at_ms,
            -_PRECEDENCE[held.reason],
        ):
            chosen[key] = answer
    return chosen


def route(answers: Sequence[Answered], waiting: Mapping[tuple[str, str], Waiting]) -> Routing:
    """What sending `answers` does, given the items still waiting by (case_id, agent_id) (the
    module's rules).

    Returns a `Routing`; `not_sent` says for each answer left out why: another answer of its case
    and agent in the same send is newer, it is the answer already waiting, or it is older than
    the one waiting.
    """
    chosen = _newest(answers)
    sent: list[Answered] = []
    replacing: list[tuple[Answered, str]] = []
    not_sent: list[tuple[Answered, str]] = []
    for answer in answers:
        key = (answer.case_id, answer.agent_id)
        if chosen[key] is not answer:
            not_sent.append((answer, "a newer answer of the case and agent goes instead"))
            continue
        held = waiting.get(key)
        if held is None:
            sent.append(answer)
        elif (held.run_id, held.attempt_key) == (answer.run_id, answer.attempt_key):
            not_sent.append((answer, f"already waiting as item {held.item_id}"))
        elif answer.answered_at_ms <= held.answered_at_ms:
            not_sent.append((answer, f"older than the answer waiting as item {held.item_id}"))
        else:
            sent.append(answer)
            replacing.append((answer, held.item_id))
    return Routing(tuple(sent), tuple(replacing), tuple(not_sent))


def reviewed_tries(
    tries: Sequence[AttemptState], verdict: ReviewVerdict | None
) -> tuple[AttemptState, ...]:
    """A case's tries as its numbers count them: as recorded without a person's verdict; with
    one, every try takes the verdict (a pass or a fail over both tries)."""
    if verdict is None:
        return tuple(tries)
    state = AttemptState.PASSED if verdict is ReviewVerdict.PASS else AttemptState.FAILED
    return tuple(state for _ in tries)
