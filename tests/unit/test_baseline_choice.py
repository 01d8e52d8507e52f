"""Choosing a baseline from earlier arms (docs/concepts/verdicts.md), hand-built
records."""

from __future__ import annotations

from dataclasses import replace

from chalicelib.domain.baseline_rules import (
    ArmRecord,
    default_baseline,
    is_candidate_itself,
    reusable_baseline,
)

HOUR = 3_600_000
NOW = 100 * HOUR
BASE = ArmRecord(
    run_id="r1",
    arm_id="candidate",
    version=3,
    spec_hash="h3",
    model="m",
    dataset_id="ds",
    dataset_version=2,
    scoring_hash="s",
    environment_id=None,
    completed_at_ms=NOW - 2 * HOUR,
    answered_here=True,
    every_case_answered=True,
)
ASK = dict(version=3, dataset_id="ds", scoring_hash="s", environment_id=None, model="m")


def test_a_recent_matching_arm_is_reused_and_the_newest_wins():
    newer = replace(BASE, run_id="r2", completed_at_ms=NOW - HOUR)
    assert (
        reusable_baseline([BASE, newer], dataset_version=2, now_ms=NOW, cache_hours=24, **ASK)
        == newer
    )


def test_a_reused_baseline_must_match_every_condition():
    for different in (
        dict(version=2),
        dict(dataset_version=1),
        dict(model="other"),
        dict(scoring_hash="s2"),
        dict(environment_id="staging"),
        dict(answered_here=False),
        dict(every_case_answered=False),
        dict(dataset_id="other"),
        dict(completed_at_ms=NOW - 25 * HOUR),
    ):
        assert (
            reusable_baseline(
                [replace(BASE, **different)], dataset_version=2, now_ms=NOW, cache_hours=24, **ASK
            )
            is None
        ), different


def test_the_cache_window_includes_its_edge():
    edge = replace(BASE, completed_at_ms=NOW - 24 * HOUR)
    assert reusable_baseline([edge], dataset_version=2, now_ms=NOW, cache_hours=24, **ASK) == edge


def test_the_default_baseline_is_the_last_matching_run_of_any_age_and_dataset_version():
    old = replace(BASE, run_id="old", dataset_version=1, completed_at_ms=NOW - 500 * HOUR)
    assert default_baseline([old], **ASK) == old
    assert default_baseline([old, BASE], **ASK) == BASE
    assert default_baseline([replace(BASE, scoring_hash="other")], **ASK) is None
    assert default_baseline([], **ASK) is None


def test_only_the_same_spec_on_the_same_model_is_the_candidate_itself():
    assert is_candidate_itself("h3", "m", BASE)
    assert not is_candidate_itself("h4", "m", BASE)
    assert not is_candidate_itself("h3", "other", BASE)
