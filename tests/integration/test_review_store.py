"""The review queue's store against moto's server over HTTP (docs/guides/review.md): one item
waiting per case and agent, a send that finds its item or loses its case, the queue's limit, a
refused send to a dataset being deleted, paging and filters, and a decision written as one
transaction that applies all of it or none."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib.adapters import stores
from chalicelib.adapters.stores.review import ReviewStore
from chalicelib.domain.records import Attempt, Run
from chalicelib.domain.review_items import ReviewAudit, ReviewItem
from chalicelib.errors import NotFoundError
from chalicelib.services.ports.review import Decision, Mark, QueueFull, Sent, StaleRun
from tests.fakes.ledger import a_run
from tests.integration.conftest import seed_agent_and_dataset, store_tables

PREFIX = "review-"
T0 = "2026-12-01T09:00:00.000Z"

pytestmark = pytest.mark.usefixtures("models_put_back")


@pytest.fixture
def ddb(moto: MotoHandle, monkeypatch: pytest.MonkeyPatch) -> Any:
    client = store_tables(moto, monkeypatch, PREFIX)
    seed_agent_and_dataset()
    return client


def _item(n: int, case: str = "c1", agent: str = "a", **fields: Any) -> ReviewItem:
    return ReviewItem(
        **{
            "item_id": f"ri{n:013d}{'a' * 16}",
            "org_id": "acme",
            "dataset_id": "d",
            "dataset_version": 1,
            "case_id": case,
            "agent_id": agent,
            "run_id": "r1",
            "arm_id": "candidate",
            "attempt_key": f"candidate#{case}#001",
            "answered_at_ms": n,
            "reason": "judge_failed",
            "sent_at": T0,
            "tags": ["t"],
            **fields,
        }
    )


def test_one_item_waits_per_case_and_agent_and_a_newer_one_replaces_it(ddb) -> None:
    store = ReviewStore()
    first = _item(1)
    assert store.send(first, None, 10) is Sent.SENT
    assert store.send(first, None, 10) is Sent.EXISTS
    assert store.send(_item(2), None, 10) is Sent.LOST  # the case waits with another
    assert store.send(_item(3, agent="b"), None, 10) is Sent.SENT
    assert store.send(_item(4), first, 10) is Sent.SENT
    assert store.get("acme", "d", first.item_id).state == "replaced"  # type: ignore[union-attr]
    waiting = store.waiting("acme", "d", [("c1", "a"), ("c1", "b"), ("c2", "a")])
    assert {k: v.item_id for k, v in waiting.items()} == {
        ("c1", "a"): _item(4).item_id,
        ("c1", "b"): _item(3, agent="b").item_id,
    }
    assert store.count_waiting("acme", "d") == 2
    assert store.get("other", "d", first.item_id) is None


def test_the_limit_and_a_dataset_being_deleted_refuse_a_send(ddb) -> None:
    store = ReviewStore()
    assert store.send(_item(1, case="c1"), None, 1) is Sent.SENT
    with pytest.raises(QueueFull):
        store.send(_item(2, case="c2"), None, 1)
    stores.DatasetStore().start_deleting("acme", "d", T0)
    with pytest.raises(NotFoundError):
        store.send(_item(3, case="c3"), None, 5)
    assert store.count_waiting("acme", "d") == 1


def test_pages_and_filters_newest_first(ddb) -> None:
    store = ReviewStore()
    for n in range(1, 6):
        store.send(_item(n, case=f"c{n}", tags=["t", f"only{n}"]), None, 10)
    store.send(_item(6, case="c6", agent="b"), None, 10)
    page = store.page("acme", "d", state=None, agent_id=None, tag=None, limit=4, start=None)
    assert [i.answered_at_ms for i in page.items] == [6, 5, 4, 3]
    rest = store.page(
        "acme", "d", state=None, agent_id=None, tag=None, limit=4, start=page.next_start
    )
    assert [i.answered_at_ms for i in rest.items] == [2, 1] and rest.next_start is None
    mine = store.page("acme", "d", state="waiting", agent_id="b", tag=None, limit=10, start=None)
    assert [i.agent_id for i in mine.items] == ["b"]
    tagged = store.page("acme", "d", state=None, agent_id=None, tag="only2", limit=10, start=None)
    assert [i.case_id for i in tagged.items] == ["c2"]


def _run_with_attempt() -> tuple[Run, Attempt]:
    stores.OrganizationStore().ensure("acme", concurrency_limit=3, now_iso=T0)
    runs = stores.RunStore()
    run = a_run("r1", cases=1)
    runs.create(run)
    attempt = Attempt(
        run_id="r1",
        attempt_key="candidate#c1#001",
        recorded_key="0000000000001#candidate#c1#001",
        arm_id="candidate",
        case_id="c1",
        attempt=1,
        state="incomplete",
        recorded_at=T0,
    )
    runs.record_attempt(
        runs.get("acme", "r1"),
        attempt,
        counters={"recorded": 1},
        lane=0,
        claim=None,
        release_slot=False,
        now_ms=1,
    )
    return run, attempt


def _decision(item: ReviewItem, seen: int | None) -> Decision:
    after = replace(item, state="decided", verdict="pass", decided_by="ana", version=1)
    audit = ReviewAudit(
        audit_id="a1",
        org_id="acme",
        dataset_id="d",
        item_id=item.item_id,
        action="decide",
        by="ana",
        at=T0,
        state_before="waiting",
        state_after="decided",
        verdict_after="pass",
        runs=[{"run_id": "r1", "before": {"passed": 0}, "after": {"passed": 1}}],
    )
    review = {"verdict": "pass", "item_id": item.item_id, "by": "ana", "at": T0}
    return Decision(
        item, after, audit, "r1", item.attempt_key, review, [StaleRun("r1", seen)], [], Mark.RELEASE
    )


def test_a_decision_writes_everything_in_one_transaction_or_nothing(ddb) -> None:
    _run_with_attempt()
    store, runs = ReviewStore(), stores.RunStore()
    item = _item(1)
    store.send(item, None, 10)
    # The run was graded since it was read: nothing of the decision is written.
    assert not store.decide(_decision(item, seen=5))
    kept = store.get("acme", "d", item.item_id)
    assert kept is not None and kept.state == "waiting"
    assert store.audit("acme", "d") == []
    assert runs.get_attempt("acme", "r1", item.attempt_key).review is None  # type: ignore[union-attr]
    assert store.decide(_decision(item, seen=None))
    kept = store.get("acme", "d", item.item_id)
    assert kept is not None and (kept.state, kept.verdict, kept.version) == ("decided", "pass", 1)
    assert runs.get_attempt("acme", "r1", item.attempt_key).review["verdict"] == "pass"  # type: ignore[union-attr,index]
    run = runs.get("acme", "r1")
    assert run is not None and run.outcome_stale and run.regrades == 1
    [entry] = store.audit("acme", "d", item.item_id)
    assert entry.runs[0]["after"] == {"passed": 1}
    assert store.count_waiting("acme", "d") == 0
    assert store.waiting("acme", "d", [("c1", "a")]) == {}
    # The same decision again finds the item decided: refused.
    assert not store.decide(_decision(item, seen=1))


def test_forgetting_a_run_frees_its_waiting_items(ddb) -> None:
    store = ReviewStore()
    store.send(_item(1), None, 10)
    store.send(_item(2, case="c2", run_id="r2"), None, 10)
    assert store.forget_run("acme", "d", "r1") == 1
    assert store.count_waiting("acme", "d") == 1
    assert store.waiting("acme", "d", [("c1", "a")]) == {}
    store.delete_queue("acme", "d")
    assert (
        store.page("acme", "d", state=None, agent_id=None, tag=None, limit=5, start=None).items
        == []
    )
