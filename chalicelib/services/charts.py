"""The pass-rate chart of an agent's or a dataset's runs (seed 004 "In the console"): reads every
run the reader may see, newest first through the listing's index (never a scan) projected to a
`domain.chart.TrendRun` (header and kept trend, never the outcome: 1,000 runs chart under 1 s),
maps each to a `domain.chart.ChartRun`, and builds the chart at the container's clock. A
completed run kept before trends were is read in full."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import parse_iso
from chalicelib.domain import access
from chalicelib.domain.chart import Chart, ChartRun, Trend, TrendRun, Window, build_chart
from chalicelib.domain.enums import ArmRole, RunStatus
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Arm, Run
from chalicelib.errors import NotFoundError
from chalicelib.services import access as access_service
from chalicelib.services.ports.ledger import TrendPage

PAGE = 500
"""Runs read per index query: the chart's projection is a few hundred bytes a run, so a page of
500 stays far below DynamoDB's 1 MB a query."""


def _every(list_page: Callable[[dict[str, Any] | None], TrendPage]) -> Iterator[TrendRun]:
    start: dict[str, Any] | None = None
    while True:
        page = list_page(start)
        yield from page.runs
        if not page.next_start:
            return
        start = page.next_start


def _label(arm: Arm) -> str:
    return "draft" if arm.draft or arm.version is None else f"v{int(arm.version)}"


def trend_run(run: Run) -> TrendRun:
    """The chart's view of a run read in full (its trend derived from its outcome)."""
    return TrendRun(
        run_id=run.run_id,
        org_id=run.org_id,
        agent_id=run.agent_id,
        dataset_id=run.dataset_id,
        created_at=run.created_at,
        status=run.status,
        started_at=run.started_at,
        draft=run.draft,
        resolved_version=run.resolved_version,
        arms=run.arms,
        trend=Trend.of(run.outcome) if run.outcome is not None else None,
    )


def chart_run(run: TrendRun, dataset_name: str) -> ChartRun:
    """What the chart needs of `run`: the candidate's pass rate once the run completed (None
    before, or for a run that ended otherwise), its confirmed regressions and fixes, whether a
    side could not run, and what ran against what."""
    trend = run.trend if run.status == RunStatus.COMPLETED else None
    candidate = next((a for a in run.arms if a.role == ArmRole.CANDIDATE), None)
    baseline = next((a for a in run.arms if a.role == ArmRole.BASELINE), None)
    if candidate is not None:
        what = _label(candidate)
        model = (candidate.spec or {}).get("model") or candidate.model_profile_id
    else:
        what = "draft" if run.draft else f"v{run.resolved_version}"
        model = None
    return ChartRun(
        run_id=run.run_id,
        dataset_id=run.dataset_id,
        dataset_name=dataset_name,
        started_at=parse_iso(run.started_at or run.created_at),
        pass_rate=trend.pass_rate if trend is not None else None,
        broke=trend.broke if trend is not None else 0,
        fixed=trend.fixed if trend is not None else 0,
        draft=bool(run.draft),
        could_not_run=bool(trend is not None and trend.could_not_run),
        what=what,
        against=_label(baseline) if baseline is not None else None,
        model=str(model) if model else None,
    )


def _with_trend(c: Container, run: TrendRun) -> TrendRun | None:
    """`run` with its trend: a completed run kept before trends were written is read in full (its
    outcome), so older history charts as it always did. None when it was deleted meanwhile."""
    if run.trend is not None or run.status != RunStatus.COMPLETED:
        return run
    full = c.runs.get(run.org_id, run.run_id)
    return trend_run(full) if full is not None else None


def _chart(c: Container, who: Identity, runs: Iterator[TrendRun], last: Window | str) -> Chart:
    names: dict[str, str] = {}

    def name_of(dataset_id: str) -> str:
        if dataset_id not in names:
            try:
                names[dataset_id] = c.datasets.get(who.org_id, dataset_id).name or dataset_id
            except NotFoundError:  # deleted meanwhile: its runs go with it
                names[dataset_id] = dataset_id
        return names[dataset_id]

    # a run over an agent or a dataset the caller may not see is not shown (seed 004 "Access")
    seen = [r for r in runs if r.org_id == who.org_id and access_service.may_read(who, r)]
    kept = [t for t in (_with_trend(c, r) for r in seen) if t is not None]
    return build_chart(
        [chart_run(r, name_of(r.dataset_id)) for r in kept], now=c.clock.now(), last=last
    )


def agent_chart(c: Container, who: Identity, agent_id: str, last: Window | str) -> Chart:
    """The chart of every run of the agent the caller may see (`last`: "10", "30" or "all").

    Raises NotFoundError for an unknown agent, ForbiddenError without `runs:view`, and
    InvalidInputError (field `last`) for another `last`."""
    who.require(access.RUNS_VIEW, "listing eval runs")
    c.agents.get(who.org_id, agent_id)
    pages = _every(lambda start: c.runs.trends_by_agent(who.org_id, agent_id, PAGE, start))
    return _chart(c, who, pages, last)


def dataset_chart(c: Container, who: Identity, dataset_id: str, last: Window | str) -> Chart:
    """The chart of every run over the dataset the caller may see (as `agent_chart`)."""
    who.require(access.RUNS_VIEW, "listing eval runs")
    c.datasets.get(who.org_id, dataset_id)
    pages = _every(lambda start: c.runs.trends_by_dataset(who.org_id, dataset_id, PAGE, start))
    return _chart(c, who, pages, last)
