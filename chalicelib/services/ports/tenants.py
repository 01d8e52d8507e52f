"""Ports of the tenants: organizations (slots, waiting runs, default environment) and their spend
against monthly budgets (implemented by `chalicelib.adapters.stores.tenants`,
docs/architecture/slots.md)."""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from typing import Protocol

from chalicelib.domain.records import BudgetReading, Organization, Run


class Organizations(Protocol):
    """Organizations: slot counter, concurrency limit, waiting line and default environment."""

    def get(self, org_id: str) -> Organization | None:
        """The organization (a consistent read), None before its first use."""

    def ensure(
        self, org_id: str, *, now_iso: str, concurrency_limit: int | None = None
    ) -> Organization:
        """The organization, created on first use at `now_iso`; `concurrency_limit` its own limit
        (None: it follows the deployment's default, `Organization.concurrency_limit`)."""

    def add_waiting(self, org_id: str, run_id: str, now_ms: int) -> None:
        """Put a run at the end of the organization's waiting line (`now_ms`: epoch ms, the line's
        age when it was empty)."""

    def remove_waiting(self, org_id: str, run_id: str) -> None:
        """Take a run out of the waiting line, keeping runs added meanwhile; nothing when it is not
        in line. Gives up silently after a few lost writes (the slot tick takes it out later)."""

    def orgs_with_waiting_runs(self) -> Iterator[Organization]:
        """Every organization with a run waiting (service-wide, for the slot tick; eventually
        consistent)."""

    def set_default_environment(
        self, org_id: str, environment_id: str | None, *, only_if_unset: bool = False
    ) -> bool:
        """Name the default environment (None: none); with `only_if_unset` only while it names none,
        False when it named one."""

    def set_limit(self, org_id: str, limit: int | None) -> None:
        """Set the organization's own concurrency limit (slots); None removes it, so it follows
        the deployment's default. The organization must exist (`ensure`)."""


class Budgets(Protocol):
    """Monthly budgets (UTC months `YYYY-MM`) of an organization and its agents, and what is spent
    against them, in micro-USD (docs/guides/costs.md)."""

    def read(
        self,
        org_id: str,
        agent_id: str | None,
        month: str,
        *,
        starter: tuple[str, str | None] | None = None,
    ) -> BudgetReading:
        """Both budgets and both month counters in one request (without `agent_id`: the
        organization's; the agent's then read as no budget and nothing spent). With `starter`
        (`(user_id, api key id or None)`): that member and key too, in the same request
        (`BudgetReading.starter`): a case checks who it runs as at no extra request."""

    def read_with_run(
        self,
        org_id: str,
        run_id: str,
        agent_id: str,
        month: str,
        *,
        starter: tuple[str, str | None] | None = None,
    ) -> tuple[Run | None, BudgetReading]:
        """The run (as `Runs.get` gives it; None when deleted) and its budgets in one request
        (`starter` as for `read`)."""

    def charge(self, org_id: str, agent_id: str, month: str, micros: int, *, judge: bool) -> None:
        """Add one model request's cost to the organization's and the agent's month, once each
        (also to their judge spend when `judge`)."""

    def set_org_budget(self, org_id: str, micros: int | None) -> None:
        """Set (None: remove) the organization's monthly budget; the organization must exist."""

    def set_agent_budget(self, org_id: str, agent_id: str, micros: int | None) -> None:
        """Set (None: remove) an agent's monthly budget. Raises NotFoundError (field `agent_id`)."""

    def forget_agent(self, org_id: str, agent_id: str, months: Sequence[str]) -> None:
        """Delete the agent's month counters of `months` (`YYYY-MM`, UTC); none there is no
        error."""
