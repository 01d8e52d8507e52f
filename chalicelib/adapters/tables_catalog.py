"""Table models of what an organization defines: the organization, agents and versions, model
profiles, spend, judges, environments, connections, suites, promotions, notifications, datasets
and evaluations (docs/architecture/tables.md; every key holds the organization, see `tables`)."""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    ListAttribute,
    NumberAttribute,
    UnicodeAttribute,
    UnicodeSetAttribute,
)
from pynamodb.indexes import (
    AllProjection,
    GlobalSecondaryIndex,
)

from chalicelib.adapters.table_base import TableBase as _Base

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
    concurrency_limit = NumberAttribute(null=True)
    """Never read: the default limit earlier releases copied here at first use (the default is
    read live now, `own_concurrency_limit` is an operator's own)."""
    own_concurrency_limit = NumberAttribute(null=True)
    """The limit the operator set for this organization alone; absent: it follows
    `EVAL_ORG_CONCURRENCY` as it is now (`Organization.concurrency_limit`)."""
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
    secrets_vetted = BooleanAttribute(default=False)


class SpendMonthIndex(GlobalSecondaryIndex):
    """Sparse: an organization's agents' rows of one month (only agents' rows carry
    `month_key`)."""

    ORG_KEY = "month_key"

    class Meta:
        index_name = "month_agents"
        projection = AllProjection()

    month_key = UnicodeAttribute(hash_key=True)
    key = UnicodeAttribute(range_key=True)


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
    month_key = UnicodeAttribute(null=True)
    """`<org_id>#<YYYY-MM>` on an agent's row (the hash key of `month_index`): the month's agents
    are listed without a scan."""
    production_micros = NumberAttribute(default=0)
    """The part of `spent_micros` production runs spent (reported by the platform)."""
    production_runs = NumberAttribute(default=0)
    production_input_tokens = NumberAttribute(default=0)
    production_output_tokens = NumberAttribute(default=0)
    eval_runs = NumberAttribute(default=0)
    """Eval cases answered, counted when their eval run ends (their cost is in `spent_micros`)."""
    eval_input_tokens = NumberAttribute(default=0)
    eval_output_tokens = NumberAttribute(default=0)
    grader_runs = NumberAttribute(default=0)
    """Answers the judge graded, counted when their eval run ends."""
    month_index = SpendMonthIndex()


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
    test_connections = JSONAttribute(default=dict)
    """`{connection_id: test_connection_id}` (docs/guides/tools.md)."""


class ConnectionRow(_Base):
    """One of an organization's connections: where its agents' tools run (docs/guides/tools.md).
    `auth_secret` names a secret; the value is never kept here."""

    class Meta(_Base.Meta):
        table_name = "connections"

    org_id = UnicodeAttribute(hash_key=True)
    connection_id = UnicodeAttribute(range_key=True)
    kind = UnicodeAttribute()
    url = UnicodeAttribute()
    auth_secret = UnicodeAttribute(null=True)
    description = UnicodeAttribute(default="")
    created_at = UnicodeAttribute()
    created_by = UnicodeAttribute(default="")
    secrets_vetted = BooleanAttribute(default=False)


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

    The table also keeps one item per name an agent's suite holds (`stores.suite_names`): its
    `suite_id` is `name#<SHA-256 of the name key>`, `name` the name key and `reserved_by` the
    suite holding it; no other attribute, so no index holds it.
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
    replay = JSONAttribute(null=True)
    """How its runs answer tool calls from a recording (`{from_recordings, recording_id,
    live_reads}`); None when they do not."""
    fire_flag = UnicodeAttribute(null=True)
    next_fire_at_ms = NumberAttribute(null=True)
    due_flag = UnicodeAttribute(null=True)
    due_at_ms = NumberAttribute(null=True)
    created_at = UnicodeAttribute()
    updated_at = UnicodeAttribute()
    reserved_by = UnicodeAttribute(null=True)
    """On a name's reservation item only: the suite id holding the name."""
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
    reviewed_by = JSONAttribute(null=True)
    """User ids of the people whose review verdicts the result rests on."""
    result_before_review = UnicodeAttribute(null=True)
    stale = BooleanAttribute(null=True)
    measured = JSONAttribute(null=True)
    """What the result was measured on: dataset version, scoring, threshold and baseline."""
    grading_changed = BooleanAttribute(null=True)
    """Its comparison was invalid: the sides were graded differently."""


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
