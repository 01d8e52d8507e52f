"""A compared run's noise on fakes (docs/concepts/noise.md, "The basis"): without a stability run,
the tries of up to three earlier runs' arms of the same spec pooled with this run's side of that
spec (`history`), each first answer counted once; `this_run` when they add no decided try."""

from __future__ import annotations

from typing import Any

from chalicelib.domain import noise
from chalicelib.domain.enums import ArmRole, CaseOutcome
from chalicelib.domain.outcome import ComparedBaseline, Comparison, Flip
from chalicelib.domain.records import Attempt, Run
from chalicelib.services import finalize, noise_basis, run_noise
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run, an_arm, an_attempt

P, F = "passed", "failed"


def _run(run_id: str, hour: int, *, base: str = "v1", cand: str = "v2", **fields: Any) -> Run:
    """A comparison over c1..c3 with 1 rerun: a candidate arm of spec `cand`, a baseline of
    `base`; completed at half past `hour` unless told."""
    values: dict[str, Any] = {
        "status": "completed",
        "created_at": f"2026-12-01T{hour:02d}:00:00.000Z",
        "completed_at": f"2026-12-01T{hour:02d}:30:00.000Z",
        "settings": {"run_concurrency": 3, "reruns": 1},
        "arms": (
            an_arm(spec_hash=cand),
            an_arm("baseline", ArmRole.BASELINE, spec_hash=base, **fields.pop("baseline", {})),
        ),
    }
    return a_run(run_id, **{**values, **fields})


def _answers(c: FakeContainer, run_id: str, arm_id: str, *tries: tuple[str, str, int]) -> None:
    """Seed `(case_id, state, attempt)` tries of one arm of a run."""
    for case_id, state, attempt in tries:
        c.runs.add_attempt(
            "acme", an_attempt(case_id, state, attempt, run_id=run_id, arm_id=arm_id)
        )


def _compared(c: FakeContainer, **fields: Any) -> Run:
    """The compared run, at 20:00, still running: the candidate failed c1 on its first answer
    and its rerun, where the baseline passed both (a confirmed regression); c2 passed on both
    sides, c3 failed on both."""
    run = _run("now", 20, status="running", completed_at=None, **fields)
    c.runs.add(run)
    _answers(c, "now", "candidate", ("c1", F, 1), ("c1", F, 2), ("c2", P, 1), ("c3", F, 1))
    if run.arms[1].answers:
        _answers(c, "now", "baseline", ("c1", P, 1), ("c2", P, 1), ("c3", F, 1))
    _answers(c, "now", "baseline", ("c1", P, 2))
    return run


def _noise(c: FakeContainer, run: Run) -> dict[str, Any] | None:
    attempts: list[Attempt] = finalize.all_attempts(c, run)
    comparison = Comparison(
        candidate_arm_id="candidate",
        baseline_arm_id="baseline",
        baseline=ComparedBaseline(version=3, source_run_id=run.arms[1].source_run_id),
        confirmed_regressions=1,
        flips=(Flip(case_id="c1", outcome=CaseOutcome.REGRESSION, confirmed=True, question="",
                    candidate_tries=(), baseline_tries=()),),
    )  # fmt: skip
    return run_noise.noise_of(c, run, attempts, comparison)


def _expected(tries: dict[str, noise.CaseTries], basis: noise.Basis) -> noise.Noise:
    measured = noise.estimate_noise(
        tries,
        reruns=1,
        baseline_rerun=True,
        basis=basis,
        confirmed_flips={"c1": CaseOutcome.REGRESSION},
    )
    assert measured is not None
    return measured


def _assert_rests_on(
    measured: dict[str, Any] | None, basis: noise.Basis, tries: dict[str, noise.CaseTries]
) -> None:
    """`measured` has `basis`, rests on exactly `tries` (counted by hand) and says the luck
    `estimate_noise` computes from them."""
    assert measured is not None
    assert (measured["basis"], measured["tries"]) == (basis, sum(t.tries for t in tries.values()))
    assert measured["p_luck_regression"] == _expected(tries, basis).p_luck_regression


def _stability_run(hour: int) -> Run:
    """A completed stability run `stable` of spec v1, made at `hour` o'clock on 2026-12-01."""
    return a_run(
        "stable",
        purpose="stability",
        status="completed",
        created_at=f"2026-12-01T{hour:02d}:00:00.000Z",
        completed_at=f"2026-12-01T{hour:02d}:30:00.000Z",
        arms=(an_arm(spec_hash="v1"),),
    )


def test_the_earlier_runs_of_the_baseline_spec_are_pooled_with_this_runs_baseline_only() -> None:
    c = FakeContainer()
    reads: list[str] = []
    read = c.runs.attempts

    def counted(org_id: str, run_id: str) -> list[Attempt]:
        reads.append(run_id)
        return read(org_id, run_id)

    c.runs.attempts = counted  # type: ignore[method-assign]
    for hour in range(1, 5):  # four earlier comparisons of the same two versions
        c.runs.add(_run(f"e{hour}", hour))
        _answers(c, f"e{hour}", "baseline", ("c1", P, 1), ("c2", P, 1), ("c3", F, 1))
        _answers(c, f"e{hour}", "candidate", ("c1", F, 1), ("c2", F, 1), ("c3", F, 1))
    _answers(c, "e4", "baseline", ("c1", F, 2), ("c2", "incomplete", 2))
    run = _compared(c)
    reads.clear()
    measured = _noise(c, run)
    assert measured is not None
    # The newest three earlier runs are read once each; the fourth is beyond the bound.
    assert reads == ["now", "e4", "e3", "e2"]
    # Their baselines (v1, as this run's): c1 passed 3 of 4 (e4's rerun failed), c2 3 of 3 (an
    # incomplete try does not count), c3 0 of 3; this run's baseline adds c1 2 of 2, c2 1 of 1,
    # c3 0 of 1. Every candidate's tries are a change, not noise: left out.
    tries = {"c1": noise.CaseTries(5, 6), "c2": noise.CaseTries(4, 4), "c3": noise.CaseTries(0, 4)}
    expected = _expected(tries, "history")
    assert (measured["basis"], measured["tries"], measured["cases"]) == ("history", 14, 3)
    assert measured["p_luck_regression"] == expected.p_luck_regression
    assert measured["per_flip"] == expected.per_flip
    assert measured["sentence"].startswith(
        "1 confirmed regression. With the noise earlier runs of this spec measured, "
    )


def test_the_candidate_spec_is_the_history_when_no_earlier_run_ran_the_baselines() -> None:
    c = FakeContainer()
    c.runs.add(_run("e1", 1, base="v0", cand="v2"))  # an earlier run of the candidate's version
    _answers(c, "e1", "candidate", ("c1", P, 1), ("c2", P, 1), ("c3", F, 1))
    _answers(c, "e1", "baseline", ("c1", F, 1), ("c2", F, 1), ("c3", F, 1))
    measured = _noise(c, _compared(c))
    assert measured is not None
    # e1's candidate (v2, as this run's) with this run's candidate: c1 1 of 3, c2 2 of 2, c3 0 of 2.
    tries = {"c1": noise.CaseTries(1, 3), "c2": noise.CaseTries(2, 2), "c3": noise.CaseTries(0, 2)}
    _assert_rests_on(measured, "history", tries)


def test_first_answers_borrowed_from_a_pooled_run_count_once() -> None:
    c = FakeContainer()
    c.runs.add(_run("e1", 1))
    _answers(c, "e1", "baseline", ("c1", P, 1), ("c2", P, 1), ("c3", F, 1), ("c1", P, 2))
    # e2's baseline borrowed e1's first answers and asked only its rerun of c3 itself.
    borrowed = {"answers": False, "source_run_id": "e1", "source_arm_id": "baseline"}
    c.runs.add(_run("e2", 2, baseline=borrowed))
    _answers(c, "e2", "baseline", ("c3", P, 2))
    # This run's baseline borrowed e1's first answers too (read with the run, relabelled).
    run = _compared(c, baseline=borrowed)
    assert [a.attempt for a in finalize.all_attempts(c, run) if a.arm_id == "baseline"].count(
        1
    ) == 3
    measured = _noise(c, run)
    assert measured is not None
    # e1's 4 tries, e2's 1 and this run's rerun of c1: 6, not the 9 of e1's firsts thrice.
    tries = {"c1": noise.CaseTries(3, 3), "c2": noise.CaseTries(1, 1), "c3": noise.CaseTries(1, 2)}
    _assert_rests_on(measured, "history", tries)


def test_first_answers_borrowed_from_a_run_outside_the_pool_count_once_too() -> None:
    c = FakeContainer()
    c.runs.add(_run("far", 1, dataset_version=2))  # another dataset version: not in the pool
    _answers(c, "far", "baseline", ("c1", P, 1), ("c2", P, 1), ("c3", P, 1))
    c.runs.add(_run("e1", 2))
    _answers(c, "e1", "baseline", ("c2", F, 1))
    borrowed = {"answers": False, "source_run_id": "far", "source_arm_id": "baseline"}
    measured = _noise(c, _compared(c, baseline=borrowed))
    assert measured is not None
    # e1's 1 try and this run's baseline: its 3 borrowed first answers (counted here only) and
    # its rerun of c1.
    assert (measured["basis"], measured["tries"]) == ("history", 5)


def test_earlier_runs_without_a_decided_try_leave_this_runs_own_tries() -> None:
    c = FakeContainer()
    c.runs.add(_run("e1", 1))
    _answers(c, "e1", "baseline", ("c1", "incomplete", 1), ("c2", "ungraded", 1))
    c.runs.add(_run("e2", 2, status="failed"))  # a run that did not complete adds nothing either
    _answers(c, "e2", "baseline", ("c1", P, 1))
    measured = _noise(c, _compared(c))
    assert measured is not None
    # Both sides of this run pooled as if nothing changed: c1 2 of 4, c2 2 of 2, c3 0 of 2.
    tries = {"c1": noise.CaseTries(2, 4), "c2": noise.CaseTries(2, 2), "c3": noise.CaseTries(0, 2)}
    _assert_rests_on(measured, "this_run", tries)


def test_a_stability_run_of_the_spec_wins_over_earlier_comparisons() -> None:
    c = FakeContainer()
    c.runs.add(_run("e1", 2))
    _answers(c, "e1", "baseline", ("c1", P, 1), ("c2", P, 1), ("c3", F, 1))
    stable = _stability_run(hour=1)
    c.runs.add(stable)
    _answers(c, "stable", "candidate", ("c1", P, 1), ("c1", P, 2))
    measured = _noise(c, _compared(c))
    assert measured is not None
    # The stability run's 2 tries and this run's baseline's 4.
    assert (measured["basis"], measured["tries"]) == ("stability_run", 6)


def test_an_agent_with_hundreds_of_runs_has_its_newest_two_pages_read_once() -> None:
    """No stability run and no earlier run of either spec among 250 newer runs: the stability
    look-up and the history look-up walk the same two pages, read from the store once."""
    c = FakeContainer()
    pages = c.runs.agent_pages_read
    run = _compared(c)
    for i in range(250):
        c.runs.add(
            a_run(
                f"r{i:03d}",
                status="completed",
                created_at=f"2026-12-01T10:{i // 60:02d}:{i % 60:02d}.000Z",
            )
        )
    measured = _noise(c, run)
    assert measured is not None and measured["basis"] == "this_run"
    assert pages == [noise_basis.PAGE_SIZE] * noise_basis.PAGES


def test_a_stability_run_deleted_between_its_look_up_and_its_read_is_not_the_basis() -> None:
    """The stability run is found, then deleted before its answers are read: the noise rests on
    what is left (here the earlier comparison: `history`), not on a stability run it could not
    read, so the run completes and reads as a grade again would."""
    c = FakeContainer()
    c.runs.add(_run("e1", 2))
    _answers(c, "e1", "baseline", ("c1", P, 1), ("c2", P, 1), ("c3", F, 1))
    c.runs.add(_stability_run(hour=1))
    _answers(c, "stable", "candidate", ("c1", P, 1), ("c1", P, 2))
    run = _compared(c)
    attempts = finalize.all_attempts(c, run)
    read = c.runs.attempts

    def deleted_first(org_id: str, run_id: str) -> list[Attempt]:
        if run_id == "stable":
            c.runs.delete(org_id, run_id)
        return read(org_id, run_id)

    c.runs.attempts = deleted_first  # type: ignore[method-assign]
    comparison = Comparison(
        candidate_arm_id="candidate",
        baseline_arm_id="baseline",
        baseline=ComparedBaseline(version=3),
        confirmed_regressions=1,
        flips=(Flip(case_id="c1", outcome=CaseOutcome.REGRESSION, confirmed=True, question="",
                    candidate_tries=(), baseline_tries=()),),
    )  # fmt: skip
    measured = run_noise.noise_of(c, run, attempts, comparison)
    c.runs.attempts = read  # type: ignore[method-assign]
    assert measured is not None and measured["basis"] == "history", measured
    assert measured == _noise(c, run)  # what grading it again says


def test_an_earlier_run_deleted_mid_read_leaves_the_answers_borrowed_from_it_counted() -> None:
    """This run's baseline borrowed e1's first answers; e1 is found by the history look-up with
    e2, then deleted before its answers are read: e1 counts for nothing, so the borrowed first
    answers count here, as they do once e1 is known to be gone (being deleted)."""
    c = FakeContainer()
    c.runs.add(_run("e1", 1))
    _answers(c, "e1", "baseline", ("c1", P, 1), ("c2", P, 1), ("c3", F, 1))
    c.runs.add(_run("e2", 2))  # another earlier run of the spec, which stays
    _answers(c, "e2", "baseline", ("c1", P, 1), ("c2", F, 1), ("c3", F, 1))
    borrowed = {"answers": False, "source_run_id": "e1", "source_arm_id": "baseline"}
    run = _compared(c, baseline=borrowed)
    attempts = finalize.all_attempts(c, run)
    comparison = Comparison(
        candidate_arm_id="candidate",
        baseline_arm_id="baseline",
        baseline=ComparedBaseline(version=3, source_run_id="e1"),
        confirmed_regressions=1,
        flips=(Flip(case_id="c1", outcome=CaseOutcome.REGRESSION, confirmed=True, question="",
                    candidate_tries=(), baseline_tries=()),),
    )  # fmt: skip
    read = c.runs.attempts

    def deleted_first(org_id: str, run_id: str) -> list[Attempt]:
        if run_id == "e1":
            c.runs.delete(org_id, run_id)
        return read(org_id, run_id)

    c.runs.attempts = deleted_first  # type: ignore[method-assign]
    raced = run_noise.noise_of(c, run, attempts, comparison)
    c.runs.attempts = read  # type: ignore[method-assign]
    c.runs.add(_run("e1", 1, deleting_at="2026-12-01T21:00:00.000Z"))  # known to be going
    assert raced == run_noise.noise_of(c, run, attempts, comparison)
    # e2's 3 tries and this run's baseline: its 3 borrowed first answers and its rerun of c1.
    assert raced is not None and (raced["basis"], raced["tries"]) == ("history", 7), raced


def test_a_stability_run_without_a_decided_try_is_not_the_basis() -> None:
    """No answer of the stability run was decided (each errored or went ungraded): it measured
    nothing, so the noise rests on the earlier comparison of the spec (`history`), not on "the
    noise its stability run measured"."""
    c = FakeContainer()
    c.runs.add(_run("e1", 2))
    _answers(c, "e1", "baseline", ("c1", P, 1), ("c2", P, 1), ("c3", F, 1))
    c.runs.add(_stability_run(hour=3))
    _answers(
        c,
        "stable",
        "candidate",
        ("c1", "incomplete", 1),
        ("c2", "incomplete", 1),
        ("c1", "ungraded", 2),
    )
    measured = _noise(c, _compared(c))
    # e1's 3 tries and this run's baseline's 4.
    assert measured is not None and (measured["basis"], measured["tries"]) == ("history", 7)
