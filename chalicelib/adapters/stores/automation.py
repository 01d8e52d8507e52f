"""Environments, suites and their results, promotions, notifications (docs/guides/suites.md)."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from pynamodb.exceptions import (
    DeleteError,
    DoesNotExist,
    PutError,
    TransactWriteError,
)

import chalicelib.adapters.stores.suite_names as suite_names
from chalicelib.adapters.stores.base import (
    TX,
    agent_live,
    changes,
    check_agent_live,
    check_dataset_live,
    condition_failed,
    conditional_update,
    dataset_live,
    delete_found,
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
from chalicelib.domain.enums import PromotionStatus
from chalicelib.domain.records import (
    Environment,
    Notification,
    Promotion,
    Suite,
    SuiteResultEntry,
)
from chalicelib.domain.suite_rules import name_key, name_taken
from chalicelib.errors import ConflictError, NotFoundError

# --- environments, suites, promotions, notifications -----------------------------------------


class EnvironmentStore:
    """Environments of an organization and the versions they serve (port
    `ports.catalog.Environments`)."""

    def create(self, environment: Environment) -> None:
        """Raises ConflictError when the id is taken in the organization."""
        save_new(
            row_of(environment, EnvironmentRow),
            EnvironmentRow.environment_id.does_not_exist(),
            f"environment {environment.environment_id} already exists",
            field="environment_id",
        )

    def get(
        self, org_id: str, environment_id: str, *, field: str = "environment_id"
    ) -> Environment:
        """Raises NotFoundError (naming `field`) for an unknown environment."""
        try:
            return record_of(
                EnvironmentRow.get(org_id, environment_id, consistent_read=True), Environment
            )
        except DoesNotExist:
            raise NotFoundError(f"environment {environment_id} not found", field=field) from None

    def list(self, org_id: str) -> list[Environment]:
        return [
            record_of(row, Environment)
            for row in EnvironmentRow.query(org_id, consistent_read=True)
        ]

    def serve(
        self, org_id: str, environment_id: str, agent_id: str, version: int, *, expect: int | None
    ) -> bool:
        """Serve `version` of an agent, conditional on the version served as read (`expect`)."""
        env = self.get(org_id, environment_id)
        if (env.serving or {}).get(agent_id) != expect:
            return False
        return conditional_update(
            EnvironmentRow(org_id, environment_id),
            [EnvironmentRow.serving.set({**(env.serving or {}), agent_id: version})],
            EnvironmentRow.serving == env.serving,
        )

    def stop_serving(self, org_id: str, environment_id: str, agent_id: str) -> bool:
        """Take the agent out of the environment's `serving` map, conditional on the map as read,
        read again while another write wins it; False when it served no version of the agent (or
        the environment is gone).

        Raises:
            ConflictError: (field `environment_id`) the map kept changing (10 lost writes).
        """
        for _ in range(10):
            try:
                env = self.get(org_id, environment_id)
            except NotFoundError:
                return False
            serving = dict(env.serving or {})
            if agent_id not in serving:
                return False
            del serving[agent_id]
            if conditional_update(
                EnvironmentRow(org_id, environment_id),
                [EnvironmentRow.serving.set(serving)],
                EnvironmentRow.serving == env.serving,
            ):
                return True
        raise ConflictError(
            f"environment {environment_id} keeps changing: try again", field="environment_id"
        )

    def set_test_connections(
        self, org_id: str, environment_id: str, test_connections: dict[str, str]
    ) -> Environment:
        """Replace the environment's `{connection_id: test_connection_id}` map; the environment
        as it now is.

        Raises:
            NotFoundError: (field `environment_id`) the environment does not exist.
        """
        if not conditional_update(
            EnvironmentRow(org_id, environment_id),
            [EnvironmentRow.test_connections.set(test_connections)],
            EnvironmentRow.environment_id.exists(),
        ):
            raise NotFoundError(f"environment {environment_id} not found", field="environment_id")
        return self.get(org_id, environment_id)

    def delete(self, org_id: str, environment_id: str) -> None:
        EnvironmentRow(org_id, environment_id).delete()


FLAG = "1"
"""Value of a suite's sparse index flags (`fire_flag`, `due_flag`) while it is in the index."""
SUITE_KEYS = ("suite_id", "org_id", "agent_id")
RESULT_KEYS = ("suite_id", "org_id", "agent_id", "started_key", "result_id")
PROMOTION_KEYS = ("promotion_id", "org_id", "agent_id")
SETTINGS_ID = "#settings"
"""The notification-table item of a person's preferences (`emailed` = email on); it sorts before
every notice (`n<ms>...`) and is never listed as one."""


def _flags(next_fire_at_ms: int | None, due_at_ms: int | None) -> dict[str, str | None]:
    """A suite's sparse index flags: in the fire index while it has a next fire, in the due index
    while the tick should look at it."""
    return {
        "fire_flag": FLAG if next_fire_at_ms is not None else None,
        "due_flag": FLAG if due_at_ms is not None else None,
    }


class SuiteStore:
    """Suites and their results (port `ports.automation.Suites`). Every change of a suite is a
    conditional write on its `updated_at` stamp as read; a suite's name is claimed in the same
    write (`stores.suite_names`)."""

    TRIES = 3
    """Writes of one save that find a stale name reservation and take it over."""

    def create(self, suite: Suite) -> None:
        """Keep a new suite, checking in the same write that its agent and dataset exist and are
        not being deleted, and claiming its name (unless blank) among the agent's suites.

        Raises:
            ConflictError: the agent has a suite with that id in the organization (`suite_id`),
                or another suite of that name (`name`, `domain.suite_rules.name_key`).
            NotFoundError: its agent (`agent_id`) or dataset (`dataset_id`) is gone or being
                deleted.
        """
        row = row_of(
            suite,
            SuiteRow,
            agent_key=org_key(suite.org_id, suite.agent_id),
            **_flags(suite.next_fire_at_ms, suite.due_at_ms),
        )
        key = name_key(suite.name)
        stale: str | None = None
        for _ in range(self.TRIES):
            try:
                with TX.write() as t:
                    check_agent_live(t, suite.org_id, suite.agent_id)
                    check_dataset_live(t, suite.org_id, suite.dataset_id)
                    t.save(row, condition=SuiteRow.suite_id.does_not_exist())
                    if key:
                        suite_names.reserve(
                            t, suite.org_id, suite.agent_id, suite.suite_id, key, stale=stale
                        )
                return
            except TransactWriteError as exc:
                unless_condition_failed(exc)
                if not agent_live(suite.org_id, suite.agent_id):
                    raise NotFoundError(
                        f"agent {suite.agent_id} not found", field="agent_id"
                    ) from exc
                if not dataset_live(suite.org_id, suite.dataset_id):
                    raise NotFoundError(
                        f"dataset {suite.dataset_id} not found", field="dataset_id"
                    ) from exc
                if suite_names.failed_at(exc, 2) or not (key and suite_names.failed_at(exc, 3)):
                    raise ConflictError(
                        f"suite {suite.suite_id} already exists", field="suite_id"
                    ) from exc
                stale = self._stale_holder(suite, key)
        raise suite_names.contested(suite.name)

    @staticmethod
    def _stale_holder(suite: Suite, key: str) -> str | None:
        """After `suite`'s claim of the name `key` failed: the holder it may take the name from
        (None: nobody holds it now).

        Raises:
            ConflictError: (field `name`) another suite of the agent holds the name.
        """
        holder = suite_names.holder(suite.org_id, suite.agent_id, key)
        if holder is None:
            return None
        kept = suite_names.held_name(suite.org_id, suite.agent_id, holder, key)
        if kept is not None:
            raise name_taken(kept, holder)  # its name as kept, not this save's spelling
        return holder

    def get(self, org_id: str, agent_id: str, suite_id: str) -> Suite | None:
        if suite_names.is_name_item(suite_id):
            return None
        try:
            row = SuiteRow.get(org_key(org_id, agent_id), suite_id, consistent_read=True)
        except DoesNotExist:
            return None
        return record_of(row, Suite)

    def of_agent(self, org_id: str, agent_id: str) -> list[Suite]:
        rows = SuiteRow.query(org_key(org_id, agent_id), consistent_read=True)
        return [record_of(row, Suite) for row in rows if not suite_names.is_name_item(row.suite_id)]

    def of_org(self, org_id: str) -> list[Suite]:
        return [record_of(row, Suite) for row in SuiteRow.org_index.query(org_id)]

    def replace(self, before: Suite, after: Suite) -> bool:
        """Raises ValueError when `after` keeps `before`'s stamp: the write would not tell later
        writers that it happened. A rename (another `name_key`) moves the name's reservation in
        the same transaction: ConflictError (field `name`) when another suite of the agent holds
        the new name."""
        if after.updated_at == before.updated_at:
            raise ValueError(f"suite {after.suite_id}: a change needs a new updated_at stamp")
        actions = changes(SuiteRow, before, after, fixed=SUITE_KEYS)
        flags = _flags(after.next_fire_at_ms, after.due_at_ms)
        for name, moved in (
            ("fire_flag", after.next_fire_at_ms != before.next_fire_at_ms),
            ("due_flag", after.due_at_ms != before.due_at_ms),
        ):
            if moved:
                flag = getattr(SuiteRow, name)
                actions.append(flag.remove() if flags[name] is None else flag.set(flags[name]))
        row = SuiteRow(org_key(before.org_id, before.agent_id), before.suite_id)
        as_read = SuiteRow.updated_at == before.updated_at
        old_key, new_key = name_key(before.name), name_key(after.name)
        if old_key == new_key:
            return conditional_update(row, actions, as_read)
        return self._rename(row, actions, as_read, before, after)

    def _rename(
        self, row: SuiteRow, actions: list, as_read: Any, before: Suite, after: Suite
    ) -> bool:
        """`replace` of a suite whose name key changes: the suite's update, the claim of its new
        name (unless blank) and the release of its old one (when it holds it: a suite saved
        before names were unique holds none), in one transaction."""
        org_id, agent_id, suite_id = before.org_id, before.agent_id, before.suite_id
        old_key, new_key = name_key(before.name), name_key(after.name)
        stale: str | None = None
        for _ in range(self.TRIES):
            holds_old = bool(old_key) and suite_names.holder(org_id, agent_id, old_key) == suite_id
            try:
                with TX.write() as t:
                    t.update(row, actions=actions, condition=as_read)
                    if new_key:
                        suite_names.reserve(t, org_id, agent_id, suite_id, new_key, stale=stale)
                    if holds_old:
                        suite_names.release(t, org_id, agent_id, suite_id, old_key)
                return True
            except TransactWriteError as exc:
                unless_condition_failed(exc)
                # PynamoDB sends a transaction's items by kind, deletes before updates: the
                # release (when there is one) comes first, then the suite, then the claim.
                suite_at = 1 if holds_old else 0
                if suite_names.failed_at(exc, suite_at):
                    return False  # changed since read (or gone): the caller reads it again
                if new_key and suite_names.failed_at(exc, suite_at + 1):
                    stale = self._stale_holder(after, new_key)
                # else the old name changed hands since read: read it again
        raise suite_names.contested(after.name)

    def delete(self, org_id: str, agent_id: str, suite_id: str) -> None:
        """Forget the suite and free its name (in one transaction, when its reservation is its
        own)."""
        if suite_names.is_name_item(suite_id):
            return
        row = SuiteRow(org_key(org_id, agent_id), suite_id)
        found = self.get(org_id, agent_id, suite_id)
        key = name_key(found.name) if found is not None else ""
        if key and suite_names.holder(org_id, agent_id, key) == suite_id:
            try:
                with TX.write() as t:
                    t.delete(row)
                    suite_names.release(t, org_id, agent_id, suite_id, key)
                return
            except TransactWriteError as exc:
                unless_condition_failed(exc)  # the name changed hands meanwhile: not ours to free
        row.delete()

    def due_to_fire(self, now_ms: int) -> list[Suite]:
        rows = SuiteRow.fire_index.query(FLAG, SuiteRow.next_fire_at_ms <= now_ms)
        return [record_of(row, Suite) for row in rows]

    def due_to_start(self, now_ms: int) -> list[Suite]:
        rows = SuiteRow.due_index.query(FLAG, SuiteRow.due_at_ms <= now_ms)
        return [record_of(row, Suite) for row in rows]

    def add_result(self, result: SuiteResultEntry) -> bool:
        row = row_of(
            result,
            SuiteResultRow,
            suite_key=org_key(result.org_id, result.agent_id, result.suite_id),
        )
        try:
            row.save(condition=SuiteResultRow.started_key.does_not_exist())
            return True
        except PutError as exc:
            unless_condition_failed(exc)
            return False

    def results(
        self, org_id: str, agent_id: str, suite_id: str, limit: int = 100
    ) -> list[SuiteResultEntry]:
        rows = SuiteResultRow.query(
            org_key(org_id, agent_id, suite_id), scan_index_forward=False, limit=limit
        )
        return [record_of(row, SuiteResultEntry) for row in rows]

    def result_of_run(
        self, org_id: str, agent_id: str, suite_id: str, run_id: str
    ) -> SuiteResultEntry | None:
        newest = self.results(org_id, agent_id, suite_id, 200)
        return next((r for r in newest if r.run_id == run_id), None)

    def replace_result(self, before: SuiteResultEntry, after: SuiteResultEntry) -> bool:
        """One conditional update of the result's item: its `result` as read, and its `stale` as
        read (absent when None)."""
        actions = changes(SuiteResultRow, before, after, fixed=RESULT_KEYS)
        stale = (
            SuiteResultRow.stale.does_not_exist()
            if before.stale is None
            else SuiteResultRow.stale == before.stale
        )
        row = SuiteResultRow(
            org_key(before.org_id, before.agent_id, before.suite_id), before.started_key
        )
        if not actions:  # nothing to write: whether the result is still as read
            actions = [SuiteResultRow.result.set(before.result)]
        return conditional_update(row, actions, (SuiteResultRow.result == before.result) & stale)

    def delete_results(self, org_id: str, agent_id: str, suite_id: str) -> None:
        delete_found(
            SuiteResultRow.query(
                org_key(org_id, agent_id, suite_id), attributes_to_get=["suite_key", "started_key"]
            ),
            SuiteResultRow,
        )


class PromotionStore:
    """Promotions, and one lock item per (agent, environment) while a promotion onto it waits
    (port `ports.automation.Promotions`). The lock is an item of the promotions table with the id
    `lock#<environment_id>` whose `reason` names the promotion holding it."""

    @staticmethod
    def _lock_id(environment_id: str) -> str:
        return f"lock#{environment_id}"

    def create_waiting(self, promotion: Promotion) -> bool:
        key = org_key(promotion.org_id, promotion.agent_id)
        row = row_of(promotion, PromotionRow, agent_key=key)
        lock = PromotionRow(
            key,
            self._lock_id(promotion.environment_id),
            org_id=promotion.org_id,
            agent_id=promotion.agent_id,
            environment_id=promotion.environment_id,
            version=promotion.version,
            status="lock",
            reason=promotion.promotion_id,
            created_at=promotion.created_at,
        )
        try:
            with TX.write() as t:
                check_agent_live(t, promotion.org_id, promotion.agent_id)
                t.save(lock, condition=PromotionRow.promotion_id.does_not_exist())
                t.save(row, condition=PromotionRow.promotion_id.does_not_exist())
            return True
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            if not agent_live(promotion.org_id, promotion.agent_id):
                raise NotFoundError(
                    f"agent {promotion.agent_id} not found", field="agent_id"
                ) from exc
            return False

    def delete_of_agent(self, org_id: str, agent_id: str) -> int:
        """Delete every promotion of the agent and every lock it holds (a query of its key);
        returns how many items."""
        return delete_found(
            PromotionRow.query(
                org_key(org_id, agent_id), attributes_to_get=["agent_key", "promotion_id"]
            ),
            PromotionRow,
        )

    def lock_holder(self, org_id: str, agent_id: str, environment_id: str) -> str | None:
        try:
            lock = PromotionRow.get(
                org_key(org_id, agent_id), self._lock_id(environment_id), consistent_read=True
            )
        except DoesNotExist:
            return None
        return lock.reason

    def release_lock(self, promotion: Promotion) -> None:
        lock = PromotionRow(
            org_key(promotion.org_id, promotion.agent_id), self._lock_id(promotion.environment_id)
        )
        try:
            lock.delete(condition=PromotionRow.reason == promotion.promotion_id)
        except DeleteError as exc:
            if not condition_failed(exc):  # a lock already gone (or another's) is fine
                raise

    def get(self, org_id: str, agent_id: str, promotion_id: str) -> Promotion | None:
        try:
            row = PromotionRow.get(org_key(org_id, agent_id), promotion_id, consistent_read=True)
        except DoesNotExist:
            return None
        return record_of(row, Promotion)

    def of_agent(self, org_id: str, agent_id: str, limit: int = 100) -> list[Promotion]:
        rows = PromotionRow.query(
            org_key(org_id, agent_id),
            PromotionRow.promotion_id.startswith("p"),  # not the locks
            scan_index_forward=False,
            limit=limit,
        )
        return [record_of(row, Promotion) for row in rows]

    def decide(self, before: Promotion, after: Promotion) -> bool:
        still_waiting = (PromotionRow.status == PromotionStatus.WAITING.value) & (
            PromotionRow.guards == before.guards
        )
        row = PromotionRow(org_key(before.org_id, before.agent_id), before.promotion_id)
        return conditional_update(
            row, changes(PromotionRow, before, after, fixed=PROMOTION_KEYS), still_waiting
        )


class NotificationStore:
    """Each person's notices, keyed `<org_id>#<user_id>` (port `ports.automation.Notifications`);
    the person's preferences are one more item of theirs (`SETTINGS_ID`)."""

    def add(self, user_id: str, notice: Notification) -> None:
        row_of(notice, NotificationRow, recipient=org_key(notice.org_id, user_id)).save()

    def of(self, org_id: str, user_id: str, limit: int = 100) -> list[Notification]:
        rows = NotificationRow.query(
            org_key(org_id, user_id), scan_index_forward=False, limit=limit
        )
        return [record_of(row, Notification) for row in rows if row.notification_id != SETTINGS_ID]

    def mark_read(self, org_id: str, user_id: str, notification_id: str) -> bool:
        if notification_id == SETTINGS_ID:
            return False
        return conditional_update(
            NotificationRow(org_key(org_id, user_id), notification_id),
            [NotificationRow.read.set(True)],
            NotificationRow.notification_id.exists(),
        )

    def mark_emailed(self, org_id: str, user_id: str, notification_id: str) -> None:
        NotificationRow(org_key(org_id, user_id), notification_id).update(
            actions=[NotificationRow.emailed.set(True)]
        )

    def email_preference(self, org_id: str, user_id: str) -> bool | None:
        try:
            row = NotificationRow.get(org_key(org_id, user_id), SETTINGS_ID, consistent_read=True)
        except DoesNotExist:
            return None
        return bool(row.emailed)

    def delete_matching(
        self, org_id: str, user_id: str, matches: Callable[[Notification], bool]
    ) -> int:
        """Delete the person's notices `matches` keeps (every one read: a query of their key,
        page by page; their settings are no notice); returns how many."""
        rows = NotificationRow.query(org_key(org_id, user_id))
        return delete_found(
            (
                row
                for row in rows
                if row.notification_id != SETTINGS_ID and matches(record_of(row, Notification))
            ),
            NotificationRow,
        )

    def set_email_preference(self, org_id: str, user_id: str, on: bool, *, at: str) -> None:
        NotificationRow(
            org_key(org_id, user_id),
            SETTINGS_ID,
            org_id=org_id,
            kind="settings",
            title="settings",
            emailed=on,
            created_at=at,
        ).save()
