"""The critical-path benchmark's own arithmetic and its wrappers (bench/critical_path.py)."""

from __future__ import annotations

import threading

from bench.critical_path import Timers, quantiles, timed


def test_quantiles_give_mean_median_p10_p90():
    xs = [float(x) for x in range(1, 11)]  # 1..10
    assert quantiles(xs) == (5.5, 5.5, 2.0, 10.0)


def test_quantiles_of_nothing_are_nan():
    assert all(x != x for x in quantiles([]))


def test_a_gap_is_measured_per_thread_from_its_last_call_end():
    timers = Timers()
    timers.entered()  # a thread's first call: no gap yet
    timers.left()
    other = threading.Thread(target=timers.entered)  # another thread's first call: none either
    other.start()
    other.join()
    assert timers.gaps == []
    timers.entered()
    assert len(timers.gaps) == 1 and timers.gaps[0] >= 0


def test_timed_wraps_for_the_block_and_puts_everything_back():
    from bench import agents
    from chalicelib.adapters.stores.ledger import RunStore
    from chalicelib.services import budgets, run_case

    before = (agents._enter, run_case.record, RunStore.record_attempt, budgets.read)
    timers = Timers()
    with timed(timers):
        assert run_case.record is not before[1]
        agents._enter(["probe:critical-path"])
        agents._leave(["probe:critical-path"])
        agents._enter(["probe:critical-path"])
        agents._leave(["probe:critical-path"])
    assert (agents._enter, run_case.record, RunStore.record_attempt, budgets.read) == before
    assert len(timers.gaps) == 1
