"""Stores: the services' ports (`chalicelib.services.ports`) on DynamoDB. Every PynamoDB call of
assay lives in this package.

Stores take and return the frozen records of `chalicelib.domain.records`; no PynamoDB row,
attribute or expression reaches the services. A change is a record `replace`d by another, written
as the fields that differ, conditional on what was read; cross-worker decisions are conditional
writes (docs/architecture/index.md, exactly-once.md, slots.md), retried through
`chalicelib.retrying.change`. No `scan` anywhere: reads go through keys or GSIs.

Tenancy: every read and write names the organization. The stores build the composite keys
(`tables.org_key`: `<org_id>#<id>...`) from the plain `org_id` and ids the services give or the
row carries, so an id names one thing within its organization only, and one organization's id
can never reach another's row.
"""

from chalicelib.adapters.stores.automation import (
    EnvironmentStore,
    NotificationStore,
    PromotionStore,
    SuiteStore,
)
from chalicelib.adapters.stores.base import (
    CONDITION_FAILED,
    WAITING,
    Transactions,
    condition_failed,
    error_code,
    reset_connections,
    transaction_condition_failed,
)
from chalicelib.adapters.stores.catalog import (
    AgentStore,
    EvaluationStore,
    JudgeStore,
    ModelProfileStore,
)
from chalicelib.adapters.stores.datasets import DatasetStore
from chalicelib.adapters.stores.ledger import RecordConflict, RecordOutcome, RunStore
from chalicelib.adapters.stores.tenants import (
    OrganizationStore,
    SpendStore,
)
from chalicelib.domain.records import (
    BudgetReading,  # kept here for modules not moved to records yet
)

__all__ = [
    "AgentStore",
    "BudgetReading",
    "CONDITION_FAILED",
    "DatasetStore",
    "EnvironmentStore",
    "EvaluationStore",
    "JudgeStore",
    "ModelProfileStore",
    "NotificationStore",
    "OrganizationStore",
    "PromotionStore",
    "RecordConflict",
    "RecordOutcome",
    "RunStore",
    "SpendStore",
    "SuiteStore",
    "Transactions",
    "WAITING",
    "condition_failed",
    "error_code",
    "reset_connections",
    "transaction_condition_failed",
]
