"""Fast paths through moto 5.2.5's server for the requests assay makes all the time (issue 12).

Profiled under the pipeline benchmark (py-spy, GIL holder only), moto's process spent ~40 % of
its time in its generic response serializer, which walks botocore's shape model member by member
to write JSON that is, for the operations below, the result dict as it is (DynamoDB's items are
already wire-format dicts, SQS's results plain dicts of strings); a quarter of an SQS request in
the Flask app moto puts in front of its handlers; and the rest largely in parsing the same few
expression texts again and again.

What changes (each behind `check_moto_version`), and what does not:

- `serialized`: for the JSON protocol and the operations in `FAST_OPERATIONS`, a successful
  result that is a dict of JSON values is written with `json.dumps`: top-level members outside
  the operation's output shape and `None` members dropped, and bytes (only blob members hold
  them there) as base64, as moto's serializer writes them. Anything else (errors, other
  operations, the query protocol, a datetime or model object) goes through moto's serializer.
  With `VERIFY` on, both are computed and compared (`tests/integration/test_moto_fast.py`).
- `assay_local.moto_direct` (beside this module): DynamoDB and JSON-protocol SQS requests go to
  the handler moto's URL map names for them, with the arguments moto's Flask view passes, without
  the Flask app around it.
- `method_names_from_class`: the same list, computed once per handler class; a request's
  operation (`BaseResponse._get_action`, a match against the service's URL map) found once per
  request, not at each of the five or more times moto asks (compared under `VERIFY`).
- `Table.query` on the table's own hash key reads that key's items instead of every item.
- Update expressions are parsed, and condition expressions lexed, once per text
  (`moto_expressions._cache_expression_parsing`); a condition's parse is reused for the same
  text, names and values (`moto_expressions._cache_condition_parses`; compared with a fresh
  parse under `VERIFY`).
- A DynamoDB request with no binary and no null is read by `json.loads`, not by moto's
  shape-walking request parser (`_plain_parameters`; compared with moto's parse under `VERIFY`).
- A plain update (`SET #n = :v`, `SET #n[i] = :v`, `ADD #n :v`, `REMOVE #n`) is checked and
  applied directly, not by moto's validator (`moto_expressions._plain_updates`; compared with
  moto's own path under `VERIFY`).
- An item's size is summed once as it is built, not at each attribute; `update_item` skips its
  copy of the item for a stream's old image while no table has a stream (`_cheaper_items`).
- SQS's retention check reads the queue's retention period instead of building every attribute.
- A query that neither projects nor filters hands its items on uncopied (moto deep-copies them
  for a projection; the handler only reads them, inside the DynamoDB lock), and a result's
  DynamoDB types are turned into plain dicts by a converter written for them (`_fast_results`,
  compared with moto's under `VERIFY`); an item's size is summed once per query, not twice; the
  request id goes into a body with a `<RequestId>` tag only (moto ran its regular expression over
  every body).

The backends, their checks, conditions and errors stay moto's own: a client sees the same
answers, over the same HTTP API a LocalStack or AWS run uses.
"""

from __future__ import annotations

import base64
import copy
import inspect
import json
import logging
import os
import threading
from collections import Counter
from typing import Any

log = logging.getLogger(__name__)

FAST_OPERATIONS: dict[str, frozenset[str]] = {
    "dynamodb": frozenset(
        {
            "GetItem",
            "BatchGetItem",
            "PutItem",
            "UpdateItem",
            "DeleteItem",
            "Query",
            "BatchWriteItem",
            "TransactWriteItems",
            "TransactGetItems",
        }
    ),
    "sqs": frozenset(
        {
            "ReceiveMessage",
            "SendMessage",
            "SendMessageBatch",
            "DeleteMessage",
            "DeleteMessageBatch",
            "ChangeMessageVisibility",
            "ChangeMessageVisibilityBatch",
            "GetQueueUrl",
        }
    ),
}
"""Operations whose successful JSON results are written directly, by service."""

_CONTENT_TYPE = {"dynamodb": "application/x-amz-json-1.0", "sqs": "application/x-amz-json-1.0"}

VERIFY = False
"""When True, every fast response is also serialized by moto and compared (tests set it); a
difference is kept in `MISMATCHES` and the serializer's answer is sent."""

VERIFY_ENV = "ASSAY_MOTO_VERIFY"
"""`1` in a moto server's environment turns `VERIFY` on from the start (tests of a stack whose
server runs in a child process)."""

MISMATCHES: list[dict[str, Any]] = []
FAST_HITS: Counter[str] = Counter()
"""Responses written by the fast path, by `service.Operation` (tests read it)."""
FULL_LISTINGS: Counter[str] = Counter()
"""Times a table's every item was listed (scans, index queries), by table name (tests read it)."""
_installed = False
_lock = threading.Lock()


class _NotJson(Exception):
    pass


def _plain(value: Any) -> Any:
    """`value` with `None` members dropped from dicts, or `_NotJson` if anything in it is not a
    JSON string, number, bool, list or dict (moto's serializer would convert those)."""
    t = type(value)
    if t is dict:
        return {k: _plain(v) for k, v in value.items() if v is not None}
    if t is list:
        return [_plain(v) for v in value]
    if t is str or t is int or t is bool:
        return value
    if t is bytes:
        # Only blob members hold bytes in these operations' results (an item's B and BS, a
        # message attribute's BinaryValue); JSON carries blobs as base64.
        return base64.b64encode(value).decode()
    if t is float and value == value and value not in (float("inf"), float("-inf")):
        return value
    raise _NotJson(t.__name__)


def _fast_body(response: Any, action_result: Any) -> str | None:
    """The JSON body for `action_result`, or None when moto's serializer must write it."""
    service = response.boto3_service_name
    operations = FAST_OPERATIONS.get(service)
    if operations is None:
        return None
    result = action_result.result
    if isinstance(result, Exception):
        return None
    # Results whose class writes itself (pagination, custom results) keep moto's path.
    if type(action_result).execute_result is not _moto["plain_execute"]:
        return None
    operation = response._get_action()
    if operation not in operations:
        return None
    if "x-amz-json" not in (response.headers.get("Content-Type") or ""):
        return None  # the query (XML) protocol, or a form-encoded request
    if isinstance(action_result, _moto["empty"]) or result is None:
        return "{}"
    if type(result) is not dict:
        return None
    members = _output_members(service, operation)
    try:
        return json.dumps(
            _plain({k: v for k, v in result.items() if k in members}), separators=(",", ":")
        )
    except _NotJson:
        return None


_moto: dict[str, Any] = {}
"""moto's `ActionResult.execute_result` and `EmptyResult`, looked up once by `install`."""


_members: dict[tuple[str, str], frozenset[str]] = {}


def _output_members(service: str, operation: str) -> frozenset[str]:
    """The top-level members of the operation's output shape: moto's serializer writes only
    those (a result may carry more, e.g. DeleteItem's `ConsumedCapacityUnits`)."""
    key = (service, operation)
    found = _members.get(key)
    if found is None:
        from moto.core.responses import get_service_model

        shape = get_service_model(service).operation_model(operation).output_shape
        found = _members[key] = frozenset(shape.members if shape is not None else ())
    return found


def _same(fast: str, slow: Any) -> bool:
    try:
        return bool(json.loads(fast) == json.loads(slow or "{}"))
    except ValueError:
        return False


def install() -> None:
    """Install the fast paths (process-wide, idempotent).

    Raises:
        UnsupportedMotoError: the installed moto is not the release these were written for.
    """
    global _installed
    import moto
    from moto.core import responses as core_responses
    from moto.core import utils as core_utils
    from moto.dynamodb.models.dynamo_type import Item
    from moto.dynamodb.models.table import Table

    from assay_local.moto_patches import check_moto_version

    check_moto_version(moto.__version__)
    with _lock:
        if _installed:
            return
        _installed = True
    global VERIFY
    VERIFY = VERIFY or os.environ.get(VERIFY_ENV) == "1"

    _moto["plain_execute"] = core_responses.ActionResult.execute_result
    _moto["empty"] = core_responses.EmptyResult
    original_serialized = core_responses.BaseResponse.serialized

    def serialized(self: Any, action_result: Any) -> Any:
        body = _fast_body(self, action_result)
        if body is None:
            return original_serialized(self, action_result)
        FAST_HITS[f"{self.boto3_service_name}.{self._get_action()}"] += 1
        headers = {"Content-Type": _CONTENT_TYPE[self.boto3_service_name]}
        headers.update(self.response_headers)
        if VERIFY:
            status, slow_headers, slow_body = original_serialized(self, action_result)
            if status != 200 or not _same(body, slow_body):
                MISMATCHES.append(
                    {
                        "operation": f"{self.boto3_service_name}.{self._get_action()}",
                        "fast": body,
                        "moto": slow_body,
                        "status": status,
                    }
                )
                return status, slow_headers, slow_body
        return 200, headers, body

    core_responses.BaseResponse.serialized = serialized  # type: ignore[method-assign]

    original_action = core_responses.BaseResponse._get_action

    def get_action(self: Any) -> str:
        # moto matches the request against the service's whole URL map each time it asks for
        # the operation, five times or more per request: the answer is kept with the request.
        request = self.__dict__.get("normalized_request")
        kept = self.__dict__.get("_assay_action")
        if kept is not None and kept[0] is request:
            action: str = kept[1]
            if VERIFY and original_action(self) != action:
                MISMATCHES.append({"operation": "_get_action", "fast": action})
            return action
        action = original_action(self)
        if request is not None:
            self.__dict__["_assay_action"] = (request, action)
        return action

    core_responses.BaseResponse._get_action = get_action  # type: ignore[method-assign]

    original_names = core_utils.method_names_from_class
    names: dict[type, list[str]] = {}

    def method_names_from_class(clazz: Any) -> list[str]:
        # A handler's methods are its class's: the same list on every request.
        try:
            return names[clazz]
        except KeyError:
            found = names[clazz] = original_names(clazz)
            return found

    core_responses.method_names_from_class = method_names_from_class  # type: ignore[assignment]

    from moto.dynamodb.comparisons import OpDefault

    original_all_items = Table.all_items
    original_query = Table.query
    only = threading.local()
    # Any keyword of a `Table.query` call that is not one of its parameters is a legacy
    # `QueryFilter` condition.
    named = frozenset(inspect.signature(original_query).parameters)

    def all_items(self: Any) -> Any:
        if getattr(only, "table", None) is self:
            return only.items
        FULL_LISTINGS[self.name] += 1
        return original_all_items(self)

    def query(self: Any, hash_key: Any, *args: Any, **kwargs: Any) -> Any:
        index_name = kwargs.get("index_name", args[6] if len(args) > 6 else None)
        if index_name is not None or hash_key is None:
            return original_query(self, hash_key, *args, **kwargs)
        projection = kwargs.get("projection_expressions", args[5] if len(args) > 5 else None)
        condition = kwargs.get("filter_expression", args[8] if len(args) > 8 else None)
        # moto copies every item it found before it projects or filters them; the handler only
        # reads them, inside the DynamoDB lock, so a query with neither keeps the items as they
        # are (a copy of a 500-attempt run's items was a third of its query).
        only.read_only = (
            not projection
            and (condition is None or type(condition) is OpDefault)  # no FilterExpression
            and named.issuperset(kwargs)
        )
        # Without an index moto keeps, from every item of the table (sorted), those whose hash
        # key matches: hand it that key's items alone, sorted the same way.
        bucket = self.items.get(hash_key)
        if bucket is None:
            found = []
        elif self.range_key_attr:
            found = sorted(bucket.values(), key=lambda x: x.range_key)
        else:
            found = [bucket]
        only.table, only.items, only.sizes = self, found, {}
        try:
            return original_query(self, hash_key, *args, **kwargs)
        finally:
            only.table = only.items = only.sizes = None
            only.read_only = False

    original_size = Item.size

    def size(self: Any) -> int:
        # moto sums an item's size twice per item a query returns (for the page's 1 MB limit);
        # no item changes during one query.
        sizes = getattr(only, "sizes", None)
        if sizes is None:
            return original_size(self)  # type: ignore[no-any-return]
        found = sizes.get(id(self))
        if found is None:
            found = sizes[id(self)] = original_size(self)
        return found  # type: ignore[no-any-return]

    Item.size = size  # type: ignore[method-assign]

    original_enrich = core_responses.BaseResponse._enrich_response

    def enrich_response(headers: dict[str, str], body: Any) -> tuple[dict[str, str], Any]:
        # moto puts the request id into an XML body with a regular expression run over any
        # body, a query's half megabyte of JSON too: where there is no tag, the body is left
        # out of it (the headers still get what moto gives them).
        if isinstance(body, str) and "<RequestId>" not in body:
            return original_enrich(headers, "")[0], body
        return original_enrich(headers, body)  # type: ignore[no-any-return]

    core_responses.BaseResponse._enrich_response = staticmethod(enrich_response)  # type: ignore[method-assign,assignment]

    class _CopyUnlessReadOnly:
        """`copy` as moto's table module sees it: the results of a read-only query (`query`
        above) are handed on as a new list of the same items."""

        def __getattr__(self, name: str) -> Any:
            return getattr(copy, name)

        def deepcopy(self, value: Any, memo: Any = None) -> Any:
            if getattr(only, "read_only", False) and type(value) is list:
                FAST_HITS["dynamodb.query-uncopied"] += 1
                return list(value)
            return copy.deepcopy(value, memo)

    import moto.dynamodb.models.table as table_module

    table_module.copy = _CopyUnlessReadOnly()  # type: ignore[assignment]

    Table.all_items = all_items  # type: ignore[method-assign]
    Table.query = query  # type: ignore[method-assign]

    from moto.core.utils import unix_time
    from moto.sqs.models import SQSBackend

    def is_message_valid_based_on_retention_period(
        self: Any, queue_name: str, message: Any
    ) -> bool:
        # moto builds every attribute of the queue (camel-casing each name) to read this one, for
        # every message it hands out.
        queue = self.get_queue(queue_name)
        retain_until = int(queue.message_retention_period) + message.sent_timestamp / 1000
        return bool(retain_until > unix_time())

    SQSBackend.is_message_valid_based_on_retention_period = (  # type: ignore[method-assign]
        is_message_valid_based_on_retention_period
    )

    from assay_local import moto_expressions

    moto_expressions._cache_expression_parsing()
    moto_expressions._cache_condition_parses()
    _cheaper_items()
    moto_expressions._plain_updates()
    _fast_results()
    _plain_parameters()


_PLAIN_INPUT: dict[str, frozenset[str] | None] = {}


def _plain_input(operation: str) -> frozenset[str] | None:
    """The top-level members of a DynamoDB operation's input when its JSON, as `json.loads`
    reads it, is what moto's request parser makes of it but for `AttributeValue` binaries (no
    timestamp, float or other blob anywhere in its input shape); None when it is not."""
    if operation in _PLAIN_INPUT:
        return _PLAIN_INPUT[operation]
    from moto.core.responses import get_service_model

    shape = get_service_model("dynamodb").operation_model(operation).input_shape
    plain = True
    seen: set[str] = set()

    def walk(node: Any, member: str | None) -> None:
        nonlocal plain
        if node.name in seen:
            return
        seen.add(node.name)
        kind = node.type_name
        if kind in ("timestamp", "float", "double") or (
            kind == "blob" and member not in ("B", "BS")
        ):
            plain = False
        elif kind == "structure":
            for name, inner in node.members.items():
                walk(inner, name)
        elif kind == "list":
            walk(node.member, member)
        elif kind == "map":
            walk(node.value, None)

    walk(shape, None)
    found = frozenset(shape.members) if plain and shape is not None else None
    _PLAIN_INPUT[operation] = found
    return found


def _holds_null(value: Any) -> bool:
    """Whether a JSON value (as `json.loads` made it) holds a `null` anywhere."""
    if value is None:
        return True
    kind = type(value)
    if kind is dict:
        return any(_holds_null(v) for v in value.values())
    if kind is list:
        return any(_holds_null(v) for v in value)
    return False


def _plain_parameters() -> None:
    """DynamoDB requests' parameters read by `json.loads` (issue 12: moto's request parser walks
    the operation's input shape member by member, ~11 % of its process under one lane of the
    pipeline benchmark).

    For the JSON protocol the parser turns an input into what `json.loads` gives, except that it
    decodes blobs, parses timestamps and floats, and leaves out members that are null or not in
    the shape. A request takes the plain path when its operation's input has no timestamp, float
    or blob but `AttributeValue`'s `B`/`BS`, its body names neither, holds no `null` (the text
    inside a string is none), and its top-level members are all the input's; anything else, and
    a body that is not a JSON object, goes through moto's parser. With `VERIFY` on both are
    computed and compared."""
    from moto.dynamodb.responses import DynamoHandler

    from chalicelib.adapters.dynamo_parser import BINARY

    original = DynamoHandler.parse_parameters

    def parse_parameters(self: Any, request: Any) -> None:
        body = request.data
        operation = self._get_action()
        members = _plain_input(operation) if operation in FAST_OPERATIONS["dynamodb"] else None
        if (
            members is None
            or not isinstance(body, bytes)
            or BINARY.search(body)
            or "x-amz-json" not in (request.content_type or "")
        ):
            return original(self, request)
        try:
            params = json.loads(body)
        except ValueError:
            return original(self, request)
        if type(params) is not dict or not members.issuperset(params):
            return original(self, request)
        # The text `null` inside a string (an attempt's scores, as JSON text) is no null.
        if b"null" in body and _holds_null(params):
            return original(self, request)
        FAST_HITS["dynamodb.plain-parameters"] += 1
        if VERIFY:
            original(self, request)
            if self.params != params:
                MISMATCHES.append(
                    {"operation": f"parameters of {operation}", "fast": params, "moto": self.params}
                )
                return None
        self.params = params
        return None

    DynamoHandler.parse_parameters = parse_parameters  # type: ignore[method-assign]


def _fast_results() -> None:
    """`DynamoResult`'s conversion of a result to plain dicts, written for the types a result
    holds (moto's re-imports `DynamoType` at every value of every item: ~8 % of its process under
    the pipeline benchmark); anything else still goes through moto's own, and with `VERIFY` on
    both are compared."""
    from moto.dynamodb import responses
    from moto.dynamodb.models.dynamo_type import DynamoType, LimitedSizeDict

    original = responses.dynamo_to_dict
    plain_types = (str, bool, int, float, type(None))

    def convert(value: Any) -> Any:
        kind = type(value)
        if kind is DynamoType:
            name, inner = value.type, value.value
            if name in ("B", "BS"):
                return original(value)
            if type(inner) in plain_types:
                return {name: inner}
            return {name: convert(inner)}
        if kind is dict or kind is LimitedSizeDict:
            return {k: convert(v) for k, v in value.items()}
        if kind is list:
            return [convert(v) for v in value]
        if kind in plain_types:
            return value
        return original(value)

    def dynamo_to_dict(value: Any) -> Any:
        fast = convert(value)
        if VERIFY:
            slow = original(value)
            if fast != slow:
                MISMATCHES.append({"operation": "dynamo_to_dict", "fast": fast, "moto": slow})
                return slow
        return fast

    responses.dynamo_to_dict = dynamo_to_dict  # type: ignore[assignment]


def _cheaper_items() -> None:
    """Two costs moto pays on every write of an item, whatever it holds.

    - `Item(...)` adds its attributes one by one to a `LimitedSizeDict`, which sums the size of
      every attribute already there on each insert (quadratic in the attributes, and every nested
      value walked each time). The sizes only grow as attributes are added, so the limit is
      passed on some insert exactly when the whole is past it: one sum at the end decides the
      same, and raises the same `ItemSizeTooLarge`.
    - `update_item` deep-copies the stored item first, only for a stream's old image. While no
      table has a stream, the copy is skipped.
    """
    from moto.dynamodb import models as dynamodb_models
    from moto.dynamodb.exceptions import ItemSizeTooLarge
    from moto.dynamodb.models.dynamo_type import DynamoType, Item, LimitedSizeDict
    from moto.dynamodb.models.table import Table
    from moto.dynamodb.models.utilities import bytesize

    def item_init(
        self: Any,
        hash_key: Any,
        range_key: Any,
        attrs: dict[str, Any],
    ) -> None:
        self.hash_key = hash_key
        self.range_key = range_key
        values = {key: DynamoType(value) for key, value in attrs.items()}
        total = sum(
            bytesize(key) + (v.size() if type(v) is DynamoType else bytesize(str(v)))
            for key, v in values.items()
        )
        if total > _ITEM_LIMIT:
            raise ItemSizeTooLarge
        kept = LimitedSizeDict.__new__(LimitedSizeDict)
        dict.update(kept, values)
        self.attrs = kept

    Item.__init__ = item_init  # type: ignore[method-assign]

    streams = {"on": False}
    original_streams = Table.set_stream_specification

    def set_stream_specification(self: Any, streams_spec: Any) -> None:
        original_streams(self, streams_spec)
        if self.stream_shard is not None:
            streams["on"] = True

    Table.set_stream_specification = set_stream_specification  # type: ignore[method-assign]

    class _StreamlessCopy:
        """`copy` as `moto.dynamodb.models` uses it: only `update_item`'s old image for a
        stream."""

        @staticmethod
        def deepcopy(value: Any, memo: Any = None) -> Any:
            if type(value) is Item and not streams["on"]:
                return value
            return copy.deepcopy(value, memo)

    dynamodb_models.copy = _StreamlessCopy  # type: ignore[attr-defined]


_ITEM_LIMIT = 405_000
"""moto's item size limit in bytes (`LimitedSizeDict.__setitem__`)."""
