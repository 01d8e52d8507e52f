"""Fakes of `chalicelib.services.ports.automation` (suites and their results, promotions, notices),
and the minimal mailer the automation services need.

Each honours the conditions of the store it stands for: a suite is written only while its
`updated_at` stamp is as read and its name is no other suite's of its agent, a promotion only
while it waits with the guards as read. A test makes another worker win the next write with
`interfere(...)`: the other write lands just before the service's own, which then finds the record
changed, as a real race would.
"""

from __future__ import annotations

from collections.abc import Callable
from dataclasses import fields, replace
from typing import Any

from chalicelib.domain.enums import PromotionStatus
from chalicelib.domain.records import Notification, Promotion, Suite, SuiteResultEntry
from chalicelib.domain.suite_rules import name_key
from chalicelib.errors import ConflictError
from tests.fakes.catalog import Liveness


def _check_keys(before: Any, after: Any, keys: tuple[str, ...]) -> None:
    for name in keys:
        if getattr(after, name) != getattr(before, name):
            raise ValueError(f"{type(after).__name__}.{name} is a key and cannot change")


def _changed_fields(before: Any, after: Any) -> dict[str, Any]:
    """The fields of a record that `after` changes (what the real store writes)."""
    return {
        f.name: getattr(after, f.name)
        for f in fields(after)
        if getattr(after, f.name) != getattr(before, f.name)
    }


class FakeSuites:
    """`ports.automation.Suites` in dicts: suites by (org_id, agent_id, suite_id), their results by
    the same key and `started_key`."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str, str], Suite] = {}
        self.kept_results: dict[tuple[str, str, str], dict[str, SuiteResultEntry]] = {}
        self._others: list[Callable[[Suite], Suite]] = []
        self.lost = 0
        """Writes that found the suite changed since it was read."""
        self.live: Liveness | None = None

    def interfere(self, *others: Callable[[Suite], Suite]) -> None:
        """Before each of the next `len(others)` writes, another worker changes the suite being
        written: `other(stored)` is stored with a stamp of its own."""
        self._others.extend(others)

    @staticmethod
    def _key(suite: Suite) -> tuple[str, str, str]:
        return suite.org_id, suite.agent_id, suite.suite_id

    def _name_holder(self, suite: Suite) -> str | None:
        """Another suite of `suite`'s agent with its name key (a blank name is nobody's)."""
        key = name_key(suite.name)
        if not key:
            return None
        return next(
            (
                s.suite_id
                for k, s in self.kept.items()
                if k[:2] == (suite.org_id, suite.agent_id)
                and s.suite_id != suite.suite_id
                and name_key(s.name) == key
            ),
            None,
        )

    def create(self, suite: Suite) -> None:
        if self.live is not None:
            self.live.agent(suite.org_id, suite.agent_id)
            self.live.dataset(suite.org_id, suite.dataset_id)
        if self._key(suite) in self.kept:
            raise ConflictError(f"suite {suite.suite_id} already exists", field="suite_id")
        if self._name_holder(suite) is not None:
            raise ConflictError(f"a suite named {suite.name!r} exists", field="name")
        self.kept[self._key(suite)] = suite

    def get(self, org_id: str, agent_id: str, suite_id: str) -> Suite | None:
        return self.kept.get((org_id, agent_id, suite_id))

    def of_agent(self, org_id: str, agent_id: str) -> list[Suite]:
        return [s for key, s in sorted(self.kept.items()) if key[:2] == (org_id, agent_id)]

    def of_org(self, org_id: str) -> list[Suite]:
        return [s for key, s in sorted(self.kept.items()) if key[0] == org_id]

    def replace(self, before: Suite, after: Suite) -> bool:
        if after.updated_at == before.updated_at:
            raise ValueError(f"suite {after.suite_id}: a change needs a new updated_at stamp")
        _check_keys(before, after, ("org_id", "agent_id", "suite_id"))
        key = self._key(before)
        if self._others and key in self.kept:
            stored = self.kept[key]
            self.kept[key] = replace(
                self._others.pop(0)(stored), updated_at=f"{stored.updated_at}+other"
            )
        stored = self.kept.get(key)
        if stored is None or stored.updated_at != before.updated_at:
            self.lost += 1
            return False
        if name_key(after.name) != name_key(before.name) and self._name_holder(after) is not None:
            raise ConflictError(f"a suite named {after.name!r} exists", field="name")
        self.kept[key] = replace(stored, **_changed_fields(before, after))
        return True

    def delete(self, org_id: str, agent_id: str, suite_id: str) -> None:
        self.kept.pop((org_id, agent_id, suite_id), None)

    def due_to_fire(self, now_ms: int) -> list[Suite]:
        return [
            s
            for _, s in sorted(self.kept.items())
            if s.next_fire_at_ms is not None and s.next_fire_at_ms <= now_ms
        ]

    def due_to_start(self, now_ms: int) -> list[Suite]:
        return [
            s
            for _, s in sorted(self.kept.items())
            if s.due_at_ms is not None and s.due_at_ms <= now_ms
        ]

    def add_result(self, result: SuiteResultEntry) -> bool:
        kept = self.kept_results.setdefault((result.org_id, result.agent_id, result.suite_id), {})
        if result.started_key in kept:
            return False
        kept[result.started_key] = result
        return True

    def results(
        self, org_id: str, agent_id: str, suite_id: str, limit: int = 100
    ) -> list[SuiteResultEntry]:
        kept = self.kept_results.get((org_id, agent_id, suite_id), {})
        return [kept[k] for k in sorted(kept, reverse=True)][:limit]

    def result_of_run(
        self, org_id: str, agent_id: str, suite_id: str, run_id: str
    ) -> SuiteResultEntry | None:
        return next(
            (r for r in self.results(org_id, agent_id, suite_id, 200) if r.run_id == run_id), None
        )

    def replace_result(self, before: SuiteResultEntry, after: SuiteResultEntry) -> bool:
        _check_keys(before, after, ("suite_id", "org_id", "agent_id", "started_key", "result_id"))
        kept = self.kept_results.get((before.org_id, before.agent_id, before.suite_id), {})
        stored = kept.get(before.started_key)
        if stored is None or (stored.result, stored.stale) != (before.result, before.stale):
            return False
        kept[before.started_key] = replace(stored, **_changed_fields(before, after))
        return True

    def delete_results(self, org_id: str, agent_id: str, suite_id: str) -> None:
        self.kept_results.pop((org_id, agent_id, suite_id), None)


class FakePromotions:
    """`ports.automation.Promotions` in dicts: promotions by (org_id, agent_id, promotion_id), the
    locks by (org_id, agent_id, environment_id) -> the promotion holding it."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str, str], Promotion] = {}
        self.locks: dict[tuple[str, str, str], str] = {}
        self._others: list[Callable[[Promotion], Promotion]] = []
        self.live: Liveness | None = None

    def interfere(self, *others: Callable[[Promotion], Promotion]) -> None:
        """Before each of the next `len(others)` decisions, another worker changes the promotion
        being decided: `other(stored)` is stored."""
        self._others.extend(others)

    def create_waiting(self, promotion: Promotion) -> bool:
        if self.live is not None:
            self.live.agent(promotion.org_id, promotion.agent_id)
        lock = (promotion.org_id, promotion.agent_id, promotion.environment_id)
        key = (promotion.org_id, promotion.agent_id, promotion.promotion_id)
        if lock in self.locks or key in self.kept:
            return False
        self.locks[lock] = promotion.promotion_id
        self.kept[key] = promotion
        return True

    def lock_holder(self, org_id: str, agent_id: str, environment_id: str) -> str | None:
        return self.locks.get((org_id, agent_id, environment_id))

    def delete_of_agent(self, org_id: str, agent_id: str) -> int:
        gone = [k for k in self.kept if k[:2] == (org_id, agent_id)]
        locks = [k for k in self.locks if k[:2] == (org_id, agent_id)]
        for key in gone:
            del self.kept[key]
        for key in locks:
            del self.locks[key]
        return len(gone) + len(locks)

    def release_lock(self, promotion: Promotion) -> None:
        lock = (promotion.org_id, promotion.agent_id, promotion.environment_id)
        if self.locks.get(lock) == promotion.promotion_id:
            del self.locks[lock]

    def get(self, org_id: str, agent_id: str, promotion_id: str) -> Promotion | None:
        return self.kept.get((org_id, agent_id, promotion_id))

    def of_agent(self, org_id: str, agent_id: str, limit: int = 100) -> list[Promotion]:
        mine = [p for key, p in self.kept.items() if key[:2] == (org_id, agent_id)]
        return sorted(mine, key=lambda p: p.promotion_id, reverse=True)[:limit]

    def decide(self, before: Promotion, after: Promotion) -> bool:
        _check_keys(before, after, ("org_id", "agent_id", "promotion_id"))
        key = (before.org_id, before.agent_id, before.promotion_id)
        if self._others and key in self.kept:
            self.kept[key] = self._others.pop(0)(self.kept[key])
        stored = self.kept.get(key)
        if (
            stored is None
            or stored.status != PromotionStatus.WAITING
            or stored.guards != before.guards
        ):
            return False
        self.kept[key] = replace(stored, **_changed_fields(before, after))
        return True


class FakeNotifications:
    """`ports.automation.Notifications` in dicts by (org_id, user_id)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], dict[str, Notification]] = {}
        self.preferences: dict[tuple[str, str], bool] = {}

    def add(self, user_id: str, notice: Notification) -> None:
        self.kept.setdefault((notice.org_id, user_id), {})[notice.notification_id] = notice

    def of(self, org_id: str, user_id: str, limit: int = 100) -> list[Notification]:
        kept = self.kept.get((org_id, user_id), {})
        return [kept[k] for k in sorted(kept, reverse=True)][:limit]

    def mark_read(self, org_id: str, user_id: str, notification_id: str) -> bool:
        kept = self.kept.get((org_id, user_id), {})
        if notification_id not in kept:
            return False
        kept[notification_id] = replace(kept[notification_id], read=True)
        return True

    def mark_emailed(self, org_id: str, user_id: str, notification_id: str) -> None:
        kept = self.kept[(org_id, user_id)]
        kept[notification_id] = replace(kept[notification_id], emailed=True)

    def email_preference(self, org_id: str, user_id: str) -> bool | None:
        return self.preferences.get((org_id, user_id))

    def set_email_preference(self, org_id: str, user_id: str, on: bool, *, at: str) -> None:
        self.preferences[(org_id, user_id)] = on

    def delete_matching(
        self, org_id: str, user_id: str, matches: Callable[[Notification], bool]
    ) -> int:
        kept = self.kept.get((org_id, user_id), {})
        gone = [k for k, notice in kept.items() if matches(notice)]
        for key in gone:
            del kept[key]
        return len(gone)


class FakeMailer:
    """The mailer: keeps what it sends as (to, subject, body); `failing` makes every send raise."""

    def __init__(self) -> None:
        self.sent: list[tuple[str, str, str]] = []
        self.failing = False

    def send(self, to: str, subject: str, body: str) -> None:
        if self.failing:
            raise RuntimeError("SES is down")
        self.sent.append((to, subject, body))
