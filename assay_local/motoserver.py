"""moto's server, embedded in our process, with the fixes assay needs (docs/guides/local-stack.md).

moto 5.2.5 as shipped has two problems for a service that decides everything with
conditional writes (and a third, 3., for one that receives and deletes from several threads):

1. `TransactWriteItems` is not atomic under concurrent requests. The server handles each request
   on its own thread and moto checks conditions, then writes, with no lock; with 24 threads doing
   the same conditional put we saw two winners. We serialize every DynamoDB request (and only
   those: SQS long polls must keep running side by side, or one 1 s poll would stall the stack).
2. `DynamoDBBackend.transact_write_items` deep-copies every table a transaction touches, so its
   cost grows with table size (57 ms per transaction at 2,000 items, ~200 ms at 8,000). We replace
   it with a version that snapshots only the items the transaction touches and puts exactly those
   back when it fails.

3. SQS `ReceiveMessage` iterates a queue's live set of pending messages while a delete on another
   thread changes it, and answers 500 ("Set changed size during iteration"); it iterates a
   snapshot instead (`patch_sqs_pending_groups`).

The same WSGI wrapper counts AWS requests by operation; the benchmark reads those counts. And
`assay_local.motofast` takes the requests assay makes all the time along faster paths through
moto (issue 12), checked against moto's own answers.

moto keeps its state in process-global backends: two servers started in one process share it,
and so does `moto.mock_aws` used in the same process. Call `reset()` between tests.
"""

from __future__ import annotations

import copy
import errno
import http.server
import io
import json
import logging
import os
import re
import sys
import threading
import urllib.request
from collections import Counter
from collections.abc import Callable, Iterable
from typing import Any
from urllib.parse import parse_qs, unquote

from assay_local import motofast
from assay_local.motostate import GateClosedError, StateGate

log = logging.getLogger(__name__)

EMPTY_RECEIVE_KEY = "sqs.ReceiveMessage.empty"
"""Key of `MotoHandle.requests()` counting ReceiveMessage responses with no message.

A subset of `sqs.ReceiveMessage`, not extra requests: `total_requests()` leaves it out.
"""


PATCHED_MOTO = ((5, 2, 5), (5, 3, 0))
"""The moto releases these patches were written for and checked against: [5.2.5, 5.3.0)."""


class UnsupportedMotoError(RuntimeError):
    """The installed moto is not one `PATCHED_MOTO` covers: its internals may have moved."""


class PortTakenError(RuntimeError):
    """A server of the embedded stack could not listen on its port: something else holds it. The
    message is one line naming the port (`port`)."""

    def __init__(self, port: int, message: str) -> None:
        super().__init__(message)
        self.port = port


class MotoStartError(RuntimeError):
    """The moto process did not start; the message is its own one-line reason (a port in use, a
    saved state it cannot restore) when it gave one."""


def port_taken(port: int, flag: str | None = None) -> PortTakenError:
    """The error for `port` of 127.0.0.1 being in use; `flag` names the option that chooses
    another."""
    how = f"choose another with {flag}" if flag else "choose another port"
    return PortTakenError(
        port,
        f"port {port} on 127.0.0.1 is in use (another assay dev?): stop what holds it, or {how}",
    )


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
            f">={shown[0]},<{shown[1]} only (assay_local/motoserver.py): install that range "
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


# --- request counting and 1. the DynamoDB lock -----------------------------------------------


class RequestCounter:
    """Thread-safe counts of AWS requests keyed `"service.Operation"` (e.g. `dynamodb.PutItem`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, key: str) -> None:
        with self._lock:
            self._counts[key] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


def _credential_service(environ: dict[str, Any]) -> str | None:
    """The signing service of a SigV4 request (`sqs`, `s3`, ...), from its credential scope."""
    auth = environ.get("HTTP_AUTHORIZATION", "")
    scope = ""
    if "Credential=" in auth:
        scope = auth.split("Credential=", 1)[1].split(",", 1)[0]
    else:  # presigned URL
        scope = parse_qs(environ.get("QUERY_STRING", "")).get("X-Amz-Credential", [""])[0]
    parts = scope.split("/")
    return parts[3] if len(parts) >= 5 else None


def _form_action(environ: dict[str, Any]) -> str | None:
    """`Action` of a query-protocol request; the body is read and put back for moto."""
    action = parse_qs(environ.get("QUERY_STRING", "")).get("Action", [None])[0]
    if action:
        return action
    if not environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded"):
        return None
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return parse_qs(body.decode("utf-8", "replace")).get("Action", [None])[0]


def _operation(environ: dict[str, Any]) -> str:
    """`"service.Operation"` of one request: X-Amz-Target, else `Action`, else S3's method."""
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    method = environ.get("REQUEST_METHOD", "GET")
    if target.startswith("DynamoDB_"):
        return "dynamodb." + target.split(".", 1)[-1]
    if target.startswith("AmazonSQS."):
        return "sqs." + target.split(".", 1)[-1]
    service = _credential_service(environ) or "unknown"
    if target:
        return f"{service}.{target.split('.', 1)[-1]}"
    if service == "s3":
        return f"s3.{method}"
    action = _form_action(environ)
    return f"{service}.{action or method}"


def _receive_was_empty(status: str, body: bytes) -> bool:
    """True when a 200 ReceiveMessage response (JSON or XML protocol) holds no message."""
    if not status.startswith("200"):
        return False
    stripped = body.lstrip()
    if stripped.startswith(b"{"):
        try:
            return not json.loads(body).get("Messages")
        except ValueError:
            return False
    return b"<Message>" not in body


def _json_response(
    start_response: Callable[..., Any], value: Any, status: str = "200 OK"
) -> list[bytes]:
    """An `application/json` answer of one of our own paths (counts, fast paths, SES)."""
    body = json.dumps(value).encode()
    start_response(
        status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


_READ_ONLY_PREFIXES = ("Get", "BatchGet", "TransactGet", "Describe", "List", "Query", "Scan")


def _changes_state(operation: str) -> bool:
    """Whether a request (`"service.Operation"`, `_operation`'s key) may change moto's state: a
    saved state is written again only after one did. Reads by their names; S3 by its method."""
    service, _, name = operation.partition(".")
    if service == "s3":
        return name not in ("GET", "HEAD")
    return bool(name) and not name.startswith(_READ_ONLY_PREFIXES)


class _CountingSerializingApp:
    """WSGI middleware in front of moto: counts requests, serializes DynamoDB ones.

    Responses of serialized requests are read to the end inside the lock, so no DynamoDB work
    (moto may build a body lazily) escapes it.
    """

    def __init__(
        self,
        app: Callable[..., Iterable[bytes]],
        counter: RequestCounter,
        serialize_dynamodb: bool,
        gate: StateGate | None = None,
    ) -> None:
        self._app = app
        self._counter = counter
        self._serialize = serialize_dynamodb
        self._dynamodb_lock = threading.Lock()
        self._gate = gate

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        gate = self._gate
        if gate is None or environ.get("PATH_INFO", "").startswith("/_assay/"):
            return self._route(environ, start_response)
        # A saved state (`assay_local.motostate`): the request, its body included, is handled
        # inside the gate, so a snapshot sees it whole or not at all.
        try:
            with gate.shared():
                status, body = self._buffered(environ, start_response, None)
        except GateClosedError:
            stopping = {"message": "the local stack is stopping"}
            return _json_response(start_response, stopping, "503 Service Unavailable")
        operation = environ.get("assay.operation", "")
        if _changes_state(operation) and not (
            operation == "sqs.ReceiveMessage" and _receive_was_empty(status, body[0])
        ):
            gate.touch()
        return body

    def _route(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith(COUNTS_PATH):
            # The counts of a server in another process (`start_moto_process`) are read over HTTP.
            if environ.get("REQUEST_METHOD") == "POST":
                self._counter.clear()
            return _json_response(start_response, self._counter.snapshot())
        if path.startswith(FAST_PATHS_PATH):
            return _json_response(
                start_response,
                {"hits": dict(motofast.FAST_HITS), "mismatches": motofast.MISMATCHES},
            )
        if path.startswith(SES_SENT_PATH):
            return _json_response(start_response, _ses_sent())
        if path.startswith("/moto-api"):
            environ["assay.operation"] = "moto-api.POST"  # a reset changes everything
            return self._app(environ, start_response)
        operation = environ["assay.operation"] = _operation(environ)
        self._counter.add(operation)
        service = operation.split(".", 1)[0]
        if operation.startswith("dynamodb.") and self._serialize:
            with self._dynamodb_lock:
                return self._buffered(environ, start_response, service)[1]
        if operation == "sqs.ReceiveMessage":
            status, body = self._buffered(environ, start_response, service)
            if _receive_was_empty(status, body[0]):
                self._counter.add(EMPTY_RECEIVE_KEY)
            return body
        answered = motofast.direct(environ, start_response, service)
        if answered is not None:
            return answered
        return self._app(environ, start_response)

    def _buffered(
        self, environ: dict[str, Any], start_response: Callable[..., Any], service: str | None
    ) -> tuple[str, list[bytes]]:
        """`(status, [body])` of the request read to its end: through `motofast` or moto's app
        for `service`, or through `_route` (None)."""
        seen: list[str] = []

        def capture(status: str, headers: Any, exc_info: Any = None) -> Any:
            seen.append(status)
            return (
                start_response(status, headers, exc_info)
                if exc_info
                else start_response(status, headers)
            )

        result: Iterable[bytes]
        if service is None:
            result = self._route(environ, capture)
        else:
            direct = motofast.direct(environ, capture, service)
            if direct is not None:
                return (seen[0] if seen else ""), direct
            result = self._app(environ, capture)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return (seen[0] if seen else ""), [body]


# --- the server ------------------------------------------------------------------------------


class _KeepAliveHandler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive in front of a WSGI app.

    werkzeug's development server (what moto ships) closes the connection after every response,
    so each AWS request paid a TCP handshake and a new server thread. Our clients (botocore,
    PynamoDB) keep connections open; this handler serves request after request on one
    connection. Request bodies come with Content-Length or chunked; responses always carry a
    Content-Length (the app's body is buffered).
    """

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # status line, headers and body leave in one flush anyway

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - one line per request is noise
        pass

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is not None:
            return self.rfile.read(int(length))
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return b""

    def _environ(self, body: bytes) -> dict[str, Any]:
        path, _, query = self.path.partition("?")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": self.command,
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote(path),
            "QUERY_STRING": query,
            "RAW_URI": self.path,
            "REQUEST_URI": self.path,
            "SERVER_NAME": self.server.server_address[0],
            "SERVER_PORT": str(self.server.server_address[1]),
            "SERVER_PROTOCOL": self.request_version,
            "REMOTE_ADDR": self.client_address[0],
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        if self.headers.get("Content-Type"):
            environ["CONTENT_TYPE"] = self.headers["Content-Type"]
        for name, value in self.headers.items():
            key = "HTTP_" + name.upper().replace("-", "_")
            if key in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
                continue
            environ[key] = f"{environ[key]},{value}" if key in environ else value
        return environ

    def _serve(self) -> None:
        body = self._body()
        state: dict[str, Any] = {}

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            state["status"], state["headers"] = status, headers
            return lambda data: state.setdefault("written", []).append(data)

        result = self.server.app(self._environ(body), start_response)  # type: ignore[attr-defined]
        try:
            payload = b"".join(state.get("written", [])) + b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        code, _, reason = state["status"].partition(" ")
        self.send_response_only(int(code), reason)
        for name, value in state["headers"]:
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _serve


class KeepAliveWSGIServer(http.server.ThreadingHTTPServer):
    """A threaded HTTP server for a WSGI app, one thread per kept-alive connection."""

    daemon_threads = True

    def __init__(self, address: tuple[str, int], app: Callable[..., Iterable[bytes]]) -> None:
        self.app = app
        super().__init__(address, _KeepAliveHandler)


COUNTS_PATH = "/_assay/requests"
"""GET: the request counts as JSON; POST: zero them (served by our middleware, not moto)."""

SES_SENT_PATH = "/_assay/ses/sent"
FAST_PATHS_PATH = "/_assay/fast-paths"
"""`GET`: `{"hits": {"service.Operation": n}, "mismatches": [...]}` of `assay_local.motofast` (a
server in another process is checked over HTTP; `ASSAY_MOTO_VERIFY=1` makes it compare)."""
"""GET: every email moto's SES accepted, as JSON (moto keeps them only in its own process)."""


def _ses_sent() -> list[dict[str, Any]]:
    from moto.ses import ses_backends

    out = []
    for account in ses_backends.values():
        for backend in account.values():
            for m in backend.sent_messages:
                out.append(
                    {
                        "source": getattr(m, "source", None),
                        "destinations": getattr(m, "destinations", None),
                        "subject": getattr(m, "subject", None),
                        "body": getattr(m, "body", None),
                    }
                )
    return out


class MotoHandle:
    """A running embedded moto server.

    Attributes: `url` (`http://127.0.0.1:<port>`). Methods: `stop()`, `reset()` (wipe every
    backend), `requests()` / `total_requests()` / `reset_counts()` (AWS request counts).
    """

    def __init__(self, server: Any, url: str, counter: RequestCounter) -> None:
        self._server = server
        self.url = url
        self._counter = counter
        self._stopped = False

    def stop(self) -> None:
        """Shut the server down and free its port (idempotent)."""
        if self._stopped:
            return
        self._stopped = True
        self._server.stop()
        inner = getattr(self._server, "_server", None)
        if inner is not None:
            inner.server_close()  # ThreadedMotoServer.stop leaves the socket open

    def reset(self) -> None:
        """Wipe every moto backend in this process (`POST /moto-api/reset`); counts are kept.

        Raises `urllib.error.URLError` if the server is not running.
        """
        request = urllib.request.Request(f"{self.url}/moto-api/reset", data=b"", method="POST")
        with urllib.request.urlopen(request, timeout=10) as response:
            response.read()

    def requests(self) -> dict[str, int]:
        """Requests served since start or `reset_counts()`, by `"service.Operation"`.

        DynamoDB and SQS by operation (`dynamodb.TransactWriteItems`, `sqs.ReceiveMessage`), S3 by
        HTTP method (`s3.PUT`). `EMPTY_RECEIVE_KEY` (`sqs.ReceiveMessage.empty`) counts the
        ReceiveMessage responses that held no message; it is a subset, not extra requests.
        """
        return self._counter.snapshot()

    def total_requests(self) -> int:
        """Sum of `requests()` without the `.empty` subset."""
        return sum(n for key, n in self._counter.snapshot().items() if key != EMPTY_RECEIVE_KEY)

    def reset_counts(self) -> None:
        """Zero every request count."""
        self._counter.clear()

    def cpu_seconds(self) -> float:
        """CPU seconds (user + system) the server has used outside this process: 0.0 here, where
        it runs in this process's threads (its time is this process's own)."""
        return 0.0


def start_moto_server(
    *,
    port: int = 0,
    gate: StateGate | None = None,
    serialize_dynamodb: bool = True,
    patch_transactions: bool = True,
) -> MotoHandle:
    """Start moto's `ThreadedMotoServer` on 127.0.0.1 and return its handle.

    `port`: 0 (the default) lets the OS pick a free one. `gate`: every AWS request passes it
    (`assay_local.motostate`, for a saved state), and moto's long polls step out of it while they
    wait. `serialize_dynamodb` and `patch_transactions` exist so the unpatched behaviour can be
    reproduced by hand; leave both on. `patch_transactions=False` does not remove a patch that an
    earlier call installed (see `unpatch_transact_write_items`).

    Raises:
        PortTakenError: `port` is in use.
    """
    import moto
    from moto.moto_server.werkzeug_app import (
        DomainDispatcherApplication,
        create_backend_app,
    )
    from moto.server import ThreadedMotoServer

    check_moto_version(moto.__version__)
    if patch_transactions:
        patch_transact_write_items()
    patch_sqs_pending_groups()
    motofast.install()
    counter = RequestCounter()

    class FastDispatcher(DomainDispatcherApplication):
        # moto matches every request's host against hundreds of URL patterns (and lists its
        # modules) before dispatching: a fifth of the embedded stack's CPU under load. The answer
        # depends on the host alone, so remember it.
        def __init__(self, *args: Any, **kwargs: Any) -> None:
            super().__init__(*args, **kwargs)
            self._backend_by_host: dict[str | None, Any] = {}

        def get_backend_for_host(self, host: str | None) -> Any:
            try:
                return self._backend_by_host[host]
            except KeyError:
                backend = super().get_backend_for_host(host)
                self._backend_by_host[host] = backend
                return backend

    if gate is not None:
        from assay_local.motostate import release_gate_while_receives_wait

        release_gate_while_receives_wait(gate)

    class EmbeddedMotoServer(ThreadedMotoServer):
        # ThreadedMotoServer builds its WSGI app inside `_server_entry`; this is the same body
        # with our middleware around the app and a quiet request handler, and a bind that fails
        # reported to `start` (moto's own would leave `start` waiting for ever).
        bind_error: OSError | None = None

        def _server_entry(self) -> None:
            app = _CountingSerializingApp(
                FastDispatcher(create_backend_app), counter, serialize_dynamodb, gate
            )
            try:
                self._server = KeepAliveWSGIServer((self._ip_address, self._port), app)
            except OSError as exc:
                self.bind_error = exc
                self._server_ready_event.set()
                return
            self._server_ready_event.set()
            self._server.serve_forever()

    server = EmbeddedMotoServer(ip_address="127.0.0.1", port=port, verbose=False)
    server.start()
    if server.bind_error is not None:
        if server.bind_error.errno == errno.EADDRINUSE:
            raise port_taken(port) from server.bind_error
        raise server.bind_error
    host, bound = server.get_host_and_port()
    log.info("moto server on http://%s:%s", host, bound)
    return MotoHandle(server, f"http://{host}:{bound}", counter)


class MotoProcessHandle(MotoHandle):
    """A moto server running in a child process (its own interpreter, so its own GIL).

    Same interface as `MotoHandle`; counts are read over HTTP from `COUNTS_PATH`. With a saved
    state (`start_moto_process(state=...)`), `restored` is the header of the snapshot it started
    from (None: it started empty), `stop()` lets the child save a last time and `stopped` is what
    it said: `{"saved": path, "bytes": n}`, `{"unchanged": path}` or `{"error": message}`.
    """

    def __init__(
        self,
        process: Any,
        url: str,
        *,
        persistent: bool = False,
        restored: dict[str, Any] | None = None,
        save_timeout_s: float = 300.0,
    ) -> None:
        self._process = process
        self.url = url
        self._stopped = False
        self._persistent = persistent
        self._save_timeout_s = save_timeout_s
        self.restored = restored
        self.stopped: dict[str, Any] | None = None

    def stop(self) -> None:
        if self._stopped:
            return
        self._stopped = True
        if self._persistent:
            self._stop_saving()
            return
        self._process.terminate()
        try:
            self._process.wait(timeout=10)
        except Exception:  # noqa: BLE001 - a child that will not stop is killed
            self._process.kill()

    def _stop_saving(self) -> None:
        """Close the child's stdin (it stops serving, saves, says so and exits) and wait for it;
        a child that takes longer than `save_timeout_s` is killed (its last snapshot stays)."""
        import select

        try:
            self._process.stdin.close()
        except OSError:
            pass
        ready, _, _ = select.select([self._process.stdout], [], [], self._save_timeout_s)
        line = self._process.stdout.readline() if ready else ""
        try:
            said = json.loads(line) if line.strip() else None
        except ValueError:
            said = None
        self.stopped = (
            said
            if isinstance(said, dict)
            else {"error": "the moto process ended without saying it saved"}
        )
        try:
            self._process.wait(timeout=30)
        except Exception:  # noqa: BLE001 - a child that will not end is killed
            self._process.kill()

    def _counts(self, method: str) -> dict[str, int]:
        request = urllib.request.Request(
            f"{self.url}{COUNTS_PATH}", data=b"" if method == "POST" else None, method=method
        )
        with urllib.request.urlopen(request, timeout=10) as response:
            return json.loads(response.read())

    def requests(self) -> dict[str, int]:
        return self._counts("GET")

    def cpu_seconds(self) -> float:
        """CPU seconds (user + system) the child process has used, from `/proc/<pid>/stat`
        (Linux); 0.0 where that cannot be read."""
        try:
            with open(f"/proc/{self._process.pid}/stat") as f:
                fields = f.read().rsplit(")", 1)[1].split()
        except OSError:
            return 0.0
        # utime and stime are fields 14 and 15 of stat(5); the split drops the first two
        return (int(fields[11]) + int(fields[12])) / os.sysconf("SC_CLK_TCK")

    def total_requests(self) -> int:
        return sum(n for key, n in self.requests().items() if key != EMPTY_RECEIVE_KEY)

    def reset_counts(self) -> None:
        self._counts("POST")


def start_moto_process(
    timeout_s: float = 60.0,
    *,
    port: int = 0,
    state: os.PathLike[str] | str | None = None,
    min_save_interval_s: float = 2.0,
    pass_fds: tuple[int, ...] = (),
) -> MotoProcessHandle:
    """Start `start_moto_server()` in a child Python process and return its handle.

    The embedded stack runs moto out of process so the server's CPU work (moto parses, evaluates
    and serializes every request in Python) does not compete for one GIL with the handlers it
    serves. The child exits with its parent (it watches its stdin) and ignores Ctrl-C (the
    parent stops it).

    Args:
        timeout_s: how long the child may take to say where it listens (restoring a large state
            included), in seconds.
        port: where it listens on 127.0.0.1; 0 lets the OS pick a free port.
        state: a snapshot file (`assay_local.motostate`): restored at start when it exists, saved
            while serving and when stopped (also when this process dies: the child sees its stdin
            close). None keeps nothing.
        min_save_interval_s: the shortest time between two saves of a changed state.
        pass_fds: file descriptors the child inherits (a lock it keeps held while it saves).

    Raises:
        MotoStartError: the child did not start within `timeout_s`, or could not restore `state`
            (its one-line reason, naming --fresh).
        PortTakenError: `port` is in use.
    """
    import select
    import subprocess

    command = [sys.executable, "-m", "assay_local.motoserver", "--port", str(port)]
    if state is not None:
        command += ["--state", os.fspath(state), "--save-interval", str(min_save_interval_s)]
    process = subprocess.Popen(
        command, stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, pass_fds=pass_fds
    )
    line = ""
    ready, _, _ = select.select([process.stdout], [], [], timeout_s)
    if ready:
        line = process.stdout.readline().strip()  # type: ignore[union-attr]
    try:
        said = json.loads(line) if line.startswith("{") else {}
    except ValueError:
        said = {}
    url = said.get("url", "")
    if not isinstance(url, str) or not url.startswith("http://127.0.0.1:"):
        process.kill()
        process.wait()
        if said.get("port_taken"):
            raise port_taken(port)
        raise MotoStartError(said.get("error") or f"moto server process did not start ({line!r})")
    return MotoProcessHandle(
        process, url, persistent=state is not None, restored=said.get("restored")
    )


class _Stop(Exception):
    """SIGTERM in the moto process: stop serving, save, exit."""


def _say(value: dict[str, Any]) -> None:
    """One JSON line to the parent (which may be gone: then nobody listens)."""
    try:
        print(json.dumps(value), flush=True)
    except (BrokenPipeError, OSError):
        pass


def _serve_in_child(argv: list[str] | None = None) -> int:
    """Entry point of the child process: serve until the parent closes our stdin (or SIGTERM).

    Says one JSON line when it listens, `{"url": ..., "restored": header or null}`, or why it
    did not, `{"error": ...}` (`"port_taken": true` for a port in use); with `--state`, one more
    as it exits, after the last save. Exit status 0, or 1 when it did not start or the last save
    failed.
    """
    import argparse
    import gc
    import signal
    from pathlib import Path

    from assay_local import motostate

    parser = argparse.ArgumentParser(prog="python -m assay_local.motoserver")
    parser.add_argument("--port", type=int, default=0)
    parser.add_argument("--state", type=Path, default=None)
    parser.add_argument("--save-interval", type=float, default=2.0)
    args = parser.parse_args(argv)
    # Ctrl-C reaches every process of the terminal's group: the parent stops us (closing our
    # stdin), so a save is never cut short by the same key press.
    signal.signal(signal.SIGINT, signal.SIG_IGN)

    gate = motostate.StateGate() if args.state is not None else None
    restored = None
    try:
        if args.state is not None and args.state.exists():
            restored = motostate.restore(args.state)
        handle = start_moto_server(port=args.port, gate=gate)
    except PortTakenError as exc:
        _say({"error": str(exc), "port_taken": True})
        return 1
    except (motostate.SnapshotError, OSError) as exc:
        _say({"error": str(exc)})
        return 1
    saver = None
    if gate is not None:

        def report(message: str) -> None:
            print(f"assay dev: {message}", file=sys.stderr, flush=True)

        saver = motostate.Saver(
            args.state, gate, min_interval_s=args.save_interval, on_error=report
        ).start()

        def stop(*_: object) -> None:
            signal.signal(signal.SIGTERM, signal.SIG_IGN)  # a second one must not cut the save
            raise _Stop

        signal.signal(signal.SIGTERM, stop)
    status = 0
    try:
        # This process is the server alone: what it holds once up (moto, its backends,
        # botocore's models) stays until it exits, and the cyclic collector's full passes skip
        # it (one took ~0.1 s, holding every request of the stack, issue 12).
        gc.freeze()
        _say({"url": handle.url, "restored": restored})
        sys.stdin.read()  # returns when the parent exits or closes the pipe
    except _Stop:
        pass
    finally:
        handle.stop()
        if saver is not None:
            try:
                wrote = saver.stop()
                _say(
                    {"saved": str(args.state), "bytes": saver.last_bytes}
                    if wrote
                    else {"unchanged": str(args.state)}
                )
            except Exception as exc:  # noqa: BLE001 - said to the parent, which says it once
                _say({"error": f"could not save the local state to {args.state}: {exc}"})
                status = 1
    return status


if __name__ == "__main__":
    sys.exit(_serve_in_child())
