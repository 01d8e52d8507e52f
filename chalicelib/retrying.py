"""One way to change what another worker may change at the same time (issue 10, scope 2).

Read, decide the change (a pure function of what was read), write it conditional on what was
read, and when another writer won in between, read again and decide again. Every optimistic
change of the service goes through `change`, so all of them give up the same way: a
`ConflictError` naming the field, which the API answers with 409.
"""

from __future__ import annotations

import random
import time
from collections.abc import Callable
from dataclasses import dataclass
from typing import Generic, TypeVar

from chalicelib.errors import ConflictError

T = TypeVar("T")

TRIES = 20
"""Writes lost to other writers before `change` gives up (a burst of 20 racing writers settles)."""


def jitter() -> None:
    """A short random pause (2-20 ms) before deciding again: spreads a burst of writers."""
    time.sleep(random.uniform(0.002, 0.02))  # noqa: S311 - jitter, not security


@dataclass(frozen=True)
class Changed(Generic[T]):
    """What `change` read last and what it wrote (`after is before` when nothing was written)."""

    before: T
    after: T

    @property
    def written(self) -> bool:
        """Whether a write took place (the decision changed something)."""
        return self.after is not self.before


def change(
    read: Callable[[], T | None],
    decide: Callable[[T], T | None],
    write: Callable[[T, T], bool],
    *,
    conflict: str,
    field: str,
    tries: int = TRIES,
    pause: Callable[[], None] = jitter,
) -> Changed[T] | None:
    """Read → decide → conditional write, again while another writer wins.

    Args:
        read: the current record (None when it is gone).
        decide: the record as it should be after the change, given the record as read; None (or an
            equal record) when nothing needs writing. It may raise to refuse the change; it must not
            write anything itself (it may be called once per try).
        write: `write(before, after)` writes `after` conditional on the stored record still being
            `before`; False when another writer changed it first.
        conflict: the message of the `ConflictError` raised on giving up.
        field: the field that error names.
        tries: how many lost writes to take before giving up.
        pause: called between tries (tests pass a no-op).
    Returns:
        `Changed(before, after)` of the last read, `after is before` when no write was needed;
        None when `read` found nothing.
    Raises:
        ConflictError: `tries` writes in a row were lost to other writers.
    """
    for _ in range(tries):
        before = read()
        if before is None:
            return None
        after = decide(before)
        if after is None or after == before:
            return Changed(before, before)
        if write(before, after):
            return Changed(before, after)
        pause()
    raise ConflictError(conflict, field=field)
