"""The evaluations and an evaluation's run history against moto's server over HTTP:
evaluations by organization and id, paged; the runs of one evaluation newest first through its
index; each explicit evaluation's latest completed run kept apart in a version's latest results,
and a delete falling back within the evaluation."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib.adapters import stores, tables
from chalicelib.domain.history import LatestRow
from chalicelib.domain.records import Evaluation, Run
from chalicelib.errors import ConflictError, NotFoundError
from tests.fakes.ledger import a_run, an_arm_result, an_outcome
from tests.integration.conftest import seed_agent_and_dataset, store_tables

PREFIX = "evaluations-"
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


def _evaluation(evaluation_id: str, org_id: str = "acme", **fields: Any) -> Evaluation:
    values: dict[str, Any] = {
        "org_id": org_id,
        "evaluation_id": evaluation_id,
        "agent_id": "a",
        "dataset_id": "d",
        "created_at": T0,
    }
    return Evaluation(**{**values, **fields})


def test_evaluations_are_kept_per_organization_and_listed_by_id_a_page_at_a_time(ddb) -> None:
    store = stores.EvaluationStore()
    for eid in ("e-c", "e-a", "e-b"):
        store.create(_evaluation(eid))
    seed_agent_and_dataset("other", "theirs")
    store.create(_evaluation("e-a", org_id="other", agent_id="theirs"))
    with pytest.raises(ConflictError) as taken:
        store.create(_evaluation("e-a"))
    assert taken.value.field == "evaluation_id"

    page, after = store.list("acme", limit=2)
    assert [e.evaluation_id for e in page] == ["e-a", "e-b"] and after == "e-b"
    rest, end = store.list("acme", limit=2, start=after)
    assert [e.evaluation_id for e in rest] == ["e-c"] and end is None
    assert store.get("other", "e-a").agent_id == "theirs"
    assert store.get("acme", "e-a").agent_id == "a"


def test_an_evaluation_changes_and_goes(ddb) -> None:
    store = stores.EvaluationStore()
    before = _evaluation("ev")
    store.create(before)
    after = replace(before, version="published", agent_id="b", updated_at=T0)
    store.update(before, after)
    assert store.get("acme", "ev") == after
    store.delete("acme", "ev")
    with pytest.raises(NotFoundError) as gone:
        store.get("acme", "ev")
    assert gone.value.field == "evaluation_id"
    with pytest.raises(NotFoundError):
        store.update(before, after)


def _run(run_id: str, created_at: str, evaluation_id: str | None, **fields: Any) -> Run:
    return a_run(
        run_id,
        status="running",
        phase="finalizing",
        created_at=created_at,
        evaluation_id=evaluation_id,
        **fields,
    )


def test_an_evaluation_s_runs_are_listed_newest_first_through_its_index(ddb) -> None:
    runs = stores.RunStore()
    for run_id, at, eid in (
        ("r1", "2026-12-01T01:00:00.000Z", "ev"),
        ("r2", "2026-12-01T02:00:00.000Z", "implied~a~d"),
        ("r3", "2026-12-01T03:00:00.000Z", "ev"),
        ("r4", "2026-12-01T04:00:00.000Z", "ev"),
    ):
        runs.create(_run(run_id, at, eid))
    page = runs.list_by_evaluation("acme", "ev", limit=2)
    assert [r.run_id for r in page] == ["r4", "r3"]
    assert runs.is_page_start(page.next_start, "acme", evaluation_id="ev")
    assert not runs.is_page_start(page.next_start, "acme", evaluation_id="other")
    assert not runs.is_page_start(page.next_start, "acme", agent_id="a")
    rest = runs.list_by_evaluation("acme", "ev", limit=2, start=page.next_start)
    assert [r.run_id for r in rest] == ["r1"]
    assert [r.run_id for r in runs.list_by_evaluation("acme", "implied~a~d")] == ["r2"]
    assert list(runs.list_by_evaluation("other", "ev")) == []
    item = ddb.get_item(
        TableName=tables.table_name(tables.RunRow), Key={"run_key": {"S": "acme#r1"}}
    )["Item"]
    assert (item["evaluation_id"]["S"], item["evaluation_run_key"]["S"]) == ("ev", "acme#ev")


def _outcome(passed: int) -> Any:
    return an_outcome(total=3, passed=passed, arms={"candidate": an_arm_result(cases=3)})


def _complete(runs: Any, run_id: str, passed: int, at: str) -> None:
    run = runs.get("acme", run_id)
    assert run is not None and runs.complete(run, _outcome(passed), at)


def _latest() -> LatestRow:
    row = stores.RunStore().history("acme", [("a", "latest#v3")])[("a", "latest#v3")]
    assert isinstance(row, LatestRow)
    return row


def test_each_evaluation_keeps_its_latest_run_and_a_delete_falls_back_within_it(ddb) -> None:
    runs = stores.RunStore()
    plan = (
        ("i1", "implied~a~d", 1),
        ("e1", "ev", 2),
        ("e2", "ev", 3),
        ("f1", "fv", 0),
    )
    for n, (run_id, eid, passed) in enumerate(plan):
        runs.create(_run(run_id, f"2026-12-01T0{n}:00:00.000Z", eid))
        _complete(runs, run_id, passed, f"2026-12-01T0{n}:30:00.000Z")
    latest = _latest()
    assert {slot: r.run_id for slot, r in latest.results.items()} == {
        "d": "i1",
        "d#ev": "e2",
        "d#fv": "f1",
    }
    item = ddb.get_item(
        TableName=tables.table_name(tables.RunRow), Key={"run_key": {"S": "acme#e2"}}
    )["Item"]
    assert item["evaluation_key"]["S"] == "acme#a#v3#d#ev"
    implied = ddb.get_item(
        TableName=tables.table_name(tables.RunRow), Key={"run_key": {"S": "acme#i1"}}
    )["Item"]
    assert implied["evaluation_key"]["S"] == "acme#a#v3#d"  # as before evaluations were kept

    runs.delete("acme", "e2")
    after = _latest()
    assert {slot: r.run_id for slot, r in after.results.items()} == {
        "d": "i1",
        "d#ev": "e1",
        "d#fv": "f1",
    }
    runs.delete("acme", "f1")
    assert set(_latest().results) == {"d", "d#ev"}
