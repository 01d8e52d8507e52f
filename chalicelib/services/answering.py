"""Asking one case attempt and grading its answer (docs/architecture/run-lifecycle.md): the
agent is asked with the attempt's tools (docs/guides/tools.md: in process, or through the tool
gateway for an agent that calls its tools itself), retrying provider errors within
the case timeout, and the answer is graded with the run's scoring. What is kept is redacted with
the organization's secrets. `run_case` records the result once.
"""

from __future__ import annotations

import json
from dataclasses import dataclass, field, replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import agent_output, scorers
from chalicelib.domain import judge_rules as judge_rules
from chalicelib.domain.enums import AttemptState
from chalicelib.domain.models import (
    AgentAnswer,
    Case,
    CaseRequest,
    Grade,
    ScoreResult,
    ScoringConfig,
)
from chalicelib.domain.records import Arm, BudgetReading, Run
from chalicelib.domain.redaction import Known
from chalicelib.domain.run_rules import Task
from chalicelib.errors import AgentCrashError, AssayError, InvalidInputError
from chalicelib.services import asking, budgets, judges, redacting, tool_calls
from chalicelib.services import gateway as tool_gateway
from chalicelib.services.ports.tools import ToolCallFailed

DIVERGENT_REASON = "divergent: the recording holds no answer for this case"
"""The reason of an attempt whose recorded agent's recording lacks the case: one text for every
such case, so a run's undecided reasons count them together (the attempt's `error` names the
case)."""


@dataclass
class AttemptResult:
    """What one attempt came to, before it is written."""

    state: AttemptState
    answer: str | None = None
    calls: list[dict[str, Any]] = field(default_factory=list)
    scores: list[dict[str, Any]] = field(default_factory=list)
    reason: str = ""
    error: str | None = None
    crash: bool = False
    cost_micros: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    model: str | None = None
    guardrail: str | None = None
    judge_cost_micros: int = 0
    judge_calls: int = 0
    budget_exceeded: budgets.Exhausted | None = None
    """Set when a budget ran out before a model request: the run ends `budget_exceeded`."""
    asked: str | None = None
    """The case's question when the agent was asked it (redacted when the case was saved); None
    when it was never asked: the attempt is then no agent run (docs/reference/usage.md)."""


def ask_and_grade(
    c: Container,
    run: Run,
    arm: Arm,
    case: Case,
    task: Task,
    *,
    budget_read: BudgetReading | None = None,
) -> AttemptResult:
    """`_ask_and_grade`, with the question (`AttemptResult.asked`) when the agent was asked it:
    the attempt is then an agent run of the surface `eval`."""
    given: list[CaseRequest] = []
    result = _ask_and_grade(c, run, arm, case, task, budget_read=budget_read, given=given)
    if not given or (result.budget_exceeded is not None and result.answer is None):
        return result  # never asked, or stopped by a budget before its first model request
    return replace(result, asked=case.input)


def _ask_and_grade(
    c: Container,
    run: Run,
    arm: Arm,
    case: Case,
    task: Task,
    *,
    budget_read: BudgetReading | None = None,
    given: list[CaseRequest],
) -> AttemptResult:
    """Ask the arm's agent the case (retrying provider errors), then grade the answer.

    Both budgets are checked before every model request (the agent's tries and the judge's) and
    each request's real cost is charged to them (docs/reference/access.md). Expected
    failures are states, not exceptions: provider errors after retries → `incomplete`, the
    agent's own failure → `failed` with `crash`, a recorded agent whose recording lacks the case →
    `incomplete` saying it is divergent (`DIVERGENT_REASON`), a scorer that raised →
    `incomplete`, a budget
    spent before the agent was asked → `incomplete` with `budget_exceeded` set, tokens or a cost
    past the operator's bounds (`ASSAY_REQUEST_MAX_TOKENS`, `ASSAY_REQUEST_MAX_COST_USD`) →
    `incomplete` naming the bound, its answer kept ungraded and nothing charged.
    `budget_read`: the budgets as read with the run a moment ago, used for the first try's check.
    """
    spec = arm.spec
    request = CaseRequest.of(case, run.run_id, task.attempt)
    session = None
    try:
        tools = tool_calls.toolbox_for(
            c,
            run,
            arm,
            case.case_id,
            task.key,
            recording_entry=tool_calls.recording_entry(c, run, request),
        )
        if spec.get("runtime") in tool_calls.REPORTING_RUNTIMES and c.settings.assay_public_url:
            # The agent calls its tools itself: through the attempt's session at the tool gateway.
            session = tool_gateway.open(c, run, tools, tool_gateway.until(c))
    except InvalidInputError as exc:
        return AttemptResult(
            AttemptState.FAILED,
            crash=True,
            error=exc.message,
            reason=f"agent crashed: the spec cannot run: {exc.message}"[:500],
        )
    except ToolCallFailed as exc:
        # Not the agent's failure: its tools could not be listed, so the case is not decided.
        return AttemptResult(
            AttemptState.INCOMPLETE,
            error=str(exc),
            reason=f"the agent's tools could not be listed: {exc}"[:500],
        )
    try:
        given.append(request)
        asked = asking.ask(
            c,
            run.org_id,
            run.agent_id,
            spec,
            request,
            budget_read=budget_read,
            tools=tools,
            gateway=session,
        )
    finally:
        if session is not None:  # no call after the answer; those made are the attempt's
            tools.calls = tool_gateway.close(c, session)
    latency = asked.latency_ms
    # Everything kept below is redacted, with the organization's own secret values too
    # (docs/reference/data-protection.md), and the attempt's gateway token; grading reads the
    # original answer in memory first.
    r = redacting.for_org(c, run.org_id)
    if session is not None:
        r = r.knowing((session.gateway.token, tool_gateway.TOKEN_KIND))
        looped = tools.loop_at()
        if looped is not None and asked.answer is not None:
            # The loop rule of every runtime (docs/guides/tools.md), on the calls it made.
            name, times = tools.calls[looped].name, tool_calls.LOOP_REPEATS
            asked.answer = None
            asked.crash = AgentCrashError(
                f"the agent called {name} {times} times in a row with the same arguments: a loop"
            )
    if asked.exhausted is not None:
        return AttemptResult(
            AttemptState.INCOMPLETE,
            reason=r.text(asked.exhausted.reason),
            budget_exceeded=asked.exhausted,
            latency_ms=latency,
        )
    if asked.crash is not None:
        crash = r.text(str(asked.crash))
        return AttemptResult(
            AttemptState.FAILED,
            crash=True,
            error=crash,
            reason=r.text(f"agent crashed: {crash}"[:500]),
            latency_ms=latency,
            calls=[
                r.value(call)
                for call in tool_calls.calls_json(agent_output.bound_calls(tools.calls))
            ],
            cost_micros=asked.cost_micros,  # charged already when a loop made the answer a crash
        )
    if asked.divergent is not None:
        return AttemptResult(
            AttemptState.INCOMPLETE,
            error=r.text(str(asked.divergent))[:500],
            reason=DIVERGENT_REASON,
            latency_ms=latency,
        )
    if asked.provider_error is not None:
        error = r.text(str(asked.provider_error))
        if asked.provider_error.credentials_missing:
            reason = error[:500]
        elif asked.provider_error.status in (401, 403):
            reason = "provider rejected the credentials"
        else:
            reason = r.text(f"provider error after {asked.tries} tries: {error}"[:500])
        return AttemptResult(
            AttemptState.INCOMPLETE, latency_ms=latency, error=error, reason=reason
        )
    answer, cost = (
        asked.answer,
        asked.cost_micros,
    )  # no exhaustion, crash or provider error: an answer
    if answer is None:  # and should none come, the case is not decided, never passed or failed
        return AttemptResult(
            AttemptState.INCOMPLETE, latency_ms=latency, reason="the agent returned no answer"
        )
    # The calls the service decided come first; what the agent only reported is kept beside them,
    # unverified (it may not have made them, or may have made them anywhere).
    # Each call was bounded as it was kept or received (`domain.agent_output`); all together are
    # bounded here.
    kept = agent_output.bound_calls(tool_calls.kept_calls(tools, answer.calls, spec))
    answer = answer.model_copy(update={"calls": kept})
    calls = tool_calls.calls_json(answer.calls)
    # Reasons may quote the original answer, cut short: what is secret in it is redacted there too.
    r = r.learning(answer.answer, json.dumps(calls), answer.model, answer.guardrail)
    if asked.over_bound is not None:
        # Figures past the operator's bound are not believed: the answer is kept, not graded,
        # and neither its cost nor its tokens count anywhere (issue 11, scope 7).
        return AttemptResult(
            AttemptState.INCOMPLETE,
            answer=r.text(answer.answer),
            calls=[r.value(call) for call in calls],
            reason=r.text(asked.over_bound),
            latency_ms=latency,
            model=r.text(answer.model),
            guardrail=r.text(answer.guardrail),
        )
    grade, asker = grade_answer(c, run, case, answer, known=r.known)
    return AttemptResult(
        state=grade.state,
        answer=r.text(answer.answer),
        calls=[r.value(call) for call in calls],
        scores=[r.value(s.model_dump(mode="json")) for s in grade.scores],
        reason=r.text(grade.reason),
        cost_micros=cost,
        input_tokens=answer.usage.input_tokens,
        output_tokens=answer.usage.output_tokens,
        latency_ms=latency,
        model=r.text(answer.model),
        guardrail=r.text(answer.guardrail),
        judge_cost_micros=asker.cost_micros if asker else 0,
        judge_calls=asker.calls if asker else 0,
        budget_exceeded=asker.exhausted if asker else None,
    )


def grade_answer(
    c: Container,
    run: Run,
    case: Case,
    answer: AgentAnswer,
    scores: list[dict[str, Any]] | None = None,
    *,
    known: tuple[Known, ...] = (),
) -> tuple[Grade, judges.Asker | None]:
    """Grade an answer with the run's scoring and, when it names one, the judge grading now.

    A judge that cannot be resolved leaves the answer not graded by it (`incomplete`), saying
    why. With `scores` (grading again) only the judge is asked again: the other scorers' verdicts
    are kept. `known`: the organization's stored values and the secrets learned from the answer
    (`Redactor.known`): a scorer's reason never quotes a piece of one (`scorers.grade`).
    Returns the grade and the judge's asker (its cost and calls), None without a judge.
    """
    scoring = ScoringConfig.model_validate(run.scoring)
    asker: judges.Asker | None = None
    judge_fn: scorers.JudgeFn | None = None
    try:
        asker = judges.for_run(c, run, scoring)
        judge_fn = asker
    except AssayError as exc:
        problem = exc.message
        judge_fn = lambda *_: judge_rules.not_graded(f"judge skipped: {problem}", None)  # noqa: E731
    effective = judges.effective_scoring(scoring, asker.judge if asker else None)
    if scores is None:
        return scorers.grade(case, answer, effective, judge=judge_fn, known=known), asker
    kept = [
        ScoreResult.model_validate(s) for s in scores if s.get("scorer") != judge_rules.JUDGE_SCORER
    ]
    fresh = scorers.grade(
        case,
        answer,
        ScoringConfig(required=[judge_rules.JUDGE_SCORER], settings=effective.settings),
        judge=judge_fn,
        known=known,
    )
    return scorers.combine(kept + fresh.scores, scoring), asker
