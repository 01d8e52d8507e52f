"""Stores: the services' view of DynamoDB. Every PynamoDB call of assay lives here.

Rows are returned as PynamoDB model instances for reading only; services never save, update
or query them directly. Cross-worker decisions are conditional writes (DESIGN §1, §5, §6).
No `scan` anywhere: reads go through keys or GSIs.

Tenancy: every read and write names the organization. The stores build the composite keys
(`tables.org_key`: `<org_id>#<id>...`) from the plain `org_id` and ids the services give or the
row carries, so an id names one thing within its organization only, and one organization's id
can never reach another's row.
"""

from __future__ import annotations

import builtins
import logging
import threading
from collections import OrderedDict
from collections.abc import Iterator, Sequence
from dataclasses import dataclass
from typing import Any

from pynamodb.connection import Connection
from pynamodb.exceptions import (
    DeleteError,
    DoesNotExist,
    PutError,
    PynamoDBException,
    TransactWriteError,
    UpdateError,
)
from pynamodb.expressions.condition import Condition, size
from pynamodb.expressions.update import Action
from pynamodb.transactions import TransactWrite

from chalicelib.adapters.tables import (
    AgentRow,
    AgentVersionRow,
    AttemptRow,
    DatasetCaseRow,
    DatasetRow,
    EnvironmentRow,
    JudgeRow,
    ModelProfileRow,
    NotificationRow,
    OrganizationRow,
    PromotionRow,
    RunRow,
    SpendRow,
    SuiteResultRow,
    SuiteRow,
    org_key,
)
from chalicelib.domain.enums import RunStatus
from chalicelib.errors import ConflictError, NotFoundError

log = logging.getLogger(__name__)

WAITING = "1"
"""Value of `waiting_flag` on organizations that have runs waiting for a slot."""


def _reason_codes(exc: TransactWriteError) -> list[str | None]:
    codes: list[str | None] = []
    for reason in exc.cancellation_reasons or []:
        code = getattr(reason, "code", None) if reason is not None else None
        codes.append(None if code in (None, "None") else code)
    return codes


CONDITION_FAILED = "ConditionalCheckFailedException"
"""AWS's error code of a put or update whose condition did not hold."""


def error_code(exc: PynamoDBException) -> str | None:
    """AWS's error code behind a PynamoDB error (None when it never reached AWS)."""
    response = getattr(getattr(exc, "cause", None), "response", None)
    return response.get("Error", {}).get("Code") if isinstance(response, dict) else None


def condition_failed(exc: PutError | UpdateError | DeleteError) -> bool:
    """Whether a write failed on its condition - told by AWS's error code, so a throttle, a
    validation error or a bug is never taken for "somebody else won"."""
    return error_code(exc) == CONDITION_FAILED


def transaction_condition_failed(exc: TransactWriteError) -> bool:
    """Whether a transaction was cancelled only because conditions of its items did not hold
    (each cancellation reason `ConditionalCheckFailed` or `None`, at least one of the first)."""
    codes = [code for code in _reason_codes(exc) if code is not None]
    return error_code(exc) == "TransactionCanceledException" and bool(codes) \
        and all(code == "ConditionalCheckFailed" for code in codes)


def _unless_condition_failed(exc: PutError | UpdateError | TransactWriteError) -> None:
    """Re-raise `exc` unless it is a failed condition (call inside its `except`)."""
    failed = transaction_condition_failed(exc) if isinstance(exc, TransactWriteError) else condition_failed(exc)
    if not failed:
        raise exc


def _save_new(row: Any, condition: Any, conflict: str, *, field: str) -> None:
    """`row.save(condition)` for an item that must not exist yet.

    Raises:
        ConflictError: (`conflict`, naming `field`) when the condition did not hold.
        PutError: any other failure (a throttle is not a taken id).
    """
    try:
        row.save(condition=condition)
    except PutError as exc:
        _unless_condition_failed(exc)
        raise ConflictError(conflict, field=field) from exc


def _conditional_update(row: Any, actions: list, condition: Any = None) -> bool:
    """`row.update(actions, condition)`; False when the condition failed (anything else raises)."""
    try:
        row.update(actions=actions, condition=condition)
        return True
    except UpdateError as exc:
        _unless_condition_failed(exc)
        return False


class Transactions:
    """Builds `TransactWrite` blocks on one connection to the configured endpoint."""

    def __init__(self) -> None:
        self._connection: Connection | None = None

    def reset(self) -> None:
        self._connection = None

    def _conn(self) -> Connection:
        if self._connection is None:
            self._connection = Connection(region=RunRow.Meta.region, host=getattr(RunRow.Meta, "host", None))
        return self._connection

    def write(self) -> TransactWrite:
        return TransactWrite(connection=self._conn())

    def batch_get(self, request_items: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """One `BatchGetItem` over several tables (retrying unprocessed keys); raw items per table."""
        found: dict[str, list[dict[str, Any]]] = {name: [] for name in request_items}
        pending = request_items
        for _ in range(10):
            reply = self._conn().dispatch("BatchGetItem", {"RequestItems": pending})
            for name, items in reply.get("Responses", {}).items():
                found[name].extend(items)
            pending = reply.get("UnprocessedKeys") or {}
            if not pending:
                return found
        raise RuntimeError("BatchGetItem left keys unprocessed after 10 tries")


# --- organizations ---------------------------------------------------------------------------


class OrganizationStore:
    """Organizations: slot counter `in_flight`, concurrency limit, waiting runs (DESIGN §6)."""

    def get(self, org_id: str) -> OrganizationRow | None:
        try:
            return OrganizationRow.get(org_id, consistent_read=True)
        except DoesNotExist:
            return None

    def ensure(self, org_id: str, *, concurrency_limit: int, now_iso: str) -> OrganizationRow:
        """The organization row, created on first use with `concurrency_limit` slots."""
        row = self.get(org_id)
        if row is not None:
            return row
        row = OrganizationRow(org_id, concurrency_limit=concurrency_limit, in_flight=0,
                              waiting=[], created_at=now_iso)
        try:
            row.save(condition=OrganizationRow.org_id.does_not_exist())
        except PutError as exc:
            _unless_condition_failed(exc)
            pass
        return self.get(org_id)  # type: ignore[return-value]

    def add_waiting(self, org_id: str, run_id: str, now_ms: int) -> None:
        """Put a run at the end of the organization's waiting line."""
        row = OrganizationRow(org_id)
        row.update(actions=[
            OrganizationRow.waiting.set(OrganizationRow.waiting.append([run_id])),
            OrganizationRow.waiting_flag.set(WAITING),
            OrganizationRow.waiting_since_ms.set(OrganizationRow.waiting_since_ms | now_ms),
        ])

    def remove_waiting(self, org_id: str, run_id: str) -> None:
        """Take a run out of the waiting line (conditional on the position read; retried)."""
        for _ in range(5):
            org = self.get(org_id)
            if org is None or run_id not in (org.waiting or []):
                return
            pos = list(org.waiting).index(run_id)   # type: ignore[arg-type]  # pynamodb types a list's items as their Attribute class
            actions: list[Action] = [OrganizationRow.waiting[pos].remove()]
            if len(org.waiting) == 1:
                actions += [OrganizationRow.waiting_flag.remove(), OrganizationRow.waiting_since_ms.remove()]
            try:
                OrganizationRow(org_id).update(
                    actions=actions, condition=OrganizationRow.waiting[pos] == run_id)
                return
            except UpdateError as exc:
                _unless_condition_failed(exc)
                continue

    def orgs_with_waiting_runs(self) -> Iterator[OrganizationRow]:
        """Organizations with a waiting run (sparse GSI, eventually consistent)."""
        return OrganizationRow.waiting_index.query(WAITING)

    def set_default_environment(self, org_id: str, environment_id: str | None, *, only_if_unset: bool = False) -> bool:
        """Name the organization's default environment (None: none). With `only_if_unset`, only when
        it names none yet; False when that condition failed."""
        action = OrganizationRow.default_environment_id.set(environment_id) if environment_id is not None \
            else OrganizationRow.default_environment_id.remove()
        return _conditional_update(
            OrganizationRow(org_id), [action],
            OrganizationRow.default_environment_id.does_not_exist() if only_if_unset else None)

    def set_limit(self, org_id: str, limit: int) -> None:
        OrganizationRow(org_id).update(actions=[OrganizationRow.concurrency_limit.set(limit)])


# --- budgets and spend -----------------------------------------------------------------------


@dataclass(frozen=True)
class BudgetReading:
    """Monthly budgets (None: no budget) and this month's spend, in micro-USD."""

    org_budget_micros: int | None
    org_spent_micros: int
    agent_budget_micros: int | None
    agent_spent_micros: int


class SpendStore:
    """Monthly budgets (on the organization and agent rows) and spend counters (`spend` table)."""

    def read(self, org_id: str, agent_id: str | None, month: str) -> BudgetReading:
        """Both budgets and both month counters in ONE `BatchGetItem` (strongly consistent): the
        check before every model request must cost one request, not four. Without `agent_id`
        only the organization's are read."""
        return self._read(org_id, agent_id, month, None)[1]

    def read_with_run(self, org_id: str, run_id: str, agent_id: str, month: str) -> tuple[RunRow | None, BudgetReading]:
        """A run (consistent) and its budgets in the same single `BatchGetItem`: a case task's first
        read and its first budget check in one request."""
        return self._read(org_id, agent_id, month, run_id)

    @staticmethod
    def month_keys(org_id: str, agent_id: str | None, month: str) -> tuple[str, str | None]:
        """The `spend` keys of the organization's month and of its agent's (None without an agent)."""
        return org_key(org_id, "org", month), (org_key(org_id, "agent", agent_id, month) if agent_id else None)

    def _read(self, org_id: str, agent_id: str | None, month: str,
              run_id: str | None) -> tuple[RunRow | None, BudgetReading]:
        org_month, agent_month = self.month_keys(org_id, agent_id, month)
        budget = {"ConsistentRead": True, "ProjectionExpression": "monthly_budget_micros"}
        items: dict[str, Any] = {
            OrganizationRow.Meta.table_name: {"Keys": [{"org_id": {"S": org_id}}], **budget},
            SpendRow.Meta.table_name: {"Keys": [{"key": {"S": org_month}}], "ConsistentRead": True}}
        if agent_id:
            items[AgentRow.Meta.table_name] = {
                "Keys": [{"org_id": {"S": org_id}, "agent_id": {"S": agent_id}}], **budget}
            items[SpendRow.Meta.table_name]["Keys"].append({"key": {"S": agent_month}})
        if run_id:
            items[RunRow.Meta.table_name] = {"Keys": [{"run_key": {"S": org_key(org_id, run_id)}}],
                                             "ConsistentRead": True}
        found = _TX.batch_get(items)

        def budget_of(table: str) -> int | None:
            rows = found.get(table) or []
            raw = rows[0].get("monthly_budget_micros") if rows else None
            return int(raw["N"]) if raw and "N" in raw else None

        spent = {item["key"]["S"]: int(item.get("spent_micros", {}).get("N", 0))
                 for item in found[SpendRow.Meta.table_name]}
        runs = found.get(RunRow.Meta.table_name) or []
        return (RunRow.from_raw_data(runs[0]) if runs else None,
                BudgetReading(budget_of(OrganizationRow.Meta.table_name), spent.get(org_month, 0),
                              budget_of(AgentRow.Meta.table_name), spent.get(agent_month or "", 0)))

    def charge(self, org_id: str, agent_id: str, month: str, micros: int, *, judge: bool) -> None:
        """Add one model request's real cost to the organization's and the agent's month.

        Plain `ADD` updates, outside any transaction: a counter every worker of the organization
        touches would make transactions conflict, and the money is spent whether or not the
        attempt is recorded later.
        """
        for key in self.month_keys(org_id, agent_id, month):
            actions: list[Action] = [SpendRow.spent_micros.add(micros), SpendRow.requests.add(1)]
            if judge:
                actions.append(SpendRow.judge_micros.add(micros))
            SpendRow(key).update(actions=actions)

    def set_org_budget(self, org_id: str, micros: int | None) -> None:
        """Set (None: remove) an organization's monthly budget. The row must exist."""
        action = OrganizationRow.monthly_budget_micros.remove() if micros is None \
            else OrganizationRow.monthly_budget_micros.set(micros)
        OrganizationRow(org_id).update(actions=[action])

    def set_agent_budget(self, org_id: str, agent_id: str, micros: int | None) -> None:
        """Set (None: remove) an agent's monthly budget. Raises NotFoundError for an unknown agent."""
        action = AgentRow.monthly_budget_micros.remove() if micros is None \
            else AgentRow.monthly_budget_micros.set(micros)
        if not _conditional_update(AgentRow(org_id, agent_id), [action], AgentRow.agent_id.exists()):
            raise NotFoundError(f"agent {agent_id} not found", field="agent_id")


# --- judges ----------------------------------------------------------------------------------


class JudgeStore:
    """Judges: a header row (version 0) and immutable published versions."""

    def create(self, header: JudgeRow) -> None:
        """Write a judge header (its key built from `org_id` and `judge_id`).

        Raises ConflictError when the id is taken in the organization.
        """
        header.judge_key = org_key(header.org_id, header.judge_id)
        _save_new(header, JudgeRow.judge_key.does_not_exist(),
                  f"judge {header.judge_id} already exists", field="judge_id")

    def get(self, org_id: str, judge_id: str, version: int = 0, *, field: str = "judge_id") -> JudgeRow:
        """The header (version 0) or a published version. Raises NotFoundError (naming `field`) for
        an unknown judge or version of the organization."""
        try:
            return JudgeRow.get(org_key(org_id, judge_id), version, consistent_read=True)
        except DoesNotExist:
            what = f"judge {judge_id}" if version == 0 else f"version {version} of judge {judge_id}"
            raise NotFoundError(f"{what} not found", field=field) from None

    def versions(self, org_id: str, judge_id: str) -> list[JudgeRow]:
        """The organization's judge's published versions, oldest first."""
        return list(JudgeRow.query(org_key(org_id, judge_id), JudgeRow.version > 0))

    def publish(self, header: JudgeRow, row: JudgeRow) -> bool:
        """Write version `row.version` and move the header's latest to it, in one transaction.

        Returns False when another publish took that number first (the caller reads again).
        """
        row.judge_key = org_key(row.org_id, row.judge_id)
        try:
            with _TX.write() as t:
                t.save(row, condition=JudgeRow.version.does_not_exist())
                t.update(JudgeRow(header.judge_key, 0), actions=[JudgeRow.latest_version.set(row.version)],
                         condition=JudgeRow.latest_version == int(header.latest_version or 0))
            return True
        except TransactWriteError as exc:
            _unless_condition_failed(exc)
            return False


# --- environments, suites, promotions, notifications -----------------------------------------


class EnvironmentStore:
    """Environments of an organization and the versions they serve."""

    def create(self, row: EnvironmentRow) -> None:
        """Raises ConflictError when the id is taken in the organization."""
        _save_new(row, EnvironmentRow.environment_id.does_not_exist(),
                  f"environment {row.environment_id} already exists", field="environment_id")

    def get(self, org_id: str, environment_id: str, *, field: str = "environment_id") -> EnvironmentRow:
        """Raises NotFoundError for an unknown environment."""
        try:
            return EnvironmentRow.get(org_id, environment_id, consistent_read=True)
        except DoesNotExist:
            raise NotFoundError(f"environment {environment_id} not found", field=field) from None

    def list(self, org_id: str) -> list[EnvironmentRow]:
        return list(EnvironmentRow.query(org_id, consistent_read=True))

    def serve(self, org_id: str, environment_id: str, agent_id: str, version: int, *,
              expect: int | None) -> bool:
        """Serve `version` of an agent, conditional on the version served as read (`expect`)."""
        row = self.get(org_id, environment_id)
        if (row.serving or {}).get(agent_id) != expect:
            return False
        try:
            EnvironmentRow(org_id, environment_id).update(
                actions=[EnvironmentRow.serving.set({**(row.serving or {}), agent_id: version})],
                condition=EnvironmentRow.serving == row.serving)
            return True
        except UpdateError as exc:
            _unless_condition_failed(exc)
            return False

    def delete(self, org_id: str, environment_id: str) -> None:
        EnvironmentRow(org_id, environment_id).delete()


class SuiteStore:
    """Suites and their results. Every change of a suite's waiting triggers or active run is a
    conditional write on what was read (`updated_at` is the suite's version stamp)."""

    def create(self, row: SuiteRow) -> None:
        """Write a new suite (its key built from `org_id` and `agent_id`).

        Raises ConflictError when the agent has a suite with that id in the organization.
        """
        row.agent_key = org_key(row.org_id, row.agent_id)
        _save_new(row, SuiteRow.suite_id.does_not_exist(),
                  f"suite {row.suite_id} already exists", field="suite_id")

    def get(self, org_id: str, agent_id: str, suite_id: str) -> SuiteRow | None:
        """The organization's agent's suite, or None."""
        try:
            return SuiteRow.get(org_key(org_id, agent_id), suite_id, consistent_read=True)
        except DoesNotExist:
            return None

    def of_agent(self, org_id: str, agent_id: str) -> list[SuiteRow]:
        """Every suite of the organization's agent."""
        return list(SuiteRow.query(org_key(org_id, agent_id), consistent_read=True))

    def of_org(self, org_id: str) -> list[SuiteRow]:
        return list(SuiteRow.org_index.query(org_id))

    def update(self, row: SuiteRow, actions: list, *, stamp: str) -> bool:
        """Apply `actions` and a new `updated_at` stamp if the suite is as read; False otherwise."""
        return _conditional_update(SuiteRow(row.agent_key, row.suite_id), [*actions, SuiteRow.updated_at.set(stamp)],
                                   SuiteRow.updated_at == row.updated_at)

    def delete(self, row: SuiteRow) -> None:
        SuiteRow(row.agent_key, row.suite_id).delete()

    def due_to_fire(self, now_ms: int) -> list[SuiteRow]:
        """Suites whose schedule is due (sparse GSI, eventually consistent: the claim re-checks)."""
        return list(SuiteRow.fire_index.query("1", SuiteRow.next_fire_at_ms <= now_ms))

    def due_to_start(self, now_ms: int) -> list[SuiteRow]:
        """Suites with a waiting trigger that is due."""
        return list(SuiteRow.due_index.query("1", SuiteRow.due_at_ms <= now_ms))

    def add_result(self, row: SuiteResultRow) -> bool:
        """Keep a result once (False when it was kept already: a run has one result); its key is
        built from the row's `org_id`, `agent_id` and `suite_id`."""
        row.suite_key = org_key(row.org_id, row.agent_id, row.suite_id)
        try:
            row.save(condition=SuiteResultRow.started_key.does_not_exist())
            return True
        except PutError as exc:
            _unless_condition_failed(exc)
            return False

    def results(self, org_id: str, agent_id: str, suite_id: str, limit: int = 100) -> list[SuiteResultRow]:
        """The results of the organization's agent's suite, newest first."""
        return list(SuiteResultRow.query(org_key(org_id, agent_id, suite_id), scan_index_forward=False,
                                         limit=limit))

    def result_of_run(self, org_id: str, agent_id: str, suite_id: str, run_id: str) -> SuiteResultRow | None:
        return next((r for r in self.results(org_id, agent_id, suite_id, 200) if r.run_id == run_id), None)

    def delete_results(self, org_id: str, agent_id: str, suite_id: str) -> None:
        """Delete every result of the organization's agent's suite (no other suite's)."""
        with SuiteResultRow.batch_write() as batch:
            for r in SuiteResultRow.query(org_key(org_id, agent_id, suite_id),
                                          attributes_to_get=["suite_key", "started_key"]):
                batch.delete(r)


class PromotionStore:
    """Promotions, and one lock row per (agent, environment) while a promotion onto it waits."""

    @staticmethod
    def lock_id(environment_id: str) -> str:
        return f"lock#{environment_id}"

    def create_waiting(self, row: PromotionRow) -> bool:
        """Write a promotion and take its environment's lock in one transaction; False when another
        promotion of the agent onto that environment holds the lock. Keys are built from the row's
        `org_id` and `agent_id`."""
        row.agent_key = org_key(row.org_id, row.agent_id)
        lock = PromotionRow(row.agent_key, self.lock_id(row.environment_id), org_id=row.org_id, agent_id=row.agent_id,
                            environment_id=row.environment_id, version=row.version, status="lock",
                            reason=row.promotion_id, created_at=row.created_at)
        try:
            with _TX.write() as t:
                t.save(lock, condition=PromotionRow.promotion_id.does_not_exist())
                t.save(row, condition=PromotionRow.promotion_id.does_not_exist())
            return True
        except TransactWriteError as exc:
            _unless_condition_failed(exc)
            return False

    def unlock(self, row: PromotionRow) -> None:
        """Give the environment's lock back (only if this promotion holds it)."""
        try:
            PromotionRow(row.agent_key, self.lock_id(row.environment_id)).delete(
                condition=PromotionRow.reason == row.promotion_id)
        except DeleteError as exc:
            if not condition_failed(exc):   # a lock already gone (or another's) is fine
                raise

    def holder(self, org_id: str, agent_id: str, environment_id: str) -> str | None:
        """The promotion holding the lock of an environment, if any."""
        row = self.get(org_id, agent_id, self.lock_id(environment_id))
        return row.reason if row is not None else None

    def get(self, org_id: str, agent_id: str, promotion_id: str) -> PromotionRow | None:
        """The organization's agent's promotion, or None."""
        try:
            return PromotionRow.get(org_key(org_id, agent_id), promotion_id, consistent_read=True)
        except DoesNotExist:
            return None

    def of_agent(self, org_id: str, agent_id: str, limit: int = 100) -> list[PromotionRow]:
        """The organization's agent's promotions, newest first (lock rows left out)."""
        rows = PromotionRow.query(org_key(org_id, agent_id), PromotionRow.promotion_id.startswith("p"),
                                  scan_index_forward=False, limit=limit)
        return list(rows)

    def decide(self, row: PromotionRow, actions: list) -> bool:
        """Update a waiting promotion (conditional on it still waiting as read)."""
        return _conditional_update(PromotionRow(row.agent_key, row.promotion_id), actions,
                                   (PromotionRow.status == "waiting") & (PromotionRow.guards == row.guards))


class NotificationStore:
    def add(self, row: NotificationRow) -> None:
        row.save()

    def of(self, recipient: str, limit: int = 100) -> list[NotificationRow]:
        return list(NotificationRow.query(recipient, scan_index_forward=False, limit=limit))

    def mark_read(self, recipient: str, notification_id: str) -> bool:
        return _conditional_update(NotificationRow(recipient, notification_id), [NotificationRow.read.set(True)],
                                   NotificationRow.notification_id.exists())

    def set_emailed(self, recipient: str, notification_id: str) -> None:
        NotificationRow(recipient, notification_id).update(actions=[NotificationRow.emailed.set(True)])


# --- agents ----------------------------------------------------------------------------------


class AgentStore:
    """Agents (draft edited in place) and their immutable versions."""

    def create(self, row: AgentRow) -> None:
        """Raises ConflictError when the id is taken in the organization (another's is no concern)."""
        _save_new(row, AgentRow.agent_id.does_not_exist(),
                  f"agent {row.agent_id} already exists", field="agent_id")

    def get(self, org_id: str, agent_id: str) -> AgentRow:
        """Raises NotFoundError for an agent the organization does not have."""
        try:
            return AgentRow.get(org_id, agent_id, consistent_read=True)
        except DoesNotExist:
            raise NotFoundError(f"agent {agent_id} not found", field="agent_id") from None

    def list(self, org_id: str) -> list[AgentRow]:
        return list(AgentRow.query(org_id))

    def update_draft(self, org_id: str, agent_id: str, spec: dict[str, Any], spec_hash: str,
                     now_iso: str, name: str | None = None) -> None:
        actions: list[Action] = [AgentRow.draft_spec.set(spec), AgentRow.draft_spec_hash.set(spec_hash),
                   AgentRow.draft_updated_at.set(now_iso)]
        if name is not None:
            actions.append(AgentRow.name.set(name))
        AgentRow(org_id, agent_id).update(actions=actions, condition=AgentRow.agent_id.exists())

    def get_version(self, org_id: str, agent_id: str, version: int) -> AgentVersionRow | None:
        """A published version of the organization's agent, or None."""
        try:
            return AgentVersionRow.get(org_key(org_id, agent_id), version, consistent_read=True)
        except DoesNotExist:
            return None

    def list_versions(self, org_id: str, agent_id: str) -> builtins.list[AgentVersionRow]:
        """The organization's agent's published versions, newest first."""
        return list(AgentVersionRow.query(org_key(org_id, agent_id), scan_index_forward=False))

    def publish(self, version_row: AgentVersionRow) -> bool:
        """Write a new immutable version and raise the agent's `latest_version`, atomically (the key
        is built from the row's `org_id` and `agent_id`).

        Returns False when the same version with the same spec hash exists already (a no-op).
        Raises:
            ConflictError: the version exists with another spec.
        """
        version_row.agent_key = org_key(version_row.org_id, version_row.agent_id)
        tx = _TX.write()
        with_agent = AgentRow(version_row.org_id, version_row.agent_id)
        try:
            with tx as t:
                t.save(version_row, condition=AgentVersionRow.version.does_not_exist())
                t.update(with_agent, actions=[
                    AgentRow.latest_version.set(version_row.version),
                    AgentRow.live_version.set(version_row.version),
                ], condition=AgentRow.agent_id.exists()
                    & (AgentRow.latest_version < version_row.version))
            return True
        except TransactWriteError as exc:
            codes = _reason_codes(exc)
            existing = self.get_version(version_row.org_id, version_row.agent_id, int(version_row.version))
            if existing is not None:
                if existing.spec_hash == version_row.spec_hash:
                    return False
                raise ConflictError(
                    f"version {version_row.version} of agent {version_row.agent_id} is already "
                    "published with another spec; versions are immutable", field="version") from exc
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                # An older version number than the latest: store it without moving `latest_version`.
                try:
                    version_row.save(condition=AgentVersionRow.version.does_not_exist())
                    return True
                except PutError as put_error:
                    _unless_condition_failed(put_error)
                    return self.publish(version_row)
            raise


# --- model profiles --------------------------------------------------------------------------


class ModelProfileStore:
    """Model profiles of an organization."""

    def create(self, row: ModelProfileRow) -> None:
        """Raises ConflictError when the id is taken in the organization."""
        _save_new(row, ModelProfileRow.model_profile_id.does_not_exist(),
                  f"model profile {row.model_profile_id} already exists", field="model_profile_id")

    def get(self, org_id: str, model_profile_id: str, *, field: str = "model_profile_id") -> ModelProfileRow:
        """Raises NotFoundError (naming `field`) for an unknown profile."""
        try:
            return ModelProfileRow.get(org_id, model_profile_id, consistent_read=True)
        except DoesNotExist:
            raise NotFoundError(f"model profile {model_profile_id} not found", field=field) from None

    def delete(self, org_id: str, model_profile_id: str) -> None:
        ModelProfileRow(org_id, model_profile_id).delete()

    def list(self, org_id: str) -> list[ModelProfileRow]:
        return list(ModelProfileRow.query(org_id))


# --- datasets --------------------------------------------------------------------------------


class DatasetStore:
    """Dataset headers (version 0), immutable versions and their cases.

    A dataset version never changes once written, so its cases are cached per process (a warm
    Lambda keeps them): a case attempt then reads no case from DynamoDB. The cache holds the
    `max_cached_versions` most recently used versions.
    """

    def __init__(self, max_cached_versions: int = 8) -> None:
        self._cases: OrderedDict[str, dict[str, dict[str, Any]]] = OrderedDict()
        self._max = max_cached_versions
        self._lock = threading.Lock()

    def create(self, header: DatasetRow) -> None:
        """Write a dataset header (its key built from `org_id` and `dataset_id`). Raises
        ConflictError when the organization has that id already."""
        header.dataset_key = org_key(header.org_id, header.dataset_id)
        _save_new(header, DatasetRow.dataset_key.does_not_exist(),
                  f"dataset {header.dataset_id} already exists", field="dataset_id")

    def get(self, org_id: str, dataset_id: str, version: int = 0) -> DatasetRow:
        """The header (version 0) or a ready version. Raises NotFoundError for a dataset or version
        the organization does not have."""
        try:
            row = DatasetRow.get(org_key(org_id, dataset_id), version, consistent_read=True)
        except DoesNotExist:
            what = f"dataset {dataset_id}" + (f" version {version}" if version else "")
            raise NotFoundError(f"{what} not found",
                                field="dataset_version" if version else "dataset_id") from None
        if version and row.ready is False:
            raise NotFoundError(f"dataset {dataset_id} version {version} is still being written",
                                field="dataset_version")
        return row

    def list(self, org_id: str) -> list[DatasetRow]:
        return [r for r in DatasetRow.org_index.query(org_id, scan_index_forward=False) if r.version == 0]

    def next_version(self, org_id: str, dataset_id: str) -> int:
        """One more than the highest version number claimed so far (written or being written)."""
        last = list(DatasetRow.query(org_key(org_id, dataset_id), scan_index_forward=False, limit=1))
        return int(last[0].version) + 1 if last else 1

    def add_version(self, header: DatasetRow, version_row: DatasetRow,
                    cases: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Claim the version number, write its cases, then mark it ready and move `latest_version`.

        The number is claimed first (a conditional put of the row, not yet `ready`), so two
        concurrent imports can never write cases under the same version; readers ignore a version
        until it is ready.
        Raises:
            ConflictError: the version number was taken meanwhile (nothing was written).
        """
        version_row.ready = False
        version_row.dataset_key = org_key(version_row.org_id, version_row.dataset_id)
        _save_new(version_row, DatasetRow.version.does_not_exist(),
                  "another version was added at the same time; retry", field="version")
        key = org_key(version_row.org_id, version_row.dataset_id, int(version_row.version))
        with DatasetCaseRow.batch_write() as batch:
            for case_id, case in cases:
                batch.save(DatasetCaseRow(key, case_id, case=case))
        version_row.update(actions=[DatasetRow.ready.set(True)])
        try:
            header.update(actions=[DatasetRow.latest_version.set(version_row.version)],
                          condition=DatasetRow.latest_version < version_row.version)
        except UpdateError as exc:
            _unless_condition_failed(exc)
            pass  # a later version became ready first: it stays the latest

    def _version_cases(self, org_id: str, dataset_id: str, version: int) -> dict[str, dict[str, Any]]:
        key = org_key(org_id, dataset_id, int(version))   # the cache is keyed as the table: by organization
        with self._lock:
            cases = self._cases.get(key)
            if cases is not None:
                self._cases.move_to_end(key)
                return cases
        cases = {r.case_id: r.case for r in DatasetCaseRow.query(key)}
        if cases:  # an absence (not written yet, or unknown) is never cached
            with self._lock:
                self._cases[key] = cases
                while len(self._cases) > self._max:
                    self._cases.popitem(last=False)
        return cases

    def get_case(self, org_id: str, dataset_id: str, version: int, case_id: str) -> dict[str, Any] | None:
        """One case of an immutable version of the organization's dataset (the whole version is
        loaded and cached on first use); None when there is no such case."""
        return self._version_cases(org_id, dataset_id, version).get(case_id)

    def cases(self, org_id: str, dataset_id: str, version: int) -> builtins.list[dict[str, Any]]:
        """Every case of an immutable version of the organization's dataset, by case id (cached like
        `get_case`)."""
        return list(self._version_cases(org_id, dataset_id, version).values())


# --- runs and attempts -----------------------------------------------------------------------


@dataclass(frozen=True, slots=True)
class RecordOutcome:
    """What `RunStore.record_attempt` did: `written` False means the attempt existed already."""

    written: bool


class RecordConflict(Exception):
    """The run row changed since it was read (another worker claimed or released): read, retry."""


class RunStore:
    """Eval runs, their attempts, and the conditional writes that move them (DESIGN §5-§7)."""

    # -- runs

    def create(self, row: RunRow) -> None:
        """Write a new run; its keys (`run_key`, `agent_key`, `dataset_key`) are built from its
        `org_id`, `run_id`, `agent_id` and `dataset_id`."""
        row.run_key = org_key(row.org_id, row.run_id)
        row.agent_key = org_key(row.org_id, row.agent_id)
        row.dataset_key = org_key(row.org_id, row.dataset_id)
        row.save(condition=RunRow.run_key.does_not_exist())

    def get(self, org_id: str, run_id: str) -> RunRow | None:
        """The organization's run (consistent), or None."""
        try:
            return RunRow.get(org_key(org_id, run_id), consistent_read=True)
        except DoesNotExist:
            return None

    CURSOR_ATTRIBUTES = ("run_id", "status", "phase", "next_index", "tasks_total", "slots", "tasks",
                         "recorded", "expected", "heartbeat_at_ms")
    """What changes on a run while it runs; the rest (arms, case ids, scoring) is fixed at start."""

    def refresh(self, run: RunRow) -> RunRow | None:
        """`run` with its changing attributes read again (consistent, projected: a small read).

        Returns a new row object; None when the run was deleted.
        """
        try:
            fresh = RunRow.get(run.run_key, consistent_read=True, attributes_to_get=list(self.CURSOR_ATTRIBUTES))
        except DoesNotExist:
            return None
        merged = RunRow.from_raw_data(run.serialize())
        for name in self.CURSOR_ATTRIBUTES:
            setattr(merged, name, getattr(fresh, name))
        return merged

    def get_for_org(self, org_id: str, run_id: str) -> RunRow:
        """Raises NotFoundError for a run the organization does not have."""
        row = self.get(org_id, run_id)
        if row is None:
            raise NotFoundError(f"eval run {run_id} not found", field="run_id")
        return row

    def list_by_agent(self, org_id: str, agent_id: str, limit: int = 50, start: dict | None = None):
        """The organization's agent's runs, newest first, a page at a time (`start`: the previous
        page's `last_evaluated_key`, keys `run_key`, `agent_key`, `created_at`)."""
        return RunRow.agent_index.query(org_key(org_id, agent_id), scan_index_forward=False, limit=limit,
                                        last_evaluated_key=start)

    def list_by_org(self, org_id: str, limit: int = 50, start: dict | None = None):
        """The organization's runs, newest first (`start` keys: `run_key`, `org_id`, `created_at`)."""
        return RunRow.org_index.query(org_id, scan_index_forward=False, limit=limit,
                                      last_evaluated_key=start)

    def list_by_dataset(self, org_id: str, dataset_id: str, limit: int = 50, start: dict | None = None):
        """The organization's dataset's runs, newest first (`start` keys: `run_key`, `dataset_key`,
        `created_at`)."""
        return RunRow.dataset_index.query(org_key(org_id, dataset_id), scan_index_forward=False, limit=limit,
                                          last_evaluated_key=start)

    @staticmethod
    def is_page_start(start: Any, org_id: str, *, agent_id: str | None = None,
                      dataset_id: str | None = None) -> bool:
        """Whether `start` is a `last_evaluated_key` of this organization's listing: of the agent's
        runs (`agent_id`), the dataset's (`dataset_id`) or else all of them. Exactly the keys
        `run_key` (a run of the organization), the index's hash key (its value for this listing)
        and `created_at`, each `{"S": str}`."""
        if agent_id is not None:
            hash_name, hash_value = "agent_key", org_key(org_id, agent_id)
        elif dataset_id is not None:
            hash_name, hash_value = "dataset_key", org_key(org_id, dataset_id)
        else:
            hash_name, hash_value = "org_id", org_id
        return (isinstance(start, dict) and set(start) == {"run_key", hash_name, "created_at"}
                and all(isinstance(v, dict) and set(v) == {"S"} and isinstance(v["S"], str) for v in start.values())
                and start[hash_name]["S"] == hash_value
                and start["run_key"]["S"].startswith(org_key(org_id, "")))

    def recent_active(self, org_id: str, limit: int) -> list[RunRow]:
        """The organization's queued or running runs among its newest `limit` (projected: only what
        their committed spend needs)."""
        rows = RunRow.org_index.query(org_id, scan_index_forward=False, limit=limit, attributes_to_get=[
            "run_key", "run_id", "org_id", "agent_id", "created_at", "status", "settings", "cost_micros", "judge_cost_micros",
            "environment_id", "arms"])
        return [r for r in rows if r.status in (RunStatus.QUEUED.value, RunStatus.RUNNING.value)]

    def stale(self, status: RunStatus, before_ms: int) -> Iterator[RunRow]:
        """Runs in `status` whose heartbeat is at or before `before_ms` (GSI; the sweep re-checks)."""
        return RunRow.status_index.query(status.value, RunRow.heartbeat_at_ms <= before_ms)

    def claim_tasks(self, run: RunRow, k: int, org_id: str, org_limit: int,
                    now_ms: int, now_iso: str) -> bool:
        """Claim the run's next `k` tasks and `k` organization slots in one transaction.

        Conditional on the run's `next_index` as read and on the organization having `k` free
        slots; returns False when either moved (the caller reads again).
        """
        actions: list[Action] = [RunRow.next_index.set(run.next_index + k), RunRow.slots.add(k),
                   RunRow.heartbeat_at_ms.set(now_ms)]
        if run.status == RunStatus.QUEUED:
            actions += [RunRow.status.set(RunStatus.RUNNING.value), RunRow.started_at.set(now_iso)]
        try:
            with _TX.write() as t:
                t.update(RunRow(run.run_key), actions=actions,
                         condition=(RunRow.next_index == run.next_index)
                         & RunRow.status.is_in(RunStatus.QUEUED.value, RunStatus.RUNNING.value)
                         & (RunRow.tasks_total >= run.next_index + k))
                t.update(OrganizationRow(org_id), actions=[OrganizationRow.in_flight.add(k)],
                         condition=OrganizationRow.in_flight <= org_limit - k)
            return True
        except TransactWriteError as exc:
            _unless_condition_failed(exc)
            return False

    def record_attempt(self, run: RunRow, attempt: AttemptRow, *, counters: dict[str, int],
                       claim_next: bool, release_slot: bool, now_ms: int) -> RecordOutcome:
        """Write one attempt once, with the run's counters, in ONE transaction (DESIGN §5).

        Args:
            run: the run as read; its `next_index` guards a claim.
            attempt: the row to put (`attribute_not_exists`; its `run_key` is the run's); `successor`
                set when claiming.
            counters: run attributes to ADD (`recorded`, `passed`, `cost_micros`, ...).
            claim_next: also take the run's next task (`next_index` + 1, conditional on the value read
                and on the run still running): the slot passes to that task.
            release_slot: no task to pass the slot to: give it back to the run and organization
                (conditional on the run still holding one, so a swept run is never released twice).
        Returns:
            RecordOutcome(written=False) when the attempt existed already (a redelivery).
        Raises:
            RecordConflict: the run moved since it was read; read it again and retry.
        """
        actions = [getattr(RunRow, name).add(value) for name, value in counters.items() if value]
        actions.append(RunRow.heartbeat_at_ms.set(now_ms))
        condition = None
        if claim_next:
            actions.append(RunRow.next_index.set(run.next_index + 1))
            condition = (RunRow.next_index == run.next_index) & (RunRow.status == RunStatus.RUNNING.value)
        elif release_slot:
            actions.append(RunRow.slots.add(-1))
            condition = RunRow.slots > 0
        attempt.run_key, attempt.run_id = run.run_key, run.run_id
        try:
            with _TX.write() as t:
                t.save(attempt, condition=AttemptRow.attempt_key.does_not_exist())
                t.update(RunRow(run.run_key), actions=actions, condition=condition)
                if release_slot and not claim_next:
                    t.update(OrganizationRow(run.org_id), actions=[OrganizationRow.in_flight.add(-1)],
                             condition=OrganizationRow.in_flight > 0)
            return RecordOutcome(written=True)
        except TransactWriteError as exc:
            codes = _reason_codes(exc)
            if codes and codes[0] == "ConditionalCheckFailed":
                return RecordOutcome(written=False)
            if any(c == "ConditionalCheckFailed" for c in codes[1:]) or any(
                    c == "TransactionConflict" for c in codes):
                raise RecordConflict(str(codes)) from exc
            raise

    def set_phase(self, org_id: str, run_id: str, *, expect_phase: str, expect_recorded: int,
                  actions: list, ) -> bool:
        """Move a run's phase; exactly one caller wins (conditional on phase and `recorded`)."""
        try:
            RunRow(org_key(org_id, run_id)).update(actions=actions,
                                  condition=(RunRow.phase == expect_phase)
                                  & (RunRow.recorded == expect_recorded))
            return True
        except UpdateError as exc:
            _unless_condition_failed(exc)
            return False

    def update(self, org_id: str, run_id: str, actions: list, condition=None) -> bool:
        """A conditional update of the organization's run; False when the condition failed."""
        return _conditional_update(RunRow(org_key(org_id, run_id)), actions, condition)

    def end_and_release(self, run: RunRow, *, status: RunStatus, reason: str, now_iso: str,
                        condition) -> bool:
        """End a run and give all its slots back to the organization in one transaction.

        `condition` is checked on the run (e.g. its heartbeat and progress as read by the sweep).
        """
        try:
            with _TX.write() as t:
                t.update(RunRow(run.run_key), actions=[
                    RunRow.status.set(status.value), RunRow.reason.set(reason),
                    RunRow.completed_at.set(now_iso), RunRow.slots.set(0)],
                    condition=condition & (RunRow.slots == run.slots))
                if run.slots:
                    t.update(OrganizationRow(run.org_id),
                             actions=[OrganizationRow.in_flight.add(-run.slots)],
                             condition=OrganizationRow.in_flight >= run.slots)
            return True
        except TransactWriteError as exc:
            _unless_condition_failed(exc)
            return False

    def delete(self, org_id: str, run_id: str) -> None:
        """Delete the organization's run and every attempt it kept."""
        key = org_key(org_id, run_id)
        with AttemptRow.batch_write() as batch:
            for row in AttemptRow.query(key, attributes_to_get=["run_key", "attempt_key"]):
                batch.delete(row)
        RunRow(key).delete()

    # -- attempts

    def get_attempt(self, org_id: str, run_id: str, key: str) -> AttemptRow | None:
        try:
            return AttemptRow.get(org_key(org_id, run_id), key, consistent_read=True)
        except DoesNotExist:
            return None

    def attempt_exists(self, org_id: str, run_id: str, key: str) -> bool:
        try:
            AttemptRow.get(org_key(org_id, run_id), key, consistent_read=True, attributes_to_get=["attempt_key"])
            return True
        except DoesNotExist:
            return False

    def attempts(self, org_id: str, run_id: str) -> list[AttemptRow]:
        """Every attempt of the organization's run (consistent)."""
        return list(AttemptRow.query(org_key(org_id, run_id), consistent_read=True))

    def attempt_keys(self, org_id: str, run_id: str) -> set[str]:
        return {r.attempt_key for r in AttemptRow.query(org_key(org_id, run_id), consistent_read=True,
                                                        attributes_to_get=["attempt_key"])}

    def attempts_after(self, org_id: str, run_id: str, cursor: str, limit: int, *,
                       until: str | None = None) -> list[AttemptRow]:
        """Attempts with `cursor < recorded_key <= until`, in recorded order.

        An empty `cursor` means from the first attempt; `until` None means no upper bound.
        """
        condition: Condition | None
        if cursor and until:
            condition = AttemptRow.recorded_key.between(cursor, until)
        elif cursor:
            condition = AttemptRow.recorded_key > cursor
        elif until:
            condition = AttemptRow.recorded_key <= until
        else:
            condition = None
        rows = AttemptRow.order_index.query(org_key(org_id, run_id), condition, limit=limit + 1,
                                            consistent_read=True)
        return [r for r in rows if r.recorded_key != cursor][:limit]

    def regrade_attempt(self, row: AttemptRow, *, state: str, scores: list[dict[str, Any]], reason: str,
                        judge_cost_micros: int, judge_calls: int, entry: dict[str, Any]) -> bool:
        """Replace an attempt's grade (grading again) and move the run's counters with it, in one
        transaction conditional on the grade as read; False when somebody regraded it meanwhile."""
        seen = len(row.regraded or [])
        condition = (AttemptRow.state == row.state) & (
            AttemptRow.regraded.does_not_exist() if row.regraded is None else size(AttemptRow.regraded) == seen)
        run_actions: list[Action] = [RunRow.judge_cost_micros.add(judge_cost_micros), RunRow.judge_calls.add(judge_calls),
                                     RunRow.regrades.add(1)]
        if state != row.state:
            run_actions += [getattr(RunRow, row.state).add(-1), getattr(RunRow, state).add(1)]
        try:
            with _TX.write() as t:
                t.update(AttemptRow(row.run_key, row.attempt_key), condition=condition, actions=[
                    AttemptRow.state.set(state), AttemptRow.scores.set(scores), AttemptRow.reason.set(reason),
                    AttemptRow.judge_cost_micros.add(judge_cost_micros), AttemptRow.judge_calls.add(judge_calls),
                    AttemptRow.regraded.set((AttemptRow.regraded | []).append([entry]))])
                t.update(RunRow(row.run_key), actions=run_actions)
            return True
        except TransactWriteError as exc:
            if any(code == "ConditionalCheckFailed" for code in _reason_codes(exc)):
                return False
            raise

    def add_judge_cost(self, org_id: str, run_id: str, micros: int, calls: int) -> None:
        """Count judge requests whose grades were not kept (the money was spent all the same)."""
        if micros or calls:
            RunRow(org_key(org_id, run_id)).update(actions=[RunRow.judge_cost_micros.add(micros),
                                                            RunRow.judge_calls.add(calls)])

    def put_attempt_once(self, run: RunRow, attempt: AttemptRow) -> bool:
        """Write an attempt of `run` unless one exists (the sweep's failed attempts); True if written."""
        attempt.run_key, attempt.run_id = run.run_key, run.run_id
        try:
            attempt.save(condition=AttemptRow.attempt_key.does_not_exist())
            return True
        except PutError as exc:
            _unless_condition_failed(exc)
            return False


_TX = Transactions()


def reset_connections() -> None:
    """Forget cached connections (after `tables.configure` points at another endpoint)."""
    _TX.reset()
