"""Promotions and their gates (docs/guides/suites.md) on fakes:
a guard's result decides a waiting promotion, once; one promotion at a time per (agent,
environment)."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from chalicelib.domain.events import GateDecided
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Promotion, Suite
from chalicelib.errors import ConflictError
from chalicelib.services import environments, event_handlers, promotions, suites
from tests.fakes import FakeContainer

ANA = Identity("acme", "ana")


@pytest.fixture
def c() -> FakeContainer:
    """Agent `a` has versions 1 to 3; `prod` serves version 1 of it; `staging` serves nothing."""
    c = FakeContainer()
    c.agents.seed("acme", "a", versions=3)
    environments.create(c, ANA, environment_id="prod")
    environments.create(c, ANA, environment_id="staging")
    assert c.environments.serve("acme", "prod", "a", 1, expect=None)
    return c


def _guard(c: FakeContainer, suite_id: str, **fields: Any) -> None:
    """A guard of `prod` with a run going, so that its gate waits (the run is not started here)."""
    c.suites.create(
        Suite(
            suite_id=suite_id,
            org_id="acme",
            agent_id="a",
            dataset_id="d",
            environment_id="prod",
            guards=True,
            owner="ana",
            created_at="2026-12-01T08:00:00.000Z",
            updated_at="2026-12-01T08:00:00.000Z#0",
            active_run_id="r0",
            active_trigger={"kind": "manual", "version": 1, "run_id": "r0"},
            **fields,
        )
    )


def _kept(c: FakeContainer, promotion: Promotion) -> Promotion:
    kept = c.promotions.get("acme", "a", promotion.promotion_id)
    assert kept is not None
    return kept


def _decided(promotion: Promotion, suite_id: str, result: str, *reasons: str) -> GateDecided:
    return GateDecided(
        "acme", "a", promotion.promotion_id, suite_id, result, f"run-{suite_id}", reasons
    )


def test_without_guards_a_promotion_is_served_at_once(c: FakeContainer) -> None:
    done = promotions.promote(c, ANA, "a", "prod", 2)
    assert (done.status, done.from_version, done.reason, done.decided_at) == (
        "promoted",
        1,
        None,
        "2026-12-01T09:00:00.000Z",
    )
    assert environments.served(c, "acme", "prod", "a") == 2
    assert c.promotions.lock_holder("acme", "a", "prod") is None


def test_a_guarded_promotion_waits_for_its_gate_and_holds_the_environment(c: FakeContainer) -> None:
    _guard(c, "g1")
    waiting = promotions.promote(c, ANA, "a", "prod", 2)
    assert (waiting.status, waiting.guards) == ("waiting", {"g1": {"result": None}})
    [gate] = c.suites.kept[("acme", "a", "g1")].pending
    assert (gate["kind"], gate["version"], gate["baseline_version"], gate["promotion_id"]) == (
        "gate",
        2,
        1,
        waiting.promotion_id,
    )
    assert c.promotions.lock_holder("acme", "a", "prod") == waiting.promotion_id
    with pytest.raises(
        ConflictError, match=f"promotion {waiting.promotion_id} onto prod is still waiting"
    ):
        promotions.promote(c, ANA, "a", "prod", 3)
    assert (
        promotions.promote(c, ANA, "a", "staging", 3).status == "promoted"
    )  # another environment is free
    assert environments.served(c, "acme", "prod", "a") == 1


def test_a_passing_gate_serves_the_version_and_frees_the_environment(c: FakeContainer) -> None:
    _guard(c, "g1")
    waiting = promotions.promote(c, ANA, "a", "prod", 2)
    promotions.on_gate_decided(c, _decided(waiting, "g1", "passed"))
    done = _kept(c, waiting)
    assert (done.status, done.reason) == ("promoted", None)
    assert done.guards == {"g1": {"result": "passed", "run_id": "run-g1", "reasons": []}}
    assert environments.served(c, "acme", "prod", "a") == 2
    assert c.promotions.lock_holder("acme", "a", "prod") is None


def test_a_failing_gate_refuses_the_promotion_and_it_is_decided_once(c: FakeContainer) -> None:
    _guard(c, "g1")
    _guard(c, "g2")
    waiting = promotions.promote(c, ANA, "a", "prod", 2)
    promotions.on_gate_decided(c, _decided(waiting, "g1", "failed", "2 cases broke"))
    refused = _kept(c, waiting)
    assert (refused.status, refused.reason) == (
        "refused",
        "guard g1 came out failed: 2 cases broke",
    )
    assert c.promotions.lock_holder("acme", "a", "prod") is None
    c.clock.at = c.clock.at.replace(hour=10)
    promotions.on_gate_decided(c, _decided(waiting, "g2", "passed"))  # too late: decided already
    promotions.refuse(c, "acme", "a", waiting.promotion_id, "guard g2 was paused")
    assert _kept(c, waiting) == refused
    assert environments.served(c, "acme", "prod", "a") == 1


def test_two_gates_passing_at_once_both_count_and_the_version_is_served(c: FakeContainer) -> None:
    _guard(c, "g1")
    _guard(c, "g2")
    waiting = promotions.promote(c, ANA, "a", "prod", 2)
    # g2's result is kept by another worker just before g1's: g1's write is lost and decided again.
    c.promotions.interfere(lambda p: replace(p, guards={**p.guards, "g2": {"result": "passed"}}))
    promotions.on_gate_decided(c, _decided(waiting, "g1", "passed"))
    done = _kept(c, waiting)
    assert done.status == "promoted"
    assert {k: g["result"] for k, g in done.guards.items()} == {"g1": "passed", "g2": "passed"}
    assert environments.served(c, "acme", "prod", "a") == 2


def test_a_paused_guard_is_refused_before_anything_waits(c: FakeContainer) -> None:
    _guard(c, "g1", paused=True, paused_reason="paused by ana")
    with pytest.raises(
        ConflictError, match=r"suite g1 guards prod and is paused \(paused by ana\)"
    ):
        promotions.promote(c, ANA, "a", "prod", 2)
    assert c.promotions.of_agent("acme", "a") == []
    assert c.promotions.lock_holder("acme", "a", "prod") is None


def test_a_guard_paused_while_a_promotion_waits_refuses_it(c: FakeContainer) -> None:
    event_handlers.wire()
    _guard(c, "g1")
    waiting = promotions.promote(c, ANA, "a", "prod", 2)
    suites.pause(
        c, c.suites.kept[("acme", "a", "g1")], "maintenance"
    )  # GateDropped, as wired in bootstrap
    refused = _kept(c, waiting)
    assert (refused.status, refused.reason) == (
        "refused",
        "guard g1 was paused before it checked the version: maintenance",
    )
    assert c.promotions.lock_holder("acme", "a", "prod") is None
