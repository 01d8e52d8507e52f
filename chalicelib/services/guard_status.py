"""Where each guard of an agent stands on each environment (docs/guides/suites.md, "Guard
status"), and which guards' results a promotion may stand on without running them again.

A guard's result holds while a run of it now would measure the same (`domain.guard_rules`): the
dataset version the suite would use, the scoring, its threshold, and the version the environment
serves as the baseline. Reviewers are named from the organization's members as they are when
read, never from what the result kept.
"""

from __future__ import annotations

from dataclasses import dataclass, field
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain.guard_rules import (
    GuardState,
    Measured,
    guard_state,
    measured,
    passed_through_review,
    why_out_of_date,
)
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Suite, SuiteResultEntry
from chalicelib.domain.spec import spec_hash
from chalicelib.errors import NotFoundError
from chalicelib.services import environments, judges

RESULTS_READ = 200
"""How many of a guard's newest results a read looks through for one of a version."""


def measure_now(c: Container, org_id: str, suite: Suite, baseline_version: int | None) -> Measured:
    """What a run of `suite` started now would be measured on, against `baseline_version`: the
    dataset version it would use (a guard's pin, else the suite's, else the latest), that version's
    scoring with the guard's judge pin laid over it (as a run pins it), and the suite's threshold.
    A dataset or version that is gone measures as version None and no scoring (never current)."""
    pins = (suite.pins if suite.guards else None) or {}
    version = pins.get("dataset_version") or suite.dataset_version
    scoring_hash = None
    try:
        if version is None:
            version = c.datasets.get(org_id, suite.dataset_id).latest_version or None
        if version is not None:
            found = c.datasets.get(org_id, suite.dataset_id, int(version))
            if found.scoring is not None:
                scoring_hash = spec_hash(
                    judges.pin_scoring(found.scoring, pins.get("judge_version"))
                )
    except NotFoundError:
        version = None
    return measured(
        dataset_id=suite.dataset_id,
        dataset_version=int(version) if version is not None else None,
        scoring_hash=scoring_hash,
        threshold=suite.threshold,
        baseline_version=baseline_version,
    )


def latest_result(
    c: Container, suite: Suite, version: int | None = None
) -> SuiteResultEntry | None:
    """The guard's newest result (of `version`, when given) among its newest `RESULTS_READ`."""
    for result in c.suites.results(suite.org_id, suite.agent_id, suite.suite_id, RESULTS_READ):
        if version is None or result.version == version:
            return result
    return None


def out_of_date(
    c: Container, suite: Suite, result: SuiteResultEntry, served: int | None
) -> str | None:
    """Why `result` no longer holds for the guard on an environment serving `served`; None while
    it holds. A result without a run measured nothing and is never out of date; a result of the
    very version served is not compared with a baseline."""
    if not result.run_id:
        return None
    now = measure_now(c, suite.org_id, suite, served)
    compare_baseline = result.version is None or int(result.version) != served
    return why_out_of_date(result.measured, now, compare_baseline=compare_baseline)


def reusable_pass(
    c: Container, suite: Suite, version: int, served: int | None
) -> SuiteResultEntry | None:
    """The guard's newest result of `version` when a promotion of it onto an environment serving
    `served` may stand on it without running the guard again: a pass through review
    (`passed_through_review`) that still holds (`out_of_date` None, compared with `served`);
    None otherwise."""
    result = latest_result(c, suite, version)
    if result is None or not result.run_id or not passed_through_review(result):
        return None
    now = measure_now(c, suite.org_id, suite, served)
    return result if why_out_of_date(result.measured, now) is None else None


@dataclass(frozen=True)
class GuardOnEnvironment:
    """One guard of an environment and its state (`GuardState`), with its newest result (None:
    not checked) and why that result is out of date."""

    suite: Suite
    state: GuardState
    result: SuiteResultEntry | None = None
    why_out_of_date: str | None = None


@dataclass(frozen=True)
class EnvironmentGuards:
    """An environment, the version of the agent it serves (None: none) and its guards."""

    environment_id: str
    serving: int | None
    guards: list[GuardOnEnvironment] = field(default_factory=list)


def _environment_of(c: Container, suite: Suite) -> str | None:
    """The id of the environment a suite checks (the default for None); None when it is gone."""
    try:
        return environments.resolve(c, suite.org_id, suite.environment_id).environment_id
    except NotFoundError:
        return None


def status(c: Container, who: Identity, agent_id: str) -> list[EnvironmentGuards]:
    """Every environment of the organization (by id) with the version of the agent it serves and
    each of the agent's guards of it (by suite id) in its state. Raises NotFoundError (field
    `agent_id`) for an agent the organization does not have."""
    c.agents.get(who.org_id, agent_id)
    guards = [s for s in c.suites.of_agent(who.org_id, agent_id) if s.guards]
    by_env: dict[str, list[Suite]] = {}
    for suite in guards:
        env_id = _environment_of(c, suite)
        if env_id is not None:
            by_env.setdefault(env_id, []).append(suite)
    out = []
    for env in sorted(c.environments.list(who.org_id), key=lambda e: e.environment_id):
        served = (env.serving or {}).get(agent_id)
        served = int(served) if served is not None else None
        states = []
        for suite in sorted(by_env.get(env.environment_id, []), key=lambda s: s.suite_id):
            result = latest_result(c, suite)
            why = out_of_date(c, suite, result, served) if result is not None else None
            states.append(GuardOnEnvironment(suite, guard_state(result, why), result, why))
        out.append(EnvironmentGuards(env.environment_id, served, states))
    return out


def members_now(c: Container, org_id: str) -> set[str]:
    """The user ids of the organization's members as they are now (reviewers are named from it)."""
    return {m.user_id for m in c.members.list(org_id)}


def reviewers(user_ids: list[str] | None, members: set[str]) -> list[dict[str, Any]]:
    """`[{user_id, name}]` for the reviewers of a result, named from the organization's members as
    they are now (`members_now`): a member's name is their user id; a person who is no longer a
    member is `name: None` (never a name the result kept)."""
    return [{"user_id": u, "name": u if u in members else None} for u in user_ids or []]
