"""The run views of `api/views.py` (issue 10 scope 3): what `GET /eval-runs/{id}` and its attempts
answer, from frozen records, hand-checked field by field."""

from __future__ import annotations

from chalicelib.api import run_views, views
from chalicelib.domain.enums import ArmRole, Verdict
from chalicelib.domain.records import Attempt
from chalicelib.services.grading import GradeAgain, Regraded, Rescore
from chalicelib.services.runs import RunRead
from chalicelib.services.summaries import AgentSummary
from tests.fakes.ledger import a_run, an_arm, an_arm_result, an_outcome


def test_a_run_view_shows_its_pins_costs_arms_without_specs_and_the_kept_outcome() -> None:
    baseline = an_arm(
        "baseline",
        ArmRole.BASELINE,
        version=2,
        spec_hash="h2",
        answers=False,
        rerun=True,
        source_run_id="r0",
        source_arm_id="candidate",
        source_dataset_version=1,
        source_completed_at="2026-12-01T07:00:00.000Z",
    )
    result = an_arm_result(cases=2)
    run = a_run(
        "r1",
        cases=2,
        arm_ids=(),
        arms=(an_arm(), baseline),
        status="completed",
        phase="done",
        created_by="u1",
        started_at="2026-12-01T08:00:01.000Z",
        completed_at="2026-12-01T08:01:00.000Z",
        recorded=4,
        passed=4,
        slots=0,
        cost_micros=1_250_000,
        judge_cost_micros=250_000,
        judge_calls=2,
        input_tokens=100,
        output_tokens=50,
        settings={"warnings": ["w"], "reused_baseline_run_id": "r0"},
        outcome=an_outcome(total=2, passed=2, arms={"candidate": result}),
        expected=4,
    )
    assert run_views.run_view(run) == {
        "run_id": "r1",
        "agent_id": "a",
        "evaluation_id": "implied~a~d",
        "agentId": "a",
        "resolvedAgentVersion": 3,
        "status": "completed",
        "phase": "done",
        "purpose": "check",
        "candidate": "version",
        "resolved_version": 3,
        "draft": False,
        "spec_hash": "h3",
        "dataset_id": "d",
        "dataset_version": 1,
        "environment_id": None,
        "created_at": "2026-12-01T08:00:00.000Z",
        "created_by": "u1",
        "started_at": "2026-12-01T08:00:01.000Z",
        "completed_at": "2026-12-01T08:01:00.000Z",
        "reason": None,
        "progress": {
            "run_id": "r1",
            "status": "completed",
            "phase": "done",
            "recorded": 4,
            "expected": 4,
            "total": 4,
            "fraction": 1.0,
            "passed": 4,
            "failed": 0,
            "incomplete": 0,
            "ungraded": 0,
            "in_flight": 0,
        },
        "cost_usd": 1.25,
        "judge_cost_usd": 0.25,
        "total_cost_usd": 1.5,
        "judge_calls": 2,
        "warnings": ["w"],
        "gradings": [],
        "routed_to_review": None,
        "routed_replacing": None,
        "routing_error": None,
        "recomputing": False,
        "tokens": {"input": 100, "output": 50},
        "arms": [
            {
                "arm_id": "candidate",
                "role": "candidate",
                "version": 3,
                "draft": False,
                "spec_hash": "h3",
                "model_profile_id": None,
                "model": "m",  # the model its spec names
                "replay": None,  # its tool calls were not answered from a recording
            },
            {
                "arm_id": "baseline",
                "role": "baseline",
                "version": 2,
                "draft": False,
                "spec_hash": "h2",
                "model_profile_id": None,
                "model": "m",
                "replay": None,
                "answers": False,
                "rerun": True,
                "source_run_id": "r0",
                "source_arm_id": "candidate",
                "source_dataset_version": 1,
                "source_completed_at": "2026-12-01T07:00:00.000Z",
            },
        ],
        "outcome": {
            "arm_id": "candidate",
            "total": 2,
            "passed": 2,
            "failed": 0,
            "incomplete": 0,
            "ungraded": 0,
            "crashed": 0,
            "pass_rate": 1.0,
            "first_pass_rate": 1.0,
            "average_score": None,
            "verdict": "pass",
            "undecided": 0,
        },
        "stability": None,
        "replay": None,
        "reused_baseline_run_id": "r0",
        "suite_id": None,
        "missing_baseline_version": None,
        "reruns": None,
        "reruns_auto": None,
        "summaries": {
            "candidate": {
                "quality": {
                    "cases": 2,
                    "passed": 2,
                    "failed": 0,
                    "incomplete": 0,
                    "ungraded": 0,
                    "crashed": 0,
                    "pass_rate": 1.0,
                    "first_pass_rate": 1.0,
                    "average_score": 1.0,
                    "undecided": 0,
                    "undecided_reasons": {},
                },
                "efficiency": {
                    "cost_usd": 0.0,
                    "cost_per_passed_case_usd": 0.0,
                    "tokens_per_case": 0.0,
                    "input_tokens": 0,
                    "output_tokens": 0,
                    "latency_p50_ms": None,
                    "latency_p95_ms": None,
                    "cost_micros": 0,
                    "attempts": 2,
                },
                "judges": [],
            }
        },
        "tested": "v3 against v2",
        "verdict_phrase": "No baseline",
    }


def test_a_run_read_adds_what_is_left_to_grade_and_every_attempt() -> None:
    run = a_run("r1", cases=1)
    attempt = Attempt(
        attempt_key="candidate#c1#001",
        run_id="r1",
        recorded_key="0000000000001#candidate#c1#001",
        arm_id="candidate",
        case_id="c1",
        attempt=1,
        state="passed",
        recorded_at="t",
    )
    live = {"candidate": an_arm_result(cases=1)}
    read = run_views.run_read_view(RunRead(run, live, ["r1:candidate#c1#001:judge"], [attempt]))
    assert (
        read["summaries"] == {"candidate": live["candidate"].as_json()} and read["outcome"] is None
    )
    assert read["ungraded_score_ids"] == ["r1:candidate#c1#001:judge"]
    assert read["results"] == [run_views.attempt_view(attempt)]
    assert "results" not in run_views.run_read_view(RunRead(run, None, [], None))


def test_an_attempt_view_scores_the_decided_scores_and_gives_money_in_usd() -> None:
    attempt = Attempt(
        attempt_key="candidate#c1#002",
        run_id="r1",
        recorded_key="0000000000009#candidate#c1#002",
        arm_id="candidate",
        case_id="c1",
        attempt=2,
        state="failed",
        answer="5",
        answer_ref="answers/r1/x",
        calls=[{"name": "add", "arguments": {"a": 2}}],
        scores=[
            {"scorer": "exact", "passed": False, "score": 0.0},
            {"scorer": "judge", "passed": True, "score": 0.5},
            {"scorer": "regex", "passed": None, "score": 1.0},
        ],
        reason="wrong",
        error=None,
        crash=False,
        guardrail=None,
        cost_micros=2_500,
        judge_cost_micros=500,
        judge_calls=1,
        regraded=None,
        input_tokens=7,
        output_tokens=3,
        latency_ms=12,
        model="m",
        recorded_at="2026-12-01T08:30:00.000Z",
    )
    assert run_views.attempt_view(attempt) == {
        "attempt_key": "candidate#c1#002",
        "arm_id": "candidate",
        "case_id": "c1",
        "attempt": 2,
        "state": "failed",
        "passed": False,
        "score": 0.25,
        "answer": "5",
        "answer_bytes": None,  # recorded before the size was kept, and only its start is here
        "answer_truncated": False,
        "answer_whole": False,
        "answer_url": "/api/v1/eval-runs/r1/answer?attempt_key=candidate%23c1%23002",
        "answer_ref": "answers/r1/x",
        "calls": [{"name": "add", "arguments": {"a": 2}}],
        "scores": [
            {"scorer": "exact", "passed": False, "score": 0.0},
            {"scorer": "judge", "passed": True, "score": 0.5},
            {"scorer": "regex", "passed": None, "score": 1.0},
        ],
        "reason": "wrong",
        "error": None,
        "crash": False,
        "guardrail": None,
        "cost_usd": 0.0025,
        "judge_cost_usd": 0.0005,
        "regraded": [],
        "review": None,
        "tokens": {"input": 7, "output": 3},
        "latency_ms": 12.0,
        "model": "m",
        "recorded_at": "2026-12-01T08:30:00.000Z",
    }


def test_an_agent_summary_view_names_the_agent_twice_and_says_its_verdict_word() -> None:
    summary = AgentSummary(
        agent_id="calc",
        version="draft",
        total=6,
        passed=5,
        evaluations=2,
        last_completed_at="2026-12-01T02:00:00.000Z",
        stale=True,
        verdict=Verdict.PARTIAL,
        run_ids=["r2", "r3"],
    )
    view = views.agent_summary_view(summary)
    assert view == {
        "agent_id": "calc",
        "agentId": "calc",
        "version": "draft",
        "total": 6,
        "passed": 5,
        "failed": 1,
        "evaluations": 2,
        "last_completed_at": "2026-12-01T02:00:00.000Z",
        "stale": True,
        "verdict": "partial",
        "run_ids": ["r2", "r3"],
        "p_luck_regression": None,
        "noise": [],
    }
    assert type(view["verdict"]) is str


def test_a_grade_again_view_says_what_each_score_came_to_and_what_it_cost() -> None:
    done = GradeAgain(
        "r1",
        [
            Regraded("r1:a#c1#001:judge", state_before="incomplete", state="passed", reason="ok"),
            Regraded(
                "r1:a#c2#001:judge",
                state_before="failed",
                kept="failed",
                reason="the earlier grade is kept: timeout",
            ),
            Regraded("r1:a#c3#001:judge", skipped="graded meanwhile"),
        ],
        changed=1,
        still_ungraded=[],
        pending=["r1:a#c4#001:judge"],
        judge_cost_micros=1_500,
        stopped=None,
    )
    expected = {
        "run_id": "r1",
        "graded": 1,
        "changed": 1,
        "still_ungraded": [],
        "pending": ["r1:a#c4#001:judge"],
        "judge_cost_usd": 0.0015,
        "stopped": None,
        "scores": [
            {
                "score_id": "r1:a#c1#001:judge",
                "state_before": "incomplete",
                "state": "passed",
                "reason": "ok",
            },
            {
                "score_id": "r1:a#c2#001:judge",
                "state_before": "failed",
                "kept": "failed",
                "reason": "the earlier grade is kept: timeout",
            },
            {"score_id": "r1:a#c3#001:judge", "skipped": "graded meanwhile"},
        ],
    }
    assert run_views.grade_again_view(done) == expected
    assert run_views.rescore_view(Rescore("ds", [done, done])) == {
        "dataset_id": "ds",
        "runs": [expected, expected],
        "graded": 2,
        "changed": 2,
    }
