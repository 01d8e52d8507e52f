"""EventBridge, in-process: fires every Chalice `@app.schedule` handler on its schedule.

Supports `rate(N minute[s]|hour[s]|day[s])` and AWS's 6-field `cron(min hour dom month dow year)`
(UTC, evaluated with croniter), given as strings or as `chalice.app.Rate` / `Cron` objects.
`tick_seconds` replaces every schedule's period so tests and the demo need not wait a minute;
`fire(name)` / `fire_all()` invoke handlers at once, in the caller's thread.

Unlike EventBridge + Lambda, an invocation still running when its schedule comes round again is
skipped, not overlapped: locally that only piles up work (our handlers are idempotent either way).
"""

from __future__ import annotations

import logging
import re
import threading
import uuid
from collections.abc import Callable
from dataclasses import dataclass, field
from datetime import UTC, datetime, timedelta
from types import ModuleType
from typing import Any

from assay_local.poller import LocalLambdaContext, resolve_handler

log = logging.getLogger(__name__)

_RATE = re.compile(r"^rate\(\s*(\d+)\s+(minutes?|hours?|days?)\s*\)$", re.IGNORECASE)
_CRON = re.compile(r"^cron\((.+)\)$", re.IGNORECASE)
_UNIT_SECONDS = {"minute": 60, "hour": 3600, "day": 86400}


def expression_string(expression: Any) -> str:
    """The EventBridge string of a schedule (`"rate(1 minute)"`), from a str, `Rate` or `Cron`."""
    return expression if isinstance(expression, str) else expression.to_string()


def parse_rate(expression: str) -> timedelta | None:
    """The period of a `rate(...)` expression, or None if `expression` is not one.

    Raises `ValueError` for a rate of zero.
    """
    match = _RATE.match(expression.strip())
    if match is None:
        return None
    value, unit = int(match.group(1)), match.group(2).lower().rstrip("s")
    if value < 1:
        raise ValueError(f"rate must be at least 1: {expression!r}")
    return timedelta(seconds=value * _UNIT_SECONDS[unit])


def _shift_dow(field_text: str) -> str:
    # AWS numbers days 1-7 from Sunday, Unix cron 0-6 from Sunday. Shift numbers but not the
    # `n` of `d#n` (n-th weekday of the month) nor names (SUN-SAT mean the same in both).
    def shift(part: str) -> str:
        day, sep, nth = part.partition("#")
        day = re.sub(r"\d+", lambda m: str(int(m.group()) - 1), day)
        return day + sep + nth

    return ",".join(shift(p) for p in field_text.split(","))


def aws_cron_to_unix(expression: str) -> tuple[str, str]:
    """`cron(m h dom mon dow year)` to `(5-field Unix cron, year field)`.

    `?` becomes `*`; day-of-week numbers move from AWS's 1-7 to Unix's 0-6. Raises `ValueError`
    if `expression` is not a 6-field AWS cron or croniter rejects the result.
    """
    from croniter import croniter

    match = _CRON.match(expression.strip())
    fields = match.group(1).split() if match else []
    if len(fields) != 6:
        raise ValueError(f"not an AWS cron expression (6 fields): {expression!r}")
    minute, hour, dom, month, dow, year = (f.replace("?", "*") for f in fields)
    unix = " ".join((minute, hour, dom, month, _shift_dow(dow)))
    if not croniter.is_valid(unix):
        raise ValueError(f"unsupported cron expression: {expression!r}")
    return unix, year


def _year_matches(year_field: str, year: int) -> bool:
    if year_field == "*":
        return True
    for part in year_field.split(","):
        low, _, high = part.partition("-")
        if low.isdigit() and int(low) <= year <= int(high or low):
            return True
    return False


def scheduled_event(rule_name: str, when: datetime, region: str, account_id: str) -> dict[str, Any]:
    """The CloudWatch/EventBridge "Scheduled Event" a rule delivers to Lambda at `when` (aware)."""
    return {
        "version": "0",
        "id": str(uuid.uuid4()),
        "detail-type": "Scheduled Event",
        "source": "aws.events",
        "account": account_id,
        "time": when.astimezone(UTC).strftime("%Y-%m-%dT%H:%M:%SZ"),
        "region": region,
        "resources": [f"arn:aws:events:{region}:{account_id}:rule/{rule_name}"],
        "detail": {},
    }


@dataclass
class Schedule:
    """One `@app.schedule` handler: name, expression, callable, next due time (aware UTC), and
    how many invocations ran (`fired`) and raised (`failed`)."""

    name: str
    expression: str
    handler: Callable[..., Any]
    period: timedelta | None = None
    cron: str | None = None
    cron_year: str = "*"
    next_due: datetime | None = None
    fired: int = 0
    failed: int = 0
    running: threading.Lock = field(default_factory=threading.Lock)

    def following(self, after: datetime, tick: timedelta | None) -> datetime:
        """The first fire time strictly after `after`."""
        if tick is not None:
            return after + tick
        if self.period is not None:
            return after + self.period
        from croniter import croniter

        it = croniter(self.cron, after)
        for _ in range(10_000):  # a year field can skip many matches; bound the search
            candidate: datetime = it.get_next(datetime)
            if _year_matches(self.cron_year, candidate.year):
                return candidate
        return datetime.max.replace(tzinfo=UTC)


class Scheduler:
    """Fires every `@app.schedule` handler of a Chalice app (see module doc).

    Args:
        app: the `chalice.Chalice` object.
        tick_seconds: if set, every schedule fires every `tick_seconds` seconds instead.
        region / account_id: put into events and contexts.
        timeout_seconds: the Lambda context's timeout.
        app_module: the module `app` lives in (handler lookup fallback).
        clock: `() -> aware UTC datetime`, default the system clock.

    Raises `ValueError` at construction for an expression it cannot evaluate.
    """

    def __init__(
        self,
        app: Any,
        *,
        tick_seconds: float | None = None,
        region: str = "us-east-1",
        account_id: str = "123456789012",
        timeout_seconds: float = 900,
        app_module: ModuleType | None = None,
        clock: Callable[[], datetime] | None = None,
    ) -> None:
        from chalice.app import ScheduledEventConfig

        self._tick = timedelta(seconds=tick_seconds) if tick_seconds is not None else None
        self._region = region
        self._account_id = account_id
        self._timeout_seconds = timeout_seconds
        self._clock = clock or (lambda: datetime.now(UTC))
        self._stop = threading.Event()
        self._thread: threading.Thread | None = None
        self._count_lock = threading.Lock()
        self.schedules: dict[str, Schedule] = {}
        for config in app.event_sources:
            if not isinstance(config, ScheduledEventConfig):
                continue
            text = expression_string(config.schedule_expression)
            schedule = Schedule(config.name, text, resolve_handler(app, config, app_module))
            schedule.period = parse_rate(text)
            if schedule.period is None:
                schedule.cron, schedule.cron_year = aws_cron_to_unix(text)
            self.schedules[config.name] = schedule

    def fire(self, name: str, when: datetime | None = None) -> Any:
        """Invoke schedule `name` now, in this thread; returns the handler's result.

        Raises `KeyError` for an unknown name and whatever the handler raises.
        """
        schedule = self.schedules[name]
        when = when or self._clock()
        event = scheduled_event(name, when, self._region, self._account_id)
        context = LocalLambdaContext(
            name, self._timeout_seconds, region=self._region, account_id=self._account_id
        )
        ok = False
        try:
            result = schedule.handler(event, context)
            ok = True
        finally:
            with self._count_lock:  # manual and background fires may overlap
                schedule.fired += 1
                schedule.failed += 0 if ok else 1
        return result

    def fire_all(self) -> dict[str, Any]:
        """Invoke every schedule once, in this thread, in registration order.

        Returns results by name. Every handler runs even if one raises; failures are then raised
        together as an `ExceptionGroup`.
        """
        results: dict[str, Any] = {}
        errors: list[Exception] = []
        for name in self.schedules:
            try:
                results[name] = self.fire(name)
            except Exception as exc:  # noqa: BLE001 - collected and re-raised below
                exc.add_note(f"schedule {name!r}")
                errors.append(exc)
        if errors:
            raise ExceptionGroup("scheduled handlers failed", errors)
        return results

    def start(self) -> Scheduler:
        """Start the background thread; first fires come one period (or tick) from now."""
        now = self._clock()
        for schedule in self.schedules.values():
            schedule.next_due = schedule.following(now, self._tick)
        self._thread = threading.Thread(target=self._run, name="scheduler", daemon=True)
        self._thread.start()
        return self

    def stop(self, timeout: float = 10.0) -> None:
        """Stop the background thread (running handlers finish on their own threads)."""
        self._stop.set()
        if self._thread is not None:
            self._thread.join(timeout)

    def _run(self) -> None:
        while not self._stop.is_set():
            now = self._clock()
            for schedule in self.schedules.values():
                assert schedule.next_due is not None
                if schedule.next_due > now:
                    continue
                when = schedule.next_due
                # Missed fires (a stalled process) collapse into one, as a late EventBridge would.
                while schedule.next_due <= now:
                    schedule.next_due = schedule.following(schedule.next_due, self._tick)
                self._launch(schedule, when)
            soonest = min((s.next_due for s in self.schedules.values() if s.next_due), default=None)
            wait = 1.0 if soonest is None else (soonest - self._clock()).total_seconds()
            self._stop.wait(min(1.0, max(0.01, wait)))

    def _launch(self, schedule: Schedule, when: datetime) -> None:
        if not schedule.running.acquire(blocking=False):
            log.warning(
                "schedule %s still running; skipping the fire due at %s", schedule.name, when
            )
            return

        def invoke() -> None:
            try:
                self.fire(schedule.name, when)
            except Exception:  # noqa: BLE001 - as EventBridge + Lambda: logged, next fire regardless
                log.exception("scheduled handler %s failed", schedule.name)
            finally:
                schedule.running.release()

        threading.Thread(target=invoke, name=f"schedule-{schedule.name}", daemon=True).start()
