"""Suite cron schedules with hand-computed instants (docs/guides/suites.md).

2026 clock changes (checked with zoneinfo):
- Europe/Warsaw: spring forward 2026-03-29 at 01:00 UTC (02:00 CET -> 03:00 CEST, 02:00-02:59
  never happens); fall back 2026-10-25 at 01:00 UTC (03:00 CEST -> 02:00 CET, 02:00-02:59 twice).
- America/Toronto: spring forward 2026-03-08 at 07:00 UTC (02:00 EST -> 03:00 EDT); fall back
  2026-11-01 at 06:00 UTC (02:00 EDT -> 01:00 EST, so 01:00-01:59 happens twice, not 02:xx).

Every expected instant is a literal UTC datetime with the local wall time beside it.
"""

from __future__ import annotations

import os
import time
from datetime import UTC, datetime, timedelta, timezone
from zoneinfo import ZoneInfo

import pytest

from chalicelib.domain.schedule import (
    CronError,
    fires_between,
    fires_per_30_days,
    next_fire,
    validate,
)

WAW = "Europe/Warsaw"
TOR = "America/Toronto"


def u(*args: int) -> datetime:
    return datetime(*args, tzinfo=UTC)


def test_the_2026_transitions_are_where_the_tests_assume():
    waw, tor = ZoneInfo(WAW), ZoneInfo(TOR)
    assert (
        u(2026, 3, 29, 0, 59).astimezone(waw).utcoffset(),
        u(2026, 3, 29, 1).astimezone(waw).utcoffset(),
    ) == (timedelta(hours=1), timedelta(hours=2))
    assert (
        u(2026, 10, 25, 0, 59).astimezone(waw).utcoffset(),
        u(2026, 10, 25, 1).astimezone(waw).utcoffset(),
    ) == (timedelta(hours=2), timedelta(hours=1))
    assert (
        u(2026, 3, 8, 6, 59).astimezone(tor).utcoffset(),
        u(2026, 3, 8, 7).astimezone(tor).utcoffset(),
    ) == (timedelta(hours=-5), timedelta(hours=-4))
    assert (
        u(2026, 11, 1, 5, 59).astimezone(tor).utcoffset(),
        u(2026, 11, 1, 6).astimezone(tor).utcoffset(),
    ) == (timedelta(hours=-4), timedelta(hours=-5))


# --- six in Warsaw either side of a clock change ------------------------------------------------


def test_six_in_warsaw_either_side_of_spring_forward():
    assert fires_between("0 6 * * *", WAW, u(2026, 3, 27), u(2026, 3, 31)) == [
        u(2026, 3, 27, 5),  # 06:00 CET
        u(2026, 3, 28, 5),  # 06:00 CET
        u(2026, 3, 29, 4),  # 06:00 CEST, the change day
        u(2026, 3, 30, 4),  # 06:00 CEST
    ]


def test_six_in_warsaw_either_side_of_fall_back():
    assert fires_between("0 6 * * *", WAW, u(2026, 10, 23), u(2026, 10, 27)) == [
        u(2026, 10, 23, 4),  # 06:00 CEST
        u(2026, 10, 24, 4),  # 06:00 CEST
        u(2026, 10, 25, 5),  # 06:00 CET, the change day
        u(2026, 10, 26, 5),  # 06:00 CET
    ]


def test_six_in_toronto_either_side_of_both_changes():
    assert fires_between("0 6 * * *", TOR, u(2026, 3, 7), u(2026, 3, 10)) == [
        u(2026, 3, 7, 11),  # 06:00 EST
        u(2026, 3, 8, 10),  # 06:00 EDT, the change day
        u(2026, 3, 9, 10),  # 06:00 EDT
    ]
    assert fires_between("0 6 * * *", TOR, u(2026, 10, 31), u(2026, 11, 3)) == [
        u(2026, 10, 31, 10),  # 06:00 EDT
        u(2026, 11, 1, 11),  # 06:00 EST, the change day
        u(2026, 11, 2, 11),  # 06:00 EST
    ]


# --- a skipped wall time fires once at the end of the gap ---------------------------------------


def test_warsaw_skipped_wall_time_fires_at_the_first_instant_after_the_gap():
    assert next_fire("30 2 * * *", WAW, u(2026, 3, 28, 12)) == u(2026, 3, 29, 1)  # 03:00 CEST
    assert fires_between("30 2 * * *", WAW, u(2026, 3, 27, 12), u(2026, 3, 31)) == [
        u(2026, 3, 28, 1, 30),  # 02:30 CET
        u(2026, 3, 29, 1),  # 02:30 does not exist: 03:00 CEST
        u(2026, 3, 30, 0, 30),  # 02:30 CEST
    ]


def test_toronto_skipped_wall_time_fires_at_the_first_instant_after_the_gap():
    assert next_fire("30 2 * * *", TOR, u(2026, 3, 7, 12)) == u(2026, 3, 8, 7)  # 03:00 EDT


def test_every_skipped_wall_time_collapses_into_one_fire():
    # 02:00, 02:15, 02:30, 02:45 on 2026-03-29 are all 03:00 CEST.
    assert fires_between("*/15 2 * * *", WAW, u(2026, 3, 28, 12), u(2026, 3, 29, 12)) == [
        u(2026, 3, 29, 1)
    ]
    assert fires_between("*/15 2 * * *", TOR, u(2026, 3, 7, 12), u(2026, 3, 8, 12)) == [
        u(2026, 3, 8, 7)
    ]


def test_a_skipped_wall_time_and_the_one_at_the_end_of_the_gap_are_one_fire():
    assert fires_between("0 2,3 * * *", WAW, u(2026, 3, 28, 12), u(2026, 3, 29, 12)) == [
        u(2026, 3, 29, 1),  # 02:00 (skipped) and 03:00 CEST are the same instant
    ]


# --- a repeated wall time fires at its first occurrence only ------------------------------------


def test_warsaw_repeated_wall_time_fires_at_its_first_occurrence_only():
    assert fires_between("30 2 * * *", WAW, u(2026, 10, 24, 12), u(2026, 10, 26, 12)) == [
        u(2026, 10, 25, 0, 30),  # 02:30 CEST; 02:30 CET (01:30 UTC) does not fire
        u(2026, 10, 26, 1, 30),  # 02:30 CET, the next day
    ]
    assert next_fire("30 2 * * *", WAW, u(2026, 10, 25, 0, 30)) == u(2026, 10, 26, 1, 30)


def test_toronto_repeated_wall_time_fires_at_its_first_occurrence_only():
    # Toronto repeats 01:xx, not 02:xx: 01:30 happens at 05:30 UTC (EDT) and 06:30 UTC (EST).
    assert fires_between("30 1 * * *", TOR, u(2026, 10, 31, 12), u(2026, 11, 2, 12)) == [
        u(2026, 11, 1, 5, 30),  # 01:30 EDT; 01:30 EST does not fire
        u(2026, 11, 2, 6, 30),  # 01:30 EST, the next day
    ]
    assert fires_between("30 2 * * *", TOR, u(2026, 10, 31, 12), u(2026, 11, 2, 12)) == [
        u(2026, 11, 1, 7, 30),  # 02:30 EST, happens once
        u(2026, 11, 2, 7, 30),  # 02:30 EST
    ]


def test_a_repeated_quarter_hour_fires_on_the_first_pass_only():
    assert fires_between("*/15 2 * * *", WAW, u(2026, 10, 24, 12), u(2026, 10, 25, 12)) == [
        u(2026, 10, 25, 0, 0),  # 02:00 CEST
        u(2026, 10, 25, 0, 15),  # 02:15 CEST
        u(2026, 10, 25, 0, 30),  # 02:30 CEST
        u(2026, 10, 25, 0, 45),  # 02:45 CEST; the CET pass 01:00-01:45 UTC does not fire
    ]
    assert fires_between("*/15 1 * * *", TOR, u(2026, 10, 31, 12), u(2026, 11, 1, 12)) == [
        u(2026, 11, 1, 5, 0),  # 01:00 EDT
        u(2026, 11, 1, 5, 15),  # 01:15 EDT
        u(2026, 11, 1, 5, 30),  # 01:30 EDT
        u(2026, 11, 1, 5, 45),  # 01:45 EDT; the EST pass 06:00-06:45 UTC does not fire
    ]


def test_after_inside_the_second_pass_skips_to_the_next_day():
    # 01:40 UTC is 02:40 CET, the second pass; 02:45's first pass (00:45 UTC) is already past.
    assert next_fire("45 2 * * *", WAW, u(2026, 10, 25, 1, 40)) == u(
        2026, 10, 26, 1, 45
    )  # 02:45 CET


# --- one fire per local day across each change ---------------------------------------------------


@pytest.mark.parametrize(
    ("tz", "day"),
    [
        (WAW, datetime(2026, 3, 29)),
        (WAW, datetime(2026, 10, 25)),
        (TOR, datetime(2026, 3, 8)),
        (TOR, datetime(2026, 11, 1)),
    ],
)
@pytest.mark.parametrize(
    "expr", ["0 6 * * *", "30 2 * * *", "30 1 * * *", "0 0 * * *", "59 23 * * *"]
)
def test_a_daily_wall_time_fires_exactly_once_on_every_local_day(tz, day, expr):
    zone = ZoneInfo(tz)
    start = (day - timedelta(days=5)).replace(tzinfo=zone)  # local midnight, 5 days before
    end = (day + timedelta(days=5)).replace(tzinfo=zone)  # local midnight, 5 days after
    fires = fires_between(expr, tz, start - timedelta(seconds=1), end - timedelta(seconds=1))
    local_days = [f.astimezone(zone).date() for f in fires]
    assert local_days == [(day + timedelta(days=d)).date() for d in range(-5, 5)]


# --- hourly across a change ----------------------------------------------------------------------


def test_hourly_across_warsaw_fall_back_skips_the_repeated_hour():
    assert fires_between("0 * * * *", WAW, u(2026, 10, 24, 22, 30), u(2026, 10, 25, 3, 30)) == [
        u(2026, 10, 24, 23),  # 01:00 CEST
        u(2026, 10, 25, 0),  # 02:00 CEST, first occurrence
        # 01:00 UTC is 02:00 CET, the repeat: no fire, so this gap is two real hours
        u(2026, 10, 25, 2),  # 03:00 CET
        u(2026, 10, 25, 3),  # 04:00 CET
    ]


def test_hourly_across_warsaw_spring_forward_folds_the_skipped_hour():
    assert fires_between("0 * * * *", WAW, u(2026, 3, 28, 22, 30), u(2026, 3, 29, 2, 30)) == [
        u(2026, 3, 28, 23),  # 00:00 CET
        u(2026, 3, 29, 0),  # 01:00 CET
        u(2026, 3, 29, 1),  # 02:00 skipped and 03:00 CEST, one fire
        u(2026, 3, 29, 2),  # 04:00 CEST
    ]


# --- strictly after ------------------------------------------------------------------------------


def test_next_fire_is_strictly_after():
    assert next_fire("0 6 * * *", WAW, u(2026, 1, 5, 5)) == u(
        2026, 1, 6, 5
    )  # at 06:00 CET -> next day
    assert next_fire("0 6 * * *", WAW, u(2026, 1, 5, 4, 59, 59)) == u(
        2026, 1, 5, 5
    )  # a second before
    assert next_fire("30 2 * * *", WAW, u(2026, 3, 29, 1)) == u(
        2026, 3, 30, 0, 30
    )  # at the gap's fire


def test_next_fire_reads_any_aware_after_and_answers_in_utc():
    after = datetime(2026, 1, 5, 7, 0, tzinfo=timezone(timedelta(hours=2)))  # 05:00 UTC = 06:00 CET
    fire = next_fire("0 6 * * *", WAW, after)
    assert fire == u(2026, 1, 6, 5) and fire.tzinfo is UTC


def test_fires_between_is_half_open():
    assert fires_between("0 6 * * *", "UTC", u(2026, 1, 1, 6), u(2026, 1, 3, 6)) == [
        u(2026, 1, 2, 6),
        u(2026, 1, 3, 6),
    ]
    assert fires_between("0 6 * * *", "UTC", u(2026, 1, 3), u(2026, 1, 1)) == []


def test_fires_between_refuses_rather_than_truncates_past_the_limit():
    with pytest.raises(ValueError, match="more than 5 fires"):
        fires_between("* * * * *", "UTC", u(2026, 1, 1), u(2026, 1, 1, 1), limit=5)
    assert len(fires_between("* * * * *", "UTC", u(2026, 1, 1), u(2026, 1, 1, 0, 5), limit=5)) == 5


def test_the_machine_time_zone_does_not_matter(monkeypatch):
    monkeypatch.setenv("TZ", "Asia/Kolkata")
    time.tzset()
    try:
        assert next_fire("30 2 * * *", WAW, u(2026, 3, 28, 12)) == u(2026, 3, 29, 1)
    finally:
        monkeypatch.undo()
        time.tzset()
    assert os.environ.get("TZ") != "Asia/Kolkata"


# --- validation ----------------------------------------------------------------------------------


def test_weekdays_in_utc():
    validate("0 6 * * 1-5", "UTC")
    assert fires_between("0 6 * * 1-5", "UTC", u(2026, 1, 1), u(2026, 1, 8)) == [
        u(2026, 1, 1, 6),  # Thursday
        u(2026, 1, 2, 6),  # Friday
        u(2026, 1, 5, 6),  # Monday
        u(2026, 1, 6, 6),
        u(2026, 1, 7, 6),
    ]


@pytest.mark.parametrize(
    "expr",
    [
        "0 6 * * *",
        "*/15 2 * * *",
        "0 9-17 * * mon-fri",
        "0 0 L * *",
        "0 0 * * 5#2",
        "0 0 29 2 *",
        "  0   6 * * *  ",
    ],
)
def test_accepted_expressions(expr):
    validate(expr, WAW)


@pytest.mark.parametrize(
    ("expr", "says"),
    [
        ("0 0 6 * * *", "got 6 (a seconds or year field"),
        ("0 0 6 * * * 2026", "got 7"),
        ("61 * * * *", "minute field '61'"),
        ("0 24 * * *", "hour field '24'"),
        ("0 0 0 * *", "day-of-month field '0'"),
        ("0 0 * 13 *", "month field '13'"),
        ("0 0 * * 8", "day-of-week field '8'"),
        ("*/0 * * * *", "minute field"),
        ("* * *", "got 3"),
        ("", "required"),
        ("@daily", "aliases"),
        ("H * * * *", "hashed (H) and random (R)"),
        ("R * * * *", "hashed (H) and random (R)"),
        ("0 0 30 2 *", "never occur"),
        ("0 0 31 apr *", "never occur"),
    ],
)
def test_refused_expressions_say_what_is_wrong(expr, says):
    with pytest.raises(CronError, match=r"^cron: ") as err:
        validate(expr, WAW)
    assert says in str(err.value)
    assert isinstance(err.value, ValueError)


@pytest.mark.parametrize(
    "tz",
    [
        "",
        " ",
        "Mars/Base",
        "UTC+2",
        "utc",
        "localtime",
        "posixrules",
        "/etc/localtime",
        "../etc/passwd",
        "zone.tab",
        "Europe",
        "right/UTC",
        None,
    ],
)
def test_refused_time_zones(tz):
    with pytest.raises(CronError, match=r"^time zone: "):
        validate("0 6 * * *", tz)  # type: ignore[arg-type]


@pytest.mark.parametrize("tz", ["UTC", WAW, TOR, "Asia/Kolkata", "Etc/GMT+2"])
def test_accepted_time_zones(tz):
    validate("0 6 * * *", tz)


def test_naive_instants_are_refused():
    with pytest.raises(ValueError, match="aware"):
        next_fire("0 6 * * *", WAW, datetime(2026, 1, 1))
    with pytest.raises(ValueError, match="aware"):
        fires_between("0 6 * * *", WAW, u(2026, 1, 1), datetime(2026, 1, 2))
    with pytest.raises(ValueError, match="aware"):
        fires_per_30_days("0 6 * * *", WAW, datetime(2026, 1, 1))


def test_every_entry_point_validates():
    with pytest.raises(CronError, match="time zone"):
        next_fire("0 6 * * *", "Mars/Base", u(2026, 1, 1))
    with pytest.raises(CronError, match="cron"):
        fires_between("61 * * * *", WAW, u(2026, 1, 1), u(2026, 1, 2))
    with pytest.raises(CronError, match="cron"):
        fires_per_30_days("* * *", WAW, u(2026, 1, 1))


# --- a month of the schedule ---------------------------------------------------------------------


@pytest.mark.parametrize(
    "start",
    [
        datetime(2026, 3, 15, tzinfo=ZoneInfo(WAW)),  # local midnight, spring forward inside
        datetime(2026, 10, 10, tzinfo=ZoneInfo(WAW)),  # local midnight, fall back inside
        u(2026, 6, 1, 6),  # 08:00 CEST, no change inside
    ],
)
def test_a_month_of_the_schedule(start):
    assert fires_per_30_days("0 6 * * *", WAW, start) == 30
    assert fires_per_30_days("0 */6 * * *", WAW, start) == 120


def test_a_month_of_every_minute():
    assert fires_per_30_days("* * * * *", "UTC", u(2026, 1, 1)) == 30 * 24 * 60
    # The fall-back month: the repeated hour does not fire again, so still 30 days of wall minutes.
    assert (
        fires_per_30_days("* * * * *", WAW, datetime(2026, 10, 10, tzinfo=ZoneInfo(WAW)))
        == 30 * 24 * 60
    )
    # The spring-forward month: 02:00-02:59 on 2026-03-29 collapse into 03:00 CEST, itself a fire.
    assert (
        fires_per_30_days("* * * * *", WAW, datetime(2026, 3, 15, tzinfo=ZoneInfo(WAW)))
        == 30 * 24 * 60 - 60
    )
