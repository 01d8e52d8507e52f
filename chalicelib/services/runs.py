"""Starting and cancelling eval runs (docs/architecture/run-lifecycle.md); reading them
(`run_reads`) and deleting them (`run_deletion`) are named here too, for their callers."""

from __future__ import annotations

import uuid
from dataclasses import dataclass
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.enums import RunPhase, RunPurpose, RunStatus
from chalicelib.domain.evaluations import implied_id
from chalicelib.domain.events import BudgetExhausted, OutcomeStale, StarterRefused
from chalicelib.domain.identity import Identity
from chalicelib.domain.limits import MAX_RUN_ITEM_BYTES, case_ids_bytes
from chalicelib.domain.outcome import ArmResult
from chalicelib.domain.records import Agent, Attempt, Run
from chalicelib.domain.run_rules import Lanes
from chalicelib.domain.spec import canonical_json, spec_hash
from chalicelib.errors import BudgetExceededError, ConflictError, PayloadTooLargeError
from chalicelib.services import access as access_service
from chalicelib.services import estimates, finalize, messagebus, slots
from chalicelib.services.planning import Plan
from chalicelib.services.ports.telemetry import Metric
from chalicelib.services.run_deletion import borrowers as borrowers
from chalicelib.services.run_deletion import delete_run as delete_run
from chalicelib.services.run_deletion import forget as forget
from chalicelib.services.run_deletion import keep_borrowed as keep_borrowed
from chalicelib.services.run_plans import estimate as estimate
from chalicelib.services.run_plans import isolation as isolation
from chalicelib.services.run_plans import of_evaluation as of_evaluation
from chalicelib.services.run_plans import plan_run as plan_run
from chalicelib.services.run_plans import resolve_candidate as resolve_candidate
from chalicelib.services.run_plans import version_before as version_before
from chalicelib.services.run_reads import CasesPage as CasesPage
from chalicelib.services.run_reads import RunEvents as RunEvents
from chalicelib.services.run_reads import RunList as RunList
from chalicelib.services.run_reads import SpecChanges as SpecChanges
from chalicelib.services.run_reads import arm_spec as arm_spec
from chalicelib.services.run_reads import cases as cases
from chalicelib.services.run_reads import comparison as comparison
from chalicelib.services.run_reads import events as events
from chalicelib.services.run_reads import list_runs as list_runs
from chalicelib.services.run_reads import spec_changes as spec_changes


def start_run(
    c: Container,
    who: Identity,
    agent_id: str,
    body: dict[str, Any],
    *,
    planned: tuple[Plan, estimates.Price] | None = None,
    purpose: str | None = None,
    extra_settings: dict[str, Any] | None = None,
) -> tuple[Run, list[str]]:
    """Start an eval run: plan it, price it, refuse past a budget, write it, claim slots.

    Args:
        planned: a plan and its price already made (a suite plans and prices before it starts).
        purpose: the run's purpose (`check`, `stability`, `suite`, `gate`).
        extra_settings: kept in the run's settings (a suite's id and trigger).
    Returns:
        (the run as written, warnings for the caller).
    Raises:
        what `plan_run` raises; BudgetExceededError (402) when the first pass plus the rerun ceiling
        exceeds what is left of the agent's or the organization's monthly budget (its `estimate`
        detail the `Price`, shaped by the API).
    """
    if planned is None:
        body = of_evaluation(c, who, agent_id, body)
        plan = plan_run(c, who, agent_id, body)
        planned = plan, estimates.price(c, who, plan)
    plan, priced = planned
    if not priced.within_budget:
        raise BudgetExceededError(estimates.refusal(priced), field="budget", estimate=priced)
    now = c.clock.now()
    settings = c.settings
    c.orgs.ensure(who.org_id, now_iso=iso(now))
    arms, dataset_version = plan.arms, plan.dataset
    planned_bytes = case_ids_bytes(list(dataset_version.case_ids or [])) + sum(
        len(canonical_json(a.spec).encode()) for a in arms
    )
    if planned_bytes > MAX_RUN_ITEM_BYTES:
        raise PayloadTooLargeError(
            f"the run would keep {planned_bytes} bytes of case ids and specs (a copy of each "
            f"side's spec); a run keeps at most {MAX_RUN_ITEM_BYTES}: fewer sides, smaller specs "
            "or a dataset with shorter case ids",
            field="dataset_id",
        )
    total = sum(1 for a in arms if a.answers) * plan.case_count
    lanes = Lanes.start(settings.eval_run_concurrency)
    run = Run(
        run_id=f"run_{uuid.uuid4().hex[:16]}",
        org_id=who.org_id,
        agent_id=agent_id,
        dataset_id=dataset_version.dataset_id,
        dataset_version=int(dataset_version.version),
        created_at=iso(now),
        created_by=who.user_id,
        status=RunStatus.QUEUED.value,
        phase=RunPhase.ANSWERING.value,
        purpose=purpose or (RunPurpose.STABILITY if plan.stability else RunPurpose.CHECK).value,
        candidate="draft" if plan.draft else "version",
        resolved_version=plan.version,
        draft=plan.draft,
        spec_hash=spec_hash(plan.spec),
        environment_id=body.get("environment_id"),
        arms=tuple(arms),
        case_ids_text="\n".join(dataset_version.case_ids or []),
        scoring=plan.scoring,
        settings={
            "run_concurrency": settings.eval_run_concurrency,
            "reruns": plan.reruns,
            **({"reruns_auto": plan.reruns_auto} if plan.reruns_auto is not None else {}),
            "case_timeout_seconds": settings.evaluation_case_timeout_seconds,
            **plan.info,
            "warnings": plan.warnings,
            "judge_model": plan.judge.model if plan.judge else None,
            "estimate": priced.kept(),
            "started_by_key": who.key_id,
            # the service itself (a pipeline's publish) runs with no person's authority to check
            "runs_as_starter": who.permissions is not None,
            "isolation": plan.isolation,
            **(extra_settings or {}),
        },
        tasks=None,
        tasks_total=total,
        next_index=0,
        slots=0,
        lane_next=lanes.next,
        lane_busy=lanes.busy,
        lane_end=lanes.end,
        expected=total,
        heartbeat_at_ms=epoch_ms(now),
        evaluation_id=body.get("evaluation_id") or implied_id(agent_id, dataset_version.dataset_id),
    )
    c.runs.create(run)
    slots.enqueue_run(c, run)
    c.metrics.add(Metric.RUNS_STARTED)
    return c.runs.get(who.org_id, run.run_id) or run, plan.warnings


@dataclass(frozen=True)
class RunRead:
    """One run as `GET /eval-runs/{id}` reads it: the run, each arm's result while it has no
    kept outcome, the judge scores that graded nothing, and its attempts (by `attempt_key`) when
    asked for."""

    run: Run
    summaries: dict[str, ArmResult] | None
    """Computed now for a run that is not completed (or has no outcome); else None: the kept
    outcome's `arms` stand."""
    ungraded_score_ids: list[str]
    attempts: list[Attempt] | None
    draft_hash_now: str | None = None
    """The agent's draft spec hash as it is now (a draft run's page offers Test again when it
    differs from the run's); None for a run of a version."""
    published_as: int | None = None
    """For a completed draft run whose draft is unchanged since: the agent's latest version when
    that draft is its spec (published already: nothing to publish), else None."""


def read_run(c: Container, who: Identity, run_id: str, *, with_results: bool = True) -> RunRead:
    """One run with each arm's result, its outcome and (by default) every attempt, its borrowed
    first answers too. Raises NotFoundError."""
    run = access_service.readable_run(c, who, run_id)
    if run.outcome_stale and run.status == RunStatus.COMPLETED:
        # A decision's process died before it put its numbers in place: they are put now.
        messagebus.publish(c, OutcomeStale(run.org_id, run.run_id))
        run = c.runs.get(run.org_id, run.run_id) or run
    attempts = finalize.all_attempts(c, run)
    summaries = None
    if not run.outcome or run.status != RunStatus.COMPLETED:
        summaries = finalize.arm_results(c, run, attempts, finalize.summarize(run, attempts))
    agent = c.agents.get(who.org_id, run.agent_id) if run.draft else None
    return RunRead(
        run,
        summaries,
        finalize.ungraded_score_ids(run, attempts),
        sorted(attempts, key=lambda r: r.attempt_key) if with_results else None,
        agent.draft_spec_hash if agent is not None else None,
        _published_as(c, run, agent),
    )


def _published_as(c: Container, run: Run, agent: Agent | None) -> int | None:
    """`RunRead.published_as`, with the agent `read_run` already read: one version read, made
    only for a completed draft run (what offers Publish), never while a page polls a run."""
    if (
        agent is None
        or run.status != RunStatus.COMPLETED
        or not agent.latest_version
        or agent.draft_spec_hash != run.spec_hash
    ):
        return None
    latest = c.agents.get_version(run.org_id, run.agent_id, int(agent.latest_version))
    return int(latest.version) if latest and latest.spec_hash == agent.draft_spec_hash else None


def cancel_run(c: Container, who: Identity, run_id: str) -> Run:
    """Cancel: running cases finish and are kept, nothing else starts
    (docs/architecture/run-lifecycle.md).

    Each running case keeps its organization slot until it ends. Raises ConflictError when the
    run has already ended.
    """
    run = access_service.readable_run(c, who, run_id)
    access_service.check_own_or_edit(who, run, "cancelling")
    if not end_run(c, run, RunStatus.CANCELLED, f"cancelled by {who.user_id}"):
        raise ConflictError(
            f"eval run {run_id} already ended ({(c.runs.get(who.org_id, run_id) or run).status})",
            field="run_id",
        )
    return c.runs.get_for_org(who.org_id, run_id)


def on_budget_exhausted(c: Container, event: BudgetExhausted) -> None:
    """A case found a budget spent: the run ends `budget_exceeded` (if it has not ended already)."""
    run = c.runs.get(event.org_id, event.run_id)
    if run is not None:
        end_run(c, run, RunStatus.BUDGET_EXCEEDED, event.reason)


def on_starter_refused(c: Container, event: StarterRefused) -> None:
    """A case found the run's starter can no longer run it: the run ends `failed` with the
    reason; its running cases finish, nothing else starts."""
    run = c.runs.get(event.org_id, event.run_id)
    if run is not None:
        end_run(c, run, RunStatus.FAILED, event.reason)


def end_run(c: Container, run: Run, status: RunStatus, reason: str) -> bool:
    """End a queued or running run as `status` (cancelled, budget_exceeded): its running cases
    finish and keep their slots until they do; nothing else starts. False when it had ended."""
    ok = c.runs.end(run, status, reason, iso(c.clock.now()))
    if ok:
        finalize.count_end(c, status)
        c.orgs.remove_waiting(run.org_id, run.run_id)
        finalize.ended(c, run.org_id, run.run_id)
    return ok
