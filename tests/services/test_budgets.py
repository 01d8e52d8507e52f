"""Budgets' rules on fakes (docs/guides/costs.md, docs/reference/access.md): an
organization's and an agent's monthly budgets, each model request counted once in both months,
and what a reading says is spent and left."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.identity import Identity
from chalicelib.domain.records import BudgetReading
from chalicelib.errors import InvalidInputError, NotFoundError
from chalicelib.services import agents, budgets
from chalicelib.services.budgets import Budget
from tests.fakes import FakeContainer

ACME = Identity("acme", "ana")


@pytest.fixture
def calc(c: FakeContainer) -> FakeContainer:
    agents.create_agent(
        c, ACME, name="calc", spec={"runtime": "recorded", "inline": {"c1": "4"}}, agent_id="calc"
    )
    agents.create_agent(
        c, ACME, name="other", spec={"runtime": "recorded", "inline": {"c1": "5"}}, agent_id="other"
    )
    return c


def test_no_budget_is_room_and_the_agent_s_budget_says_so(calc: FakeContainer) -> None:
    c = calc
    assert budgets.check(c, "acme", "calc") is None
    budget = budgets.agent_budget(c, ACME, "calc")  # (its API shape: tests/unit/test_views.py)
    assert (budget, budget.scope) == (Budget("calc", "2026-12", None, 0), "agent")


def test_a_charge_counts_once_in_the_organization_s_month_and_once_in_its_agent_s(
    calc: FakeContainer,
) -> None:
    c = calc
    budgets.charge(c, "acme", "calc", 1_500_000)
    budgets.charge(c, "acme", "calc", 250_000, judge=True)
    budgets.charge(c, "acme", "other", 100_000)
    budgets.charge(c, "acme", "calc", 0)  # a free request is not a request charged
    assert budgets.read(c, "acme", "calc") == BudgetReading(None, 1_850_000, None, 1_750_000)
    assert budgets.read(c, "acme", "other").agent_spent_micros == 100_000
    calc_month, org_month = (
        c.spend.spent[("acme", "calc", "2026-12")],
        c.spend.spent[("acme", None, "2026-12")],
    )
    assert (calc_month.requests, calc_month.judge_micros) == (2, 250_000)
    assert (org_month.requests, org_month.judge_micros) == (3, 250_000)


def test_a_month_is_the_utc_calendar_month(calc: FakeContainer) -> None:
    c = calc
    c.clock.at = datetime(2026, 12, 31, 23, 59, tzinfo=UTC)
    budgets.charge(c, "acme", "calc", 1_000_000)
    c.clock.at = datetime(2027, 1, 1, 0, 0, tzinfo=UTC)
    assert budgets.read(c, "acme", "calc") == BudgetReading(None, 0, None, 0)
    assert budgets.month_of(c.clock.now()) == "2027-01"


def test_budgets_are_set_in_usd_and_say_what_is_spent(calc: FakeContainer) -> None:
    c = calc
    assert budgets.set_org_budget(c, ACME, "25.50").budget_micros == 25_500_000
    assert budgets.set_agent_budget(c, ACME, "calc", 2) == Budget("calc", "2026-12", 2_000_000, 0)
    budgets.charge(c, "acme", "calc", 1_250_000)
    org = budgets.org_budget(c, ACME)
    assert (org, org.scope) == (Budget(None, "2026-12", 25_500_000, 1_250_000), "organization")
    assert budgets.agent_budget(c, ACME, "calc") == Budget(
        "calc", "2026-12", 2_000_000, 1_250_000
    )  # 0.75 left
    assert (
        budgets.agent_budget(c, ACME, "other").budget_micros is None
    )  # the organization's is not the agent's
    budgets.set_agent_budget(c, ACME, "calc", None)
    assert budgets.agent_budget(c, ACME, "calc").budget_micros is None
    with pytest.raises(NotFoundError):
        budgets.set_agent_budget(c, ACME, "nobody", 1)
    for bad in (-1, "1e3", "1.0000001", True, [1]):
        with pytest.raises(InvalidInputError) as refused:
            budgets.parse_budget(bad)
        assert refused.value.field == "monthly_usd", bad


def test_a_budget_is_exhausted_once_spent_reaches_it_the_agent_s_named_first() -> None:
    assert budgets.exhausted(BudgetReading(10, 9, 5, 4)) is None
    agent = budgets.exhausted(BudgetReading(10, 10, 5, 5))
    assert agent is not None and (agent.scope, agent.budget_micros, agent.spent_micros) == (
        "agent",
        5,
        5,
    )
    org = budgets.exhausted(BudgetReading(3_000_000, 3_100_000, None, 3_100_000))
    assert org is not None and org.reason == (
        "budget exceeded: the organization's monthly budget of $3.00 is spent ($3.10 this month)"
    )
    assert (
        budgets.exhausted(BudgetReading(None, 10**9, 0, 0)) is not None
    )  # a budget of 0 has no room


def test_the_check_before_a_request_reads_both_budgets(calc: FakeContainer) -> None:
    c = calc
    budgets.set_org_budget(c, ACME, 1)
    budgets.charge(c, "acme", "other", 1_000_000)  # another agent spent the organization's month
    exhausted = budgets.check(c, "acme", "calc")
    assert exhausted is not None and exhausted.scope == "organization"
