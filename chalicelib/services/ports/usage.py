"""Port of agent runs and the month's usage by surface (docs/reference/usage.md)."""

from __future__ import annotations

from collections.abc import Iterable, Sequence
from typing import Protocol

from chalicelib.domain.agent_runs import AgentRun, SurfaceUsage
from chalicelib.domain.records import Run


class Usage(Protocol):
    """Agent runs (`agent_runs`) and the usage counters of each month."""

    def get(self, org_id: str, agent_run_id: str) -> AgentRun | None:
        """One agent run of the organization, or None."""
        ...

    def list_for_agent(
        self, org_id: str, agent_id: str, surfaces: Sequence[str], *, before: str | None, limit: int
    ) -> tuple[list[AgentRun], str | None]:
        """The agent's runs of `surfaces`, newest first, at most `limit`, older than the cursor
        `before`; with the next page's cursor (None: the last page)."""
        ...

    def list_for_org(
        self, org_id: str, surfaces: Sequence[str], *, before: str | None, limit: int
    ) -> tuple[list[AgentRun], str | None]:
        """The organization's runs of `surfaces` across its agents, as `list_for_agent`."""
        ...

    def report(self, org_id: str, month: str, runs: Sequence[AgentRun]) -> int:
        """Write production runs once each (by id) and add them to the month's usage and spend;
        how many were new. Raises ConflictError when the counters stay contended."""
        ...

    def add_grader(self, run: AgentRun, month: str) -> bool:
        """Write a grader run of a "grade again" once and count it in the month; False when it
        was written before. Raises ConflictError when the counters stay contended."""
        ...

    def count_run(self, run: Run, month: str) -> bool:
        """Add what an ended eval run answered and graded since its last count to its month's
        usage; False when nothing was new or another count moved first."""
        ...

    def month(
        self, org_id: str, month: str
    ) -> tuple[dict[str, SurfaceUsage], dict[str, dict[str, SurfaceUsage]]]:
        """The organization's month by surface, and each agent's that ran in it."""
        ...

    def delete(self, org_id: str, agent_run_ids: Iterable[str]) -> int:
        """Delete these agent runs (absent ones skipped); how many."""
        ...

    def delete_agent(self, org_id: str, agent_id: str) -> int:
        """Delete every run of the agent; how many."""
        ...
