"""Which earlier runs a comparison's noise may rest on (docs/concepts/noise.md, "The basis").

A compared run's `outcome.noise` (`run_noise.noise_of`) prefers tries that measure the agent's
noise apart from the change it compares. Two kinds of earlier run give them:

- a stability run of the same spec (`latest_stability_run`): it asks every case again with
  nothing changed;
- failing that, up to `HISTORY_RUNS` earlier runs with an arm of the same spec
  (`earlier_runs_of_spec`): each such arm is the same agent answering the same cases, so its
  tries are draws of the same per-case pass chances.

Both look-ups read the agent's runs index, newest first from the compared run's creation, at most
`PAGES` pages of `PAGE_SIZE` runs; never a scan, no read per case. Given the same `RecentRuns`,
they share those pages: a page the stability look-up read is not read again by the history
look-up.

Only a run that had completed before the compared run was created, and is not being deleted,
counts; with the pages starting at the compared run's creation, computing the outcome again finds
the same runs however many the agent has started since.
"""

from __future__ import annotations

from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain.enums import RunPurpose, RunStatus
from chalicelib.domain.records import Run

__all__ = [
    "HISTORY_RUNS",
    "PAGES",
    "PAGE_SIZE",
    "RecentRuns",
    "SpecHistory",
    "earlier_runs_of_spec",
    "latest_stability_run",
]

PAGES = 2
"""How many pages of the agent's runs the look-up reads at most."""
PAGE_SIZE = 50
"""How many runs a page holds: a look-up sees the agent's newest 100 runs."""
HISTORY_RUNS = 3
"""The most earlier runs of the same spec the `history` basis pools."""


class RecentRuns:
    """The newest `PAGES` pages of `PAGE_SIZE` runs of `run`'s agent created before `run`, newest
    first, each page read from the store at most once however many look-ups walk them (`pages`).
    Runs created after `run` are never in them, so however many the agent starts later, computing
    `run`'s outcome again reads the same pages."""

    def __init__(self, c: Container, run: Run) -> None:
        self._c, self._run = c, run
        self._read: list[tuple[Run, ...]] = []
        self._start: dict[str, Any] | None = None
        self._last = False

    def pages(self) -> Iterator[tuple[Run, ...]]:
        """The pages in order, newest first: those read before from memory, the next from the
        store (one `list_by_agent` each) until `PAGES` pages or the last one."""
        for i in range(PAGES):
            if i == len(self._read):
                if self._last:
                    return
                page = self._c.runs.list_by_agent(
                    self._run.org_id,
                    self._run.agent_id,
                    limit=PAGE_SIZE,
                    start=self._start,
                    before=self._run.created_at,
                )
                self._read.append(tuple(page.runs))
                self._start, self._last = page.next_start, page.next_start is None
            yield self._read[i]


def latest_stability_run(
    c: Container, run: Run, spec_hashes: Sequence[str], recent: RecentRuns | None = None
) -> Run | None:
    """The newest completed stability run of `run`'s agent on `run`'s dataset and dataset
    version whose candidate ran one of `spec_hashes` (an agent version's or a draft's spec hash),
    preferring the earlier hashes: a match on `spec_hashes[0]` anywhere in the pages read wins
    over a newer match on a later one.

    Only a stability run that had completed before `run` was created counts (`_is_earlier`), so
    computing the outcome again finds the same one; a run being deleted does not count. Reads at
    most `PAGES` pages of the agent's runs, newest first (through `recent`, when given, the pages
    it read already not read again).

    Returns:
        The stability run, or None when none of the agent's newest `PAGES * PAGE_SIZE` runs is
        one.
    """
    rank = {h: i for i, h in reversed(list(enumerate(spec_hashes)))}
    best: tuple[int, Run] | None = None
    for page in (recent or RecentRuns(c, run)).pages():
        for other in page:
            if not _is_stability_of(other, run) or not other.arms:
                continue
            place = rank.get(other.arms[0].spec_hash)
            if place is not None and (best is None or place < best[0]):
                best = (place, other)
                if place == 0:
                    return other
    return best[1] if best is not None else None


@dataclass(frozen=True, slots=True)
class SpecHistory:
    """Earlier runs with an arm of one spec: what the `history` basis pools."""

    spec_hash: str
    """The spec hash their arms share (one of the compared run's sides')."""
    runs: tuple[Run, ...]
    """1 to `HISTORY_RUNS` runs, newest first, each with at least one arm of `spec_hash`."""


def earlier_runs_of_spec(
    c: Container, run: Run, spec_hashes: Sequence[str], recent: RecentRuns | None = None
) -> SpecHistory | None:
    """The newest `HISTORY_RUNS` earlier completed runs of `run`'s agent on `run`'s dataset and
    dataset version with an arm that ran one of `spec_hashes` (the baseline's spec hash, then the
    candidate's), preferring the earlier hashes: any run of `spec_hashes[0]` in the pages read
    wins over runs of a later one, however newer.

    A run counts as for `latest_stability_run`, whatever its purpose: completed before `run` was
    created, not being deleted (`_is_earlier`). Reads at most `PAGES` pages of the agent's runs,
    newest first, and stops early once `HISTORY_RUNS` runs of `spec_hashes[0]` are found
    (through `recent`, when given, the pages it read already not read again); the caller reads
    each run's attempts once.

    Returns:
        The spec hash and its runs, or None when none of the agent's newest `PAGES * PAGE_SIZE`
        runs has an arm of any of `spec_hashes`.
    """
    rank = {h: i for i, h in reversed(list(enumerate(spec_hashes)))}
    found: dict[int, list[Run]] = {}
    for page in (recent or RecentRuns(c, run)).pages():
        for other in page:
            if not _is_earlier(other, run):
                continue
            for place in sorted({rank[a.spec_hash] for a in other.arms if a.spec_hash in rank}):
                runs = found.setdefault(place, [])
                if len(runs) < HISTORY_RUNS:
                    runs.append(other)
            if len(found.get(0, ())) == HISTORY_RUNS:
                return SpecHistory(spec_hashes[0], tuple(found[0]))
    if not found:
        return None
    place = min(found)
    return SpecHistory(spec_hashes[place], tuple(found[place]))


def _is_stability_of(other: Run, run: Run) -> bool:
    return other.purpose == RunPurpose.STABILITY.value and _is_earlier(other, run)


def _is_earlier(other: Run, run: Run) -> bool:
    """`other` is another run on `run`'s dataset version that had completed before `run` was
    created, and is not being deleted. Completed before `run` was created, not merely before its
    outcome was computed: a run that ends while `run` is running would be missed when `run`
    finalizes and found when its outcome is computed again (a review decision, grading again),
    and the same answers would read as two different noises."""
    return (
        other.run_id != run.run_id
        and other.status == RunStatus.COMPLETED.value
        and other.deleting_at is None
        and other.dataset_id == run.dataset_id
        and int(other.dataset_version) == int(run.dataset_version)
        and other.completed_at is not None
        and other.completed_at <= run.created_at
    )
