"""Evaluations and their run history (docs/guides/by-hand.md).

An evaluation names an agent, a dataset and a version selector. Starting a run of it resolves the
selector once into the run's pinned agent and version and starts an ordinary eval run
(`runs.start_run`: the same budgets, estimate and concurrency as `POST /agents/{id}/eval-runs`).
Its history is its runs newest first, through the runs' evaluation index (never a scan).

A run started without naming an evaluation belongs to the implied evaluation of its agent and
dataset (`domain.evaluations.implied_id`): it has no record, reads as `{implied: true, version:
"latest"}`, lists its runs by the same routes, and cannot be edited or deleted (its runs can).
"""

from __future__ import annotations

import base64
import binascii
import re
import uuid
from dataclasses import dataclass, replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain import access
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.evaluations import (
    EVALUATION_ID_PATTERN,
    LATEST,
    RESERVED_IDS,
    evaluation_of,
    implied_parts,
    selector_of,
)
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Evaluation, Run
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError
from chalicelib.services import access as access_service
from chalicelib.services import runs as run_service

DELETE_PAGE = 200
"""Runs read per page when a delete looks through an evaluation's history."""


def _check_version(c: Container, who: Identity, agent_id: str, selector: str) -> None:
    """A numbered selector must name a published version of the agent (404 naming `version`)."""
    if selector.isdigit() and c.agents.get_version(who.org_id, agent_id, int(selector)) is None:
        raise NotFoundError(f"version {selector} of agent {agent_id} not found", field="version")


def create_evaluation(
    c: Container,
    who: Identity,
    *,
    agent_id: str,
    dataset_id: str,
    version: Any = None,
    name: str = "",
    evaluation_id: str | None = None,
) -> Evaluation:
    """Keep a new evaluation of the organization (`POST /api/evaluations`).

    Args:
        version: `"latest"` (the default), `"published"` or a published version's number.
        evaluation_id: an id of the caller's choosing (`EVALUATION_ID_PATTERN`), else generated.
    Raises:
        NotFoundError: the organization has no such agent (`agent_id`), dataset (`dataset_id`) or
            version (`version`).
        InvalidInputError: a reserved id (`evaluation_id`), a bad selector (`version`).
        ConflictError: the organization has the id already (`evaluation_id`).
    """
    if evaluation_id is not None and (
        evaluation_id in RESERVED_IDS or not re.match(EVALUATION_ID_PATTERN, evaluation_id)
    ):
        raise InvalidInputError(
            f"{evaluation_id!r} cannot be an evaluation id (letters, digits, _ and -; not "
            f"{', '.join(sorted(RESERVED_IDS))})",
            field="evaluation_id",
        )
    selector = selector_of(version)
    access_service.check_start(who, agent_id, dataset_id, draft=False)
    c.agents.get(who.org_id, agent_id)
    c.datasets.get(who.org_id, dataset_id)
    _check_version(c, who, agent_id, selector)
    evaluation = Evaluation(
        org_id=who.org_id,
        evaluation_id=evaluation_id or f"evl_{uuid.uuid4().hex[:12]}",
        name=name,
        agent_id=agent_id,
        dataset_id=dataset_id,
        version=selector,
        created_at=iso(c.clock.now()),
        created_by=who.user_id,
    )
    c.evaluations.create(evaluation)
    return evaluation


def get_evaluation(c: Container, who: Identity, evaluation_id: str) -> Evaluation:
    """The organization's evaluation; an implied one as its agent and dataset make it (selector
    `latest`, no creation time).

    Raises:
        NotFoundError: no such evaluation (an implied one whose agent or dataset the organization
            does not have: `evaluation_id`).
    """
    who.require(access.RUNS_VIEW, "reading an evaluation")
    implied = implied_parts(evaluation_id)
    if implied is None:
        found = c.evaluations.get(who.org_id, evaluation_id)
        if not (who.sees("agent", found.agent_id) and who.sees("dataset", found.dataset_id)):
            raise NotFoundError(f"evaluation {evaluation_id} not found", field="evaluation_id")
        return found
    agent_id, dataset_id = implied
    try:
        if not (who.sees("agent", agent_id) and who.sees("dataset", dataset_id)):
            raise NotFoundError(f"evaluation {evaluation_id} not found", field="evaluation_id")
        c.agents.get(who.org_id, agent_id)
        c.datasets.get(who.org_id, dataset_id)
    except NotFoundError:
        raise NotFoundError(
            f"evaluation {evaluation_id} not found", field="evaluation_id"
        ) from None
    return Evaluation(
        org_id=who.org_id,
        evaluation_id=evaluation_id,
        agent_id=agent_id,
        dataset_id=dataset_id,
        version=LATEST,
        created_at="",
    )


@dataclass(frozen=True)
class EvaluationList:
    """One page of an organization's evaluations by id, and the cursor of the next (None after
    the last)."""

    evaluations: list[Evaluation]
    next_cursor: str | None


def list_evaluations(
    c: Container, who: Identity, *, limit: int = 50, cursor: str | None = None
) -> EvaluationList:
    """The organization's evaluations by id, a page at a time (implied ones have no record and
    are not listed; nor are those of an agent or dataset the caller may not see). Raises
    ForbiddenError without runs:view, InvalidInputError for a bad limit or cursor."""
    who.require(access.RUNS_VIEW, "listing evaluations")
    if not 1 <= limit <= 200:
        raise InvalidInputError("limit must be between 1 and 200", field="limit")
    start = None
    if cursor:
        try:
            start = base64.urlsafe_b64decode(cursor.encode()).decode()
        except (ValueError, binascii.Error, UnicodeError):
            start = None
        if start is None or not re.match(EVALUATION_ID_PATTERN, start):
            raise InvalidInputError("cursor is not one this API gave", field="cursor")
    found, last = c.evaluations.list(who.org_id, limit=limit, start=start)
    found = [
        e for e in found if who.sees("agent", e.agent_id) and who.sees("dataset", e.dataset_id)
    ]
    return EvaluationList(found, base64.urlsafe_b64encode(last.encode()).decode() if last else None)


def _explicit(c: Container, who: Identity, evaluation_id: str, doing: str) -> Evaluation:
    """The organization's evaluation with a record. Raises NotFoundError; ConflictError for an
    implied one (`doing` says what cannot be done to it)."""
    if implied_parts(evaluation_id) is not None:
        get_evaluation(c, who, evaluation_id)
        raise ConflictError(
            f"evaluation {evaluation_id} is implied by its runs and cannot be {doing}: create "
            "one to choose its agent and version",
            field="evaluation_id",
        )
    return get_evaluation(c, who, evaluation_id)


def update_evaluation(
    c: Container, who: Identity, evaluation_id: str, changes: dict[str, Any]
) -> Evaluation:
    """Change an evaluation's `name`, `agent_id` or `version` selector (`PATCH`); its past runs
    keep the agent and version they pinned.

    Access (docs/reference/access.md): what starting a run of it needs, and `agents:edit` on its
    agent - on both agents when it moves to another, as deleting it needs on its agent: a runner
    may run an evaluation, not change one somebody else made.

    Raises:
        NotFoundError: no such evaluation, agent (`agent_id`) or version (`version`).
        ForbiddenError: a permission missing (403 naming it, `agents:edit` on the agent named).
        ConflictError: an implied evaluation. InvalidInputError: a bad selector.
    """
    before = _explicit(c, who, evaluation_id, "changed")
    agents = dict.fromkeys((before.agent_id, changes.get("agent_id") or before.agent_id))
    for agent_id in agents:
        # whoever moves an evaluation must be able to run it on both sides of the move
        access_service.check_start(who, agent_id, before.dataset_id, draft=False)
    for agent_id in agents:
        who.require(access.AGENTS_EDIT, "changing an evaluation", access.agent(agent_id))
    after = before
    if "name" in changes:
        after = replace(after, name=changes["name"] or "")
    if "agent_id" in changes:
        c.agents.get(who.org_id, changes["agent_id"])
        after = replace(after, agent_id=changes["agent_id"])
    if "version" in changes:
        after = replace(after, version=selector_of(changes["version"]))
    _check_version(c, who, after.agent_id, after.version)
    if after != before:
        after = replace(after, updated_at=iso(c.clock.now()))
        c.evaluations.update(before, after)
    return after


def _runs_of(c: Container, who: Identity, evaluation_id: str) -> list[Run]:
    """Every run of the evaluation, newest first (a page of `DELETE_PAGE` at a time)."""
    out: list[Run] = []
    start = None
    while True:
        page = c.runs.list_by_evaluation(who.org_id, evaluation_id, DELETE_PAGE, start)
        out += page.runs
        if page.next_start is None:
            return out
        start = page.next_start


def delete_evaluation(c: Container, who: Identity, evaluation_id: str) -> int:
    """Delete an evaluation and every run of it (each as `DELETE /eval-runs/{id}` deletes one:
    its attempts too, and its part of the verdicts). Refused while one of its runs is queued or
    running. The record goes last, so a delete cut short can be asked again.

    Returns:
        how many runs were deleted.
    Raises:
        NotFoundError: no such evaluation. ConflictError: an implied evaluation, or one with a run
            still running (`evaluation_id`).
    """
    evaluation = _explicit(c, who, evaluation_id, "deleted")
    who.require(
        access.AGENTS_EDIT, "deleting an evaluation and its runs", access.agent(evaluation.agent_id)
    )
    runs = _runs_of(c, who, evaluation_id)
    busy = [r.run_id for r in runs if not RunStatus(r.status).ended or int(r.slots) > 0]
    if busy:
        raise ConflictError(
            f"evaluation {evaluation_id} has runs still running ({', '.join(busy[:5])}): cancel "
            "them and wait for their running cases first",
            field="evaluation_id",
        )
    for run in runs:
        run_service.delete_run(c, who, run.run_id)
    c.evaluations.delete(who.org_id, evaluation_id)
    return len(runs)


def start_evaluation_run(
    c: Container, who: Identity, evaluation_id: str, body: dict[str, Any]
) -> tuple[Run, list[str]]:
    """Start a run of the evaluation (`POST /api/evaluations/{id}/runs`): its selector resolved
    now into the run's pinned agent and version, then an ordinary start (`runs.start_run`).

    Args:
        body: the start's other fields (`dataset_version`, `environment_id`, `paired_baseline`,
            `reruns`, `baseline_run_id`, `model_profile_ids`, `stability`). `reruns: "auto"` is
            chosen as on a plain start (`services.rerun_choice`, from the evaluation's agent and
            dataset): the run keeps `settings["reruns_auto"]` and the warnings carry the sentence.
    Returns:
        (the run as written, warnings for the caller).
    Raises:
        what `get_evaluation` and `runs.start_run` raise; among them InvalidInputError
        (`reruns`) for `"auto"` on a run without a baseline or on a stability run.
    """
    evaluation = get_evaluation(c, who, evaluation_id)
    start = {
        **{k: v for k, v in body.items() if v is not None},
        "dataset_id": evaluation.dataset_id,
        "evaluation_id": evaluation_id,
    }
    return run_service.start_run(c, who, evaluation.agent_id, start)


def list_evaluation_runs(
    c: Container,
    who: Identity,
    evaluation_id: str,
    *,
    limit: int = 50,
    cursor: str | None = None,
) -> run_service.RunList:
    """The evaluation's runs newest first, a page at a time (docs/guides/by-hand.md).

    Raises NotFoundError for an evaluation the organization does not have; InvalidInputError for a
    bad limit or cursor."""
    get_evaluation(c, who, evaluation_id)
    return run_service.list_runs(c, who, evaluation_id=evaluation_id, limit=limit, cursor=cursor)


def _run_of(c: Container, who: Identity, evaluation_id: str, run_id: str) -> Run:
    """The organization's run of the evaluation. Raises NotFoundError for an unknown evaluation
    (`evaluation_id`) or a run that is not of it (`run_id`)."""
    get_evaluation(c, who, evaluation_id)
    run = c.runs.get(who.org_id, run_id)
    if run is None or evaluation_of(run.evaluation_id, run.agent_id, run.dataset_id) != (
        evaluation_id
    ):
        raise NotFoundError(
            f"eval run {run_id} of evaluation {evaluation_id} not found", field="run_id"
        )
    return run


def read_evaluation_run(
    c: Container, who: Identity, evaluation_id: str, run_id: str
) -> run_service.RunRead:
    """One run of the evaluation with all its results, as `GET /eval-runs/{id}` reads it.
    Raises NotFoundError (see `_run_of`)."""
    _run_of(c, who, evaluation_id, run_id)
    return run_service.read_run(c, who, run_id)


def delete_evaluation_run(c: Container, who: Identity, evaluation_id: str, run_id: str) -> None:
    """Delete one run of the evaluation, as `DELETE /eval-runs/{id}` does. Raises NotFoundError
    (see `_run_of`), ConflictError while it runs."""
    _run_of(c, who, evaluation_id, run_id)
    run_service.delete_run(c, who, run_id)
