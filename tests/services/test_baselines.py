"""Choosing a run's baseline at start, on fakes (docs/concepts/verdicts.md): which
earlier run's arm is borrowed, and when none is."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from chalicelib.domain.enums import ArmRole
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Arm, Run
from chalicelib.domain.spec import spec_hash
from chalicelib.errors import InvalidInputError
from chalicelib.services import baselines
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run, an_arm, an_arm_result, an_outcome

ACME = Identity("acme", "ana")
V2 = {"model": "m1", "prompt": "two"}
V3 = {"model": "m1", "prompt": "three"}
SCORING = {"required": ["exact"]}


def _done(
    run_id: str,
    completed_at: str,
    *,
    version: int = 2,
    spec: dict[str, Any] = V2,
    environment_id: str | None = None,
    incomplete: int = 0,
    judges: list[str] | None = None,
) -> Run:
    """A completed run of version `version` over cases c1, c2 of dataset `d` version 1."""
    arm = an_arm(version=version, spec=spec, spec_hash=spec_hash(spec))
    return a_run(
        run_id,
        cases=2,
        status="completed",
        completed_at=completed_at,
        created_at=completed_at,
        resolved_version=version,
        arms=(arm,),
        scoring=SCORING,
        environment_id=environment_id,
        outcome=an_outcome(
            total=2,
            passed=2 - incomplete,
            arms={
                "candidate": an_arm_result(
                    cases=2, incomplete=incomplete, judges=tuple(judges or ())
                )
            },
        ),
    )


def _choose(c: FakeContainer, **overrides: Any) -> tuple[Arm | None, dict[str, Any]]:
    args: dict[str, Any] = {
        "candidate_spec": V3,
        "version_before": 2,
        "dataset_id": "d",
        "dataset_version": 1,
        "scoring": SCORING,
        "environment_id": None,
        "body": {},
        "before_spec": V2,
        "paired": False,
        "now_ms": 1_764_579_600_000,
        "judge_key": None,
    }
    return baselines.choose(c, ACME, "a", **{**args, **overrides})


def test_the_default_baseline_borrows_the_newest_matching_run_of_the_version_before(
    c: FakeContainer,
) -> None:
    c.runs.add(_done("older", "2026-12-01T06:00:00.000Z"))
    c.runs.add(_done("newest", "2026-12-01T07:00:00.000Z"))
    c.runs.add(
        _done("elsewhere", "2026-12-01T07:30:00.000Z", environment_id="prod")
    )  # another environment
    c.runs.add(_done("unfinished", "2026-12-01T07:40:00.000Z", incomplete=1))  # a case not answered
    c.runs.add(
        _done("itself", "2026-12-01T07:50:00.000Z", version=3, spec=V3)
    )  # the candidate's own
    arm, info = _choose(c)
    assert info == {"reused_baseline_run_id": "newest"}
    assert arm == Arm(
        arm_id="baseline",
        role=ArmRole.BASELINE,
        version=2,
        draft=False,
        spec=V2,
        spec_hash=spec_hash(V2),
        model_profile_id=None,
        answers=False,
        rerun=True,
        source_run_id="newest",
        source_arm_id="candidate",
        source_dataset_version=1,
        source_completed_at="2026-12-01T07:00:00.000Z",
        source_scoring_hash=spec_hash(SCORING),  # what the comparison checks once it is gone
    )


def test_no_matching_run_leaves_the_run_without_a_baseline_and_says_which_version_is_missing(
    c: FakeContainer,
) -> None:
    c.runs.add(_done("elsewhere", "2026-12-01T07:30:00.000Z", environment_id="prod"))
    c.runs.add(
        _done("judged", "2026-12-01T07:40:00.000Z", judges=["judge-A"])
    )  # graded by another judge
    assert _choose(c, judge_key="judge-B") == (None, {"missing_baseline_version": 2})
    assert _choose(c, version_before=None, before_spec=None) == (None, {})  # a first version


def test_a_baseline_that_is_the_candidate_itself_is_not_rerun(c: FakeContainer) -> None:
    c.runs.add(_done("same", "2026-12-01T07:00:00.000Z", spec=V3))
    arm, _ = _choose(c, before_spec=V3)
    assert arm is not None and (arm.source_run_id, arm.rerun) == ("same", False)


def test_a_named_baseline_run_must_be_of_the_same_agent_and_completed(c: FakeContainer) -> None:
    c.runs.add(_done("named", "2026-12-01T05:00:00.000Z"))
    c.runs.add(a_run("running", status="running"))
    c.runs.add(replace(_done("other-agent", "2026-12-01T05:00:00.000Z"), agent_id="b"))
    arm, info = _choose(c, body={"baseline_run_id": "named"}, version_before=None, before_spec=None)
    assert (
        info == {"reused_baseline_run_id": "named"}
        and arm is not None
        and arm.source_run_id == "named"
    )
    with pytest.raises(InvalidInputError, match="completed"):
        _choose(c, body={"baseline_run_id": "running"})
    with pytest.raises(InvalidInputError, match="same agent"):
        _choose(c, body={"baseline_run_id": "other-agent"})


def test_deleting_the_newest_matching_run_falls_back_to_the_one_before_it(
    c: FakeContainer,
) -> None:
    c.runs.add(_done("older", "2026-12-01T06:00:00.000Z"))
    c.runs.add(_done("newest", "2026-12-01T07:00:00.000Z"))
    c.runs.delete("acme", "newest")
    arm, info = _choose(c)
    assert info == {"reused_baseline_run_id": "older"}
    assert arm is not None and arm.source_completed_at == "2026-12-01T06:00:00.000Z"


def test_a_paired_baseline_reuses_a_recent_arm_and_runs_here_past_the_cache_window(
    c: FakeContainer,
) -> None:
    c.runs.add(_done("recent", "2026-12-01T08:00:00.000Z"))
    completed_ms = 1_796_112_000_000  # 2026-12-01T08:00:00Z
    arm, info = _choose(c, paired=True, now_ms=completed_ms + 3_600_000)
    assert info == {"reused_baseline_run_id": "recent"} and arm is not None and not arm.answers
    arm, info = _choose(c, paired=True, now_ms=completed_ms + 25 * 3_600_000)
    assert info == {} and arm is not None and arm.answers  # 25 hours old: asked again here
