"""What an estimate reads of the agent's history and of the organization's started runs
(docs/guides/costs.md), on fakes: the newest completed runs per model, and the queued and running
runs' estimates less what they spent."""

from __future__ import annotations

from typing import Any

from chalicelib.config import Settings
from chalicelib.domain.estimate_rules import CostHistory
from chalicelib.domain.records import Run
from chalicelib.services import estimates
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run, an_arm, an_arm_result, an_outcome


def _completed(run_id: str, hour: int, model: str, cost: int, attempts: int, **fields: Any) -> Run:
    return a_run(
        run_id,
        status="completed",
        created_at=f"2026-12-01T{hour:02d}:00:00.000Z",
        completed_at=f"2026-12-01T{hour:02d}:30:00.000Z",
        arms=(an_arm(spec={"model": model}),),
        outcome=an_outcome(
            arms={"candidate": an_arm_result(cases=3, cost_micros=cost, attempts=attempts)}
        ),
        **fields,
    )


def test_each_model_is_priced_from_its_newest_sample_of_completed_runs() -> None:
    c = FakeContainer(settings=Settings(eval_estimate_sample=2))
    c.runs.add(_completed("r1", 1, "m", 900, 3))
    c.runs.add(_completed("r2", 2, "m", 60, 4))
    c.runs.add(_completed("r3", 3, "m", 100, 2))
    c.runs.add(_completed("r4", 4, "other", 7, 1))
    c.runs.add(a_run("r5", status="failed", arms=(an_arm(spec={"model": "m"}),)))
    answers, grading = estimates._history(c, "acme", "a", {"m", "unknown"}, None)
    assert answers == {"m": CostHistory(cost_micros=160, attempts=6, runs=2)}  # r3 and r2
    assert grading == {}


def test_the_judge_is_priced_from_the_runs_it_graded() -> None:
    c = FakeContainer(settings=Settings(eval_estimate_sample=50))
    judged = {"settings": {"judge_model": "j"}, "judge_cost_micros": 30, "judge_calls": 6}
    c.runs.add(_completed("r1", 1, "m", 10, 2, **judged))
    c.runs.add(_completed("r2", 2, "m", 10, 2, **{**judged, "judge_calls": 0}))  # asked nothing
    _, grading = estimates._history(c, "acme", "a", set(), "j")
    assert grading == {"j": CostHistory(cost_micros=30, attempts=6, runs=1)}


def test_a_deleted_run_leaves_the_model_s_history() -> None:
    c = FakeContainer()
    c.runs.add(_completed("r1", 1, "m", 900, 3))
    c.runs.add(_completed("r2", 2, "m", 60, 4))
    c.runs.delete("acme", "r2")
    answers, _ = estimates._history(c, "acme", "a", {"m"}, None)
    assert answers == {"m": CostHistory(cost_micros=900, attempts=3, runs=1)}


def test_committed_spend_is_each_started_run_s_estimate_less_what_it_spent() -> None:
    c = FakeContainer()

    def started(run_id: str, status: str, agent_id: str, estimate: int, spent: int) -> Run:
        return a_run(
            run_id,
            status=status,
            agent_id=agent_id,
            settings={"estimate": {"total_micros": estimate}},
            cost_micros=spent,
            judge_cost_micros=1,
        )

    c.runs.add(started("q", "queued", "a", 500, 0))  # 500 - 0 - 1 = 499 left
    c.runs.add(started("r", "running", "a", 300, 100))  # 300 - 100 - 1 = 199 left
    c.runs.add(started("o", "running", "b", 50, 80))  # spent past its estimate: 0 left
    c.runs.add(started("done", "completed", "a", 999, 0))  # ended: commits nothing
    assert estimates._committed(c, "acme", "a") == (698, 698)
