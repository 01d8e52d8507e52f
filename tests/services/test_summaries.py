"""What a run's attempts add up to, and the verdict beside an agent version
(docs/concepts/verdicts.md), on fakes with hand-built attempts."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chalicelib.api import views
from chalicelib.domain.enums import ArmRole
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Run
from chalicelib.errors import InvalidInputError, NotFoundError
from chalicelib.services import finalize, summaries
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run, an_arm, an_attempt, an_outcome

ACME = Identity("acme", "ana")


def test_an_arm_counts_each_case_once_by_the_majority_of_its_decided_tries() -> None:
    run = a_run(cases=4)
    attempts = [
        an_attempt("c1", "passed"),
        an_attempt("c2", "failed"),
        an_attempt("c2", "passed", 2),
        an_attempt("c2", "passed", 3),
        an_attempt("c3", "incomplete", reason="provider error"),
        an_attempt("c4", "failed", crash=True),
    ]
    arm = finalize.summarize(run, attempts)["candidate"]
    assert (arm.cases, arm.passed, arm.failed, arm.incomplete, arm.ungraded, arm.crashed) == (
        4,
        2,
        1,
        1,
        0,
        1,
    )
    assert arm.pass_rate == pytest.approx(2 / 3)  # of the 3 decided cases
    assert arm.first_pass_rate == pytest.approx(1 / 3)  # c1 only passed at the first try
    assert arm.average_score == pytest.approx(1 / 3)  # first tries: 1, 0, 0
    assert arm.undecided_reasons == {"provider error": 1}
    outcome = finalize.outcome_of(run, {"candidate": arm}).as_json()
    assert {
        k: outcome[k] for k in ("total", "passed", "failed", "incomplete", "undecided", "verdict")
    } == {
        "total": 4,
        "passed": 2,
        "failed": 1,
        "incomplete": 1,
        "undecided": 1,
        "verdict": "partial",
    }


def test_a_case_never_answered_is_incomplete_and_a_tie_is_undecided() -> None:
    run = a_run(cases=2)
    attempts = [an_attempt("c1", "passed"), an_attempt("c1", "failed", 2)]
    arm = finalize.summarize(run, attempts)["candidate"]
    assert (arm.passed, arm.failed, arm.incomplete) == (0, 0, 2)
    assert arm.undecided_reasons == {"incomplete": 1, "not answered": 1}
    assert finalize.outcome_of(run, {"candidate": arm}).verdict == "fail"


def test_borrowed_first_answers_are_relabelled_and_cost_this_run_nothing(c: FakeContainer) -> None:
    c.runs.add(a_run("earlier", cases=1, status="completed"))
    c.runs.add_attempt("acme", an_attempt("c1", "passed", run_id="earlier", cost_micros=90))
    c.runs.add_attempt(
        "acme", an_attempt("c1", "failed", 2, run_id="earlier")
    )  # a rerun: not borrowed
    run = a_run("now", cases=1)
    run = replace(
        run,
        arms=(
            *run.arms,
            an_arm(
                "baseline",
                ArmRole.BASELINE,
                answers=False,
                source_run_id="earlier",
                source_arm_id="candidate",
            ),
        ),
    )
    c.runs.add(run)
    c.runs.add_attempt("acme", an_attempt("c1", "failed", run_id="now"))
    borrowed = [a for a in finalize.all_attempts(c, run) if a.arm_id == "baseline"]
    assert [(a.run_id, a.attempt_key, a.state, a.cost_micros) for a in borrowed] == [
        ("now", "baseline#c1#001", "passed", 0)
    ]
    assert (
        c.runs.get_attempt("acme", "earlier", "candidate#c1#001").cost_micros == 90
    )  # the original stays


def _completed(
    run_id: str,
    dataset_id: str,
    completed_at: str,
    total: int,
    passed: int,
    *,
    version: int = 3,
    status: str = "completed",
) -> Run:
    return a_run(
        run_id,
        dataset_id=dataset_id,
        status=status,
        completed_at=completed_at,
        resolved_version=version,
        created_at=completed_at,
        outcome=an_outcome(total=total, passed=passed),
    )


def test_a_version_s_verdict_sums_the_latest_completed_run_of_each_dataset(
    c: FakeContainer,
) -> None:
    c.agents.seed("acme", "a")
    c.runs.add(_completed("r1", "d1", "2026-12-01T01:00:00.000Z", 4, 2))
    c.runs.add(_completed("r2", "d1", "2026-12-01T02:00:00.000Z", 4, 4))  # the latest of d1
    c.runs.add(_completed("r3", "d2", "2026-12-01T01:30:00.000Z", 2, 1))
    c.runs.add(
        _completed("r4", "d2", "2026-12-01T03:00:00.000Z", 2, 2, version=2)
    )  # another version
    c.runs.add(_completed("r5", "d1", "2026-12-01T04:00:00.000Z", 4, 0, status="failed"))
    [summary] = [
        views.agent_summary_view(s)
        for s in summaries.summarize_agents(c, ACME, [{"agentId": "a", "version": 3}])
    ]
    assert {
        k: summary[k]
        for k in (
            "total",
            "passed",
            "failed",
            "evaluations",
            "verdict",
            "run_ids",
            "last_completed_at",
            "stale",
        )
    } == {
        "total": 6,
        "passed": 5,
        "failed": 1,
        "evaluations": 2,
        "verdict": "partial",
        "run_ids": ["r2", "r3"],
        "last_completed_at": "2026-12-01T02:00:00.000Z",
        "stale": False,
    }
    [none] = summaries.summarize_agents(c, ACME, [{"agentId": "a", "version": 7}])
    assert (none.total, none.verdict, none.run_ids) == (0, "none", [])


def test_the_summaries_page_through_every_run_of_the_agent(c: FakeContainer) -> None:
    c.agents.seed("acme", "a")
    for i in range(205):  # more than one page of 200
        c.runs.add(_completed(f"r{i:03d}", f"d{i:03d}", f"2026-12-01T01:00:00.{i:03d}Z", 1, 1))
    [summary] = summaries.summarize_agents(c, ACME, [{"agentId": "a", "version": 3}])
    assert (summary.evaluations, summary.total, summary.verdict) == (205, 205, "pass")


def test_a_malformed_entry_names_its_field(c: FakeContainer) -> None:
    with pytest.raises(InvalidInputError) as refused:
        summaries.summarize_agents(c, ACME, [{"agentId": "a", "version": 0}])
    assert refused.value.field == "agents[0].version"


def test_deleting_an_evaluation_s_latest_run_falls_back_to_the_one_completed_before_it(
    c: FakeContainer,
) -> None:
    c.agents.seed("acme", "a")
    c.runs.add(_completed("r1", "d1", "2026-12-01T01:00:00.000Z", 4, 1))
    c.runs.add(_completed("r2", "d1", "2026-12-01T02:00:00.000Z", 4, 4))
    c.runs.delete("acme", "r2")
    [summary] = summaries.summarize_agents(c, ACME, [{"agentId": "a", "version": 3}])
    assert (summary.run_ids, summary.total, summary.passed, summary.verdict) == (
        ["r1"],
        4,
        1,
        "partial",
    )
    c.runs.delete("acme", "r1")
    [none] = summaries.summarize_agents(c, ACME, [{"agentId": "a", "version": 3}])
    assert (none.evaluations, none.verdict) == (0, "none")


def test_a_grade_again_moves_the_verdict_of_the_latest_run(c: FakeContainer) -> None:
    c.agents.seed("acme", "a")
    run = _completed("r1", "d1", "2026-12-01T01:00:00.000Z", 4, 1)
    c.runs.add(run)
    assert c.runs.record_outcome(run, an_outcome(total=4, passed=4))
    [summary] = summaries.summarize_agents(c, ACME, [{"agentId": "a", "version": 3}])
    assert (summary.passed, summary.verdict) == (4, "pass")


def test_a_draft_s_verdict_is_stale_once_the_draft_changed(
    c: FakeContainer,
) -> None:
    for agent_id in ("a", "b"):
        c.agents.seed("acme", agent_id)
    c.agents.kept[("acme", "a")] = replace(c.agents.get("acme", "a"), draft_spec_hash="h-now")
    c.agents.kept[("acme", "b")] = replace(c.agents.get("acme", "b"), draft_spec_hash="h-now")
    draft = replace(
        _completed("r1", "d1", "2026-12-01T01:00:00.000Z", 2, 2),
        draft=True,
        resolved_version=None,
        spec_hash="h-then",
    )
    c.runs.add(draft)
    c.runs.add(replace(draft, run_id="r2", agent_id="b", spec_hash="h-now"))
    asked = [{"agentId": "a", "version": "draft"}, {"agentId": "b", "version": "draft"}]
    a, b = summaries.summarize_agents(c, ACME, asked)
    assert (a.verdict, a.stale, b.verdict, b.stale) == ("pass", True, "pass", False)


def test_an_unknown_agent_before_a_malformed_entry_is_what_is_refused(c: FakeContainer) -> None:
    c.agents.seed("acme", "a")
    with pytest.raises(NotFoundError) as unknown:
        summaries.summarize_agents(
            c, ACME, [{"agentId": "a", "version": 1}, {"agentId": "x", "version": 1}, {}]
        )
    assert (unknown.value.field, str(unknown.value)) == ("agent_id", "agent x not found")
    with pytest.raises(InvalidInputError) as malformed:
        summaries.summarize_agents(c, ACME, [{"agentId": "a", "version": 1}, {}, {"agentId": "x"}])
    assert malformed.value.field == "agents[1].agentId"
