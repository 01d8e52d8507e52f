"""The pass-rate chart's rules (docs/guides/console.md), with hand-computed values."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime, timedelta

import pytest

from chalicelib.domain.chart import (
    ChartRun,
    Trend,
    TrendRun,
    build_chart,
    labels,
    tooltip_of,
    window_of,
)
from chalicelib.domain.enums import ArmRole
from chalicelib.errors import InvalidInputError
from tests.fakes.ledger import a_run, an_arm, an_outcome

NOW = datetime(2026, 12, 2, 21, 0, tzinfo=UTC)


def run(n: int, **overrides: object) -> ChartRun:
    values: dict[str, object] = {
        "run_id": f"run_{n:04d}",
        "dataset_id": "gsm8k",
        "dataset_name": "GSM8K test",
        "started_at": datetime(2026, 12, 2, 9, 0, tzinfo=UTC) + timedelta(minutes=n),
        "pass_rate": 0.5,
        "broke": 0,
        "fixed": 0,
        "draft": False,
        "could_not_run": False,
        "what": "v2",
        "against": "v1",
        "model": None,
    }
    values.update(overrides)
    return ChartRun(**values)  # type: ignore[arg-type]


def test_a_point_is_red_green_amber_or_neutral_by_its_confirmed_flips() -> None:
    runs = [run(0, broke=2), run(1, fixed=3), run(2, broke=1, fixed=1), run(3)]
    chart = build_chart(runs, now=NOW, last="10")
    assert [p.colour for p in chart.points] == ["red", "green", "amber", "neutral"]


def test_a_drafts_point_is_hollow() -> None:
    chart = build_chart([run(0, draft=True, what="draft"), run(1)], now=NOW, last="10")
    assert [p.hollow for p in chart.points] == [True, False]


def test_each_dataset_gets_its_own_dash_in_order_of_first_appearance() -> None:
    ids = ["b", "a", "b", "c", "d", "e", "f", "g"]
    runs = [run(i, dataset_id=d, dataset_name=d.upper()) for i, d in enumerate(ids)]
    chart = build_chart(runs, now=NOW, last="10")
    assert [(s.dataset_id, s.name, s.dash) for s in chart.series] == [
        ("b", "B", ""),
        ("a", "A", "6 4"),
        ("c", "C", "2 3"),
        ("d", "D", "8 3 2 3"),
        ("e", "E", "12 4"),
        ("f", "F", "1 3"),
        ("g", "G", ""),
    ]
    assert [p.dataset_id for p in chart.points] == ids


def test_points_are_run_by_run_oldest_left_with_the_pass_rate() -> None:
    runs = [run(2, pass_rate=0.75), run(0, pass_rate=0.25), run(1, pass_rate=1.0)]
    chart = build_chart(runs, now=NOW, last="10")
    assert [(p.run_id, p.x, p.y) for p in chart.points] == [
        ("run_0000", 0, 0.25),
        ("run_0001", 1, 1.0),
        ("run_0002", 2, 0.75),
    ]


def test_runs_started_at_the_same_instant_are_ordered_by_run_id() -> None:
    at = datetime(2026, 12, 2, 9, 0, tzinfo=UTC)
    chart = build_chart(
        [run(0, run_id="run_b", started_at=at), run(1, run_id="run_a", started_at=at)],
        now=NOW,
        last="10",
    )
    assert [p.run_id for p in chart.points] == ["run_a", "run_b"]


@pytest.mark.parametrize(
    ("count", "last", "shown", "first", "switch"),
    [
        (10, "10", 10, "run_0000", False),
        (11, "10", 10, "run_0001", True),
        (11, "all", 11, "run_0000", True),
        (40, "30", 30, "run_0010", True),
        (40, "10", 10, "run_0030", True),
        (40, "all", 40, "run_0000", True),
        (5, "30", 5, "run_0000", False),
    ],
)
def test_the_window_keeps_the_newest_10_30_or_all_and_the_switch_shows_past_10(
    count: int, last: str, shown: int, first: str, switch: bool
) -> None:
    chart = build_chart([run(i) for i in range(count)], now=NOW, last=last)
    assert (chart.measured, chart.shown, chart.switch) == (count, shown, switch)
    assert chart.points[0].run_id == first
    assert chart.points[-1].run_id == f"run_{count - 1:04d}"
    assert chart.last == last


def test_pending_and_could_not_run_runs_are_not_counted_or_shown() -> None:
    runs = [run(i) for i in range(10)] + [
        run(10, pass_rate=None),
        run(11, could_not_run=True, pass_rate=0.0),
    ]
    chart = build_chart(runs, now=NOW, last="10")
    assert (chart.measured, chart.shown, chart.switch) == (10, 10, False)
    assert "run_0010" not in [p.run_id for p in chart.points]
    assert "run_0011" not in [p.run_id for p in chart.points]


def test_no_measured_run_makes_an_empty_chart() -> None:
    chart = build_chart([run(0, pass_rate=None)], now=NOW, last="all")
    assert (chart.measured, chart.shown, chart.series, chart.points) == (0, 0, (), ())


def test_last_must_be_10_30_or_all() -> None:
    assert window_of(None) == "10"
    assert window_of("30") == "30"
    with pytest.raises(InvalidInputError) as caught:
        window_of("20")
    assert caught.value.field == "last"


def _at(day: int, hour: int, minute: int, year: int = 2026, month: int = 12) -> datetime:
    return datetime(year, month, day, hour, minute, tzinfo=UTC)


def test_runs_of_today_are_labelled_by_time_with_repeats_blank() -> None:
    times = [_at(2, 9, 5), _at(2, 9, 5), _at(2, 14, 3), _at(2, 14, 3), _at(2, 9, 5)]
    assert labels(times, now=NOW) == ["09:05", "", "14:03", "", "09:05"]


def test_runs_seconds_apart_in_one_minute_are_each_labelled_with_their_seconds() -> None:
    start = _at(2, 19, 54)
    times = [start + timedelta(seconds=s) for s in (3, 3, 17, 41)] + [_at(2, 19, 58)]
    # a run alone in its minute keeps the short label; equal times still print once
    assert labels(times, now=NOW) == ["19:54:03", "", "19:54:17", "19:54:41", "19:58"]


def test_runs_of_one_past_day_are_labelled_by_time_too() -> None:
    times = [_at(20, 8, 0, month=11), _at(20, 8, 0, month=11), _at(20, 23, 59, month=11)]
    assert labels(times, now=NOW) == ["08:00", "", "23:59"]


def test_across_days_older_runs_get_the_date_and_todays_the_time() -> None:
    times = [_at(30, 10, 0, month=11), _at(1, 9, 0), _at(1, 18, 0), _at(2, 8, 15), _at(2, 8, 15)]
    assert labels(times, now=NOW) == ["Nov 30", "Dec 1", "", "08:15", ""]


def test_across_years_the_dates_carry_the_year() -> None:
    times = [_at(31, 12, 0, year=2025), _at(1, 9, 0, year=2026, month=1), _at(2, 7, 30)]
    assert labels(times, now=NOW) == ["Dec 31 2025", "Jan 1 2026", "07:30"]


def test_within_one_year_dates_have_no_year_even_on_older_years() -> None:
    times = [_at(1, 9, 0, year=2025), _at(2, 9, 0, year=2025)]
    assert labels(times, now=NOW) == ["Dec 1", "Dec 2"]


def test_the_chart_labels_only_the_shown_runs() -> None:
    old = [run(i, started_at=_at(1, 9, i)) for i in range(5)]
    today = [run(5 + i, started_at=_at(2, 10, i)) for i in range(10)]
    chart = build_chart(old + today, now=NOW, last="10")
    assert [p.label for p in chart.points] == [f"10:{i:02d}" for i in range(10)]
    chart = build_chart(old + today, now=NOW, last="all")
    labels_all = [p.label for p in chart.points]
    assert labels_all[:6] == ["Dec 1", "", "", "", "", "10:00"]


def test_the_tooltip_says_what_ran_against_what_where_and_when() -> None:
    r = run(0, what="v4", against="v3", started_at=_at(1, 14, 3), pass_rate=0.732, broke=2, fixed=5)
    assert tooltip_of(r) == (
        "v4 against v3 on GSM8K test · 2026-12-01 14:03 UTC · pass rate 73.2% · broke 2, fixed 5"
    )


def test_a_run_without_a_baseline_ran_alone_and_no_flips_are_left_out() -> None:
    r = run(0, what="draft", against=None, started_at=_at(2, 8, 0), pass_rate=0.5, draft=True)
    assert tooltip_of(r) == "draft alone on GSM8K test · 2026-12-02 08:00 UTC · pass rate 50.0%"
    r = replace(r, what="v2", pass_rate=1.0)
    assert tooltip_of(r) == "v2 alone on GSM8K test · 2026-12-02 08:00 UTC · pass rate 100.0%"


def test_the_chart_point_carries_its_tooltip() -> None:
    chart = build_chart([run(0, fixed=1)], now=NOW, last="10")
    assert chart.points[0].tooltip == (
        "v2 against v1 on GSM8K test · 2026-12-02 09:00 UTC · pass rate 50.0% · broke 0, fixed 1"
    )


def test_a_completed_runs_trend_row_names_what_ran_against_what() -> None:
    candidate = an_arm("candidate", version=4, spec={"model": "gpt-x"})
    baseline = an_arm("baseline", ArmRole.BASELINE, version=3)
    run_ = a_run(
        "r9",
        status="completed",
        created_at="2026-12-02T09:00:00.000Z",
        started_at="2026-12-02T09:00:05.000Z",
        arms=(candidate, baseline),
        outcome=an_outcome(total=4, passed=3),
    )
    row = TrendRun.of(run_)
    assert row is not None
    assert (row.started_at, row.what, row.against, row.model, row.draft) == (
        "2026-12-02T09:00:05.000Z",
        "v4",
        "v3",
        "gpt-x",
        False,
    )
    assert row.trend == Trend(pass_rate=0.75)
    assert TrendRun.of_json(row.as_json()) == row

    draft = replace(run_, arms=(replace(candidate, draft=True, version=None),), draft=True)
    alone = TrendRun.of(replace(draft, started_at=None))
    assert alone is not None
    assert (alone.what, alone.against, alone.draft) == ("draft", None, True)
    assert alone.started_at == "2026-12-02T09:00:00.000Z"  # never started: its creation


def test_a_run_that_did_not_complete_has_no_trend_row() -> None:
    assert TrendRun.of(a_run("r1", status="running", outcome=an_outcome())) is None
    assert TrendRun.of(a_run("r1", status="failed")) is None
    assert TrendRun.of(a_run("r1", status="completed")) is None  # no outcome kept
