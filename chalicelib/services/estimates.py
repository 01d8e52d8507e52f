"""What a run would cost, before anything is spent (seed 004 "Starting a run", "The budget it leaves").

Each model is priced from the agent's history on it (its average cost per case over its last
`EVAL_ESTIMATE_SAMPLE` completed runs there), else as a typical case at the model's own price, else
at `EVAL_FALLBACK_CASE_COST_USD`; the judge the same way from its own history. The arithmetic is
`domain.estimate`; this module gathers the history and the budgets.
"""

from __future__ import annotations

from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import estimate_rules as rules
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.identity import Identity
from chalicelib.domain.money import micros_to_usd, usd_text, usd_to_micros
from chalicelib.domain.records import Run
from chalicelib.services import baselines, budgets, environments
from chalicelib.services.planning import Plan


def _history(c: Container, recent: list[Run], org_id: str) -> tuple[dict[str | None, rules.CostHistory],
                                                                      dict[str | None, rules.CostHistory]]:
    """The agent's cost history per model (answers) and per judge model (grading), each over its
    last `EVAL_ESTIMATE_SAMPLE` completed runs on that model, from its newest runs `recent`."""
    sample = c.settings.eval_estimate_sample
    answers: dict[str | None, list[int]] = {}
    grading: dict[str | None, list[int]] = {}
    for run in recent:
        if run.org_id != org_id or run.status != RunStatus.COMPLETED:
            continue
        results = run.outcome.arms if run.outcome is not None else {}
        this_run: dict[str | None, list[int]] = {}
        for arm in run.arms:
            result = results.get(arm.arm_id)
            eff = result.efficiency if result is not None else None
            if arm.answers and eff is not None and eff.attempts:
                acc = this_run.setdefault(baselines.model_of(arm.spec), [0, 0])
                acc[0] += eff.cost_micros or 0
                acc[1] += eff.attempts
        judge_model = (run.settings or {}).get("judge_model")
        for totals, model, cost, count in (
                *((answers, m, v[0], v[1]) for m, v in this_run.items()),
                *([(grading, judge_model, int(run.judge_cost_micros or 0), int(run.judge_calls or 0))]
                  if judge_model and int(run.judge_calls or 0) else [])):
            acc = totals.setdefault(model, [0, 0, 0])
            if acc[2] < sample:   # this model's newest `sample` runs only
                acc[0], acc[1], acc[2] = acc[0] + cost, acc[1] + count, acc[2] + 1
    return ({m: rules.CostHistory(*v) for m, v in answers.items()},
            {m: rules.CostHistory(*v) for m, v in grading.items()})


def _committed(c: Container, org_id: str, agent_id: str) -> tuple[int, int]:
    """What runs already started may still spend, `(this agent's, the organization's)` in micro-USD:
    each queued or running run's estimate less what it has spent so far. Counted against the budgets
    so that runs started together cannot each claim the same remainder."""
    agent = org = 0
    for run in c.runs.recent_active(org_id, environments.RECENT_RUNS):
        estimated = int(((run.settings or {}).get("estimate") or {}).get("total_micros") or 0)
        left = max(0, estimated - int(run.cost_micros or 0) - int(run.judge_cost_micros or 0))
        org += left
        agent += left if run.agent_id == agent_id else 0
    return agent, org


def price(c: Container, who: Identity, plan: Plan) -> dict[str, Any]:
    """The estimate of a planned run, with the budgets it leaves (the `/estimate` response).

    Returns `{cases, ungraded_cases, judged_cases, arms: [...], judge, first_pass_usd,
    rerun_ceiling_usd, total_usd, basis, reused_baseline_run_id, missing_baseline_version,
    budgets: {agent, organization}, agent_committed_usd, org_committed_usd, agent_after_usd,
    org_after_usd, within_budget, warnings}`; money in USD, computed exactly in micro-USD.
    `*_after_usd` = budget - spent this month - what started runs may still spend - this run's total.
    """
    s = c.settings
    fallback = {"fallback_input_tokens": s.eval_fallback_input_tokens,
                "fallback_output_tokens": s.eval_fallback_output_tokens,
                "fallback_case_micros": usd_to_micros(s.eval_fallback_case_cost_usd)}
    answers, grading = _history(c, plan.recent_runs, who.org_id)
    arm_plans = []
    for arm in plan.arms:
        model = baselines.model_of(arm.spec)
        per_case, basis = rules.unit_cost(answers.get(model), arm.spec.get("price"), **fallback)
        arm_plans.append(rules.ArmPlan(arm.arm_id, arm.role.value, model, per_case, basis,
                                       answers=arm.answers, rerun=arm.rerun))
    judge_plan = None
    if plan.judge is not None:
        per_call, basis = rules.unit_cost(grading.get(plan.judge.model), plan.judge.runtime_spec.get("price"),
                                          **fallback)
        judge_plan = rules.JudgePlan(per_call, basis, plan.judged)
    est = rules.estimate(cases=plan.case_count, arms=arm_plans, judge=judge_plan, reruns=plan.reruns,
                         stability=plan.stability)
    reading = budgets.read(c, who.org_id, plan.agent_id)
    exposure = est.total_micros
    agent_committed, org_committed = _committed(c, who.org_id, plan.agent_id)
    agent_used, org_used = reading.agent_spent_micros + agent_committed, reading.org_spent_micros + org_committed
    agent_after = rules.remaining_after(reading.agent_budget_micros, agent_used, exposure)
    org_after = rules.remaining_after(reading.org_budget_micros, org_used, exposure)
    now = c.clock.now()
    return {
        "agent_id": plan.agent_id, "dataset_id": plan.dataset.dataset_id, "dataset_version": int(plan.dataset.version),
        "candidate": "draft" if plan.draft else "version", "resolved_version": plan.version,
        "cases": plan.case_count, "ungraded_cases": plan.ungraded, "judged_cases": plan.judged,
        "reruns": plan.reruns,
        "arms": [{"arm_id": a.arm_id, "role": a.role, "model": a.model, "basis": str(a.basis),
                  "per_case_usd": micros_to_usd(a.per_case_micros), "first_pass_usd": micros_to_usd(a.first_pass_micros),
                  "rerun_ceiling_usd": micros_to_usd(a.rerun_ceiling_micros),
                  "runs_sampled": (history.runs if (history := answers.get(a.model)) and a.basis == "history" else 0),
                  **({"reused_run_id": plan.info.get("reused_baseline_run_id")} if a.basis == "reused" else {})}
                 for a in est.arms],
        "judge": None if plan.judge is None or judge_plan is None else {
            "judge_id": plan.judge.judge_id, "version": plan.judge.version, "model": plan.judge.model,
            "basis": str(judge_plan.basis), "per_call_usd": micros_to_usd(rules.round_half_up(judge_plan.per_call)),
            "first_pass_usd": micros_to_usd(est.judge_first_pass_micros),
            "rerun_ceiling_usd": micros_to_usd(est.judge_rerun_ceiling_micros)},
        "first_pass_usd": micros_to_usd(est.first_pass_micros),
        "rerun_ceiling_usd": micros_to_usd(est.rerun_ceiling_micros),
        "total_usd": micros_to_usd(est.total_micros), "basis": str(est.basis),
        "reused_baseline_run_id": plan.info.get("reused_baseline_run_id"),
        "missing_baseline_version": plan.info.get("missing_baseline_version"),
        "budgets": {"agent": budgets.view(reading, scope="agent", now=now),
                    "organization": budgets.view(reading, scope="organization", now=now)},
        "agent_after_usd": None if agent_after is None else micros_to_usd(agent_after),
        "org_after_usd": None if org_after is None else micros_to_usd(org_after),
        "agent_committed_usd": micros_to_usd(agent_committed), "org_committed_usd": micros_to_usd(org_committed),
        "within_budget": rules.fits(reading.agent_budget_micros, agent_used, exposure)
        and rules.fits(reading.org_budget_micros, org_used, exposure),
        "total_micros": est.total_micros,
        "warnings": list(plan.warnings),
    }


def refusal(priced: dict[str, Any]) -> str:
    """Why a start past a budget is refused (the 402's message)."""
    short = [name for name, key in (("agent's", "agent_after_usd"), ("organization's", "org_after_usd"))
             if priced[key] is not None and priced[key] < 0]
    return (f"the run could cost up to {usd_text(usd_to_micros(priced['total_usd']))} (first pass "
            f"{usd_text(usd_to_micros(priced['first_pass_usd']))} plus reruns up to "
            f"{usd_text(usd_to_micros(priced['rerun_ceiling_usd']))}), more than is left of the "
            f"{' and the '.join(short)} monthly budget")
