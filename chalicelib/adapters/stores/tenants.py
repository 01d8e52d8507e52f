"""Organizations (their slot counters and waiting runs) and spend against budgets
(docs/architecture/slots.md, docs/guides/costs.md)."""

from __future__ import annotations

import logging
from collections.abc import Iterator, Sequence
from dataclasses import replace
from typing import Any

from pynamodb.exceptions import (
    DoesNotExist,
    PutError,
)
from pynamodb.expressions.condition import size
from pynamodb.expressions.update import Action

from chalicelib import retrying
from chalicelib.adapters.stores.access import api_key_of, member_key, member_of
from chalicelib.adapters.stores.base import (
    TX,
    WAITING,
    conditional_update,
    delete_found,
    record_of,
    unless_condition_failed,
)
from chalicelib.adapters.stores.ledger import run_of
from chalicelib.adapters.tables import (
    AgentRow,
    ApiKeyRow,
    MemberRow,
    OrganizationRow,
    RunRow,
    SpendRow,
    org_key,
)
from chalicelib.domain.access import ApiKey, Member
from chalicelib.domain.records import BudgetReading, Organization, Run
from chalicelib.errors import ConflictError, NotFoundError

log = logging.getLogger(__name__)

# --- organizations ---------------------------------------------------------------------------

REMOVE_WAITING_TRIES = 5
"""Lost writes before `remove_waiting` leaves a run in line: a run left there holds no slot, and the
slot tick takes out any run with nothing to start, so giving up costs at most a minute."""


class OrganizationStore:
    """Organizations: slot counter `in_flight`, concurrency limit, waiting runs
    (docs/architecture/slots.md);
    port `ports.tenants.Organizations`."""

    def get(self, org_id: str) -> Organization | None:
        """The organization (consistent read), None before its first use."""
        try:
            return record_of(OrganizationRow.get(org_id, consistent_read=True), Organization)
        except DoesNotExist:
            return None

    def ensure(
        self, org_id: str, *, now_iso: str, concurrency_limit: int | None = None
    ) -> Organization:
        """The organization, created on first use (with `concurrency_limit` as its own limit; None:
        it follows the deployment's default)."""
        org = self.get(org_id)
        if org is not None:
            return org
        row = OrganizationRow(
            org_id,
            own_concurrency_limit=concurrency_limit,
            in_flight=0,
            waiting=[],
            created_at=now_iso,
        )
        try:
            row.save(condition=OrganizationRow.org_id.does_not_exist())
        except PutError as exc:
            unless_condition_failed(exc)  # created meanwhile by another first use: read that one
        return self.get(org_id)  # type: ignore[return-value]

    def add_waiting(self, org_id: str, run_id: str, now_ms: int) -> None:
        """Put a run at the end of the organization's waiting line."""
        row = OrganizationRow(org_id)
        row.update(
            actions=[
                OrganizationRow.waiting.set(OrganizationRow.waiting.append([run_id])),
                OrganizationRow.waiting_flag.set(WAITING),
                OrganizationRow.waiting_since_ms.set(OrganizationRow.waiting_since_ms | now_ms),
            ]
        )

    def remove_waiting(self, org_id: str, run_id: str) -> None:
        """Take a run out of the waiting line (nothing when it is not in it).

        The write removes the run at the position read, conditional on it still being there, so a
        run added behind it meanwhile is kept; after `REMOVE_WAITING_TRIES` lost writes the run is
        left in line (see there), never an error.
        """

        def decide(org: Organization) -> Organization | None:
            if run_id not in org.waiting:
                return None
            waiting = list(org.waiting)
            waiting.remove(run_id)
            if waiting:
                return replace(org, waiting=waiting)
            return replace(org, waiting=[], waiting_flag=None, waiting_since_ms=None)

        try:
            retrying.change(
                lambda: self.get(org_id),
                decide,
                lambda before, _after: self._remove_at(org_id, run_id, before),
                conflict=f"run {run_id} could not leave the waiting line",
                field="run_id",
                tries=REMOVE_WAITING_TRIES,
            )
        except ConflictError:
            log.warning(
                "run %s left in the waiting line of %s after %d lost writes",
                run_id,
                org_id,
                REMOVE_WAITING_TRIES,
            )

    @staticmethod
    def _remove_at(org_id: str, run_id: str, before: Organization) -> bool:
        pos = before.waiting.index(run_id)
        actions: list[Action] = [OrganizationRow.waiting[pos].remove()]
        condition = OrganizationRow.waiting[pos] == run_id
        if len(before.waiting) == 1:
            # The line empties: its flag goes too, unless a run joined since it was read (the
            # flag is what the slot tick finds the organization by).
            actions += [
                OrganizationRow.waiting_flag.remove(),
                OrganizationRow.waiting_since_ms.remove(),
            ]
            condition &= size(OrganizationRow.waiting) == 1
        return conditional_update(OrganizationRow(org_id), actions, condition)

    def orgs_with_waiting_runs(self) -> Iterator[Organization]:
        """Organizations with a waiting run (sparse GSI, eventually consistent)."""
        rows = OrganizationRow.waiting_index.query(WAITING)
        return (record_of(row, Organization) for row in rows)

    def set_default_environment(
        self, org_id: str, environment_id: str | None, *, only_if_unset: bool = False
    ) -> bool:
        """Name the organization's default environment (None: none). With `only_if_unset`, only when
        it names none yet; False when that condition failed."""
        default = OrganizationRow.default_environment_id
        action = default.set(environment_id) if environment_id is not None else default.remove()
        return conditional_update(
            OrganizationRow(org_id),
            [action],
            OrganizationRow.default_environment_id.does_not_exist() if only_if_unset else None,
        )

    def set_limit(self, org_id: str, limit: int | None) -> None:
        """Set the organization's own concurrency limit (slots); None removes it (it follows the
        deployment's default again). The row must exist (`ensure`)."""
        own = OrganizationRow.own_concurrency_limit
        OrganizationRow(org_id).update(
            actions=[own.remove() if limit is None else own.set(limit)],
            condition=OrganizationRow.org_id.exists(),
        )


# --- budgets and spend -----------------------------------------------------------------------


def _starter_of(found: dict[str, list[dict[str, Any]]]) -> tuple[Member | None, ApiKey | None]:
    members = found.get(MemberRow.Meta.table_name) or []
    keys = found.get(ApiKeyRow.Meta.table_name) or []
    return (
        member_of(MemberRow.from_raw_data(members[0])) if members else None,
        api_key_of(ApiKeyRow.from_raw_data(keys[0])) if keys else None,
    )


class SpendStore:
    """Monthly budgets (on the organization and agent rows) and spend counters (`spend` table);
    port `ports.tenants.Budgets`."""

    def read(
        self,
        org_id: str,
        agent_id: str | None,
        month: str,
        *,
        starter: tuple[str, str | None] | None = None,
    ) -> BudgetReading:
        """Both budgets and both month counters in ONE `BatchGetItem` (strongly consistent): the
        check before every model request must cost one request, not four. Without `agent_id`
        only the organization's are read; with `starter`, that member and API key as well."""
        return self._read(org_id, agent_id, month, None, starter)[1]

    def read_with_run(
        self,
        org_id: str,
        run_id: str,
        agent_id: str,
        month: str,
        *,
        starter: tuple[str, str | None] | None = None,
    ) -> tuple[Run | None, BudgetReading]:
        """A run (consistent; None when there is none) and its budgets in the same single
        `BatchGetItem`: a case task's first read and its first budget check in one request."""
        return self._read(org_id, agent_id, month, run_id, starter)

    @staticmethod
    def month_keys(org_id: str, agent_id: str | None, month: str) -> tuple[str, str | None]:
        """The `spend` keys of the organization's month and of its agent's (None without one)."""
        agent_month = org_key(org_id, "agent", agent_id, month) if agent_id else None
        return org_key(org_id, "org", month), agent_month

    def _read(
        self,
        org_id: str,
        agent_id: str | None,
        month: str,
        run_id: str | None,
        starter: tuple[str, str | None] | None = None,
    ) -> tuple[Run | None, BudgetReading]:
        org_month, agent_month = self.month_keys(org_id, agent_id, month)
        budget = {"ConsistentRead": True, "ProjectionExpression": "monthly_budget_micros"}
        items: dict[str, Any] = {
            OrganizationRow.Meta.table_name: {"Keys": [{"org_id": {"S": org_id}}], **budget},
            SpendRow.Meta.table_name: {"Keys": [{"key": {"S": org_month}}], "ConsistentRead": True},
        }
        if agent_id:
            items[AgentRow.Meta.table_name] = {
                "Keys": [{"org_id": {"S": org_id}, "agent_id": {"S": agent_id}}],
                **budget,
            }
            items[SpendRow.Meta.table_name]["Keys"].append({"key": {"S": agent_month}})
        if run_id:
            items[RunRow.Meta.table_name] = {
                "Keys": [{"run_key": {"S": org_key(org_id, run_id)}}],
                "ConsistentRead": True,
            }
        if starter is not None:
            items[MemberRow.Meta.table_name] = {
                "Keys": [{"org_id": {"S": org_id}, "member_key": {"S": member_key(starter[0])}}],
                "ConsistentRead": True,
            }
            if starter[1]:
                items[ApiKeyRow.Meta.table_name] = {
                    "Keys": [{"org_id": {"S": org_id}, "key_id": {"S": starter[1]}}],
                    "ConsistentRead": True,
                }
        found = TX.batch_get(items)

        def budget_of(table: str) -> int | None:
            rows = found.get(table) or []
            raw = rows[0].get("monthly_budget_micros") if rows else None
            return int(raw["N"]) if raw and "N" in raw else None

        spent = {
            item["key"]["S"]: int(item.get("spent_micros", {}).get("N", 0))
            for item in found[SpendRow.Meta.table_name]
        }
        runs = found.get(RunRow.Meta.table_name) or []
        return (
            run_of(RunRow.from_raw_data(runs[0])) if runs else None,
            BudgetReading(
                budget_of(OrganizationRow.Meta.table_name),
                spent.get(org_month, 0),
                budget_of(AgentRow.Meta.table_name),
                spent.get(agent_month or "", 0),
                starter=None if starter is None else _starter_of(found),
            ),
        )

    def charge(self, org_id: str, agent_id: str, month: str, micros: int, *, judge: bool) -> None:
        """Add one model request's real cost to the organization's and the agent's month.

        Plain `ADD` updates, outside any transaction: a counter every worker of the organization
        touches would make transactions conflict, and the money is spent whether or not the
        attempt is recorded later.
        """
        org_month, agent_month = self.month_keys(org_id, agent_id, month)
        for key in (org_month, agent_month):
            actions: list[Action] = [SpendRow.spent_micros.add(micros), SpendRow.requests.add(1)]
            if judge:
                actions.append(SpendRow.judge_micros.add(micros))
            if key == agent_month:  # listed with the month's agents (`SpendRow.month_index`)
                actions.append(SpendRow.month_key.set(org_key(org_id, month)))
            SpendRow(key).update(actions=actions)

    def set_org_budget(self, org_id: str, micros: int | None) -> None:
        """Set (None: remove) an organization's monthly budget. The row must exist."""
        action = (
            OrganizationRow.monthly_budget_micros.remove()
            if micros is None
            else OrganizationRow.monthly_budget_micros.set(micros)
        )
        OrganizationRow(org_id).update(actions=[action])

    def set_agent_budget(self, org_id: str, agent_id: str, micros: int | None) -> None:
        """Set (None: remove) an agent's monthly budget. Raises NotFoundError for an unknown one."""
        action = (
            AgentRow.monthly_budget_micros.remove()
            if micros is None
            else AgentRow.monthly_budget_micros.set(micros)
        )
        if not conditional_update(
            AgentRow(org_id, agent_id),
            [action],
            AgentRow.agent_id.exists() & AgentRow.deleting_at.does_not_exist(),
        ):
            raise NotFoundError(f"agent {agent_id} not found", field="agent_id")

    def forget_agent(self, org_id: str, agent_id: str, months: Sequence[str]) -> None:
        """Delete the agent's month counters of `months` (`YYYY-MM`; a month it spent nothing in
        has none), 25 keys per `BatchWriteItem`: the counters are keyed by month alone, so the
        months are named rather than listed."""
        delete_found((SpendRow(self.month_keys(org_id, agent_id, m)[1]) for m in months), SpendRow)
