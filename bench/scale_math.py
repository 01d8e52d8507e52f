"""The scale benchmark's arithmetic (`bench.scale`, `bench.scale_orgs`): slot rounds, memory
readings, the carrying-on window and the item-size ceiling. Pure: no clock, no I/O."""

from __future__ import annotations

import math


def status_kb(text: str) -> dict[str, int]:
    """The `kB` fields of a `/proc/<pid>/status` text by name (`{"VmRSS": 123456, ...}`);
    lines of another shape are skipped."""
    out: dict[str, int] = {}
    for line in text.splitlines():
        name, _, rest = line.partition(":")
        parts = rest.split()
        if len(parts) == 2 and parts[1] == "kB" and parts[0].isdigit():
            out[name.strip()] = int(parts[0])
    return out


def slot_round_s(workers: int, attempts: int, busy_s: float) -> float:
    """One slot round in seconds: `workers x busy_s / attempts`, the mean time one of `workers`
    busy workers spends per case attempt (the agent's latency plus the per-case overhead).
    Raises ValueError for `workers < 1`, `attempts < 1` or a negative `busy_s`."""
    if workers < 1 or attempts < 1 or busy_s < 0:
        raise ValueError(
            f"need workers >= 1, attempts >= 1, busy_s >= 0 (got {workers}, {attempts}, {busy_s})"
        )
    return workers * busy_s / attempts


def fair_rounds(orgs: int, workers: int) -> int:
    """The fewest slot rounds in which every one of `orgs` organizations can have had its first
    case started by `workers` workers: ceil(orgs / workers). Raises ValueError for `workers < 1`."""
    if workers < 1:
        raise ValueError(f"workers must be at least 1, not {workers}")
    return math.ceil(orgs / workers)


def quarters(
    timeline: list[tuple[float, dict[str, int]]],
) -> list[tuple[int, dict[str, int]]]:
    """The samples of `timeline` ((seconds, values), in time order) nearest 0, 25, 50, 75 and 100 %
    of its span, as (percent, values); [] for an empty timeline."""
    if not timeline:
        return []
    end = timeline[-1][0]
    out = []
    for q in (0, 25, 50, 75, 100):
        at = end * q / 100
        out.append((q, min(timeline, key=lambda s: abs(s[0] - at))[1]))
    return out


def ratio(large: float, small: float) -> float:
    """large / small (NaN when small is 0)."""
    return large / small if small else float("nan")


def carry_margin_for(window_s: int, case_timeout_s: int, context_s: int) -> int:
    """The margin (`run_case.CARRY_MARGIN_SECONDS`) that lets a delivery carry on with its lane
    for `window_s` seconds of an invocation of `context_s` seconds: a delivery carries on while
    more than `case_timeout_s` + margin seconds are left, so margin = context - case timeout -
    window. 0 s: a delivery never carries on."""
    return context_s - case_timeout_s - window_s


def cases_at_limit(
    small_cases: int, small_bytes: int, large_cases: int, large_bytes: int, limit: int = 400 * 1024
) -> int:
    """How many cases an item that grows linearly with cases reaches `limit` bytes at (DynamoDB
    refuses items over 400 KB), from its size at two run sizes. Raises ValueError when the two
    sizes are equal in cases or the item does not grow."""
    if large_cases == small_cases or large_bytes <= small_bytes:
        raise ValueError("need two run sizes and an item that grows with them")
    per_case = (large_bytes - small_bytes) / (large_cases - small_cases)
    return small_cases + math.floor((limit - small_bytes) / per_case)
