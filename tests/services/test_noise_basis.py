"""Which stability run a comparison's noise rests on (docs/concepts/noise.md, "The basis"), on
fakes: the newest completed one of the same spec on the same dataset version, the baseline's spec
first, found within the agent's newest two pages of runs; failing one, the newest three earlier
runs with an arm of the same spec (the `history` basis), within the same pages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

from chalicelib.domain.enums import ArmRole
from chalicelib.domain.records import Run
from chalicelib.services import noise_basis
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run, an_arm


def _stability(run_id: str, hour: int, spec_hash: str = "h1", **fields: Any) -> Run:
    values: dict[str, Any] = {
        "purpose": "stability",
        "status": "completed",
        "created_at": f"2026-12-01T{hour:02d}:00:00.000Z",
        "completed_at": f"2026-12-01T{hour:02d}:30:00.000Z",
        "arms": (an_arm(spec_hash=spec_hash),),
    }
    return a_run(run_id, **{**values, **fields})


COMPARED = a_run("now", created_at="2026-12-01T20:00:00.000Z", status="running")


def test_the_newest_completed_stability_run_of_the_same_spec_and_dataset_version_is_taken() -> None:
    c = FakeContainer()
    c.runs.add(_stability("old", 1))
    c.runs.add(_stability("new", 2))
    c.runs.add(_stability("other-spec", 3, spec_hash="h9"))
    c.runs.add(_stability("other-version", 4, dataset_version=2))
    c.runs.add(_stability("other-dataset", 5, dataset_id="d2"))
    c.runs.add(_stability("failed", 6, status="failed"))
    c.runs.add(_stability("deleting", 7, deleting_at="2026-12-01T19:00:00.000Z"))
    c.runs.add(a_run("a-check", status="completed", created_at="2026-12-01T08:00:00.000Z"))
    c.runs.add(_stability("later", 21))  # started after the compared run
    found = noise_basis.latest_stability_run(c, COMPARED, ["h1"])
    assert found is not None and found.run_id == "new"


def test_the_baseline_spec_wins_over_a_newer_stability_run_of_the_candidate_spec() -> None:
    c = FakeContainer()
    c.runs.add(_stability("of-baseline", 1, spec_hash="base"))
    c.runs.add(_stability("of-candidate", 2, spec_hash="cand"))
    found = noise_basis.latest_stability_run(c, COMPARED, ["base", "cand"])
    assert found is not None and found.run_id == "of-baseline"
    only = noise_basis.latest_stability_run(c, COMPARED, ["gone", "cand"])
    assert only is not None and only.run_id == "of-candidate"
    assert noise_basis.latest_stability_run(c, COMPARED, ["gone"]) is None


def test_a_stability_run_behind_two_pages_of_newer_runs_is_not_read() -> None:
    c = FakeContainer()
    c.runs.add(_stability("far", 0))
    newer = noise_basis.PAGES * noise_basis.PAGE_SIZE
    for i in range(newer):
        c.runs.add(a_run(f"r{i:03d}", created_at=f"2026-12-01T10:{i // 60:02d}:{i % 60:02d}.000Z"))
    assert noise_basis.latest_stability_run(c, COMPARED, ["h1"]) is None
    c.runs.kept.pop(("acme", "r000"))  # one fewer newer run: it is within reach again
    found = noise_basis.latest_stability_run(c, COMPARED, ["h1"])
    assert found is not None and found.run_id == "far"


def _earlier(run_id: str, hour: int, base: str, cand: str = "other", **fields: Any) -> Run:
    """A completed comparison of the agent: a candidate arm of spec `cand`, a baseline of `base`."""
    values: dict[str, Any] = {
        "status": "completed",
        "created_at": f"2026-12-01T{hour:02d}:00:00.000Z",
        "completed_at": f"2026-12-01T{hour:02d}:30:00.000Z",
        "arms": (an_arm(spec_hash=cand), an_arm("baseline", ArmRole.BASELINE, spec_hash=base)),
    }
    return a_run(run_id, **{**values, **fields})


def _ids(found: noise_basis.SpecHistory | None) -> tuple[str, list[str]] | None:
    return None if found is None else (found.spec_hash, [r.run_id for r in found.runs])


def test_the_newest_three_earlier_runs_with_an_arm_of_the_spec_are_the_history() -> None:
    c = FakeContainer()
    for hour in range(1, 6):  # five runs whose baseline ran the spec
        c.runs.add(_earlier(f"base-{hour}", hour, "base"))
    c.runs.add(_earlier("as-candidate", 6, "x", "base"))  # the spec on its candidate arm counts
    c.runs.add(_earlier("other-spec", 7, "x", "y"))
    c.runs.add(_earlier("other-version", 8, "base", dataset_version=2))
    c.runs.add(_earlier("other-dataset", 9, "base", dataset_id="d2"))
    c.runs.add(_earlier("failed", 10, "base", status="failed"))
    c.runs.add(_earlier("running", 11, "base", status="running", completed_at=None))
    c.runs.add(_earlier("deleting", 12, "base", deleting_at="2026-12-01T19:00:00.000Z"))
    c.runs.add(_earlier("later", 21, "base"))  # started after the compared run
    assert _ids(noise_basis.earlier_runs_of_spec(c, COMPARED, ["base"])) == (
        "base",
        ["as-candidate", "base-5", "base-4"],
    )
    assert noise_basis.HISTORY_RUNS == 3


def test_runs_of_the_baseline_spec_win_over_newer_runs_of_the_candidate_spec() -> None:
    c = FakeContainer()
    c.runs.add(_earlier("of-baseline", 1, "base"))
    c.runs.add(_earlier("of-candidate", 2, "x", "cand"))
    c.runs.add(_earlier("of-candidate-too", 3, "x", "cand"))
    found = noise_basis.earlier_runs_of_spec(c, COMPARED, ["base", "cand"])
    assert _ids(found) == ("base", ["of-baseline"])
    found = noise_basis.earlier_runs_of_spec(c, COMPARED, ["gone", "cand"])
    assert _ids(found) == ("cand", ["of-candidate-too", "of-candidate"])
    assert noise_basis.earlier_runs_of_spec(c, COMPARED, ["gone"]) is None


def test_a_run_still_going_when_the_compared_run_was_created_is_not_history() -> None:
    c = FakeContainer()
    c.runs.add(_earlier("before", 1, "base"))
    # Created before the compared run but completed after the compared run was created: whether
    # its outcome is computed at finalize or again later (a review decision), it is left out, so
    # both computations read the same runs.
    c.runs.add(_earlier("overlapping", 2, "base", completed_at="2026-12-01T20:30:00.000Z"))
    done = replace(COMPARED, status="completed", completed_at="2026-12-01T21:00:00.000Z")
    for compared in (COMPARED, done):
        assert _ids(noise_basis.earlier_runs_of_spec(c, compared, ["base"])) == ("base", ["before"])


def test_runs_started_after_the_compared_one_never_push_its_earlier_runs_out_of_the_pages() -> None:
    c = FakeContainer()
    c.runs.add(_earlier("before", 1, "base"))
    # 150 runs of the agent started after the compared one: the look-up starts its pages at the
    # compared run's creation, so computing its outcome again still finds "before".
    for i in range(150):
        c.runs.add(
            a_run(
                f"later-{i:03d}",
                status="completed",
                created_at=f"2026-12-01T21:{i // 60:02d}:{i % 60:02d}.000Z",
                completed_at="2026-12-01T23:00:00.000Z",
            )
        )
    done = replace(COMPARED, status="completed", completed_at="2026-12-01T21:00:00.000Z")
    assert _ids(noise_basis.earlier_runs_of_spec(c, done, ["base"])) == ("base", ["before"])


def test_the_history_look_up_reads_at_most_two_pages_and_stops_at_three_runs() -> None:
    c = FakeContainer()
    pages = c.runs.agent_pages_read
    c.runs.add(_earlier("far", 0, "base"))
    newer = noise_basis.PAGES * noise_basis.PAGE_SIZE
    for i in range(newer):
        c.runs.add(a_run(f"r{i:03d}", created_at=f"2026-12-01T10:{i // 60:02d}:{i % 60:02d}.000Z"))
    assert noise_basis.earlier_runs_of_spec(c, COMPARED, ["base"]) is None
    assert pages == [noise_basis.PAGE_SIZE] * noise_basis.PAGES
    c.runs.kept.pop(("acme", "r000"))  # one fewer newer run: it is within reach again
    assert _ids(noise_basis.earlier_runs_of_spec(c, COMPARED, ["base"])) == ("base", ["far"])
    # Three runs of the baseline's spec on the first page: the look-up reads no further.
    for hour in range(11, 14):
        c.runs.add(_earlier(f"near-{hour}", hour, "base"))
    pages.clear()
    found = noise_basis.earlier_runs_of_spec(c, COMPARED, ["base", "cand"])
    assert _ids(found) == ("base", ["near-13", "near-12", "near-11"])
    assert len(pages) == 1
