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

from collections.abc import Mapping
from typing import Any

from pynamodb.attributes import JSONAttribute, ListAttribute, NumberAttribute, UnicodeAttribute
from pynamodb.models import Model

from chalicelib.adapters.table_base import _CLIENTS as _CLIENTS
from chalicelib.adapters.table_base import KEY_SEPARATOR as KEY_SEPARATOR
from chalicelib.adapters.table_base import TableBase as _Base
from chalicelib.adapters.table_base import org_key as org_key
from chalicelib.adapters.table_base import share_client as share_client
from chalicelib.adapters.tables_catalog import AgentRow as AgentRow
from chalicelib.adapters.tables_catalog import AgentVersionRow as AgentVersionRow
from chalicelib.adapters.tables_catalog import ConnectionRow as ConnectionRow
from chalicelib.adapters.tables_catalog import DatasetCaseRow as DatasetCaseRow
from chalicelib.adapters.tables_catalog import DatasetOrgIndex as DatasetOrgIndex
from chalicelib.adapters.tables_catalog import DatasetRow as DatasetRow
from chalicelib.adapters.tables_catalog import EnvironmentRow as EnvironmentRow
from chalicelib.adapters.tables_catalog import EvaluationRow as EvaluationRow
from chalicelib.adapters.tables_catalog import JudgeRow as JudgeRow
from chalicelib.adapters.tables_catalog import ModelProfileRow as ModelProfileRow
from chalicelib.adapters.tables_catalog import NotificationRow as NotificationRow
from chalicelib.adapters.tables_catalog import OrganizationRow as OrganizationRow
from chalicelib.adapters.tables_catalog import PromotionRow as PromotionRow
from chalicelib.adapters.tables_catalog import SpendRow as SpendRow
from chalicelib.adapters.tables_catalog import SuiteDueIndex as SuiteDueIndex
from chalicelib.adapters.tables_catalog import SuiteFireIndex as SuiteFireIndex
from chalicelib.adapters.tables_catalog import SuiteOrgIndex as SuiteOrgIndex
from chalicelib.adapters.tables_catalog import SuiteResultRow as SuiteResultRow
from chalicelib.adapters.tables_catalog import SuiteRow as SuiteRow
from chalicelib.adapters.tables_catalog import WaitingIndex as WaitingIndex
from chalicelib.adapters.tables_review import ReviewAuditRow as ReviewAuditRow
from chalicelib.adapters.tables_review import ReviewItemRow as ReviewItemRow
from chalicelib.adapters.tables_runs import AgentHistoryRow as AgentHistoryRow
from chalicelib.adapters.tables_runs import AttemptOrderIndex as AttemptOrderIndex
from chalicelib.adapters.tables_runs import AttemptRow as AttemptRow
from chalicelib.adapters.tables_runs import LeaseRow as LeaseRow
from chalicelib.adapters.tables_runs import RunAgentIndex as RunAgentIndex
from chalicelib.adapters.tables_runs import RunDatasetIndex as RunDatasetIndex
from chalicelib.adapters.tables_runs import RunEvaluationIndex as RunEvaluationIndex
from chalicelib.adapters.tables_runs import RunEvaluationRunsIndex as RunEvaluationRunsIndex
from chalicelib.adapters.tables_runs import RunOrgIndex as RunOrgIndex
from chalicelib.adapters.tables_runs import RunRow as RunRow
from chalicelib.adapters.tables_runs import RunStatusIndex as RunStatusIndex
from chalicelib.adapters.tables_runs import ToolSessionRow as ToolSessionRow
from chalicelib.adapters.tables_runs import TrendDatasetIndex as TrendDatasetIndex
from chalicelib.adapters.tables_runs import TrendRow as TrendRow
from chalicelib.adapters.tables_usage import AgentRunRow as AgentRunRow
from chalicelib.adapters.tables_usage import AgentSurfaceIndex as AgentSurfaceIndex
from chalicelib.adapters.tables_usage import OrgSurfaceIndex as OrgSurfaceIndex

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
    ConnectionRow,
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
    ToolSessionRow,
    AgentHistoryRow,
    TrendRow,
    ReviewItemRow,
    ReviewAuditRow,
    AgentRunRow,
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
