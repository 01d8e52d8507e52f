"""The metrics port (issue 13 scope 6): what the service counts, for CloudWatch or for nobody.

The use cases count what happened (a run started or ended, an attempt recorded, a message given
up on) and never how it is shipped: the adapter (`adapters.metrics`) writes CloudWatch's Embedded
Metric Format in a deployed stage, nothing locally; the entry points flush at the end of each
invocation (`chalicelib.telemetry.invocation`).
"""

from __future__ import annotations

from collections.abc import Mapping
from enum import StrEnum
from typing import Protocol


class Metric(StrEnum):
    """Every metric's name, unit and dimensions (the namespace is `ASSAY_METRICS_NAMESPACE`)."""

    RUNS_STARTED = "RunsStarted"
    """Count of eval runs started (written and queued), no dimension but `service`."""
    RUNS_ENDED = "RunsEnded"
    """Count of eval runs that reached an end, by `status` (completed, failed, cancelled,
    budget_exceeded)."""
    ATTEMPTS = "Attempts"
    """Count of case attempts recorded, by `state` (passed, failed, incomplete, ungraded)."""
    COST_USD = "CostUSD"
    """USD the recorded attempts cost (the agent's requests and the judge's), by `state`."""
    DEAD_LETTERS = "DeadLetters"
    """Count of messages moved to a dead-letter queue, by `queue` (case-tasks, agent-events) and
    `cause`: `refused` (the service moved one it will never handle) or `redelivered` (SQS moved
    one after its `maxReceiveCount`-th delivery, as its DLQ handler received it)."""


UNITS: Mapping[Metric, str] = {
    Metric.RUNS_STARTED: "Count",
    Metric.RUNS_ENDED: "Count",
    Metric.ATTEMPTS: "Count",
    Metric.COST_USD: "None",
    Metric.DEAD_LETTERS: "Count",
}
"""CloudWatch's unit of each metric (USD has none of its own)."""


class Metrics(Protocol):
    """Figures counted during one invocation, shipped when it ends."""

    def add(self, metric: Metric, value: float = 1, **dimensions: str) -> None:
        """Count `value` of `metric` under `dimensions` (e.g. `state="passed"`)."""

    def flush(self) -> None:
        """Ship what was counted since the last flush, and forget it."""
