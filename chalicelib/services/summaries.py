"""Agent summaries: the verdict word beside an agent version (seed 000 "Verdicts").

An evaluation is the dataset a version was measured on. Each evaluation contributes its latest
completed run only, matched on the run's pinned version (exact match; a draft matches runs of
the draft), and the contributions are summed. Staleness applies to drafts only: a run whose
spec hash differs from the draft as it is now tested something that no longer exists.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain.enums import RunStatus, Verdict
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Run
from chalicelib.domain.run_rules import verdict_word
from chalicelib.errors import InvalidInputError


def _matches(run: Run, version: int | str) -> bool:
    if version == "draft":
        return bool(run.draft)
    return (
        not run.draft and run.resolved_version is not None and int(run.resolved_version) == version
    )


@dataclass(frozen=True)
class AgentSummary:
    """The verdict beside one agent version: its evaluations' latest completed runs summed."""

    agent_id: str
    version: int | str
    """The version asked: a number or `"draft"`."""
    total: int
    passed: int
    evaluations: int
    """How many datasets contributed a run."""
    last_completed_at: str | None
    stale: bool
    """A draft's run tested a draft that no longer exists (another spec hash)."""
    verdict: Verdict
    run_ids: list[str]
    """The contributing runs, sorted."""

    @property
    def failed(self) -> int:
        """Cases that did not pass."""
        return self.total - self.passed


def summarize_agents(c: Container, who: Identity, agents: Any) -> list[AgentSummary]:
    """One summary per `{agentId, version}` asked, in the order asked.

    Raises:
        InvalidInputError: a malformed entry (naming `agents[i].field`). NotFoundError: unknown
            agent.
    """
    if not isinstance(agents, list) or not agents:
        raise InvalidInputError(
            "agents must be a non-empty list of {agentId, version}", field="agents"
        )
    if len(agents) > 100:
        raise InvalidInputError("at most 100 agents per request", field="agents")
    out = []
    runs_by_agent: dict[str, list[Run]] = {}
    for i, entry in enumerate(agents):
        if not isinstance(entry, dict):
            raise InvalidInputError(f"agents[{i}] must be an object", field=f"agents[{i}]")
        agent_id = entry.get("agentId", entry.get("agent_id"))
        version = entry.get("version")
        if not isinstance(agent_id, str) or not agent_id:
            raise InvalidInputError(
                f"agents[{i}].agentId is required", field=f"agents[{i}].agentId"
            )
        if version != "draft" and (
            not isinstance(version, int) or isinstance(version, bool) or version < 1
        ):
            raise InvalidInputError(
                f'agents[{i}].version must be a positive integer or "draft"',
                field=f"agents[{i}].version",
            )
        agent = c.agents.get(who.org_id, agent_id)
        if agent_id not in runs_by_agent:
            runs_by_agent[agent_id] = [
                r
                for r in _all_runs(c, who.org_id, agent_id)
                if r.status == RunStatus.COMPLETED and r.outcome is not None
            ]
        latest: dict[str, Run] = {}
        for run in runs_by_agent[agent_id]:
            if not _matches(run, version):
                continue
            held = latest.get(run.dataset_id)
            if held is None or (run.completed_at or "") > (held.completed_at or ""):
                latest[run.dataset_id] = run
        kept = [r.outcome for r in latest.values() if r.outcome is not None]
        total = sum(o.total for o in kept)
        passed = sum(o.passed for o in kept)
        stale = version == "draft" and any(
            r.spec_hash != agent.draft_spec_hash for r in latest.values()
        )
        out.append(
            AgentSummary(
                agent_id=agent_id,
                version=version,
                total=total,
                passed=passed,
                evaluations=len(latest),
                last_completed_at=max(
                    (r.completed_at for r in latest.values() if r.completed_at), default=None
                ),
                stale=stale,
                verdict=verdict_word(total, passed),
                run_ids=sorted(r.run_id for r in latest.values()),
            )
        )
    return out


def _all_runs(c: Container, org_id: str, agent_id: str) -> list[Run]:
    """Every run of the organization's agent, newest first."""
    rows: list[Run] = []
    start = None
    while True:
        page = c.runs.list_by_agent(org_id, agent_id, limit=200, start=start)
        rows.extend(page)
        start = page.next_start
        if not start:
            return rows
