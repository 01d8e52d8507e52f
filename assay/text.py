"""How the CLI words values for a person: aligned tables, durations, schedules, absent values.
Pure functions of their arguments (no I/O), so the unit tests can pin each rule."""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

DASH = "-"
"""What a table shows for a value the API left out (None): never the word `None`."""

_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]


def cell(value: Any) -> str:
    """`value` for one table cell: `-` for None or an empty string, `yes`/`no` for a bool, a float
    in its shortest form (`0`, `0.7`), the rest as `str` on one line."""
    if value is None or value == "":
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return " ".join(str(value).split())


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """`rows` under `headers` in columns two spaces apart, each cell through `cell`; the last
    column is not padded. No rows: the headers alone. Ends without a newline."""
    texts = [[cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in texts:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))

    def line(parts: Sequence[str]) -> str:
        return "  ".join(p.ljust(w) for p, w in zip(parts, widths, strict=False)).rstrip()

    return "\n".join([line(list(headers)), *(line(r) for r in texts)])


def duration_ms(ms: Any) -> str:
    """A duration given in milliseconds, rounded for a person: `-` for None, `<1 ms` below a
    millisecond, whole milliseconds below a second (`11 ms`), tenths of a second below a minute
    (`1.2 s`), then minutes and seconds (`2 min 5 s`)."""
    if ms is None:
        return DASH
    value = float(ms)
    if value < 1:
        return "<1 ms" if value > 0 else "0 ms"
    if value < 999.5:
        return f"{round(value)} ms"
    if value < 59_950:
        return f"{value / 1000:.1f} s"
    minutes, seconds = divmod(round(value / 1000), 60)
    return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"


def usd(value: Any) -> str:
    """USD for a person: `-` for None, `$0.0042` below a cent (two significant digits), else
    `$1,234.56`."""
    if value is None:
        return DASH
    amount = float(value)
    if 0 < abs(amount) < 0.01:
        return f"${amount:.2g}"
    return f"${amount:,.2f}"


def _clock(minute: str, hour: str) -> str | None:
    if minute.isdigit() and hour.isdigit():
        return f"{int(hour):02d}:{int(minute):02d}"
    return None


def cron_words(cron: str, timezone: str | None = None) -> str:
    """A five-field cron expression in words where it is a common one: `every hour at :15`,
    `every day at 06:00 UTC`, `every Monday at 09:30 Europe/Paris`, `weekdays at 08:00`,
    `every 15 minutes`, `on day 1 of each month at 00:00`; anything else as `cron "<expr>"`.
    The timezone (default UTC) follows a time of day."""
    fields = cron.split()
    tz = f" {timezone or 'UTC'}"
    if len(fields) != 5:
        return f'cron "{cron}"'
    minute, hour, dom, month, dow = fields
    clock = _clock(minute, hour)
    if month != "*":
        return f'cron "{cron}"{tz}'
    if minute.startswith("*/") and minute[2:].isdigit() and (hour, dom, dow) == ("*", "*", "*"):
        return f"every {int(minute[2:])} minutes"
    if minute == "*" and (hour, dom, dow) == ("*", "*", "*"):
        return "every minute"
    if minute.isdigit() and (hour, dom, dow) == ("*", "*", "*"):
        return f"every hour at :{int(minute):02d}"
    if clock and dom == "*" and dow == "*":
        return f"every day at {clock}{tz}"
    if clock and dom == "*" and dow in ("1-5", "MON-FRI", "mon-fri"):
        return f"weekdays at {clock}{tz}"
    if clock and dom == "*" and dow.isdigit() and int(dow) <= 7:
        return f"every {_DAYS[int(dow) % 7]} at {clock}{tz}"
    if clock and dom.isdigit() and dow == "*":
        return f"on day {int(dom)} of each month at {clock}{tz}"
    return f'cron "{cron}"{tz}'


def schedule_words(triggers: Any) -> str:
    """A suite's `triggers` in words: its schedule (`cron_words`) and the events it runs on
    (`on publish`, `before promotion`, `on dependency change`), joined by `; `; `manual only`
    when there is none."""
    if not isinstance(triggers, dict):
        return "manual only"
    parts: list[str] = []
    schedule = triggers.get("schedule")
    if isinstance(schedule, dict) and schedule.get("cron"):
        parts.append(cron_words(str(schedule["cron"]), schedule.get("timezone")))
    for key, words in (
        ("on_publish", "on publish"),
        ("on_promotion", "before promotion"),
        ("on_dependency_change", "on dependency change"),
    ):
        if triggers.get(key):
            parts.append(words)
    return "; ".join(parts) or "manual only"


def count(n: Any, one: str, many: str | None = None) -> str:
    """`1 case`, `3 cases` (`many` for an irregular plural)."""
    value = int(n or 0)
    return f"{value} {one if value == 1 else (many or one + 's')}"
