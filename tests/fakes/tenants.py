"""Fakes of `chalicelib.services.ports.tenants`."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from chalicelib.domain.records import BudgetReading, Organization, Spend
from chalicelib.errors import NotFoundError


class FakeOrganizations:
    """`ports.tenants.Organizations` in a dict by org_id.

    `lose_next` is how many of the next conditional writes lose to "another writer" (they change
    nothing and return False), so a service's retry can be watched.
    """

    def __init__(self) -> None:
        self.kept: dict[str, Organization] = {}
        self.lose_next = 0

    def _lost(self) -> bool:
        if self.lose_next > 0:
            self.lose_next -= 1
            return True
        return False

    def get(self, org_id: str) -> Organization | None:
        return self.kept.get(org_id)

    def ensure(
        self, org_id: str, *, now_iso: str, concurrency_limit: int | None = None
    ) -> Organization:
        return self.kept.setdefault(
            org_id,
            Organization(
                org_id=org_id, own_concurrency_limit=concurrency_limit, created_at=now_iso
            ),
        )

    def add_waiting(self, org_id: str, run_id: str, now_ms: int) -> None:
        org = self.kept[org_id]
        self.kept[org_id] = replace(
            org,
            waiting=[*org.waiting, run_id],
            waiting_flag="1",
            waiting_since_ms=org.waiting_since_ms if org.waiting_since_ms is not None else now_ms,
        )

    def remove_waiting(self, org_id: str, run_id: str) -> None:
        for _ in range(5):  # as the store: a few lost writes, then the run is left in line
            org = self.kept.get(org_id)
            if org is None or run_id not in org.waiting:
                return
            if self._lost():
                continue
            waiting = list(org.waiting)
            waiting.remove(run_id)
            self.kept[org_id] = (
                replace(org, waiting=waiting)
                if waiting
                else replace(org, waiting=[], waiting_flag=None, waiting_since_ms=None)
            )
            return

    def orgs_with_waiting_runs(self) -> Iterator[Organization]:
        return iter([org for org in self.kept.values() if org.waiting_flag is not None])

    def set_default_environment(
        self, org_id: str, environment_id: str | None, *, only_if_unset: bool = False
    ) -> bool:
        org = self.kept[org_id]
        if only_if_unset and org.default_environment_id is not None:
            return False
        self.kept[org_id] = replace(org, default_environment_id=environment_id)
        return True

    def set_limit(self, org_id: str, limit: int | None) -> None:
        self.kept[org_id] = replace(self.kept[org_id], own_concurrency_limit=limit)


class FakeBudgets:
    """`ports.tenants.Budgets`: budgets beside the fake organizations and agents (as the store keeps
    them on their rows), month counters in `spent` by (org_id, agent_id or None, month)."""

    def __init__(self, orgs: FakeOrganizations, agents: Any, runs: Any) -> None:
        self.orgs, self.agents, self.runs = orgs, agents, runs
        self.spent: dict[tuple[str, str | None, str], Spend] = {}

    def read(
        self, org_id: str, agent_id: str | None, month: str, *, starter: Any = None
    ) -> BudgetReading:
        org = self.orgs.get(org_id)
        agent = self.agents.kept.get((org_id, agent_id)) if agent_id else None
        return BudgetReading(
            org.monthly_budget_micros if org else None,
            self.spent.get((org_id, None, month), Spend()).spent_micros,
            agent.monthly_budget_micros if agent else None,
            self.spent.get((org_id, agent_id, month), Spend()).spent_micros if agent_id else 0,
        )

    def read_with_run(
        self, org_id: str, run_id: str, agent_id: str, month: str, *, starter: Any = None
    ) -> tuple[Any, BudgetReading]:
        # the starter is not read beside here: the service reads the members port itself
        return self.runs.get(org_id, run_id), self.read(org_id, agent_id, month)

    def charge(self, org_id: str, agent_id: str, month: str, micros: int, *, judge: bool) -> None:
        for key in ((org_id, None, month), (org_id, agent_id, month)):
            was = self.spent.get(key, Spend())
            self.spent[key] = Spend(
                spent_micros=was.spent_micros + micros,
                requests=was.requests + 1,
                judge_micros=was.judge_micros + (micros if judge else 0),
            )

    def set_org_budget(self, org_id: str, micros: int | None) -> None:
        self.orgs.kept[org_id] = replace(self.orgs.kept[org_id], monthly_budget_micros=micros)

    def set_agent_budget(self, org_id: str, agent_id: str, micros: int | None) -> None:
        agent = self.agents.kept.get((org_id, agent_id))
        if agent is None or (org_id, agent_id) in self.agents.deleting:
            raise NotFoundError(f"agent {agent_id} not found", field="agent_id")
        self.agents.kept[(org_id, agent_id)] = replace(agent, monthly_budget_micros=micros)

    def forget_agent(self, org_id: str, agent_id: str, months: Sequence[str]) -> None:
        for month in months:
            self.spent.pop((org_id, agent_id, month), None)
