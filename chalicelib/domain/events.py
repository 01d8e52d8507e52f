"""What one use case tells another (issue 10 scope 1): facts, in the past tense, as frozen values.

A service that did something publishes an event (`services.messagebus.publish`); the services
that act on it are its handlers, wired in one table (`services.handlers`), so the one that tells
never imports the ones that listen - and the service modules form a graph, not a ring
(cosmicpython's message bus, chapter 8). Handlers run at once, in the publisher's call, in the
order the table lists them; what a handler raises reaches the publisher.
"""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, slots=True)
class Event:
    """Every event names the organization whose data it is about."""

    org_id: str


@dataclass(frozen=True, slots=True)
class VersionPublished(Event):
    """`version` of `agent_id` was published (by the API or the publish pipeline); suites on
    publish check it. Published again on a redelivery: handlers are idempotent."""

    agent_id: str
    version: int


@dataclass(frozen=True, slots=True)
class RunEnded(Event):
    """An eval run reached its end (completed, failed, cancelled, over budget); its suite, if a
    suite started it, records a result."""

    run_id: str


@dataclass(frozen=True, slots=True)
class EnvironmentRemoved(Event):
    """An environment was deleted; `was_default` when it was the organization's default (suites
    without an environment of their own ran in it)."""

    environment_id: str
    was_default: bool


@dataclass(frozen=True, slots=True)
class GuardWithdrawn(Event):
    """A suite stopped guarding (taken off, or deleted) before it decided: promotions waiting
    for it are refused with `reason`."""

    agent_id: str
    suite_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class GateDropped(Event):
    """A guard will not check the version a waiting promotion asked it to (paused, or the suite
    that started the check is gone): the promotion is refused with `reason`."""

    agent_id: str
    promotion_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class GateDecided(Event):
    """A guard's check of a waiting promotion's version ended with a suite result."""

    agent_id: str
    promotion_id: str
    suite_id: str
    result: str
    """The suite result word (`SuiteResult`): only `passed` opens the gate."""
    run_id: str | None
    reasons: tuple[str, ...]


@dataclass(frozen=True, slots=True)
class OutcomeStale(Event):
    """A completed run is read while a review decision's mark is still on its outcome (the
    decision's process died before it put the new numbers in place): they are put in place."""

    run_id: str


@dataclass(frozen=True, slots=True)
class SuiteResultChanged(Event):
    """A person's decision (or Undo) in the review queue changed the word of a kept suite result:
    its owner is told. `by`: who decided."""

    agent_id: str
    suite_id: str
    result_id: str
    run_id: str | None
    before: str
    after: str
    by: str


@dataclass(frozen=True, slots=True)
class SuiteJudgeRepublished(Event):
    """A suite's result could not be compared with the run before it because the judge grading
    its dataset was published again in between (`judge_id`: version `before` graded that run,
    `after` graded this one; `run_id`: the result's run): its owner is told, even amid a run of
    bad results already told."""

    agent_id: str
    suite_id: str
    run_id: str
    judge_id: str
    before: int
    after: int


@dataclass(frozen=True, slots=True)
class SlotReleased(Event):
    """A case attempt of `run_id` was recorded and its slot went back to the organization: the
    slot is handed on, and the run's phase may be over."""

    run_id: str


@dataclass(frozen=True, slots=True)
class BudgetExhausted(Event):
    """A case found a budget spent: the run ends `budget_exceeded` with `reason`."""

    run_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class CaseTaskDead(Event):
    """A case task of a running run kept failing on assay's own error - its attempt's
    `EVAL_CASE_ERROR_TRIES`-th failure, or its message reached the dead-letter queue: the run
    ends `failed` at once (docs/architecture/run-lifecycle.md). `error`: what failed, redacted
    ("" when nothing named it)."""

    run_id: str
    error: str


@dataclass(frozen=True, slots=True)
class StarterRefused(Event):
    """A case found that the person the run runs as can no longer run it (docs/reference/access.md):
    the run ends `failed` with `reason`; running cases finish."""

    run_id: str
    reason: str


@dataclass(frozen=True, slots=True)
class TasksNotQueued(Event):
    """Claimed case tasks of `run_id` (their indices in its plan) could not be sent to the queue:
    each is recorded `incomplete`, which also gives its slot back
    (docs/architecture/run-lifecycle.md)."""

    run_id: str
    indices: tuple[int, ...]
