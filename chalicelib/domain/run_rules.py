"""Pure rules of a run: which task comes next, how a case settles, and what a run adds up to.

See docs/architecture/run-lifecycle.md and docs/concepts/verdicts.md.
"""

from __future__ import annotations

import math
from collections.abc import Iterable, Sequence
from dataclasses import dataclass, field

from chalicelib.domain.enums import AttemptState, RunStatus, Verdict


@dataclass(frozen=True, slots=True)
class Task:
    """One case attempt to run: what a case-task message carries besides org and run."""

    arm_id: str
    case_id: str
    attempt: int

    @property
    def key(self) -> str:
        """`arm#case#attempt`, the attempt row's sort key (attempt zero-padded to 3 digits)."""
        return attempt_key(self.arm_id, self.case_id, self.attempt)


def attempt_key(arm_id: str, case_id: str, attempt: int) -> str:
    """The attempts table's sort key for one attempt."""
    return f"{arm_id}#{case_id}#{attempt:03d}"


def task_at(
    index: int,
    arm_ids: Sequence[str],
    case_ids: Sequence[str],
    extra_tasks: Sequence[Sequence[object]] | None = None,
) -> Task:
    """The run's `index`-th task.

    First answers come first, case by case with every arm of a case side by side (so both sides
    meet the provider at the same moment): task `i < len(arms)*len(cases)` is case
    `case_ids[i // len(arms)]` on arm `arm_ids[i % len(arms)]`, attempt 1. Later tasks (reruns,
    added when a phase changes) are `extra_tasks[i - first]` as `[arm_id, case_id, attempt]`.

    Raises:
        IndexError: past the last task.
    """
    first = len(arm_ids) * len(case_ids)
    if index < first:
        return Task(arm_ids[index % len(arm_ids)], case_ids[index // len(arm_ids)], 1)
    arm_id, case_id, attempt = (extra_tasks or [])[index - first]
    return Task(str(arm_id), str(case_id), int(attempt))  # type: ignore[call-overload]


def index_of(
    task: Task,
    arm_ids: Sequence[str],
    case_ids: Sequence[str],
    extra_tasks: Sequence[Sequence[object]] | None = None,
    *,
    hint: int | None = None,
) -> int | None:
    """The index of `task` in the run's plan (the inverse of `task_at`), or None when the plan has
    no such task: an arm, a case or an attempt the run never had (issue 11 "Only the run's own
    tasks are recorded").

    `hint`: the index a case-task message carries; checked, and used when it is right (a lookup
    without it walks the case ids).
    """
    total = len(arm_ids) * len(case_ids) + len(extra_tasks or [])
    if hint is not None and 0 <= hint < total:
        if task_at(hint, arm_ids, case_ids, extra_tasks) == task:
            return hint
    if task.attempt == 1 and task.arm_id in arm_ids:
        try:
            case_pos = list(case_ids).index(task.case_id)
        except ValueError:
            return None
        return case_pos * len(arm_ids) + list(arm_ids).index(task.arm_id)
    first = len(arm_ids) * len(case_ids)
    for i, extra in enumerate(extra_tasks or []):
        arm_id, case_id, attempt = extra
        if Task(str(arm_id), str(case_id), int(attempt)) == task:  # type: ignore[call-overload]
            return first + i
    return None


OPEN = 1 << 40
"""The end of a lane no steal has cut: its stride runs on past any task the run will have."""


@dataclass(frozen=True, slots=True)
class Claim:
    """The task a slot of lane `lane` starts next (docs/architecture/slots.md).

    Its own lane's next task (`victim` None), or, when its own stride ran dry, the back half of
    the longest stride left: the tasks of lane `victim` from `index` on (step `n`, below
    `victim_end`, the victim's end as read) become lane `lane`'s, which starts `index` now, and
    the victim's stride ends at `index`.
    """

    lane: int
    index: int
    victim: int | None = None
    victim_end: int = OPEN


@dataclass(frozen=True, slots=True)
class Lanes:
    """Who starts which task of a run (docs/architecture/slots.md; issue 11 "No contention on the
    run row", issue 33 "a true sliding window").

    A run has `n` lanes (its concurrency limit). Lane `j`'s stride is the task indices `next[j]`,
    `next[j] + n`, ... below `end[j]` (and the run's task count); it starts them in order, one at
    a time. At the start lane `j` has `j, j+n, j+2n...` with an open end. `busy[j]` says whether
    the lane holds a slot: its task in flight is then `next[j] - n`. A finished task passes its
    slot to the next task of its own stride, so that claim is a conditional write on the lane's
    cursor alone; a slot whose stride ran dry takes the back half of the longest stride left
    (`claim_for`), a write conditional on the victim's end as read and on its cursor not having
    reached the first task taken: so no slot idles while a task of the run is waiting, and the
    slots of one run race each other only for the last task of a stride.
    """

    next: tuple[int, ...]
    busy: tuple[bool, ...]
    end: tuple[int, ...] = ()
    """Each lane's end (exclusive); empty: every end open (`OPEN`)."""

    def __post_init__(self) -> None:
        if not self.end:
            object.__setattr__(self, "end", (OPEN,) * len(self.next))

    @classmethod
    def start(cls, n: int) -> Lanes:
        """`n` idle lanes, lane `j` starting at task `j`. Raises ValueError for `n < 1`."""
        if n < 1:
            raise ValueError(f"a run needs at least one lane, not {n}")
        return cls(tuple(range(n)), (False,) * n, (OPEN,) * n)

    @classmethod
    def reopened(cls, total: int, busy: Sequence[bool]) -> Lanes:
        """The lanes of a run whose tasks grow past `total` (reruns added once every task below
        it is recorded): lane `j` starts at the first index from `total` on with `i % n == j`,
        every end open, `busy` kept."""
        n = len(busy)
        return cls(tuple(total + (j - total) % n for j in range(n)), tuple(busy), (OPEN,) * n)

    @property
    def n(self) -> int:
        """How many lanes: the run's own concurrency limit."""
        return len(self.next)

    @property
    def held(self) -> int:
        """Slots the lanes hold (busy lanes)."""
        return sum(self.busy)

    def left(self, lane: int, total: int) -> int:
        """How many tasks below `total` lane `lane` has still to start."""
        top = min(self.end[lane], total)
        return max(0, -(-(top - self.next[lane]) // self.n))

    def lane_of(self, index: int) -> int | None:
        """The busy lane whose task in flight is `index`, None when no lane runs it (it was
        recorded already, or its run was swept)."""
        for j in range(self.n):
            if self.busy[j] and self.next[j] - self.n == index:
                return j
        return None

    def is_claimed(self, index: int) -> bool:
        """Whether task `index` was claimed (started) already: no lane has it still to start."""
        return not any(
            self.next[j] <= index < self.end[j] and (index - self.next[j]) % self.n == 0
            for j in range(self.n)
        )

    def startable(self, total: int) -> list[int]:
        """Idle lanes with a task left below `total`, the one with the earliest task first (so
        tasks start roughly in plan order)."""
        return sorted(
            (j for j in range(self.n) if not self.busy[j] and self.left(j, total)),
            key=lambda j: self.next[j],
        )

    def pending(self, total: int) -> int:
        """Tasks below `total` that no lane claimed yet."""
        return sum(self.left(j, total) for j in range(self.n))

    def claimed(self, total: int) -> list[int]:
        """Every claimed task index below `total`, ascending."""
        return [i for i in range(total) if self.is_claimed(i)]

    def claiming(self, lanes: Iterable[int]) -> Lanes:
        """These lanes once each of `lanes` started its next task (its cursor on by `n`, busy)."""
        nxt, busy = list(self.next), list(self.busy)
        for j in lanes:
            nxt[j] += self.n
            busy[j] = True
        return Lanes(tuple(nxt), tuple(busy), self.end)

    def successor(self, lane: int, total: int) -> int | None:
        """The next task of lane `lane`'s own stride, None when it has none below `total`."""
        return self.next[lane] if self.left(lane, total) else None

    def claim_for(self, lane: int, total: int) -> Claim | None:
        """What a slot of lane `lane` starts next, None when no task below `total` is left to
        start in any lane (the slot then leaves the run).

        Its own stride's next task; else the back half of the longest stride left (ties: the
        first lane after `lane`): of its
        `r` tasks left, the last `ceil(r / 2)` - the only one when `r` is 1, so a slot stuck on a
        long case keeps none of the tasks behind it once the other slots ran dry.
        """
        own = self.successor(lane, total)
        if own is not None:
            return Claim(lane, own)
        order = [(lane + k) % self.n for k in range(1, self.n)]
        best = max(order, key=lambda j: (self.left(j, total), -order.index(j)), default=None)
        if best is None:
            return None
        r = self.left(best, total)
        if r == 0:
            return None
        split = self.next[best] + (r // 2) * self.n
        return Claim(lane, split, victim=best, victim_end=self.end[best])

    def after(self, claim: Claim) -> Lanes:
        """These lanes once `claim` is written: its lane busy on `claim.index`, and with a
        victim, the stolen tail its own (the victim's end cut to `claim.index`)."""
        nxt, busy, end = list(self.next), list(self.busy), list(self.end)
        nxt[claim.lane] = claim.index + self.n
        busy[claim.lane] = True
        if claim.victim is not None:
            end[claim.lane] = claim.victim_end
            end[claim.victim] = claim.index
        return Lanes(tuple(nxt), tuple(busy), tuple(end))


def slots_to_claim(*, run_limit: int, run_slots: int, pending: int, org_free: int) -> int:
    """Slots a run may claim now (docs/architecture/slots.md): `min(run limit - held, pending, org
    free)`, never < 0."""
    return max(0, min(run_limit - run_slots, pending, org_free))


def settle(states: Iterable[AttemptState]) -> AttemptState:
    """A case's settled state from its tries, first answer first (docs/concepts/verdicts.md).

    The majority of the decided tries (passed/failed) wins; a tie is `incomplete`. With no decided
    try, the first try's state stands (`incomplete` or `ungraded`).
    """
    tries = list(states)
    if not tries:
        return AttemptState.INCOMPLETE
    passed = sum(1 for s in tries if s is AttemptState.PASSED)
    failed = sum(1 for s in tries if s is AttemptState.FAILED)
    if passed == failed == 0:
        return tries[0]
    if passed == failed:
        return AttemptState.INCOMPLETE
    return AttemptState.PASSED if passed > failed else AttemptState.FAILED


def verdict_word(total: int, passed: int) -> Verdict:
    """The verdict word from summed totals (docs/concepts/verdicts.md).

    `none` when no test covers the version; `pass` when every test passed; `fail` when none did;
    `partial` otherwise.
    """
    if total <= 0:
        return Verdict.NONE
    if passed >= total:
        return Verdict.PASS
    if passed == 0:
        return Verdict.FAIL
    return Verdict.PARTIAL


def percentile(values: Sequence[float], q: float) -> float | None:
    """The `q`-th percentile (0..100) by linear interpolation; None for no values."""
    if not values:
        return None
    ordered = sorted(values)
    pos = (len(ordered) - 1) * q / 100.0
    lo, hi = math.floor(pos), math.ceil(pos)
    return ordered[lo] + (ordered[hi] - ordered[lo]) * (pos - lo)


@dataclass(frozen=True, slots=True)
class AttemptFacts:
    """The parts of an attempt the summaries read."""

    case_id: str
    attempt: int
    state: AttemptState
    score: float = 0.0
    cost_micros: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0.0
    crash: bool = False
    reason: str = ""
    judge: str | None = None
    """The fingerprint key of the judge that graded it, None when no judge did."""


@dataclass(frozen=True, slots=True)
class ArmSummary:
    """One arm summarised on the quality axis and the efficiency axis (docs/concepts/verdicts.md).

    Counts are of cases (each settled over its tries); `pass_rate` is over decided cases only.
    """

    cases: int
    passed: int
    failed: int
    incomplete: int
    ungraded: int
    crashed: int
    first_passed: int
    pass_rate: float | None
    first_pass_rate: float | None
    average_score: float | None
    cost_micros: int
    input_tokens: int
    output_tokens: int
    latency_p50_ms: float | None
    latency_p95_ms: float | None
    undecided_reasons: dict[str, int] = field(default_factory=dict)

    @property
    def decided(self) -> int:
        return self.passed + self.failed


def summarize_arm(attempts: Iterable[AttemptFacts], case_ids: Sequence[str]) -> ArmSummary:
    """Summarise one arm over `case_ids`; a case with no attempt counts as `incomplete`.

    Args:
        attempts: every attempt of the arm (any order, any attempt number).
        case_ids: the cases the arm was asked; attempts of other cases are ignored.
    """
    by_case: dict[str, list[AttemptFacts]] = {cid: [] for cid in case_ids}
    for a in attempts:
        if a.case_id in by_case:
            by_case[a.case_id].append(a)
    counts = {s: 0 for s in AttemptState}
    first_passed = first_decided = crashed = 0
    scores: list[float] = []
    latencies: list[float] = []
    cost = tin = tout = 0
    reasons: dict[str, int] = {}
    for tries in by_case.values():
        tries.sort(key=lambda a: a.attempt)
        settled = settle(a.state for a in tries)
        counts[settled] += 1
        if settled in (AttemptState.INCOMPLETE, AttemptState.UNGRADED):
            why = (tries[0].reason if tries else "") or (
                "not answered" if not tries else settled.value
            )
            reasons[why] = reasons.get(why, 0) + 1
        if not tries:
            continue
        first = tries[0]
        if first.state in (AttemptState.PASSED, AttemptState.FAILED):
            first_decided += 1
            first_passed += first.state is AttemptState.PASSED
        crashed += first.crash
        if first.state in (AttemptState.PASSED, AttemptState.FAILED):
            scores.append(first.score)
        for a in tries:
            cost += a.cost_micros
            tin += a.input_tokens
            tout += a.output_tokens
            if a.state is not AttemptState.INCOMPLETE:  # no answer came back: no latency to report
                latencies.append(a.latency_ms)
    decided = counts[AttemptState.PASSED] + counts[AttemptState.FAILED]
    return ArmSummary(
        cases=len(by_case),
        passed=counts[AttemptState.PASSED],
        failed=counts[AttemptState.FAILED],
        incomplete=counts[AttemptState.INCOMPLETE],
        ungraded=counts[AttemptState.UNGRADED],
        crashed=crashed,
        first_passed=first_passed,
        pass_rate=(counts[AttemptState.PASSED] / decided) if decided else None,
        first_pass_rate=(first_passed / first_decided) if first_decided else None,
        average_score=(sum(scores) / len(scores)) if scores else None,
        cost_micros=cost,
        input_tokens=tin,
        output_tokens=tout,
        latency_p50_ms=percentile(latencies, 50),
        latency_p95_ms=percentile(latencies, 95),
        undecided_reasons=reasons,
    )


def is_stale_heartbeat(
    *, status: RunStatus, heartbeat_at_ms: int, now_ms: int, abandoned_after_minutes: float
) -> bool:
    """True when a run has stood still long enough for the sweep
    (docs/architecture/run-lifecycle.md)."""
    if status not in (RunStatus.RUNNING, RunStatus.QUEUED):
        return False
    return now_ms - heartbeat_at_ms >= abandoned_after_minutes * 60_000
