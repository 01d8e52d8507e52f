"""The chart's listings of the run store against moto's server over HTTP (seed 004 "In the
console"): every write of an outcome keeps its trend beside it, and `trends_by_agent` /
`trends_by_dataset` read the runs projected to their header and trend, never their outcome."""

from __future__ import annotations

from typing import Any

import pytest
from pynamodb.connection.table import TableConnection

from assay_local.motoserver import MotoHandle
from chalicelib.adapters import stores
from chalicelib.adapters.tables import RunRow, org_key
from chalicelib.domain.chart import Trend, TrendRun
from chalicelib.domain.enums import RunStatus
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


def test_a_completed_run_is_listed_with_its_trend_and_without_its_outcome(
    ddb: Any, items_read: list[dict[str, Any]]
) -> None:
    runs = stores.RunStore()
    runs.create(a_run("r1", status="running", phase="finalizing", created_at=T0))
    run = runs.get("acme", "r1")
    assert run is not None and runs.complete(run, _outcome(2), T0)

    page = runs.trends_by_agent("acme", "a")
    [listed] = page.runs
    assert page.next_start is None
    assert isinstance(listed, TrendRun)
    assert (listed.run_id, listed.agent_id, listed.dataset_id, listed.status) == (
        "r1",
        "a",
        "d",
        RunStatus.COMPLETED,
    )
    assert listed.arms == run.arms
    assert listed.trend == Trend(pass_rate=2 / 3, broke=0, fixed=0, could_not_run=False)
    [item] = items_read
    assert "trend" in item and "arms" in item
    assert not {"outcome", "case_ids_text", "scoring", "tasks"} & set(item)
    assert [r.run_id for r in runs.trends_by_dataset("acme", "d").runs] == ["r1"]


def test_a_grade_again_rewrites_the_trend_with_the_outcome(ddb: Any) -> None:
    runs = stores.RunStore()
    runs.create(a_run("r1", status="running", phase="finalizing", created_at=T0))
    run = runs.get("acme", "r1")
    assert run is not None and runs.complete(run, _outcome(1), T0)
    done = runs.get("acme", "r1")
    assert done is not None and runs.record_outcome(done, _outcome(3))
    [listed] = runs.trends_by_agent("acme", "a").runs
    assert listed.trend is not None and listed.trend.pass_rate == 1.0


def test_a_run_created_with_its_outcome_keeps_its_trend(ddb: Any) -> None:
    runs = stores.RunStore()
    runs.create(a_run("r1", status="completed", created_at=T0, outcome=_outcome(0)))
    [listed] = runs.trends_by_dataset("acme", "d").runs
    assert listed.trend == Trend(pass_rate=0.0)


def test_the_listings_page_newest_first_and_a_run_kept_before_trends_has_none(ddb: Any) -> None:
    runs = stores.RunStore()
    for i in range(5):
        at = f"2026-12-01T09:0{i}:00.000Z"
        runs.create(a_run(f"r{i}", status="completed", created_at=at, outcome=_outcome(i % 4)))
    RunRow(org_key("acme", "r0")).update(actions=[RunRow.trend.remove()])  # as kept before

    first = runs.trends_by_agent("acme", "a", limit=3)
    assert [r.run_id for r in first.runs] == ["r4", "r3", "r2"]
    assert first.next_start is not None
    rest = runs.trends_by_agent("acme", "a", limit=3, start=first.next_start)
    assert [r.run_id for r in rest.runs] == ["r1", "r0"]
    assert rest.runs[-1].trend is None and rest.runs[0].trend is not None
