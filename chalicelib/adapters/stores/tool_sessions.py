"""The eval attempts' sessions at the tool gateway (docs/guides/tools.md): one item per session,
read by one `GetItem` and written by one `UpdateItem` per call (`services.gateway`)."""

from __future__ import annotations

from typing import Any

from pynamodb.constants import NONE
from pynamodb.exceptions import DoesNotExist, UpdateError

from chalicelib.adapters.stores.base import record_of, row_of, save_new, unless_condition_failed
from chalicelib.adapters.tables import ToolSessionRow, org_key
from chalicelib.domain.records import ToolSession

KEPT_SECONDS = 86_400
"""How long a session's item stays after it ends (its `until_ms`) before DynamoDB's TTL may drop
it, in seconds."""


_READ = [name for name in ToolSessionRow.get_attributes() if name not in ("calls", "expires_at")]
"""What a call reads of its session: everything but the calls kept so far."""


def _key(org_id: str, run_id: str) -> str:
    return org_key(org_id, run_id)


def _record(row: ToolSessionRow) -> ToolSession:
    return record_of(
        row,
        ToolSession,
        {"consumed": lambda v: tuple(int(i) for i in v), "calls": tuple},
    )


def _update(row: ToolSessionRow, actions: list[Any], condition: Any) -> bool:
    """One UpdateItem that returns nothing (a call's write need not read the item back); False
    when `condition` failed."""
    try:
        row._get_connection().update_item(  # noqa: SLF001 - PynamoDB's one way to skip ALL_NEW
            row._get_hash_range_key_serialized_values()[0],  # noqa: SLF001
            range_key=row._get_hash_range_key_serialized_values()[1],  # noqa: SLF001
            actions=actions,
            condition=condition,
            return_values=NONE,
        )
        return True
    except UpdateError as exc:
        unless_condition_failed(exc)
        return False


class ToolSessionStore:
    """The sessions (port `ports.tools.ToolSessions`), keyed by `<org_id>#<run_id>` and the
    session's id."""

    def create(self, session: ToolSession) -> None:
        """Raises ConflictError (field `session_id`) when the id is taken in the run."""
        row = row_of(session, ToolSessionRow, run_key=_key(session.org_id, session.run_id))
        row.consumed = list(session.consumed)
        row.calls = list(session.calls)
        row.expires_at = session.until_ms // 1000 + KEPT_SECONDS
        save_new(
            row,
            ToolSessionRow.session_id.does_not_exist(),
            f"tool session {session.session_id} already exists",
            field="session_id",
        )

    def get(self, org_id: str, run_id: str, session_id: str) -> ToolSession | None:
        """Without its calls (`calls` empty): a call needs their size (`kept_bytes`), not them,
        and an attempt's calls would be read again by each call."""
        try:
            row = ToolSessionRow.get(
                _key(org_id, run_id),
                session_id,
                consistent_read=True,
                attributes_to_get=_READ,
            )
        except DoesNotExist:
            return None
        return _record(row)

    def append(self, session: ToolSession, call: str, consumed: frozenset[int]) -> bool:
        return _update(
            ToolSessionRow(_key(session.org_id, session.run_id), session.session_id),
            [
                ToolSessionRow.calls.set(ToolSessionRow.calls.append([call])),
                ToolSessionRow.consumed.set(sorted(consumed)),
                ToolSessionRow.kept_bytes.add(len(call.encode("utf-8"))),
                ToolSessionRow.version.add(1),
            ],
            (ToolSessionRow.version == session.version) & (ToolSessionRow.open == True),  # noqa: E712 - a condition, not a comparison
        )

    def restart(self, org_id: str, run_id: str, session_id: str) -> None:
        _update(
            ToolSessionRow(_key(org_id, run_id), session_id),
            [
                ToolSessionRow.calls.set([]),
                ToolSessionRow.consumed.set([]),
                ToolSessionRow.kept_bytes.set(0),
                ToolSessionRow.version.add(1),
            ],
            ToolSessionRow.session_id.exists(),
        )

    def close(self, org_id: str, run_id: str, session_id: str) -> ToolSession | None:
        row = ToolSessionRow(_key(org_id, run_id), session_id)
        try:
            row.update(
                actions=[ToolSessionRow.open.set(False), ToolSessionRow.version.add(1)],
                condition=ToolSessionRow.session_id.exists(),
            )
        except UpdateError as exc:
            unless_condition_failed(exc)
            return None
        return _record(row)
