"""Pure noise model of a comparison: how likely its confirmed flips are luck.

docs/concepts/noise.md gives the idea. A comparison confirms a flip only when every rerun repeats
it (`compare.confirmed`), but an agent that answers a case differently from one try to the next
can still repeat a flip by chance. Here each case's per-try pass chance `p` is estimated from the
tries assay has seen of it, and a *no-change candidate* - the same agent on both sides, every try
an independent draw with the case's `p` - is asked how often it would show a confirmed flip.

The confirmation rule, exactly as `compare.confirmed` and `compare.compare_arms` have it, with `r`
reruns on each side:

- baseline rerun: a confirmed regression is baseline passed, candidate failed on first answers,
  then the candidate failed every one of its `r` reruns and the baseline passed every one of its
  `r` reruns: chance `p^(r+1) (1-p)^(r+1)`; a confirmed fix has the same chance;
- baseline not rerun (the candidate itself at an earlier time): the baseline's one answer and the
  candidate's `r + 1` tries decide: a regression has chance `p (1-p)^(r+1)`, a fix
  `(1-p) p^(r+1)`;
- `r = 0`: a side with no rerun confirms nothing, so both chances are 0.

The prior, and why. A single try or two per case cannot tell a steady agent from a coin, so each
case borrows strength from the dataset's other cases (empirical Bayes): its `p` has as prior a
mixture of Beta distributions fitted over all the dataset's cases at once, by maximum marginal
likelihood (EM on the mixture's weights). The components have fixed means on a logit grid from
0.1 % to 99.9 %, each narrow (its smaller shape parameter 50), so the mixture can be U-shaped (an
agent that is steady on nearly every case), put its mass on 90 % and 10 % (a model that flips one
try in ten), or spread it over 0-1 - shapes one Beta cannot take together: a single Beta fitted to
first answers of an agent that flips one try in ten puts mass near one half and doubles the
predicted luck. The reruns of the flipped cases are what tells these shapes apart, and the fit
uses them (which cases were rerun depends only on answers already seen, so the likelihood may
ignore the choice). A case seen once or twice therefore takes the dataset's shape: with a steady
agent, a case it passed twice is predicted to pass again, not to flip like a coin. A case with
no try takes the prior itself.

Each case's chances are expectations over its posterior, never a plug-in estimate: for one Beta
component `Beta(a, b)`, `E[p^m (1-p)^n] = B(a+m, b+n) / B(a, b)`, and a mixture's is the weighted
sum of its components' (`flip_chances`, `mixture_flip_chances`).

Everything here takes plain data and returns plain data; numpy is imported inside the fit only.
"""

from __future__ import annotations

import math
from collections import Counter
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any, Literal

from chalicelib.domain.enums import AttemptState, CaseOutcome

__all__ = [
    "BASES",
    "DEFAULT_BOUND",
    "MAX_RERUNS",
    "BetaMixture",
    "CaseTries",
    "Noise",
    "auto_reruns",
    "estimate_noise",
    "fit_prior",
    "flip_chances",
    "mixture_flip_chances",
    "noise_sentence",
    "percent",
    "pooled_tries",
    "reruns_under",
]

Basis = Literal["this_run", "stability_run", "history"]
BASES: tuple[Basis, ...] = ("this_run", "stability_run", "history")
"""Where the tries come from: this run, the latest stability run, or earlier runs of the spec."""
DEFAULT_BOUND = 0.01
"""The chance of luck a run should stay under: 1 %."""
MAX_RERUNS = 5
"""The most reruns a run may ask for (`EVAL_RERUNS`, 0-5)."""

_GRID_LOGIT = tuple(-6.9 + 0.345 * i for i in range(41))
"""Component means on a logit grid from about 0.1 % to 99.9 %."""
_SMALLER_SHAPE = 50.0
"""Each component with mean m is Beta(c m, c (1 - m)) with the smaller of the two shapes 50: narrow
even near 0 and 1 (the spread of 1 - p about a mean of 1 % is a seventh of it), so the mixture
takes the dataset's shape and a component adds little noise of its own. (A grid twice as fine
with components ten times narrower cuts the overstatement of a flip repeated over 3 reruns by an
agent at 90 % from 15 % to 4 % on 50,000 cases, but doubles the fit's cost, and on 1,000 cases
the spread of the estimate dominates: measured in bench/RESULTS.md.)"""
_EM_ROUNDS = 3000
"""Accelerated EM rounds at most (each three EM steps); the fits converge in far fewer."""
_EM_TOLERANCE = 1e-6
"""The fit stops when the log-likelihood (summed over the cases) gains less than this in a round:
the predicted chances then move by well under a hundredth of a point."""


@dataclass(frozen=True, slots=True)
class CaseTries:
    """One case's decided tries: how many passed out of how many (incomplete/ungraded not counted).

    Raises:
        ValueError: a negative count, or more passes than tries.
    """

    passes: int
    tries: int

    def __post_init__(self) -> None:
        if self.tries < 0 or not 0 <= self.passes <= self.tries:
            raise ValueError(
                f"passes must be within 0..tries: passes={self.passes}, tries={self.tries}"
            )


@dataclass(frozen=True, slots=True)
class BetaMixture:
    """A mixture of Beta distributions: `components` are `(weight, a, b)`, weights summing to 1.

    Raises:
        ValueError: no component, a non-positive `a` or `b`, a negative weight, or weights that
            do not sum to 1 (within 1e-9).
    """

    components: tuple[tuple[float, float, float], ...]

    def __post_init__(self) -> None:
        if not self.components:
            raise ValueError("a mixture needs at least one component")
        for weight, a, b in self.components:
            if a <= 0 or b <= 0 or weight < 0:
                raise ValueError(f"a component needs a > 0, b > 0, weight >= 0: {(weight, a, b)}")
        if abs(sum(w for w, _, _ in self.components) - 1) > 1e-9:
            raise ValueError("the weights of a mixture must sum to 1")

    @classmethod
    def beta(cls, a: float, b: float) -> BetaMixture:
        """The one-component mixture Beta(a, b)."""
        return cls(((1.0, a, b),))

    def posterior(self, case: CaseTries) -> BetaMixture:
        """The posterior after `case.passes` passes in `case.tries` tries (Bayes, per component)."""
        s, f = case.passes, case.tries - case.passes
        logs = [
            math.log(w) + _log_beta(a + s, b + f) - _log_beta(a, b) if w > 0 else -math.inf
            for w, a, b in self.components
        ]
        top = max(logs)
        raw = [math.exp(x - top) for x in logs]
        total = sum(raw)
        return BetaMixture(
            tuple(
                (r / total, a + s, b + f) for r, (_, a, b) in zip(raw, self.components, strict=True)
            )
        )


def _log_beta(a: float, b: float) -> float:
    return math.lgamma(a) + math.lgamma(b) - math.lgamma(a + b)


def _moment(a: float, b: float, m: int, n: int) -> float:
    """E[p^m (1-p)^n] under Beta(a, b) = B(a+m, b+n) / B(a, b)."""
    return math.exp(_log_beta(a + m, b + n) - _log_beta(a, b))


def flip_chances(a: float, b: float, reruns: int, *, baseline_rerun: bool) -> tuple[float, float]:
    """A no-change candidate's chance of a confirmed regression and of a confirmed fix on one case
    whose per-try pass chance is Beta(a, b), integrated over it.

    The rule (module docstring): with the baseline rerun both are `B(a+r+1, b+r+1) / B(a, b)`;
    without, the regression is `B(a+1, b+r+1) / B(a, b)` and the fix `B(a+r+1, b+1) / B(a, b)`;
    with no rerun both are 0.

    Returns:
        `(regression, fix)`, each a probability.

    Raises:
        ValueError: `reruns` outside 0..5, or a non-positive `a` or `b`.
    """
    _check_reruns(reruns)
    if a <= 0 or b <= 0:
        raise ValueError(f"a Beta needs a > 0 and b > 0: a={a}, b={b}")
    if reruns == 0:
        return 0.0, 0.0
    k = reruns + 1
    if baseline_rerun:
        both = _moment(a, b, k, k)
        return both, both
    return _moment(a, b, 1, k), _moment(a, b, k, 1)


def mixture_flip_chances(
    mixture: BetaMixture, reruns: int, *, baseline_rerun: bool
) -> tuple[float, float]:
    """`flip_chances` over a mixture: the weighted sum of its components' `(regression, fix)`."""
    regression = fix = 0.0
    for weight, a, b in mixture.components:
        reg, fx = flip_chances(a, b, reruns, baseline_rerun=baseline_rerun)
        regression += weight * reg
        fix += weight * fx
    return regression, fix


def _check_reruns(reruns: int) -> None:
    if not 0 <= reruns <= MAX_RERUNS:
        raise ValueError(f"reruns must be within 0..{MAX_RERUNS}: {reruns}")


def fit_prior(cases: Iterable[CaseTries]) -> BetaMixture:
    """The empirical-Bayes prior of the module docstring, fitted over a dataset's cases.

    The weights of the fixed grid of Beta components maximise the marginal likelihood of every
    case's tries (EM from equal weights, accelerated: `_squarem`, until a round gains less than
    1e-6 in log-likelihood). Cases with no try say nothing and are left out of the fit.

    Raises:
        ValueError: no case has a try (there is nothing to fit).
    """
    import numpy as np  # noqa: PLC0415 - only the fit needs it

    patterns = Counter((c.passes, c.tries - c.passes) for c in cases if c.tries > 0)
    if not patterns:
        raise ValueError("no case has a try: the noise cannot be measured")
    means = [1 / (1 + math.exp(-x)) for x in _GRID_LOGIT]
    scale = [_SMALLER_SHAPE / min(m, 1 - m) for m in means]
    a = np.array([c * m for c, m in zip(scale, means, strict=True)])
    b = np.array([c * (1 - m) for c, m in zip(scale, means, strict=True)])
    keys = sorted(patterns)  # the same tries fit the same prior whatever order the cases came in
    s = np.array([k[0] for k in keys], dtype=float)[:, None]
    f = np.array([k[1] for k in keys], dtype=float)[:, None]
    counts = np.array([patterns[k] for k in keys], dtype=float)
    lgamma = np.vectorize(math.lgamma)
    log_like = lgamma(a + s) + lgamma(b + f) - lgamma(a + b + s + f)
    log_like -= lgamma(a) + lgamma(b) - lgamma(a + b)
    like = np.exp(log_like - log_like.max(axis=1, keepdims=True))
    weights = _squarem(like, counts, np.full(len(means), 1 / len(means)))
    return BetaMixture(
        tuple(
            (float(w), float(ai), float(bi))
            for w, ai, bi in zip(weights, a, b, strict=True)
            if w > 0
        )
    )


def _squarem(like: Any, counts: Any, weights: Any) -> Any:
    """The mixture weights maximising `sum counts * log(like @ weights)`: EM on the weights,
    accelerated by SQUAREM (Varadhan and Roland, 2008, scheme S3), which reaches the maximum in a
    few hundred steps where plain EM needs tens of thousands near the grid's ends. A step that
    would lower the likelihood below the last round's falls back to the two plain EM steps it
    extrapolated from.

    Args:
        like: (patterns, components) array of each pattern's likelihood under each component.
        counts: (patterns,) array of how many cases show each pattern.
        weights: (components,) starting weights, summing to 1.
    """
    import numpy as np  # noqa: PLC0415 - only the fit needs it

    share = counts / counts.sum()
    like_t = like.T.copy()

    def step(w: Any) -> Any:
        # One EM step in two products: w_k * sum_i share_i like_ik / (like @ w)_i.
        return w * (like_t @ (share / (like @ w)))

    def loglik(w: Any) -> float:
        return float(counts @ np.log(np.maximum(like @ w, 1e-300)))

    best = loglik(weights)
    for _ in range(_EM_ROUNDS):
        one = step(weights)
        two = step(one)
        r = one - weights
        v = two - one - r
        norm_v = float(np.sqrt(v @ v))
        alpha = min(-float(np.sqrt(r @ r)) / norm_v, -1.0) if norm_v > 0 else -1.0
        jumped = np.maximum(weights - 2 * alpha * r + alpha * alpha * v, 0.0)
        candidate = step(jumped / jumped.sum())
        gained = loglik(candidate)
        if not gained >= best:  # the jump overshot (or left the simplex's interior): plain EM
            candidate, gained = two, loglik(two)
        weights = candidate
        if gained - best < _EM_TOLERANCE:
            break
        best = gained
    return weights / weights.sum()


def pooled_tries(
    candidate: Mapping[str, Sequence[AttemptState]],
    baseline: Mapping[str, Sequence[AttemptState]],
) -> dict[str, CaseTries]:
    """Each case's decided tries of both sides together, as the no-change hypothesis pools them.

    Args:
        candidate: the candidate's tries by case id (first answer and reruns, in any order).
        baseline: the baseline's tries by case id; a case on one side only counts its own.

    Returns:
        `CaseTries` by case id; `passed` counts as a pass, `failed` as a fail, the rest not at all.
    """
    out: dict[str, CaseTries] = {}
    for case_id in dict.fromkeys([*candidate, *baseline]):
        states = [*candidate.get(case_id, ()), *baseline.get(case_id, ())]
        passes = sum(1 for s in states if s is AttemptState.PASSED)
        fails = sum(1 for s in states if s is AttemptState.FAILED)
        out[case_id] = CaseTries(passes, passes + fails)
    return out


@dataclass(frozen=True, slots=True)
class Noise:
    """What a comparison's measured noise says: the run's `outcome.noise`.

    Every chance is for a *no-change candidate*: the same agent on both sides, each try an
    independent draw with the case's estimated pass chance, compared with `reruns` reruns as this
    run was.
    """

    basis: Basis
    """Where the tries come from: `this_run`, `stability_run` or `history`."""
    tries: int
    """How many decided tries the estimate rests on (all cases together)."""
    cases: int
    """How many cases the dataset has (each a chance of luck, tried or not)."""
    reruns: int
    """The reruns the chances are for (this run's), 0-5."""
    baseline_rerun: bool
    """False when the baseline is the candidate itself at an earlier time, not rerun."""
    expected_regressions: float
    """Expected confirmed regressions of a no-change candidate (sum over cases)."""
    expected_fixes: float
    """Expected confirmed fixes of a no-change candidate."""
    p_luck_regression: float
    """Chance a no-change candidate shows at least one confirmed regression (reads `worse`)."""
    p_luck_fix: float
    """Chance a no-change candidate shows at least one confirmed fix."""
    per_flip: dict[str, float]
    """Per confirmed flip (case id), the chance that a no-change candidate confirms a flip in the
    same direction on that very case at these reruns: the case's own chance of luck, its pass
    chance measured from all its tries as if nothing had changed."""
    luck_by_reruns: tuple[float, ...]
    """`p_luck_regression` at 0, 1, ... 5 reruns (index = reruns); never rising from 1 on."""
    reruns_for_bound: int | None
    """The smallest reruns in 1-5 whose `p_luck_regression` is under `bound`, None when none is
    (0 is never suggested: it confirms nothing at all)."""
    bound: float
    """The chance of luck to stay under, e.g. 0.01."""
    advice: str | None
    """What would bring the luck under the bound when no count of reruns does, else None."""

    def as_json(self) -> dict[str, Any]:
        """The API JSON: every field above, chances as floats in 0..1, `per_flip` an object."""
        return {
            "basis": self.basis,
            "tries": self.tries,
            "cases": self.cases,
            "reruns": self.reruns,
            "baseline_rerun": self.baseline_rerun,
            "expected_regressions": self.expected_regressions,
            "expected_fixes": self.expected_fixes,
            "p_luck_regression": self.p_luck_regression,
            "p_luck_fix": self.p_luck_fix,
            "per_flip": dict(self.per_flip),
            "luck_by_reruns": list(self.luck_by_reruns),
            "reruns_for_bound": self.reruns_for_bound,
            "bound": self.bound,
            "advice": self.advice,
        }


def estimate_noise(
    tries_by_case: Mapping[str, CaseTries],
    *,
    reruns: int,
    baseline_rerun: bool,
    basis: Basis,
    confirmed_flips: Mapping[str, CaseOutcome] | None = None,
    bound: float = DEFAULT_BOUND,
    prior: BetaMixture | None = None,
) -> Noise | None:
    """The noise of a comparison with `reruns` reruns on this dataset (module docstring).

    Args:
        tries_by_case: every case of the dataset with its decided tries under the no-change
            hypothesis (both sides' first answers and reruns, `pooled_tries`; plus, when the
            caller has them, a stability run's or earlier runs' tries of the same spec added in).
            A case with `CaseTries(0, 0)` still counts: a no-change candidate would answer it.
        reruns: the run's reruns, 0-5.
        baseline_rerun: False when the baseline is not rerun (the candidate at an earlier time).
        basis: `this_run`, `stability_run` or `history`, as the caller took the tries.
        confirmed_flips: the run's confirmed flips (`regression` or `fixed`) by case id, for
            `per_flip`; a case missing from `tries_by_case` takes the prior.
        bound: the chance of luck to stay under, in (0, 1).
        prior: the prior to use instead of fitting one over `tries_by_case` (tests, or a prior
            fitted on a larger basis).

    Returns:
        The `Noise`, or None when no case has a try (nothing measured; the run shows no line).

    Raises:
        ValueError: reruns outside 0..5, an unknown basis, a bound outside (0, 1), or a flip that
            is neither `regression` nor `fixed`.
    """
    _check_reruns(reruns)
    if basis not in BASES:
        raise ValueError(f"basis must be one of {', '.join(BASES)}: {basis!r}")
    if not 0 < bound < 1:
        raise ValueError(f"bound must be within (0, 1): {bound}")
    flips = dict(confirmed_flips or {})
    for case_id, outcome in flips.items():
        if outcome not in (CaseOutcome.REGRESSION, CaseOutcome.FIXED):
            raise ValueError(f"a confirmed flip is a regression or a fix: {case_id}={outcome}")
    tries = sum(c.tries for c in tries_by_case.values())
    if tries == 0:
        return None
    fitted = prior if prior is not None else fit_prior(tries_by_case.values())
    patterns = Counter(tries_by_case.values())
    posteriors = {case: fitted.posterior(case) for case in patterns}
    unseen = CaseTries(0, 0)
    posteriors.setdefault(unseen, fitted)

    def chances(r: int) -> dict[CaseTries, tuple[float, float]]:
        return {
            case: mixture_flip_chances(post, r, baseline_rerun=baseline_rerun)
            for case, post in posteriors.items()
        }

    by_reruns = [chances(r) for r in range(MAX_RERUNS + 1)]
    luck = tuple(_at_least_one(patterns, by_reruns[r], 0) for r in range(MAX_RERUNS + 1))
    now = by_reruns[reruns]
    per_flip = {
        case_id: now[tries_by_case.get(case_id, unseen)][
            0 if outcome is CaseOutcome.REGRESSION else 1
        ]
        for case_id, outcome in flips.items()
    }
    suggested = reruns_under(luck, bound)
    return Noise(
        basis=basis,
        tries=tries,
        cases=len(tries_by_case),
        reruns=reruns,
        baseline_rerun=baseline_rerun,
        expected_regressions=sum(n * now[c][0] for c, n in patterns.items()),
        expected_fixes=sum(n * now[c][1] for c, n in patterns.items()),
        p_luck_regression=luck[reruns],
        p_luck_fix=_at_least_one(patterns, now, 1),
        per_flip=per_flip,
        luck_by_reruns=luck,
        reruns_for_bound=suggested,
        bound=bound,
        advice=None if suggested is not None else _advice(luck[MAX_RERUNS], bound),
    )


def _at_least_one(
    patterns: Mapping[CaseTries, int], chances: Mapping[CaseTries, tuple[float, float]], side: int
) -> float:
    """1 - prod(1 - chance) over cases: the chance of at least one, cases independent."""
    log_none = sum(n * math.log1p(-min(chances[c][side], 1.0 - 1e-15)) for c, n in patterns.items())
    return 0.0 - math.expm1(log_none)  # 0.0 - 0.0 is 0.0, where -expm1(0.0) is -0.0


def _advice(luck_at_most: float, bound: float) -> str:
    return (
        f"No count of reruns up to {MAX_RERUNS} brings it under {percent(bound)}: at "
        f"{MAX_RERUNS} reruns a candidate that changed nothing would still show one in "
        f"{percent(luck_at_most)} of runs. A steadier model (e.g. a lower temperature) would, "
        "or fewer cases it answers unsteadily; a stability run measures the noise on more tries."
    )


def reruns_under(luck_by_reruns: Sequence[float], bound: float) -> int | None:
    """The smallest reruns in 1-5 whose chance of luck (`Noise.luck_by_reruns`, index = reruns)
    is under `bound`; None when none is (0 is never picked: it confirms nothing).

    Raises:
        ValueError: a bound outside (0, 1).
    """
    if not 0 < bound < 1:
        raise ValueError(f"bound must be within (0, 1): {bound}")
    top = min(len(luck_by_reruns) - 1, MAX_RERUNS)
    return next((r for r in range(1, top + 1) if float(luck_by_reruns[r]) < bound), None)


def auto_reruns(noise: Noise) -> int:
    """The reruns `reruns: "auto"` picks: `noise.reruns_for_bound`, or 5 when no count meets it.

    The noise must come from tries seen before the run starts (a stability run, or earlier runs
    of the same spec: basis `stability_run` or `history`).
    """
    return noise.reruns_for_bound if noise.reruns_for_bound is not None else MAX_RERUNS


def percent(chance: float) -> str:
    """A chance in the run page's words: `23 %`, `0.4 %`, `under 0.1 %`."""
    points = chance * 100
    if points == 0:
        return "0 %"
    if points < 0.1:
        return "under 0.1 %"
    if points < 10 and round(points, 1) != round(points):
        return f"{points:.1f} %"
    return f"{round(points)} %"


_BASIS_WORDS: dict[str, str] = {
    "this_run": "With this dataset's measured noise",
    "stability_run": "With the noise its stability run measured",
    "history": "With the noise earlier runs of this spec measured",
}


def noise_sentence(noise: Noise, confirmed_regressions: int) -> str:
    """The run page's sentence on the regression verdict's luck.

    E.g. "1 confirmed regression. With this dataset's measured noise, a candidate that changed
    nothing would show one in 23 % of runs; 4 reruns bring that under 1 %." The second half says
    instead that this run's reruns already keep it under the bound, or that no count up to 5
    does (and what would); a run with no reruns confirms nothing, so it names the reruns that
    would keep luck under the bound.

    Raises:
        ValueError: a negative count.
    """
    if confirmed_regressions < 0:
        raise ValueError(f"confirmed regressions cannot be negative: {confirmed_regressions}")
    head = (
        "No confirmed regression."
        if confirmed_regressions == 0
        else f"{confirmed_regressions} confirmed regression"
        + ("." if confirmed_regressions == 1 else "s.")
    )
    intro = _BASIS_WORDS[noise.basis]
    bound = percent(noise.bound)
    suggested = noise.reruns_for_bound
    if noise.reruns == 0:
        if suggested is None:
            return (
                f"{head} Without reruns nothing is confirmed. {intro}, no count of reruns up to "
                f"{MAX_RERUNS} keeps a candidate that changed nothing from showing one in more "
                f"than {bound} of runs."
            )
        return (
            f"{head} Without reruns nothing is confirmed. {intro}, {_reruns(suggested, 'keep')} a "
            f"candidate that changed nothing from showing one in more than {bound} of runs."
        )
    said = (
        f"{head} {intro}, a candidate that changed nothing would show one in "
        f"{percent(noise.p_luck_regression)} of runs"
    )
    if noise.p_luck_regression < noise.bound:
        return f"{said}."
    if suggested is None:
        return f"{said}; no count of reruns up to {MAX_RERUNS} brings that under {bound}."
    return f"{said}; {_reruns(suggested, 'bring')} that under {bound}."


def _reruns(n: int, verb: str) -> str:
    return f"1 rerun {verb}s" if n == 1 else f"{n} reruns {verb}"
