"""Deleting an agent or a dataset with everything of theirs (issue 14 scope 6;
docs/reference/data-protection.md: a result "is deleted with its run, and a run with its agent or
its dataset").

A delete goes in three steps, and asking again after one cut short finishes the job:

1. Mark the agent or dataset as being deleted, with a conditional write (`start_deleting`). From
   then on it reads as gone (404), and no run, version, suite, evaluation or promotion of it can be
   written: each of those writes checks the mark in its own transaction (the stores), so a run
   started while the delete goes on is refused rather than left behind without its agent.
2. Refuse (409, naming `agent_id` or `dataset_id`) while one of its runs is queued or running, or
   still holds slots; the mark is taken off again unless an earlier delete had set it.
3. Delete what is theirs - read through keys and indexes only, never a scan - and the agent or the
   dataset's header last, so a delete cut short still finds it.

Recordings are the organization's (`services.recordings`: a spec names one by id, several agents
may replay the same one), so deleting an agent leaves them; `DELETE /api/v1/recordings/{id}`
deletes one.
"""

from __future__ import annotations

from collections.abc import Callable, Iterable
from dataclasses import dataclass
from functools import partial
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain import access
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.events import GuardWithdrawn
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import ActiveRun, Evaluation, Notification, Run, Suite
from chalicelib.errors import ConflictError
from chalicelib.services import access as access_service
from chalicelib.services import messagebus
from chalicelib.services import runs as run_service
from chalicelib.services.ports.ledger import RunPage

PAGE = 200
"""Runs or evaluations read per page while a delete gathers what it deletes."""


@dataclass(frozen=True)
class Deleted:
    """What a delete took away with the agent or dataset (how many of each)."""

    runs: int
    suites: int
    evaluations: int


def delete_agent(c: Container, who: Identity, agent_id: str) -> Deleted:
    """Delete an agent and everything of it (`DELETE /api/v1/agents/{agent_id}`).

    Deleted: its runs (every run of the agent, through the agent's index) with their attempts and
    the answers they kept in the results bucket; its suites and their results; the evaluations
    naming it with their runs (as deleting an evaluation does, its runs of another agent too); its
    promotions and their locks; its place in every environment's `serving`; the notices its
    suites' owners (past and present) were sent about it; its monthly spend counters since it was
    created; its agent runs (production ones too); its history rows; its answers in every
    dataset's review queue (waiting, decided or replaced, with the audit of people's decisions on
    them); its published versions; then the agent itself (its draft and budget are on it).

    Raises:
        NotFoundError: (field `agent_id`) the organization has no such agent.
        ConflictError: (field `agent_id`) one of those runs is queued or running, or holds slots:
            cancel it and wait for its running cases first.
        ForbiddenError: the caller may not edit the agent (agents:edit). NotFoundError: nor see it.
    """
    who.require_on(access.AGENTS_EDIT, "agent", agent_id, "deleting an agent")
    org_id, now = who.org_id, iso(c.clock.now())
    agent, marked = c.agents.start_deleting(org_id, agent_id, now)
    evaluations = [e for e in _evaluations(c, org_id) if e.agent_id == agent_id]
    runs = _runs(partial(c.runs.list_by_agent, org_id, agent_id, PAGE))
    for evaluation in evaluations:
        runs += _runs(partial(c.runs.list_by_evaluation, org_id, evaluation.evaluation_id, PAGE))
    runs = list({r.run_id: r for r in runs}.values())
    busy = _busy(c, org_id, runs, lambda a: a.agent_id == agent_id)
    if busy:
        if marked:
            c.agents.stop_deleting(org_id, agent_id)
        raise _running("agent", agent_id, busy, "agent_id")
    suites = c.suites.of_agent(org_id, agent_id)
    _delete_suites(c, org_id, suites, lambda n: n.links.get("agent_id") == agent_id)
    for run in runs:
        # A run of another agent (an evaluation's, from before it named this one) may be
        # borrowed from by runs that stay.
        run_service.forget(c, run, borrowers_deleted_too=run.agent_id == agent_id)
    for evaluation in evaluations:
        c.evaluations.delete(org_id, evaluation.evaluation_id)
    # Its runs are gone: nothing of it is sent to a queue any more.
    for dataset in c.datasets.list(org_id):
        c.review.forget_agent(org_id, dataset.dataset_id, agent_id)
    c.promotions.delete_of_agent(org_id, agent_id)
    for environment in c.environments.list(org_id):
        if agent_id in (environment.serving or {}):
            c.environments.stop_serving(org_id, environment.environment_id, agent_id)
    c.usage.delete_agent(org_id, agent_id)  # its production runs (its eval runs' went with them)
    c.spend.forget_agent(org_id, agent_id, months_between(agent.created_at, now))
    c.runs.forget_history(org_id, agent_id)
    access_service.forget_resource(c, org_id, "agent", agent_id)
    c.agents.delete(org_id, agent_id)
    return Deleted(len(runs), len(suites), len(evaluations))


def delete_dataset(c: Container, who: Identity, dataset_id: str) -> Deleted:
    """Delete a dataset and everything of it (`DELETE /api/v1/datasets/{dataset_id}`).

    Deleted: its runs (every run over it, of any agent, through the dataset's index) with their
    attempts and the answers they kept in the results bucket; the suites on it (of any agent) and
    their results - a promotion waiting for one of them is refused, as when a suite is deleted -
    and the notices sent about them; the evaluations on it; the baseline arms the agents' history
    keeps on it; its review queue (the answers waiting or decided in it, people's notes and the
    audit of their decisions); its versions and their cases; then its header.

    Raises:
        NotFoundError: (field `dataset_id`) the organization has no such dataset.
        ConflictError: (field `dataset_id`) one of its runs is queued or running, or holds slots.
        ForbiddenError: the caller may not edit the dataset (datasets:edit). NotFoundError: nor
            see it.
    """
    who.require_on(access.DATASETS_EDIT, "dataset", dataset_id, "deleting a dataset")
    org_id = who.org_id
    _, marked = c.datasets.start_deleting(org_id, dataset_id, iso(c.clock.now()))
    runs = _runs(partial(c.runs.list_by_dataset, org_id, dataset_id, PAGE))
    busy = _busy(c, org_id, runs, lambda a: a.dataset_id == dataset_id)
    if busy:
        if marked:
            c.datasets.stop_deleting(org_id, dataset_id)
        raise _running("dataset", dataset_id, busy, "dataset_id")
    suites = [s for s in c.suites.of_org(org_id) if s.dataset_id == dataset_id]
    named = {(s.agent_id, s.suite_id) for s in suites}
    run_ids = {r.run_id for r in runs}
    _delete_suites(
        c,
        org_id,
        suites,
        lambda n: (
            (n.links.get("agent_id"), n.links.get("suite_id")) in named
            or n.links.get("run_id") in run_ids
        ),
    )
    for suite in suites:
        messagebus.publish(
            c,
            GuardWithdrawn(
                org_id,
                suite.agent_id,
                suite.suite_id,
                f"guard {suite.suite_id} was deleted with its dataset {dataset_id}",
            ),
        )
    # The arms rows first: deleting a run folds its agent's history, and a row already gone stays
    # gone; on a delete asked again, the runs left still name their agents.
    for agent_id in sorted({r.agent_id for r in runs} | {s.agent_id for s in suites}):
        c.runs.forget_history(org_id, agent_id, dataset_id)
    for run in runs:
        run_service.forget(c, run, borrowers_deleted_too=True)  # a borrower is of this dataset
    evaluations = [e for e in _evaluations(c, org_id) if e.dataset_id == dataset_id]
    for evaluation in evaluations:
        c.evaluations.delete(org_id, evaluation.evaluation_id)
    access_service.forget_resource(c, org_id, "dataset", dataset_id)
    # No send nor decision reaches the queue once the dataset is marked (each checks the mark in
    # its transaction): what is in it now is all there is to delete.
    c.review.delete_queue(org_id, dataset_id)
    c.datasets.delete(org_id, dataset_id)
    return Deleted(len(runs), len(suites), len(evaluations))


def months_between(first: str, last: str) -> list[str]:
    """Every UTC month (`YYYY-MM`) from the one of ISO time `first` to the one of `last`, both
    included (`2026-11-30T..`, `2027-01-02T..` -> `2026-11`, `2026-12`, `2027-01`); none when
    `first` is after `last`."""
    year, month = int(first[:4]), int(first[5:7])
    end = (int(last[:4]), int(last[5:7]))
    out = []
    while (year, month) <= end:
        out.append(f"{year:04d}-{month:02d}")
        year, month = (year + 1, 1) if month == 12 else (year, month + 1)
    return out


def _runs(page_of: Callable[[dict[str, Any] | None], RunPage]) -> list[Run]:
    """Every run of a listing, a page at a time (`page_of(start)`)."""
    out: list[Run] = []
    start = None
    while True:
        page = page_of(start)
        out += page.runs
        if page.next_start is None:
            return out
        start = page.next_start


def _evaluations(c: Container, org_id: str) -> list[Evaluation]:
    """Every evaluation of the organization (a query of its key, a page at a time)."""
    out: list[Evaluation] = []
    start = None
    while True:
        found, start = c.evaluations.list(org_id, PAGE, start)
        out += found
        if start is None:
            return out


def _busy(
    c: Container, org_id: str, runs: Iterable[Run], mine: Callable[[ActiveRun], bool]
) -> list[str]:
    """The runs that keep a delete waiting: those of `runs` not ended or holding slots, and the
    organization's active runs `mine` keeps (read consistently from the organization: a run
    created just before the mark is there even when an index does not list it yet)."""
    busy = {r.run_id for r in runs if not RunStatus(r.status).ended or int(r.slots) > 0}
    busy |= {a.run_id for a in c.runs.active(org_id) if mine(a)}
    return sorted(busy)


def _running(what: str, key: str, busy: list[str], field: str) -> ConflictError:
    shown = ", ".join(busy[:5]) + (f" and {len(busy) - 5} more" if len(busy) > 5 else "")
    return ConflictError(
        f"{what} {key} has runs still running ({shown}): cancel them and wait for their running "
        "cases first",
        field=field,
        run_ids=busy[:50],
    )


def _recipients(suites: Iterable[Suite]) -> set[str]:
    """Who may have been told about these suites: each one's owner, and whoever owned it before
    (its history's owner changes)."""
    out: set[str] = set()
    for suite in suites:
        out.add(suite.owner)
        for change in suite.history or []:
            if change.get("change") == "owner":
                out |= {str(change[k]) for k in ("old", "new") if change.get(k)}
    return out


def _delete_suites(
    c: Container, org_id: str, suites: list[Suite], about: Callable[[Notification], bool]
) -> None:
    """Delete the suites and their results, and the notices `about` keeps of everyone they may
    have told: before (once gone, a suite no longer names who it told) and after (a suite's
    result being kept as it went sends one more)."""
    recipients = sorted(_recipients(suites))
    for user_id in recipients:
        c.notifications.delete_matching(org_id, user_id, about)
    for suite in suites:
        c.suites.delete(org_id, suite.agent_id, suite.suite_id)
        c.suites.delete_results(org_id, suite.agent_id, suite.suite_id)
    for user_id in recipients:
        c.notifications.delete_matching(org_id, user_id, about)
