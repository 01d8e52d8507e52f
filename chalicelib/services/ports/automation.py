"""Ports of what runs on its own: suites and their results, promotions, owner notices
(implemented by `chalicelib.adapters.stores.automation`; fakes in `tests/fakes/automation.py`).

A suite's every change is written conditional on its `updated_at` stamp as read (the time of the
change plus a nonce, so two changes in one millisecond differ): `replace(before, after)` is one
such write, `change(...)` reads, decides and writes again while another writer wins. A
promotion changes only while it waits, and is decided once.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Protocol

from chalicelib.domain.records import Notification, Promotion, Suite, SuiteResultEntry


class Suites(Protocol):
    """An organization's suites (by agent) and their results (docs/guides/suites.md).

    The sparse indexes the tick reads are the store's: a suite is due to fire while its
    `next_fire_at_ms` is set, due to start while its `due_at_ms` is set.
    """

    def create(self, suite: Suite) -> None:
        """Keep a new suite. Raises ConflictError (field `suite_id`) when the organization's agent
        has a suite of that id, ConflictError (field `name`) when it has another suite of that name
        (`domain.suite_rules.name_key`; a blank name is nobody's), NotFoundError (`agent_id`,
        `dataset_id`) when its agent or dataset is gone or being deleted. Of two creates of one
        name at once, one is kept and the other refused."""

    def get(self, org_id: str, agent_id: str, suite_id: str) -> Suite | None:
        """The organization's agent's suite, None when it has none of that id."""

    def of_agent(self, org_id: str, agent_id: str) -> list[Suite]:
        """Every suite of the organization's agent, by suite id."""

    def of_org(self, org_id: str) -> list[Suite]:
        """Every suite of the organization (read from an index: may lag a write by a moment)."""

    def replace(self, before: Suite, after: Suite) -> bool:
        """Write the fields of `after` that differ from `before` (None: removed), conditional on the
        stored suite's `updated_at` still being `before`'s. False when another writer changed it
        (or it is gone).

        A rename (`after.name` another name key than `before.name`) takes the new name in the same
        write and frees the old one.

        Raises:
            ValueError: `after` keeps `before`'s `updated_at` stamp or changes a key (a bug).
            ConflictError: (field `name`) another suite of the agent has `after`'s name.
        """

    def delete(self, org_id: str, agent_id: str, suite_id: str) -> None:
        """Forget the suite (not its results: `delete_results`) and free its name. Nothing when it
        is gone already."""

    def due_to_fire(self, now_ms: int) -> list[Suite]:
        """Every organization's suites whose schedule is due (`next_fire_at_ms` <= `now_ms`, epoch
        ms). Eventually consistent: a claim re-checks what it read."""

    def due_to_start(self, now_ms: int) -> list[Suite]:
        """Every organization's suites with a waiting trigger or a start that is due (`due_at_ms`
        <= `now_ms`, epoch ms). Eventually consistent."""

    def add_result(self, result: SuiteResultEntry) -> bool:
        """Keep a result once: False when one of its `started_key` was kept already."""

    def results(
        self, org_id: str, agent_id: str, suite_id: str, limit: int = 100
    ) -> list[SuiteResultEntry]:
        """The results of the organization's agent's suite, newest first, at most `limit`."""

    def result_of_run(
        self, org_id: str, agent_id: str, suite_id: str, run_id: str
    ) -> SuiteResultEntry | None:
        """The suite's result of an eval run, among its newest 200; None when it has none."""

    def replace_result(self, before: SuiteResultEntry, after: SuiteResultEntry) -> bool:
        """Write the fields of `after` that differ from `before` (None: removed), conditional on
        the stored result's `result` and `stale` still being `before`'s (absent where `before`'s
        is None). False when the condition failed: another writer changed the result, or it is
        gone. Never decides a promotion: a replaced result moves nothing by itself.

        Raises:
            ValueError: `after` changes a key (`suite_id`, `org_id`, `agent_id`, `started_key`,
                `result_id`): a bug.
        """

    def delete_results(self, org_id: str, agent_id: str, suite_id: str) -> None:
        """Forget every result of the organization's agent's suite (no other suite's)."""


class Promotions(Protocol):
    """An agent's promotions, and the lock each waiting one holds on its (agent, environment)."""

    def create_waiting(self, promotion: Promotion) -> bool:
        """Keep a new promotion and take the lock of its agent on its environment, both or neither.
        False when another promotion of the agent onto that environment holds the lock. Raises
        NotFoundError (field `agent_id`) when the agent is gone or being deleted."""

    def delete_of_agent(self, org_id: str, agent_id: str) -> int:
        """Delete every promotion of the agent and every lock it holds; returns how many items."""

    def lock_holder(self, org_id: str, agent_id: str, environment_id: str) -> str | None:
        """The id of the promotion holding the agent's lock on the environment, None when free."""

    def release_lock(self, promotion: Promotion) -> None:
        """Give the lock on the promotion's environment back, if this promotion holds it (a lock
        gone already, or another promotion's, is left as it is)."""

    def get(self, org_id: str, agent_id: str, promotion_id: str) -> Promotion | None:
        """The organization's agent's promotion, None when it has none of that id."""

    def of_agent(self, org_id: str, agent_id: str, limit: int = 100) -> list[Promotion]:
        """The organization's agent's promotions, newest first, at most `limit` (locks left out)."""

    def decide(self, before: Promotion, after: Promotion) -> bool:
        """Write what changed of a waiting promotion (a guard's result, its status, reason and time
        of decision), conditional on it still waiting with `before`'s guards: a promotion is decided
        once. False when it is decided or its guards changed since `before` was read.

        Raises:
            ValueError: `after` changes a key (a bug).
        """


class Notifications(Protocol):
    """Each person's notices (the notification center) and whether they want them by email.

    A person is `(org_id, user_id)`: a user of two organizations has two centers.
    """

    def add(self, user_id: str, notice: Notification) -> None:
        """Keep a notice for the user of `notice.org_id`."""

    def of(self, org_id: str, user_id: str, limit: int = 100) -> list[Notification]:
        """The person's notices, newest first (by `notification_id`), at most `limit`."""

    def mark_read(self, org_id: str, user_id: str, notification_id: str) -> bool:
        """Mark one of the person's notices read; False when they have none of that id."""

    def mark_emailed(self, org_id: str, user_id: str, notification_id: str) -> None:
        """Record that a notice of the person's went out by email."""

    def email_preference(self, org_id: str, user_id: str) -> bool | None:
        """Whether the person asked for email (True) or not (False); None when they never said."""

    def set_email_preference(self, org_id: str, user_id: str, on: bool, *, at: str) -> None:
        """Keep the person's choice of email (`at`: ISO time of the choice)."""

    def delete_matching(
        self, org_id: str, user_id: str, matches: Callable[[Notification], bool]
    ) -> int:
        """Delete every notice of the person (all of them, not the newest 100) that `matches`
        keeps; returns how many."""
