"""The suites' rules (docs/guides/suites.md: when a suite runs, one run at a time, pausing, the
schedule, who is told) on fakes."""

from __future__ import annotations

from dataclasses import replace
from datetime import UTC, datetime
from typing import Any

import pytest

from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.access import Member
from chalicelib.domain.enums import TriggerKind
from chalicelib.domain.events import Event, GateDropped
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Suite
from chalicelib.domain.suite_rules import SuiteDecision, SuiteResult
from chalicelib.errors import ConflictError
from chalicelib.services import environments, suites
from tests.fakes import START, FakeContainer

ANA = Identity("acme", "ana@example.com")
NOW_MS = epoch_ms(START)  # 2026-12-01T09:00:00Z
NO_VERSION = "its environment serves no published version of the agent to check"
BUSY = {"active_run_id": "r0", "active_trigger": {"kind": "manual", "version": 1, "run_id": "r0"}}
"""A suite with a run going (of version 1): what is triggered waits."""


@pytest.fixture(autouse=True)
def members(c: FakeContainer) -> None:
    """ana and bob are editors of acme: a suite runs with its owner's authority as it is then."""
    for user in (ANA.user_id, "bob"):
        c.members.put(Member("acme", user, "editor"), new=True)


def _suite(c: FakeContainer, suite_id: str = "s1", **fields: Any) -> Suite:
    """A suite of agent `a` checking what `prod` serves, owned by ana; `prod` serves nothing yet.
    Named `nightly` (`s1`) or its id: names are unique per agent."""
    if not c.environments.list("acme"):
        environments.create(c, ANA, environment_id="prod")
    suite = Suite(
        suite_id=suite_id,
        org_id="acme",
        agent_id="a",
        name="nightly" if suite_id == "s1" else suite_id,
        dataset_id="d",
        environment_id="prod",
        owner=ANA.user_id,
        created_at="2026-12-01T08:00:00.000Z",
        updated_at="2026-12-01T08:00:00.000Z#00000000",
        **fields,
    )
    c.suites.create(suite)
    return suite


def _kept(c: FakeContainer, suite_id: str = "s1") -> Suite:
    kept = c.suites.get("acme", "a", suite_id)
    assert kept is not None
    return kept


def _waiting(due_at_ms: int, *, version: int | None = None, kind: str = "manual") -> dict[str, Any]:
    return {
        "kind": kind,
        "kinds": [kind],
        "version": version,
        "by": None,
        "baseline_version": None,
        "promotion_id": None,
        "due_at_ms": due_at_ms,
        "at": "2026-12-01T08:59:00.000Z",
    }


def test_a_trigger_for_a_waiting_version_is_absorbed_and_the_run_going_answers_its_own(
    c: FakeContainer,
) -> None:
    suite = _suite(c, **BUSY)
    assert suites.trigger(c, suite, TriggerKind.DEPENDENCY, version=2, delay_s=60)
    assert suites.trigger(c, suite, TriggerKind.MANUAL, version=2, by="bob")
    assert suites.trigger(c, suite, TriggerKind.PUBLISH, version=3, baseline_version=2)
    assert suites.trigger(c, suite, TriggerKind.MANUAL, version=1)  # the run going checks 1
    assert suites.trigger(
        c, suite, TriggerKind.GATE, version=1, promotion_id="p1"
    )  # a gate is not answered
    kept = _kept(c)
    assert [
        (p["version"], p["kind"], p["kinds"], p["due_at_ms"], p["by"]) for p in kept.pending
    ] == [
        (
            2,
            "dependency",
            ["dependency", "manual"],
            NOW_MS,
            "bob",
        ),  # the earlier due time of the two
        (3, "publish", ["publish"], NOW_MS, None),
        (1, "gate", ["gate"], NOW_MS, None),
    ]
    assert kept.due_at_ms == NOW_MS
    assert kept.active_run_id == "r0"  # one run at a time: nothing started


def test_a_paused_suite_takes_no_trigger_even_when_paused_since_it_was_read(
    c: FakeContainer,
) -> None:
    suite = _suite(c)
    c.suites.kept[("acme", "a", "s1")] = replace(
        suite, paused=True, paused_reason="by hand", updated_at="later"
    )
    assert suites.trigger(c, suite, TriggerKind.MANUAL, version=2) is False
    kept = _kept(c)
    assert (kept.pending, kept.due_at_ms, c.suites.results("acme", "a", "s1")) == ([], None, [])
    assert (
        suites.trigger(c, replace(suite, suite_id="gone"), TriggerKind.MANUAL, version=2) is False
    )


def test_pausing_drops_the_waiting_triggers_and_refuses_the_gates_among_them(
    c: FakeContainer, events: list[Event]
) -> None:
    stale = _suite(c, **BUSY)
    suites.trigger(c, stale, TriggerKind.GATE, version=2, promotion_id="p1", baseline_version=1)
    suites.trigger(c, stale, TriggerKind.MANUAL, version=3)
    suites.pause(c, stale, "maintenance")  # given the suite as read before the triggers
    kept = _kept(c)
    assert (kept.paused, kept.paused_reason, kept.pending, kept.due_at_ms) == (
        True,
        "maintenance",
        [],
        None,
    )
    assert events == [
        GateDropped(
            "acme", "a", "p1", "guard s1 was paused before it checked the version: maintenance"
        )
    ]


def test_advance_loses_its_claim_to_another_worker_and_starts_nothing(c: FakeContainer) -> None:
    _suite(c, pending=[_waiting(NOW_MS - 1000)], due_at_ms=NOW_MS - 1000)

    def other_claims(s: Suite) -> Suite:
        return replace(
            s,
            pending=[],
            active_run_id=suites.STARTING,
            active_trigger={**s.pending[0], "claimed_at_ms": NOW_MS},
            due_at_ms=NOW_MS + 300_000,
        )

    c.suites.interfere(other_claims)
    assert suites.advance(c, "acme", "a", "s1") is None
    kept = _kept(c)
    assert (kept.active_run_id, kept.pending, kept.due_at_ms) == ("starting", [], NOW_MS + 300_000)
    assert c.suites.results("acme", "a", "s1") == []  # the other worker's start: not done twice
    assert c.suites.lost == 1


def test_advance_claims_again_after_an_unrelated_write_and_a_trigger_that_cannot_run_is_not_run(
    c: FakeContainer,
) -> None:
    _suite(c, pending=[_waiting(NOW_MS - 1000)], due_at_ms=NOW_MS - 1000)
    c.suites.interfere(lambda s: replace(s, name="renamed"))
    assert suites.advance(c, "acme", "a", "s1") is None  # nothing started: prod serves no version
    [result] = c.suites.results("acme", "a", "s1")
    assert (result.result, result.reasons, result.trigger["kind"], result.run_id) == (
        "not_run",
        [NO_VERSION],
        "manual",
        None,
    )
    kept = _kept(c)
    assert kept.name == "renamed"  # the other worker's write stands
    assert (kept.active_run_id, kept.active_trigger, kept.pending, kept.due_at_ms) == (
        None,
        None,
        [],
        None,
    )
    assert (
        kept.last_result["result"] == "not_run"
        and kept.last_result["result_id"] == result.result_id
    )
    assert c.suites.lost == 1


def test_the_tick_fires_a_missed_schedule_once_on_its_local_clock_and_never_while_paused(
    c: FakeContainer,
) -> None:
    daily = {"cron": "0 6 * * *", "timezone": "UTC"}
    toronto = {"cron": "0 6 * * *", "timezone": "America/Toronto"}  # 06:00 EST is 11:00 UTC
    _suite(
        c,
        "utc",
        triggers={"schedule": daily},
        **BUSY,
        next_fire_at_ms=epoch_ms(datetime(2026, 11, 29, 6, tzinfo=UTC)),
    )  # three fires missed
    _suite(
        c,
        "toronto",
        triggers={"schedule": toronto},
        **BUSY,
        next_fire_at_ms=epoch_ms(datetime(2026, 11, 30, 11, tzinfo=UTC)),
    )
    _suite(
        c,
        "paused",
        triggers={"schedule": daily},
        paused=True,
        next_fire_at_ms=epoch_ms(datetime(2026, 12, 1, 6, tzinfo=UTC)),
    )
    assert suites.tick(c) == {"fired": 2, "started": 0, "cleared": 0}
    assert _kept(c, "utc").next_fire_at_ms == epoch_ms(datetime(2026, 12, 2, 6, tzinfo=UTC))
    assert _kept(c, "toronto").next_fire_at_ms == epoch_ms(datetime(2026, 12, 1, 11, tzinfo=UTC))
    assert _kept(c, "paused").next_fire_at_ms == epoch_ms(datetime(2026, 12, 2, 6, tzinfo=UTC))
    assert [(p["kind"], p["version"]) for p in _kept(c, "utc").pending] == [("schedule", None)]
    assert _kept(c, "paused").pending == []
    assert suites.tick(c) == {
        "fired": 0,
        "started": 0,
        "cleared": 0,
    }  # nothing due again before 11:00


def test_the_tick_puts_back_the_trigger_of_a_start_that_died(c: FakeContainer) -> None:
    claimed = NOW_MS - suites.STALE_START_MS  # five minutes ago, and no run written since
    _suite(
        c,
        active_run_id=suites.STARTING,
        active_trigger={**_waiting(claimed - 1), "claimed_at_ms": claimed},
        due_at_ms=claimed,
    )
    assert suites.tick(c) == {"fired": 0, "started": 0, "cleared": 1}
    [result] = c.suites.results(
        "acme", "a", "s1"
    )  # tried again: this time it says why it cannot run
    assert (result.result, result.reasons) == ("not_run", [NO_VERSION])
    assert (_kept(c).active_run_id, _kept(c).due_at_ms) == (None, None)


def test_a_bad_result_tells_the_owner_once_until_a_good_one(c: FakeContainer) -> None:
    suite = _suite(c)
    suites.trigger(c, suite, TriggerKind.MANUAL, version=None)
    suites.trigger(c, suite, TriggerKind.MANUAL, version=None)
    assert [r.result for r in c.suites.results("acme", "a", "s1")] == ["not_run", "not_run"]
    [notice] = c.notifications.of("acme", ANA.user_id)
    assert notice.title == "Suite nightly: not run on version None"
    assert notice.body.splitlines() == [
        "Suite nightly of agent a came out not_run on version None.",
        f"- {NO_VERSION}",
    ]
    assert notice.emailed and [to for to, _, _ in c.mailer.sent] == [ANA.user_id]
    assert _kept(c).notified == {"None": True}
    suites.record(  # a passed result, kept by hand
        c,
        _kept(c),
        {"kind": "manual", "version": None},
        None,
        SuiteDecision(SuiteResult.PASSED),
        started="2026-12-01T09:00:00.000Z",
    )
    assert _kept(c).notified == {"None": False}
    suites.trigger(c, suite, TriggerKind.MANUAL, version=None)
    assert len(c.notifications.of("acme", ANA.user_id)) == 2


def test_whoever_changes_a_suite_owns_it_and_a_lost_write_is_decided_again(
    c: FakeContainer,
) -> None:
    c.agents.seed("acme", "a")  # no published version yet: the price says so
    _suite(c, notified={"1": True})
    c.suites.interfere(lambda s: replace(s, last_result={"result": "passed"}))
    bob = Identity("acme", "bob")
    changed, price = suites.update(c, bob, "a", "s1", {"name": "renamed"})
    at = iso(START)
    assert (changed.name, changed.owner, changed.notified) == (
        "renamed",
        "bob",
        {},
    )  # bob is told from now on
    assert changed.history == [
        {"at": at, "by": "bob", "change": "owner", "old": ANA.user_id, "new": "bob"},
        {"at": at, "by": "bob", "change": "updated", "fields": ["name"]},
    ]
    assert changed.last_result == {"result": "passed"}  # the other worker's write stands
    assert changed.updated_at.startswith(f"{at}#")
    assert price == suites.SuitePrice(note="the agent has no published version to check yet")
    c.suites.interfere(*[lambda s: replace(s, name="theirs")] * 10)
    with pytest.raises(ConflictError, match="suite s1 keeps changing"):
        suites.update(c, bob, "a", "s1", {"name": "mine"})
    assert _kept(c).name == "theirs"


def test_a_publish_is_taken_once_per_suite(c: FakeContainer) -> None:
    _suite(c, triggers={"on_publish": True}, **BUSY)
    _suite(c, "manual-only", **BUSY)
    suites.on_published(c, "acme", "a", 2)
    suites.on_published(c, "acme", "a", 2)  # a redelivered publish event
    kept = _kept(c)
    assert kept.published_seen == [2]
    assert [(p["kind"], p["version"], p["baseline_version"]) for p in kept.pending] == [
        ("publish", 2, 1)
    ]
    assert _kept(c, "manual-only").pending == []


@pytest.mark.parametrize(
    ("lose", "reason"),
    [
        (lambda c: c.members.remove("acme", ANA.user_id), "is no longer a member"),
        (
            lambda c: c.members.put(Member("acme", ANA.user_id, "viewer"), new=False),
            "can no longer run it (no agents:edit)",
        ),
        (
            lambda c: c.members.put(Member("acme", ANA.user_id, "runner"), new=False),
            "can no longer run it (no agents:edit)",
        ),
    ],
)
def test_a_suite_whose_owner_cannot_run_it_pauses_with_the_reason_until_saved_again(
    c: FakeContainer, lose: Any, reason: str
) -> None:
    c.agents.seed("acme", "a")
    _suite(c)
    lose(c)
    suites.trigger(c, _kept(c), TriggerKind.SCHEDULE, version=1)
    kept = _kept(c)
    assert kept.paused and kept.paused_reason.startswith(f"its owner {ANA.user_id} {reason}")
    [result] = c.suites.results("acme", "a", "s1", 10)
    assert (result.result, result.reasons) == ("not_run", [kept.paused_reason])
    assert c.runs.list_by_org("acme", limit=10).runs == []  # nothing was asked, nothing spent
    # somebody who may run it saves it: they own it, and it runs again
    saved, _ = suites.update(c, Identity("acme", "bob"), "a", "s1", {"name": "mine now"})
    assert (saved.owner, saved.paused, saved.paused_reason) == ("bob", False, None)


def test_a_suite_paused_by_hand_stays_paused_when_saved() -> None:
    c = FakeContainer()
    c.members.put(Member("acme", ANA.user_id, "editor"), new=True)
    c.agents.seed("acme", "a")
    _suite(c, paused=True, paused_reason="paused by ana@example.com")
    saved, _ = suites.update(c, ANA, "a", "s1", {"name": "renamed"})
    assert saved.paused and saved.paused_reason == "paused by ana@example.com"
