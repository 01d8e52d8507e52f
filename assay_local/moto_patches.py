"""The fixes assay's embedded stack makes to moto's internals (docs/guides/local-stack.md).

moto 5.2.5 as shipped has problems for a service that decides everything with conditional
writes and receives and deletes from several threads:

2. `DynamoDBBackend.transact_write_items` deep-copies every table a transaction touches, so its
   cost grows with table size (57 ms per transaction at 2,000 items, ~200 ms at 8,000). We replace
   it with a version that snapshots only the items the transaction touches and puts exactly those
   back when it fails (`patch_transact_write_items`).
3. SQS `ReceiveMessage` iterates a queue's live set of pending messages while a delete on another
   thread changes it, and answers 500 ("Set changed size during iteration"); it iterates a
   snapshot instead (`patch_sqs_pending_groups`).

(1., the lock that makes `TransactWriteItems` atomic under concurrent requests, is the request
wrapper's: `assay_local.moto_http`.) The patches are checked against the releases in
`PATCHED_MOTO` only (`check_moto_version`).
"""

from __future__ import annotations

import copy
import logging
import re
from collections.abc import Callable
from typing import Any

log = logging.getLogger(__name__)


PATCHED_MOTO = ((5, 2, 5), (5, 3, 0))
"""The moto releases these patches were written for and checked against: [5.2.5, 5.3.0)."""


class UnsupportedMotoError(RuntimeError):
    """The installed moto is not one `PATCHED_MOTO` covers: its internals may have moved."""


def check_moto_version(version: str) -> None:
    """Refuse (raise `UnsupportedMotoError`, naming both) a moto this module's patches were not
    written for: they replace `DynamoDBBackend.transact_write_items` and wrap moto's WSGI app, and
    silently patching another release could make the stack accept what AWS would refuse."""
    try:
        release = tuple(int(part) for part in version.split(".")[:3])
    except ValueError:
        release = ()
    low, high = PATCHED_MOTO
    if not low <= release < high:
        shown = ".".join(map(str, low)), ".".join(map(str, high))
        raise UnsupportedMotoError(
            f"moto {version} is installed; assay's embedded stack patches moto "
            f">={shown[0]},<{shown[1]} only (assay_local/moto_patches.py): install that range "
            "(pyproject.toml pins it)"
        )


# --- 2. transactions with a cost independent of table size ----------------------------------

_original_transact_write_items: Callable[..., None] | None = None


_NAME_TOKEN = re.compile(r"#[A-Za-z0-9_]+|[A-Za-z_][A-Za-z0-9_]*")


def _touched(update: Any) -> set[str] | None:
    """The top-level attribute names an Update operation may change (a superset: every name and
    bare word of its expression), or None when it is not an update expression."""
    expression = update.get("UpdateExpression")
    if not isinstance(expression, str):
        return None
    names = update.get("ExpressionAttributeNames") or {}
    return {names.get(t, t) if t.startswith("#") else t for t in _NAME_TOKEN.findall(expression)}


def _copy_of(item: Any, touched: set[str] | None) -> Any:
    """`item` as it is now, kept apart from what an update does to it: the attributes it may
    change deep-copied, the others shared (an update replaces or mutates only what its
    expression names; the rest of a large item - a run's case ids, its arms - is never
    copied)."""
    if touched is None:
        return copy.deepcopy(item)
    kept = copy.copy(item)
    attrs = dict.__new__(type(item.attrs))
    dict.update(attrs, item.attrs)
    for name in touched & attrs.keys():
        dict.__setitem__(attrs, name, copy.deepcopy(item.attrs[name]))
    kept.attrs = attrs
    return kept


def _item_snapshot(
    table: Any, key: dict[str, Any], *, update: dict[str, Any] | None = None
) -> tuple[Any, Any, Any, bool, Any]:
    """`(table, hash, range, bucket existed, the item as it is or None)` for one key.

    moto stores items as `table.items[hash] -> Item` or, with a range key,
    `table.items[hash][range] -> Item` (a defaultdict: reading a missing hash creates an empty
    bucket, hence `bucket existed`). An update (`update`: its operation) mutates the stored `Item`
    in place, so its snapshot is a copy (of the attributes its expression names); a put stores a
    new `Item` and a delete drops the stored one, neither touching the object, so theirs may keep
    the object itself.
    """
    from moto.dynamodb.models.dynamo_type import DynamoType

    hash_value = DynamoType(key[table.hash_key_attr])
    range_value = DynamoType(key[table.range_key_attr]) if table.range_key_attr else None
    had_bucket = hash_value in table.items
    if range_value is None:
        current = table.items.get(hash_value)
    else:
        current = table.items[hash_value].get(range_value) if had_bucket else None
    return (
        table,
        hash_value,
        range_value,
        had_bucket,
        (_copy_of(current, _touched(update)) if update and current is not None else current),
    )


def _restore(snapshot: tuple[Any, Any, Any, bool, Any]) -> None:
    """Put one item back exactly as `_item_snapshot` saw it (absent stays absent)."""
    table, hash_value, range_value, had_bucket, item = snapshot
    if range_value is None:
        if item is None:
            table.items.pop(hash_value, None)
        else:
            table.items[hash_value] = item
        return
    if item is not None:
        table.items[hash_value][range_value] = item
        return
    bucket = table.items.get(hash_value)
    if bucket is not None:
        bucket.pop(range_value, None)
        if not bucket and not had_bucket:
            del table.items[hash_value]


def _transact_write_items(self: Any, transact_items: list[dict[str, Any]]) -> None:
    """moto 5.2.5's `DynamoDBBackend.transact_write_items` with per-item rollback.

    Same loop, checks and errors as moto's (compare with
    moto/dynamodb/models/__init__.py); two changes. The backup: moto deep-copies every touched
    table up front and swaps the copies back in on failure, we keep each touched item just before
    its operation (a copy for an update) and put those back, in reverse order, on failure. And an
    operation's condition is checked once, not again inside the operation.
    Raises `TransactionCanceledException` (with one reason per operation) when any operation
    fails, and re-raises `MultipleTransactionsException` / `MockValidationException` as moto does.
    Stream records of a cancelled transaction are not withdrawn (moto's table swap dropped them);
    assay uses no streams.
    """
    from moto.dynamodb.comparisons import get_filter_expression
    from moto.dynamodb.exceptions import (
        ConditionalCheckFailed,
        MockValidationException,
        MultipleTransactionsException,
        TooManyTransactionsException,
        TransactionCanceledException,
        TransactWriteSingleOpException,
    )

    if len(transact_items) > 100:
        raise TooManyTransactionsException()
    snapshots: list[tuple[Any, Any, Any, bool, Any]] = []

    def rollback() -> None:
        for snapshot in reversed(snapshots):
            _restore(snapshot)

    target_items: set[tuple[str, str]] = set()

    def check_unicity(table_name: str, key: dict[str, Any]) -> None:
        item = (str(table_name), str(dict(sorted(key.items()))))
        if item in target_items:
            raise MultipleTransactionsException()
        target_items.add(item)

    errors: list[tuple[str, str, dict[str, Any]] | tuple[None, None, None]] = []
    for item in transact_items:
        original_item: dict[str, Any] | None = None
        if len(list(item.keys())) > 1:
            raise TransactWriteSingleOpException
        try:
            op_type, op = next(iter(item.items()))
            if op_type not in {"ConditionCheck", "Put", "Delete", "Update"}:
                raise ValueError("Unsupported transaction operation")
            table_name = op["TableName"]
            condition_expression = op.get("ConditionExpression")
            expression_attribute_names = op.get("ExpressionAttributeNames")
            expression_attribute_values = op.get("ExpressionAttributeValues")
            return_values_on_condition_check_failure = op.get("ReturnValuesOnConditionCheckFailure")

            if op_type == "Put":
                attrs = op["Item"]
                table = self.get_table(table_name)
                key = {table.hash_key_attr: attrs[table.hash_key_attr]}
                if table.range_key_attr is not None:
                    key[table.range_key_attr] = attrs[table.range_key_attr]
            else:
                key = op["Key"]

            check_unicity(table_name, key)
            if op_type != "ConditionCheck":
                try:
                    snapshots.append(
                        _item_snapshot(
                            self.get_table(table_name),
                            key,
                            update=op if op_type == "Update" else None,
                        )
                    )
                except Exception:  # noqa: BLE001
                    # No usable key (unknown table, missing key attribute): the operation below
                    # fails on the same input before it writes anything, so there is nothing to
                    # save.
                    pass

            current = self.get_item(table_name, key)
            if condition_expression is not None:
                condition_op = get_filter_expression(
                    condition_expression, expression_attribute_names, expression_attribute_values
                )
                if not condition_op.expr(current):
                    if return_values_on_condition_check_failure == "ALL_OLD" and current:
                        original_item = current.to_json()["Attributes"]
                    raise ConditionalCheckFailed(item=original_item)

            # The condition held on `current` just now, under the DynamoDB lock: moto's own loop
            # hands it to the operation, which parses and checks it a second time on the same
            # item; we do not.
            if op_type == "Put":
                self.put_item(
                    table_name,
                    op["Item"],
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            elif op_type == "Delete":
                self.delete_item(
                    table_name,
                    key,
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            elif op_type == "Update":
                self.update_item(
                    table_name,
                    key,
                    update_expression=op["UpdateExpression"],
                    expression_attribute_names=expression_attribute_names,
                    expression_attribute_values=expression_attribute_values,
                )
            errors.append((None, None, None))
        except (MultipleTransactionsException, MockValidationException):
            rollback()
            raise
        except ConditionalCheckFailed as e:
            errors.append(("ConditionalCheckFailed", str(e.message), original_item))  # type: ignore[arg-type]
        except Exception as e:  # noqa: BLE001 - moto reports any other failure as a reason too
            errors.append((type(e).__name__, str(e), original_item))  # type: ignore[arg-type]

    if any(code is not None for code, _, _ in errors):
        rollback()
        raise TransactionCanceledException(errors)


def patch_transact_write_items() -> None:
    """Install `_transact_write_items` on moto's `DynamoDBBackend` (process-wide, idempotent).

    Affects every moto backend in the process, `mock_aws` included; the semantics are moto's.
    """
    global _original_transact_write_items
    import moto
    from moto.dynamodb.models import DynamoDBBackend

    check_moto_version(moto.__version__)
    if _original_transact_write_items is None:
        _original_transact_write_items = DynamoDBBackend.transact_write_items
        DynamoDBBackend.transact_write_items = _transact_write_items  # type: ignore[method-assign]


def unpatch_transact_write_items() -> None:
    """Put moto's own `transact_write_items` back (to reproduce the slow case by hand)."""
    global _original_transact_write_items
    from moto.dynamodb.models import DynamoDBBackend

    if _original_transact_write_items is not None:
        DynamoDBBackend.transact_write_items = _original_transact_write_items  # type: ignore[method-assign]
        _original_transact_write_items = None


def _pending_message_groups(self: Any) -> set[str]:
    """moto's `Queue.pending_message_groups` over a snapshot of the pending messages: moto iterates
    the live set in Python while another request's delete changes it, and the receive answers 500
    ("Set changed size during iteration"). `tuple()` of a set copies it in one step under the
    GIL."""
    return {m.group_id for m in tuple(self._pending_messages) if m.group_id is not None}


def patch_sqs_pending_groups() -> None:
    """Install `_pending_message_groups` on moto's SQS `Queue` (process-wide, idempotent)."""
    import moto
    from moto.sqs.models import Queue

    check_moto_version(moto.__version__)
    Queue.pending_message_groups = property(_pending_message_groups)  # type: ignore[assignment,method-assign]
