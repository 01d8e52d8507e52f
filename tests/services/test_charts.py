"""The pass-rate chart's reads on fakes (docs/guides/console.md): every run the reader may see,
page after page, mapped from its header and kept outcome."""

from __future__ import annotations

from datetime import UTC, datetime

import pytest

from chalicelib.domain.enums import ArmRole, RunStatus
from chalicelib.domain.identity import Identity
from chalicelib.domain.outcome import ComparedBaseline, Comparison
from chalicelib.domain.records import Dataset, Run
from chalicelib.errors import ForbiddenError, InvalidInputError, NotFoundError
from chalicelib.services import charts
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run, an_arm, an_arm_result, an_outcome

ACME = Identity("acme", "ana")


def _dataset(c: FakeContainer, dataset_id: str, name: str) -> None:
    c.datasets.create(
        Dataset(
            version=0,
            org_id="acme",
            dataset_id=dataset_id,
            name=name,
            created_at="2026-12-01T08:00:00.000Z",
        )
    )


def _completed(
    run_id: str,
    minute: int,
    *,
    dataset_id: str = "gsm",
    passed: int = 3,
    total: int = 4,
    broke: int = 0,
    fixed: int = 0,
    draft: bool = False,
    baseline: int | None = 3,
    could_not_run: bool = False,
    status: str = RunStatus.COMPLETED,
    at: str | None = None,
) -> Run:
    outcome = an_outcome(total=total, passed=passed)
    if could_not_run:
        bad = an_arm_result(cases=total, incomplete=total).model_copy(
            update={"could_not_run": "no such model"}
        )
        outcome = outcome.model_copy(update={"arms": {"candidate": bad}})
    arms = [an_arm("candidate", version=None if draft else 4, draft=draft, spec={"model": "m4"})]
    if baseline is not None:
        arms.append(an_arm("baseline", ArmRole.BASELINE, version=baseline))
        comparison = Comparison(
            candidate_arm_id="candidate",
            baseline_arm_id="baseline",
            baseline=ComparedBaseline(version=baseline),
            confirmed_regressions=broke,
            confirmed_fixes=fixed,
        )
        outcome = outcome.model_copy(update={"comparison": comparison})
    at = at or f"2026-12-01T10:{minute:02d}:00.000Z"
    return a_run(
        run_id,
        dataset_id=dataset_id,
        status=status,
        draft=draft,
        resolved_version=None if draft else 4,
        arms=tuple(arms),
        created_at=at,
        started_at=at,
        completed_at=at,
        outcome=outcome if status == RunStatus.COMPLETED else None,
    )


@pytest.fixture
def seeded(c: FakeContainer) -> FakeContainer:
    c.agents.seed("acme", "a")
    _dataset(c, "gsm", "GSM8K test")
    _dataset(c, "math", "MATH <hard>")
    c.clock.at = datetime(2026, 12, 1, 18, 0, tzinfo=UTC)
    return c


def test_the_agent_chart_maps_each_run_from_its_header_and_outcome(seeded: FakeContainer) -> None:
    c = seeded
    c.runs.add(_completed("r1", 1, passed=2, broke=1))
    c.runs.add(_completed("r2", 2, dataset_id="math", fixed=2, draft=True))
    c.runs.add(_completed("r3", 3, passed=4, baseline=None))
    c.runs.add(_completed("r4", 4, status=RunStatus.RUNNING))
    c.runs.add(_completed("r5", 5, could_not_run=True))
    chart = charts.agent_chart(c, ACME, "a", "10")
    assert (chart.measured, chart.shown, chart.switch) == (3, 3, False)
    assert [(s.dataset_id, s.name, s.dash) for s in chart.series] == [
        ("gsm", "GSM8K test", ""),
        ("math", "MATH <hard>", "6 4"),
    ]
    assert [(p.run_id, p.x, p.y, p.colour, p.hollow, p.label) for p in chart.points] == [
        ("r1", 0, 0.5, "red", False, "10:01"),
        ("r2", 1, 0.75, "green", True, "10:02"),
        ("r3", 2, 1.0, "neutral", False, "10:03"),
    ]
    assert [p.tooltip for p in chart.points] == [
        "v4 against v3 on GSM8K test · 2026-12-01 10:01 UTC · pass rate 50.0% · broke 1, fixed 0",  # noqa: E501
        "draft against v3 on MATH <hard> · 2026-12-01 10:02 UTC · pass rate 75.0%"
        " · broke 0, fixed 2",
        "v4 alone on GSM8K test · 2026-12-01 10:03 UTC · pass rate 100.0%",
    ]


def test_the_chart_reads_every_page_of_runs(
    seeded: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = seeded
    monkeypatch.setattr(charts, "PAGE", 200)
    for i in range(450):  # three pages of 200
        at = f"2026-12-01T{8 + i // 60:02d}:{i % 60:02d}:00.000Z"
        c.runs.add(_completed(f"r{i:03d}", 0, at=at))
    chart = charts.agent_chart(c, ACME, "a", "all")
    assert (chart.measured, chart.shown, chart.switch) == (450, 450, True)
    assert chart.points[0].run_id == "r000" and chart.points[-1].run_id == "r449"
    assert len(charts.agent_chart(c, ACME, "a", "30").points) == 30


def test_the_dataset_chart_shows_only_that_datasets_runs(seeded: FakeContainer) -> None:
    c = seeded
    c.runs.add(_completed("r1", 1))
    c.runs.add(_completed("r2", 2, dataset_id="math"))
    chart = charts.dataset_chart(c, ACME, "math", "10")
    assert [p.run_id for p in chart.points] == ["r2"]
    assert [s.name for s in chart.series] == ["MATH <hard>"]


def test_runs_of_an_agent_the_reader_may_not_see_are_left_out(seeded: FakeContainer) -> None:
    c = seeded
    c.runs.add(_completed("r1", 1))
    c.runs.add(_completed("r2", 2, dataset_id="math"))
    bob = Identity(
        "acme",
        "bob",
        permissions=frozenset({"runs:view", "agents:view"}),
        grants={"dataset:gsm": frozenset({"datasets:view"})},
    )
    assert [p.run_id for p in charts.agent_chart(c, bob, "a", "10").points] == ["r1"]


def test_a_reader_without_runs_view_is_refused(seeded: FakeContainer) -> None:
    nobody = Identity("acme", "eve", permissions=frozenset({"agents:view"}))
    with pytest.raises(ForbiddenError):
        charts.agent_chart(seeded, nobody, "a", "10")


def test_an_unknown_agent_or_dataset_and_a_bad_last_are_refused(seeded: FakeContainer) -> None:
    with pytest.raises(NotFoundError):
        charts.agent_chart(seeded, ACME, "nope", "10")
    with pytest.raises(NotFoundError):
        charts.dataset_chart(seeded, ACME, "nope", "10")
    with pytest.raises(InvalidInputError) as refused:
        charts.agent_chart(seeded, ACME, "a", "12")
    assert refused.value.field == "last"


def test_a_result_kept_without_arms_still_counts(seeded: FakeContainer) -> None:
    run = _completed("r1", 1, baseline=None)
    assert run.outcome is not None and run.outcome.arms == {}
    seeded.runs.add(run)
    assert charts.agent_chart(seeded, ACME, "a", "10").measured == 1


def test_only_completed_measured_runs_are_plotted_and_no_run_is_read(
    seeded: FakeContainer,
) -> None:
    c = seeded
    c.runs.add(_completed("r1", 1, passed=2, broke=1))
    c.runs.add(_completed("r2", 2, passed=1, fixed=2))
    c.runs.add(_completed("r3", 3, could_not_run=True))
    c.runs.add(_completed("r4", 4, status=RunStatus.RUNNING))
    c.runs.full_reads = 0
    chart = charts.agent_chart(c, ACME, "a", "10")
    assert c.runs.full_reads == 0
    assert [(p.run_id, p.y, p.colour) for p in chart.points] == [
        ("r1", 0.5, "red"),
        ("r2", 0.25, "green"),
    ]
    assert chart.measured == 2
