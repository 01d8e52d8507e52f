"""The pass-rate chart of an agent's or a dataset's runs (docs/guides/console.md): reads the
trend row of every completed run the reader may see (`domain.chart.TrendRun`, a few hundred bytes
each, kept by the transaction that completed the run; never the runs, never a scan), maps each to
a `domain.chart.ChartRun`, and builds the chart at the container's clock."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import parse_iso
from chalicelib.domain import access
from chalicelib.domain.chart import Chart, ChartRun, TrendRun, Window, build_chart
from chalicelib.domain.identity import Identity
from chalicelib.errors import NotFoundError
from chalicelib.services import access as access_service
from chalicelib.services.ports.ledger import TrendPage

PAGE = 1000
"""Trend rows read per query: a few hundred bytes each, so a page stays below DynamoDB's 1 MB."""


def _every(list_page: Callable[[dict[str, Any] | None], TrendPage]) -> Iterator[TrendRun]:
    start: dict[str, Any] | None = None
    while True:
        page = list_page(start)
        yield from page.runs
        if not page.next_start:
            return
        start = page.next_start


def chart_run(run: TrendRun, dataset_name: str) -> ChartRun:
    """What the chart needs of a completed run's trend row: its pass rate, confirmed regressions
    and fixes, whether a side could not run, and what ran against what."""
    trend = run.trend
    return ChartRun(
        run_id=run.run_id,
        dataset_id=run.dataset_id,
        dataset_name=dataset_name,
        started_at=parse_iso(run.started_at),
        pass_rate=trend.pass_rate,
        broke=trend.broke,
        fixed=trend.fixed,
        draft=run.draft,
        could_not_run=trend.could_not_run,
        what=run.what,
        against=run.against,
        model=run.model,
    )


def _chart(c: Container, who: Identity, runs: Iterator[TrendRun], last: Window | str) -> Chart:
    names: dict[str, str] = {}

    def name_of(dataset_id: str) -> str:
        if dataset_id not in names:
            try:
                names[dataset_id] = c.datasets.get(who.org_id, dataset_id).name or dataset_id
            except NotFoundError:  # deleted meanwhile: its runs go with it
                names[dataset_id] = dataset_id
        return names[dataset_id]

    # a run over an agent or a dataset the caller may not see is not shown
    # (docs/reference/access.md)
    seen = [r for r in runs if r.org_id == who.org_id and access_service.may_read(who, r)]
    return build_chart(
        [chart_run(r, name_of(r.dataset_id)) for r in seen], now=c.clock.now(), last=last
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
