"""The metrics port's fake: keeps every figure counted, summed by metric and dimensions."""

from __future__ import annotations

from collections import Counter

from chalicelib.services.ports.telemetry import Metric


class FakeMetrics:
    """`counted[(metric, (("state", "passed"),))] == 2.0`; `flushes` counts the flushes."""

    def __init__(self) -> None:
        self.counted: Counter[tuple[Metric, tuple[tuple[str, str], ...]]] = Counter()
        self.flushes = 0

    def add(self, metric: Metric, value: float = 1, **dimensions: str) -> None:
        self.counted[(Metric(metric), tuple(sorted(dimensions.items())))] += value

    def flush(self) -> None:
        self.flushes += 1

    def total(self, metric: Metric, **dimensions: str) -> float:
        """What was counted of `metric` under exactly `dimensions`."""
        return self.counted[(metric, tuple(sorted(dimensions.items())))]
