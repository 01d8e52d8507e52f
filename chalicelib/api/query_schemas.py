"""Query parameters of the HTTP API's listings and reads (pydantic v2, `api.common.Query`): each
field's docstring is its description in the OpenAPI document; a value out of its range is a 400
naming the parameter. Request bodies are `api.schemas`."""

from __future__ import annotations

from typing import Annotated, Literal

from pydantic import Field

from chalicelib.api.common import MAX_PATH_ID_LENGTH, Query
from chalicelib.api.schemas import Ref

Cursor = Annotated[str, Field(max_length=4096)]
"""A listing's `next_cursor`, passed back as it was given (checked by the service)."""


class Page(Query):
    """`?limit=&cursor=` of a listing of runs."""

    limit: int = Field(50, ge=1, le=200)
    """Runs per page."""
    cursor: Cursor | None = None
    """The previous page's `next_cursor`; absent: the first page."""


class AgentRunsQuery(Page):
    """`GET /api/v1/agents/{agent_id}/eval-runs`."""

    draft: Literal["current", "earlier"] | None = None
    """Only runs of the draft as it stands now (`current`) or of earlier drafts (`earlier`)."""


class ChartQuery(Query):
    """`GET …/eval-runs/chart` (docs/guides/console.md)."""

    last: Literal["10", "30", "all"] = "10"
    """Which measured runs the chart shows: the last 10, the last 30 or every one."""


class ResultsQuery(Query):
    """`GET …/suites/{suite_id}/results`."""

    limit: int = Field(50, ge=1, le=200)
    """Results, newest first."""


class NotificationsQuery(Query):
    """`GET /api/v1/notifications`."""

    unread: Literal["true", "false"] | None = None
    """`true`: only notices not read yet."""


class ComparisonQuery(Query):
    """`GET /api/v1/eval-runs/{run_id}/comparison`."""

    arm_id: Ref | None = None
    """The candidate arm to compare (a run on several model profiles has one per profile)."""
    tag: str | None = Field(None, max_length=200)
    """Only the cases carrying this tag (the run's verdict stays over every case)."""


CaseFilter = Literal[
    "regression",
    "fixed",
    "unchanged",
    "incomplete",
    "not_compared",
    "changed",
    "passed",
    "failed",
    "ungraded",
]
"""A comparison outcome (`CaseOutcome`) or a settled state (`AttemptState`): the values `?outcome=`
filters on (a unit test keeps this list equal to the two enums)."""


class CasesQuery(Query):
    """`GET /api/v1/eval-runs/{run_id}/cases`."""

    limit: int = Field(50, ge=1, le=200)
    """Cases per page, in the run's order."""
    cursor: Cursor | None = None
    """The previous page's `next_cursor`; absent: the first page."""
    outcome: CaseFilter | None = None
    """Only cases with this comparison outcome, or settled in this state on some arm."""
    tag: str | None = Field(None, max_length=200)
    """Only cases carrying this tag."""
    arm_id: Ref | None = None
    """Only this arm's side of each case."""
    case_id: str | None = Field(None, max_length=MAX_PATH_ID_LENGTH)
    """Only this case."""


class DatasetCasesQuery(Query):
    """`GET /api/v1/datasets/{dataset_id}/versions/{version}/cases`."""

    limit: int = Field(100, ge=1, le=500)
    """Cases per page, by case id."""
    cursor: Cursor | None = None
    """The previous page's `next_cursor`; absent: the first page."""


class AnswerQuery(Query):
    """`GET /api/v1/eval-runs/{run_id}/answer`."""

    attempt_key: str = Field("", max_length=1024)
    """The attempt whose kept answer is read whole: `<arm_id>#<case_id>#<attempt, 3 digits>` (a
    query parameter: a `#` or `/` in a path segment is decoded differently by API Gateway and by
    Chalice's local server)."""


class EventsQuery(Query):
    """`GET /api/v1/eval-runs/{run_id}/events` (and `/api/evaluations/stream/{run_id}`)."""

    after: str = Field("", max_length=1024, pattern=r"^(\d{13}#.+)?$")
    """The `cursor` of the previous answer (`<13-digit ms>#<attempt key>`); empty: from the
    start."""
    wait: float | None = Field(None, ge=0, le=25)
    """Seconds to wait for an attempt when none is there yet (default `ASSAY_EVENTS_WAIT_SECONDS`,
    20)."""
    limit: int = Field(100, ge=1, le=1000)
    """Attempts per answer."""


class ReviewQuery(Query):
    """`GET /api/v1/datasets/{dataset_id}/review`."""

    state: Literal["waiting", "decided", "replaced"] | None = None
    """Only items in this state; absent: every item."""
    agent_id: Ref | None = None
    """Only answers of this agent."""
    tag: str | None = Field(None, min_length=1, max_length=200)
    """Only answers to cases carrying this tag."""
    limit: int = Field(50, ge=1, le=200)
    """Items per page, newest answer first."""
    cursor: Cursor | None = None
    """The previous page's `next_cursor`; absent: the first page."""


class UsageQuery(Query):
    """`GET /api/v1/usage`."""

    month: str | None = Field(None, max_length=7)
    """`YYYY-MM` (UTC); this month when absent."""


class AgentRunHistoryQuery(Query):
    """`GET /api/v1/agents/{agent_id}/runs` and `GET /api/v1/runs`."""

    surface: Literal["production", "eval", "grader"] | None = None
    """Only runs of this surface."""
    exclude_surface: Literal["production", "eval", "grader"] | None = None
    """Every surface but this one (`eval` leaves the eval traffic out)."""
    before: str | None = Field(None, max_length=60)
    """The `next` cursor of the page before."""
    limit: int | None = Field(None, ge=1, le=100)
    """Runs per page (100 at most, the default)."""
