"""Agent summaries: the verdict word beside an agent version (seed 000 "Verdicts").

An evaluation is what measured a version (seed 001): the implied evaluation of each dataset it was
run on, and each explicit evaluation of it. Each evaluation contributes its latest
completed run only, matched on the run's pinned version (exact match; a draft matches runs of
the draft), and the contributions are summed. Staleness applies to drafts only: a run whose
spec hash differs from the draft as it is now tested something that no longer exists.

The runs are not read: the transaction that completes a run keeps its evaluation's latest totals
(`domain.history.LatestRow`), and a summary reads those.
"""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import access
from chalicelib.domain.enums import Verdict
from chalicelib.domain.history import LatestRow, subject_of, verdict_of
from chalicelib.domain.identity import Identity
from chalicelib.domain.run_rules import verdict_word
from chalicelib.errors import InvalidInputError


@dataclass(frozen=True)
class AgentSummary:
    """The verdict beside one agent version: its evaluations' latest completed runs summed."""

    agent_id: str
    version: int | str
    """The version asked: a number or `"draft"`."""
    total: int
    passed: int
    evaluations: int
    """How many evaluations contributed a run."""
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

    Reads the agents and their versions' latest results (`domain.history.LatestRow`, one row per
    agent version) in batches of at most 100 keys: two requests for up to 100 agents, whatever
    their history.

    Each summary counts the runs over the datasets the caller may see only.

    Raises:
        InvalidInputError: a malformed entry (naming `agents[i].field`). NotFoundError: unknown
            agent, or one the caller may not see.
    """
    who.require(access.RUNS_VIEW, "reading verdicts")
    if not isinstance(agents, list) or not agents:
        raise InvalidInputError(
            "agents must be a non-empty list of {agentId, version}", field="agents"
        )
    if len(agents) > 100:
        raise InvalidInputError("at most 100 agents per request", field="agents")
    asked: list[tuple[str, int | str]] = []
    refused: InvalidInputError | None = None
    for i, entry in enumerate(agents):
        try:
            asked.append(_entry(i, entry))
        except InvalidInputError as exc:
            refused = exc
            break
    # The entries before a malformed one are looked up first: an unknown agent among them is
    # what an entry-by-entry check would have met first.
    for agent_id, _ in asked:  # an agent the caller may not see is as unknown as another org's
        who.require_sight("agent", agent_id)
    known = c.agents.get_many(who.org_id, [agent_id for agent_id, _ in asked])
    if refused is not None:
        raise refused
    keys = {(agent_id, _row(version).key) for agent_id, version in asked}
    rows = c.runs.history(who.org_id, sorted(keys))
    out = []
    for agent_id, version in asked:
        row = rows.get((agent_id, _row(version).key))
        # A run over a dataset the reader may not open is not theirs to count, nor to be named
        # (seed 004 "Access"): the verdict is of the datasets they see.
        results = [
            r
            for r in (row.results.values() if isinstance(row, LatestRow) else ())
            if who.sees("dataset", r.dataset_id)
        ]
        totals = verdict_of(
            results, draft=version == "draft", draft_spec_hash=known[agent_id].draft_spec_hash
        )
        out.append(
            AgentSummary(
                agent_id=agent_id,
                version=version,
                total=totals.total,
                passed=totals.passed,
                evaluations=totals.evaluations,
                last_completed_at=totals.last_completed_at,
                stale=totals.stale,
                verdict=verdict_word(totals.total, totals.passed),
                run_ids=totals.run_ids,
            )
        )
    return out


def _entry(i: int, entry: Any) -> tuple[str, int | str]:
    """`agents[i]` as `(agent_id, version)`. Raises InvalidInputError naming its field."""
    if not isinstance(entry, dict):
        raise InvalidInputError(f"agents[{i}] must be an object", field=f"agents[{i}]")
    agent_id = entry.get("agentId", entry.get("agent_id"))
    version = entry.get("version")
    if not isinstance(agent_id, str) or not agent_id:
        raise InvalidInputError(f"agents[{i}].agentId is required", field=f"agents[{i}].agentId")
    if version != "draft" and (
        not isinstance(version, int) or isinstance(version, bool) or version < 1
    ):
        raise InvalidInputError(
            f'agents[{i}].version must be a positive integer or "draft"',
            field=f"agents[{i}].version",
        )
    return agent_id, version


def _row(version: int | str) -> LatestRow:
    """The (empty) row of the latest results of `version` (a number or `"draft"`)."""
    subject = subject_of(None if version == "draft" else int(version), version == "draft")
    assert subject is not None  # a number or the draft always names one
    return LatestRow(subject)
