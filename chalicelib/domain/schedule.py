"""Pure rules of a suite's schedule: which cron expressions are accepted and when they fire.

A cron expression is read on the wall clock of a time zone, so `0 6 * * *` in `Europe/Warsaw`
is six in Warsaw either side of a clock change (docs/guides/suites.md).

Nothing here reads a clock or the environment: the instants to count from are passed in, and every
instant handed back is an aware UTC `datetime`.

How a schedule fires (cron's convention):

- Fields are matched against the local wall clock of the time zone (naive local date and time),
  with Vixie cron's day rule: when both day-of-month and day-of-week are restricted, a day that
  matches either fires (croniter's default).
- A wall time skipped by a spring-forward gap fires once, at the first instant after the gap
  (Warsaw 2026-03-29: `30 2 * * *` fires at 03:00 CEST = 01:00 UTC). Every wall time in the gap
  collapses into that one instant, so `*/15 2 * * *` fires once that day, and a wall time in the
  gap and the one at its end (`0 2,3 * * *`) are one fire, not two.
- A wall time that happens twice in autumn fires at its first occurrence only (Warsaw
  2026-10-25: 02:30 happens at 00:30 UTC and 01:30 UTC; `30 2 * * *` fires at 00:30 UTC).
- So a daily wall time fires exactly once on every local day, and an hourly `0 * * * *` skips
  the repeated hour: in Warsaw on 2026-10-25 it fires at 00:00 UTC (02:00 CEST) and next at
  02:00 UTC (03:00 CET), two real hours apart; on 2026-03-29 it fires at 00:00 UTC (01:00 CET)
  and next at 01:00 UTC (03:00 CEST), one real hour apart, the skipped 02:00 folding into it.

Plain croniter with an aware start fires twice in autumn; walking naive wall times and mapping
each to an instant here is what gives the rules above.

croniter is imported by the two functions that read cron, so importing this module (the suites
do) costs a Lambda's start nothing of it (issue 12).
"""

from __future__ import annotations

import re
from collections.abc import Iterator
from datetime import UTC, datetime, timedelta
from zoneinfo import ZoneInfo, ZoneInfoNotFoundError

FIELD_NAMES = ("minute", "hour", "day-of-month", "month", "day-of-week")

# Files under the zoneinfo tree that ZoneInfo opens but that are not IANA zone names: `localtime`
# is whatever the machine is set to (a schedule would change meaning with the host), `posixrules`
# is a template, `right/...` zones count leap seconds, which `datetime` arithmetic does not.
_NOT_ZONES = frozenset({"localtime", "posixrules"})

# croniter's Jenkins-style `H` (hashed) and `R` (random) items: `H` needs a hash id we do not
# have, and `R` would make the same expression fire at different times on every parse.
_HASH_OR_RANDOM = re.compile(r"^[hr](\(|/|$)", re.IGNORECASE)


class CronError(ValueError):
    """A cron expression or time zone that cannot be scheduled; the message, for a 400, says why.

    Messages start with `cron: ` (the expression) or `time zone: ` (the zone).
    """


def _zone(tz: object) -> ZoneInfo:
    """The `ZoneInfo` for an IANA zone name.

    Raises:
        CronError: `time zone: ...` for a non-string, empty, unknown or non-zone name.
    """
    if not isinstance(tz, str) or not tz.strip():
        raise CronError(
            "time zone: an IANA time zone name is required, e.g. 'Europe/Warsaw' or 'UTC'"
        )
    if tz in _NOT_ZONES or tz == "Factory" or tz.startswith(("right/", "posix/")):
        raise CronError(f"time zone: {tz!r} is not an IANA time zone name")
    try:
        return ZoneInfo(tz)
    except ZoneInfoNotFoundError:
        raise CronError(f"time zone: unknown IANA time zone {tz!r}") from None
    except (ValueError, OSError):
        # Absolute paths, `..`, and data files under the tree (zone.tab, leapseconds) land here.
        raise CronError(f"time zone: {tz!r} is not an IANA time zone name") from None


def _check_cron(expr: object) -> None:
    """Raise `CronError` (`cron: ...`) unless `expr` is a 5-field Unix cron croniter accepts."""
    if not isinstance(expr, str) or not expr.strip():
        raise CronError(
            "cron: an expression of 5 fields is required "
            "(minute hour day-of-month month day-of-week)"
        )
    if expr.strip().startswith("@"):
        # Aliases are refused so that every stored schedule reads the same way: `@daily` is
        # `0 0 * * *`, and croniter would also accept `@reboot`-like words it cannot schedule.
        raise CronError(
            f"cron: aliases such as {expr.strip()!r} are not accepted; write the 5 fields, "
            "e.g. '0 0 * * *' for daily"
        )
    from croniter import CroniterError, croniter

    fields = expr.split()
    if len(fields) != 5:
        extra = " (a seconds or year field is not accepted)" if len(fields) > 5 else ""
        raise CronError(
            f"cron: expected 5 fields (minute hour day-of-month month day-of-week), "
            f"got {len(fields)}{extra}"
        )
    for index, (name, field) in enumerate(zip(FIELD_NAMES, fields, strict=True)):
        if any(_HASH_OR_RANDOM.match(item) for item in field.split(",")):
            raise CronError(
                f"cron: {name} field {field!r}: hashed (H) and random (R) values are not accepted"
            )
        # One field at a time against `*` elsewhere, so the message names the field at fault.
        alone = ["*"] * 5
        alone[index] = field
        try:
            croniter.expand(" ".join(alone))
        except CroniterError as exc:
            raise CronError(f"cron: {name} field {field!r} is not valid ({exc})") from None
    try:
        # strict: refuse day/month pairs that never occur (`0 0 30 2 *`), which would otherwise
        # search 50 years for a fire before giving up.
        croniter.expand(" ".join(fields), strict=True)
    except CroniterError as exc:
        raise CronError(f"cron: {exc}") from None


def validate(expr: str, tz: str) -> None:
    """Check a suite's schedule before it is stored.

    `expr` is 5-field Unix cron (minute hour day-of-month month day-of-week), every field as
    croniter reads it (lists, ranges, steps, month and day names, `L`, `W`, `#`). Refused: a 6th
    seconds field or 7th year field, `@daily`-style aliases, croniter's `H`/`R` items, and day/month
    pairs that never occur. `tz` is an IANA zone name as `zoneinfo` knows it (`UTC` included;
    `''`, `Mars/Base` and `UTC+2` are not).

    Raises:
        CronError: message starts `cron: ` or `time zone: ` and names what is wrong.
    """
    _check_cron(expr)
    _zone(tz)


def _aware(value: datetime, name: str) -> datetime:
    """`value` in UTC; ValueError for a naive datetime (a caller bug, not a 400)."""
    if not isinstance(value, datetime):
        raise TypeError(f"{name} must be a datetime, got {type(value).__name__}")
    if value.tzinfo is None or value.utcoffset() is None:
        raise ValueError(f"{name} must be an aware datetime, got naive {value.isoformat()}")
    return value.astimezone(UTC)


def _wall(instant: datetime, zone: ZoneInfo) -> datetime:
    """The naive local wall time of an instant in `zone`."""
    return instant.astimezone(zone).replace(tzinfo=None)


def _fire_instant(wall: datetime, zone: ZoneInfo) -> datetime:
    """The UTC instant a naive local wall time fires at (the module docstring's DST rules).

    A wall time that exists once is that instant; one that exists twice is its first occurrence
    (fold=0); one inside a gap is the first instant after the gap.
    """
    first = wall.replace(tzinfo=zone, fold=0).astimezone(UTC)
    if _wall(first, zone) == wall:
        return first
    # In a gap. fold=1 reads the wall time with the offset after the change, which lands before
    # the change; fold=0 with the offset before it, which lands after. The change is the earliest
    # instant between them whose wall time is past `wall`; tzdata changes fall on whole seconds.
    lo = int(wall.replace(tzinfo=zone, fold=1).astimezone(UTC).timestamp())
    hi = int(first.timestamp())
    while lo < hi:
        mid = (lo + hi) // 2
        if _wall(datetime.fromtimestamp(mid, UTC), zone) > wall:
            hi = mid
        else:
            lo = mid + 1
    return datetime.fromtimestamp(hi, UTC)


def _fires(expr: str, zone: ZoneInfo, after: datetime) -> Iterator[datetime]:
    """Fire instants strictly after `after` (UTC), ascending and distinct, without end.

    Wall times from croniter ascend and `_fire_instant` never goes backwards along them, so
    skipping until past `after` and dropping repeats (a gap's collapsed wall times) is enough.
    """
    # No wall time at or before `after`'s own maps past `after`: when `after` is in the second
    # pass of a repeated hour its wall time maps to the first pass, earlier still.
    from croniter import croniter

    walls = croniter(expr, _wall(after, zone))
    last = after
    while True:
        instant = _fire_instant(walls.get_next(datetime), zone)
        if instant > last:
            last = instant
            yield instant


def next_fire(expr: str, tz: str, after: datetime) -> datetime:
    """The first fire strictly after `after`, as an aware UTC datetime.

    `after` is any aware datetime (an instant exactly at a fire returns the following fire).

    Raises:
        CronError: the expression or zone is not valid (see `validate`).
        ValueError: `after` is naive.
    """
    validate(expr, tz)
    return next(_fires(expr, _zone(tz), _aware(after, "after")))


def fires_between(
    expr: str, tz: str, start: datetime, end: datetime, limit: int = 10_000
) -> list[datetime]:
    """Every fire in `(start, end]`, aware UTC, ascending; `[]` when `end <= start`.

    Raises:
        CronError: the expression or zone is not valid (see `validate`).
        ValueError: `start` or `end` is naive, or more than `limit` fires fall in the window
            (a guard against listing `* * * * *` over a year by accident; never truncated).
    """
    validate(expr, tz)
    zone = _zone(tz)
    start_utc, end_utc = _aware(start, "start"), _aware(end, "end")
    out: list[datetime] = []
    if end_utc <= start_utc:
        return out
    for instant in _fires(expr, zone, start_utc):
        if instant > end_utc:
            break
        if len(out) == limit:
            raise ValueError(
                f"more than {limit} fires between {start_utc.isoformat()} and {end_utc.isoformat()}"
            )
        out.append(instant)
    return out


def fires_per_30_days(expr: str, tz: str, start: datetime) -> int:
    """Fires in the 30 local days after `start`: `(start, end]`, end = start's wall time + 30 days.

    Counted on the zone's calendar rather than as 720 real hours, so a daily schedule is 30 and
    `0 */6 * * *` is 120 whether or not a clock change falls inside (720 hours from local midnight
    would end at 23:00 or 01:00 local and gain or lose a midnight fire). An end wall time that does
    not exist or exists twice resolves as a fire would. Used to price "a month of the schedule".
    `* * * * *` is about 43,200.

    Raises:
        CronError: the expression or zone is not valid (see `validate`).
        ValueError: `start` is naive.
    """
    validate(expr, tz)
    zone = _zone(tz)
    start_utc = _aware(start, "start")
    end = _fire_instant(_wall(start_utc, zone) + timedelta(days=30), zone)
    return len(fires_between(expr, tz, start_utc, end, limit=31 * 24 * 60))
