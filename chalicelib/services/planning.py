"""The plan of a start: everything `runs.plan_run` decides before anything is written or spent.

Its own module so the estimate prices a plan without importing the use case that makes one
(planning, then pricing, then starting: issue 10's graph).
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chalicelib.domain.records import Arm
from chalicelib.domain.replay import Replay
from chalicelib.services import judges


@dataclass
class Plan:
    """Everything a start decides before anything is written or spent (shared by the estimate)."""

    agent_id: str
    spec: dict[str, Any]
    version: int | None
    draft: bool
    dataset: Any
    """The dataset version row."""
    case_count: int
    ungraded: int
    """Cases no required scorer applies to (with the judge grading now)."""
    judged: int
    """Cases the judge applies to (0 without a judge)."""
    judge: judges.ResolvedJudge | None
    arms: list[Arm]
    info: dict[str, Any]
    """`reused_baseline_run_id` / `missing_baseline_version` when they apply."""
    reruns: int
    stability: bool
    warnings: list[str] = field(default_factory=list)
    scoring: dict[str, Any] = field(default_factory=dict)
    """The dataset version's scoring, with a pinned judge version when one is pinned."""
    replay: Replay = Replay()
    """How the run answers tool calls from a recording (`from_recordings`, `recording_id`,
    `live_reads`)."""
    isolation: dict[str, Any] = field(default_factory=dict)
    """What the run keeps as `settings["isolation"]`: the test connections of the environment it
    names, then its replay (`Replay.settings`); see `services.tool_calls.isolation_of`."""
    reruns_auto: dict[str, Any] | None = None
    """With `reruns: "auto"`: what was chosen and why (`services.rerun_choice.choose`); the run
    keeps it as `settings["reruns_auto"]`, the estimate shows it."""
