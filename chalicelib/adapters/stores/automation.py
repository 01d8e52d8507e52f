"""Environments, suites and their results, promotions, notifications (seed 004)."""

from __future__ import annotations

from pynamodb.exceptions import (
    DeleteError,
    DoesNotExist,
    PutError,
    TransactWriteError,
)

from chalicelib.adapters.stores.base import (
    TX,
    condition_failed,
    conditional_update,
    record_of,
    row_of,
    save_new,
    unless_condition_failed,
)
from chalicelib.adapters.tables import (
    EnvironmentRow,
    NotificationRow,
    PromotionRow,
    SuiteResultRow,
    SuiteRow,
    org_key,
)
from chalicelib.domain.records import Environment
from chalicelib.errors import NotFoundError

# --- environments, suites, promotions, notifications -----------------------------------------


class EnvironmentStore:
    """Environments of an organization and the versions they serve (port `ports.catalog.Environments`)."""

    def create(self, environment: Environment) -> None:
        """Raises ConflictError when the id is taken in the organization."""
        save_new(row_of(environment, EnvironmentRow), EnvironmentRow.environment_id.does_not_exist(),
                 f"environment {environment.environment_id} already exists", field="environment_id")

    def get(self, org_id: str, environment_id: str, *, field: str = "environment_id") -> Environment:
        """Raises NotFoundError (naming `field`) for an unknown environment."""
        try:
            return record_of(EnvironmentRow.get(org_id, environment_id, consistent_read=True), Environment)
        except DoesNotExist:
            raise NotFoundError(f"environment {environment_id} not found", field=field) from None

    def list(self, org_id: str) -> list[Environment]:
        return [record_of(row, Environment) for row in EnvironmentRow.query(org_id, consistent_read=True)]

    def serve(self, org_id: str, environment_id: str, agent_id: str, version: int, *,
              expect: int | None) -> bool:
        """Serve `version` of an agent, conditional on the version served as read (`expect`)."""
        env = self.get(org_id, environment_id)
        if (env.serving or {}).get(agent_id) != expect:
            return False
        return conditional_update(EnvironmentRow(org_id, environment_id),
                                  [EnvironmentRow.serving.set({**(env.serving or {}), agent_id: version})],
                                  EnvironmentRow.serving == env.serving)

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
        save_new(row, SuiteRow.suite_id.does_not_exist(),
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
        return conditional_update(SuiteRow(row.agent_key, row.suite_id), [*actions, SuiteRow.updated_at.set(stamp)],
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
            unless_condition_failed(exc)
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
            with TX.write() as t:
                t.save(lock, condition=PromotionRow.promotion_id.does_not_exist())
                t.save(row, condition=PromotionRow.promotion_id.does_not_exist())
            return True
        except TransactWriteError as exc:
            unless_condition_failed(exc)
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
        return conditional_update(PromotionRow(row.agent_key, row.promotion_id), actions,
                                   (PromotionRow.status == "waiting") & (PromotionRow.guards == row.guards))


class NotificationStore:
    def add(self, row: NotificationRow) -> None:
        row.save()

    def of(self, recipient: str, limit: int = 100) -> list[NotificationRow]:
        return list(NotificationRow.query(recipient, scan_index_forward=False, limit=limit))

    def mark_read(self, recipient: str, notification_id: str) -> bool:
        return conditional_update(NotificationRow(recipient, notification_id), [NotificationRow.read.set(True)],
                                   NotificationRow.notification_id.exists())

    def set_emailed(self, recipient: str, notification_id: str) -> None:
        NotificationRow(recipient, notification_id).update(actions=[NotificationRow.emailed.set(True)])
