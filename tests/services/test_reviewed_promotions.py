"""Promotions and guard results that passed through review (docs/guides/suites.md, "Results that
passed through review") on fakes: a replaced result moves nothing by itself, the tick included;
an explicit promotion stands on a reviewed pass that still holds; the guard status reads each
guard's state, naming reviewers from the members as they are now."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from chalicelib.domain.access import Member
from chalicelib.domain.events import Event, GateDecided
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Dataset, DatasetCase, Promotion, Suite, SuiteResultEntry
from chalicelib.errors import NotFoundError
from chalicelib.services import environments, guard_status, promotions, suites
from tests.fakes import FakeContainer

ANA = Identity("acme", "ana")
SCORING = {"required": ["judge"], "settings": {"judge": {"judge_id": "j1"}}}
"""Graded by judge j1: a guard pins its version, so moving the pin changes the grading."""
THRESHOLD = {"min_pass_rate": 0.5, "max_regressions": 0}


@pytest.fixture
def c() -> FakeContainer:
    """Agent `a` has versions 1 to 3; `prod` serves version 1; dataset `d` has version 1; ana and
    rui are members of acme."""
    c = FakeContainer()
    c.agents.seed("acme", "a", versions=3)
    environments.create(c, ANA, environment_id="prod")
    assert c.environments.serve("acme", "prod", "a", 1, expect=None)
    c.datasets.create(
        Dataset(version=0, org_id="acme", dataset_id="d", created_at="2026-12-01T08:00:00.000Z")
    )
    _dataset_version(c, 1, SCORING)
    for user in ("ana", "rui"):
        c.members.put(Member("acme", user, "editor"), new=True)
    return c


def _dataset_version(c: FakeContainer, version: int, scoring: dict[str, Any]) -> None:
    c.datasets.add_version(
        Dataset(
            version=version,
            org_id="acme",
            dataset_id="d",
            created_at="2026-12-01T08:00:00.000Z",
            scoring=scoring,
            case_count=1,
        ),
        [DatasetCase(case_id="c1", case={"input": "q", "reference": "42"})],
    )


def _guard(c: FakeContainer, suite_id: str = "g1", **fields: Any) -> Suite:
    """A guard of `prod` pinned to dataset version 1, with a run going (a gate waits)."""
    suite = Suite(
        suite_id=suite_id,
        org_id="acme",
        agent_id="a",
        dataset_id="d",
        environment_id="prod",
        guards=True,
        threshold=THRESHOLD,
        pins={"dataset_version": 1, "judge_version": None},
        owner="ana",
        created_at="2026-12-01T08:00:00.000Z",
        updated_at="2026-12-01T08:00:00.000Z#0",
        active_run_id="r0",
        active_trigger={"kind": "manual", "version": 1, "run_id": "r0"},
        **fields,
    )
    c.suites.create(suite)
    return suite


def _gate(
    c: FakeContainer, promotion: Promotion, suite_id: str, result: str, run_id: str
) -> SuiteResultEntry:
    """The guard's gate comes out `result`: kept with what it was measured on, then decided, as
    `suite_results.record` does."""
    suite = c.suites.get("acme", "a", suite_id)
    assert suite is not None
    kept = SuiteResultEntry(
        suite_id=suite_id,
        started_key=f"2026-12-01T09:00:0{len(c.suites.results('acme', 'a', suite_id))}Z#{run_id}",
        result_id=run_id,
        org_id="acme",
        agent_id="a",
        trigger={"kind": "gate", "version": promotion.version, "baseline_version": 1},
        version=promotion.version,
        run_id=run_id,
        purpose="gate",
        result=result,
        reasons=[] if result == "passed" else ["1 confirmed regression"],
        started_at="2026-12-01T09:00:00.000Z",
        completed_at="2026-12-01T09:05:00.000Z",
        measured=dict(guard_status.measure_now(c, "acme", suite, promotion.from_version)),
    )
    assert c.suites.add_result(kept)
    promotions.on_gate_decided(
        c,
        GateDecided(
            "acme", "a", promotion.promotion_id, suite_id, result, run_id, tuple(kept.reasons)
        ),
    )
    return kept


def _reviewed(
    c: FakeContainer, kept: SuiteResultEntry, result: str = "passed", *by: str
) -> SuiteResultEntry:
    """People's verdicts turn the result into `result` (what the review work writes)."""
    after = replace(
        kept,
        result=result,
        result_before_review=kept.result_before_review or kept.result,
        reviewed_by=list(by or ("rui",)),
        reasons=[],
    )
    assert c.suites.replace_result(kept, after)
    return after


def _refused(c: FakeContainer) -> tuple[Promotion, SuiteResultEntry]:
    """v2 was refused by guard g1 (failed); the review then turned g1's result into a pass."""
    _guard(c)
    waiting = promotions.promote(c, ANA, "a", "prod", 2)
    failed = _gate(c, waiting, "g1", "failed", "run-1")
    refused = c.promotions.get("acme", "a", waiting.promotion_id)
    assert refused is not None and refused.status == "refused"
    g1 = c.suites.get("acme", "a", "g1")
    assert g1 is not None and [p["kind"] for p in g1.pending] == ["gate"]
    assert c.suites.replace(g1, replace(g1, pending=[], updated_at="gate run"))  # it ran
    return refused, _reviewed(c, failed)


def test_a_refused_promotion_stays_refused_when_review_turns_its_gate_into_a_pass(
    c: FakeContainer, events: list[Event]
) -> None:
    refused, _ = _refused(c)
    c.clock.at = c.clock.at.replace(hour=10)
    suites.tick(c)
    assert c.promotions.get("acme", "a", refused.promotion_id) == refused
    assert environments.served(c, "acme", "prod", "a") == 1
    assert not [e for e in events if isinstance(e, GateDecided)]  # nothing decided it again
    [result] = c.suites.results("acme", "a", "g1")
    assert (result.result, result.result_before_review, result.reviewed_by) == (
        "passed",
        "failed",
        ["rui"],
    )


def test_an_explicit_promotion_stands_on_the_reviewed_pass_without_running_the_guard(
    c: FakeContainer,
) -> None:
    _, reviewed = _refused(c)
    suites.tick(c)
    done = promotions.promote(c, ANA, "a", "prod", 2)
    assert (done.status, done.from_version, done.reason) == ("promoted", 1, None)
    assert done.guards == {
        "g1": {
            "result": "passed",
            "run_id": "run-1",
            "reasons": [],
            "reviewed_by": ["rui"],
            "reused": True,
        }
    }
    assert environments.served(c, "acme", "prod", "a") == 2
    assert c.promotions.lock_holder("acme", "a", "prod") is None
    g1 = c.suites.get("acme", "a", "g1")
    assert g1 is not None and g1.pending == []  # not run again
    assert c.suites.results("acme", "a", "g1") == [reviewed]


@pytest.mark.parametrize(
    "moved",
    [
        "threshold",
        "dataset version",
        "scoring",
        "baseline",
    ],
)
def test_a_reviewed_pass_that_no_longer_holds_runs_the_guard_again(
    c: FakeContainer, moved: str
) -> None:
    _refused(c)
    g1 = c.suites.get("acme", "a", "g1")
    assert g1 is not None
    if moved == "threshold":
        assert c.suites.replace(
            g1, replace(g1, threshold={"min_pass_rate": 0.9}, updated_at="moved")
        )
    elif moved == "dataset version":
        _dataset_version(c, 2, SCORING)
        assert c.suites.replace(
            g1, replace(g1, pins={**g1.pins, "dataset_version": 2}, updated_at="moved")
        )
    elif moved == "scoring":
        assert c.suites.replace(
            g1, replace(g1, pins={**g1.pins, "judge_version": 2}, updated_at="moved")
        )
    else:
        assert c.environments.serve("acme", "prod", "a", 3, expect=1)
    waiting = promotions.promote(c, ANA, "a", "prod", 2)
    assert (waiting.status, waiting.guards) == ("waiting", {"g1": {"result": None}})
    g1 = c.suites.get("acme", "a", "g1")
    assert g1 is not None and [p["kind"] for p in g1.pending] == ["gate"]


def test_a_pass_the_scorers_gave_is_run_again_and_a_stale_reviewed_pass_too(
    c: FakeContainer,
) -> None:
    refused, reviewed = _refused(c)
    assert c.suites.replace_result(reviewed, replace(reviewed, stale=True))
    waiting = promotions.promote(c, ANA, "a", "prod", 2)
    assert waiting.status == "waiting" and waiting.guards["g1"] == {"result": None}


def test_the_guard_that_runs_decides_and_the_reused_one_is_checked_again_before_serving(
    c: FakeContainer,
) -> None:
    _, reviewed = _refused(c)
    _guard(c, "g2")  # a second guard, with no result of v2
    waiting = promotions.promote(c, ANA, "a", "prod", 2)
    assert waiting.status == "waiting"
    assert waiting.guards["g1"]["reused"] is True and waiting.guards["g2"] == {"result": None}
    # Reviewed again while g2 runs: g1 no longer passes, so the promotion cannot stand on it.
    _reviewed(c, reviewed, "failed", "ana")
    _gate(c, waiting, "g2", "passed", "run-2")
    refused = c.promotions.get("acme", "a", waiting.promotion_id)
    assert refused is not None and refused.status == "refused"
    assert (
        refused.reason == "the reviewed pass of guard g1 (run run-1) no longer holds: promote again"
    )
    assert environments.served(c, "acme", "prod", "a") == 1
    assert c.promotions.lock_holder("acme", "a", "prod") is None


def test_one_guard_reused_and_one_passing_serves_the_version(c: FakeContainer) -> None:
    _refused(c)
    _guard(c, "g2")
    waiting = promotions.promote(c, ANA, "a", "prod", 2)
    _gate(c, waiting, "g2", "passed", "run-2")
    done = c.promotions.get("acme", "a", waiting.promotion_id)
    assert done is not None and done.status == "promoted"
    assert environments.served(c, "acme", "prod", "a") == 2


def _states(c: FakeContainer, who: Identity = ANA) -> dict[str, dict[str, Any]]:
    [env] = guard_status.status(c, who, "a")
    assert env.environment_id == "prod"
    return {
        g.suite.suite_id: {
            "state": g.state.value,
            "run_id": g.result.run_id if g.result else None,
            "why": g.why_out_of_date,
        }
        for g in env.guards
    }


def test_the_guard_status_reads_each_state_with_its_run(c: FakeContainer) -> None:
    _guard(c, "g0")  # never checked
    refused, reviewed = _refused(c)
    assert _states(c) == {
        "g0": {"state": "not_checked", "run_id": None, "why": None},
        "g1": {"state": "corrected", "run_id": "run-1", "why": None},
    }
    # The environment moves on: the result compared v2 with v1, which prod no longer serves.
    assert c.environments.serve("acme", "prod", "a", 3, expect=1)
    assert _states(c)["g1"] == {
        "state": "out_of_date",
        "run_id": "run-1",
        "why": "the environment serves v3 now (it compared with v1)",
    }


@pytest.mark.parametrize(
    ("change", "why"),
    [
        ("threshold", "the threshold changed since"),
        (
            "dataset version",
            "the questions changed: dataset version 2 now (it measured version 1)",
        ),
        ("scoring", "the grading changed: the scoring differs from the one it was graded with"),
    ],
)
def test_a_result_measured_on_something_else_reads_out_of_date_with_its_run(
    c: FakeContainer, change: str, why: str
) -> None:
    _refused(c)
    g1 = c.suites.get("acme", "a", "g1")
    assert g1 is not None
    if change == "threshold":
        moved = replace(g1, threshold={**THRESHOLD, "max_regressions": 2})
    elif change == "dataset version":
        _dataset_version(c, 2, SCORING)
        moved = replace(g1, pins={**g1.pins, "dataset_version": 2})
    else:  # the guard's judge pin moved (`move_pins`)
        moved = replace(g1, pins={**g1.pins, "judge_version": 3})
    assert c.suites.replace(g1, replace(moved, updated_at="moved"))
    assert _states(c)["g1"] == {"state": "out_of_date", "run_id": "run-1", "why": why}


def test_plain_results_read_passed_or_failed(c: FakeContainer) -> None:
    _guard(c)
    waiting = promotions.promote(c, ANA, "a", "prod", 2)
    _gate(c, waiting, "g1", "failed", "run-1")
    assert _states(c)["g1"]["state"] == "failed"
    waiting = promotions.promote(c, ANA, "a", "prod", 3)
    _gate(c, waiting, "g1", "passed", "run-2")
    assert environments.served(c, "acme", "prod", "a") == 3
    # The passing gate of v3 is a result of the very version prod serves now: it holds.
    assert _states(c)["g1"] == {"state": "passed", "run_id": "run-2", "why": None}


def test_reviewers_are_named_from_the_members_now_and_another_org_finds_no_agent(
    c: FakeContainer,
) -> None:
    _refused(c)
    members = guard_status.members_now(c, "acme")
    [env] = guard_status.status(c, ANA, "a")
    [g1] = env.guards
    assert guard_status.reviewers(g1.result.reviewed_by if g1.result else [], members) == [
        {"user_id": "rui", "name": "rui"}
    ]
    c.members.remove("acme", "rui")
    assert guard_status.reviewers(["rui"], guard_status.members_now(c, "acme")) == [
        {"user_id": "rui", "name": None}
    ]
    with pytest.raises(NotFoundError):
        guard_status.status(c, Identity("globex", "eve"), "a")
