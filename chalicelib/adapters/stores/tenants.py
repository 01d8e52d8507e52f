"""Organizations (their slot counters and waiting runs) and spend against budgets (DESIGN §6)."""

from __future__ import annotations

from collections.abc import Iterator
from dataclasses import dataclass
from typing import Any

from pynamodb.exceptions import (
    DoesNotExist,
    PutError,
    UpdateError,
)
from pynamodb.expressions.update import Action

from chalicelib.adapters.stores.base import (
    TX,
    WAITING,
    conditional_update,
    unless_condition_failed,
)
from chalicelib.adapters.tables import (
    AgentRow,
    OrganizationRow,
    RunRow,
    SpendRow,
    org_key,
)
from chalicelib.errors import NotFoundError

# --- organizations ---------------------------------------------------------------------------


class OrganizationStore:
    """Organizations: slot counter `in_flight`, concurrency limit, waiting runs (DESIGN §6)."""

    def get(self, org_id: str) -> OrganizationRow | None:
        try:
            return OrganizationRow.get(org_id, consistent_read=True)
        except DoesNotExist:
            return None

    def ensure(self, org_id: str, *, concurrency_limit: int, now_iso: str) -> OrganizationRow:
        """The organization row, created on first use with `concurrency_limit` slots."""
        row = self.get(org_id)
        if row is not None:
            return row
        row = OrganizationRow(org_id, concurrency_limit=concurrency_limit, in_flight=0,
                              waiting=[], created_at=now_iso)
        try:
            row.save(condition=OrganizationRow.org_id.does_not_exist())
        except PutError as exc:
            unless_condition_failed(exc)
            pass
        return self.get(org_id)  # type: ignore[return-value]

    def add_waiting(self, org_id: str, run_id: str, now_ms: int) -> None:
        """Put a run at the end of the organization's waiting line."""
        row = OrganizationRow(org_id)
        row.update(actions=[
            OrganizationRow.waiting.set(OrganizationRow.waiting.append([run_id])),
            OrganizationRow.waiting_flag.set(WAITING),
            OrganizationRow.waiting_since_ms.set(OrganizationRow.waiting_since_ms | now_ms),
        ])

    def remove_waiting(self, org_id: str, run_id: str) -> None:
        """Take a run out of the waiting line (conditional on the position read; retried)."""
        for _ in range(5):
            org = self.get(org_id)
            if org is None or run_id not in (org.waiting or []):
                return
            pos = list(org.waiting).index(run_id)   # type: ignore[arg-type]  # pynamodb types a list's items as their Attribute class
            actions: list[Action] = [OrganizationRow.waiting[pos].remove()]
            if len(org.waiting) == 1:
                actions += [OrganizationRow.waiting_flag.remove(), OrganizationRow.waiting_since_ms.remove()]
            try:
                OrganizationRow(org_id).update(
                    actions=actions, condition=OrganizationRow.waiting[pos] == run_id)
                return
            except UpdateError as exc:
                unless_condition_failed(exc)
                continue

    def orgs_with_waiting_runs(self) -> Iterator[OrganizationRow]:
        """Organizations with a waiting run (sparse GSI, eventually consistent)."""
        return OrganizationRow.waiting_index.query(WAITING)

    def set_default_environment(self, org_id: str, environment_id: str | None, *, only_if_unset: bool = False) -> bool:
        """Name the organization's default environment (None: none). With `only_if_unset`, only when
        it names none yet; False when that condition failed."""
        action = OrganizationRow.default_environment_id.set(environment_id) if environment_id is not None \
            else OrganizationRow.default_environment_id.remove()
        return conditional_update(
            OrganizationRow(org_id), [action],
            OrganizationRow.default_environment_id.does_not_exist() if only_if_unset else None)

    def set_limit(self, org_id: str, limit: int) -> None:
        OrganizationRow(org_id).update(actions=[OrganizationRow.concurrency_limit.set(limit)])


# --- budgets and spend -----------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetReading:
    """Monthly budgets (None: no budget) and this month's spend, in micro-USD."""

    org_budget_micros: int | None
    org_spent_micros: int
    agent_budget_micros: int | None
    agent_spent_micros: int


class SpendStore:
    """Monthly budgets (on the organization and agent rows) and spend counters (`spend` table)."""

    def read(self, org_id: str, agent_id: str | None, month: str) -> BudgetReading:
        """Both budgets and both month counters in ONE `BatchGetItem` (strongly consistent): the
        check before every model request must cost one request, not four. Without `agent_id`
        only the organization's are read."""
        return self._read(org_id, agent_id, month, None)[1]

    def read_with_run(self, org_id: str, run_id: str, agent_id: str, month: str) -> tuple[RunRow | None, BudgetReading]:
        """A run (consistent) and its budgets in the same single `BatchGetItem`: a case task's first
        read and its first budget check in one request."""
        return self._read(org_id, agent_id, month, run_id)

    @staticmethod
    def month_keys(org_id: str, agent_id: str | None, month: str) -> tuple[str, str | None]:
        """The `spend` keys of the organization's month and of its agent's (None without an agent)."""
        return org_key(org_id, "org", month), (org_key(org_id, "agent", agent_id, month) if agent_id else None)

    def _read(self, org_id: str, agent_id: str | None, month: str,
              run_id: str | None) -> tuple[RunRow | None, BudgetReading]:
        org_month, agent_month = self.month_keys(org_id, agent_id, month)
        budget = {"ConsistentRead": True, "ProjectionExpression": "monthly_budget_micros"}
        items: dict[str, Any] = {
            OrganizationRow.Meta.table_name: {"Keys": [{"org_id": {"S": org_id}}], **budget},
            SpendRow.Meta.table_name: {"Keys": [{"key": {"S": org_month}}], "ConsistentRead": True}}
        if agent_id:
            items[AgentRow.Meta.table_name] = {
                "Keys": [{"org_id": {"S": org_id}, "agent_id": {"S": agent_id}}], **budget}
            items[SpendRow.Meta.table_name]["Keys"].append({"key": {"S": agent_month}})
        if run_id:
            items[RunRow.Meta.table_name] = {"Keys": [{"run_key": {"S": org_key(org_id, run_id)}}],
                                             "ConsistentRead": True}
        found = TX.batch_get(items)

        def budget_of(table: str) -> int | None:
            rows = found.get(table) or []
            raw = rows[0].get("monthly_budget_micros") if rows else None
            return int(raw["N"]) if raw and "N" in raw else None

        spent = {item["key"]["S"]: int(item.get("spent_micros", {}).get("N", 0))
                 for item in found[SpendRow.Meta.table_name]}
        runs = found.get(RunRow.Meta.table_name) or []
        return (RunRow.from_raw_data(runs[0]) if runs else None,
                BudgetReading(budget_of(OrganizationRow.Meta.table_name), spent.get(org_month, 0),
                              budget_of(AgentRow.Meta.table_name), spent.get(agent_month or "", 0)))

    def charge(self, org_id: str, agent_id: str, month: str, micros: int, *, judge: bool) -> None:
        """Add one model request's real cost to the organization's and the agent's month.

        Plain `ADD` updates, outside any transaction: a counter every worker of the organization
        touches would make transactions conflict, and the money is spent whether or not the
        attempt is recorded later.
        """
        for key in self.month_keys(org_id, agent_id, month):
            actions: list[Action] = [SpendRow.spent_micros.add(micros), SpendRow.requests.add(1)]
            if judge:
                actions.append(SpendRow.judge_micros.add(micros))
            SpendRow(key).update(actions=actions)

    def set_org_budget(self, org_id: str, micros: int | None) -> None:
        """Set (None: remove) an organization's monthly budget. The row must exist."""
        action = OrganizationRow.monthly_budget_micros.remove() if micros is None \
            else OrganizationRow.monthly_budget_micros.set(micros)
        OrganizationRow(org_id).update(actions=[action])

    def set_agent_budget(self, org_id: str, agent_id: str, micros: int | None) -> None:
        """Set (None: remove) an agent's monthly budget. Raises NotFoundError for an unknown agent."""
        action = AgentRow.monthly_budget_micros.remove() if micros is None \
            else AgentRow.monthly_budget_micros.set(micros)
        if not conditional_update(AgentRow(org_id, agent_id), [action], AgentRow.agent_id.exists()):
            raise NotFoundError(f"agent {agent_id} not found", field="agent_id")
