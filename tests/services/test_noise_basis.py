"""Which stability run a comparison's noise rests on (docs/concepts/noise.md, "The basis"), on
fakes: the newest completed one of the same spec on the same dataset version, the baseline's spec
first, found within the agent's newest two pages of runs."""

from __future__ import annotations

from typing import Any

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
