"""Table models of eval runs and what they record: runs, attempts, leases, agent history and
trends (docs/architecture/tables.md; every key holds the organization, see `tables`)."""

from __future__ import annotations

from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
    KeysOnlyProjection,
    LocalSecondaryIndex,
)

from chalicelib.adapters.table_base import TableBase as _Base

# --- eval runs and attempts ------------------------------------------------------------------


class RunOrgIndex(GlobalSecondaryIndex):
    class Meta:
        index_name = "org_created"
        projection = AllProjection()

    org_id = UnicodeAttribute(hash_key=True)
    created_at = UnicodeAttribute(range_key=True)


class RunAgentIndex(GlobalSecondaryIndex):
    """An agent's runs, newest last."""

    ORG_KEY = "agent_key"

    class Meta:
        index_name = "agent_created"
        projection = AllProjection()

    agent_key = UnicodeAttribute(hash_key=True)
    created_at = UnicodeAttribute(range_key=True)


class RunDatasetIndex(GlobalSecondaryIndex):
    """A dataset's runs, newest last."""

    ORG_KEY = "dataset_key"

    class Meta:
        index_name = "dataset_created"
        projection = AllProjection()

    dataset_key = UnicodeAttribute(hash_key=True)
    created_at = UnicodeAttribute(range_key=True)


class RunEvaluationIndex(GlobalSecondaryIndex):
    """Sparse: an evaluation's completed runs, latest last (only a completed run carries
    `evaluation_key`). Read when a delete takes away an evaluation's latest run, to find the one
    before it (`AgentHistoryRow`)."""

    ORG_KEY = "evaluation_key"

    class Meta:
        index_name = "evaluation_completed"
        projection = KeysOnlyProjection()

    evaluation_key = UnicodeAttribute(hash_key=True)
    completed_at = UnicodeAttribute(range_key=True)


class RunEvaluationRunsIndex(GlobalSecondaryIndex):
    """An evaluation's runs, newest last (docs/guides/by-hand.md): every run carries
    `evaluation_run_key` from its creation (runs recorded before evaluations were kept do not)."""

    ORG_KEY = "evaluation_run_key"

    class Meta:
        index_name = "evaluation_created"
        projection = AllProjection()

    evaluation_run_key = UnicodeAttribute(hash_key=True)
    created_at = UnicodeAttribute(range_key=True)


class RunStatusIndex(GlobalSecondaryIndex):
    """Serves the sweep: running/queued runs by how long ago they last moved."""

    SERVICE_WIDE = "the sweep fails every organization's abandoned runs"

    class Meta:
        index_name = "status_heartbeat"
        projection = AllProjection()

    status = UnicodeAttribute(hash_key=True)
    heartbeat_at_ms = NumberAttribute(range_key=True)


class RunRow(_Base):
    """An eval run: header, arms, phase, task cursor, slots and counters
    (docs/architecture/tables.md, docs/architecture/run-lifecycle.md).

    `arms` is a list of maps `{arm_id, role, model_profile_id, version, draft, spec, spec_hash}`;
    the spec is copied onto the run at start so every case answers the same content.
    Task `i` of the answering phase is case `case_ids[i // len(arms)]` on arm `arms[i % len(arms)]`.
    The case ids are kept as one newline-joined string (`case_ids_text`): the run row is read on
    every case attempt, and one string costs far less to (de)serialize than a list of thousands.
    """

    ORG_KEY = "run_key"

    class Meta(_Base.Meta):
        table_name = "eval_runs"

    run_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<run_id>` (not the organization alone: one organization's runs would share a
    partition)."""
    run_id = UnicodeAttribute()
    org_id = UnicodeAttribute()
    agent_id = UnicodeAttribute()
    agent_key = UnicodeAttribute()
    """`<org_id>#<agent_id>`: the hash key of `agent_index`."""
    dataset_id = UnicodeAttribute()
    dataset_key = UnicodeAttribute()
    """`<org_id>#<dataset_id>`: the hash key of `dataset_index`."""
    dataset_version = NumberAttribute()
    created_at = UnicodeAttribute()
    created_by = UnicodeAttribute(default="")
    status = UnicodeAttribute()
    phase = UnicodeAttribute()
    purpose = UnicodeAttribute(default="check")
    candidate = UnicodeAttribute()
    resolved_version = NumberAttribute(null=True)
    draft = BooleanAttribute(default=False)
    spec_hash = UnicodeAttribute()
    environment_id = UnicodeAttribute(null=True)
    arms = JSONAttribute()
    case_ids_text = UnicodeAttribute()
    scoring = JSONAttribute()
    settings = JSONAttribute(default=dict)
    tasks = JSONAttribute(null=True)
    tasks_total = NumberAttribute()
    next_index = NumberAttribute(default=0)
    slots = NumberAttribute(default=0)
    lane_next: ListAttribute[Any] = ListAttribute(of=NumberAttribute, default=list)
    """Each lane's next task index: lane `j` of `n` starts tasks `j, j+n, j+2n...` in turn."""
    lane_busy: ListAttribute[Any] = ListAttribute(of=BooleanAttribute, default=list)
    """Whether lane `j` holds a slot (one of its tasks is in flight)."""
    lane_end: ListAttribute[Any] = ListAttribute(of=NumberAttribute, default=list)
    """Lane `j`'s end (exclusive): its stride stops there once another lane took the rest."""
    expected = NumberAttribute()
    recorded = NumberAttribute(default=0)
    passed = NumberAttribute(default=0)
    failed = NumberAttribute(default=0)
    incomplete = NumberAttribute(default=0)
    ungraded = NumberAttribute(default=0)
    crashed = NumberAttribute(default=0)
    cost_micros = NumberAttribute(default=0)
    """What the agent's answers cost (the judge's grading is `judge_cost_micros`)."""
    judge_cost_micros = NumberAttribute(default=0)
    judge_calls = NumberAttribute(default=0)
    input_tokens = NumberAttribute(default=0)
    output_tokens = NumberAttribute(default=0)
    asked = NumberAttribute(default=0)
    """Attempts whose agent was asked (the run's `eval` agent runs)."""
    judged = NumberAttribute(default=0)
    """Attempts a judge graded (the run's `grader` agent runs)."""
    usage_counted = JSONAttribute(null=True)
    """What of the run was counted in its month's usage (`UsageStore.count_run`)."""
    usage_counts = NumberAttribute(null=True)
    """How many times the run was counted (each count is conditional on it)."""
    gradings: ListAttribute[Any] = ListAttribute(null=True)
    """Every "grade again" of the run: `[{by, at, graded, changed, judge_cost_usd}]`."""
    regrades = NumberAttribute(null=True)
    """How many answers were graded again: the outcome is recomputed conditional on it."""
    grading_until_ms = NumberAttribute(null=True)
    advancing_phase = UnicodeAttribute(null=True)
    advancing_until_ms = NumberAttribute(null=True)
    """Until when (epoch ms) one caller holds the claim to move the run on from `advancing_phase`
    (`claim_advance`)."""
    """While somebody grades the run again: when their claim lapses (one at a time per run)."""
    heartbeat_at_ms = NumberAttribute()
    started_at = UnicodeAttribute(null=True)
    completed_at = UnicodeAttribute(null=True)
    reason = UnicodeAttribute(null=True)
    outcome = JSONAttribute(null=True)
    enqueue_errors = NumberAttribute(default=0)
    evaluation_key = UnicodeAttribute(null=True)
    """`<org_id>#<agent_id>#<v<version> or draft>#<dataset_id>`, then `#<evaluation_id>` for a run
    of an explicit evaluation, set by the write that completes the run: the hash key of
    `evaluation_index`."""
    evaluation_id = UnicodeAttribute(null=True)
    """The evaluation the run belongs to (`domain.evaluations`), pinned at creation."""
    routed_to_review = NumberAttribute(null=True)
    routed_replacing = NumberAttribute(null=True)
    routing_error = UnicodeAttribute(null=True)
    outcome_stale = BooleanAttribute(null=True)
    """Set with a person's verdict on an answer the outcome rests on; removed with the new
    outcome."""
    evaluation_run_key = UnicodeAttribute(null=True)
    """`<org_id>#<evaluation_id>`, set at creation: the hash key of `evaluation_runs_index`."""
    deleting_at = UnicodeAttribute(null=True)
    """Set (ISO time) when a delete of the run starts: no new run may borrow its first answers
    from then on (a run's creation checks it)."""
    org_index = RunOrgIndex()
    agent_index = RunAgentIndex()

    @property
    def case_ids(self) -> list[str]:
        """The run's case ids in task order (parsed once per row object)."""
        cached = self.__dict__.get("_case_ids")
        if cached is None:
            cached = self.case_ids_text.split("\n") if self.case_ids_text else []
            self.__dict__["_case_ids"] = cached
        return cached

    dataset_index = RunDatasetIndex()
    status_index = RunStatusIndex()
    evaluation_index = RunEvaluationIndex()
    evaluation_runs_index = RunEvaluationRunsIndex()


class AttemptOrderIndex(LocalSecondaryIndex):
    """Attempts of a run in the order they were recorded: the live-updates cursor."""

    ORG_KEY = "run_key"

    class Meta:
        index_name = "recorded_order"
        projection = AllProjection()

    run_key = UnicodeAttribute(hash_key=True)
    recorded_key = UnicodeAttribute(range_key=True)


class AttemptRow(_Base):
    """One attempt of one case on one arm, written once (docs/architecture/exactly-once.md).

    `attempt_key` is `arm_id#case_id#attempt` (attempt zero-padded to 3 digits);
    `recorded_key` is `<epoch ms, 13 digits>#<attempt_key>`. `successor` holds the task this
    attempt's write claimed, so a redelivered message can re-send it.
    """

    ORG_KEY = "run_key"

    class Meta(_Base.Meta):
        table_name = "attempts"

    run_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<run_id>`, as the run's."""
    attempt_key = UnicodeAttribute(range_key=True)
    run_id = UnicodeAttribute()
    recorded_key = UnicodeAttribute()
    arm_id = UnicodeAttribute()
    case_id = UnicodeAttribute()
    attempt = NumberAttribute()
    state = UnicodeAttribute()
    answer = UnicodeAttribute(null=True)
    answer_ref = UnicodeAttribute(null=True)
    answer_bytes = NumberAttribute(null=True)
    """The whole answer's UTF-8 length in bytes (absent on attempts recorded before it was)."""
    answer_truncated = BooleanAttribute(default=False)
    """The answer was longer than `ASSAY_ANSWER_MAX_BYTES` and is kept cut there."""
    calls = JSONAttribute(default=list)
    scores = JSONAttribute(default=list)
    reason = UnicodeAttribute(default="")
    error = UnicodeAttribute(null=True)
    crash = BooleanAttribute(default=False)
    guardrail = UnicodeAttribute(null=True)
    """Why a guardrail blocked the answer (then graded as a refusal), else None."""
    cost_micros = NumberAttribute(default=0)
    judge_cost_micros = NumberAttribute(default=0)
    judge_calls = NumberAttribute(default=0)
    regraded: ListAttribute[Any] = ListAttribute(null=True)
    """Each time the answer was graded again: `[{by, at, state_before, state}]`."""
    input_tokens = NumberAttribute(default=0)
    output_tokens = NumberAttribute(default=0)
    latency_ms = NumberAttribute(default=0)
    model = UnicodeAttribute(null=True)
    recorded_at = UnicodeAttribute()
    successor = JSONAttribute(null=True)
    delivery = UnicodeAttribute(null=True)
    """The SQS message id of the delivery that recorded it: only that message, delivered again,
    re-sends `successor`."""
    review = JSONAttribute(null=True)
    """A person's verdict on the answer: `{verdict, item_id, by, at}`."""
    order_index = AttemptOrderIndex()


class AgentHistoryRow(_Base):
    """One row of an agent's history (`chalicelib.domain.history`): its latest results per
    version (`latest#v<n>`, `latest#draft`), the arms a baseline may be borrowed from per version
    and dataset (`arms#v<n>#<dataset_id>`), its cost per model (`answers#<model>`,
    `grading#<model>`).

    Written by the transaction that completes a run (and by a grade again and a delete of one),
    conditional on `revision` as read; read by the verdicts and a start, a few items whatever the
    number of runs (issue 12 "History costs nothing"). The `latest#` rows are the agent's
    latest results per version and dataset (docs/architecture/tables.md). Runs completed before
    these rows were kept are not in them: the local stack keeps no state, so no backfill is needed
    there; elsewhere `RunStore.remember` folds kept runs in.
    """

    ORG_KEY = "agent_key"

    class Meta(_Base.Meta):
        table_name = "agent_history"

    agent_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<agent_id>`."""
    item = UnicodeAttribute(range_key=True)
    """The row's key in `domain.history` (`HistoryRow.key`)."""
    org_id = UnicodeAttribute()
    agent_id = UnicodeAttribute()
    entries = JSONAttribute(default=dict)
    """The row's entries as `HistoryRow.as_json()` gives them (one JSON string: cheap to read)."""
    revision = NumberAttribute(default=0)
    """How often the row was written: each write is conditional on the revision it read."""


class TrendDatasetIndex(GlobalSecondaryIndex):
    """A dataset's trend rows, oldest first."""

    ORG_KEY = "dataset_key"

    class Meta:
        index_name = "dataset_at"
        projection = AllProjection()

    dataset_key = UnicodeAttribute(hash_key=True)
    at = UnicodeAttribute(range_key=True)


class TrendRow(_Base):
    """A completed run as the pass-rate chart reads it (`domain.chart.TrendRun`): a few hundred
    bytes, where the run's own row holds its case ids, tasks and outcome (docs/guides/console.md:
    1,000 runs chart under 1 s, and a query reads, and pays for, whole items).

    Put by the transaction that completes the run, again by a grade again's, deleted by the
    run's delete; a run that ended otherwise has none. Runs completed before these rows were kept
    are folded in by `RunStore.remember`, as their history rows are.
    """

    ORG_KEY = "agent_key"

    class Meta(_Base.Meta):
        table_name = "run_trends"

    agent_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<agent_id>`."""
    at = UnicodeAttribute(range_key=True)
    """`<started_at>#<run_id>`: an agent's runs in the order they ran."""
    dataset_key = UnicodeAttribute()
    """`<org_id>#<dataset_id>`: the hash key of `dataset_index`."""
    point = JSONAttribute()
    """`TrendRun.as_json()` (one JSON string: cheap to read)."""
    dataset_index = TrendDatasetIndex()


class LeaseRow(_Base):
    """Who is answering one attempt, and until when (issue 11 "One ask per attempt").

    A delivery of a case task claims its attempt here before it asks the agent; a second delivery
    while the claim lives leaves without asking. Kept a while after it lapses (`expires_at`, the
    table's TTL) so a late duplicate can still tell that its successor was sent.
    """

    ORG_KEY = "run_key"
    TTL_ATTRIBUTE = "expires_at"

    class Meta(_Base.Meta):
        table_name = "attempt_leases"

    run_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<run_id>`, as the run's."""
    attempt_key = UnicodeAttribute(range_key=True)
    holder = UnicodeAttribute(null=True)
    """The SQS message id of the delivery that holds the claim (None: recorded without one)."""
    until_ms = NumberAttribute(null=True)
    done = BooleanAttribute(null=True)
    """True once the attempt is recorded, written by the recording's own transaction."""
    failures = NumberAttribute(null=True)
    """Deliveries of the attempt that failed on assay's own error (`Runs.fail_lease`), whatever
    message carried them; None: none."""
    last_error = UnicodeAttribute(null=True)
    """The last of those errors, redacted, at most 300 characters."""
    expires_at = NumberAttribute()
    """Epoch seconds when DynamoDB may drop the row (TTL)."""


class ToolSessionRow(_Base):
    """One eval attempt's session at the tool gateway (docs/guides/tools.md): what a call of an
    `http` or `lambda` agent needs, in one item, so a call costs one `GetItem` and one conditional
    `UpdateItem` (`services.gateway`).

    Written by `open` before the agent is asked, by each call (its kept call appended, `version`
    + 1, conditional on the version read), and by `close` (`open` false) after the agent answered.
    Kept a day past its end (`expires_at`, the table's TTL): nothing reads it once closed.
    """

    ORG_KEY = "run_key"
    TTL_ATTRIBUTE = "expires_at"

    class Meta(_Base.Meta):
        table_name = "tool_sessions"

    run_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<run_id>`, as the attempts'."""
    session_id = UnicodeAttribute(range_key=True)
    org_id = UnicodeAttribute()
    run_id = UnicodeAttribute()
    attempt_key = UnicodeAttribute()
    """The attempt the session serves (`arm_id#case_id#attempt`)."""
    token_sha256 = UnicodeAttribute()
    """The SHA-256 (hex) of the session's bearer token; the token itself is never kept."""
    until_ms = NumberAttribute()
    """When the session ends on its own (epoch ms), closed or not."""
    open = BooleanAttribute(default=True)
    box = JSONAttribute(default=dict)
    """The attempt's tools as `tool_calls.box_state` gives them: declared tools, isolation
    settings, recorded calls, `max_steps`, the connections they may run on."""
    consumed: ListAttribute[Any] = ListAttribute(of=NumberAttribute, default=list)
    """Indices of the recorded calls this attempt replayed."""
    calls: ListAttribute[Any] = ListAttribute(of=UnicodeAttribute, default=list)
    """The calls kept so far, in order, each as its JSON text (appended by each call)."""
    kept_bytes = NumberAttribute(default=0)
    """The UTF-8 bytes of `calls`: the item stays under DynamoDB's 400 KB."""
    version = NumberAttribute(default=0)
    """How often the session was written since it opened: each call's write is conditional on
    the version it read."""
    expires_at = NumberAttribute()
    """Epoch seconds when DynamoDB may drop the row (TTL)."""
