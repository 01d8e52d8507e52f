"""The automation stores against moto's server over HTTP (issue 10, scope 2): records in and out,
a suite's sparse index flags following its times, every write conditional on what was read."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib import retrying
from chalicelib.adapters import stores, tables
from chalicelib.adapters.stores import suite_names
from chalicelib.domain.records import Notification, Promotion, Suite, SuiteResultEntry
from chalicelib.errors import ConflictError
from tests.integration.conftest import seed_agent_and_dataset, store_tables

PREFIX = "automation-"
T0 = "2026-12-01T09:00:00.000Z"


pytestmark = pytest.mark.usefixtures("models_put_back")


@pytest.fixture
def ddb(moto: MotoHandle, monkeypatch: pytest.MonkeyPatch) -> Any:
    """Every table of assay on a wiped moto, agent `a` and dataset `d` of `acme` in it; a raw
    client to read items as stored."""
    client = store_tables(moto, monkeypatch, PREFIX)
    seed_agent_and_dataset()
    return client


def _suite(**fields: Any) -> Suite:
    return Suite(
        **{
            "suite_id": "s1",
            "org_id": "acme",
            "agent_id": "a",
            "dataset_id": "d",
            "owner": "ana",
            "created_at": T0,
            "updated_at": f"{T0}#1",
            **fields,
        }
    )


def _item(ddb: Any) -> dict[str, Any]:
    return ddb.get_item(
        TableName=tables.table_name(tables.SuiteRow),
        Key={"agent_key": {"S": "acme#a"}, "suite_id": {"S": "s1"}},
    )["Item"]


def test_a_suite_is_in_the_tick_s_indexes_while_its_times_are_set(ddb):
    suites = stores.SuiteStore()
    suites.create(_suite(next_fire_at_ms=1_000))
    assert (_item(ddb)["fire_flag"], "due_flag" in _item(ddb)) == ({"S": "1"}, False)
    assert [s.suite_id for s in suites.due_to_fire(1_000)] == ["s1"] and suites.due_to_start(
        10**13
    ) == []
    before = suites.get("acme", "a", "s1")
    assert before == _suite(next_fire_at_ms=1_000)  # the record as kept, no flag in it
    assert suites.replace(
        before, replace(before, next_fire_at_ms=None, due_at_ms=2_000, updated_at=f"{T0}#2")
    )
    assert ("fire_flag" in _item(ddb), _item(ddb)["due_flag"]) == (False, {"S": "1"})
    assert suites.due_to_fire(10**13) == [] and [
        s.due_at_ms for s in suites.due_to_start(2_000)
    ] == [2_000]


def test_a_suite_is_written_only_as_read_and_only_with_a_new_stamp(ddb):
    suites = stores.SuiteStore()
    suites.create(_suite())
    with pytest.raises(ConflictError):
        suites.create(_suite(name="again"))
    read = suites.get("acme", "a", "s1")
    assert suites.replace(read, replace(read, name="first", updated_at=f"{T0}#2"))
    assert not suites.replace(
        read, replace(read, name="stale", updated_at=f"{T0}#3")
    )  # read before "first"
    with pytest.raises(ValueError, match="new updated_at"):
        suites.replace(read, replace(read, name="unstamped"))
    assert suites.get("acme", "a", "s1").name == "first"


def _reservations(ddb: Any) -> dict[str, str]:
    """`{name key: suite id}` of the agent's name reservations, as stored."""
    items = ddb.query(
        TableName=tables.table_name(tables.SuiteRow),
        KeyConditionExpression="agent_key = :k AND begins_with(suite_id, :p)",
        ExpressionAttributeValues={":k": {"S": "acme#a"}, ":p": {"S": "name#"}},
        ConsistentRead=True,
    )["Items"]
    return {i["name"]["S"]: i["reserved_by"]["S"] for i in items}


def test_a_name_is_one_suite_s_by_a_conditional_write_moved_by_a_rename_freed_by_a_delete(ddb):
    suites = stores.SuiteStore()
    suites.create(_suite(name="Nightly"))
    with pytest.raises(ConflictError) as taken:
        suites.create(_suite(suite_id="s2", name=" NIGHTLY"))
    assert (taken.value.field, taken.value.details["suite_id"]) == ("name", "s1")
    suites.create(_suite(suite_id="s2", name="Weekly"))
    assert _reservations(ddb) == {"nightly": "s1", "weekly": "s2"}
    assert [s.suite_id for s in suites.of_agent("acme", "a")] == ["s1", "s2"]
    assert suites.get("acme", "a", suite_names.item_id("nightly")) is None  # no suite

    s2 = suites.get("acme", "a", "s2")
    with pytest.raises(ConflictError) as renamed:
        suites.replace(s2, replace(s2, name="nightly", updated_at=f"{T0}#2"))
    assert renamed.value.field == "name"
    assert suites.get("acme", "a", "s2") == s2  # nothing of the refused rename was written
    assert suites.replace(s2, replace(s2, name="Monthly", updated_at=f"{T0}#2"))
    assert _reservations(ddb) == {"nightly": "s1", "monthly": "s2"}
    suites.delete("acme", "a", "s1")
    assert _reservations(ddb) == {"monthly": "s2"}
    suites.create(_suite(suite_id="s3", name="Nightly"))
    assert _reservations(ddb) == {"nightly": "s3", "monthly": "s2"}


def test_change_decides_again_after_a_write_it_lost(ddb):
    suites = stores.SuiteStore()
    suites.create(_suite(pending=[]))
    seen: list[list[Any]] = []

    def add_one(s: Suite) -> Suite:
        seen.append(s.pending)
        if len(seen) == 1:  # another worker writes between this read and its write
            assert suites.replace(s, replace(s, pending=["theirs"], updated_at=f"{T0}#other"))
        return replace(s, pending=[*s.pending, "mine"], updated_at=f"{T0}#{len(seen) + 1}")

    def change(suite_id: str):
        return retrying.change(
            lambda: suites.get("acme", "a", suite_id),
            add_one,
            suites.replace,
            conflict="keeps changing",
            field="suite_id",
            pause=lambda: None,
        )

    changed = change("s1")
    assert seen == [[], ["theirs"]] and changed.after.pending == ["theirs", "mine"]
    assert suites.get("acme", "a", "s1").pending == ["theirs", "mine"]
    assert change("gone") is None


def test_a_promotion_holds_its_environment_and_is_decided_once(ddb):
    promotions = stores.PromotionStore()
    waiting = Promotion(
        promotion_id="p1",
        org_id="acme",
        agent_id="a",
        environment_id="prod",
        version=2,
        status="waiting",
        guards={"g1": {"result": None}},
        created_at=T0,
    )
    assert promotions.create_waiting(waiting)
    assert not promotions.create_waiting(replace(waiting, promotion_id="p2"))  # prod is held by p1
    assert promotions.lock_holder("acme", "a", "prod") == "p1"
    assert [p.promotion_id for p in promotions.of_agent("acme", "a")] == [
        "p1"
    ]  # the lock is no promotion
    refused = replace(waiting, status="refused", reason="failed", decided_at=T0)
    assert promotions.decide(waiting, refused)
    assert not promotions.decide(waiting, replace(waiting, status="promoted"))  # decided already
    assert promotions.get("acme", "a", "p1") == refused
    promotions.release_lock(replace(waiting, promotion_id="p2"))  # not the holder: the lock stays
    assert promotions.lock_holder("acme", "a", "prod") == "p1"
    promotions.release_lock(waiting)
    assert promotions.lock_holder("acme", "a", "prod") is None


def test_a_result_is_replaced_only_as_read_and_only_what_differs_is_written(ddb):
    suites = stores.SuiteStore()
    kept = SuiteResultEntry(
        suite_id="s1",
        started_key=f"{T0}#r1",
        result_id="r1",
        org_id="acme",
        agent_id="a",
        trigger={"kind": "gate", "version": 2},
        version=2,
        run_id="r1",
        purpose="gate",
        result="failed",
        reasons=["1 confirmed regression"],
        started_at=T0,
        measured={"dataset_id": "d", "dataset_version": 1, "baseline_version": 1},
    )
    assert suites.add_result(kept)
    reviewed = replace(
        kept, result="passed", result_before_review="failed", reviewed_by=["ana"], reasons=[]
    )
    assert suites.replace_result(kept, reviewed)
    [read] = suites.results("acme", "a", "s1")
    assert read == reviewed and read.measured == kept.measured
    # Read before the review: its result is no longer as read, nothing is written.
    assert not suites.replace_result(kept, replace(kept, reasons=["late"]))
    # `stale` is part of the condition: absent as read, then True as read.
    going = replace(read, stale=True)
    assert suites.replace_result(read, going)
    assert not suites.replace_result(read, replace(read, reviewed_by=["bob"]))
    assert suites.replace_result(going, replace(going, stale=None, reviewed_by=["ana", "bob"]))
    [read] = suites.results("acme", "a", "s1")
    assert (read.stale, read.reviewed_by, read.result) == (None, ["ana", "bob"], "passed")
    item = ddb.get_item(
        TableName=tables.table_name(tables.SuiteResultRow),
        Key={"suite_key": {"S": "acme#a#s1"}, "started_key": {"S": f"{T0}#r1"}},
    )["Item"]
    assert "stale" not in item  # None is removed, never kept as a null
    gone = replace(kept, started_key=f"{T0}#r9", result_id="r9")
    assert not suites.replace_result(gone, replace(gone, result="passed"))
    assert len(suites.results("acme", "a", "s1")) == 1  # a missing result is not created
    with pytest.raises(ValueError, match="key"):
        suites.replace_result(read, replace(read, result_id="other"))


def test_notices_are_kept_per_person_with_their_email_choice_apart(ddb):
    notices = stores.NotificationStore()
    assert notices.email_preference("acme", "ana") is None
    notices.set_email_preference("acme", "ana", False, at=T0)
    for n in ("n1", "n2"):
        notices.add(
            "ana", Notification(notification_id=n, org_id="acme", kind="k", title=n, created_at=T0)
        )
    assert [n.notification_id for n in notices.of("acme", "ana")] == [
        "n2",
        "n1",
    ]  # not the settings
    assert notices.email_preference("acme", "ana") is False
    assert notices.of("acme", "bob") == [] and notices.of("globex", "ana") == []
    assert notices.mark_read("acme", "ana", "n1") and not notices.mark_read("acme", "ana", "n9")
    assert not notices.mark_read("acme", "ana", "#settings")
    notices.mark_emailed("acme", "ana", "n2")
    assert [(n.read, n.emailed) for n in notices.of("acme", "ana")] == [
        (False, True),
        (True, False),
    ]


def test_a_run_leaving_the_line_keeps_the_flag_of_a_run_that_joined_since_it_was_read(ddb) -> None:
    """Issue 11: the write that empties the waiting line drops its flag only if nobody joined
    between the read and the write, else the slot tick would never find the run that joined."""
    orgs = stores.OrganizationStore()
    orgs.ensure("acme", concurrency_limit=2, now_iso=T0)
    orgs.add_waiting("acme", "r1", 1)
    before = orgs.get("acme")
    orgs.add_waiting("acme", "r2", 2)
    assert not orgs._remove_at("acme", "r1", before)  # noqa: SLF001 - the write, decided on a stale read
    orgs.remove_waiting("acme", "r1")  # decided again on what it reads now
    after = orgs.get("acme")
    assert (after.waiting, after.waiting_flag is not None) == (["r2"], True)
    assert [o.org_id for o in orgs.orgs_with_waiting_runs()] == ["acme"]
    orgs.remove_waiting("acme", "r2")
    assert list(orgs.orgs_with_waiting_runs()) == [] and orgs.get("acme").waiting == []
