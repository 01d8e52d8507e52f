"""Which use case acts on which event (issue 10 scope 1): the message bus's one table.

`wire()` installs it; the composition root (`app.py`) calls it once per process, before any
route or handler runs. A publisher imports only `messagebus` and its event: the imports below
are the only place the listeners are named.
"""

from __future__ import annotations

from typing import Any

from chalicelib.domain.events import (
    BudgetExhausted,
    CaseTaskDead,
    EnvironmentRemoved,
    Event,
    GateDecided,
    GateDropped,
    GuardWithdrawn,
    OutcomeStale,
    RunEnded,
    SlotReleased,
    StarterRefused,
    SuiteJudgeRepublished,
    SuiteResultChanged,
    TasksNotQueued,
    VersionPublished,
)
from chalicelib.services import (
    finalize,
    messagebus,
    notifications,
    promotions,
    review_decisions,
    run_case,
    runs,
    slots,
    suites,
    sweep,
    usage,
)


def _check_published_version(c: Any, event: VersionPublished) -> None:
    suites.on_published(c, event.org_id, event.agent_id, event.version)


def _settle_stale_outcome(c: Any, event: OutcomeStale) -> None:
    run = c.runs.get(event.org_id, event.run_id)
    if run is not None and run.outcome_stale:
        review_decisions.settle_run(c, run)


def _tell_suite_owner(c: Any, event: SuiteResultChanged) -> None:
    notifications.suite_result_changed(c, event)


def _tell_suite_owner_of_judge(c: Any, event: SuiteJudgeRepublished) -> None:
    notifications.suite_judge_republished(c, event)


def _record_suite_result(c: Any, event: RunEnded) -> None:
    suites.run_ended(c, event.org_id, event.run_id)


def _refuse_waiting_on_guard(c: Any, event: GuardWithdrawn) -> None:
    promotions.guard_removed(c, event.org_id, event.agent_id, event.suite_id, event.reason)


def _refuse_promotion(c: Any, event: GateDropped) -> None:
    promotions.refuse(c, event.org_id, event.agent_id, event.promotion_id, event.reason)


def _hand_slots_on(c: Any, event: SlotReleased) -> None:
    slots.assign_free_slots(c, event.org_id)


def _advance_phase(c: Any, event: SlotReleased) -> None:
    finalize.advance_if_done(c, event.org_id, event.run_id)


EVENT_HANDLERS: dict[type[Event], list[messagebus.Handler]] = {
    VersionPublished: [_check_published_version],
    RunEnded: [_record_suite_result, usage.count_ended],
    SuiteResultChanged: [_tell_suite_owner],
    SuiteJudgeRepublished: [_tell_suite_owner_of_judge],
    OutcomeStale: [_settle_stale_outcome],
    EnvironmentRemoved: [suites.on_environment_removed],
    GuardWithdrawn: [_refuse_waiting_on_guard],
    GateDropped: [_refuse_promotion],
    GateDecided: [promotions.on_gate_decided],
    SlotReleased: [
        _hand_slots_on,
        _advance_phase,
        usage.count_ended,
    ],  # the slot first, then whether the phase is over; an ended run's late attempts counted
    BudgetExhausted: [runs.on_budget_exhausted],
    StarterRefused: [runs.on_starter_refused],
    CaseTaskDead: [sweep.on_case_task_dead],
    TasksNotQueued: [run_case.on_tasks_not_queued],
}


def wire() -> None:
    """Install `EVENT_HANDLERS` on the message bus (idempotent)."""
    messagebus.wire(EVENT_HANDLERS)
