"""The run store's history and active runs against moto's server over HTTP (issue 12 "History
costs nothing"): a completion folds the run into its agent's history rows and takes it off the
organization's active runs in one transaction; a grade again and a delete keep the rows right."""

from __future__ import annotations

from typing import Any

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib.adapters import stores, tables
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.history import ArmsRow, CostRow, LatestRow
from chalicelib.domain.records import Agent, Run
from chalicelib.errors import NotFoundError
from tests.fakes.ledger import a_run, an_arm_result, an_outcome
from tests.integration.conftest import seed_agent_and_dataset, store_tables

PREFIX = "history-"
T0 = "2026-12-01T09:00:00.000Z"


pytestmark = pytest.mark.usefixtures("models_put_back")


@pytest.fixture
def ddb(moto: MotoHandle, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every table of assay on a wiped moto, organization `acme` with agent `a` and dataset `d`
    in it; a raw client."""
    client = store_tables(moto, monkeypatch, PREFIX)
    stores.OrganizationStore().ensure("acme", concurrency_limit=3, now_iso=T0)
    seed_agent_and_dataset()
    return client


def _finalizing(run_id: str, created_at: str, **fields: Any) -> Run:
    """A running run of version 3 (arm `candidate`, model `m`) over c1..c3 of dataset `d`, its
    answers all in."""
    return a_run(run_id, status="running", phase="finalizing", created_at=created_at, **fields)


def _outcome(passed: int, cost: int = 30) -> Any:
    return an_outcome(
        total=3, passed=passed, arms={"candidate": an_arm_result(cases=3, cost_micros=cost)}
    )


def _rows(agent_id: str = "a") -> dict[str, Any]:
    keys = ["latest#v3", "arms#v3#d", "answers#m"]
    found = stores.RunStore().history("acme", [(agent_id, k) for k in keys])
    return {k: found.get((agent_id, k)) for k in keys}


def test_completing_a_run_folds_it_into_the_history_and_ends_it_as_active(ddb: Any) -> None:
    runs = stores.RunStore()
    runs.create(_finalizing("r1", "2026-12-01T08:00:00.000Z"))
    assert [r.run_id for r in runs.active("acme")] == ["r1"]
    run = runs.get("acme", "r1")
    assert run is not None
    assert runs.complete(run, _outcome(2), "2026-12-01T08:30:00.000Z")
    assert not runs.complete(run, _outcome(3), "2026-12-01T08:31:00.000Z")  # once only
    assert runs.active("acme") == []
    rows = _rows()
    latest, arms, cost = rows["latest#v3"], rows["arms#v3#d"], rows["answers#m"]
    assert isinstance(latest, LatestRow) and isinstance(arms, ArmsRow)
    assert isinstance(cost, CostRow)
    assert [(r.run_id, r.total, r.passed) for r in latest.results.values()] == [("r1", 3, 2)]
    assert [a.run_id for a in arms.arms] == ["r1"]
    assert [(e.run_id, e.cost_micros, e.count) for e in cost.entries] == [("r1", 30, 3)]
    item = ddb.get_item(
        TableName=tables.table_name(tables.RunRow), Key={"run_key": {"S": "acme#r1"}}
    )["Item"]
    assert item["evaluation_key"]["S"] == "acme#a#v3#d"


def test_a_run_that_completes_after_a_newer_one_only_adds_to_the_cost_and_arms(ddb: Any) -> None:
    runs = stores.RunStore()
    for run_id, created in (
        ("old", "2026-12-01T07:00:00.000Z"),
        ("new", "2026-12-01T08:00:00.000Z"),
    ):
        runs.create(_finalizing(run_id, created))
    new, old = runs.get("acme", "new"), runs.get("acme", "old")
    assert new is not None and old is not None
    assert runs.complete(new, _outcome(3), "2026-12-01T08:30:00.000Z")
    assert runs.complete(old, _outcome(0), "2026-12-01T08:40:00.000Z")  # completed last
    latest = _rows()["latest#v3"]
    assert isinstance(latest, LatestRow)
    assert [r.run_id for r in latest.results.values()] == ["old"]  # completed last: the latest
    cost = _rows()["answers#m"]
    assert isinstance(cost, CostRow)
    assert [e.run_id for e in cost.entries] == ["new", "old"]  # newest created first


def test_a_grade_again_moves_the_latest_totals_and_a_delete_falls_back(ddb: Any) -> None:
    runs = stores.RunStore()
    for hour in (6, 7):
        runs.create(_finalizing(f"r{hour}", f"2026-12-01T0{hour}:00:00.000Z"))
        run = runs.get("acme", f"r{hour}")
        assert run is not None
        assert runs.complete(run, _outcome(1), f"2026-12-01T0{hour}:30:00.000Z")
    r7 = runs.get("acme", "r7")
    assert r7 is not None
    assert runs.record_outcome(r7, _outcome(3))
    latest = _rows()["latest#v3"]
    assert isinstance(latest, LatestRow) and latest.results["d"].passed == 3
    runs.delete("acme", "r7")
    rows = _rows()
    latest, arms = rows["latest#v3"], rows["arms#v3#d"]
    assert isinstance(latest, LatestRow) and isinstance(arms, ArmsRow)
    assert [(r.run_id, r.passed) for r in latest.results.values()] == [("r6", 1)]
    assert [a.run_id for a in arms.arms] == ["r6"]
    runs.delete("acme", "r6")
    latest = _rows()["latest#v3"]
    assert isinstance(latest, LatestRow) and latest.results == {}


def test_every_way_a_run_ends_takes_it_off_the_active_runs(ddb: Any) -> None:
    runs = stores.RunStore()
    for run_id in ("cancelled", "unstarted", "ended"):
        runs.create(a_run(run_id, status="queued"))
    assert {r.run_id for r in runs.active("acme")} == {"cancelled", "unstarted", "ended"}
    cancelled = runs.get("acme", "cancelled")
    assert cancelled is not None and runs.end(cancelled, RunStatus.CANCELLED, "by ana", T0)
    unstarted = runs.get("acme", "unstarted")
    assert unstarted is not None and runs.fail_unstarted(unstarted, "nothing runs it", T0)
    # One whose organization row lost its list meanwhile ends all the same.
    ddb.update_item(
        TableName=tables.table_name(tables.OrganizationRow),
        Key={"org_id": {"S": "acme"}},
        UpdateExpression="REMOVE active_runs",
    )
    abandoned = runs.get("acme", "ended")
    assert abandoned is not None
    assert runs.end(abandoned, RunStatus.CANCELLED, "by ana", T0)
    assert runs.active("acme") == []


def test_summaries_of_many_agents_read_their_rows_in_batches(ddb: Any, moto: MotoHandle) -> None:
    runs = stores.RunStore()
    done = [
        a_run(
            f"r{i:03d}",
            agent_id=f"agent-{i:03d}",
            status="completed",
            completed_at=T0,
            outcome=_outcome(i % 4),
        )
        for i in range(150)
    ]
    runs.remember(done)
    moto.reset_counts()
    rows = runs.history("acme", [(f"agent-{i:03d}", "latest#v3") for i in range(150)])
    assert moto.requests().get("dynamodb.BatchGetItem") == 2  # 100 keys, then 50
    passed = [row.results["d"].passed for _, row in sorted(rows.items())]
    assert passed == [i % 4 for i in range(150)]


def test_many_agents_are_read_in_batches_and_an_unknown_one_is_named(
    ddb: Any, moto: MotoHandle
) -> None:
    agents = stores.AgentStore()
    for i in range(150):
        agents.create(
            Agent(
                org_id="acme",
                agent_id=f"agent-{i:03d}",
                name=f"agent {i}",
                draft_spec={},
                draft_spec_hash=f"h{i}",
                draft_updated_at=T0,
                created_at=T0,
            )
        )
    moto.reset_counts()
    found = agents.get_many("acme", [f"agent-{i:03d}" for i in range(150)])
    assert moto.requests().get("dynamodb.BatchGetItem") == 2  # 100 keys, then 50
    assert [found[f"agent-{i:03d}"].draft_spec_hash for i in (0, 149)] == ["h0", "h149"]
    with pytest.raises(NotFoundError, match="agent nobody not found"):
        agents.get_many("acme", ["agent-000", "nobody", "agent-001"])
