"""Reading eval runs: the organization's list, a run's events, its comparison and cases, an
arm's spec and what changed between the arms (docs/architecture/run-lifecycle.md)."""

from __future__ import annotations

import base64
import binascii
import json
import time
from collections.abc import Callable, Iterable
from dataclasses import dataclass, field
from functools import partial
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms
from chalicelib.domain import access
from chalicelib.domain.enums import ArmRole, CallStatus, RunStatus
from chalicelib.domain.identity import Identity
from chalicelib.domain.outcome import Comparison
from chalicelib.domain.records import Arm, Attempt, Run
from chalicelib.domain.spec_diff import SpecDiff
from chalicelib.domain.spec_diff import spec_changes as diff_specs
from chalicelib.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
)
from chalicelib.services import access as access_service
from chalicelib.services import datasets as dataset_service
from chalicelib.services import finalize, review
from chalicelib.services.ports.ledger import RunPage


def _decode_cursor(
    c: Container,
    cursor: str | None,
    org_id: str,
    *,
    agent_id: str | None = None,
    dataset_id: str | None = None,
    evaluation_id: str | None = None,
) -> dict[str, Any] | None:
    """The index key a listing's `cursor` stands for, checked to be one this API gave for this
    listing of this organization (`RunStore.is_page_start`).

    Raises InvalidInputError for anything else (garbage, another listing's or organization's
    cursor).
    """
    if not cursor:
        return None
    try:
        key = json.loads(base64.urlsafe_b64decode(cursor.encode()).decode())
    except (ValueError, RecursionError, binascii.Error, UnicodeError):
        key = None
    if not isinstance(key, dict) or not c.runs.is_page_start(
        key, org_id, agent_id=agent_id, dataset_id=dataset_id, evaluation_id=evaluation_id
    ):
        raise InvalidInputError("cursor is not one this API gave", field="cursor")
    return key


@dataclass(frozen=True)
class RunList:
    """One page of a listing of runs, newest first, and the cursor of the next (None after the
    last)."""

    runs: list[Run]
    next_cursor: str | None


LISTING_BATCH = 50
"""Runs read at a time by a listing whose filters (the reader's sight, `draft`) drop some."""
LISTING_READS = 20
"""Pages one listing request reads at most before it answers with what passed and a cursor."""


def list_runs(
    c: Container,
    who: Identity,
    *,
    agent_id: str | None = None,
    dataset_id: str | None = None,
    evaluation_id: str | None = None,
    limit: int = 50,
    cursor: str | None = None,
    draft: str | None = None,
) -> RunList:
    """Runs newest first, a page at a time (`cursor` from the previous page's `next_cursor`): of
    an agent, a dataset, an evaluation (whose existence the caller checked), or the organization.

    `draft="current"` keeps the runs of the draft as it stands now (same spec hash), `"earlier"` the
    runs of other drafts. Raises InvalidInputError for a bad limit, cursor or draft filter.
    """
    who.require(access.RUNS_VIEW, "listing eval runs")
    if not 1 <= limit <= 200:
        raise InvalidInputError("limit must be between 1 and 200", field="limit")
    if draft not in (None, "current", "earlier"):
        raise InvalidInputError('draft must be "current" or "earlier"', field="draft")
    current_hash = None
    listing: dict[str, str] = {}
    read: Callable[..., RunPage]
    if agent_id is not None:
        current_hash = c.agents.get(who.org_id, agent_id).draft_spec_hash
        listing = {"agent_id": agent_id}
        read = partial(c.runs.list_by_agent, who.org_id, agent_id)
    elif evaluation_id is not None:
        listing = {"evaluation_id": evaluation_id}
        read = partial(c.runs.list_by_evaluation, who.org_id, evaluation_id)
    elif dataset_id is not None:
        c.datasets.get(who.org_id, dataset_id)
        listing = {"dataset_id": dataset_id}
        read = partial(c.runs.list_by_dataset, who.org_id, dataset_id)
    else:
        read = partial(c.runs.list_by_org, who.org_id)

    def listed(r: Run) -> bool:
        # a run over an agent or a dataset the caller may not see is not listed
        # (docs/reference/access.md); `draft` keeps the current draft's runs or the earlier drafts'
        if r.org_id != who.org_id or not access_service.may_read(who, r):
            return False
        return draft is None or (r.draft and (r.spec_hash == current_hash) == (draft == "current"))

    # The filters apply before the limit: pages are read until `limit` runs pass them (or
    # LISTING_READS pages were read), and the cursor stands for the last run handed out.
    def answer(rows: list[Run], next_start: dict[str, Any] | None) -> RunList:
        text = json.dumps(next_start).encode() if next_start else None
        return RunList(rows, base64.urlsafe_b64encode(text).decode() if text else None)

    start = _decode_cursor(c, cursor, who.org_id, **listing)
    rows: list[Run] = []
    for _ in range(LISTING_READS):
        page = read(limit=max(limit, LISTING_BATCH), start=start)
        for i, run in enumerate(page.runs):
            if not listed(run):
                continue
            rows.append(run)
            if len(rows) == limit:
                last_of_all = i == len(page.runs) - 1 and page.next_start is None
                return answer(rows, None if last_of_all else c.runs.page_start_of(run, **listing))
        start = page.next_start
        if start is None:
            break
    return answer(rows, start)


EVENTS_SETTLE_MS = 2_000
"""How old an attempt's `recorded_key` must be before the live updates hand it out.

The key's time is taken just before the attempt's transaction commits, so two workers can commit
out of key order; a reader that moved its cursor past a later key would never see the earlier
one. Holding back the newest two seconds (far beyond a transaction's latency) keeps the cursor
behind every write still in flight. An ended run has nothing in flight: everything is handed out.
"""


@dataclass(frozen=True)
class RunEvents:
    """What one long-poll of a run's live updates found: the attempts recorded after the cursor
    (in recorded order), the cursor to pass back, the run as read last, and whether nothing more
    will come."""

    run: Run
    attempts: list[Attempt]
    cursor: str
    done: bool


def events(
    c: Container,
    who: Identity,
    run_id: str,
    *,
    after: str = "",
    wait_s: float | None = None,
    limit: int = 100,
) -> RunEvents:
    """Attempts recorded after the cursor `after`, waiting up to `wait_s` seconds for one (a bounded
    long-poll: Lambda behind API Gateway cannot stream; docs/guides/by-hand.md).

    Pass the returned `cursor` back as `after`: every attempt is handed out exactly once, in
    recorded order. Raises InvalidInputError for a bad limit, NotFoundError for an unknown run.
    """
    if not 1 <= limit <= 1000:
        raise InvalidInputError("limit must be between 1 and 1000", field="limit")
    run = access_service.readable_run(c, who, run_id)
    wait = c.settings.assay_events_wait_seconds if wait_s is None else wait_s
    deadline = time.monotonic() + max(0.0, min(wait, 25.0))
    while True:
        ended = RunStatus(run.status).ended and int(run.slots) == 0
        until = None if ended else f"{epoch_ms(c.clock.now()) - EVENTS_SETTLE_MS:013d}#\uffff"
        rows = c.runs.attempts_after(who.org_id, run_id, after, limit, until=until)
        if rows or ended or time.monotonic() >= deadline:
            break
        time.sleep(0.25)
        run = c.runs.get(who.org_id, run_id) or run
    return RunEvents(run, rows, rows[-1].recorded_key if rows else after, ended and not rows)


def _carries(case: dict[str, Any], tag: str) -> bool:
    """Whether a dataset case carries `tag` (a case's `tags`, absent or null on a case of none)."""
    return tag in (case.get("tags") or [])


def comparison(
    c: Container, who: Identity, run_id: str, arm_id: str | None = None, tag: str | None = None
) -> tuple[Run, Comparison]:
    """A candidate arm (default the first) against its baseline (docs/concepts/verdicts.md; with
    several models every arm is compared with the baseline on the first); with `tag`, over the cases
    carrying it only (docs/guides/console.md: a tag reads the changes under it; a tag no case
    carries compares nothing).

    Raises NotFoundError for a run without a baseline, or an arm that is not a candidate of the run.
    """
    run = access_service.readable_run(c, who, run_id)
    candidates = [a.arm_id for a in run.arms if a.role is ArmRole.CANDIDATE]
    if arm_id is not None and arm_id not in candidates:
        raise NotFoundError(f"candidate arm {arm_id} not found in run {run_id}", field="arm_id")
    whole = arm_id in (None, candidates[0]) and tag is None
    kept = run.outcome.comparison if run.outcome and whole else None
    if kept is None:
        tagged = None
        if tag is not None:
            cases = c.datasets.cases(run.org_id, run.dataset_id, int(run.dataset_version))
            tagged = frozenset(k["case_id"] for k in cases if _carries(k, tag))
        kept = finalize.comparison_of(
            c, run, finalize.all_attempts(c, run), arm_id=arm_id, case_ids=tagged
        )
    if kept is None:
        raise NotFoundError(f"eval run {run_id} has no baseline to compare with", field="run_id")
    return run, kept


@dataclass(frozen=True)
class CaseSide:
    """One arm's side of one case: its settled state (None when never asked) and its attempts."""

    settled: str | None
    attempts: list[Attempt]
    review: dict[str, Any] | None = None
    """A person's verdict on one of its answers (`{verdict, item_id, by, at, corrected}`), when
    one stands: `settled` follows it."""


@dataclass(frozen=True)
class CaseResults:
    """One case of a run: what it expects, its comparison outcome, and each arm's side."""

    case_id: str
    expects: dict[str, Any]
    """The case's `input, history, reference, checks, expected_calls, tags`."""
    outcome: str | None
    """Its comparison outcome (`regression`, ...), None without a baseline."""
    arms: dict[str, CaseSide]
    blocked_calls: int = 0
    """Calls kept `blocked` over every attempt of its sides (docs/guides/tools.md)."""
    divergent_calls: int = 0
    """Calls kept `divergent` (held: the recording had no match) over every attempt of its sides."""


@dataclass(frozen=True)
class CasesPage:
    """One page of a run's cases and the cursor of the next page (None after the last), and
    `diverged_cases`: how many of the run's cases (every case, whatever the filters and the page)
    hold a `divergent` call in one of their attempts."""

    cases: list[CaseResults]
    next_cursor: str | None
    diverged_cases: int = 0
    reviewers: dict[str, str | None] = field(default_factory=dict)
    """The name of each reviewer the page names, as the organization's members have it now
    (None: no longer a member)."""


def calls_with(attempts: Iterable[Attempt], status: CallStatus) -> int:
    """How many calls kept on `attempts` have `status` (a call kept without one counts as
    `executed`, as `ToolCall` reads it)."""
    return sum(
        1
        for row in attempts
        for call in (row.calls if isinstance(row.calls, list) else [])
        if isinstance(call, dict) and call.get("status", CallStatus.EXECUTED) == status
    )


CASES_PAGE = 50
"""Cases per page of `GET /eval-runs/{id}/cases` unless `limit` says otherwise."""
MAX_CASES_PAGE = 200
"""The most cases one page holds (each with every attempt of every arm)."""


def cases(
    c: Container,
    who: Identity,
    run_id: str,
    *,
    outcome: str | None = None,
    tag: str | None = None,
    arm_id: str | None = None,
    case_id: str | None = None,
    limit: int = CASES_PAGE,
    cursor: str | None = None,
) -> CasesPage:
    """A page of the run's cases, in the run's order: what each expects, its comparison outcome,
    every attempt per arm and how many of their calls were blocked or held divergent; and how many
    of the run's cases diverged from the recording (counted from the attempts read for the page:
    no request more).

    Filters: `outcome` (a comparison outcome such as `regression`, or a settled state such as
    `failed`), `tag`, `arm_id`, `case_id`. A page holds at most `limit` cases that pass them; the
    cursor stands for the last case a page returned, so the pages of one listing hold each case at
    most once whatever is recorded in between. The run's attempts are read with queries of its key
    (and of a borrowed baseline's run), never a scan.

    Raises NotFoundError for an unknown run or arm; InvalidInputError for a `limit` outside
    1..`MAX_CASES_PAGE` or a cursor this listing did not give.
    """
    if not 1 <= limit <= MAX_CASES_PAGE:
        raise InvalidInputError(f"limit must be between 1 and {MAX_CASES_PAGE}", field="limit")
    run = access_service.readable_run(c, who, run_id)
    arm_ids = [a.arm_id for a in run.arms]
    if arm_id is not None and arm_id not in arm_ids:
        raise NotFoundError(f"arm {arm_id} not found in run {run_id}", field="arm_id")
    after = dataset_service.decode_cursor(cursor)
    start = 0
    if after is not None:
        if after not in run.case_ids:
            raise InvalidInputError("cursor is not one this API gave", field="cursor")
        start = list(run.case_ids).index(after) + 1
    attempts = finalize.all_attempts(c, run)
    has_baseline = any(a.role is ArmRole.BASELINE for a in run.arms)
    compared = comparison(c, who, run_id)[1] if has_baseline else None
    outcomes = {f.case_id: f.outcome.value for f in compared.cases} if compared is not None else {}
    by_case: dict[str, list[Attempt]] = {}
    for row in attempts:
        by_case.setdefault(row.case_id, []).append(row)
    out: list[CaseResults] = []
    ordered = list(run.case_ids)
    more = False
    for cid in ordered[start:]:
        if case_id is not None and cid != case_id:
            continue
        case = c.datasets.get_case(run.org_id, run.dataset_id, int(run.dataset_version), cid) or {}
        if tag is not None and not _carries(case, tag):
            continue
        rows = sorted(by_case.get(cid, []), key=lambda r: r.attempt_key)
        sides = {}
        for arm in arm_ids:
            if arm_id is not None and arm != arm_id:
                continue
            tries = [r for r in rows if r.arm_id == arm]
            person = next((r.review for r in tries if r.review), None)
            sides[arm] = CaseSide(finalize.settled_state(tries), tries, person)
        expects = {
            k: case.get(k)
            for k in ("input", "history", "reference", "checks", "expected_calls", "tags")
        }
        shown = [row for side in sides.values() for row in side.attempts]
        entry = CaseResults(
            cid,
            expects,
            outcomes.get(cid),
            sides,
            blocked_calls=calls_with(shown, CallStatus.BLOCKED),
            divergent_calls=calls_with(shown, CallStatus.DIVERGENT),
        )
        if (
            outcome is not None
            and outcome != entry.outcome
            and all(s.settled != outcome for s in sides.values())
        ):
            continue
        if len(out) == limit:
            more = True
            break
        out.append(entry)
    next_cursor = dataset_service.encode_cursor(out[-1].case_id) if more else None
    diverged = sum(1 for rows in by_case.values() if calls_with(rows, CallStatus.DIVERGENT))
    by = sorted({str(s.review["by"]) for e in out for s in e.arms.values() if s.review})
    return CasesPage(out, next_cursor, diverged, review.names(c, run.org_id, by))


def arm_spec(c: Container, who: Identity, run_id: str, arm_id: str) -> Arm:
    """The arm of the run whose spec one asks for (as it was copied onto the run at start).
    Raises NotFoundError for an unknown run or arm, ForbiddenError without agents:edit on the agent
    (a spec is the editors' work: docs/reference/access.md)."""
    run = access_service.readable_run(c, who, run_id)
    who.require(access.AGENTS_EDIT, "reading an arm's spec", access.agent(run.agent_id))
    arm = next((a for a in run.arms if a.arm_id == arm_id), None)
    if arm is None:
        raise NotFoundError(f"arm {arm_id} not found in run {run_id}", field="arm_id")
    return arm


@dataclass(frozen=True)
class SpecChanges:
    """What changed between the two specs a run tested: its first candidate arm against its
    baseline, each as copied onto the run at start (not the draft as it is now)."""

    candidate: Arm
    baseline: Arm
    diff: SpecDiff


def spec_changes(c: Container, who: Identity, run_id: str) -> SpecChanges:
    """The changes from the baseline's spec to the candidate's (docs/guides/console.md: a run's
    next steps "see what changed between the two versions").

    Raises NotFoundError for an unknown run, ForbiddenError without agents:edit on the agent (a
    spec is the editors' work: docs/reference/access.md), ConflictError (field `run_id`) for a run
    that has no baseline to compare with.
    """
    run = access_service.readable_run(c, who, run_id)
    who.require(
        access.AGENTS_EDIT, "reading what changed between specs", access.agent(run.agent_id)
    )
    candidate = next(a for a in run.arms if a.role is ArmRole.CANDIDATE)
    baseline = next((a for a in run.arms if a.role is ArmRole.BASELINE), None)
    if baseline is None:
        raise ConflictError(
            f"eval run {run_id} has no baseline: there is nothing to compare its spec with",
            field="run_id",
        )
    return SpecChanges(candidate, baseline, diff_specs(baseline.spec, candidate.spec))
