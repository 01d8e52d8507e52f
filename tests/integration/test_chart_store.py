"""The chart's listings of the run store against moto's server over HTTP (docs/guides/console.md):
the writes that complete a run, grade it again and delete it keep its trend row, and
`trends_by_agent` / `trends_by_dataset` read those rows, never the runs."""

from __future__ import annotations

from typing import Any

import pytest
from pynamodb.connection.table import TableConnection

from assay_local.motoserver import MotoHandle
from chalicelib.adapters import stores
from chalicelib.adapters.tables import TrendRow, org_key
from chalicelib.domain.chart import Trend, TrendRun
from tests.fakes.ledger import a_run, an_arm_result, an_outcome
from tests.integration.conftest import seed_agent_and_dataset, store_tables

PREFIX = "chart-"
T0 = "2026-12-01T09:00:00.000Z"

pytestmark = pytest.mark.usefixtures("models_put_back")


@pytest.fixture
def ddb(moto: MotoHandle, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every table of assay on a wiped moto, organization `acme` with agent `a` and dataset `d`."""
    client = store_tables(moto, monkeypatch, PREFIX)
    stores.OrganizationStore().ensure("acme", concurrency_limit=3, now_iso=T0)
    seed_agent_and_dataset()
    return client


@pytest.fixture
def items_read(monkeypatch: pytest.MonkeyPatch) -> list[dict[str, Any]]:
    """Every item the store's index queries got back from DynamoDB, as on the wire."""
    seen: list[dict[str, Any]] = []
    query = TableConnection.query

    def spy(self: TableConnection, *args: Any, **kwargs: Any) -> Any:
        page = query(self, *args, **kwargs)
        seen.extend(page.get("Items", ()))
        return page

    monkeypatch.setattr(TableConnection, "query", spy)
    return seen


def _outcome(passed: int) -> Any:
    return an_outcome(total=3, passed=passed, arms={"candidate": an_arm_result(cases=3)})


def test_a_completed_run_keeps_a_trend_row_and_the_chart_reads_only_those(
    ddb: Any, items_read: list[dict[str, Any]]
) -> None:
    runs = stores.RunStore()
    runs.create(a_run("r1", status="running", phase="finalizing", created_at=T0))
    assert runs.trends_by_agent("acme", "a").runs == []  # running: nothing to plot yet
    run = runs.get("acme", "r1")
    assert run is not None and runs.complete(run, _outcome(2), T0)

    page = runs.trends_by_agent("acme", "a")
    [listed] = page.runs
    assert page.next_start is None
    assert listed == TrendRun(
        run_id="r1",
        org_id="acme",
        agent_id="a",
        dataset_id="d",
        started_at=T0,
        draft=False,
        what="v3",
        against=None,
        model=listed.model,
        trend=Trend(pass_rate=2 / 3, broke=0, fixed=0, could_not_run=False),
    )
    assert set(items_read[-1]) == {"point"}  # one JSON string a run, never the run's row
    assert [r.run_id for r in runs.trends_by_dataset("acme", "d").runs] == ["r1"]
    assert runs.trends_by_dataset("acme", "other").runs == []
    assert runs.trends_by_agent("globex", "a").runs == []  # the organization is in every key


def test_a_grade_again_rewrites_the_trend_and_a_delete_takes_it(ddb: Any) -> None:
    runs = stores.RunStore()
    runs.create(a_run("r1", status="running", phase="finalizing", created_at=T0))
    run = runs.get("acme", "r1")
    assert run is not None and runs.complete(run, _outcome(1), T0)
    done = runs.get("acme", "r1")
    assert done is not None and runs.record_outcome(done, _outcome(3))
    [listed] = runs.trends_by_agent("acme", "a").runs
    assert listed.trend.pass_rate == 1.0
    runs.delete("acme", "r1")
    assert runs.trends_by_agent("acme", "a").runs == []
    assert runs.trends_by_dataset("acme", "d").runs == []


def test_a_run_created_with_its_outcome_keeps_its_trend_and_an_ended_one_none(ddb: Any) -> None:
    runs = stores.RunStore()
    runs.create(a_run("r1", status="completed", created_at=T0, outcome=_outcome(0)))
    runs.create(a_run("r2", status="failed", created_at=T0))
    [listed] = runs.trends_by_dataset("acme", "d").runs
    assert (listed.run_id, listed.trend) == ("r1", Trend(pass_rate=0.0))


def test_the_listings_page_newest_first(ddb: Any) -> None:
    runs = stores.RunStore()
    for i in range(5):
        at = f"2026-12-01T09:0{i}:00.000Z"
        runs.create(a_run(f"r{i}", status="completed", created_at=at, outcome=_outcome(i % 4)))

    first = runs.trends_by_agent("acme", "a", limit=3)
    assert [r.run_id for r in first.runs] == ["r4", "r3", "r2"]
    assert first.next_start is not None
    rest = runs.trends_by_agent("acme", "a", limit=3, start=first.next_start)
    assert [r.run_id for r in rest.runs] == ["r1", "r0"]
    assert rest.next_start is None
    by_dataset = runs.trends_by_dataset("acme", "d", limit=4)
    assert [r.run_id for r in by_dataset.runs] == ["r4", "r3", "r2", "r1"]


def test_remember_backfills_the_trend_rows_of_runs_kept_without(ddb: Any) -> None:
    runs = stores.RunStore()
    runs.create(a_run("r1", status="completed", created_at=T0, outcome=_outcome(1)))
    kept = runs.get("acme", "r1")
    assert kept is not None
    runs.delete("acme", "r1")
    runs.create(kept)
    TrendRow(org_key("acme", "a"), f"{T0}#r1").delete()  # as kept before trend rows were
    assert runs.trends_by_agent("acme", "a").runs == []
    runs.remember([kept])
    assert [r.run_id for r in runs.trends_by_agent("acme", "a").runs] == ["r1"]
