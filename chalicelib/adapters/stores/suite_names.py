"""A suite name's reservation: one item of the suites table per name an agent's suite holds
(docs/guides/suites.md, "A suite's name"; docs/architecture/tables.md).

Suite names are unique per agent, compared by `domain.suite_rules.name_key`. Two saves at once
cannot both read "nobody has it" and both write, so the name is claimed by a conditional write in
the same transaction as the suite's own: the item `name#<SHA-256 of the name key>` under the
agent's key (`<org_id>#<agent_id>`), holding `reserved_by` (the suite id) and `name` (the key).
It is put only where no item is or where it is the suite's own; a rename moves it (put the new
one, delete the old one) in the suite's write; a delete frees it in the suite's delete. A suite id
never holds `#`, so this key is never a suite's; the item carries no `org_id` and no index flag,
so no index lists it, and `SuiteStore.of_agent` leaves it out.

A suite saved before names were unique holds no item: its next rename claims one, and its name
stays shared with whoever else had it until one of them is renamed. A reservation whose suite is
gone or has another name by now (no write of assay leaves one, but a hand edit of the table might)
is taken over rather than refusing the name forever.
"""

from __future__ import annotations

import hashlib

from pynamodb.exceptions import DoesNotExist, TransactWriteError
from pynamodb.transactions import TransactWrite

from chalicelib.adapters.stores.base import reason_codes
from chalicelib.adapters.tables import SuiteRow, org_key
from chalicelib.domain.suite_rules import name_key
from chalicelib.errors import ConflictError

NAME_PREFIX = "name#"
"""How the sort key of a name's reservation item starts (`name#<sha256 hex>`)."""

CONDITION_FAILED = "ConditionalCheckFailed"
"""A cancelled transaction's reason code for an item whose condition did not hold."""


def is_name_item(suite_id: str) -> bool:
    """Whether a suites-table sort key is a name's reservation, not a suite."""
    return suite_id.startswith(NAME_PREFIX)


def item_id(key: str) -> str:
    """The sort key of the reservation of the name key `key` (never empty): the key's SHA-256,
    so any name (up to 200 characters, any script) makes a key of the same short length."""
    return NAME_PREFIX + hashlib.sha256(key.encode()).hexdigest()


def reserve(
    t: TransactWrite,
    org_id: str,
    agent_id: str,
    suite_id: str,
    key: str,
    *,
    stale: str | None = None,
) -> None:
    """Add to `t` the claim of the name `key` for `suite_id`: it holds where no reservation is,
    where the suite holds it already, or where `stale` (a holder found gone) holds it."""
    held = SuiteRow.suite_id.does_not_exist() | (SuiteRow.reserved_by == suite_id)
    if stale is not None:
        held = held | (SuiteRow.reserved_by == stale)
    t.update(
        SuiteRow(org_key(org_id, agent_id), item_id(key)),
        actions=[SuiteRow.reserved_by.set(suite_id), SuiteRow.name.set(key)],
        condition=held,
    )


def release(t: TransactWrite, org_id: str, agent_id: str, suite_id: str, key: str) -> None:
    """Add to `t` the delete of the reservation of `key`, conditional on `suite_id` holding it
    (call it only for a reservation read as the suite's: `holder`)."""
    t.delete(
        SuiteRow(org_key(org_id, agent_id), item_id(key)),
        condition=SuiteRow.reserved_by == suite_id,
    )


def holder(org_id: str, agent_id: str, key: str) -> str | None:
    """The suite id holding the name `key` by its reservation (a consistent read), None when
    nobody does."""
    try:
        row = SuiteRow.get(
            org_key(org_id, agent_id),
            item_id(key),
            consistent_read=True,
            attributes_to_get=["reserved_by"],
        )
    except DoesNotExist:
        return None
    return row.reserved_by


def held_name(org_id: str, agent_id: str, suite_id: str, key: str) -> str | None:
    """The name of the suite `suite_id` as it is kept, when the suite exists and its name is still
    `key` (a consistent read); None when it does not: a reservation naming such a suite is stale,
    and may be taken over."""
    try:
        row = SuiteRow.get(
            org_key(org_id, agent_id),
            suite_id,
            consistent_read=True,
            attributes_to_get=["suite_id", "name"],
        )
    except DoesNotExist:
        return None
    name = row.name or ""
    return name if name_key(name) == key else None


def failed_at(exc: TransactWriteError, index: int) -> bool:
    """Whether the item at `index` of a cancelled transaction failed its condition."""
    codes = reason_codes(exc)
    return index < len(codes) and codes[index] == CONDITION_FAILED


def contested(name: str) -> ConflictError:
    """The 409 (field `name`) when the name's reservation kept changing under the write."""
    return ConflictError(
        f"name: the name {name.strip()!r} kept changing hands under this save: try again",
        field="name",
    )
