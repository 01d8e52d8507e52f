"""The one definition of every DynamoDB table (docs/architecture/tables.md), as PynamoDB models.

`infra/resources.py` creates the tables from these models (moto server, LocalStack, AWS), so the
schema lives here once. Table names carry the stack's prefix and the endpoint is the stack's:
`configure()` sets both at start-up (bootstrap), never at import.

Times: ISO-8601 UTC strings with `Z` for display fields, epoch milliseconds (`*_ms`) where a
value is sorted or compared. Money: integer micro-USD (`*_micros`), never binary floats.

Tenancy (docs/architecture/tables.md, issue 9): every table of tenant data has the organization in
its key. A model either hashes on `org_id` or names the hash key that starts with the organization
in `ORG_KEY` (built by `org_key`, in the stores only); ids a tenant chooses are unique within its
organization only. An index that lists every organization's rows for the service's own work (the
sweep, the suite tick, the slot tick) says why in `SERVICE_WIDE`; `tests/unit/test_tenancy_keys.py`
checks every table and index against these declarations.
"""

from __future__ import annotations

import threading
from collections.abc import Mapping
from typing import Any

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
)
from pynamodb.connection import Connection, TableConnection
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
    KeysOnlyProjection,
    LocalSecondaryIndex,
)
from pynamodb.models import Model

from chalicelib.adapters import dynamo_parser

KEY_SEPARATOR = "#"
"""Joins the parts of a composite key; no organization id and no id a tenant chooses contains it."""


def org_key(org_id: str, *parts: str | int) -> str:
    """The composite key `<org_id>#<part>#...` of a row of organization `org_id`.

    Args:
        org_id: the organization (never empty; never contains `#`).
        parts: the ids below it, in key order (e.g. an agent id, then a suite id); ints as decimals.
    Returns:
        e.g. `org_key("acme", "agt_1", "nightly")` -> `"acme#agt_1#nightly"`.
    Raises:
        ValueError: an empty organization id, or one with `#` (a bug: identities refuse those).
    """
    if not org_id or KEY_SEPARATOR in org_id:
        raise ValueError(f"not an organization id: {org_id!r}")
    return KEY_SEPARATOR.join([org_id, *(str(p) for p in parts)])


_CLIENTS: dict[tuple[str | None, str | None], Any] = {}
_CLIENTS_LOCK = threading.Lock()


def share_client(connection: Connection) -> Connection:
    """Give `connection` the process's one DynamoDB client for its endpoint and region, made on
    first use, and return it.

    PynamoDB makes a botocore client per model (per table), about 60 ms of CPU each: a worker
    touching a dozen tables spent most of a second of its first case making clients. One client,
    thread-safe like every botocore client, serves them all. (`_client` is PynamoDB's own cache
    of it, read by `Connection.client`.) Its responses are parsed by `dynamo_parser`.
    """
    key = (connection.host, connection.region)
    with _CLIENTS_LOCK:
        client = _CLIENTS.get(key)
        if client is None:
            connection.session.register_component(
                "response_parser_factory", dynamo_parser.DynamoParserFactory()
            )
            client = _CLIENTS[key] = connection.client
    connection._client = client
    return connection


class _Base(Model):
    class Meta:
        abstract = True
        region = "us-east-1"
        table_name = "unset"
        billing_mode = "PAY_PER_REQUEST"

    @classmethod
    def _get_connection(cls) -> TableConnection:
        """PynamoDB's connection of the model, on the shared client (`share_client`)."""
        table = super()._get_connection()
        if table.connection._client is None:
            share_client(table.connection)
        return table


# --- organizations ---------------------------------------------------------------------------


class WaitingIndex(GlobalSecondaryIndex):
    """Sparse: only organizations with runs waiting for a slot carry `waiting_flag`."""

    SERVICE_WIDE = "the slot tick hands free slots to every organization's waiting runs"

    class Meta:
        index_name = "waiting"
        projection = AllProjection()

    waiting_flag = UnicodeAttribute(hash_key=True)
    waiting_since_ms = NumberAttribute(range_key=True)


class OrganizationRow(_Base):
    """An organization (tenant): its slot counter and the runs waiting for a slot
    (docs/architecture/slots.md)."""

    class Meta(_Base.Meta):
        table_name = "organizations"

    org_id = UnicodeAttribute(hash_key=True)
    name = UnicodeAttribute(default="")
    concurrency_limit = NumberAttribute()
    in_flight = NumberAttribute(default=0)
    waiting = ListAttribute(of=UnicodeAttribute, default=list)
    waiting_flag = UnicodeAttribute(null=True)
    waiting_since_ms = NumberAttribute(null=True)
    monthly_budget_micros = NumberAttribute(null=True)
    default_environment_id = UnicodeAttribute(null=True)
    """The environment a suite without one checks (one value: a default is never two or none)."""
    active_runs = UnicodeSetAttribute(null=True)
    """Ids of the organization's queued and running runs: added by the write that creates a run,
    taken out by every write that ends one (what runs may still spend is read from these alone).
    Runs created before it was kept are not in it (no backfill: the local stack keeps no state)."""
    created_at = UnicodeAttribute()
    waiting_index = WaitingIndex()


# --- agents and versions ---------------------------------------------------------------------


class AgentRow(_Base):
    """An agent: its draft (edited in place) and its latest published version number."""

    class Meta(_Base.Meta):
        table_name = "agents"

    org_id = UnicodeAttribute(hash_key=True)
    agent_id = UnicodeAttribute(range_key=True)
    name = UnicodeAttribute()
    draft_spec = JSONAttribute()
    draft_spec_hash = UnicodeAttribute()
    draft_updated_at = UnicodeAttribute()
    latest_version = NumberAttribute(default=0)
    live_version = NumberAttribute(null=True)
    monthly_budget_micros = NumberAttribute(null=True)
    created_at = UnicodeAttribute()
    created_by = UnicodeAttribute(default="")
    deleting_at = UnicodeAttribute(null=True)
    """Set (ISO time) by the conditional write that starts deleting the agent: from then on it
    reads as gone and no run, version, suite, evaluation or promotion of it can be written
    (`services.deletion`). The row itself is deleted last."""


class AgentVersionRow(_Base):
    """An immutable published version of an agent."""

    ORG_KEY = "agent_key"

    class Meta(_Base.Meta):
        table_name = "agent_versions"

    agent_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<agent_id>`."""
    version = NumberAttribute(range_key=True)
    org_id = UnicodeAttribute()
    agent_id = UnicodeAttribute()
    spec = JSONAttribute()
    spec_hash = UnicodeAttribute()
    model_profile_id = UnicodeAttribute(null=True)
    published_at = UnicodeAttribute()
    published_by = UnicodeAttribute(default="")
    source = UnicodeAttribute(default="api")


class ModelProfileRow(_Base):
    """A model profile: which model an arm runs on, with what settings, at what price
    (docs/reference/runtimes.md). Its `settings` are laid over an agent's spec for the arms that use
    it."""

    class Meta(_Base.Meta):
        table_name = "model_profiles"

    org_id = UnicodeAttribute(hash_key=True)
    model_profile_id = UnicodeAttribute(range_key=True)
    name = UnicodeAttribute(default="")
    model = UnicodeAttribute()
    settings = JSONAttribute(default=dict)
    temperature = NumberAttribute(null=True)
    price = JSONAttribute(null=True)
    created_at = UnicodeAttribute()
    created_by = UnicodeAttribute(default="")


class SpendRow(_Base):
    """One month's spend of an organization or an agent (the `spend` table of
    docs/architecture/tables.md), in micro-USD.

    `key` is `<org_id>#org#<YYYY-MM>` (the organization's) or `<org_id>#agent#<agent_id>#<YYYY-MM>`
    (one of its agents'), UTC months. Counters only grow, by `ADD`, after every model request.
    """

    ORG_KEY = "key"

    class Meta(_Base.Meta):
        table_name = "spend"

    key = UnicodeAttribute(hash_key=True)
    spent_micros = NumberAttribute(default=0)
    """Everything spent this month: the agent's answers and the judge's grading."""
    judge_micros = NumberAttribute(default=0)
    """The part of `spent_micros` the judge spent."""
    requests = NumberAttribute(default=0)
    """Model requests charged."""


class JudgeRow(_Base):
    """A judge header (`version` 0: name, latest version) or one immutable published judge
    version (`version` >= 1: its spec and rubric hash; docs/guides/judges.md)."""

    ORG_KEY = "judge_key"

    class Meta(_Base.Meta):
        table_name = "judges"

    judge_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<judge_id>`."""
    version = NumberAttribute(range_key=True)
    org_id = UnicodeAttribute()
    judge_id = UnicodeAttribute()
    name = UnicodeAttribute(default="")
    latest_version = NumberAttribute(default=0)
    spec = JSONAttribute(null=True)
    rubric_hash = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute()
    created_by = UnicodeAttribute(default="")


# --- environments, suites, promotions, notifications -----------------------------------------


class EnvironmentRow(_Base):
    """An environment of an organization: which version of each agent it serves
    (docs/guides/suites.md)."""

    class Meta(_Base.Meta):
        table_name = "environments"

    org_id = UnicodeAttribute(hash_key=True)
    environment_id = UnicodeAttribute(range_key=True)
    name = UnicodeAttribute(default="")
    serving = JSONAttribute(default=dict)
    """`{agent_id: version}`."""
    created_at = UnicodeAttribute()
    created_by = UnicodeAttribute(default="")


class SuiteFireIndex(GlobalSecondaryIndex):
    """Sparse: suites with a schedule carry `fire_flag`; the tick reads those due by
    `next_fire_at_ms`."""

    SERVICE_WIDE = "the one-minute tick fires every organization's due schedules"

    class Meta:
        index_name = "next_fire"
        projection = AllProjection()

    fire_flag = UnicodeAttribute(hash_key=True)
    next_fire_at_ms = NumberAttribute(range_key=True)


class SuiteDueIndex(GlobalSecondaryIndex):
    """Sparse: suites with a trigger waiting carry `due_flag`; the tick starts those due by
    `due_at_ms`."""

    SERVICE_WIDE = "the one-minute tick starts every organization's due triggers"

    class Meta:
        index_name = "due"
        projection = AllProjection()

    due_flag = UnicodeAttribute(hash_key=True)
    due_at_ms = NumberAttribute(range_key=True)


class SuiteOrgIndex(GlobalSecondaryIndex):
    class Meta:
        index_name = "org_suites"
        projection = AllProjection()

    org_id = UnicodeAttribute(hash_key=True)
    suite_id = UnicodeAttribute(range_key=True)


class SuiteRow(_Base):
    """A suite: what it checks, when, against which bar, as whom, and what is waiting
    (docs/guides/suites.md).

    `pending` holds the triggers waiting to run, one per version (a later trigger for a waiting
    version is absorbed); `active_run_id` is the one eval run it has going.
    """

    ORG_KEY = "agent_key"

    class Meta(_Base.Meta):
        table_name = "suites"

    agent_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<agent_id>`."""
    suite_id = UnicodeAttribute(range_key=True)
    org_id = UnicodeAttribute()
    agent_id = UnicodeAttribute()
    name = UnicodeAttribute(default="")
    dataset_id = UnicodeAttribute()
    dataset_version = NumberAttribute(null=True)
    """Pinned dataset version; None reads the latest when a run starts."""
    environment_id = UnicodeAttribute(null=True)
    """The environment whose version it checks; None is the organization's default one."""
    threshold = JSONAttribute(default=dict)
    max_run_usd_micros = NumberAttribute(null=True)
    triggers = JSONAttribute(default=dict)
    guards = BooleanAttribute(default=False)
    pins = JSONAttribute(null=True)
    """A guard's pins: `{dataset_version, scoring_hash, judge_version}`."""
    history = JSONAttribute(default=list)
    """Who changed what: owner changes, pin moves (`agent.environment_guards_changed`)."""
    owner = UnicodeAttribute()
    paused = BooleanAttribute(default=False)
    paused_reason = UnicodeAttribute(null=True)
    pending = JSONAttribute(default=list)
    active_run_id = UnicodeAttribute(null=True)
    active_trigger = JSONAttribute(null=True)
    published_seen = JSONAttribute(default=list)
    """Versions whose publish it took (a redelivered publish event is not taken twice)."""
    notified = JSONAttribute(default=dict)
    """Per version, whether its owner was told of the current run of bad results."""
    last_result = JSONAttribute(null=True)
    fire_flag = UnicodeAttribute(null=True)
    next_fire_at_ms = NumberAttribute(null=True)
    due_flag = UnicodeAttribute(null=True)
    due_at_ms = NumberAttribute(null=True)
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    fire_index = SuiteFireIndex()
    due_index = SuiteDueIndex()
    org_index = SuiteOrgIndex()


class SuiteResultRow(_Base):
    """One result of a suite: its word, why, the cases behind it and the run
    (docs/guides/suites.md)."""

    ORG_KEY = "suite_key"

    class Meta(_Base.Meta):
        table_name = "suite_results"

    suite_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<agent_id>#<suite_id>`: a suite is named by its agent's id and its own."""
    started_key = UnicodeAttribute(range_key=True)
    """`<started_at ISO>#<result id>`: newest last."""
    suite_id = UnicodeAttribute()
    result_id = UnicodeAttribute()
    org_id = UnicodeAttribute()
    agent_id = UnicodeAttribute()
    trigger = JSONAttribute()
    version = NumberAttribute(null=True)
    run_id = UnicodeAttribute(null=True)
    purpose = UnicodeAttribute(default="suite")
    result = UnicodeAttribute()
    reasons = JSONAttribute(default=list)
    cases_broken = JSONAttribute(default=list)
    cases_undecided = JSONAttribute(default=list)
    overall = UnicodeAttribute(null=True)
    started_at = UnicodeAttribute()
    completed_at = UnicodeAttribute(null=True)


class PromotionRow(_Base):
    """A promotion of a version onto an environment, waiting for its guards or done."""

    ORG_KEY = "agent_key"

    class Meta(_Base.Meta):
        table_name = "promotions"

    agent_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<agent_id>`."""
    promotion_id = UnicodeAttribute(range_key=True)
    """`p<epoch ms><nonce>` for a promotion, `lock#<environment_id>` for an environment's lock."""
    org_id = UnicodeAttribute()
    agent_id = UnicodeAttribute()
    environment_id = UnicodeAttribute()
    version = NumberAttribute()
    from_version = NumberAttribute(null=True)
    status = UnicodeAttribute()
    """`waiting` (its guards run), `promoted`, or `refused`."""
    guards = JSONAttribute(default=dict)
    """`{suite_id: {"result": word|None, "run_id", "reasons"}}`."""
    reason = UnicodeAttribute(null=True)
    created_at = UnicodeAttribute()
    created_by = UnicodeAttribute(default="")
    decided_at = UnicodeAttribute(null=True)


class NotificationRow(_Base):
    """One notice for one person (the notification center)."""

    ORG_KEY = "recipient"

    class Meta(_Base.Meta):
        table_name = "notifications"

    recipient = UnicodeAttribute(hash_key=True)
    """`<org_id>#<user_id>`."""
    notification_id = UnicodeAttribute(range_key=True)
    """`<created_at ISO>#<id>`: newest last."""
    org_id = UnicodeAttribute()
    kind = UnicodeAttribute()
    title = UnicodeAttribute()
    body = UnicodeAttribute(default="")
    links = JSONAttribute(default=dict)
    read = BooleanAttribute(default=False)
    emailed = BooleanAttribute(default=False)
    created_at = UnicodeAttribute()


# --- datasets --------------------------------------------------------------------------------


class DatasetOrgIndex(GlobalSecondaryIndex):
    class Meta:
        index_name = "org_created"
        projection = AllProjection()

    org_id = UnicodeAttribute(hash_key=True)
    created_at = UnicodeAttribute(range_key=True)


class DatasetRow(_Base):
    """A dataset header (`version` 0) or one immutable dataset version (`version` >= 1)."""

    ORG_KEY = "dataset_key"

    class Meta(_Base.Meta):
        table_name = "datasets"

    dataset_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<dataset_id>`."""
    version = NumberAttribute(range_key=True)
    org_id = UnicodeAttribute()
    dataset_id = UnicodeAttribute()
    name = UnicodeAttribute(default="")
    created_at = UnicodeAttribute()
    created_by = UnicodeAttribute(default="")
    latest_version = NumberAttribute(default=0)
    scoring = JSONAttribute(null=True)
    case_ids = ListAttribute(of=UnicodeAttribute, null=True)
    case_count = NumberAttribute(default=0)
    ungraded_cases = NumberAttribute(default=0)
    ready = BooleanAttribute(default=True)
    """False while a version's cases are being written (the number is claimed first)."""
    deleting_at = UnicodeAttribute(null=True)
    """On the header only: set (ISO time) by the conditional write that starts deleting the
    dataset; from then on it reads as gone and no version, run, suite or evaluation of it can be
    written (`services.deletion`). The header is deleted last."""
    org_index = DatasetOrgIndex()


class DatasetCaseRow(_Base):
    """One case of one dataset version, keyed by the version and the stable `case_id`."""

    ORG_KEY = "version_key"

    class Meta(_Base.Meta):
        table_name = "dataset_cases"

    version_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<dataset_id>#<version>`."""
    case_id = UnicodeAttribute(range_key=True)
    case = JSONAttribute()


# --- evaluations (docs/guides/by-hand.md) ----------------------------------------------------


class EvaluationRow(_Base):
    """An evaluation: an agent, a dataset and a version selector (`records.Evaluation`)."""

    class Meta(_Base.Meta):
        table_name = "evaluations"

    org_id = UnicodeAttribute(hash_key=True)
    evaluation_id = UnicodeAttribute(range_key=True)
    name = UnicodeAttribute(default="")
    agent_id = UnicodeAttribute()
    dataset_id = UnicodeAttribute()
    version = UnicodeAttribute(default="latest")
    """`latest`, `published` or a version number as decimal text."""
    created_at = UnicodeAttribute()
    created_by = UnicodeAttribute(default="")
    updated_at = UnicodeAttribute(null=True)


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
    gradings: ListAttribute[Any] = ListAttribute(null=True)
    """Every "grade again" of the run: `[{by, at, graded, changed, judge_cost_usd}]`."""
    regrades = NumberAttribute(null=True)
    """How many answers were graded again: the outcome is recomputed conditional on it."""
    grading_until_ms = NumberAttribute(null=True)
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
    expires_at = NumberAttribute()
    """Epoch seconds when DynamoDB may drop the row (TTL)."""


# --- access: members and API keys -------------------------------------------------------------


class MemberRow(_Base):
    """A person of an organization and their role and grants (docs/reference/access.md); the item
    keyed `FIRST_MEMBER_KEY` records who became its first member (the bootstrap happens once)."""

    class Meta(_Base.Meta):
        table_name = "members"

    org_id = UnicodeAttribute(hash_key=True)
    member_key = UnicodeAttribute(range_key=True)
    """`u#<user_id>`; `FIRST_MEMBER_KEY` for the bootstrap's item."""
    user_id = UnicodeAttribute()
    role = UnicodeAttribute(default="viewer")
    grants = JSONAttribute(default=dict)
    """`{"agent:<id>" | "dataset:<id>": [permission, ...]}`."""
    added_at = UnicodeAttribute(default="")
    added_by = UnicodeAttribute(default="")
    updated_at = UnicodeAttribute(default="")
    revision = NumberAttribute(default=0)
    """How often the member was changed: each change is conditional on the revision it read."""


class ApiKeyRow(_Base):
    """An API key of an organization: only the SHA-256 of its secret is kept."""

    class Meta(_Base.Meta):
        table_name = "api_keys"

    org_id = UnicodeAttribute(hash_key=True)
    key_id = UnicodeAttribute(range_key=True)
    name = UnicodeAttribute(default="")
    scopes = ListAttribute(of=UnicodeAttribute, default=list)
    created_by = UnicodeAttribute()
    created_at = UnicodeAttribute()
    secret_sha256 = UnicodeAttribute()
    revoked_at = UnicodeAttribute(null=True)
    revoked_by = UnicodeAttribute(null=True)


ALL_MODELS: tuple[type[Model], ...] = (
    OrganizationRow,
    AgentRow,
    AgentVersionRow,
    ModelProfileRow,
    SpendRow,
    JudgeRow,
    EnvironmentRow,
    SuiteRow,
    SuiteResultRow,
    PromotionRow,
    NotificationRow,
    DatasetRow,
    DatasetCaseRow,
    EvaluationRow,
    RunRow,
    AttemptRow,
    LeaseRow,
    AgentHistoryRow,
    TrendRow,
    MemberRow,
    ApiKeyRow,
)
"""Every table of assay, in creation order."""

_BASE_NAMES: dict[type[Model], str] = {m: m.Meta.table_name for m in ALL_MODELS}


def configure(*, prefix: str, endpoint_url: str | None, region: str) -> None:
    """Point every model at one stack: table names `prefix + base name`, one endpoint, one region.

    Safe to call again (tests re-point models at a fresh moto server); connections are rebuilt.
    """
    _CLIENTS.clear()
    for model, base in _BASE_NAMES.items():
        model.Meta.table_name = f"{prefix}{base}"
        model.Meta.host = endpoint_url
        model.Meta.region = region
        model._connection = None
        for index in model._indexes.values():
            index.Meta.model = model
            index._connection = None  # type: ignore[attr-defined]


def table_name(model: type[Model]) -> str:
    """The configured table name of `model`."""
    return model.Meta.table_name


def ttl_attribute(model: type[Model]) -> str | None:
    """The attribute DynamoDB's time to live reads on `model`'s table (epoch seconds), or None."""
    return getattr(model, "TTL_ATTRIBUTE", None)


def create_table_params(model: type[Model]) -> dict[str, Any]:
    """`CreateTable` parameters for `model` (keys, GSIs, LSIs, on-demand billing); a table with a
    time to live is switched on after it is created (`ttl_attribute`)."""
    schema = model._get_schema()
    params: dict[str, Any] = {
        "TableName": model.Meta.table_name,
        "AttributeDefinitions": schema["attribute_definitions"],
        "KeySchema": schema["key_schema"],
        "BillingMode": "PAY_PER_REQUEST",
    }

    def index(raw: Mapping[str, Any]) -> dict[str, Any]:
        return {
            "IndexName": raw["index_name"],
            "KeySchema": sorted(raw["key_schema"], key=lambda k: k["KeyType"] != "HASH"),
            "Projection": raw["projection"],
        }

    gsis = [index(g) for g in schema.get("global_secondary_indexes", [])]
    lsis = [index(i) for i in schema.get("local_secondary_indexes", [])]
    params["KeySchema"] = sorted(params["KeySchema"], key=lambda k: k["KeyType"] != "HASH")
    if gsis:
        params["GlobalSecondaryIndexes"] = gsis
    if lsis:
        params["LocalSecondaryIndexes"] = lsis
    return params
