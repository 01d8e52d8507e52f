"""What a run will cost before it starts, and the budget it leaves (docs/guides/costs.md).

Pure: the service gathers cost history, prices and budgets; these rules add them up. Money is exact
throughout: per-unit costs are `Fraction`s of a micro-USD (an average over attempts rarely divides
evenly), and only each reported component is rounded, half up, to integer micro-USD. Totals are
sums of those rounded components, so the parts shown always add up to the total shown.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from enum import StrEnum
from fractions import Fraction
from typing import Any

from chalicelib.domain.money import to_decimal

CANDIDATE = "candidate"
BASELINE = "baseline"
_ROLES = (CANDIDATE, BASELINE)


class Basis(StrEnum):
    """What a cost figure rests on: the API's `basis` strings."""

    HISTORY = "history"
    """Averaged over the agent's (or judge's) recent completed runs on that model."""
    FALLBACK = "fallback"
    """A rough guess: a typical case at the model's price, or the flat per-case cost."""
    REUSED = "reused"
    """First answers borrowed from an earlier run; they cost nothing now."""


@dataclass(frozen=True, slots=True)
class CostHistory:
    """Recent spending on one model, as the service summed it from completed runs."""

    cost_micros: int
    """Total micro-USD spent over `attempts`."""
    attempts: int
    """How many attempts it paid for: case answers for an agent, calls for a judge."""
    runs: int
    """How many runs those attempts came from (reported, not used in the arithmetic)."""


def _non_negative(value: int, name: str) -> None:
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value!r}")


def _exact(value: Any, name: str) -> Fraction:
    # A float here would smuggle binary rounding into money; only exact numbers are accepted.
    if isinstance(value, bool) or not isinstance(value, (int, Fraction)):
        raise TypeError(f"{name} must be an int or a Fraction of micro-USD, got {value!r}")
    if value < 0:
        raise ValueError(f"{name} must not be negative, got {value!r}")
    return Fraction(value)


def round_half_up(value: Fraction) -> int:
    """`value` to the nearest integer, halves rounded up (2.5 -> 3): how every component is
    shown."""
    return (2 * value.numerator + value.denominator) // (2 * value.denominator)


def unit_cost(
    history: CostHistory | None,
    price: Mapping[str, Any] | None,
    *,
    fallback_input_tokens: int,
    fallback_output_tokens: int,
    fallback_case_micros: int,
) -> tuple[Fraction, Basis]:
    """Micro-USD one attempt (a case answer or a judge call) is expected to cost, and on what basis.

    Args:
        history: recent spending on the model, or None when there is none.
        price: the model's `price` block,
            `{"input_per_mtok_usd": "0.15", "output_per_mtok_usd": "0.60"}` (USD per 1M tokens, as
            `money.token_cost_micros` reads it), or None/empty when nothing prices the model.
        fallback_input_tokens, fallback_output_tokens: a typical case (`EVAL_FALLBACK_INPUT_TOKENS`,
            `EVAL_FALLBACK_OUTPUT_TOKENS`).
        fallback_case_micros: `EVAL_FALLBACK_CASE_COST_USD` in micro-USD, for a model nothing
            prices.

    Returns:
        `(Fraction(cost_micros, attempts), HISTORY)` when the history has attempts and says what
        they cost; else the exact, unrounded micro-USD of the typical case at `price`, `FALLBACK`;
        else `(fallback_case_micros, FALLBACK)`.

    A history that cost nothing while no `price` is given says nothing of the model's cost: its
    answers were priced by nothing (no price, no cost the agent reported), so they were charged
    nothing. It is not read as "free" - that would estimate $0.00 after the first run where the
    first estimate said the fallback - and the model stays unpriced (`fallback_case_micros`)
    until a price or a reported cost says otherwise. A model that is free says so with a zero
    `price`.

    Raises:
        ValueError: a malformed price (naming the field, as `money.to_decimal` does), or a negative
            history cost, token count or fallback cost.
    """
    _non_negative(fallback_input_tokens, "fallback_input_tokens")
    _non_negative(fallback_output_tokens, "fallback_output_tokens")
    _non_negative(fallback_case_micros, "fallback_case_micros")
    if history is not None and history.attempts > 0:
        _non_negative(history.cost_micros, "history.cost_micros")
        if history.cost_micros > 0 or price:
            return Fraction(history.cost_micros, history.attempts), Basis.HISTORY
    if price:
        # USD per 1M tokens times tokens is micro-USD; Fraction(Decimal) is exact, and unlike a
        # Decimal product it cannot lose digits to the context's precision.
        per_in = Fraction(
            to_decimal(price.get("input_per_mtok_usd", 0), field="price.input_per_mtok_usd")
        )
        per_out = Fraction(
            to_decimal(price.get("output_per_mtok_usd", 0), field="price.output_per_mtok_usd")
        )
        return per_in * fallback_input_tokens + per_out * fallback_output_tokens, Basis.FALLBACK
    return Fraction(fallback_case_micros), Basis.FALLBACK


@dataclass(frozen=True, slots=True)
class ArmPlan:
    """One side of the run to be estimated."""

    arm_id: str
    role: str
    """`"candidate"` or `"baseline"`."""
    model: str | None
    per_case: Fraction
    """Micro-USD per case answer (from `unit_cost`)."""
    basis: Basis
    """What `per_case` rests on (`HISTORY` or `FALLBACK`)."""
    answers: bool = True
    """False when its first answers are borrowed from an earlier run: they cost nothing now, and
    the arm is reported with basis `REUSED`. It may still be rerun."""
    rerun: bool = True
    """False when it is never rerun: a baseline that is the candidate itself at an earlier time."""


@dataclass(frozen=True, slots=True)
class JudgePlan:
    """Model-backed grading the dataset version requires."""

    per_call: Fraction
    """Micro-USD per judge call (from `unit_cost`)."""
    basis: Basis
    judged_cases: int
    """Cases of the dataset version the judge applies to: one call per such case per answer."""


@dataclass(frozen=True, slots=True)
class ArmEstimate:
    """One arm's share of the estimate, in integer micro-USD rounded half up."""

    arm_id: str
    role: str
    model: str | None
    basis: Basis
    """`REUSED` for an arm whose first answers are borrowed, else its plan's basis."""
    per_case_micros: int
    """`per_case` rounded, for display only: the other figures are computed from the exact value."""
    first_pass_micros: int
    rerun_ceiling_micros: int


@dataclass(frozen=True, slots=True)
class Estimate:
    """What a run may cost. Every total is the sum of its rounded parts."""

    arms: tuple[ArmEstimate, ...]
    judge_first_pass_micros: int
    judge_rerun_ceiling_micros: int
    first_pass_micros: int
    """The arms' first passes plus the judge's first pass."""
    rerun_ceiling_micros: int
    """The arms' rerun ceilings plus the judge's (`rerun_ceiling_usd`)."""
    total_micros: int
    """`first_pass_micros + rerun_ceiling_micros`: the exposure starting checks against budgets."""
    basis: Basis
    """`FALLBACK` when any answering arm or the judge is a rough guess, else `HISTORY`."""


def estimate(
    *,
    cases: int,
    arms: Sequence[ArmPlan],
    judge: JudgePlan | None,
    reruns: int,
    stability: bool = False,
) -> Estimate:
    """The estimate of a run over `cases` cases (docs/guides/costs.md).

    First pass: every arm that answers pays `cases x per_case`; an arm whose first answers are
    borrowed pays nothing. The judge is called once per judged case per answering arm.

    Rerun ceiling, "every case flipping, all confirming attempts, the judge and baseline reruns,
    including a reused baseline": only when the run has a baseline (without one nothing can flip),
    every arm that may be rerun pays `cases x reruns x per_case` (a borrowed baseline too; one that
    is the candidate itself is never rerun), and the judge is called for each of those answers.

    A stability run (no baseline) asks every case again `reruns` times for sure, so those answers
    and their judge calls belong to the first pass, and its ceiling is 0.

    Args:
        cases: cases of the dataset version.
        arms: the candidate arm(s) and at most the baseline(s), in display order.
        judge: the judge, or None when no model-backed scorer applies.
        reruns: confirming attempts per side for a flipped case (or per case, in a stability run).
        stability: a stability run.

    Raises:
        ValueError: negative `cases`, `reruns`, `judged_cases` or per-unit cost; an unknown role; a
            stability run with a baseline.
        TypeError: a per-unit cost that is not an int or Fraction (a float is not exact).
    """
    _non_negative(cases, "cases")
    _non_negative(reruns, "reruns")
    for arm in arms:
        if arm.role not in _ROLES:
            raise ValueError(f"arm {arm.arm_id!r}: role must be one of {_ROLES}, got {arm.role!r}")
    has_baseline = any(arm.role == BASELINE for arm in arms)
    if stability and has_baseline:
        raise ValueError("a stability run has no baseline")

    arm_estimates: list[ArmEstimate] = []
    answering = 0  # arms whose first answers are asked now: each is judged once per judged case
    extra_answers = 0  # arms asked `reruns` more times per case (the judge follows each of them)
    for arm in arms:
        per_case = _exact(arm.per_case, f"arm {arm.arm_id!r} per_case")
        first = Fraction(cases) * per_case if arm.answers else Fraction(0)
        ceiling = Fraction(0)
        answering += arm.answers
        if stability:
            # Certain, not a worst case: it is spent, so it belongs to the first pass.
            if arm.rerun:
                first += cases * reruns * per_case
                extra_answers += 1
        elif has_baseline and arm.rerun:
            ceiling = cases * reruns * per_case
            extra_answers += 1
        arm_estimates.append(
            ArmEstimate(
                arm_id=arm.arm_id,
                role=arm.role,
                model=arm.model,
                basis=arm.basis if arm.answers else Basis.REUSED,
                per_case_micros=round_half_up(per_case),
                first_pass_micros=round_half_up(first),
                rerun_ceiling_micros=round_half_up(ceiling),
            )
        )

    judge_first = judge_ceiling = 0
    if judge is not None:
        _non_negative(judge.judged_cases, "judged_cases")
        per_call = _exact(judge.per_call, "judge per_call")
        calls_first = judge.judged_cases * answering
        calls_more = judge.judged_cases * reruns * extra_answers
        if stability:
            calls_first += calls_more
            calls_more = 0
        judge_first = round_half_up(calls_first * per_call)
        judge_ceiling = round_half_up(calls_more * per_call)

    first_pass = sum(a.first_pass_micros for a in arm_estimates) + judge_first
    ceiling_total = sum(a.rerun_ceiling_micros for a in arm_estimates) + judge_ceiling
    guessed = any(arm.answers and arm.basis is Basis.FALLBACK for arm in arms) or (
        judge is not None and judge.basis is Basis.FALLBACK
    )
    return Estimate(
        arms=tuple(arm_estimates),
        judge_first_pass_micros=judge_first,
        judge_rerun_ceiling_micros=judge_ceiling,
        first_pass_micros=first_pass,
        rerun_ceiling_micros=ceiling_total,
        total_micros=first_pass + ceiling_total,
        basis=Basis.FALLBACK if guessed else Basis.HISTORY,
    )


def remaining_after(
    budget_micros: int | None, spent_micros: int, exposure_micros: int
) -> int | None:
    """A monthly budget's remainder after the full exposure (`agent_after_usd` / `org_after_usd`).

    None when there is no budget; otherwise `budget - spent - exposure`, negative when it would not
    fit.
    """
    if budget_micros is None:
        return None
    return budget_micros - spent_micros - exposure_micros


def fits(budget_micros: int | None, spent_micros: int, exposure_micros: int) -> bool:
    """Whether a run may start against one budget: the exposure (first pass plus rerun ceiling) does
    not exceed what is left. Exactly the remainder fits; one micro-USD more is a `402`. A budget
    already spent admits nothing, not even a free run: every model request would be refused."""
    if budget_micros is None:
        return True
    return spent_micros < budget_micros and exposure_micros <= budget_micros - spent_micros
