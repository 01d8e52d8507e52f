"""Monthly budgets and what is spent against them (docs/guides/costs.md, docs/reference/access.md).

An eval spends from the agent's and the organization's monthly budgets (UTC calendar months).
Every model request - an agent's answer or a judge's grade - is checked against both before it
is sent, and its real cost is added to both month counters once it is back. The estimate only
decides whether a run may start; these checks are what stop one already running.
"""

from __future__ import annotations

import math
import re
from dataclasses import dataclass
from datetime import datetime
from decimal import Decimal
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain.identity import Identity
from chalicelib.domain.money import (
    MAX_BUDGET_USD,
    usd_text,
    usd_to_micros,
)
from chalicelib.domain.records import BudgetReading
from chalicelib.errors import InvalidInputError


def month_of(now: datetime) -> str:
    """The budget month of `now`: `YYYY-MM` in UTC."""
    return now.strftime("%Y-%m")


@dataclass(frozen=True)
class Exhausted:
    """Which budget is spent, for the run's reason."""

    scope: str
    """`agent` or `organization`."""
    budget_micros: int
    spent_micros: int

    @property
    def reason(self) -> str:
        return (
            f"budget exceeded: the {self.scope}'s monthly budget of {usd_text(self.budget_micros)} "
            f"is spent ({usd_text(self.spent_micros)} this month)"
        )


def exhausted(reading: BudgetReading) -> Exhausted | None:
    """The first budget with nothing left (spent >= budget), agent first; None while both have
    room."""
    for scope, budget, spent in (
        ("agent", reading.agent_budget_micros, reading.agent_spent_micros),
        ("organization", reading.org_budget_micros, reading.org_spent_micros),
    ):
        if budget is not None and spent >= budget:
            return Exhausted(scope, budget, spent)
    return None


def read(
    c: Container, org_id: str, agent_id: str, starter: tuple[str, str | None] | None = None
) -> BudgetReading:
    """Both budgets and this month's spend (one request), with the membership and API key of
    `starter` (`(user_id, key id)`) when given (`BudgetReading.starter`)."""
    return c.spend.read(org_id, agent_id, month_of(c.clock.now()), starter=starter)


def check(c: Container, org_id: str, agent_id: str) -> Exhausted | None:
    """What must be checked before a model request is sent: None when both budgets have room."""
    return exhausted(read(c, org_id, agent_id))


def charge(c: Container, org_id: str, agent_id: str, micros: int, *, judge: bool = False) -> None:
    """Add a model request's real cost (micro-USD) to both month counters; nothing for a free
    one."""
    if micros > 0:
        c.spend.charge(org_id, agent_id, month_of(c.clock.now()), micros, judge=judge)


@dataclass(frozen=True)
class Budget:
    """One monthly budget as it stands (not a row): the organization's (`agent_id` None) or an
    agent's, for the month `YYYY-MM`, in micro-USD (`budget_micros` None: no budget)."""

    agent_id: str | None
    month: str
    budget_micros: int | None
    spent_micros: int

    @property
    def scope(self) -> str:
        """`agent` or `organization`."""
        return "organization" if self.agent_id is None else "agent"


_PLAIN_USD = re.compile(r"[0-9]+(\.[0-9]{1,6})?")


def parse_budget(raw: Any) -> int | None:
    """`monthly_usd` of a budget body as micro-USD; None removes the budget (see `parse_usd`)."""
    return parse_usd(raw, "monthly_usd")


def parse_usd(raw: Any, field: str) -> int | None:
    """An amount of USD from a request as micro-USD; None for null.

    A JSON number or a plain decimal string (`"25"`, `"25.50"`), at most 6 decimals (a micro-USD)
    and at most `MAX_BUDGET_USD`. Raises InvalidInputError naming `field` otherwise.
    """
    if raw is None:
        return None
    problem = f"{field} must be a non-negative amount of USD with at most 6 decimals, or null"
    if isinstance(raw, bool) or not isinstance(raw, int | float | str):
        raise InvalidInputError(problem, field=field)
    if isinstance(raw, str):
        text = raw
    elif math.isfinite(raw):
        text = format(Decimal(str(raw)), "f")  # 1e-06 -> "0.000001", 12.50 -> "12.5"
        text = text.rstrip("0").rstrip(".") if "." in text else text
    else:
        text = "nan"
    if not _PLAIN_USD.fullmatch(text):
        raise InvalidInputError(problem, field=field)
    if Decimal(text) > MAX_BUDGET_USD:
        raise InvalidInputError(f"{field} must be at most {MAX_BUDGET_USD}", field=field)
    return usd_to_micros(text)


def set_org_budget(c: Container, who: Identity, raw: Any) -> Budget:
    """Set the organization's monthly budget (`monthly_usd`, null for none) and return it as it
    stands now."""
    micros = parse_budget(raw)
    now = c.clock.now()
    c.orgs.ensure(who.org_id, now_iso=iso(now))
    c.spend.set_org_budget(who.org_id, micros)
    return org_budget(c, who)


def set_agent_budget(c: Container, who: Identity, agent_id: str, raw: Any) -> Budget:
    """Set an agent's monthly budget. Raises NotFoundError for an unknown agent."""
    micros = parse_budget(raw)
    c.spend.set_agent_budget(who.org_id, agent_id, micros)
    return agent_budget(c, who, agent_id)


def org_budget(c: Container, who: Identity) -> Budget:
    """The organization's budget this month."""
    month = month_of(c.clock.now())
    reading = c.spend.read(who.org_id, None, month)
    return Budget(None, month, reading.org_budget_micros, reading.org_spent_micros)


def agent_budget(c: Container, who: Identity, agent_id: str) -> Budget:
    """An agent's budget this month. Raises NotFoundError for an unknown agent."""
    c.agents.get(who.org_id, agent_id)
    month = month_of(c.clock.now())
    reading = c.spend.read(who.org_id, agent_id, month)
    return Budget(agent_id, month, reading.agent_budget_micros, reading.agent_spent_micros)
