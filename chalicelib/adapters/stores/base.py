"""What every store shares: telling a failed condition from any other failure, new items,
transactions."""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import fields
from typing import Any, TypeVar

from pynamodb.connection import Connection
from pynamodb.exceptions import (
    DeleteError,
    DoesNotExist,
    PutError,
    PynamoDBException,
    TransactWriteError,
    UpdateError,
)
from pynamodb.expressions.update import Action
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from chalicelib.adapters.tables import AgentRow, DatasetRow, RunRow, org_key, share_client
from chalicelib.errors import ConflictError

WAITING = "1"
"""Value of `waiting_flag` on organizations that have runs waiting for a slot."""


def reason_codes(exc: TransactWriteError) -> list[str | None]:
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
    codes = [code for code in reason_codes(exc) if code is not None]
    return (
        error_code(exc) == "TransactionCanceledException"
        and bool(codes)
        and all(code == "ConditionalCheckFailed" for code in codes)
    )


def unless_condition_failed(exc: PutError | UpdateError | TransactWriteError) -> None:
    """Re-raise `exc` unless it is a failed condition (call inside its `except`)."""
    failed = (
        transaction_condition_failed(exc)
        if isinstance(exc, TransactWriteError)
        else condition_failed(exc)
    )
    if not failed:
        raise exc


def save_new(row: Any, condition: Any, conflict: str, *, field: str) -> None:
    """`row.save(condition)` for an item that must not exist yet.

    Raises:
        ConflictError: (`conflict`, naming `field`) when the condition did not hold.
        PutError: any other failure (a throttle is not a taken id).
    """
    try:
        row.save(condition=condition)
    except PutError as exc:
        unless_condition_failed(exc)
        raise ConflictError(conflict, field=field) from exc


def conditional_update(row: Any, actions: list, condition: Any = None) -> bool:
    """`row.update(actions, condition)`; False when the condition failed (anything else raises)."""
    try:
        row.update(actions=actions, condition=condition)
        return True
    except UpdateError as exc:
        unless_condition_failed(exc)
        return False


class Transactions:
    """Builds `TransactWrite` blocks on one connection to the configured endpoint."""

    def __init__(self) -> None:
        self._connection: Connection | None = None

    def reset(self) -> None:
        self._connection = None

    def _conn(self) -> Connection:
        if self._connection is None:
            self._connection = share_client(
                Connection(region=RunRow.Meta.region, host=getattr(RunRow.Meta, "host", None))
            )
        return self._connection

    def write(self) -> TransactWrite:
        return TransactWrite(connection=self._conn())

    def batch_get(self, request_items: dict[str, Any]) -> dict[str, list[dict[str, Any]]]:
        """One `BatchGetItem` over several tables (retrying unprocessed keys); raw items per
        table."""
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


TX = Transactions()


def reset_connections() -> None:
    """Forget cached connections (after `tables.configure` points at another endpoint)."""
    TX.reset()


# --- what a write of an agent's or a dataset's data checks (`services.deletion`) ---------------


def check_agent_live(t: TransactWrite, org_id: str, agent_id: str) -> None:
    """Add to transaction `t` a check that the organization's agent exists and is not being
    deleted: a write of something of the agent's that commits after its delete started would
    outlive it."""
    t.condition_check(
        AgentRow,
        org_id,
        agent_id,
        condition=AgentRow.agent_id.exists() & AgentRow.deleting_at.does_not_exist(),
    )


def check_dataset_live(t: TransactWrite, org_id: str, dataset_id: str) -> None:
    """Add to transaction `t` a check that the organization's dataset exists and is not being
    deleted (its header, version 0)."""
    t.condition_check(
        DatasetRow,
        org_key(org_id, dataset_id),
        0,
        condition=DatasetRow.dataset_key.exists() & DatasetRow.deleting_at.does_not_exist(),
    )


def agent_live(org_id: str, agent_id: str) -> bool:
    """Whether the organization's agent exists and is not being deleted (a consistent read of its
    key and mark)."""
    try:
        row = AgentRow.get(
            org_id, agent_id, consistent_read=True, attributes_to_get=["agent_id", "deleting_at"]
        )
    except DoesNotExist:
        return False
    return row.deleting_at is None


def dataset_live(org_id: str, dataset_id: str) -> bool:
    """Whether the organization's dataset exists and is not being deleted (its header read)."""
    try:
        row = DatasetRow.get(
            org_key(org_id, dataset_id),
            0,
            consistent_read=True,
            attributes_to_get=["dataset_key", "deleting_at"],
        )
    except DoesNotExist:
        return False
    return row.deleting_at is None


def delete_found(rows: Any, model: type[Model]) -> int:
    """Delete every row of `rows` (a query's result, keys at least) from `model`'s table, 25 per
    `BatchWriteItem` (PynamoDB sends again what a batch left unprocessed); returns how many."""
    count = 0
    with model.batch_write() as batch:
        for row in rows:
            batch.delete(row)
            count += 1
    return count


# --- rows and records ------------------------------------------------------------------------

R = TypeVar("R")
M = TypeVar("M", bound=Model)


_FIELDS: dict[type, tuple[str, ...]] = {}


def _names(cls: type) -> tuple[str, ...]:
    """A record class's field names (looked up once per class)."""
    names = _FIELDS.get(cls)
    if names is None:
        names = _FIELDS[cls] = tuple(f.name for f in fields(cls))
    return names


def record_of(
    row: Model, cls: type[R], convert: Mapping[str, Callable[[Any], Any]] | None = None
) -> R:
    """The frozen record (`chalicelib.domain.records`) of a row: the row's fields of the same names.

    A field the item does not hold (DynamoDB keeps no null) takes the record's default, so a list
    is `[]`, never None; a required field it does not hold raises TypeError (a projection that
    leaves out what the record needs is a bug, never a half-filled record). `convert` turns the
    stored value of a field into the record's (a run's JSON arms into `Arm`s), for the fields the
    item holds. Reads the row's values directly: the run row is converted on every case attempt.
    """
    values = row.attribute_values
    found = {name: values[name] for name in _names(cls) if name in values}
    for name, of_stored in (convert or {}).items():
        if name in found:
            found[name] = of_stored(found[name])
    return cls(**found)


_Reader = tuple[str, str, Callable[[dict[str, Any]], Any], Callable[[], Any] | None]
_READERS: dict[tuple[type, type], tuple[_Reader, ...]] = {}


def _readers(row_cls: type[Model], cls: type) -> tuple[_Reader, ...]:
    """Per field of the record `cls` the row attribute holds: (field, stored name, the
    attribute's own reading of its wire value, its default or None); looked up once per pair."""
    key = (row_cls, cls)
    readers = _READERS.get(key)
    if readers is None:
        attributes = row_cls.get_attributes()
        found = []
        for name in _names(cls):
            attr = attributes.get(name)
            if attr is None:
                continue
            default = attr.default
            found.append(
                (
                    name,
                    attr.attr_name,
                    lambda raw, a=attr: a.deserialize(a.get_value(raw)),
                    (default if callable(default) else (lambda d=default: d))
                    if default is not None
                    else None,
                )
            )
        readers = _READERS[key] = tuple(found)
    return readers


def record_of_item(
    item: dict[str, Any],
    row_cls: type[Model],
    cls: type[R],
    convert: Mapping[str, Callable[[Any], Any]] | None = None,
) -> R:
    """`record_of(row_cls.from_raw_data(item), cls)` without the row: the item's wire attributes
    read by the row's own attributes, an absent or NULL one taking the row's default (as
    PynamoDB's deserialization does) and else the record's. PynamoDB sets every attribute of a
    row it builds through its descriptors, ~45 per attempt: reading a run's 500 attempts spent
    most of its time there (issue 12, the end of a run). `convert` as `record_of`'s."""
    found: dict[str, Any] = {}
    for name, stored, read, default in _readers(row_cls, cls):
        raw = item.get(stored)
        if raw and "NULL" not in raw:
            found[name] = read(raw)
        elif default is not None:
            found[name] = default()
    for name, of_stored in (convert or {}).items():
        if name in found:
            found[name] = of_stored(found[name])
    return cls(**found)


def query_records(
    row_cls: type[Model], cls: type[R], hash_key: str, *, consistent: bool = True
) -> list[R]:
    """Every item under `hash_key` in `row_cls`'s table, in sort-key order, as records of `cls`
    (`record_of_item`); every page read (1 MB each)."""
    conn = row_cls._get_connection()
    out: list[R] = []
    start: dict[str, Any] | None = None
    while True:
        page = conn.query(hash_key, consistent_read=consistent, exclusive_start_key=start)
        out += [record_of_item(item, row_cls, cls) for item in page.get("Items", ())]
        start = page.get("LastEvaluatedKey")
        if not start:
            return out


def row_of(record: Any, row_cls: type[M], **keys: Any) -> M:
    """A row holding `record`'s fields, plus the storage keys `keys` (e.g.
    `agent_key=org_key(...)`)."""
    return row_cls(**keys, **{name: getattr(record, name) for name in _names(type(record))})


def changes(
    row_cls: type[Model], before: Any, after: Any, *, fixed: Sequence[str] = ()
) -> list[Action]:
    """The update actions that turn the stored `before` into `after` (a field set to None is
    removed).

    Raises:
        ValueError: `after` changes a key field named in `fixed` (a bug: keys never change).
    """
    actions: list[Action] = []
    for name in _names(type(after)):
        new = getattr(after, name)
        if new == getattr(before, name):
            continue
        if name in fixed:
            raise ValueError(f"{row_cls.__name__}.{name} is a key and cannot change")
        attribute = getattr(row_cls, name)
        actions.append(attribute.remove() if new is None else attribute.set(new))
    return actions
