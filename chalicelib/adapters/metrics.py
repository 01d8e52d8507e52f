"""CloudWatch metrics as Embedded Metric Format lines, through Powertools (issue 13 scope 6).

Lambda sends every stdout line to CloudWatch Logs, which turns an EMF object into metrics: no
CloudWatch request at all (nor its latency or IAM action). What an invocation counts is summed by
metric and dimensions (a case worker that carries on records many attempts in one invocation,
and an EMF array takes at most 100 values) and written at its end, one JSON line per set of
dimensions, by Powertools' EMF
provider (`AmazonCloudWatchEMFProvider`: validation, the 100-metric split, the `_aws` envelope).
Powertools is imported at the first flush that has something to write.
"""

from __future__ import annotations

import sys
import threading
from collections.abc import Callable
from typing import Any

from chalicelib.services.ports.telemetry import UNITS, Metric


class EmfMetrics:
    """`Metrics` written as EMF on stdout (or `write`), namespace `namespace`, with a `service`
    dimension on every line."""

    def __init__(
        self, namespace: str, service: str, write: Callable[[str], Any] | None = None
    ) -> None:
        self.namespace = namespace
        self.service = service
        self._write = write
        self._lock = threading.Lock()
        self._pending: dict[tuple[tuple[str, str], ...], dict[Metric, float]] = {}

    def add(self, metric: Metric, value: float = 1, **dimensions: str) -> None:
        """Count `value` of `metric` under `dimensions` until the next `flush`."""
        key = tuple(sorted((k, str(v)) for k, v in dimensions.items()))
        with self._lock:
            sums = self._pending.setdefault(key, {})
            sums[Metric(metric)] = sums.get(Metric(metric), 0.0) + float(value)

    def flush(self) -> None:
        """Write one EMF line per set of dimensions counted since the last flush."""
        with self._lock:
            pending, self._pending = self._pending, {}
        if not pending:
            return
        from aws_lambda_powertools.metrics.provider.cloudwatch_emf.cloudwatch import (
            AmazonCloudWatchEMFProvider,
        )

        for dimensions, figures in pending.items():
            provider = AmazonCloudWatchEMFProvider(namespace=self.namespace, service=self.service)
            for name, label in dimensions:
                provider.add_dimension(name=name, value=label)
            for metric, value in figures.items():
                provider.add_metric(name=metric.value, unit=UNITS[metric], value=value)
            self.emit(dict(provider.serialize_metric_set()))

    def emit(self, blob: dict[str, Any]) -> None:
        """Write one EMF object as a line (stdout: Lambda ships it to CloudWatch Logs)."""
        import json

        line = json.dumps(blob, separators=(",", ":"))
        if self._write is not None:
            self._write(line)
        else:
            sys.stdout.write(line + "\n")
            sys.stdout.flush()


class NoMetrics:
    """`Metrics` when the stage ships none (`ASSAY_METRICS=off`, the local default): counting
    costs nothing and nothing is written."""

    def add(self, metric: Metric, value: float = 1, **dimensions: str) -> None:
        """Forget it."""

    def flush(self) -> None:
        """Nothing to ship."""
