"""Noise calibration: does the predicted chance of luck match how often luck reads `worse`?

Simulated through the domain code alone (`chalicelib.domain.compare.compare_arms`, the rules a
run's comparison uses, and `chalicelib.domain.noise`), never the HTTP stack. Over a grid of

- cases: 50, 200, 1,000 (a fresh draw of per-case pass chances each trial);
- agent noise: `steady` (each case passes 99 % or 1 % of the time, 7 cases in 10 the first),
  `flips10` (90 % or 10 %, the same split), `spread` (each case's chance uniform over 0-1);
- reruns 1-5, the baseline rerun beside the candidate;

it runs, per cell:

- *no-change* runs: both sides the same agent, every try an independent draw. A run is a false
  `worse` when it confirms at least one regression. Each run's noise is estimated from its own
  tries (basis `this_run`: both sides' first answers and reruns) as a finalizing run would, and
  the cell's *predicted* rate is the mean of the runs' `p_luck_regression`;
- *real-change* runs: 5 % of the cases (at least one) regress - the baseline passes them with the
  steady level of the agent (99 %, 90 %, or a chance uniform over 50-100 % for `spread`) and the
  candidate with one minus it; the share of those regressions the run confirms.

The goal: predicted within 3 points of observed, or within the observed rate's 95 % binomial
interval (Wilson) over the trials, in every cell.

`reruns: auto`: a start knows only what was seen before it, so per (cases, noise) an earlier
no-change run of the same spec (reruns 2) gives the tries (basis `history`), `noise.auto_reruns`
picks the count, and a fresh no-change run with that count is checked for a false `worse`. The
last line's rate is over the (cases, noise) pairs where some count in 1-5 can keep the true
chance of luck under 1 % (computed exactly from the simulated agent); the others are printed too.

    python -m bench.noise [--trials 200] [--change-trials 50] [--auto-trials 150] [--seed 7]
        [--jobs 2]

Repeatable: each cell has its own generator, seeded from `--seed`, so the output does not depend
on `--jobs`.
"""

from __future__ import annotations

import argparse
import math
import multiprocessing
import sys
import time
from collections.abc import Callable

import numpy as np

from chalicelib.domain.compare import compare_case, comparison_verdict, confirmed, rerun_tasks
from chalicelib.domain.enums import AttemptState, CaseOutcome, ComparisonVerdict
from chalicelib.domain.noise import (
    DEFAULT_BOUND,
    MAX_RERUNS,
    auto_reruns,
    estimate_noise,
    pooled_tries,
)

CASES = (50, 200, 1000)
RERUNS = (1, 2, 3, 4, 5)
HIGH_SHARE = 0.7
"""The share of cases a two-level agent passes at its high level."""
REGRESSED_SHARE = 0.05
BASELINE_ARM, CANDIDATE_ARM = "baseline", "candidate"

Rng = np.random.Generator


def _two_level(high: float) -> Callable[[Rng, int], np.ndarray]:
    def draw(rng: Rng, n: int) -> np.ndarray:
        return np.where(rng.random(n) < HIGH_SHARE, high, 1 - high)

    return draw


def _spread(rng: Rng, n: int) -> np.ndarray:
    return rng.random(n)


AGENTS: dict[str, Callable[[Rng, int], np.ndarray]] = {
    "steady": _two_level(0.99),
    "flips10": _two_level(0.90),
    "spread": _spread,
}
"""Each agent draws its cases' per-try pass chances."""


def _true_luck(agent: str, cases: int, reruns: int) -> float:
    """The exact chance a no-change run confirms at least one regression (baseline rerun)."""
    k = reruns + 1
    if agent == "spread":
        q = math.exp(2 * math.lgamma(k + 1) - math.lgamma(2 * k + 2))  # B(k+1, k+1)
    else:
        high = 0.99 if agent == "steady" else 0.90
        q = (high * (1 - high)) ** k
    return 1 - (1 - q) ** cases


def _state(passed: bool) -> AttemptState:
    return AttemptState.PASSED if passed else AttemptState.FAILED


def _run(
    rng: Rng, base_p: np.ndarray, cand_p: np.ndarray, reruns: int
) -> tuple[dict[str, list[AttemptState]], dict[str, list[AttemptState]], set[str]]:
    """One comparison: first answers, the reruns `rerun_tasks` asks for, then per case the rules
    `compare_arms` applies (`compare_case`, `confirmed`) and `comparison_verdict`.

    Returns each side's tries by case id and the confirmed regressions' case ids.
    """
    n = len(base_p)
    ids = [f"c{i}" for i in range(n)]
    base_first = rng.random(n) < base_p
    cand_first = rng.random(n) < cand_p
    tries: dict[str, dict[str, list[AttemptState]]] = {
        BASELINE_ARM: {ids[i]: [_state(bool(base_first[i]))] for i in range(n)},
        CANDIDATE_ARM: {ids[i]: [_state(bool(cand_first[i]))] for i in range(n)},
    }
    outcomes = {
        cid: compare_case(
            tries[CANDIDATE_ARM][cid][0],
            tries[BASELINE_ARM][cid][0],
            candidate_fp=None,
            baseline_fp=None,
        )
        for cid in ids
    }
    flipped = [
        cid for cid, o in outcomes.items() if o in (CaseOutcome.REGRESSION, CaseOutcome.FIXED)
    ]
    chance = {BASELINE_ARM: base_p, CANDIDATE_ARM: cand_p}
    tasks = rerun_tasks(flipped, [CANDIDATE_ARM], BASELINE_ARM, reruns)
    draws = rng.random(len(tasks))
    for (arm, case_id, _attempt), u in zip(tasks, draws, strict=True):
        tries[arm][case_id].append(_state(bool(u < chance[arm][int(case_id[1:])])))
    held = {
        cid
        for cid in flipped
        if confirmed(outcomes[cid], tries[CANDIDATE_ARM][cid][1:], tries[BASELINE_ARM][cid][1:])
    }
    regressions = {cid for cid in held if outcomes[cid] is CaseOutcome.REGRESSION}
    verdict = comparison_verdict(len(regressions), len(held) - len(regressions), invalid=False)
    assert (verdict in (ComparisonVerdict.WORSE, ComparisonVerdict.MIXED)) == bool(regressions)
    return tries[CANDIDATE_ARM], tries[BASELINE_ARM], regressions


def _wilson(k: int, n: int, z: float = 1.96) -> tuple[float, float]:
    p = k / n
    d = 1 + z * z / n
    c = (p + z * z / (2 * n)) / d
    h = z * math.sqrt(p * (1 - p) / n + z * z / (4 * n * n)) / d
    return max(0.0, c - h), min(1.0, c + h)


def _no_change_cell(rng: Rng, agent: str, cases: int, reruns: int, trials: int) -> dict[str, float]:
    predicted = 0.0
    worse = 0
    for _ in range(trials):
        p = AGENTS[agent](rng, cases)
        cand, base, confirmed = _run(rng, p, p, reruns)
        noise = estimate_noise(
            pooled_tries(cand, base), reruns=reruns, baseline_rerun=True, basis="this_run"
        )
        assert noise is not None
        predicted += noise.p_luck_regression
        worse += bool(confirmed)
    predicted /= trials
    observed = worse / trials
    low, high = _wilson(worse, trials)
    gap = abs(predicted - observed)
    within = gap <= 0.03 or low <= predicted <= high
    return {
        "predicted": predicted,
        "observed": observed,
        "low": low,
        "high": high,
        "gap": gap,
        "within": float(within),
        "exact": _true_luck(agent, cases, reruns),
    }


def _regressed_chances(rng: Rng, agent: str, k: int) -> np.ndarray:
    if agent == "spread":
        return 0.5 + 0.5 * rng.random(k)
    return np.full(k, 0.99 if agent == "steady" else 0.90)


def _change_cell(rng: Rng, agent: str, cases: int, reruns: int, trials: int) -> float:
    held = total = 0
    for _ in range(trials):
        base_p = AGENTS[agent](rng, cases)
        cand_p = base_p.copy()
        k = max(1, round(REGRESSED_SHARE * cases))
        which = rng.choice(cases, size=k, replace=False)
        high = _regressed_chances(rng, agent, k)
        base_p[which] = high
        cand_p[which] = 1 - high
        _, _, confirmed = _run(rng, base_p, cand_p, reruns)
        held += sum(1 for i in which if f"c{i}" in confirmed)
        total += k
    return held / total


def _auto_cell(rng: Rng, agent: str, cases: int, trials: int) -> tuple[float, dict[int, int]]:
    worse = 0
    picked: dict[int, int] = {}
    for _ in range(trials):
        p = AGENTS[agent](rng, cases)
        cand, base, _ = _run(rng, p, p, 2)  # the earlier run whose tries the start reads
        noise = estimate_noise(
            pooled_tries(cand, base), reruns=2, baseline_rerun=True, basis="history"
        )
        assert noise is not None
        r = auto_reruns(noise)
        picked[r] = picked.get(r, 0) + 1
        _, _, confirmed = _run(rng, p, p, r)
        worse += bool(confirmed)
    return worse / trials, picked


def _cell_task(task: tuple[str, int, str, int, int, int, int]) -> tuple[dict[str, float], float]:
    kind, cases, agent, reruns, trials, change_trials, seed = task
    rng = np.random.default_rng(seed)
    if kind == "auto":
        rate, picked = _auto_cell(rng, agent, cases, trials)
        return {"rate": rate, **{f"picked{r}": float(n) for r, n in picked.items()}}, 0.0
    cell = _no_change_cell(rng, agent, cases, reruns, trials)
    return cell, _change_cell(rng, agent, cases, reruns, change_trials)


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=(__doc__ or "").split("\n\n")[0])
    parser.add_argument("--trials", type=int, default=200, help="no-change runs per cell")
    parser.add_argument("--change-trials", type=int, default=50, help="real-change runs per cell")
    parser.add_argument("--auto-trials", type=int, default=150, help="auto runs per (cases, noise)")
    parser.add_argument("--seed", type=int, default=7)
    parser.add_argument("--jobs", type=int, default=2, help="worker processes (2 cores here)")
    args = parser.parse_args(argv)
    started = time.perf_counter()
    grid = [(c, a, r) for c in CASES for a in AGENTS for r in RERUNS]
    pairs = [(c, a) for c in CASES for a in AGENTS]
    seeds = np.random.SeedSequence(args.seed).generate_state(len(grid) + len(pairs))
    tasks = [
        ("cell", c, a, r, args.trials, args.change_trials, int(seed))
        for (c, a, r), seed in zip(grid, seeds, strict=False)
    ] + [
        ("auto", c, a, 0, args.auto_trials, 0, int(seed))
        for (c, a), seed in zip(pairs, seeds[len(grid) :], strict=True)
    ]
    with multiprocessing.get_context("fork").Pool(args.jobs) as pool:
        results = pool.map(_cell_task, tasks, chunksize=1)
    print(
        f"no-change runs {args.trials} per cell, real-change runs {args.change_trials}, "
        "baseline rerun; predicted = mean p_luck_regression from each run's own tries"
    )
    print()
    print(
        "| cases | agent noise | reruns | predicted false worse | observed (95 % interval) "
        "| exact | gap (points) | true regressions confirmed |"
    )
    print("|---|---|---|---|---|---|---|---|")
    worst = 0.0
    misses = 0
    for (cases, agent, reruns), (cell, share) in zip(grid, results, strict=False):
        worst = max(worst, cell["gap"])
        misses += cell["within"] == 0.0
        flag = "" if cell["within"] else " (outside)"
        print(
            f"| {cases:,} | {agent} | {reruns} | {cell['predicted'] * 100:.1f} % "
            f"| {cell['observed'] * 100:.1f} % ({cell['low'] * 100:.1f}-"
            f"{cell['high'] * 100:.1f}) | {cell['exact'] * 100:.1f} % "
            f"| {cell['gap'] * 100:.1f}{flag} | {share * 100:.0f} % |"
        )
    print()
    print(
        f"reruns auto: {args.auto_trials} starts per (cases, noise), each reading an earlier "
        "run's tries (reruns 2, basis history)"
    )
    print()
    print("| cases | agent noise | a count in 1-5 can | reruns picked (runs) | false worse |")
    print("|---|---|---|---|---|")
    auto_worse = auto_total = 0.0
    for (cases, agent), (auto, _) in zip(pairs, results[len(grid) :], strict=True):
        rate = auto["rate"]
        can = any(_true_luck(agent, cases, r) < DEFAULT_BOUND for r in range(1, MAX_RERUNS + 1))
        if can:
            auto_worse += rate * args.auto_trials
            auto_total += args.auto_trials
        chosen = ", ".join(
            f"{k[6:]}: {int(v)}" for k, v in sorted(auto.items()) if k.startswith("picked")
        )
        print(f"| {cases:,} | {agent} | {'yes' if can else 'no'} | {chosen} | {rate * 100:.1f} % |")
    elapsed = time.perf_counter() - started
    print()
    print(f"{len(grid)} cells, {misses} outside the goal; {elapsed:.0f} s with {args.jobs} jobs")
    auto_rate = auto_worse / auto_total * 100 if auto_total else 0.0
    print(
        f"noise calibration: worst gap {worst * 100:.1f} points over {len(grid)} cells; "
        f"reruns auto: false worse {auto_rate:.1f} %"
    )
    return 0


if __name__ == "__main__":
    sys.exit(main())
