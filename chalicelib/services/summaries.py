"""Agent summaries: the verdict word beside an agent version (docs/concepts/verdicts.md).

An evaluation is what measured a version (docs/guides/by-hand.md): the implied evaluation of
each dataset it was run on, and each explicit evaluation of it. Each evaluation contributes its
latest completed run only, matched on the run's pinned version (exact match; a draft matches runs of
the draft), and the contributions are summed. Staleness applies to drafts only: a run whose
spec hash differs from the draft as it is now tested something that no longer exists.

The runs are not read: the transaction that completes a run keeps its evaluation's latest totals
(`domain.history.LatestRow`), and a summary reads those.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import access
from chalicelib.domain.enums import Verdict
from chalicelib.domain.history import LatestResult, LatestRow, RunLuck, subject_of, verdict_of
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Agent
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
    luck: list[RunLuck] = field(default_factory=list)
    """The contributing runs whose verdict rests on a comparison: each one's chance that a
    candidate that changed nothing shows a confirmed regression, and its noise sentence
    (docs/concepts/noise.md), by run id."""
    p_luck_regression: float | None = None
    """The chance at least one of them shows a confirmed regression by luck; None when no
    contributing run rests on a comparison."""

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
    return [_summary(who, known[agent_id], version, rows) for agent_id, version in asked]


def _seen(who: Identity, row: Any) -> list[LatestResult]:
    """The latest results of a history row over the datasets the reader may open: a run over
    another is not theirs to count, nor to be named (docs/reference/access.md)."""
    results = row.results.values() if isinstance(row, LatestRow) else ()
    return [r for r in results if who.sees("dataset", r.dataset_id)]


def _summary(
    who: Identity, agent: Agent, version: int | str, rows: Mapping[tuple[str, str], Any]
) -> AgentSummary:
    """The verdict beside `version` of `agent` from the history `rows` read."""
    results = _seen(who, rows.get((agent.agent_id, _row(version).key)))
    totals = verdict_of(results, draft=version == "draft", draft_spec_hash=agent.draft_spec_hash)
    return AgentSummary(
        agent_id=agent.agent_id,
        version=version,
        total=totals.total,
        passed=totals.passed,
        evaluations=totals.evaluations,
        last_completed_at=totals.last_completed_at,
        stale=totals.stale,
        verdict=verdict_word(totals.total, totals.passed),
        run_ids=totals.run_ids,
        luck=totals.luck,
        p_luck_regression=totals.p_luck_regression,
    )


@dataclass(frozen=True)
class LastRun:
    """The newest completed run behind an agent's live or draft verdict."""

    run_id: str
    dataset_id: str
    completed_at: str
    version: int | str
    """The version it tested: a number or `"draft"`."""


@dataclass(frozen=True)
class AgentOverview:
    """What a list of agents shows beside each one (the console's Agents page).

    `draft_differs`: the draft's spec is not the latest version's (True while nothing is
    published). `live` and `draft`: the verdicts beside the live version (None while nothing is
    published) and beside the draft, None both when the reader may not read runs (`runs:view`).
    `last_run`: the newest completed run behind either verdict, None when there is none or the
    reader may not read runs."""

    agent_id: str
    live_version: int | None
    draft_differs: bool
    live: AgentSummary | None
    draft: AgentSummary | None
    last_run: LastRun | None


def overview(c: Container, who: Identity, agents: Sequence[Agent]) -> list[AgentOverview]:
    """One `AgentOverview` per agent of `agents` (rows the caller read and may see), in order.

    Bounded reads, whatever the agents' history: the latest versions' rows (for their spec
    hashes) and the live version's and the draft's `LatestRow` of each agent, each in batches of
    at most 100 keys; nothing when `agents` is empty. The live version is the agent's
    `live_version`, its latest while none was chosen."""
    if not agents:
        return []
    published = [(a.agent_id, int(a.latest_version)) for a in agents if a.latest_version]
    versions = c.agents.get_versions(who.org_id, published) if published else {}
    reads_runs = who.may(access.RUNS_VIEW)
    rows: Mapping[tuple[str, str], Any] = {}
    if reads_runs:
        keys = {(a.agent_id, _row("draft").key) for a in agents}
        keys |= {(a.agent_id, _row(v).key) for a in agents if (v := _live(a))}
        rows = c.runs.history(who.org_id, sorted(keys))
    out = []
    for a in agents:
        latest = versions.get((a.agent_id, int(a.latest_version or 0)))
        live_version = _live(a)
        live = _summary(who, a, live_version, rows) if reads_runs and live_version else None
        draft = _summary(who, a, "draft", rows) if reads_runs else None
        out.append(
            AgentOverview(
                agent_id=a.agent_id,
                live_version=live_version,
                draft_differs=latest is None or latest.spec_hash != a.draft_spec_hash,
                live=live,
                draft=draft,
                last_run=_last_run(who, a, live_version, rows) if reads_runs else None,
            )
        )
    return out


def _live(agent: Agent) -> int | None:
    """The version the agent serves: `live_version`, else its latest, else None."""
    return int(agent.live_version or agent.latest_version or 0) or None


def _last_run(
    who: Identity, agent: Agent, live_version: int | None, rows: Mapping[tuple[str, str], Any]
) -> LastRun | None:
    """The newest completed run (`LatestResult.is_newer_than`) of the live version's and the
    draft's latest results the reader may see."""
    found: tuple[LatestResult, int | str] | None = None
    versions: list[int | str] = ["draft", *([live_version] if live_version else [])]
    for version in versions:
        for r in _seen(who, rows.get((agent.agent_id, _row(version).key))):
            if found is None or r.is_newer_than(found[0]):
                found = (r, version)
    if found is None:
        return None
    r, version = found
    return LastRun(r.run_id, r.dataset_id, r.completed_at, version)


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
