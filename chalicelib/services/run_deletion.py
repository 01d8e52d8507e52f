"""Deleting eval runs: an ended run, every attempt it kept and the answers it kept in the results
bucket, after copying the first answers a later run's baseline borrowed from it
(docs/reference/data-protection.md)."""

from __future__ import annotations

from dataclasses import replace

from chalicelib import names
from chalicelib.bootstrap import Container
from chalicelib.clock import iso
from chalicelib.domain.enums import RunStatus
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Attempt, Run
from chalicelib.errors import ConflictError
from chalicelib.services import access as access_service
from chalicelib.services import eval_agent_runs, finalize


def delete_run(c: Container, who: Identity, run_id: str) -> None:
    """Delete an ended run, every attempt it kept, and the answers it kept in the results
    bucket (`<org>/answers/<run_id>/`, docs/reference/data-protection.md). The answers go first: a
    delete cut short between the two leaves the run, and asking again finishes it, where the
    other order would leave answers nothing points at. Raises ConflictError while it runs."""
    run = access_service.readable_run(c, who, run_id)
    access_service.check_own_or_edit(who, run, "deleting")
    forget(c, run)


def forget(c: Container, run: Run, *, borrowers_deleted_too: bool = False) -> None:
    """Delete an ended run, every attempt it kept and the agent runs they were, the answers it
    kept in the results bucket
    (`<org>/answers/<run_id>/`, docs/reference/data-protection.md) and the items of its answers in
    its dataset's review queue (their audit entries stay), but those of first answers a borrower
    keeps a copy of.

    A run whose baseline borrowed this run's first answers keeps its comparison: those answers
    are copied into it first (`keep_borrowed`), so its page, its cases, a grade again and a
    comparison of its other models read what they read before. The run is marked as being deleted
    before the borrowers are looked for, so none started from then on borrows from it.
    `borrowers_deleted_too`: every run that may borrow from it goes in the same delete (an
    agent's or a dataset's: a baseline is borrowed within one agent and dataset only), so
    nothing is copied.

    The answers in the bucket, then whatever is left of its attempts' workspaces, go before the
    records: a delete cut short between them leaves the run, and asking again finishes it, where
    the other order would leave files nothing points at.

    Raises:
        ConflictError: (field `run_id`) the run is queued or running, or still holds slots.
    """
    if not RunStatus(run.status).ended or int(run.slots) > 0:
        raise ConflictError(
            "the run is still running: cancel it and wait for its running cases first",
            field="run_id",
        )
    copied: set[str] = set()
    if run.status == RunStatus.COMPLETED and not borrowers_deleted_too:
        # Only a completed run's arms are borrowed (`baselines.choose`).
        c.runs.mark_deleting(run.org_id, run.run_id, iso(c.clock.now()))
        attempts = c.runs.attempts(run.org_id, run.run_id)
        for borrower in borrowers(c, run):
            keep_borrowed(c, borrower, run, attempts)
            copied |= {
                row.attempt_key
                for arm in borrower.arms
                if not arm.answers and arm.source_run_id == run.run_id
                for row in attempts
                if row.arm_id == arm.source_arm_id and int(row.attempt) == 1
            }
    c.bucket.delete_prefix(names.run_answers_prefix(run.org_id, run.run_id))
    c.workspaces.release(run.org_id, run.run_id)  # what a failed release at its end left
    # Its answers leave the review queue, but those a borrower keeps a copy of: a verdict on one
    # of them still moves that borrower's numbers, and Undo must be able to take it back.
    c.review.forget_run(run.org_id, run.dataset_id, run.run_id, frozenset(copied))
    # The agent runs its attempts were (docs/reference/usage.md), by the ids they derive from.
    c.usage.delete(
        run.org_id,
        (
            agent_run_id
            for key in c.runs.attempt_keys(run.org_id, run.run_id)
            for agent_run_id in eval_agent_runs.ids_of_attempt(run, key)
        ),
    )
    c.runs.delete(run.org_id, run.run_id)


BORROWERS_PAGE = 100
"""Runs read per page when a delete looks for the runs that borrowed a run's first answers."""


def borrowers(c: Container, source: Run) -> list[Run]:
    """The runs whose baseline borrows `source`'s first answers: runs of its agent created since
    it was (its agent's runs newest first, an index query, until one created before it)."""
    return borrowers_of(c, source.org_id, source.agent_id, source.run_id, source.created_at)


def borrowers_of(c: Container, org_id: str, agent_id: str, run_id: str, since: str) -> list[Run]:
    """The runs of the organization's agent whose baseline borrows the first answers of run
    `run_id` (which may be gone), among those created at or after `since` (ISO): the agent's
    runs newest first, an index query, until one created before it."""
    out: list[Run] = []
    start = None
    while True:
        page = c.runs.list_by_agent(org_id, agent_id, BORROWERS_PAGE, start)
        for run in page.runs:
            if run.created_at < since:
                return out
            if any(a.source_run_id == run_id for a in run.arms if not a.answers):
                out.append(run)
        if page.next_start is None:
            return out
        start = page.next_start


def keep_borrowed(c: Container, borrower: Run, source: Run, attempts: list[Attempt]) -> None:
    """Copy the first answers `borrower`'s baseline takes from `source` (of `source`'s
    `attempts`) into `borrower`, as `finalize.borrowed` relabels them; an answer kept in the
    results bucket is copied under `borrower`'s prefix (the source's is deleted with it)."""
    copies: list[Attempt] = []
    for arm in borrower.arms:
        if arm.answers or arm.source_run_id != source.run_id:
            continue
        for row in finalize.borrowed(borrower, arm, attempts):
            ref = row.answer_ref
            if ref:
                key = names.answer_key(borrower.org_id, borrower.run_id, row.attempt_key)
                ref = c.bucket.put_text(key, c.bucket.get_text(ref))
            copies.append(replace(row, answer_ref=ref, successor=None, delivery=None))
    if copies and not c.runs.keep_borrowed(borrower, copies):
        # The borrower was deleted meanwhile: its copies in the bucket go too.
        c.bucket.delete_prefix(names.run_answers_prefix(borrower.org_id, borrower.run_id))
