"""`reruns: "auto"` on a start or an estimate (docs/concepts/noise.md): the reruns that keep the
chance a candidate that changed nothing shows a confirmed regression under `EVAL_MAX_LUCK`, read
from the noise the newest earlier comparison of the agent on the dataset measured.

The read is bounded: the agent's runs newest first through its index, at most `PAGES` pages of
`PAGE` runs; the first completed run of the same dataset with a measured `outcome.noise` decides.
"""

from __future__ import annotations

from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import noise
from chalicelib.domain.records import Run

PAGE = 25
"""Runs read a page."""
PAGES = 3
"""Pages read at most: the newest 75 runs of the agent."""
NO_HISTORY = "no earlier comparison measured the noise"


def newest_measured(c: Container, org_id: str, agent_id: str, dataset_id: str) -> Run | None:
    """The newest completed run of the agent on `dataset_id` whose outcome has `noise` with a
    `luck_by_reruns`, among the agent's newest `PAGES * PAGE` runs; None when none is."""
    start = None
    for _ in range(PAGES):
        page = c.runs.list_by_agent(org_id, agent_id, PAGE, start)
        for run in page.runs:
            measured = _noise_of(run)
            if run.dataset_id == dataset_id and run.status == "completed" and measured:
                return run
        if page.next_start is None:
            return None
        start = page.next_start
    return None


def _noise_of(run: Run) -> dict[str, Any] | None:
    measured = getattr(run.outcome, "noise", None) if run.outcome is not None else None
    if isinstance(measured, dict) and measured.get("luck_by_reruns"):
        return measured
    return None


def choose(
    c: Container, org_id: str, agent_id: str, dataset_id: str, *, default: int
) -> tuple[int, dict[str, Any], str]:
    """The reruns `"auto"` picks, what the run and the estimate keep of the choice, and the
    sentence a start's warnings carry.

    The rule: from the newest measured run (`newest_measured`), the smallest count in 1-5 whose
    `luck_by_reruns` is under `EVAL_MAX_LUCK` (`noise.reruns_under`); when none is, 5 (the most
    there is), saying so; without a measured run, `default` (`EVAL_RERUNS`), reason
    `NO_HISTORY`.

    Returns:
        `(reruns, {chosen, reason, from_run_id, luck, bound}, sentence)`: `luck` the chance of
        luck at the chosen reruns (0..1), None without a measured run.
    """
    bound = c.settings.eval_max_luck
    run = newest_measured(c, org_id, agent_id, dataset_id)
    if run is None:
        kept = {
            "chosen": default,
            "reason": NO_HISTORY,
            "from_run_id": None,
            "luck": None,
            "bound": bound,
        }
        return default, kept, f'reruns "auto": {default}, the default: {NO_HISTORY}'
    luck = [float(x) for x in (_noise_of(run) or {})["luck_by_reruns"]]
    found = noise.reruns_under(luck, bound)
    chosen = found if found is not None else min(noise.MAX_RERUNS, len(luck) - 1)
    at = luck[chosen]
    under, measured = noise.percent(bound), noise.percent(at)
    if found is not None:
        reason = (
            f"the smallest reruns under which a candidate that changed nothing would show a "
            f"confirmed regression in fewer than {under} of runs, as run {run.run_id} "
            f"measured the noise ({measured})"
        )
    else:
        reason = (
            f"no count of reruns up to {noise.MAX_RERUNS} brings the chance of luck under "
            f"{under} as run {run.run_id} measured the noise: {measured} at "
            f"{chosen}; a steadier model (e.g. a lower temperature) would"
        )
    kept = {
        "chosen": chosen,
        "reason": reason,
        "from_run_id": run.run_id,
        "luck": at,
        "bound": bound,
    }
    return chosen, kept, f'reruns "auto": {chosen}, {reason}'
