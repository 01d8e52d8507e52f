"""Which stability run a comparison's noise may rest on (docs/concepts/noise.md, "The basis").

A stability run asks every case again with nothing changed, so its tries measure the agent's
noise apart from any change; a compared run's `outcome.noise` prefers them to its own tries
(`run_noise.noise_of`). This module finds that run with a bounded read: the agent's runs index,
newest first, at most `PAGES` pages of `PAGE_SIZE` runs; never a scan, no read per case.
"""

from __future__ import annotations

from collections.abc import Sequence

from chalicelib.bootstrap import Container
from chalicelib.domain.enums import RunPurpose, RunStatus
from chalicelib.domain.records import Run

__all__ = ["PAGES", "PAGE_SIZE", "latest_stability_run"]

PAGES = 2
"""How many pages of the agent's runs the look-up reads at most."""
PAGE_SIZE = 50
"""How many runs a page holds: the look-up sees the agent's newest 100 runs."""


def latest_stability_run(c: Container, run: Run, spec_hashes: Sequence[str]) -> Run | None:
    """The newest completed stability run of `run`'s agent on `run`'s dataset and dataset
    version whose candidate ran one of `spec_hashes` (an agent version's or a draft's spec hash),
    preferring the earlier hashes: a match on `spec_hashes[0]` anywhere in the pages read wins
    over a newer match on a later one.

    Only a stability run created before `run` (and, for a run being graded again, completed
    before it) counts, so computing the outcome again finds the same one; a run being deleted
    does not count. Reads at most `PAGES` pages of the agent's runs, newest first.

    Returns:
        The stability run, or None when none of the agent's newest `PAGES * PAGE_SIZE` runs is
        one.
    """
    rank = {h: i for i, h in reversed(list(enumerate(spec_hashes)))}
    best: tuple[int, Run] | None = None
    start = None
    for _ in range(PAGES):
        page = c.runs.list_by_agent(run.org_id, run.agent_id, limit=PAGE_SIZE, start=start)
        for other in page:
            if not _is_stability_of(other, run) or not other.arms:
                continue
            place = rank.get(other.arms[0].spec_hash)
            if place is not None and (best is None or place < best[0]):
                best = (place, other)
                if place == 0:
                    return other
        if page.next_start is None:
            break
        start = page.next_start
    return best[1] if best is not None else None


def _is_stability_of(other: Run, run: Run) -> bool:
    return (
        other.run_id != run.run_id
        and other.purpose == RunPurpose.STABILITY.value
        and other.status == RunStatus.COMPLETED.value
        and other.deleting_at is None
        and other.dataset_id == run.dataset_id
        and int(other.dataset_version) == int(run.dataset_version)
        and other.created_at < run.created_at
        and (run.completed_at is None or (other.completed_at or "") <= run.completed_at)
    )
