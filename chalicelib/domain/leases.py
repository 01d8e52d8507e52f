"""A delivery's claim on one case attempt (docs/architecture/exactly-once.md, "One ask per
attempt"), as the attempts' lease table keeps it, and the count of the attempt's failures on
assay's own errors (docs/architecture/run-lifecycle.md, "A run its worker cannot finish")."""

from __future__ import annotations

from dataclasses import dataclass

ERROR_CHARS = 300
"""The most characters of an error a lease keeps (and a run's reason names)."""


@dataclass(frozen=True, kw_only=True)
class Lease:
    """A delivery's claim on one attempt while it asks the agent (issue 11 "One ask per
    attempt"): `holder` the SQS message id, `until_ms` when it lapses (epoch ms); `done` once the
    attempt is recorded (then it never lapses: nobody asks a recorded attempt again).

    `failures`: how many deliveries of the attempt failed on assay's own error (an exception in
    the service, a store or queue unreachable), counted per attempt whatever message carried it -
    a copy the sweep sent again counts on the same lease. `last_error`: the last of those errors,
    redacted, at most `ERROR_CHARS` characters (None before the first)."""

    attempt_key: str
    holder: str | None = None
    until_ms: int = 0
    done: bool = False
    failures: int = 0
    last_error: str | None = None


def stops_run(failures: int, tries: int) -> bool:
    """Whether an attempt that failed `failures` times on assay's own error ends its run `failed`
    (`tries`: `EVAL_CASE_ERROR_TRIES`, at least 1): from the `tries`-th failure on. Fewer are
    delivered again - a throttled request or a store that blinked succeeds on a later delivery."""
    return failures >= max(1, tries)


def error_text(kind: str, message: str) -> str:
    """How a failure is named: the exception's class `kind` and its `message` (not redacted yet:
    the caller redacts it before it is kept), e.g. `RuntimeError: the table is unreachable`;
    the class alone when the message is empty."""
    message = " ".join(message.split())
    return f"{kind}: {message}" if message else kind
