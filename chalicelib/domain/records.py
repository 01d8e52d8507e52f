"""What the stores keep, as frozen records: one per table row, with the row's own field names.

The stores (`chalicelib.adapters.stores`) read rows into these and write changes of them back; no
PynamoDB row, attribute or expression crosses into the services (issue 10, scope 2). A change is
`dataclasses.replace(record, ...)`: the store writes the fields that differ, conditional on the
record as read. Storage keys built from the organization (`<org_id>#<id>`) are the stores' business
and are not fields here; every record carries its `org_id`.

Units as in `adapters/tables.py`: `*_ms` epoch milliseconds, `*_at` ISO-8601 UTC strings,
`*_micros` integer micro-USD. JSON fields (`Any`) hold plain dicts and lists.
"""

from __future__ import annotations

from dataclasses import dataclass, field, replace
from functools import cached_property
from typing import TYPE_CHECKING, Any, ClassVar

from chalicelib.domain.enums import ArmRole
from chalicelib.domain.replay import Replay
from chalicelib.domain.run_rules import Lanes

if TYPE_CHECKING:  # a case worker reads no outcome: its models are not imported for it
    from chalicelib.domain.access import ApiKey, Member
    from chalicelib.domain.outcome import Outcome


@dataclass(frozen=True, kw_only=True)
class Organization:
    """An organization (tenant): its slot counter and the runs waiting for a slot
    (docs/architecture/slots.md)."""

    org_id: str
    name: str = ""
    own_concurrency_limit: int | None = None
    """The limit an operator set for this organization alone
    (`PUT /api/v1/organizations/{id}/limits`); None: it follows the deployment's default
    (`EVAL_ORG_CONCURRENCY`) as that is now (`concurrency_limit`)."""
    in_flight: int = 0
    """Slots (case tasks in flight) the organization holds now; a claim takes one only while it
    holds fewer than `concurrency_limit(default)`."""
    waiting: list[str] = field(default_factory=list)
    """Ids of the runs waiting for a slot, oldest first."""
    waiting_flag: str | None = None
    waiting_since_ms: int | None = None
    monthly_budget_micros: int | None = None
    default_environment_id: str | None = None
    created_at: str

    def concurrency_limit(self, default: int) -> int:
        """Case tasks the organization may have in flight at once: its own limit, else `default`
        (the deployment's `EVAL_ORG_CONCURRENCY`, read when a slot is claimed: a changed setting
        or own limit holds from the next claim on)."""
        own = self.own_concurrency_limit
        return int(own) if own is not None else int(default)


@dataclass(frozen=True, kw_only=True)
class Agent:
    """An agent: its draft (edited in place) and its latest published version number."""

    org_id: str
    agent_id: str
    name: str
    draft_spec: Any
    draft_spec_hash: str
    draft_updated_at: str
    latest_version: int = 0
    live_version: int | None = None
    monthly_budget_micros: int | None = None
    created_at: str
    created_by: str = ""


@dataclass(frozen=True, kw_only=True)
class Evaluation:
    """An evaluation (docs/guides/by-hand.md): an agent, a dataset and a version selector of the
    organization.

    `version` is the selector as stored (`domain.evaluations.selector_of`): `"latest"`,
    `"published"` or a version number as decimal text; a run of the evaluation resolves it once, at
    creation, and pins what it picked."""

    org_id: str
    evaluation_id: str
    name: str = ""
    agent_id: str
    dataset_id: str
    version: str = "latest"
    created_at: str
    created_by: str = ""
    updated_at: str | None = None


@dataclass(frozen=True, kw_only=True)
class AgentVersion:
    """An immutable published version of an agent."""

    version: int
    org_id: str
    agent_id: str
    spec: Any
    spec_hash: str
    model_profile_id: str | None = None
    published_at: str
    published_by: str = ""
    source: str = "api"


@dataclass(frozen=True, kw_only=True)
class ModelProfile:
    """A model profile: which model an arm runs on, with what settings, at what price
    (docs/reference/runtimes.md)."""

    org_id: str
    model_profile_id: str
    name: str = ""
    model: str
    settings: Any = field(default_factory=dict)
    temperature: float | None = None
    price: Any = None
    created_at: str
    created_by: str = ""
    secrets_vetted: bool = False
    """Whether whoever saved it held `secrets:manage` (the service acting for a pipeline
    counts): then where its settings send the secrets they name is that person's choice, and a
    starter without the permission may still run on it. False for a profile saved before that was
    checked (docs/guides/agents.md, "Running the draft")."""


@dataclass(frozen=True, kw_only=True)
class Spend:
    """One month's spend of an organization or an agent (the `spend` table of
    docs/architecture/tables.md), in micro-USD."""

    spent_micros: int = 0
    judge_micros: int = 0
    requests: int = 0


@dataclass(frozen=True)
class BudgetReading:
    """What one read of the budgets says (not a row: the organization's and the agent's monthly
    budgets, None when it has none, and both month counters, all in micro-USD)."""

    org_budget_micros: int | None
    org_spent_micros: int
    agent_budget_micros: int | None
    agent_spent_micros: int
    starter: tuple[Member | None, ApiKey | None] | None = None
    """When asked for beside the budgets (`Budgets.read(..., starter=...)`): the membership of the
    person a run runs as and the API key that started it (None when it has none), read in the
    same request; None when not asked for."""


@dataclass(frozen=True, kw_only=True)
class Judge:
    """A judge header (`version` 0: name, latest version) or one immutable published judge version
    (`version` >= 1: its spec, with the runtime it is asked through, and its rubric hash)."""

    version: int
    org_id: str
    judge_id: str
    name: str = ""
    latest_version: int = 0
    spec: Any = None
    rubric_hash: str | None = None
    created_at: str
    created_by: str = ""


@dataclass(frozen=True, kw_only=True)
class Environment:
    """An environment of an organization: which version of each agent it serves
    (docs/guides/suites.md)."""

    org_id: str
    environment_id: str
    name: str = ""
    serving: Any = field(default_factory=dict)
    created_at: str
    created_by: str = ""
    test_connections: Any = field(default_factory=dict)
    """`{connection_id: test_connection_id}`: during an eval run in this environment a tool whose
    connection is a key runs against the test connection instead, never production
    (docs/guides/tools.md)."""


@dataclass(frozen=True, kw_only=True)
class Connection:
    """One of an organization's connections: where its agents' tools run (docs/guides/tools.md).

    `kind`: "http" (a call is `POST {url}/{tool_name}` with the arguments as JSON, the JSON reply
    its result) or "mcp" (an MCP server over streamable HTTP at `url`). `auth_secret`: the name of
    the organization's secret whose value is sent as the `Authorization` header; None sends none.
    The URL is the tenant's and untrusted: egress checks it when saved and on every call.
    """

    org_id: str
    connection_id: str
    kind: str
    url: str
    auth_secret: str | None = None
    description: str = ""
    created_at: str
    created_by: str = ""
    secrets_vetted: bool = False
    """Whether whoever saved it held `secrets:manage` (the service acting for a pipeline counts):
    then sending `auth_secret` to `url` is that person's choice, and a starter without the
    permission may still run tools on it. False for a connection saved before that was checked:
    its secret is then sent only for a starter who holds `secrets:manage`
    (docs/guides/tools.md, "Connections and secrets")."""


@dataclass(frozen=True, kw_only=True)
class Suite:
    """A suite: what it checks, when, against which bar, as whom, and what is waiting
    (docs/guides/suites.md)."""

    suite_id: str
    org_id: str
    agent_id: str
    name: str = ""
    dataset_id: str
    dataset_version: int | None = None
    environment_id: str | None = None
    threshold: Any = field(default_factory=dict)
    max_run_usd_micros: int | None = None
    triggers: Any = field(default_factory=dict)
    guards: bool = False
    pins: Any = None
    history: Any = field(default_factory=list)
    owner: str
    paused: bool = False
    paused_reason: str | None = None
    pending: Any = field(default_factory=list)
    active_run_id: str | None = None
    active_trigger: Any = None
    published_seen: Any = field(default_factory=list)
    notified: Any = field(default_factory=dict)
    last_result: Any = None
    replay: Any = None
    """How its runs answer tool calls from a recording: `{"from_recordings", "recording_id",
    "live_reads"}` as saved (`domain.replay`); None when they do not."""
    next_fire_at_ms: int | None = None
    """When its schedule fires next (epoch ms); None without a schedule."""
    due_at_ms: int | None = None
    """When the tick should look at it next (epoch ms): its first waiting trigger is due, or a start
    it claimed is stale; None when nothing waits. (The stores keep the sparse index flags of both
    times.)"""
    created_at: str
    updated_at: str
    """When it last changed plus a nonce (`<ISO>#<8 hex>`): every write is conditional on it."""


@dataclass(frozen=True, kw_only=True)
class SuiteResultEntry:
    """One result of a suite: its word, why, the cases behind it and the run
    (docs/guides/suites.md)."""

    started_key: str
    suite_id: str
    result_id: str
    org_id: str
    agent_id: str
    trigger: Any
    version: int | None = None
    run_id: str | None = None
    purpose: str = "suite"
    result: str
    reasons: Any = field(default_factory=list)
    cases_broken: Any = field(default_factory=list)
    cases_undecided: Any = field(default_factory=list)
    overall: str | None = None
    started_at: str
    completed_at: str | None = None
    reviewed_by: list[str] | None = None
    """The user ids of the people whose verdicts in the review queue the result rests on (None:
    none); their names are read from the organization's members when shown."""
    result_before_review: str | None = None
    """The result as the scorers alone left it, when people's verdicts changed it."""
    stale: bool | None = None
    """A person's verdict changed under the result and it is being computed again."""
    measured: Any = None
    """What the result was measured on (None for a result without a run): `{dataset_id,
    dataset_version, scoring_hash, threshold_hash, baseline_version}` (`domain.guard_rules`)."""
    grading_changed: bool | None = None
    """Its comparison was invalid: the sides were graded differently (a judge published again,
    other scoring settings), so the next run of its version runs the version before beside it
    (`domain.suite_rules.grading_changed_since`). None: a comparable result, or one kept before
    results recorded this (its reasons say it)."""


@dataclass(frozen=True, kw_only=True)
class Promotion:
    """A promotion of a version onto an environment, waiting for its guards or done."""

    promotion_id: str
    org_id: str
    agent_id: str
    environment_id: str
    version: int
    from_version: int | None = None
    status: str
    guards: Any = field(default_factory=dict)
    reason: str | None = None
    created_at: str
    created_by: str = ""
    decided_at: str | None = None


@dataclass(frozen=True, kw_only=True)
class Notification:
    """One notice for one person (the notification center)."""

    notification_id: str
    org_id: str
    kind: str
    title: str
    body: str = ""
    links: Any = field(default_factory=dict)
    read: bool = False
    emailed: bool = False
    created_at: str


@dataclass(frozen=True, kw_only=True)
class Dataset:
    """A dataset header (`version` 0) or one immutable dataset version (`version` >= 1)."""

    version: int
    org_id: str
    dataset_id: str
    name: str = ""
    created_at: str
    created_by: str = ""
    latest_version: int = 0
    scoring: Any = None
    case_ids: list[Any] | None = None
    case_count: int = 0
    ungraded_cases: int = 0
    ready: bool = True


@dataclass(frozen=True, kw_only=True)
class DatasetCase:
    """One case of one dataset version, keyed by the version and the stable `case_id`."""

    case_id: str
    case: Any


@dataclass(frozen=True, kw_only=True)
class Arm:
    """One side of a run (`Run.arms`): what it runs, the spec copied at start, and how it is
    labelled. A baseline whose first answers come from an earlier run does not answer here
    (`answers` False) and names where they come from (`source_*`); it is still asked again beside
    the candidate unless it is the candidate itself at an earlier time (`rerun`)."""

    arm_id: str
    """`candidate`, `candidate:<model_profile_id>` for a further model, or `baseline`."""
    role: ArmRole
    version: int | None = None
    """The agent version it runs; None for the draft."""
    draft: bool = False
    spec: dict[str, Any]
    spec_hash: str
    model_profile_id: str | None = None
    answers: bool = True
    """False when its first answers are borrowed from run `source_run_id`."""
    rerun: bool = True
    """Whether the reruns of a flip ask this arm again too."""
    source_run_id: str | None = None
    source_arm_id: str | None = None
    source_dataset_version: int | None = None
    source_completed_at: str | None = None
    source_scoring_hash: str | None = None
    """The `spec_hash` of the scoring the source run graded with (sides scored differently are not
    compared), kept here so the comparison still knows it once that run is deleted; None on arms
    kept before it was."""
    replay: Replay = Replay()
    """How its first answers' tool calls were answered (`domain.replay`): the run's options for an
    arm that answers here, the source run's for one whose answers are borrowed; no replay on arms
    kept before recordings answered tool calls."""


@dataclass(frozen=True, kw_only=True)
class Run:
    """An eval run: header, arms, phase, task cursor, slots and counters
    (docs/architecture/tables.md, docs/architecture/run-lifecycle.md)."""

    run_id: str
    org_id: str
    agent_id: str
    dataset_id: str
    dataset_version: int
    created_at: str
    created_by: str = ""
    status: str
    phase: str
    purpose: str = "check"
    candidate: str
    resolved_version: int | None = None
    draft: bool = False
    spec_hash: str
    environment_id: str | None = None
    arms: tuple[Arm, ...]
    """The candidate arm(s), first the one the run's `outcome` is about, then any baseline."""
    case_ids_text: str
    scoring: Any
    settings: Any = field(default_factory=dict)
    tasks: Any = None
    tasks_total: int
    next_index: int = 0
    """How many tasks were claimed (started) so far."""
    slots: int = 0
    lane_next: tuple[int, ...] | list[int] = ()
    """Each lane's next task index (`Lanes.next`); empty for a run that has not started."""
    lane_busy: tuple[bool, ...] | list[bool] = ()
    """Whether each lane holds a slot (`Lanes.busy`)."""
    lane_end: tuple[int, ...] | list[int] = ()
    """Each lane's end (`Lanes.end`); empty when no stride was ever cut (every end open)."""
    expected: int
    recorded: int = 0
    passed: int = 0
    failed: int = 0
    incomplete: int = 0
    ungraded: int = 0
    crashed: int = 0
    cost_micros: int = 0
    judge_cost_micros: int = 0
    judge_calls: int = 0
    input_tokens: int = 0
    output_tokens: int = 0
    asked: int = 0
    """Attempts whose agent was asked: the run's agent runs of the surface `eval`."""
    judged: int = 0
    """Attempts a judge graded: the run's agent runs of the surface `grader`."""
    usage_counted: dict[str, Any] | None = None
    """What of the run was counted in its month's usage (`asked`, `judged`, tokens, `month`),
    None before its end (docs/reference/usage.md)."""
    usage_counts: int = 0
    """How many times it was counted (a count is conditional on it)."""
    gradings: list[Any] | None = None
    regrades: int | None = None
    grading_until_ms: int | None = None
    advancing_phase: str | None = None
    advancing_until_ms: int | None = None
    """Until when (epoch ms) one caller holds the claim to move the run on from
    `advancing_phase`; None: nobody ever claimed it."""
    heartbeat_at_ms: int
    started_at: str | None = None
    completed_at: str | None = None
    reason: str | None = None
    outcome: Outcome | None = None
    """What finalizing computed (a completed run's, computed again by a regrade); None before."""
    enqueue_errors: int = 0
    evaluation_id: str | None = None
    """The evaluation the run belongs to, pinned at creation: one named at the start,
    else the one its agent and dataset imply (`domain.evaluations.implied_id`); None on runs
    recorded before evaluations were kept (the implied one)."""
    deleting_at: str | None = None
    """When a delete of the run started (no new run may borrow its first answers), else None."""
    routed_to_review: int | None = None
    """How many answers the run sent to its dataset's review queue (None: not routed yet)."""
    routed_replacing: int | None = None
    """How many of them took the place of an older answer of the case and agent still waiting."""
    routing_error: str | None = None
    """Why sending to the review queue was refused (the run completed all the same)."""
    outcome_stale: bool | None = None
    """A person's verdict on an answer the outcome rests on changed and the outcome is being
    computed again (cleared by the write of the new outcome)."""

    CURSOR: ClassVar[tuple[str, ...]] = (
        "status",
        "phase",
        "next_index",
        "tasks_total",
        "slots",
        "lane_next",
        "lane_busy",
        "lane_end",
        "tasks",
        "recorded",
        "expected",
        "heartbeat_at_ms",
    )
    """What changes on a run while its cases run (read again by `Runs.refresh`); the arms, case
    ids and scoring are fixed at start."""

    @property
    def lanes(self) -> Lanes:
        """The run's lanes (docs/architecture/slots.md): as kept once it started, else
        `settings.run_concurrency` idle ones (3 when a run predates the setting)."""
        if self.lane_next:
            return Lanes(
                tuple(self.lane_next),
                tuple(bool(b) for b in self.lane_busy),
                tuple(int(e) for e in self.lane_end or ()),
            )
        return Lanes.start(int((self.settings or {}).get("run_concurrency", 3)))

    @cached_property
    def case_ids(self) -> list[str]:
        """The run's case ids in task order (parsed once per record, and kept by `moved`)."""
        return self.case_ids_text.split("\n") if self.case_ids_text else []

    def moved(self, **cursor: Any) -> Run:
        """This run with the fields of `CURSOR` given as read again: a shallow copy that keeps the
        parsed case ids (the run row is read on every case attempt; its case ids never change).

        Raises:
            ValueError: a field outside `CURSOR` (a bug: only the cursor is read again).
        """
        if not set(cursor) <= set(self.CURSOR):
            others = sorted(set(cursor) - set(self.CURSOR))
            raise ValueError(f"not cursor fields of a run: {others}")
        fresh = replace(self, **cursor)
        if "case_ids" in self.__dict__:
            fresh.__dict__["case_ids"] = self.__dict__["case_ids"]
        return fresh


@dataclass(frozen=True, kw_only=True)
class ActiveRun:
    """What `Runs.active` reads of a queued or running run (a projection of its row):
    enough to tell what it may still spend and what it uses (environment, arms' model profiles)."""

    run_id: str
    org_id: str
    agent_id: str
    dataset_id: str
    created_at: str
    status: str
    environment_id: str | None = None
    arms: tuple[Arm, ...]
    settings: Any = field(default_factory=dict)
    cost_micros: int = 0
    judge_cost_micros: int = 0


@dataclass(frozen=True, kw_only=True)
class Attempt:
    """One attempt of one case on one arm, written once (docs/architecture/exactly-once.md).

    `attempt_key` is `arm_id#case_id#attempt` (attempt zero-padded to 3 digits); `recorded_key` is
    `<epoch ms, 13 digits>#<attempt_key>`; `successor` the case-task message this attempt's write
    claimed (so a redelivery can re-send it). The run's organization is not a field: an attempt is
    always read and written through its run's.
    """

    attempt_key: str
    run_id: str
    recorded_key: str
    arm_id: str
    case_id: str
    attempt: int
    state: str
    answer: str | None = None
    """The kept answer, or its first 1,000 characters when it is in the bucket (`answer_ref`)."""
    answer_ref: str | None = None
    """Where the kept answer is in the results bucket (`s3://bucket/<org>/answers/...`)."""
    answer_bytes: int | None = None
    """The whole answer's UTF-8 length in bytes, cut or not (0 without an answer; None on an
    attempt recorded before it was kept)."""
    answer_truncated: bool = False
    """True when the answer was longer than `ASSAY_ANSWER_MAX_BYTES` and is kept cut there."""
    calls: Any = field(default_factory=list)
    scores: Any = field(default_factory=list)
    reason: str = ""
    error: str | None = None
    crash: bool = False
    guardrail: str | None = None
    cost_micros: int = 0
    judge_cost_micros: int = 0
    judge_calls: int = 0
    regraded: list[Any] | None = None
    input_tokens: int = 0
    output_tokens: int = 0
    latency_ms: float = 0
    model: str | None = None
    recorded_at: str
    successor: Any = None
    delivery: str | None = None
    """The message id of the delivery that recorded it (None: recorded outside a delivery)."""
    review: Any = None
    """A person's verdict on this answer in the review queue: `{verdict, item_id, by, at}`; it
    stands in for the scorers' outcome of the case on its arm (`domain.review_rules`)."""


@dataclass(frozen=True, kw_only=True)
class ToolSession:
    """One eval attempt's session at the tool gateway (docs/guides/tools.md): what an `http` or
    `lambda` agent's call needs, read in one request.

    `token_sha256`: the SHA-256 (hex) of the session's bearer token (the token is never kept).
    `until_ms`: when the session ends on its own (epoch ms). `open`: False once the attempt was
    asked (closed). `box`: the attempt's tools (`services.tool_calls.box_state`). `consumed`: the
    recorded calls replayed. `calls`: the calls kept, each as its JSON text, in order;
    `kept_bytes` their UTF-8 size. `version`: how often it was written since it opened.
    """

    org_id: str
    run_id: str
    session_id: str
    attempt_key: str
    token_sha256: str
    until_ms: int
    open: bool = True
    box: Any = field(default_factory=dict)
    consumed: Any = ()
    calls: Any = ()
    kept_bytes: int = 0
    version: int = 0
