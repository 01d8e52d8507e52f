"""Table model of agent runs (docs/reference/usage.md, docs/architecture/tables.md): every run of
an agent in production, as an eval case or as the judge grading one (every key holds the
organization, see `tables`)."""

from __future__ import annotations

from pynamodb.attributes import (
    BooleanAttribute,
    JSONAttribute,
    NumberAttribute,
    UnicodeAttribute,
)
from pynamodb.indexes import AllProjection, GlobalSecondaryIndex

from chalicelib.adapters.table_base import TableBase as _Base


class AgentSurfaceIndex(GlobalSecondaryIndex):
    """One agent's runs of one surface, newest last (`started_key`)."""

    ORG_KEY = "surface_key"

    class Meta:
        index_name = "agent_surface"
        projection = AllProjection()

    surface_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<agent_id>#<surface>`."""
    started_key = UnicodeAttribute(range_key=True)
    """`<started_ms, 13 digits>#<agent_run_id>`: time order, ties broken by id."""


class OrgSurfaceIndex(GlobalSecondaryIndex):
    """One organization's runs of one surface across its agents, newest last (Activity)."""

    ORG_KEY = "org_surface_key"

    class Meta:
        index_name = "org_surface"
        projection = AllProjection()

    org_surface_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<surface>`."""
    started_key = UnicodeAttribute(range_key=True)


class AgentRunRow(_Base):
    """One agent run (`domain.agent_runs.AgentRun`); its id is derived from what it answered (an
    eval run's attempt, a production report's key), so it is written once."""

    ORG_KEY = "run_key"

    class Meta(_Base.Meta):
        table_name = "agent_runs"

    run_key = UnicodeAttribute(hash_key=True)
    """`<org_id>#<agent_run_id>`."""
    agent_run_id = UnicodeAttribute()
    org_id = UnicodeAttribute()
    agent_id = UnicodeAttribute()
    surface = UnicodeAttribute()
    surface_key = UnicodeAttribute()
    org_surface_key = UnicodeAttribute()
    started_key = UnicodeAttribute()
    started_at = UnicodeAttribute()
    started_ms = NumberAttribute()
    version = NumberAttribute(null=True)
    draft = BooleanAttribute(default=False)
    model = UnicodeAttribute(null=True)
    status = UnicodeAttribute(default="completed")
    asked = UnicodeAttribute(null=True)
    request = JSONAttribute(null=True)
    cost_micros = NumberAttribute(default=0)
    input_tokens = NumberAttribute(default=0)
    output_tokens = NumberAttribute(default=0)
    latency_ms = NumberAttribute(default=0)
    ran_as = UnicodeAttribute(null=True)
    eval_case = JSONAttribute(null=True)
    """`{run_id, case_id, attempt, dataset_id, dataset_version}` of an eval or grader run."""
    key = UnicodeAttribute(null=True)
    agent_index = AgentSurfaceIndex()
    org_index = OrgSurfaceIndex()
