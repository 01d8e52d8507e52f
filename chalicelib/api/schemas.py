"""Request bodies of the HTTP API (pydantic v2); unknown fields are refused with a 400 naming
them."""

from __future__ import annotations

from typing import Annotated, Any, Literal

from pydantic import AfterValidator, BaseModel, ConfigDict, Field, StrictBool, StrictInt
from pydantic_core import PydanticCustomError

from chalicelib.api.common import MAX_PATH_ID_LENGTH
from chalicelib.domain.display_names import name_problem
from chalicelib.domain.judge_rules import CRITERION_ID_PATTERN, CRITERION_TEXT_CHARS
from chalicelib.domain.limits import MAX_IMPORT_LIMIT, MAX_ORG_CONCURRENCY, MAX_VERSION


class Body(BaseModel):
    """A request body: unknown fields are refused; each field's docstring is its description in the
    OpenAPI document (`api.openapi.DocumentedFields`).

    Built on first use (`defer_build`): a request validates one body, so the API function's start
    builds none of them (issue 12).
    """

    model_config = ConfigDict(extra="forbid", defer_build=True)


Ref = Annotated[str, Field(min_length=1, max_length=MAX_PATH_ID_LENGTH, pattern=r"^[^#/]+$")]
"""An id naming something of the caller's organization. Ids never contain `#` or `/` (the stores'
composite keys use `#`), so one that does is refused (400 naming the field) rather than looked
up; none is longer than `MAX_PATH_ID_LENGTH` characters."""

Version = Annotated[StrictInt, Field(ge=1, le=MAX_VERSION)]
"""A version number: 1 to `MAX_VERSION` (2,147,483,647)."""


def _readable_name(value: str) -> str:
    problem = name_problem(value)
    if problem is not None:
        raise PydanticCustomError("name_unreadable", problem)
    return value


NO_CONTROL = AfterValidator(_readable_name)
"""A person's name for something (an agent, dataset, judge, evaluation, model profile,
environment, suite or API key) is kept as written, but a control character in it (NUL, ESC, a
line break), a line or paragraph separator, U+FFFC, or only invisible characters
(`domain.display_names.name_problem`) is a 400 naming the field."""

Name = Annotated[str, Field(max_length=200), NO_CONTROL]
"""A name of at most 200 characters, blank allowed (`NO_CONTROL`)."""

RequiredName = Annotated[str, Field(min_length=1, max_length=200), NO_CONTROL]
"""A name of 1-200 characters (`NO_CONTROL`)."""

KeyName = Annotated[str, Field(max_length=100), NO_CONTROL]
"""An API key's name: at most 100 characters, blank allowed (`NO_CONTROL`)."""


class CreateAgent(Body):
    name: RequiredName
    """A person's name for the agent."""
    spec: dict[str, Any]
    """The draft spec (`runtime` plus what that runtime needs)."""
    agent_id: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    """An id of the caller's choosing; generated when absent."""


class UpdateDraft(Body):
    spec: dict[str, Any] | None = None
    """The new draft spec."""
    name: RequiredName | None = None
    """A new name for the agent."""


class Publish(Body):
    version: Version | None = None
    """The version number to publish; default the latest + 1."""


class Source(Body):
    format: Literal["jsonl", "csv", "gsm8k", "promptfoo", "inspect"]
    """How `content` is written: assay's own `jsonl`/`csv`, `gsm8k`, a `promptfoo` test file
    (YAML or JSON), or an `inspect` dataset (JSON array, JSON lines or CSV)."""
    content: str
    """The file's text."""
    limit: StrictInt | None = Field(None, ge=1, le=MAX_IMPORT_LIMIT)
    """Keep only the first N cases."""
    reference_column: str | None = Field(None, min_length=1, max_length=200)
    """For `jsonl`/`csv`: the column (key) that holds each case's reference. It wins over the
    file's own `reference`; without it `reference`, else `answer`, `target` or `expected` (in that
    order) is the reference when a required scorer uses one."""
    allow_ungraded: StrictBool = False
    """Import the file even when no case of it can be graded by the required scorers (refused
    with a 400 naming the first line otherwise)."""


class AddDatasetVersion(Body):
    scoring: dict[str, Any] | None = None
    """`{"required": [scorer names], "settings": {scorer: {...}}}`; may be left out when the
    imported file says how it is graded (promptfoo assertions, Inspect choices): the scorers it
    needs are added to `required` either way."""
    cases: list[Any] | None = None
    """Cases given inline (`case_id`, `input`, `reference`, `tags`, `checks`, ...)."""
    source: Source | None = None
    """Or a file to import."""


class CreateDataset(Body):
    name: RequiredName
    dataset_id: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    scoring: dict[str, Any] | None = None
    """With `cases` or `source`: the first version's scoring, as `POST …/versions` takes it."""
    cases: list[Any] | None = None
    """The first version's cases, inline: the dataset is created with it, or not at all."""
    source: Source | None = None
    """Or the first version's file to import: the dataset is created with it, or not at all."""


class StartRun(Body):
    """The body of `/eval-runs` and `/eval-runs/estimate`."""

    dataset_id: Ref
    dataset_version: Version | Literal["latest"] | None = None
    """A dataset version number, default the latest."""
    candidate: Literal["draft", "version", "latest", "published"] | Version = "version"
    """`draft`, or a published version (`version` with `version`, or directly a selector)."""
    version: Version | Literal["latest", "published"] | None = None
    """With `candidate: "version"`: a number, `latest` (default) or `published`."""
    environment_id: Ref | None = None
    """The environment whose test connections the cases use."""
    paired_baseline: StrictBool = False
    """Run the version before the candidate in the same run, as the baseline
    (docs/concepts/verdicts.md)."""
    reruns: Annotated[StrictInt, Field(ge=0, le=5)] | Literal["auto"] | None = None
    """Reruns of each flipped case on both sides (default EVAL_RERUNS); a baseline needs >= 1.
    For a stability run: how often every case is asked again (default 1). `"auto"` (a run with a
    baseline only): the smallest count in 1-5 whose chance of luck, measured by the newest earlier
    comparison of the agent on the dataset, is under EVAL_MAX_LUCK (docs/concepts/noise.md)."""
    baseline_run_id: Ref | None = None
    """An earlier completed run of the same agent and dataset to compare with."""
    model_profile_ids: list[Ref] | None = Field(None, min_length=1, max_length=5)
    """Run the candidate once per model profile, each as an arm; a baseline runs on the first."""
    stability: StrictBool = False
    """Measure how steady the answers are: every case asked, then asked again; nothing compared."""
    evaluation_id: Ref | None = None
    """The evaluation the run belongs to (docs/guides/by-hand.md): the run takes its version
    selector, and must be of its agent and dataset. Absent: the evaluation the agent and dataset
    imply."""
    from_recordings: StrictBool = False
    """Answer every tool call the agents make from the recording `recording_id`: a call it holds
    is `replayed`, one it does not is held (`divergent`) (docs/guides/tools.md)."""
    recording_id: Ref | None = None
    """With `from_recordings`: the organization's recording whose calls answer the tool calls."""
    live_reads: StrictBool = False
    """With `from_recordings`: a `read` tool the recording does not cover runs on its own
    connection instead of being held."""


class StartEvaluationRun(Body):
    """The body of `POST /api/evaluations/{evaluation_id}/runs`: a start's fields but what the
    evaluation decides (agent, dataset, candidate and version)."""

    dataset_version: Version | Literal["latest"] | None = None
    """A dataset version number, default the latest."""
    environment_id: Ref | None = None
    """The environment whose test connections the cases use."""
    paired_baseline: StrictBool = False
    """Run the version before the candidate in the same run, as the baseline
    (docs/concepts/verdicts.md)."""
    reruns: Annotated[StrictInt, Field(ge=0, le=5)] | Literal["auto"] | None = None
    """Reruns of each flipped case on both sides (default EVAL_RERUNS); a baseline needs >= 1.
    `"auto"` (a run with a baseline only), as on `/eval-runs`: the smallest count in 1-5 whose
    chance of luck, measured by the newest earlier comparison of the evaluation's agent on its
    dataset, is under EVAL_MAX_LUCK (docs/concepts/noise.md)."""
    baseline_run_id: Ref | None = None
    """An earlier completed run of the same agent and dataset to compare with."""
    model_profile_ids: list[Ref] | None = Field(None, min_length=1, max_length=5)
    """Run the candidate once per model profile, each as an arm; a baseline runs on the first."""
    stability: StrictBool = False
    """Measure how steady the answers are: every case asked, then asked again; nothing compared."""
    from_recordings: StrictBool = False
    """Answer every tool call the agents make from the recording `recording_id`: a call it holds
    is `replayed`, one it does not is held (`divergent`) (docs/guides/tools.md)."""
    recording_id: Ref | None = None
    """With `from_recordings`: the organization's recording whose calls answer the tool calls."""
    live_reads: StrictBool = False
    """With `from_recordings`: a `read` tool the recording does not cover runs on its own
    connection instead of being held."""


VersionSelector = Literal["latest", "published"] | Version
"""An evaluation's version selector: `latest`, `published` or a version number."""


class CreateEvaluation(Body):
    """The body of `POST /api/evaluations`."""

    agent_id: Ref
    """The agent evaluated."""
    dataset_id: Ref
    """The dataset its runs measure."""
    version: VersionSelector = "latest"
    """Which version a run picks, resolved when the run is created: `latest` (default),
    `published` (the version served, else the latest) or a number."""
    name: Name = ""
    """A person's name for the evaluation."""
    evaluation_id: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-]{1,64}$")
    """An id of the caller's choosing; generated when absent."""


class UpdateEvaluation(Body):
    """The body of `PATCH /api/evaluations/{evaluation_id}`: only the fields given change."""

    agent_id: Ref | None = None
    """Another agent to evaluate (past runs keep the agent they pinned)."""
    version: VersionSelector | None = None
    """Another version selector (past runs keep the version they pinned)."""
    name: Name | None = None
    """A new name."""


class CreateModelProfile(Body):
    model_profile_id: str = Field(pattern=r"^[A-Za-z0-9_\-.]{1,64}$")
    """The profile's id, chosen by the caller."""
    model: str = Field(min_length=1)
    """The provider's model name."""
    name: Name = ""
    """A person's name for the profile."""
    settings: dict[str, Any] = Field(default_factory=dict)
    """Connection keys laid over an agent's spec on this profile (`base_url`, `api_key_secret`,
    `extra_headers`, `max_tokens`, `system_prompt`, `url`, `headers`); nothing else is accepted."""
    temperature: float | None = Field(None, ge=0, le=2)
    price: dict[str, Any] | None = None
    """`{"input_per_mtok_usd", "output_per_mtok_usd"}`, USD per 1M tokens."""


class AgentSummaries(Body):
    model_config = ConfigDict(extra="allow")

    agents: list[Any]
    """`[{"agentId": "...", "version": 3 | "draft"}]`."""


class ToolArguments(Body):
    """A tool call's arguments: a JSON object, checked against the tool's `parameters` schema
    (docs/guides/tools.md); an empty body is `{}`."""

    model_config = ConfigDict(extra="allow")


class SetBudget(Body):
    monthly_usd: Any = Field(...)
    """The monthly budget in USD (a number or a decimal string); null removes it (checked by the
    service)."""


class SetOrgLimits(Body):
    """The body of `PUT /api/v1/organizations/{org_id}/limits` (the operator's)."""

    concurrency: StrictInt | None = Field(..., ge=1, le=MAX_ORG_CONCURRENCY)
    """Case attempts the organization may have in flight at once, across its runs (1-1000); null
    removes its own limit: it follows `EVAL_ORG_CONCURRENCY` again."""


class CreateJudge(Body):
    name: RequiredName
    judge_id: str | None = Field(None, pattern=r"^[A-Za-z0-9_\-]{1,64}$")


class AddCriterion(Body):
    """The body of `POST /api/v1/datasets/{dataset_id}/criteria` (docs/guides/judges.md)."""

    note: str = Field(max_length=CRITERION_TEXT_CHARS)
    """What the judge should check, as a person wrote it: the new criterion's text."""
    tags: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(max_length=50)
    """The case tags it grades (at least one), each a tag a case of the dataset's latest version
    carries."""
    criterion_id: str | None = Field(None, pattern=CRITERION_ID_PATTERN)
    """An id of the caller's choosing; `note_` and a hash of the text and tags when absent."""


ScoreId = Annotated[str, Field(pattern=r"^[^:]+:.+:judge$", max_length=600)]
"""`<run_id>:<arm#case#attempt>:judge`, as `ungraded_score_ids` lists them."""


class GradeAgain(Body):
    score_ids: list[ScoreId] | None = Field(None, min_length=1, max_length=1000)
    """Judge scores to grade again (`<run_id>:<attempt_key>:judge`); default every one not
    graded."""


class Rescore(Body):
    score_ids: list[ScoreId] | None = Field(None, min_length=1, max_length=1000)
    """Judge scores to grade again, of any runs over the dataset."""
    run_id: Ref | None = None
    """Or every score of this run that is not graded."""


Id = Annotated[str, Field(pattern=r"^[A-Za-z0-9_\-]{1,64}$")]


TestConnections = Annotated[dict[Ref, Ref], Field(max_length=100)]
"""`{connection_id: test_connection_id}`: connections of the organization, none mapped to itself
(checked by the service)."""


class CreateEnvironment(Body):
    environment_id: Id
    name: Name = ""
    default: StrictBool = False
    """The organization's default environment (its first one is)."""
    test_connections: TestConnections | None = None
    """During an eval run in this environment, a tool whose connection is a key runs on the test
    connection its value names instead (docs/guides/tools.md)."""


class SetTestConnections(Body):
    """`PUT /api/v1/environments/{environment_id}/test-connections`: the whole map (`{}` removes
    every test connection)."""

    test_connections: TestConnections
    """`{connection_id: test_connection_id}`: during an eval run in the environment a tool whose
    connection is a key runs on the test connection instead."""


class CreateConnection(Body):
    """`POST /api/v1/connections`."""

    connection_id: Annotated[str, Field(pattern=r"^[A-Za-z0-9_\-.]{1,64}$")]
    """The connection's id, chosen by the caller; a spec's tools name it in `connection_id`."""
    kind: Literal["http", "mcp"]
    """`http`: a call is `POST {url}/{tool_name}` with the arguments as JSON; `mcp`: an MCP server
    (streamable HTTP) at `url`."""
    url: str = Field(min_length=1, max_length=2048)
    """An http(s) URL; egress refuses a private, link-local or metadata address, or a name
    resolving to one (checked when saved and on every call)."""
    auth_secret: Ref | None = None
    """The name of the organization's secret sent as the `Authorization` header (never a value);
    absent: no header."""
    description: str = Field("", max_length=1000)


class Promote(Body):
    environment_id: Ref
    version: Version


class SuiteBody(Body):
    """A suite (create: `dataset_id` required; update: any subset)."""

    suite_id: Id | None = None
    name: Name | None = None
    dataset_id: Ref | None = None
    dataset_version: Version | None = None
    """Pinned dataset version; absent or null: the latest when a run starts."""
    environment_id: Ref | None = None
    """The environment whose version it checks; absent: the default one."""
    threshold: dict[str, Any] | None = None
    """`{min_pass_rate?, max_regressions?, max_cost_per_pass_rise_pct?,
    max_p95_latency_rise_pct?}`."""
    max_run_usd: Any = None
    triggers: dict[str, Any] | None = None
    """`{schedule?: {cron, timezone}, on_publish?, on_promotion?, on_dependency_change?}`."""
    guards: StrictBool | None = None
    """Guard its environment: promotions onto it wait for this suite to pass."""
    move_pins: StrictBool | None = None
    """Move a guard's pins to the dataset version and judge publication now
    (`promotions:override`)."""
    from_recordings: StrictBool | None = None
    """Its runs answer every tool call from the recording `recording_id` (docs/guides/tools.md)."""
    recording_id: Ref | None = None
    """With `from_recordings`: the organization's recording whose calls answer the tool calls."""
    live_reads: StrictBool | None = None
    """With `from_recordings`: a `read` tool the recording does not cover runs on its own
    connection."""


class EmailSettings(Body):
    email: StrictBool


Permission = Annotated[str, Field(min_length=1, max_length=40)]
"""A permission's name (`domain.access.PERMISSIONS`; the service names one it does not know)."""
UserId = Annotated[str, Field(min_length=1, max_length=200)]


class AddMember(Body):
    """`POST /api/v1/members`: a person and their role."""

    user_id: UserId
    role: Literal["guest", "viewer", "runner", "editor", "admin"]


class ChangeMember(Body):
    """`PATCH /api/v1/members/{user_id}`: their new role."""

    role: Literal["guest", "viewer", "runner", "editor", "admin"]


class PutGrant(Body):
    """`PUT /api/v1/members/{user_id}/grants/{kind}/{resource_id}`: what it adds on that agent or
    dataset (that kind's permissions only)."""

    permissions: list[Permission] = Field(min_length=1, max_length=3)


class CreateApiKey(Body):
    """`POST /api/v1/api-keys`: a name to know it by and what it may do (a subset of yours)."""

    name: KeyName = ""
    scopes: list[Permission] = Field(min_length=1, max_length=20)


class PutSecret(Body):
    """`PUT /api/v1/secrets/{name}`."""

    value: Any = Field(...)
    """The secret's value: a non-empty string of at most 16 KiB (checked by the service, never
    echoed)."""


class RecordingFromRun(Body):
    """`POST /api/v1/recordings/from-run/{run_id}`."""

    recording_id: Any = Field(...)
    """The new recording's id (`^[A-Za-z0-9_.-]{1,64}$`, no `..`)."""
    arm_id: Any = "candidate"
    """The arm of the run whose first answers and calls it holds (default `candidate`)."""


class UploadRecording(Body):
    """`POST /api/v1/recordings`."""

    recording_id: Any = None
    """The recording's id (`^[A-Za-z0-9_.-]{1,64}$`, no `..`); default `rec-<sha256 prefix>` of the
    content."""
    content: Any = Field(...)
    """The JSONL text: one `{"case_id"?, "input"?, "answer", ...}` object per line (checked by the
    service)."""


class ReviewDecision(Body):
    verdict: Literal["pass", "fail"]
    """The person's verdict on the answer: it stands for the scorers' over every try of its
    case."""
    note: str | None = Field(None, max_length=4000)
    """Why, in the reviewer's words (kept redacted; may become a judge criterion)."""


class SendToReview(Body):
    side: Literal["candidate", "baseline"] = "candidate"
    """Whose failed first answers to send: the candidate's or the baseline's."""


class ReviewCriterion(Body):
    """The body of `POST /api/v1/datasets/{dataset_id}/review/{item_id}/criterion`."""

    tags: list[Annotated[str, Field(min_length=1, max_length=200)]] = Field(max_length=50)
    """The case tags the decision's note grades as a judge criterion (at least one)."""
    criterion_id: str | None = Field(None, pattern=CRITERION_ID_PATTERN)
    """An id of the caller's choosing; `note_` and a hash of the text and tags when absent."""


class UsageReport(Body):
    """The body of `POST /api/v1/usage/runs` (docs/reference/usage.md)."""

    runs: list[Any] = Field(...)
    """Production runs, at most 500: each `{key, agent_id, version?, model?, cost_usd,
    input_tokens?, output_tokens?, asked?}`, counted once per `key` (checked by the service)."""
