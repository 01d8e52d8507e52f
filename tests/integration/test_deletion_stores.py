"""What the stores do for a delete of an agent or a dataset (issue 14 scope 6), against moto's
server over HTTP: the mark and what it refuses (every write of a run, version, suite,
evaluation or promotion checks it in its own transaction), the deletes by keys and queries (never
a scan), and a run's borrowed first answers kept in it."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib.adapters import stores
from chalicelib.adapters.tables import (
    AgentHistoryRow,
    AgentVersionRow,
    DatasetCaseRow,
    DatasetRow,
    PromotionRow,
    org_key,
)
from chalicelib.domain.enums import ArmRole
from chalicelib.domain.records import (
    AgentVersion,
    Dataset,
    DatasetCase,
    Environment,
    Evaluation,
    Notification,
    Promotion,
    Suite,
)
from chalicelib.errors import ConflictError, NotFoundError
from tests.fakes.ledger import a_run, an_arm, an_arm_result, an_attempt, an_outcome
from tests.integration.conftest import seed_agent_and_dataset, store_tables

pytestmark = pytest.mark.usefixtures("models_put_back")

T0 = "2026-12-01T08:00:00.000Z"


@pytest.fixture
def ddb(moto: MotoHandle, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every table of assay on a wiped moto; organization `acme` with agent `a` and dataset `d`
    (and `a2`, `d2` beside them); a raw client."""
    client = store_tables(moto, monkeypatch, "deletion-")
    stores.OrganizationStore().ensure("acme", concurrency_limit=3, now_iso=T0)
    seed_agent_and_dataset()
    seed_agent_and_dataset(agent_id="a2", dataset_id="d2")
    return client


def _no_scan(moto: MotoHandle) -> None:
    assert not any(op.endswith("Scan") for op in moto.requests()), moto.requests()


def _version(n: int, dataset_id: str = "d") -> tuple[Dataset, list[DatasetCase]]:
    ids = [f"c{i}" for i in (1, 2, 3)]
    row = Dataset(
        version=n,
        org_id="acme",
        dataset_id=dataset_id,
        created_at=T0,
        case_ids=ids,
        case_count=3,
    )
    return row, [DatasetCase(case_id=i, case={"case_id": i, "input": "q"}) for i in ids]


def _suite(**fields: Any) -> Suite:
    values: dict[str, Any] = {
        "suite_id": "s1",
        "org_id": "acme",
        "agent_id": "a",
        "dataset_id": "d",
        "owner": "ana",
        "created_at": T0,
        "updated_at": f"{T0}#0",
    }
    return Suite(**{**values, **fields})


def test_an_agent_being_deleted_reads_as_gone_and_nothing_of_it_is_written(
    ddb: Any, moto: MotoHandle
) -> None:
    agents = stores.AgentStore()
    version = AgentVersion(
        org_id="acme", agent_id="a", version=1, spec={}, spec_hash="h1", published_at=T0
    )
    assert agents.publish(version)
    moto.reset_counts()
    agent, marked = agents.start_deleting("acme", "a", T0)
    assert (agent.agent_id, agent.latest_version, marked) == ("a", 1, True)
    assert agents.start_deleting("acme", "a", T0)[1] is False  # asked again: marked already
    with pytest.raises(NotFoundError):
        agents.get("acme", "a")
    with pytest.raises(NotFoundError):
        agents.get_many("acme", ["a2", "a"])
    assert [a.agent_id for a in agents.list("acme")] == ["a2"]

    refused: list[tuple[str, Any]] = [
        ("version", lambda: agents.publish(replace(version, version=2, spec_hash="h2"))),
        ("older version", lambda: agents.publish(replace(version, version=0, spec_hash="h0"))),
        ("run", lambda: stores.RunStore().create(a_run("r1"))),
        ("suite", lambda: stores.SuiteStore().create(_suite())),
        (
            "evaluation",
            lambda: stores.EvaluationStore().create(
                Evaluation(
                    org_id="acme", evaluation_id="e", agent_id="a", dataset_id="d", created_at=T0
                )
            ),
        ),
        (
            "promotion",
            lambda: stores.PromotionStore().create_waiting(
                Promotion(
                    promotion_id="p1",
                    org_id="acme",
                    agent_id="a",
                    environment_id="prod",
                    version=1,
                    status="waiting",
                    created_at=T0,
                )
            ),
        ),
        ("budget", lambda: stores.SpendStore().set_agent_budget("acme", "a", 5)),
    ]
    for what, write in refused:
        with pytest.raises(NotFoundError) as gone:
            write()
        assert gone.value.field == "agent_id", what
    assert stores.RunStore().get("acme", "r1") is None
    assert list(PromotionRow.query(org_key("acme", "a"))) == []

    agents.stop_deleting("acme", "a")  # a delete refused with a 409 takes it off
    assert agents.get("acme", "a").latest_version == 1
    agents.start_deleting("acme", "a", T0)
    agents.delete("acme", "a")
    assert list(AgentVersionRow.query(org_key("acme", "a"))) == []
    with pytest.raises(NotFoundError):
        agents.start_deleting("acme", "a", T0)
    assert agents.get("acme", "a2").agent_id == "a2"
    _no_scan(moto)


def test_a_dataset_being_deleted_takes_no_version_and_goes_with_every_case(
    ddb: Any, moto: MotoHandle
) -> None:
    datasets = stores.DatasetStore()
    datasets.add_version(*_version(1))
    datasets.add_version(*_version(2))
    datasets.add_version(*_version(1, "d2"))
    assert datasets.get_case("acme", "d", 1, "c1") is not None  # cached in this process
    moto.reset_counts()
    header, marked = datasets.start_deleting("acme", "d", T0)
    assert (header.latest_version, marked) == (2, True)
    with pytest.raises(NotFoundError) as gone:
        datasets.get("acme", "d")
    assert gone.value.field == "dataset_id"
    assert [d.dataset_id for d in datasets.list("acme")] == ["d2"]
    with pytest.raises(NotFoundError) as refused:
        datasets.add_version(*_version(3))
    assert refused.value.field == "dataset_id"
    with pytest.raises(NotFoundError) as run:
        stores.RunStore().create(a_run("r1"))
    assert run.value.field == "dataset_id"
    with pytest.raises(NotFoundError):
        stores.SuiteStore().create(_suite())

    datasets.delete("acme", "d")
    assert list(DatasetRow.query(org_key("acme", "d"))) == []
    for n in (1, 2, 3):
        assert list(DatasetCaseRow.query(org_key("acme", "d", n))) == []
    assert datasets.get_case("acme", "d", 1, "c1") is None  # nor kept in this process
    assert len(datasets.cases("acme", "d2", 1)) == 3
    _no_scan(moto)


def test_a_version_written_while_its_dataset_is_deleted_takes_its_cases_back(
    ddb: Any, monkeypatch: pytest.MonkeyPatch
) -> None:
    datasets = stores.DatasetStore()
    real = DatasetCaseRow.batch_write
    writes: list[str] = []

    class DeletedMeanwhile:
        """The version's cases are written; the delete runs before it is marked ready."""

        def __init__(self) -> None:
            self.batch = real()

        def __enter__(self) -> Any:
            return self.batch.__enter__()

        def __exit__(self, *exc: Any) -> None:
            self.batch.__exit__(*exc)
            writes.append("batch")
            if len(writes) == 1:  # the version's own write; the delete's batches pass
                datasets.start_deleting("acme", "d", T0)
                datasets.delete("acme", "d")

    monkeypatch.setattr(DatasetCaseRow, "batch_write", DeletedMeanwhile)
    with pytest.raises(NotFoundError):
        datasets.add_version(*_version(1))
    monkeypatch.undo()
    assert list(DatasetCaseRow.query(org_key("acme", "d", 1))) == []
    assert list(DatasetRow.query(org_key("acme", "d"))) == []


def test_no_run_borrows_from_a_run_being_deleted_and_borrowed_answers_are_kept(
    ddb: Any, moto: MotoHandle
) -> None:
    ledger = stores.RunStore()
    ledger.create(a_run("S", status="completed", completed_at=T0, outcome=an_outcome()))
    borrowing = (
        an_arm(),
        an_arm("baseline", ArmRole.BASELINE, answers=False, source_run_id="S"),
    )
    ledger.create(a_run("B", status="completed", completed_at=T0, arms=borrowing))
    assert ledger.mark_deleting("acme", "S", T0) and ledger.mark_deleting("acme", "S", "later")
    assert ledger.get("acme", "S").deleting_at == T0  # the first mark stays
    with pytest.raises(ConflictError) as refused:
        ledger.create(a_run("late", arms=borrowing))
    assert refused.value.field == "baseline_run_id"
    assert ledger.get("acme", "late") is None

    copies = [an_attempt(c, "passed", run_id="B", arm_id="baseline") for c in ("c1", "c2")]
    assert ledger.keep_borrowed(ledger.get("acme", "B"), copies)
    assert [a.attempt_key for a in ledger.attempts("acme", "B")] == [
        "baseline#c1#001",
        "baseline#c2#001",
    ]
    gone = ledger.get("acme", "B")
    ledger.delete("acme", "B")
    assert not ledger.keep_borrowed(gone, copies)  # deleted meanwhile: none are left
    assert ledger.attempts("acme", "B") == []
    assert not ledger.mark_deleting("acme", "B", T0)
    _no_scan(moto)


def test_an_agents_history_goes_whole_or_by_dataset(ddb: Any, moto: MotoHandle) -> None:
    ledger = stores.RunStore()
    done = [
        a_run(
            run_id,
            agent_id=agent_id,
            dataset_id=dataset_id,
            status="completed",
            completed_at=T0,
            outcome=an_outcome(total=3, passed=3, arms={"candidate": an_arm_result(cases=3)}),
        )
        for run_id, agent_id, dataset_id in (("r1", "a", "d"), ("r2", "a", "d2"), ("r3", "a2", "d"))
    ]
    ledger.remember(done)

    def rows(agent_id: str) -> list[str]:
        return sorted(r.item for r in AgentHistoryRow.query(org_key("acme", agent_id)))

    assert "arms#v3#d" in rows("a") and "arms#v3#d2" in rows("a")
    moto.reset_counts()
    assert ledger.forget_history("acme", "a", "d") == 1
    assert "arms#v3#d" not in rows("a") and "arms#v3#d2" in rows("a")
    assert "arms#v3#d" in rows("a2")
    left = len(rows("a"))
    assert left > 0 and ledger.forget_history("acme", "a") == left
    assert rows("a") == [] and rows("a2") != []
    _no_scan(moto)


def test_promotions_serving_notices_and_spend_of_an_agent_go_by_their_keys(
    ddb: Any, moto: MotoHandle
) -> None:
    promotions = stores.PromotionStore()
    for agent_id in ("a", "a2"):
        assert promotions.create_waiting(
            Promotion(
                promotion_id="p1",
                org_id="acme",
                agent_id=agent_id,
                environment_id="prod",
                version=1,
                status="waiting",
                created_at=T0,
            )
        )
    environments = stores.EnvironmentStore()
    environments.create(
        Environment(org_id="acme", environment_id="prod", serving={"a": 1, "a2": 2}, created_at=T0)
    )
    notices = stores.NotificationStore()
    for i in range(130):  # more than one listing's 100
        notices.add(
            "ana",
            Notification(
                notification_id=f"n{i:04d}",
                org_id="acme",
                kind="suite_result",
                title="t",
                links={"agent_id": "a" if i % 2 else "a2"},
                created_at=T0,
            ),
        )
    notices.set_email_preference("acme", "ana", False, at=T0)
    spend = stores.SpendStore()
    for month in ("2026-10", "2026-12"):
        spend.charge("acme", "a", month, 5, judge=False)
    spend.charge("acme", "a2", "2026-12", 7, judge=False)
    moto.reset_counts()

    assert promotions.delete_of_agent("acme", "a") == 2  # the promotion and its lock
    assert promotions.lock_holder("acme", "a", "prod") is None
    assert promotions.lock_holder("acme", "a2", "prod") == "p1"
    assert environments.stop_serving("acme", "prod", "a") is True
    assert environments.stop_serving("acme", "prod", "a") is False
    assert environments.get("acme", "prod").serving == {"a2": 2}
    assert notices.delete_matching("acme", "ana", lambda n: n.links.get("agent_id") == "a") == 65
    assert len(notices.of("acme", "ana", limit=200)) == 65
    assert notices.email_preference("acme", "ana") is False  # settings are no notice
    spend.forget_agent("acme", "a", ["2026-10", "2026-11", "2026-12"])
    assert spend.read("acme", "a", "2026-10").agent_spent_micros == 0
    assert spend.read("acme", "a", "2026-12").agent_spent_micros == 0
    assert spend.read("acme", "a2", "2026-12").agent_spent_micros == 7
    assert spend.read("acme", None, "2026-12").org_spent_micros == 12  # the organization's stays
    _no_scan(moto)
