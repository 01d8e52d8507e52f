"""Every state, verdict and trigger as a StrEnum whose values are the API's strings."""

from __future__ import annotations

from enum import StrEnum


class RunStatus(StrEnum):
    """An eval run's status (docs/architecture/run-lifecycle.md)."""

    QUEUED = "queued"
    RUNNING = "running"
    COMPLETED = "completed"
    FAILED = "failed"
    CANCELLED = "cancelled"
    BUDGET_EXCEEDED = "budget_exceeded"

    @property
    def ended(self) -> bool:
        """True once nothing more will start for the run."""
        return self not in (RunStatus.QUEUED, RunStatus.RUNNING)


class TriggerKind(StrEnum):
    """What asked a suite to run (docs/guides/suites.md): a person, its schedule, a publish, a
    promotion, a dependency that changed, or a guard checking a waiting promotion."""

    MANUAL = "manual"
    SCHEDULE = "schedule"
    PUBLISH = "publish"
    PROMOTION = "promotion"
    DEPENDENCY = "dependency"
    GATE = "gate"


class RunPurpose(StrEnum):
    """Why a run (or a suite result) exists: a check someone started, a stability run, a suite's
    run, or a guard's check before a promotion."""

    CHECK = "check"
    STABILITY = "stability"
    SUITE = "suite"
    GATE = "gate"


class PromotionStatus(StrEnum):
    """A promotion waits for its guards, then is promoted or refused."""

    WAITING = "waiting"
    PROMOTED = "promoted"
    REFUSED = "refused"


class RunPhase(StrEnum):
    """Where a running run is: first answers, reruns of flips, or the final computation."""

    ANSWERING = "answering"
    CONFIRMING = "confirming"
    FINALIZING = "finalizing"
    DONE = "done"


class AttemptState(StrEnum):
    """How one attempt came out (docs/concepts/verdicts.md)."""

    PASSED = "passed"
    FAILED = "failed"
    INCOMPLETE = "incomplete"
    UNGRADED = "ungraded"


class ArmRole(StrEnum):
    """Which side of a comparison an arm is."""

    CANDIDATE = "candidate"
    BASELINE = "baseline"


class Verdict(StrEnum):
    """The one word beside an agent version (docs/concepts/verdicts.md)."""

    PASS = "pass"
    PARTIAL = "partial"
    FAIL = "fail"
    NONE = "none"


class RuntimeKind(StrEnum):
    """How an agent is asked (docs/reference/runtimes.md)."""

    HTTP = "http"
    OPENAI = "openai"
    LAMBDA = "lambda"
    PYTHON = "python"
    RECORDED = "recorded"


class CallStatus(StrEnum):
    """What happened to a tool call an agent made (docs/concepts/verdicts.md); during an eval
    attempt the first four are decided by `chalicelib.domain.tool_isolation.decide_call`.

    `executed`: it ran (on a test connection when the environment has one); `blocked`: not run,
    kept with its arguments; `replayed`: answered from the case's recording; `divergent`: held,
    the recording has no matching call. `unverified`: an `http` or `lambda` agent reported the
    call in its answer without making it through the tool gateway, so assay cannot say what it
    did. `intended` (recorded, not executed) is what answers kept before tools were isolated
    carry; it stays readable.
    """

    EXECUTED = "executed"
    BLOCKED = "blocked"
    REPLAYED = "replayed"
    DIVERGENT = "divergent"
    INTENDED = "intended"
    UNVERIFIED = "unverified"


class ToolEffect(StrEnum):
    """What a tool does to the world it reaches: `read` leaves it as it was, `write` changes it
    (sends, files, pays). A tool declared without an effect is treated as a `write`."""

    READ = "read"
    WRITE = "write"


class Split(StrEnum):
    """A case's fixed train/holdout assignment."""

    TRAIN = "train"
    HOLDOUT = "holdout"


class CaseOutcome(StrEnum):
    """How one case compares between a candidate and its baseline (docs/concepts/verdicts.md)."""

    REGRESSION = "regression"
    FIXED = "fixed"
    UNCHANGED = "unchanged"
    INCOMPLETE = "incomplete"
    NOT_COMPARED = "not_compared"
    CHANGED = "changed"


class ComparisonVerdict(StrEnum):
    """What a comparison says on confirmed flips; `worse`/`better` also name McNemar's `overall`
    (docs/concepts/verdicts.md)."""

    WORSE = "worse"
    BETTER = "better"
    MIXED = "mixed"
    NO_DIFFERENCE = "no_difference"
    INVALID = "invalid"


class EfficiencyAxis(StrEnum):
    """How one lower-is-better efficiency quantity moved (docs/concepts/verdicts.md)."""

    BETTER = "better"
    WORSE = "worse"
    UNCHANGED = "unchanged"
