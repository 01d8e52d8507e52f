"""The pass-rate chart of an agent's or a dataset's runs (docs/guides/console.md): which runs
it shows, one line per dataset with its own dash, each point's colour, the axis labels and the
tooltips. Pure: the caller passes the runs and `now`; the SVG is drawn from this in `api`.

Only measured runs count (a pass rate, and not a run whose side could not run): a pending or a
failed run has nothing to plot. The window keeps the newest 10, 30 or every measured run, drawn
oldest on the left, run by run (x is the index, not the time: runs cluster in bursts).
"""

from __future__ import annotations

from dataclasses import dataclass
from datetime import UTC, datetime
from enum import StrEnum
from typing import TYPE_CHECKING, Any

from chalicelib.domain.enums import ArmRole, RunStatus
from chalicelib.domain.records import Arm, Run
from chalicelib.errors import InvalidInputError

if TYPE_CHECKING:  # a case worker imports the stores, and builds an outcome only as a run ends
    from chalicelib.domain.outcome import Outcome

DASHES: tuple[str, ...] = ("", "6 4", "2 3", "8 3 2 3", "12 4", "1 3")
"""Each dataset's `stroke-dasharray`, in order of first appearance (cycled past the last)."""

SWITCH_AFTER = 10
"""Past this many measured runs the page shows the last 10 / last 30 / every run switch."""


class Window(StrEnum):
    """How many of the newest measured runs the chart shows (the page's `last`)."""

    LAST_10 = "10"
    LAST_30 = "30"
    ALL = "all"


WINDOW_SIZE: dict[Window, int | None] = {Window.LAST_10: 10, Window.LAST_30: 30, Window.ALL: None}


class Colour(StrEnum):
    """A point's colour: what the run's confirmed flips say."""

    RED = "red"
    """It broke cases and fixed none."""
    GREEN = "green"
    """It fixed cases and broke none."""
    AMBER = "amber"
    """It did both."""
    NEUTRAL = "neutral"
    """Neither (or no baseline)."""


@dataclass(frozen=True)
class Trend:
    """What the chart needs of a run's outcome (kept in the run's `TrendRun`)."""

    pass_rate: float | None
    """The candidate's pass rate, 0..1 (None when nothing was decided)."""
    broke: int = 0
    """Confirmed regressions (0 without a baseline)."""
    fixed: int = 0
    """Confirmed fixes."""
    could_not_run: bool = False
    """A side of the run could not run (the comparison's or the candidate arm's setup error)."""

    @classmethod
    def of(cls, outcome: Outcome) -> Trend:
        """The trend of a kept outcome."""
        comparison = outcome.comparison
        could_not_run = bool(comparison is not None and comparison.could_not_run)
        arm = outcome.arms.get(outcome.arm_id)
        could_not_run = could_not_run or bool(arm is not None and arm.could_not_run)
        return cls(
            pass_rate=outcome.pass_rate,
            broke=comparison.confirmed_regressions if comparison is not None else 0,
            fixed=comparison.confirmed_fixes if comparison is not None else 0,
            could_not_run=could_not_run,
        )

    def as_json(self) -> dict[str, Any]:
        """`{pass_rate, broke, fixed, could_not_run}` (float or None, int, int, bool)."""
        return {
            "pass_rate": self.pass_rate,
            "broke": self.broke,
            "fixed": self.fixed,
            "could_not_run": self.could_not_run,
        }

    @classmethod
    def of_json(cls, stored: dict[str, Any]) -> Trend:
        """The trend `as_json` kept (a missing key takes its default)."""
        return cls(
            pass_rate=stored.get("pass_rate"),
            broke=int(stored.get("broke") or 0),
            fixed=int(stored.get("fixed") or 0),
            could_not_run=bool(stored.get("could_not_run")),
        )


def _label(arm: Arm) -> str:
    return "draft" if arm.draft or arm.version is None else f"v{int(arm.version)}"


@dataclass(frozen=True)
class TrendRun:
    """A completed run as the chart keeps it: one small item per run (`stores.ledger`'s trend
    rows), written by the transaction that completes the run and again by a grade again's, so
    the chart reads a few hundred bytes a run and never the run itself (1,000 runs under 1 s)."""

    run_id: str
    org_id: str
    agent_id: str
    dataset_id: str
    started_at: str
    """ISO time the run started (its creation for one that never started)."""
    draft: bool
    what: str
    """What ran: `v4` or `draft`."""
    against: str | None
    """The baseline: `v3`, or None for a run alone."""
    model: str | None
    """The candidate's model, when the run names one."""
    trend: Trend

    @classmethod
    def of(cls, run: Run) -> TrendRun | None:
        """The trend of `run` once it completed with an outcome; None before, or for a run that
        ended otherwise (it has nothing to plot)."""
        if run.status != RunStatus.COMPLETED or run.outcome is None:
            return None
        candidate = next((a for a in run.arms if a.role == ArmRole.CANDIDATE), None)
        baseline = next((a for a in run.arms if a.role == ArmRole.BASELINE), None)
        if candidate is not None:
            what = _label(candidate)
            model = (candidate.spec or {}).get("model") or candidate.model_profile_id
        else:
            what = "draft" if run.draft else f"v{run.resolved_version}"
            model = None
        return cls(
            run_id=run.run_id,
            org_id=run.org_id,
            agent_id=run.agent_id,
            dataset_id=run.dataset_id,
            started_at=run.started_at or run.created_at,
            draft=bool(run.draft),
            what=what,
            against=_label(baseline) if baseline is not None else None,
            model=str(model) if model else None,
            trend=Trend.of(run.outcome),
        )

    def as_json(self) -> dict[str, Any]:
        """`{run_id, org_id, agent_id, dataset_id, started_at, draft, what, against, model,
        trend}` (`trend` as `Trend.as_json()`)."""
        return {
            "run_id": self.run_id,
            "org_id": self.org_id,
            "agent_id": self.agent_id,
            "dataset_id": self.dataset_id,
            "started_at": self.started_at,
            "draft": self.draft,
            "what": self.what,
            "against": self.against,
            "model": self.model,
            "trend": self.trend.as_json(),
        }

    @classmethod
    def of_json(cls, stored: dict[str, Any]) -> TrendRun:
        """The trend run `as_json` kept."""
        return cls(
            run_id=stored["run_id"],
            org_id=stored["org_id"],
            agent_id=stored["agent_id"],
            dataset_id=stored["dataset_id"],
            started_at=stored["started_at"],
            draft=bool(stored.get("draft")),
            what=stored["what"],
            against=stored.get("against"),
            model=stored.get("model"),
            trend=Trend.of_json(stored.get("trend") or {}),
        )


@dataclass(frozen=True)
class ChartRun:
    """One run as the chart needs it."""

    run_id: str
    dataset_id: str
    dataset_name: str
    started_at: datetime
    """Aware, UTC."""
    pass_rate: float | None
    """The candidate's pass rate, 0..1; None while pending or when nothing was decided."""
    broke: int
    """Confirmed regressions."""
    fixed: int
    """Confirmed fixes."""
    draft: bool
    could_not_run: bool
    """A side of the run failed every first answer (a setup error): nothing was measured."""
    what: str
    """What ran: `v4` or `draft`."""
    against: str | None
    """The baseline: `v3`, or None for a run alone."""
    model: str | None = None
    """The candidate's model, when the run names one (not in the tooltip: the table shows it)."""


@dataclass(frozen=True)
class Series:
    """One dataset's line."""

    dataset_id: str
    name: str
    dash: str
    """`stroke-dasharray` ("" = solid)."""


@dataclass(frozen=True)
class Point:
    """One run on the chart: x = its index in the window (0 = oldest), y = pass rate 0..1."""

    run_id: str
    dataset_id: str
    x: int
    y: float
    colour: Colour
    hollow: bool
    """A draft's run."""
    label: str
    """Its axis label; "" when the previous point's label is the same."""
    tooltip: str


@dataclass(frozen=True)
class Chart:
    """What the page draws: `measured` runs counted, `shown` of them in the window, whether the
    switch is offered, the lines and the points (oldest first)."""

    last: Window
    measured: int
    shown: int
    switch: bool
    series: tuple[Series, ...]
    points: tuple[Point, ...]


def window_of(text: str | None) -> Window:
    """The `last` query value: "10" (the default, also for None), "30" or "all".

    Raises InvalidInputError naming `last` for anything else."""
    if text is None:
        return Window.LAST_10
    try:
        return Window(text)
    except ValueError:
        raise InvalidInputError('last must be "10", "30" or "all"', field="last") from None


def colour_of(broke: int, fixed: int) -> Colour:
    """Red where the run broke cases, green where it fixed them, amber for both."""
    if broke > 0 and fixed > 0:
        return Colour.AMBER
    if broke > 0:
        return Colour.RED
    if fixed > 0:
        return Colour.GREEN
    return Colour.NEUTRAL


def is_measured(run: ChartRun) -> bool:
    """Whether the run has a pass rate to plot."""
    return run.pass_rate is not None and not run.could_not_run


def _time(at: datetime) -> str:
    return at.strftime("%H:%M")


def _date(at: datetime, *, year: bool) -> str:
    text = f"{at.strftime('%b')} {at.day}"
    return f"{text} {at.year}" if year else text


def labels(times: list[datetime], *, now: datetime) -> list[str]:
    """The axis labels of runs started at `times` (oldest first; UTC).

    All on one calendar day (today or a past one): each the time, "14:03", with its seconds,
    "14:03:27", when another run started at another second of the same minute of the same day
    (runs seconds apart are each labelled, not only the first of their minute). Across days: the
    date ("Dec 1", "Dec 1 2025" when the runs span more than one year) for a run of another day
    than `now`'s, the time for today's. A label equal to the previous one is blank ("")."""
    at = [t.astimezone(UTC) for t in times]
    days = {t.date() for t in at}
    today = now.astimezone(UTC).date()
    years = len({d.year for d in days}) > 1
    timed = [len(days) == 1 or t.date() == today for t in at]
    seconds: dict[datetime, set[datetime]] = {}
    for t, is_timed in zip(at, timed, strict=True):
        if is_timed:
            seconds.setdefault(t.replace(second=0, microsecond=0), set()).add(
                t.replace(microsecond=0)
            )

    out: list[str] = []
    previous = None
    for t, is_timed in zip(at, timed, strict=True):
        if not is_timed:
            text = _date(t, year=years)
        elif len(seconds[t.replace(second=0, microsecond=0)]) > 1:
            text = t.strftime("%H:%M:%S")
        else:
            text = _time(t)
        out.append("" if text == previous else text)
        previous = text
    return out


def tooltip_of(run: ChartRun) -> str:
    """What ran against what, where and when, its pass rate and confirmed flips, e.g.
    "v4 against v3 on GSM8K test · 2026-12-01 14:03 UTC · pass rate 73.2% · broke 2, fixed 5"
    ("draft alone on ..." without a baseline; no flips part when both are 0)."""
    side = f"{run.what} against {run.against}" if run.against else f"{run.what} alone"
    at = run.started_at.astimezone(UTC).strftime("%Y-%m-%d %H:%M UTC")
    parts = [f"{side} on {run.dataset_name or run.dataset_id}", at]
    parts.append(f"pass rate {(run.pass_rate or 0.0) * 100:.1f}%")
    if run.broke or run.fixed:
        parts.append(f"broke {run.broke}, fixed {run.fixed}")
    return " · ".join(parts)


def build_chart(runs: list[ChartRun], *, now: datetime, last: Window | str) -> Chart:
    """The chart of `runs` (any order) at `now` showing the `last` 10, 30 or all measured runs.

    Measured runs are sorted oldest first (`started_at`, then `run_id`); the switch is offered
    past 10 of them. Each dataset of the window gets a line, in order of first appearance, with
    the next dash of `DASHES`."""
    window = last if isinstance(last, Window) else window_of(last)
    measured = sorted((r for r in runs if is_measured(r)), key=lambda r: (r.started_at, r.run_id))
    size = WINDOW_SIZE[window]
    shown = measured[-size:] if size is not None else measured
    series: dict[str, Series] = {}
    for r in shown:
        if r.dataset_id not in series:
            dash = DASHES[len(series) % len(DASHES)]
            series[r.dataset_id] = Series(r.dataset_id, r.dataset_name or r.dataset_id, dash)
    texts = labels([r.started_at for r in shown], now=now)
    points = tuple(
        Point(
            run_id=r.run_id,
            dataset_id=r.dataset_id,
            x=i,
            y=float(r.pass_rate or 0.0),
            colour=colour_of(r.broke, r.fixed),
            hollow=r.draft,
            label=texts[i],
            tooltip=tooltip_of(r),
        )
        for i, r in enumerate(shown)
    )
    return Chart(
        last=window,
        measured=len(measured),
        shown=len(shown),
        switch=len(measured) > SWITCH_AFTER,
        series=tuple(series.values()),
        points=points,
    )
