"""The clock, injected: services take `Clock`, tests pass a fixed one."""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Protocol


class Clock(Protocol):
    """Something that tells the time as an aware UTC datetime."""

    def now(self) -> datetime: ...


class SystemClock:
    """The machine's clock, in UTC."""

    def now(self) -> datetime:
        return datetime.now(UTC)


def iso(dt: datetime) -> str:
    """UTC ISO-8601 with millisecond precision and a `Z`, e.g. `2026-11-29T20:44:10.123Z`."""
    return dt.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%S.") + f"{dt.microsecond // 1000:03d}Z"


def epoch_ms(dt: datetime) -> int:
    """Milliseconds since the epoch, for values that are sorted or compared."""
    return int(dt.timestamp() * 1000)


def from_epoch_ms(ms: int) -> datetime:
    """The aware UTC datetime of epoch milliseconds."""
    return datetime.fromtimestamp(ms / 1000, tz=UTC)


def parse_iso(text: str) -> datetime:
    """Inverse of `iso` (accepts any ISO-8601 with `Z` or an offset)."""
    return datetime.fromisoformat(text.replace("Z", "+00:00"))


class FixedClock:
    """A clock that says what it is told (tests; replaying a schedule)."""

    def __init__(self, at: datetime) -> None:
        self.at = at

    def now(self) -> datetime:
        return self.at

    def advance(self, **delta: float) -> datetime:
        """Move the clock forward by `timedelta(**delta)`; returns the new time."""
        from datetime import timedelta

        self.at = self.at + timedelta(**delta)
        return self.at
