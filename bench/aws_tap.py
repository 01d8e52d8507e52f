"""What a process asks of AWS, in billed units: a tap on botocore for `bench.aws_cost`.

`Tap` wraps `botocore.client.BaseClient._make_api_call` (every boto3 and PynamoDB client of the
process goes through it) while it is installed, and counts each request by `service.Operation`
with what AWS would bill for it (`bench.aws_prices`): DynamoDB's read and write request units,
with the secondary indexes' writes, from the items' real sizes; SQS's 64 KB chunks; S3's PUT and
GET classes. It needs moto in THIS process (`EmbeddedStack(moto_process=False)`): a write's item
is read from moto's tables before and after the request (an `UpdateItem` is billed on the larger
of the two, an index on the entry it rewrote). DynamoDB requests are serialized while the tap is
installed, so those images are the request's own; moto serializes them anyway.

`HandlerTimes` times every SQS-triggered Lambda handler the embedded stack's pollers invoke.

Importing this module starts nothing and imports neither botocore nor moto.
"""

from __future__ import annotations

import threading
import time
from collections import Counter, defaultdict
from collections.abc import Callable, Iterator, Mapping
from dataclasses import dataclass, field
from typing import Any

from bench import aws_prices as p

MOTO_ACCOUNT = "123456789012"
"""The account moto's backends keep the embedded stack's state under."""

_WRITES = frozenset({"PutItem", "UpdateItem", "DeleteItem", "TransactWriteItems", "BatchWriteItem"})
_S3_PUT_CLASS = frozenset(
    {"PutObject", "CopyObject", "UploadPart", "CreateMultipartUpload", "ListObjects"}
    | {"ListObjectsV2", "CompleteMultipartUpload", "DeleteObjects"}
)


@dataclass
class Hot:
    """Writes (or reads) of one item: how often, the largest size seen, the units they cost."""

    count: int = 0
    max_bytes: int = 0
    units: float = 0.0
    transactional: int = 0
    """Of `count`, the writes made inside `TransactWriteItems`."""


@dataclass
class Tally:
    """A tap's counts since its last `reset`."""

    requests: Counter[str] = field(default_factory=Counter)
    """Requests by `service.Operation` (empty SQS receives under `sqs.ReceiveMessage.empty`)."""
    items: Counter[str] = field(default_factory=Counter)
    """DynamoDB items a request named (a transaction's actions, a batch's keys) by operation."""
    rru: Counter[str] = field(default_factory=Counter)
    """Read request units by operation."""
    wru: Counter[str] = field(default_factory=Counter)
    """Write request units by operation, the indexes' included."""
    wru_by_target: Counter[str] = field(default_factory=Counter)
    """Write request units by table, and by `table/index` for the indexes' part."""
    read_bytes: Counter[str] = field(default_factory=Counter)
    write_bytes: Counter[str] = field(default_factory=Counter)
    """Bytes of the items written (the larger of before and after) by operation."""
    sqs_billed: int = 0
    """Billed SQS requests (64 KB chunks), empty receives left out."""
    s3_puts: int = 0
    s3_gets: int = 0
    written: dict[tuple[str, str], Hot] = field(default_factory=lambda: defaultdict(Hot))
    """Writes by (table, key text)."""

    @property
    def index_wru(self) -> float:
        return sum(v for k, v in self.wru_by_target.items() if "/" in k)


def _key_text(key: Mapping[str, Any]) -> str:
    return " ".join(str(next(iter(v.values()))) for _, v in sorted(key.items()))


class Tap:
    """Counts and prices this process's AWS requests while installed (`with Tap(...) as tap`).

    Args:
        region: the region moto's backends keep the stack's tables under.
        short: maps a table's full name to the name printed (the stack's prefix taken off).
    """

    def __init__(self, region: str, short: Callable[[str], str] = lambda name: name) -> None:
        self.region = region
        self.short = short
        self.tally = Tally()
        self._dynamodb = threading.RLock()
        self._count = threading.Lock()
        self._original: Any = None
        self._schemas: dict[str, tuple[list[str], list[p.Index]]] = {}

    # -- installing

    def __enter__(self) -> Tap:
        from botocore.client import BaseClient

        self._original = original = BaseClient._make_api_call
        tap = self

        def _make_api_call(client: Any, operation: str, params: dict[str, Any]) -> Any:
            service = client.meta.service_model.endpoint_prefix
            return tap._call(
                service, operation, params, lambda: original(client, operation, params)
            )

        BaseClient._make_api_call = _make_api_call  # type: ignore[method-assign]
        return self

    def __exit__(self, *exc: object) -> None:
        from botocore.client import BaseClient

        BaseClient._make_api_call = self._original  # type: ignore[method-assign]

    def reset(self) -> None:
        """Forget everything counted so far."""
        with self._dynamodb, self._count:
            self.tally = Tally()

    # -- moto's tables, read in this process (no request)

    def _backend(self) -> Any:
        from moto.dynamodb.models import dynamodb_backends

        return dynamodb_backends[MOTO_ACCOUNT][self.region]

    def _schema(self, table_name: str) -> tuple[list[str], list[p.Index]]:
        """(the table's key attributes, its indexes)."""
        if table_name not in self._schemas:
            table = self._backend().get_table(table_name)
            indexes = [
                p.Index(
                    name=i.name,
                    keys=tuple(i.schema_key_attrs),
                    projection=(i.projection or {}).get("ProjectionType", "ALL"),
                    include=tuple((i.projection or {}).get("NonKeyAttributes", [])),
                )
                for i in list(table.global_indexes or []) + list(table.indexes or [])
            ]
            self._schemas[table_name] = (list(table.table_key_attrs), indexes)
        return self._schemas[table_name]

    def image(self, table_name: str, key: Mapping[str, Any]) -> dict[str, Any] | None:
        """The item under `key` (wire form) in moto's table as it is now, or None. A read of
        moto's memory: no request, nothing counted."""
        from moto.dynamodb.models.dynamo_type import DynamoType

        with self._dynamodb:
            try:
                table = self._backend().get_table(table_name)
                keys, _ = self._schema(table_name)
                found = table.items.get(DynamoType(key[keys[0]]))
                if found is not None and len(keys) > 1:
                    found = found.get(DynamoType(key[keys[1]]))
            except Exception:  # noqa: BLE001 - no such table or key: the request says why itself
                return None
            return None if found is None else found.to_json()["Attributes"]

    def _key_of(self, table_name: str, item: Mapping[str, Any]) -> dict[str, Any]:
        keys, _ = self._schema(table_name)
        return {k: item[k] for k in keys if k in item}

    # -- the requests

    def _call(self, service: str, operation: str, params: dict[str, Any], send: Any) -> Any:
        if service == "dynamodb":
            with self._dynamodb:
                return self._dynamodb_call(operation, params, send)
        try:
            result = send()
        except Exception:
            self._add_request(service, operation, params, None)
            raise
        self._add_request(service, operation, params, result)
        return result

    def _add_request(
        self, service: str, operation: str, params: dict[str, Any], result: Any
    ) -> None:
        with self._count:
            t = self.tally
            if service == "sqs":
                if operation == "ReceiveMessage":
                    messages = (result or {}).get("Messages") or []
                    if not messages:
                        t.requests["sqs.ReceiveMessage.empty"] += 1
                        return
                    t.sqs_billed += p.sqs_requests(sum(_message_bytes(m) for m in messages))
                elif operation == "SendMessage":
                    t.sqs_billed += p.sqs_requests(_message_bytes(params))
                elif operation == "SendMessageBatch":
                    t.sqs_billed += p.sqs_requests(
                        sum(_message_bytes(e) for e in params.get("Entries", []))
                    )
                else:
                    t.sqs_billed += 1
            elif service == "s3":
                if operation in _S3_PUT_CLASS:
                    t.s3_puts += 1
                else:
                    t.s3_gets += 1
            t.requests[f"{service}.{operation}"] += 1

    def _dynamodb_call(self, operation: str, params: dict[str, Any], send: Any) -> Any:
        try:
            writes = self._planned_writes(operation, params)
        except Exception:  # noqa: BLE001 - a malformed request: moto answers it, billed as nothing
            writes = []
        before = [self.image(table, key) for table, key, _ in writes]
        result: Any = None
        try:
            result = send()
            return result
        finally:
            after = [self.image(table, key) for table, key, _ in writes]
            with self._count:
                self._bill_dynamodb(operation, params, result, writes, before, after)

    def _planned_writes(
        self, operation: str, params: dict[str, Any]
    ) -> list[tuple[str, dict[str, Any], str]]:
        """(table, key, action) of every item a write request names; action is `Put`,
        `Update`, `Delete` or `ConditionCheck`."""
        if operation == "PutItem":
            table = params["TableName"]
            return [(table, self._key_of(table, params["Item"]), "Put")]
        if operation in ("UpdateItem", "DeleteItem"):
            return [(params["TableName"], params["Key"], operation[:-4])]
        if operation == "TransactWriteItems":
            out = []
            for action in params.get("TransactItems", []):
                (kind, body), *_ = action.items()
                table = body["TableName"]
                key = body["Key"] if "Key" in body else self._key_of(table, body["Item"])
                out.append((table, key, kind))
            return out
        if operation == "BatchWriteItem":
            out = []
            for table, requests in params.get("RequestItems", {}).items():
                for r in requests:
                    if "PutRequest" in r:
                        out.append((table, self._key_of(table, r["PutRequest"]["Item"]), "Put"))
                    else:
                        out.append((table, r["DeleteRequest"]["Key"], "Delete"))
            return out
        return []

    def _bill_dynamodb(
        self,
        operation: str,
        params: dict[str, Any],
        result: Any,
        writes: list[tuple[str, dict[str, Any], str]],
        before: list[dict[str, Any] | None],
        after: list[dict[str, Any] | None],
    ) -> None:
        t = self.tally
        t.requests[f"dynamodb.{operation}"] += 1
        if operation in _WRITES:
            transactional = operation == "TransactWriteItems"
            t.items[operation] += len(writes)
            for (table, key, action), old, new in zip(writes, before, after, strict=True):
                size = max(p.item_bytes(old), p.item_bytes(new))
                units = p.write_units(size, transactional=transactional)
                t.wru[operation] += units
                t.write_bytes[operation] += size
                name = self.short(table)
                t.wru_by_target[name] += units
                hot = t.written[(name, _key_text(key))]
                hot.count += 1
                hot.max_bytes = max(hot.max_bytes, size)
                hot.units += units
                hot.transactional += transactional
                if action == "ConditionCheck":
                    continue
                try:
                    keys, indexes = self._schema(table)
                except Exception:  # noqa: BLE001 - no such table: the request fails by itself
                    keys, indexes = [], []
                for index in indexes:
                    extra = p.index_write_units(old, new, index, keys)
                    if extra:
                        t.wru[operation] += extra
                        t.wru_by_target[f"{name}/{index.name}"] += extra
                        hot.units += extra
            return
        for _table, size, consistent, transactional in self._reads(operation, params, result):
            t.items[operation] += 1 if operation != "Query" and operation != "Scan" else 0
            t.rru[operation] += p.read_units(
                size, consistent=consistent, transactional=transactional
            )
            t.read_bytes[operation] += size

    def _reads(
        self, operation: str, params: dict[str, Any], result: Any
    ) -> Iterator[tuple[str, int, bool, bool]]:
        """(table, bytes, consistent, transactional) of each billed read of a read request: one
        per item for GetItem, BatchGetItem and TransactGetItems (the item's whole size, found or
        not), one per Query or Scan page (its returned items' sizes summed)."""
        if operation == "GetItem":
            table = params["TableName"]
            yield (
                table,
                p.item_bytes(self.image(table, params["Key"])),
                bool(params.get("ConsistentRead")),
                False,
            )
        elif operation == "BatchGetItem":
            for table, ask in params.get("RequestItems", {}).items():
                for key in ask.get("Keys", []):
                    size = p.item_bytes(self.image(table, key))
                    yield table, size, bool(ask.get("ConsistentRead")), False
        elif operation == "TransactGetItems":
            for action in params.get("TransactItems", []):
                body = action["Get"]
                yield (
                    body["TableName"],
                    p.item_bytes(self.image(body["TableName"], body["Key"])),
                    True,
                    True,
                )
        elif operation in ("Query", "Scan"):
            table = params["TableName"]
            items = (result or {}).get("Items") or []
            size = 0
            for item in items:
                full = (
                    None
                    if params.get("IndexName")
                    else self.image(table, self._key_of(table, item))
                )
                size += p.item_bytes(full or item)
            yield table, size, bool(params.get("ConsistentRead")), False


def _message_bytes(message: Mapping[str, Any]) -> int:
    """An SQS message's payload: its body and its attributes' names, types and values."""
    size = len(str(message.get("MessageBody", message.get("Body", ""))).encode())
    for name, value in (message.get("MessageAttributes") or {}).items():
        size += len(name.encode()) + len(str(value.get("DataType", "")).encode())
        size += len(str(value.get("StringValue", value.get("BinaryValue", ""))).encode())
    return size


@dataclass
class Invocations:
    """One Lambda function's invocations: how many, and each one's wall milliseconds."""

    durations_ms: list[float] = field(default_factory=list)

    @property
    def count(self) -> int:
        return len(self.durations_ms)

    @property
    def billed_ms(self) -> float:
        """The sum of the durations, each rounded up to the millisecond (as Lambda bills)."""
        return float(sum(int(ms) + (ms % 1 > 0) for ms in self.durations_ms))


class HandlerTimes:
    """Times every SQS-triggered handler of the embedded stacks started while it is entered
    (`with HandlerTimes() as times: ...`): `times.by_function` maps a Chalice function name
    (`handle_case_task`) to its `Invocations`, in wall milliseconds as measured in this process.
    """

    def __init__(self) -> None:
        self.by_function: dict[str, Invocations] = defaultdict(Invocations)
        self._lock = threading.Lock()
        self._original: Any = None

    def __enter__(self) -> HandlerTimes:
        from assay_local import poller

        self._original = original = poller.resolve_handler

        def resolve(app: Any, config: Any, app_module: Any = None) -> Callable[..., Any]:
            return self._timed(config.name, original(app, config, app_module))

        poller.resolve_handler = resolve
        return self

    def __exit__(self, *exc: object) -> None:
        from assay_local import poller

        poller.resolve_handler = self._original

    def _timed(self, name: str, handler: Callable[..., Any]) -> Callable[..., Any]:
        def timed(event: Any, context: Any) -> Any:
            t0 = time.perf_counter()
            try:
                return handler(event, context)
            finally:
                with self._lock:
                    self.by_function[name].durations_ms.append((time.perf_counter() - t0) * 1000)

        return timed
