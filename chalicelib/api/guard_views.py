"""How the guard status of an agent reads (`GET /api/v1/agents/{id}/guards`,
docs/guides/suites.md "Guard status")."""

from __future__ import annotations

from typing import Any

from chalicelib.domain.guard_rules import GuardState
from chalicelib.services.guard_status import EnvironmentGuards, GuardOnEnvironment, reviewers


def guard_view(guard: GuardOnEnvironment, members: set[str]) -> dict[str, Any]:
    """One guard on an environment: `{suite_id, name, state, result, result_before_review,
    reviewed_by: [{user_id, name}], run_id, version, completed_at}`, plus `why_out_of_date` when
    its state is `out_of_date`. Reviewers are named from `members` (the organization's members
    now; `name` None for a person who is no longer one)."""
    result = guard.result
    out: dict[str, Any] = {
        "suite_id": guard.suite.suite_id,
        "name": guard.suite.name or guard.suite.suite_id,
        "state": guard.state.value,
        "result": result.result if result else None,
        "result_before_review": result.result_before_review if result else None,
        "reviewed_by": reviewers(result.reviewed_by, members) if result else [],
        "run_id": result.run_id if result else None,
        "version": int(result.version) if result and result.version is not None else None,
        "completed_at": result.completed_at if result else None,
    }
    if guard.state is GuardState.OUT_OF_DATE:
        out["why_out_of_date"] = guard.why_out_of_date
    return out


def guard_status_view(found: list[EnvironmentGuards], members: set[str]) -> dict[str, Any]:
    """`{"environments": [{environment_id, serving, guards: [guard_view...]}]}`: every environment
    of the organization, with the version of the agent it serves (None: none)."""
    return {
        "environments": [
            {
                "environment_id": env.environment_id,
                "serving": env.serving,
                "guards": [guard_view(g, members) for g in env.guards],
            }
            for env in found
        ]
    }
