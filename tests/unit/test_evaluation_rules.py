"""Evaluations (docs/guides/by-hand.md): a version selector resolved into a concrete version,
the ids of implied evaluations, and each evaluation's latest run kept apart in a version's latest
results (docs/concepts/verdicts.md)."""

from __future__ import annotations

import re
from typing import Any

import pytest

from chalicelib.domain.evaluations import (
    EVALUATION_ID_PATTERN,
    evaluation_of,
    implied_id,
    implied_parts,
    is_implied,
    resolve_selector,
    selector_of,
    selector_value,
)
from chalicelib.domain.history import LatestRow, row_of_json, verdict_of
from chalicelib.domain.records import Run
from chalicelib.errors import InvalidInputError
from tests.fakes.ledger import a_run, an_arm_result, an_outcome

# --- the selector ----------------------------------------------------------------------------


def test_latest_picks_the_highest_published_version() -> None:
    assert resolve_selector("latest", latest_version=4, live_version=2) == 4


def test_published_picks_the_version_served_else_the_latest() -> None:
    assert resolve_selector("published", latest_version=4, live_version=2) == 2
    assert resolve_selector("published", latest_version=4, live_version=None) == 4


def test_a_number_picks_itself_stored_or_given() -> None:
    assert resolve_selector(3, latest_version=4, live_version=2) == 3
    assert resolve_selector("3", latest_version=4, live_version=2) == 3


def test_an_agent_never_published_has_nothing_to_pick() -> None:
    with pytest.raises(InvalidInputError) as refused:
        resolve_selector("latest", latest_version=0, live_version=None)
    assert refused.value.field == "version"


def test_the_selector_defaults_to_latest_and_is_stored_as_text() -> None:
    assert selector_of(None) == "latest"
    assert selector_of("published") == "published"
    assert selector_of(12) == "12"
    assert [selector_value(s) for s in ("latest", "published", "12")] == ["latest", "published", 12]


@pytest.mark.parametrize("bad", ["draft", 0, -1, True, 1.5, "3", 2_147_483_648])
def test_anything_else_is_not_a_selector(bad: Any) -> None:
    with pytest.raises(InvalidInputError) as refused:
        selector_of(bad)
    assert refused.value.field == "version"


# --- implied evaluations ---------------------------------------------------------------------


def test_an_implied_id_names_its_agent_and_dataset_without_a_hash_or_a_slash() -> None:
    eid = implied_id("agt_1", "ds-2")
    assert eid == "implied~agt_1~ds-2"
    assert "#" not in eid and "/" not in eid
    assert implied_parts(eid) == ("agt_1", "ds-2")
    assert is_implied(eid) and is_implied(None)


def test_an_id_a_caller_may_choose_is_never_an_implied_one() -> None:
    for chosen in ("nightly", "implied", "implied-agt_1-ds_1", "a_b-c"):
        assert re.match(EVALUATION_ID_PATTERN, chosen)
        assert implied_parts(chosen) is None and not is_implied(chosen)
    assert not re.match(EVALUATION_ID_PATTERN, "implied~a~b")


def test_a_run_belongs_to_the_evaluation_it_pinned_else_the_implied_one() -> None:
    assert evaluation_of("nightly", "a", "d") == "nightly"
    assert evaluation_of(None, "a", "d") == "implied~a~d"


# --- each evaluation's latest run (docs/concepts/verdicts.md) ----------------------------------


def _done(run_id: str, at: str, *, passed: int = 2, **fields: Any) -> Run:
    """A completed run of version 3 over 2 cases of dataset `d`."""
    return a_run(
        run_id,
        status="completed",
        phase="done",
        cases=2,
        completed_at=at,
        created_at=at,
        outcome=an_outcome(total=2, passed=passed, arms={"candidate": an_arm_result(cases=2)}),
        **fields,
    )


def test_two_evaluations_of_one_version_on_one_dataset_are_two_contributions() -> None:
    row = LatestRow("v3")
    for run in (
        _done("implied", "2026-12-01T01:00:00.000Z", passed=1),
        _done("one", "2026-12-01T02:00:00.000Z", evaluation_id="ev-one"),
        _done("two", "2026-12-01T03:00:00.000Z", passed=0, evaluation_id="ev-two"),
    ):
        row = row.with_run(run)
    totals = verdict_of(row.results.values(), draft=False, draft_spec_hash=None)
    assert (totals.total, totals.passed, totals.evaluations) == (6, 3, 3)
    assert totals.run_ids == ["implied", "one", "two"]


def test_an_evaluation_s_later_run_replaces_only_its_own_contribution() -> None:
    row = LatestRow("v3").with_run(_done("i1", "2026-12-01T01:00:00.000Z"))
    row = row.with_run(_done("e1", "2026-12-01T02:00:00.000Z", evaluation_id="ev"))
    row = row.with_run(_done("e2", "2026-12-01T03:00:00.000Z", passed=0, evaluation_id="ev"))
    row = row.with_run(_done("i2", "2026-12-01T04:00:00.000Z", passed=1))
    assert sorted(r.run_id for r in row.results.values()) == ["e2", "i2"]
    assert row.vacated_by("e2") == "d#ev" and row.vacated_by("i2") == "d"


def test_a_run_naming_its_implied_evaluation_counts_as_one_naming_none() -> None:
    row = LatestRow("v3").with_run(_done("old", "2026-12-01T01:00:00.000Z"))
    row = row.with_run(_done("new", "2026-12-01T02:00:00.000Z", evaluation_id="implied~a~d"))
    assert [r.run_id for r in row.results.values()] == ["new"]


def test_latest_results_kept_before_evaluations_read_as_the_implied_one() -> None:
    kept = {
        "d": {
            "dataset_id": "d",
            "run_id": "old",
            "completed_at": "2026-12-01T01:00:00.000Z",
            "created_at": "2026-12-01T01:00:00.000Z",
            "total": 2,
            "passed": 2,
            "spec_hash": "h3",
        }
    }
    row = row_of_json("latest#v3", kept)
    assert isinstance(row, LatestRow)
    row = row.with_run(_done("new", "2026-12-01T02:00:00.000Z", passed=1))
    assert [(r.run_id, r.passed) for r in row.results.values()] == [("new", 1)]
    assert row_of_json("latest#v3", row.as_json()) == row
