"""A delivery's claim on one case attempt (docs/architecture/exactly-once.md, "One ask per
attempt"), as the attempts' lease table keeps it."""

from __future__ import annotations

from dataclasses import dataclass


@dataclass(frozen=True, kw_only=True)
class Lease:
    """A delivery's claim on one attempt while it asks the agent (issue 11 "One ask per
    attempt"): `holder` the SQS message id, `until_ms` when it lapses (epoch ms); `done` once the
    attempt is recorded (then it never lapses: nobody asks a recorded attempt again)."""

    attempt_key: str
    holder: str | None = None
    until_ms: int = 0
    done: bool = False
