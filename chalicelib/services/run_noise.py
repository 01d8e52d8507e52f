"""How likely a compared run's confirmed flips are luck, from the tries it rests on
(docs/concepts/noise.md): the run's `outcome.noise`, computed when its outcome is.

The model is the domain's (`domain.noise`); this module picks the tries it is given, the basis
(`noise_of`), reading through `noise_basis` at most a bounded page of the agent's runs and the
attempts of the runs it finds.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import noise
from chalicelib.domain.enums import AttemptState
from chalicelib.domain.outcome import Comparison
from chalicelib.domain.records import Arm, Attempt, Run
from chalicelib.domain.run_rules import AttemptFacts
from chalicelib.services import noise_basis
from chalicelib.services.arm_tries import by_case

__all__ = ["noise_of"]


Seen = Callable[[Run, list[Attempt]], list[Attempt]]
"""How another run's attempts are to be read: a review decision's plan applies its verdict to
them before the verdict is written (`review_decisions._plan`)."""


def noise_of(
    c: Container,
    run: Run,
    attempts: list[Attempt],
    comparison: Comparison,
    seen: Seen | None = None,
) -> dict[str, Any] | None:
    """How likely the comparison's confirmed flips are luck (`domain.noise`), with the run page's
    sentence; None for a comparison that is invalid or whose side could not run, or without a
    decided try. `seen`, when given, turns each earlier run's attempts as read from the store
    into the attempts the outcome is computed over (a decision not yet written).

    The basis (docs/concepts/noise.md), the first that applies:

    - `stability_run`, when the agent has a completed stability run on this dataset version of
      the baseline's spec, else of the candidate's (`noise_basis.latest_stability_run`, a bounded
      read, then one read of that run's attempts; a run without a decided try - every answer
      errored, or deleted since it was found - does not count): each case's tries are the
      stability run's pooled with this run's tries *of the side that ran the same spec* only.
      Every try pooled is then a draw of one and the same agent, so a real change the candidate
      made cannot pass for noise; the other side's tries are left out. A baseline whose first
      answers are borrowed from that very stability run does not count them twice.
    - `history`, when up to 3 earlier completed runs on this dataset version have an arm of the
      baseline's spec, else of the candidate's (`noise_basis.earlier_runs_of_spec`, a bounded
      read, then one read of each run's attempts) and those arms add at least one decided try:
      each case's tries are those arms' pooled with this run's tries of the side that ran the same
      spec, the other side's left out as above (`_earlier_tries`).
    - `this_run` otherwise: both sides' first answers and reruns pooled as if nothing changed.

    With `stability_run` or `history` the prior is fitted over every case the pooled tries cover
    (the earlier runs' cases beyond this run's help fit it), and only this run's cases are
    chances of luck.
    """
    if comparison.invalid_reason or comparison.could_not_run:
        return None
    arms = {a.arm_id: a for a in run.arms}
    cand_arm, base_arm = arms[comparison.candidate_arm_id], arms[comparison.baseline_arm_id]
    own_tries = {arm.arm_id: by_case(run, attempts, arm.arm_id) for arm in (cand_arm, base_arm)}
    states = {arm_id: _states(tries) for arm_id, tries in own_tries.items()}
    basis: noise.Basis = "this_run"
    pooled: dict[str, noise.CaseTries] | None = None
    hashes = [base_arm.spec_hash, cand_arm.spec_hash]
    recent = noise_basis.RecentRuns(c, run)  # both look-ups share the pages read
    stable = noise_basis.latest_stability_run(c, run, hashes, recent)
    stable_states: dict[str, list[AttemptState]] = {}
    if stable is not None:
        rows = _read(c, stable, seen)
        stable_states = _states(by_case(stable, rows, stable.arms[0].arm_id))
        if not any(t.tries for t in noise.pooled_tries(stable_states, {}).values()):
            stable = None  # deleted since it was found, or not one decided try: it measured nothing
    if stable is not None:
        basis = "stability_run"
        same = base_arm if base_arm.spec_hash == stable.arms[0].spec_hash else cand_arm
        own = states[same.arm_id]
        if same.source_run_id == stable.run_id:  # its first answers are the stability run's
            own = {cid: case_states[1:] for cid, case_states in own.items()}
        pooled = noise.pooled_tries(stable_states, own)
    elif (found := noise_basis.earlier_runs_of_spec(c, run, hashes, recent)) is not None:
        same = base_arm if base_arm.spec_hash == found.spec_hash else cand_arm
        pooled = _earlier_tries(c, run, found, same, own_tries[same.arm_id], seen)
        if pooled is not None:
            basis = "history"
    if pooled is None:
        prior = None
        tries = noise.pooled_tries(states[cand_arm.arm_id], states[base_arm.arm_id])
    else:
        prior = noise.fit_prior(pooled.values())
        tries = {cid: pooled[cid] for cid in run.case_ids if cid in pooled}
    for case_id in run.case_ids:  # an untried case is a chance of luck all the same
        tries.setdefault(case_id, noise.CaseTries(0, 0))
    reruns = min(max(int((run.settings or {}).get("reruns", 0)), 0), noise.MAX_RERUNS)
    measured = noise.estimate_noise(
        tries,
        reruns=reruns,
        baseline_rerun=bool(comparison.baseline.rerun),
        basis=basis,
        confirmed_flips={f.case_id: f.outcome for f in comparison.flips if f.confirmed},
        prior=prior,
    )
    if measured is None:
        return None
    sentence = noise.noise_sentence(measured, comparison.confirmed_regressions)
    return {**measured.as_json(), "sentence": sentence}


def _earlier_tries(
    c: Container,
    run: Run,
    found: noise_basis.SpecHistory,
    same: Arm,
    own: Mapping[str, Sequence[AttemptFacts]],
    seen: Seen | None = None,
) -> dict[str, noise.CaseTries] | None:
    """The `history` basis's tries by case: every arm of `found.spec_hash` in `found.runs` (one
    read of each run's attempts, its own rows only) pooled with `own`, the tries of this run's arm
    `same` that ran that spec; None when the earlier arms add no decided try.

    No answer counts twice: an arm that borrowed its first answers from a run in `found.runs` -
    an earlier one, or `same` itself - contributes its tries without its first answers (attempt
    1), which that run's own arm counts already.
    """
    read = {other.run_id: _read(c, other, seen) for other in found.runs}
    # A run whose rows are gone by now (deleted since it was found) counts for nothing: the
    # answers borrowed from it count where they were borrowed, as a grade again would count them.
    pooled_runs = {run_id for run_id, rows in read.items() if rows}
    earlier: dict[str, list[AttemptState]] = {}
    for other in found.runs:
        rows = read[other.run_id]
        for arm in other.arms:
            if arm.spec_hash != found.spec_hash:
                continue
            tries = by_case(other, rows, arm.arm_id)
            for cid, states in _states(tries, firsts=arm.source_run_id not in pooled_runs).items():
                earlier.setdefault(cid, []).extend(states)
    if not any(t.tries for t in noise.pooled_tries(earlier, {}).values()):
        return None
    return noise.pooled_tries(earlier, _states(own, firsts=same.source_run_id not in pooled_runs))


def _states(
    tries: Mapping[str, Sequence[AttemptFacts]], *, firsts: bool = True
) -> dict[str, list[AttemptState]]:
    """Each case's try states, first first; without the first answers (attempt 1) when `firsts`
    is False."""
    return {
        cid: [a.state for a in case_tries if firsts or a.attempt != 1]
        for cid, case_tries in tries.items()
    }


def _read(c: Container, other: Run, seen: Seen | None) -> list[Attempt]:
    """`other`'s attempts from the store, as `seen` has them read."""
    rows = c.runs.attempts(other.org_id, other.run_id)
    return seen(other, rows) if seen is not None and rows else rows
