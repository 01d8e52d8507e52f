"""Agent runs and usage (docs/reference/usage.md): production runs reported by the platform that
serves the agents, the runs an eval is (surface `eval`) and its judge's (`grader`), history per
agent and the month's figures, production apart from the eval traffic."""

from __future__ import annotations

from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain import access
from chalicelib.domain.agent_runs import (
    AgentRun,
    Surface,
    SurfaceUsage,
    is_agent_run_id,
    month_ok,
    parse_report,
    parse_surface,
    production_run_id,
    surfaces_listed,
    usd,
)
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.events import RunEnded, SlotReleased
from chalicelib.domain.identity import Identity
from chalicelib.domain.models import Case, CaseRequest
from chalicelib.domain.records import Run
from chalicelib.errors import InvalidInputError, NotFoundError
from chalicelib.services import budgets, redacting

LABELS = {Surface.PRODUCTION: "Production", Surface.EVAL: "Eval", Surface.GRADER: "Grader"}
"""How the console and the API name each surface."""
MAX_PAGE = 100
"""Most runs one page of history carries."""


def report(c: Container, who: Identity, body: Any) -> dict[str, Any]:
    """Record production runs (`POST /api/v1/usage/runs`): each once by its `key`, spending from
    the agent's and the organization's monthly budgets this month.

    Needs `settings:manage` (the platform's key). Returns `{accepted, duplicates}`.
    Raises InvalidInputError (400, naming the field), ForbiddenError, NotFoundError (an agent the
    organization does not have, naming `runs[i].agent_id`).
    """
    who.require(access.SETTINGS_MANAGE, "reporting production usage")
    reported = parse_report(body)
    known: set[str] = set()
    for r in reported:
        if r.agent_id not in known:
            try:
                c.agents.get(who.org_id, r.agent_id)
            except NotFoundError:
                raise NotFoundError(
                    f"agent {r.agent_id} not found", field=f"runs[{r.index}].agent_id"
                ) from None
            known.add(r.agent_id)
    now = c.clock.now()
    redactor = redacting.for_org(c, who.org_id)
    runs = [
        AgentRun(
            agent_run_id=production_run_id(who.org_id, r.key),
            org_id=who.org_id,
            agent_id=r.agent_id,
            surface=Surface.PRODUCTION.value,
            started_at=iso(now),
            started_ms=epoch_ms(now),
            version=r.version,
            model=r.model,
            asked=redactor.text(r.asked) if r.asked else None,
            cost_micros=r.cost_micros,
            input_tokens=r.input_tokens,
            output_tokens=r.output_tokens,
            key=r.key,
        )
        for r in reported
    ]
    accepted = c.usage.report(who.org_id, budgets.month_of(now), runs)
    return {"accepted": accepted, "duplicates": len(runs) - accepted}


def view(c: Container, who: Identity, run: AgentRun, *, full: bool = False) -> dict[str, Any]:
    """An agent run as the API shows it; `eval_case`, and what an eval case was asked, only for a
    reader who may see its dataset; what the model was given (`request`) only with `full`."""
    out: dict[str, Any] = {
        "agent_run_id": run.agent_run_id,
        "agent_id": run.agent_id,
        "surface": run.surface,
        "label": LABELS[Surface(run.surface)],
        "version": run.version,
        "draft": run.draft,
        "model": run.model,
        "status": run.status,
        "asked": run.asked,
        "cost_usd": usd(run.cost_micros),
        "input_tokens": run.input_tokens,
        "output_tokens": run.output_tokens,
        "latency_ms": run.latency_ms,
        "started_at": run.started_at,
        "ran_as": run.ran_as,
    }
    case = run.eval_case
    if case is not None and who.sees("dataset", case.dataset_id):
        out["eval_case"] = {"run_id": case.run_id, "case_id": case.case_id, "attempt": case.attempt}
    elif case is not None:
        out["asked"] = None  # a case's question is its dataset's
    if full and (case is None or "eval_case" in out):  # what a case asked shows with its dataset
        out["request"] = _request(c, run)
    return out


def _request(c: Container, run: AgentRun) -> Any:
    """What the model was given: an eval run's case request, rebuilt from its case (a dataset
    version never changes; its secrets were redacted when it was saved, and are again with the
    organization's own values), else what was kept with the run (None: nothing)."""
    case = run.eval_case
    if run.surface != Surface.EVAL.value or case is None:
        return run.request
    raw = c.datasets.get_case(run.org_id, case.dataset_id, case.dataset_version, case.case_id)
    if raw is None:
        return None
    request = CaseRequest.of(Case.model_validate(raw), case.run_id, case.attempt)
    return redacting.for_org(c, run.org_id).value(request.model_dump(mode="json"))


def get(c: Container, who: Identity, agent_run_id: str) -> dict[str, Any]:
    """One agent run (`GET /api/v1/runs/{id}`), with what the model was given.

    Raises ForbiddenError without `runs:view`; NotFoundError (404) for an id of another
    organization, or an agent the caller may not see."""
    who.require(access.RUNS_VIEW, "reading an agent run")
    run = c.usage.get(who.org_id, agent_run_id) if is_agent_run_id(agent_run_id) else None
    if run is None or not who.sees("agent", run.agent_id):
        raise NotFoundError(f"run {agent_run_id} not found", field="run_id")
    return view(c, who, run, full=True)


def _listing(
    surface: Any, exclude_surface: Any, before: Any, limit: Any
) -> tuple[tuple[str, ...], int]:
    """The surfaces a listing reads and its page size, from its query.

    Raises InvalidInputError naming `surface`, `exclude_surface`, `limit` or `before`."""
    surfaces = surfaces_listed(
        parse_surface(surface, "surface"), parse_surface(exclude_surface, "exclude_surface")
    )
    try:
        size = MAX_PAGE if limit in (None, "") else int(limit)
    except (TypeError, ValueError):
        size = 0
    if not 1 <= size <= MAX_PAGE:
        raise InvalidInputError(f"limit must be from 1 to {MAX_PAGE}", field="limit")
    if before is not None and (not isinstance(before, str) or len(before) > 60):
        raise InvalidInputError("before must be a cursor from an earlier page", field="before")
    return surfaces, size


def history(
    c: Container,
    who: Identity,
    agent_id: str,
    *,
    surface: Any = None,
    exclude_surface: Any = None,
    before: Any = None,
    limit: Any = None,
) -> dict[str, Any]:
    """The agent's runs, newest first (`GET /api/v1/agents/{id}/runs`): `{runs, next}`.

    Raises InvalidInputError naming `surface`, `exclude_surface`, `limit` or `before`;
    ForbiddenError without `runs:view`; NotFoundError for an agent the caller may not see."""
    who.require(access.RUNS_VIEW, "reading an agent's runs")
    who.require_sight("agent", agent_id)
    c.agents.get(who.org_id, agent_id)
    surfaces, size = _listing(surface, exclude_surface, before, limit)
    runs, cursor = c.usage.list_for_agent(
        who.org_id, agent_id, surfaces, before=before or None, limit=size
    )
    return {"runs": [view(c, who, r) for r in runs], "next": cursor}


def activity(
    c: Container,
    who: Identity,
    *,
    surface: Any = None,
    exclude_surface: Any = None,
    before: Any = None,
    limit: Any = None,
) -> dict[str, Any]:
    """The organization's runs across its agents, newest first (`GET /api/v1/runs`, the
    console's Activity): `{runs, next}`, only those of agents the caller may see (a page may
    hold fewer than `limit` runs and still have a `next`).

    Raises InvalidInputError naming `surface`, `exclude_surface`, `limit` or `before`;
    ForbiddenError without `runs:view`."""
    who.require(access.RUNS_VIEW, "reading runs")
    surfaces, size = _listing(surface, exclude_surface, before, limit)
    runs, cursor = c.usage.list_for_org(who.org_id, surfaces, before=before or None, limit=size)
    shown = [view(c, who, r) for r in runs if who.sees("agent", r.agent_id)]
    return {"runs": shown, "next": cursor}


def _figures(by_surface: dict[str, SurfaceUsage]) -> dict[str, Any]:
    p, e, g = (by_surface[s.value] for s in (Surface.PRODUCTION, Surface.EVAL, Surface.GRADER))
    return {
        "cost": {
            "production_usd": usd(p.cost_micros),
            "eval_usd": usd(e.cost_micros),
            "grader_usd": usd(g.cost_micros),
        },
        "tokens": {
            s: {"input": u.input_tokens, "output": u.output_tokens} for s, u in by_surface.items()
        },
        "runs": {s: u.runs for s, u in by_surface.items()},
    }


def month_usage(c: Container, who: Identity, month: Any = None) -> dict[str, Any]:
    """The month's usage (`GET /api/v1/usage?month=YYYY-MM`, default this month): production's
    figures with the eval and grader traffic beside them, for the organization and per agent the
    caller may see.

    Raises InvalidInputError naming `month`; ForbiddenError without `runs:view`."""
    who.require(access.RUNS_VIEW, "reading usage")
    month = month or budgets.month_of(c.clock.now())
    if not isinstance(month, str) or not month_ok(month):
        raise InvalidInputError("month must be YYYY-MM", field="month")
    org, agents = c.usage.month(who.org_id, month)
    return {
        "month": month,
        **_figures(org),
        "agents": [
            {"agent_id": agent_id, **_figures(figures)}
            for agent_id, figures in sorted(agents.items())
            if who.sees("agent", agent_id)
        ],
    }


def count(c: Container, run: Run) -> None:
    """Count what `run` (as read) answered and graded since its last count in its month's usage
    (`Usage.count_run`), reading it again after a count that lost to another."""
    for _ in range(3):
        if c.usage.count_run(run, budgets.month_of(c.clock.now())):
            return
        again = c.runs.get(run.org_id, run.run_id)
        if again is None or again.usage_counts == run.usage_counts:
            return  # nothing new to count
        run = again


def count_ended(c: Container, event: RunEnded | SlotReleased) -> None:
    """An eval run ended, or a slot of one went back (an attempt in flight at its end was
    recorded since): count what it answered and graded since its last count. A completed run was
    counted as it completed (`finalize`); this counts the runs that ended otherwise."""
    run = c.runs.get(event.org_id, event.run_id)
    if run is not None and RunStatus(run.status).ended:
        count(c, run)
