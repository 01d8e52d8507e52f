"""Keeping a long case alive while it is answered (docs/architecture/run-lifecycle.md): the
run's heartbeat, the attempt's lease and the message's visibility, every
`EVAL_HEARTBEAT_SECONDS`, by one daemon thread per process."""

from __future__ import annotations

import itertools
import logging
import threading
import time
from collections.abc import Iterator
from contextlib import contextmanager

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms
from chalicelib.domain.records import Run

log = logging.getLogger(__name__)


class _Beat:
    """One case in flight that `_HEARTBEATS` keeps alive: what to beat, and when next."""

    def __init__(self, c: Container, run: Run, key: str, holder: str, receipt: str | None) -> None:
        self.c, self.run, self.key, self.holder, self.receipt = c, run, key, holder, receipt
        self.interval_s = float(c.settings.eval_heartbeat_seconds)
        self.next_at = time.monotonic() + self.interval_s

    def beat(self) -> None:
        c, run = self.c, self.run
        try:
            now_ms = epoch_ms(c.clock.now())
            c.runs.beat(run.org_id, run.run_id, now_ms)
            c.runs.extend_lease(run, self.key, self.holder, now_ms + _lease_ms(c))
            if self.receipt:
                c.case_queue.extend_visibility(self.receipt, c.settings.visibility_timeout_seconds)
        except Exception:  # noqa: BLE001 - a missed heartbeat is what the sweep is for
            log.exception("heartbeat of run %s failed", run.run_id)


class _Heartbeats:
    """While a long case runs: heartbeat the run, keep the message invisible and the attempt's
    lease held, every `EVAL_HEARTBEAT_SECONDS` (docs/architecture/run-lifecycle.md).

    One daemon thread per process beats every case in flight in it, started with the first: a
    thread per case cost each case a thread start, a handoff through the GIL that waits on every
    other lane of the embedded stack (issue 12). A beat that hangs delays the others of this
    process only (a Lambda holds one case at a time); the sweep takes a lane over only after
    `TAKEOVER_BEATS` missed ones."""

    def __init__(self) -> None:
        self._changed = threading.Condition()
        self._held: dict[int, _Beat] = {}
        self._tokens = itertools.count()
        self._thread: threading.Thread | None = None

    @contextmanager
    def keeping(
        self, c: Container, run: Run, key: str, holder: str, receipt: str | None
    ) -> Iterator[None]:
        """Keep the attempt `key` of `run` alive for `holder` while the block runs."""
        with self._changed:
            token = next(self._tokens)
            self._held[token] = _Beat(c, run, key, holder, receipt)
            if self._thread is None or not self._thread.is_alive():
                self._thread = threading.Thread(target=self._loop, daemon=True, name="keepalive")
                self._thread.start()
            self._changed.notify()
        try:
            yield
        finally:
            with self._changed:
                self._held.pop(token, None)

    def _loop(self) -> None:
        while True:
            with self._changed:
                now = time.monotonic()
                due = [(t, b) for t, b in self._held.items() if b.next_at <= now]
                if not due:
                    soonest = min((b.next_at for b in self._held.values()), default=None)
                    self._changed.wait(None if soonest is None else soonest - now)
                    continue
                for _, b in due:
                    b.next_at = now + b.interval_s
            for token, b in due:
                with self._changed:
                    if token not in self._held:  # its case ended while others were beaten
                        continue
                b.beat()


_HEARTBEATS = _Heartbeats()


def _lease_ms(c: Container) -> int:
    """How long a delivery's claim on its attempt lasts (ms): the message's visibility timeout,
    which is beyond the case timeout, so a live worker's claim never lapses under it (its
    keep-alive moves both on) and a dead worker's lapses by the time SQS delivers again."""
    return c.settings.visibility_timeout_seconds * 1000


class LeaseHeld(Exception):
    """An earlier delivery of this very message holds its attempt and may still be asking: the
    message is left for SQS to deliver again once that claim lapses (`seconds` from now)."""

    redelivery_expected = True
    """Not a failure: the local pollers log it as a line, not a traceback."""

    def __init__(self, key: str, seconds: int) -> None:
        super().__init__(f"attempt {key} is held by an earlier delivery for {seconds} s more")
        self.seconds = seconds
