"""One model request as assay makes it: within the case timeout, retrying provider errors, checking
both monthly budgets before every try and charging the real cost after (docs/reference/runtimes.md,
docs/reference/access.md). The agent's answers and the judge's grades are both asked this way.
"""

from __future__ import annotations

import time
from dataclasses import dataclass
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import agent_output, bounds
from chalicelib.domain.models import AgentAnswer, CaseRequest
from chalicelib.domain.money import token_cost_micros
from chalicelib.domain.records import BudgetReading
from chalicelib.domain.text import clean_text
from chalicelib.errors import (
    AgentCrashError,
    DivergentCallError,
    InvalidInputError,
    ProviderError,
    is_retryable_status,
)
from chalicelib.services import budgets
from chalicelib.services import gateway as tool_gateway
from chalicelib.services.ports import AskContext, ToolCaller, ToolGateway


@dataclass
class Asked:
    """How one request came out: an answer (with its cost), or why there is none."""

    answer: AgentAnswer | None = None
    cost_micros: int = 0
    tries: int = 0
    latency_ms: float = 0.0
    exhausted: budgets.Exhausted | None = None
    """A budget was spent before a try: nothing more was sent."""
    provider_error: ProviderError | None = None
    """The provider failed and retrying could not help (credentials, 4xx) or ran out of tries or
    time."""
    crash: AgentCrashError | None = None
    """The agent's own failure, or a request the provider refused."""
    divergent: DivergentCallError | None = None
    """A recorded agent's recording holds no answer for the case: nothing to grade, nothing to
    retry."""
    over_bound: str | None = None
    """Why the answer's reported tokens or cost are past the operator's bound (`answer` is kept,
    `cost_micros` is 0 and nothing was charged): the attempt is `incomplete` saying so."""


def ask(
    c: Container,
    org_id: str,
    agent_id: str,
    spec: dict[str, Any],
    request: CaseRequest,
    *,
    budget_read: BudgetReading | None = None,
    judge: bool = False,
    tools: ToolCaller | None = None,
    gateway: tool_gateway.GatewaySession | None = None,
) -> Asked:
    """Ask `spec`'s runtime once, retrying provider errors with a retryable status (None, 408, 429,
    5xx) up to `ASSAY_AGENT_RETRIES` times with linear backoff, all within
    `EVALUATION_CASE_TIMEOUT_SECONDS`. Both budgets are checked before every try (`budget_read`:
    the budgets as read a moment ago, used for the first try); the answer's cost (micro-USD, from
    the runtime or priced from usage with `spec["price"]`) is charged to them, as the judge's when
    `judge`; an answer whose tokens or cost are past the operator's bounds is charged nothing and
    says why in `over_bound`. The runtime reads credentials and recordings only through an
    `AskContext` of `org_id` (docs/reference/security.md); a spec that no longer passes its checks
    (the operator's limits changed since it was saved) is the agent's failure. Never raises for an
    expected failure: see `Asked`.

    This is where an agent's and a judge's text enters assay: the answer (text, calls, model,
    guardrail) is bounded here (`domain.agent_output`: strings cleaned - NUL, lone surrogates and
    bytes that are not UTF-8 become U+FFFD - sizes cut, numbers and keys made JSON), and the
    message of a crash or provider error cleaned (`domain.text`), so nothing later can fail to
    serialise, measure, redact or write them (issue 11, scope 6). An answer that cannot be kept
    faithfully (nesting deeper than `agent_output.MAX_NESTING`, values that are not JSON) is the
    agent's failure: `crash` says "returned a malformed answer" and names the place, and nothing is
    charged (as for any malformed payload).

    `tools`: an eval attempt's tools, for a runtime that runs the agent's tool loop itself;
    `gateway`: its open session at the tool gateway, for an agent that calls its tools itself
    (docs/guides/tools.md). A try that failed forgets its calls before the next (both).
    """
    settings = c.settings
    ctx = context(c, org_id, tools, gateway.gateway if gateway is not None else None)
    deadline = time.monotonic() + settings.evaluation_case_timeout_seconds
    started = time.monotonic()
    out = Asked()
    while True:
        out.tries += 1
        out.exhausted = (
            budgets.exhausted(budget_read)
            if out.tries == 1 and budget_read is not None
            else budgets.check(c, org_id, agent_id)
        )
        if out.exhausted is not None:
            break
        if out.tries > 1:  # the calls kept are those of the try that answered
            if tools is not None:
                tools.reset()
            if gateway is not None:
                tool_gateway.restart(c, gateway)
        try:
            out.answer = c.runtimes.runtime_for(spec).ask(
                spec, request, max(0.001, deadline - time.monotonic()), ctx
            )
            break
        except InvalidInputError as exc:
            out.crash = AgentCrashError(f"the spec cannot run: {exc.message}")
            break
        except ProviderError as exc:
            if (
                not is_retryable_status(exc.status)
                or out.tries > settings.assay_agent_retries
                or time.monotonic() >= deadline
            ):
                out.provider_error = exc
                break
            time.sleep(
                min(
                    settings.assay_retry_backoff_seconds * out.tries,
                    max(0.0, deadline - time.monotonic()),
                )
            )
        except AgentCrashError as exc:
            out.crash = exc
            break
        except DivergentCallError as exc:
            out.divergent = exc
            break
    out.latency_ms = (time.monotonic() - started) * 1000
    for error in (out.crash, out.provider_error, out.divergent):
        if error is not None:
            _clean_error(error)
    if out.answer is not None:
        bounded = agent_output.bound_answer(out.answer)
        if bounded.problem is not None:
            out.answer = None
            out.crash = AgentCrashError(
                f"{'the judge' if judge else 'the agent'} returned a malformed answer: "
                f"{bounded.problem}"
            )
        else:
            out.answer = bounded.answer
            _bound_and_charge(c, org_id, agent_id, spec, out, judge=judge)
    return out


def _bound_and_charge(
    c: Container, org_id: str, agent_id: str, spec: dict[str, Any], out: Asked, *, judge: bool
) -> None:
    """Price the answer and charge its cost, unless its tokens (`ASSAY_REQUEST_MAX_TOKENS`) or
    cost (`ASSAY_REQUEST_MAX_COST_USD`) are past the operator's bound: then `over_bound` says
    which, and nothing is charged (issue 11, scope 7)."""
    if out.answer is None:
        return
    settings, usage = c.settings, out.answer.usage
    who = "the judge" if judge else "the agent"
    out.over_bound = bounds.tokens_over_bound(
        usage.input_tokens, usage.output_tokens, settings.assay_request_max_tokens, who
    )
    if out.over_bound is not None:
        return
    cost = (
        out.answer.cost_micros
        if out.answer.cost_micros is not None
        else token_cost_micros(usage.input_tokens, usage.output_tokens, spec.get("price"))
    )
    out.over_bound = bounds.cost_over_bound(cost, settings.request_max_cost_micros, who)
    if out.over_bound is None:
        out.cost_micros = cost
        budgets.charge(c, org_id, agent_id, cost, judge=judge)


def _clean_error(error: Exception) -> None:
    """The error's message (which may quote what the agent sent) cleaned and cut to
    `agent_output.MAX_ERROR_CHARS` in place: the error keeps its type and its facts (a
    `ProviderError`'s `status`, `credentials_missing`). A `python` agent may raise an error of its
    own with any message."""
    error.args = tuple(
        clean_text(agent_output.printed(a))[: agent_output.MAX_ERROR_CHARS] for a in error.args
    )


def context(
    c: Container,
    org_id: str,
    tools: ToolCaller | None = None,
    gateway: ToolGateway | None = None,
) -> AskContext:
    """What a runtime may read while it asks for `org_id`: its secrets and its recordings, by
    name, and an eval attempt's tools (`tools`) or its tool gateway (`gateway`,
    docs/guides/tools.md)."""
    return AskContext(
        org_id,
        secret=lambda name: c.secrets.get(org_id, name),
        recording=lambda recording_id: c.recordings.load(org_id, recording_id),
        tools=tools,
        gateway=gateway,
    )
