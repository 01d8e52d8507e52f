"""What a run would cost, before anything is spent (docs/guides/costs.md).

Each model is priced from the agent's history on it (its average cost per case over its last
`EVAL_ESTIMATE_SAMPLE` completed runs there), else as a typical case at the model's own price, else
at `EVAL_FALLBACK_CASE_COST_USD`; the judge the same way from its own history. Runs that cost
nothing because nothing priced the model are no history (`estimate_rules.unit_cost`). The
arithmetic is `domain.estimate_rules`; this module gathers the history and the budgets.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import estimate_rules as rules
from chalicelib.domain.history import ANSWERS, GRADING, CostRow, cost_key
from chalicelib.domain.identity import Identity
from chalicelib.domain.money import micros_to_usd, usd_text, usd_to_micros
from chalicelib.domain.noise import MAX_RERUNS
from chalicelib.domain.records import BudgetReading
from chalicelib.services import baselines, budgets
from chalicelib.services.planning import Plan


def _history(
    c: Container, org_id: str, agent_id: str, models: set[str | None], judge_model: str | None
) -> tuple[dict[str | None, rules.CostHistory], dict[str | None, rules.CostHistory]]:
    """The agent's cost history on each of `models` (answers) and on `judge_model` (grading), each
    over its last `EVAL_ESTIMATE_SAMPLE` completed runs there: one read of the rows its history
    keeps per model (`domain.history.CostRow`), however many runs it has."""
    wanted = [(ANSWERS, m) for m in sorted(models, key=lambda m: (m is not None, m or ""))]
    wanted += [(GRADING, judge_model)] if judge_model else []
    rows = c.runs.history(org_id, [(agent_id, cost_key(kind, m)) for kind, m in wanted])
    sample = c.settings.eval_estimate_sample
    answers: dict[str | None, rules.CostHistory] = {}
    grading: dict[str | None, rules.CostHistory] = {}
    for kind, model in wanted:
        row = rows.get((agent_id, cost_key(kind, model)))
        history = row.history(sample) if isinstance(row, CostRow) else None
        if history is not None:
            (answers if kind == ANSWERS else grading)[model] = history
    return answers, grading


def _committed(c: Container, org_id: str, agent_id: str) -> tuple[int, int]:
    """What runs already started may still spend, `(this agent's, the organization's)` in micro-USD:
    each queued or running run's estimate less what it has spent so far. Counted against the budgets
    so that runs started together cannot each claim the same remainder. Reads the organization's
    active runs only (`Runs.active`), never its history."""
    agent = org = 0
    for run in c.runs.active(org_id):
        estimated = int(((run.settings or {}).get("estimate") or {}).get("total_micros") or 0)
        left = max(0, estimated - int(run.cost_micros or 0) - int(run.judge_cost_micros or 0))
        org += left
        agent += left if run.agent_id == agent_id else 0
    return agent, org


@dataclass(frozen=True)
class Price:
    """A planned run priced, with the budgets it leaves: what `/estimate` answers
    (`api.views.estimate_view`), what a start checks and what its 402 carries. Micro-USD."""

    plan: Plan
    estimate: rules.Estimate
    judge: rules.JudgePlan | None
    """How the judge was priced; None without a judge."""
    history: dict[str | None, rules.CostHistory]
    """The agent's answer history per model, which the arms were priced from."""
    reading: BudgetReading
    month: str
    """The month (`YYYY-MM`) of the budgets read."""
    agent_committed_micros: int
    """What the agent's runs already started may still spend."""
    org_committed_micros: int
    agent_after_micros: int | None
    """Budget - spent this month - committed - this run's total; None without a budget."""
    org_after_micros: int | None
    within_budget: bool
    note: str | None = None
    """Why a suite's run is priced without its baseline (a suite's plans only)."""
    ceiling_by_reruns: tuple[int, ...] = ()
    """The rerun ceiling (micro-USD) the same run would have at 0, 1, ... 5 reruns (index =
    reruns), for a comparison; empty for a run that compares nothing."""
    luck: dict[str, Any] | None = None
    """What the noise measured before says of these reruns (`rerun_choice.luck_advice`), on an
    estimate of a comparison; None otherwise."""

    @property
    def total_micros(self) -> int:
        """The exposure a start checks against the budgets (first pass plus rerun ceiling)."""
        return self.estimate.total_micros

    def kept(self) -> dict[str, Any]:
        """What a run keeps of its estimate (`settings.estimate`): `{first_pass_usd,
        rerun_ceiling_usd, total_usd, total_micros, basis}`."""
        est = self.estimate
        return {
            "first_pass_usd": micros_to_usd(est.first_pass_micros),
            "rerun_ceiling_usd": micros_to_usd(est.rerun_ceiling_micros),
            "total_usd": micros_to_usd(est.total_micros),
            "total_micros": est.total_micros,
            "basis": str(est.basis),
        }


def price(c: Container, who: Identity, plan: Plan) -> Price:
    """The estimate of a planned run, with the budgets it leaves.

    `*_after_micros` = budget - spent this month - what started runs may still spend - this run's
    total, computed exactly in micro-USD; `within_budget` when neither goes below zero.
    """
    s = c.settings
    fallback = {
        "fallback_input_tokens": s.eval_fallback_input_tokens,
        "fallback_output_tokens": s.eval_fallback_output_tokens,
        "fallback_case_micros": usd_to_micros(s.eval_fallback_case_cost_usd),
    }
    answers, grading = _history(
        c,
        who.org_id,
        plan.agent_id,
        {baselines.model_of(arm.spec) for arm in plan.arms},
        plan.judge.model if plan.judge is not None else None,
    )
    arm_plans = []
    for arm in plan.arms:
        model = baselines.model_of(arm.spec)
        per_case, basis = rules.unit_cost(answers.get(model), arm.spec.get("price"), **fallback)
        arm_plans.append(
            rules.ArmPlan(
                arm.arm_id,
                arm.role.value,
                model,
                per_case,
                basis,
                answers=arm.answers,
                rerun=arm.rerun,
            )
        )
    judge_plan = None
    if plan.judge is not None:
        per_call, basis = rules.unit_cost(
            grading.get(plan.judge.model), plan.judge.runtime_spec.get("price"), **fallback
        )
        judge_plan = rules.JudgePlan(per_call, basis, plan.judged)

    def priced_at(reruns: int) -> rules.Estimate:
        return rules.estimate(
            cases=plan.case_count,
            arms=arm_plans,
            judge=judge_plan,
            reruns=reruns,
            stability=plan.stability,
        )

    est = priced_at(plan.reruns)
    compares = not plan.stability and any(a.role.value == "baseline" for a in plan.arms)
    ceilings = (
        tuple(priced_at(r).rerun_ceiling_micros for r in range(MAX_RERUNS + 1)) if compares else ()
    )
    reading = budgets.read(c, who.org_id, plan.agent_id)
    exposure = est.total_micros
    agent_committed, org_committed = _committed(c, who.org_id, plan.agent_id)
    agent_used = reading.agent_spent_micros + agent_committed
    org_used = reading.org_spent_micros + org_committed
    return Price(
        plan=plan,
        estimate=est,
        judge=judge_plan,
        history=answers,
        reading=reading,
        month=budgets.month_of(c.clock.now()),
        agent_committed_micros=agent_committed,
        org_committed_micros=org_committed,
        agent_after_micros=rules.remaining_after(reading.agent_budget_micros, agent_used, exposure),
        org_after_micros=rules.remaining_after(reading.org_budget_micros, org_used, exposure),
        within_budget=rules.fits(reading.agent_budget_micros, agent_used, exposure)
        and rules.fits(reading.org_budget_micros, org_used, exposure),
        ceiling_by_reruns=ceilings,
    )


def refusal(priced: Price) -> str:
    """Why a start past a budget is refused (the 402's message)."""
    short = [
        name
        for name, after in (
            ("agent's", priced.agent_after_micros),
            ("organization's", priced.org_after_micros),
        )
        if after is not None and after < 0
    ]
    est = priced.estimate
    return (
        f"the run could cost up to {usd_text(est.total_micros)} (first pass "
        f"{usd_text(est.first_pass_micros)} plus reruns up to "
        f"{usd_text(est.rerun_ceiling_micros)}), more than is left of the "
        f"{' and the '.join(short)} monthly budget"
    )
