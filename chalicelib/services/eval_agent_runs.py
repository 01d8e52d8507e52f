"""The agent runs an eval's attempt is (docs/reference/usage.md): the agent answering the case
(surface `eval`) and the judge grading the answer (surface `grader`), written by the transaction
that records the attempt, so a delivery that comes again never writes two."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from chalicelib.clock import from_epoch_ms, iso
from chalicelib.domain.agent_runs import ASKED_CHARS, AgentRun, EvalCase, Surface
from chalicelib.domain.agent_runs import eval_run_id as eval_agent_run_id
from chalicelib.domain.agent_runs import grader_run_id as grader_agent_run_id
from chalicelib.domain.enums import AttemptState
from chalicelib.domain.records import Attempt, Run
from chalicelib.domain.run_rules import Task

if TYPE_CHECKING:
    from chalicelib.services.answering import AttemptResult


def _status(result: AttemptResult) -> str:
    if result.crash:
        return "failed"
    if result.state in (AttemptState.PASSED, AttemptState.FAILED):
        return "completed"
    return "incomplete"


def of_attempt(run: Run, task: Task, result: AttemptResult, now_ms: int) -> list[AgentRun]:
    """The agent runs `result` is: none when the agent was never asked (`result.asked` None),
    else the eval run, and with it the grader run when a judge graded the answer. Ids derive from
    the eval run and the attempt; times end at `now_ms` (epoch ms)."""
    if result.asked is None:
        return []
    arm = next((a for a in run.arms if a.arm_id == task.arm_id), None)
    started_ms = now_ms - int(result.latency_ms)
    case = EvalCase(
        run_id=run.run_id,
        case_id=task.case_id,
        attempt=task.attempt,
        dataset_id=run.dataset_id,
        dataset_version=int(run.dataset_version),
    )
    common: dict[str, Any] = {
        "org_id": run.org_id,
        "agent_id": run.agent_id,
        "version": arm.version if arm is not None else None,
        "draft": bool(arm.draft) if arm is not None else False,
        "ran_as": run.created_by or None,
        "eval_case": case,
    }
    runs = [
        AgentRun(
            agent_run_id=eval_agent_run_id(run.run_id, task.key),
            surface=Surface.EVAL.value,
            started_at=iso(from_epoch_ms(started_ms)),
            started_ms=started_ms,
            model=result.model,
            status=_status(result),
            asked=result.asked[:ASKED_CHARS],
            cost_micros=result.cost_micros,
            input_tokens=result.input_tokens,
            output_tokens=result.output_tokens,
            latency_ms=result.latency_ms,
            **common,
        )
    ]
    if result.judge_calls:
        graded = result.answer or ""
        runs.append(
            AgentRun(
                agent_run_id=grader_agent_run_id(run.run_id, task.key),
                surface=Surface.GRADER.value,
                started_at=iso(from_epoch_ms(now_ms)),
                started_ms=now_ms,
                model=(run.settings or {}).get("judge_model"),
                status="completed" if result.state != AttemptState.INCOMPLETE else "incomplete",
                asked=f"Graded the answer to case {task.case_id}: {graded}"[:ASKED_CHARS],
                cost_micros=result.judge_cost_micros,
                **common,
            )
        )
    return runs


def of_grading(
    run: Run, attempt: Attempt, *, cost_micros: int, grading: int, now_ms: int
) -> AgentRun:
    """The grader run of the judge grading `attempt` again in the run's `grading`-th "grade
    again" pass (1, 2, ...), ending at `now_ms`."""
    arm = next((a for a in run.arms if a.arm_id == attempt.arm_id), None)
    return AgentRun(
        agent_run_id=grader_agent_run_id(run.run_id, attempt.attempt_key, grading),
        org_id=run.org_id,
        agent_id=run.agent_id,
        surface=Surface.GRADER.value,
        started_at=iso(from_epoch_ms(now_ms)),
        started_ms=now_ms,
        version=arm.version if arm is not None else None,
        draft=bool(arm.draft) if arm is not None else False,
        model=(run.settings or {}).get("judge_model"),
        asked=f"Graded again the answer to case {attempt.case_id}: {attempt.answer or ''}"[
            :ASKED_CHARS
        ],
        cost_micros=cost_micros,
        ran_as=None,
        eval_case=EvalCase(
            run_id=run.run_id,
            case_id=attempt.case_id,
            attempt=int(attempt.attempt),
            dataset_id=run.dataset_id,
            dataset_version=int(run.dataset_version),
        ),
    )


def ids_of_attempt(run: Run, attempt_key: str) -> list[str]:
    """The ids an attempt's agent runs may have (eval, grader, and a grader per "grade again"
    pass the run had, and one more for a pass cut short), for deleting them with the run."""
    passes = len(run.gradings or []) + 1
    return [
        eval_agent_run_id(run.run_id, attempt_key),
        *(grader_agent_run_id(run.run_id, attempt_key, g) for g in range(passes + 1)),
    ]
