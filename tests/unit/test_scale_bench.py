"""The scale benchmark's arithmetic (`bench.scale_math`): the slot round, the fair bound, the
carrying-on window, the item-size ceiling, the ratio and the reading of a process's memory, with
values worked out by hand."""

from __future__ import annotations

import math

import pytest

from bench.scale_math import (
    carry_margin_for,
    cases_at_limit,
    fair_rounds,
    quarters,
    ratio,
    slot_round_s,
    status_kb,
)


def test_a_slot_round_is_the_mean_time_one_worker_takes_per_case():
    # 50 workers busy for 100 s recorded 10,000 attempts: each worker did 200, 0.5 s apiece
    assert slot_round_s(50, 10_000, 100.0) == pytest.approx(0.5)
    # one worker, 4 cases in 0.3 s: 75 ms a case (a 50 ms agent and 25 ms of overhead)
    assert slot_round_s(1, 4, 0.3) == pytest.approx(0.075)
    assert slot_round_s(3, 7, 0.0) == 0.0


@pytest.mark.parametrize(
    ("workers", "attempts", "busy_s"), [(0, 10, 1.0), (2, 0, 1.0), (2, 10, -0.1)]
)
def test_a_slot_round_refuses_what_has_no_round(workers, attempts, busy_s):
    with pytest.raises(ValueError, match="need workers >= 1"):
        slot_round_s(workers, attempts, busy_s)


def test_the_fair_bound_is_how_many_rounds_every_org_needs_to_have_started():
    assert fair_rounds(50, 50) == 1
    assert fair_rounds(50, 49) == 2
    assert fair_rounds(50, 16) == 4
    assert fair_rounds(1, 8) == 1
    with pytest.raises(ValueError, match="workers must be at least 1"):
        fair_rounds(3, 0)


def test_ratio():
    assert ratio(12.0, 10.0) == pytest.approx(1.2)
    assert math.isnan(ratio(1.0, 0.0))


def test_status_kb_reads_the_kb_fields_of_proc_status():
    text = (
        "Name:\tpython\nState:\tS (sleeping)\nVmHWM:\t  204800 kB\nVmRSS:\t  150000 kB\n"
        "Threads:\t12\nVmBroken:\tx kB\n"
    )
    assert status_kb(text) == {"VmHWM": 204800, "VmRSS": 150000}
    assert status_kb("") == {}


def test_quarters_picks_the_samples_nearest_each_quarter_of_the_span():
    timeline = [(float(t), {"p": t * 10}) for t in range(9)]  # 0..8 s
    assert quarters(timeline) == [
        (0, {"p": 0}),
        (25, {"p": 20}),
        (50, {"p": 40}),
        (75, {"p": 60}),
        (100, {"p": 80}),
    ]
    assert quarters([(0.0, {"p": 5})]) == [(q, {"p": 5}) for q in (0, 25, 50, 75, 100)]
    assert quarters([]) == []


def test_the_carry_margin_gives_the_window_asked_for():
    # the embedded stack: a 720 s context (600 s case timeout + 120), the margin of 30 s leaves a
    # delivery 90 s of carrying on; on AWS (660 s Lambda timeout) the same margin leaves 30 s
    assert carry_margin_for(90, 600, 720) == 30
    assert carry_margin_for(30, 600, 660) == 30
    # no window: a delivery carries on only with more than the whole context left, never
    assert carry_margin_for(0, 600, 720) == 120


def test_cases_at_limit_extends_the_line_through_two_sizes_to_400_kb():
    # 2,500 bytes and 7 bytes a case (a 6-character id and its newline): 6,000 at 500 cases,
    # 142,500 at 20,000; 409,600 bytes at 500 + (409,600 - 6,000) / 7 = 58,157 cases
    assert cases_at_limit(500, 6_000, 20_000, 142_500) == 58_157
    assert cases_at_limit(0, 0, 1, 1024, limit=4096) == 4
    with pytest.raises(ValueError, match="two run sizes"):
        cases_at_limit(500, 6_000, 500, 9_000)
    with pytest.raises(ValueError, match="grows"):
        cases_at_limit(500, 6_000, 2_000, 6_000)
