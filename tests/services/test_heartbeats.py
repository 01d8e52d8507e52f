"""One keep-alive thread per process beats every case in flight (issue 12), on the fakes. Waits
on the beats counted, never on wall time: the interval is short so the test is quick, and the
bounds are generous so a loaded machine does not fail it."""

from __future__ import annotations

import threading
from collections import Counter

import pytest

from chalicelib.config import Settings
from chalicelib.services import run_case
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run

KEY = "candidate#c0#001"


def test_one_thread_beats_every_case_in_flight_and_none_once_it_ended(
    c: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    c.settings = Settings(eval_heartbeat_seconds=0.02)
    c.orgs.ensure("acme", concurrency_limit=6, now_iso="2026-12-01T08:00:00.000Z")
    for run_id in ("r1", "r2"):
        c.runs.create(a_run(run_id, cases=1))
    beats: Counter[str] = Counter()
    threads: set[int] = set()
    changed = threading.Condition()

    def beat(org_id: str, run_id: str, now_ms: int) -> bool:
        with changed:
            beats[run_id] += 1
            threads.add(threading.get_ident())
            changed.notify_all()
        return True

    monkeypatch.setattr(c.runs, "beat", beat)
    r1, r2 = (c.runs.get_for_org("acme", r) for r in ("r1", "r2"))
    heartbeats = run_case._Heartbeats()
    with heartbeats.keeping(c, r2, KEY, "m2", None):
        with heartbeats.keeping(c, r1, KEY, "m1", None):
            with changed:
                assert changed.wait_for(lambda: min(beats["r1"], beats["r2"]) >= 2, timeout=60)
        with changed:
            r1_beats, r2_beats = beats["r1"], beats["r2"]
            assert changed.wait_for(lambda: beats["r2"] >= r2_beats + 3, timeout=60)
            # a beat of r1 may have been under way as its case ended; none starts after
            assert beats["r1"] <= r1_beats + 1
    assert len(threads) == 1 and threading.get_ident() not in threads
