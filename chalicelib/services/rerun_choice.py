"""`reruns: "auto"` on a start or an estimate (docs/concepts/noise.md): the reruns that keep the
chance a candidate that changed nothing shows a confirmed regression under `EVAL_MAX_LUCK`, read
from the noise the newest earlier comparison of the agent on the dataset measured.

The read is bounded: the agent's runs newest first through its index, at most `PAGES` pages of
`PAGE` runs; the first completed run of the same dataset with a measured `outcome.noise` decides.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import noise
from chalicelib.domain.money import micros_to_usd, usd_text
from chalicelib.domain.records import Run

PAGE = 25
"""Runs read a page."""
PAGES = 3
"""Pages read at most: the newest 75 runs of the agent."""
NO_HISTORY = "no earlier comparison measured the noise"


def newest_measured(c: Container, org_id: str, agent_id: str, dataset_id: str) -> Run | None:
    """The newest completed run of the agent on `dataset_id` whose outcome has `noise` with a
    `luck_by_reruns`, among the agent's newest `PAGES * PAGE` runs; None when none is. A run
    whose delete has begun does not count: the choice would name a run that cannot be opened."""
    start = None
    for _ in range(PAGES):
        page = c.runs.list_by_agent(org_id, agent_id, PAGE, start)
        for run in page.runs:
            measured = _noise_of(run)
            if (
                run.dataset_id == dataset_id
                and run.status == "completed"
                and run.deleting_at is None
                and measured
            ):
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


def luck_advice(
    c: Container,
    org_id: str,
    agent_id: str,
    dataset_id: str,
    reruns: int,
    ceiling_by_reruns: Sequence[int],
) -> dict[str, Any] | None:
    """What an estimate of a comparison says of its reruns before anything is spent: the chance
    that a candidate that changed nothing shows a confirmed regression at `reruns`, as the newest
    measured run of the agent on the dataset measured the noise (`newest_measured`), the fewest
    reruns that keep it under `EVAL_MAX_LUCK` and what those reruns would cost at most.

    Args:
        reruns: the reruns the estimate is for, 0-5.
        ceiling_by_reruns: the run's rerun ceiling in micro-USD at 0..5 reruns (index = reruns).

    Returns:
        `{from_run_id, bound, reruns, luck, suggested_reruns, suggested_rerun_ceiling_usd,
        sentence}` (`luck` in 0..1; `suggested_reruns` None when no count up to 5 is under the
        bound, and then no cost either; at 0 reruns `luck` is 0 and the sentence says nothing is
        confirmed, `_without_reruns`), or None when no earlier run measured the noise.
    """
    run = newest_measured(c, org_id, agent_id, dataset_id)
    measured = _noise_of(run) if run is not None else None
    if run is None or measured is None:
        return None
    bound = c.settings.eval_max_luck
    luck = [float(x) + 0.0 for x in measured["luck_by_reruns"]]  # + 0.0: never -0.0
    at = luck[min(max(reruns, 0), len(luck) - 1)]
    suggested = noise.reruns_under(luck, bound)
    cost = (
        ceiling_by_reruns[suggested]
        if suggested is not None and suggested < len(ceiling_by_reruns)
        else None
    )
    head = (
        f"With the noise run {run.run_id} measured, a candidate that changed nothing would show "
        f"a confirmed regression in {noise.percent(at)} of runs at {_count(reruns)}"
    )
    if reruns <= 0:
        sentence = _without_reruns(run.run_id, suggested, cost, bound)
    elif at < bound:
        sentence = f"{head}, under {noise.percent(bound)}."
    elif suggested is None:
        sentence = (
            f"{head}; no count of reruns up to {noise.MAX_RERUNS} brings that under "
            f"{noise.percent(bound)}: a steadier model (e.g. a lower temperature) would."
        )
    else:
        priced = f", for reruns of up to {usd_text(cost)}" if cost is not None else ""
        sentence = f"{head}; {_count(suggested)} bring that under {noise.percent(bound)}{priced}."
    return {
        "from_run_id": run.run_id,
        "bound": bound,
        "reruns": reruns,
        "luck": at,
        "suggested_reruns": suggested,
        "suggested_rerun_ceiling_usd": micros_to_usd(cost) if cost is not None else None,
        "sentence": sentence,
    }


def _without_reruns(run_id: str, suggested: int | None, cost: int | None, bound: float) -> str:
    """An estimate at 0 reruns: nothing is confirmed, so its chance of luck is 0 - but so is a
    real regression's of showing. Said as such, not as "0 % of runs", which would read as safe."""
    said = (
        "Without reruns nothing is confirmed: a confirmed regression needs at least 1 rerun. "
        f"With the noise run {run_id} measured, "
    )
    rare = (
        f"a candidate that changed nothing from showing one in more than {noise.percent(bound)} "
        "of runs"
    )
    if suggested is None:
        return (
            f"{said}no count of reruns up to {noise.MAX_RERUNS} keeps {rare}: a steadier model "
            "(e.g. a lower temperature) would."
        )
    priced = f", for reruns of up to {usd_text(cost)}" if cost is not None else ""
    return f"{said}{_count(suggested)} keep {rare}{priced}."


def _count(reruns: int) -> str:
    return "1 rerun" if reruns == 1 else f"{reruns} reruns"
