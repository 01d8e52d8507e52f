"""Lambda's SQS event-source mapping, in-process, for every Chalice `on_sqs_message` handler.

Per handler, N worker threads each long-poll the handler's queue for one message, hand it to the
handler as a real SQS Lambda event, delete it (in batches) when the handler returns and leave it
when the handler raises, so the queue's visibility timeout, `ApproximateReceiveCount` and
RedrivePolicy (DLQ after `maxReceiveCount`) behave as on AWS. Only queues with a registered
handler are polled (a DLQ is polled only because a handler is registered for it).

Delivery is at least once: moto, like SQS, may hand the same message to two receivers.
"""

from __future__ import annotations

import base64
import importlib
import logging
import threading
import time
import uuid
from collections import Counter
from collections.abc import Callable, Mapping
from dataclasses import dataclass
from types import ModuleType
from typing import Any

log = logging.getLogger(__name__)

LAMBDA_MAX_TIMEOUT_SECONDS = 900

DELETE_INTERVAL_S = 0.25
"""How long handled messages gather before one `DeleteMessageBatch` deletes them (ten at once go
at once). A delete is off every case's path: a message delivered again before its delete finds
its attempt's lease done and leaves."""


class LocalLambdaContext:
    """The parts of Lambda's context object handlers use.

    `get_remaining_time_in_millis()` counts down from `timeout_seconds` from construction.
    """

    def __init__(
        self,
        function_name: str,
        timeout_seconds: float,
        memory_limit_in_mb: int = 1024,
        region: str = "us-east-1",
        account_id: str = "123456789012",
    ) -> None:
        self.aws_request_id = str(uuid.uuid4())
        self.function_name = function_name
        self.function_version = "$LATEST"
        self.memory_limit_in_mb = memory_limit_in_mb
        self.invoked_function_arn = f"arn:aws:lambda:{region}:{account_id}:function:{function_name}"
        self.log_group_name = f"/aws/lambda/{function_name}"
        self.log_stream_name = "local"
        self._deadline = time.monotonic() + timeout_seconds

    def get_remaining_time_in_millis(self) -> int:
        """Milliseconds left before this invocation's timeout (never negative)."""
        return max(0, int((self._deadline - time.monotonic()) * 1000))

    def expire(self) -> None:
        """No time left from now on: the poller is stopping (see `SqsPoller.signal_stop`)."""
        self._deadline = min(self._deadline, time.monotonic())


def _lambda_message_attributes(attributes: dict[str, Any]) -> dict[str, Any]:
    """SQS API message attributes (`StringValue`, `DataType`) to the Lambda event's shape."""
    out: dict[str, Any] = {}
    for name, value in attributes.items():
        binary = value.get("BinaryValue")
        out[name] = {
            "stringValue": value.get("StringValue"),
            "binaryValue": base64.b64encode(binary).decode()
            if isinstance(binary, bytes)
            else binary,
            "stringListValues": value.get("StringListValues", []),
            "binaryListValues": [
                base64.b64encode(b).decode() if isinstance(b, bytes) else b
                for b in value.get("BinaryListValues", [])
            ],
            "dataType": value.get("DataType", "String"),
        }
    return out


def sqs_lambda_event(message: dict[str, Any], queue_arn: str, region: str) -> dict[str, Any]:
    """The Lambda event for one received SQS message: `{"Records": [record]}`.

    `message` is one entry of boto3's `receive_message()["Messages"]` (received with
    `MessageSystemAttributeNames=["All"]` and `MessageAttributeNames=["All"]`).
    """
    record: dict[str, Any] = {
        "messageId": message["MessageId"],
        "receiptHandle": message["ReceiptHandle"],
        "body": message["Body"],
        "attributes": dict(message.get("Attributes", {})),
        "messageAttributes": _lambda_message_attributes(message.get("MessageAttributes", {})),
        "md5OfBody": message.get("MD5OfBody", ""),
        "eventSource": "aws:sqs",
        "eventSourceARN": queue_arn,
        "awsRegion": region,
    }
    if "MD5OfMessageAttributes" in message:
        record["md5OfMessageAttributes"] = message["MD5OfMessageAttributes"]
    return {"Records": [record]}


def resolve_handler(
    app: Any, config: Any, app_module: ModuleType | None = None
) -> Callable[..., Any]:
    """The callable Lambda would invoke for an event source config (`(event, context) -> Any`).

    Chalice keeps it in `app.handler_map[config.name]` (an `EventSourceHandler`); Lambda finds
    it through `config.handler_string` (`"app.name"`, or `"<blueprint module>.name"`), which is
    the fallback here. Raises `LookupError` if neither finds it.
    """
    handler = getattr(app, "handler_map", {}).get(config.name)
    if handler is not None:
        return handler
    module_name, _, attr = config.handler_string.rpartition(".")
    module = app_module if app_module is not None and module_name == "app" else None
    if module is None:
        module = importlib.import_module(module_name)
    found = getattr(module, attr, None)
    if found is None:
        raise LookupError(f"no handler {config.handler_string!r} for event source {config.name!r}")
    return found


class _Deletes:
    """Deletes of handled messages, sent in `DeleteMessageBatch`es of up to 10 (as Lambda's
    event-source mapping deletes a batch): a handler that returned is queued here, and one thread
    sends what gathered every `interval` seconds, so deleting costs a fraction of a request per
    message when several finish together. A delete that never goes (the process died) only
    means a redelivery, which the handlers take as the duplicate it is."""

    def __init__(self, client: Any, queue_url: str, queue_name: str, interval: float) -> None:
        self._client, self._url, self._name, self._interval = (
            client,
            queue_url,
            queue_name,
            interval,
        )
        self._pending: list[str] = []
        self._lock = threading.Lock()
        self._wake = threading.Event()
        self._stop = threading.Event()
        self._thread = threading.Thread(
            target=self._run, name=f"sqs-{queue_name}-deletes", daemon=True
        )
        self._thread.start()

    def add(self, receipt_handle: str) -> None:
        with self._lock:
            self._pending.append(receipt_handle)
            full = len(self._pending) >= 10
        if full:
            self._wake.set()

    def _run(self) -> None:
        while not self._stop.is_set():
            self._wake.wait(self._interval)
            self._wake.clear()
            self.flush()
        self.flush()

    def flush(self) -> None:
        """Send every pending delete now."""
        while True:
            with self._lock:
                batch, self._pending = self._pending[:10], self._pending[10:]
            if not batch:
                return
            try:
                reply = self._client.delete_message_batch(
                    QueueUrl=self._url,
                    Entries=[{"Id": str(i), "ReceiptHandle": r} for i, r in enumerate(batch)],
                )
                failed = reply.get("Failed") or []
            except Exception:  # noqa: BLE001 - undeleted means redelivered: handlers are idempotent
                failed = batch
            if failed:
                log.warning(
                    "%d delete(s) from %s failed; those messages will be redelivered",
                    len(failed),
                    self._name,
                )

    def stop(self, timeout: float) -> None:
        """Send what is pending and stop the thread."""
        self._stop.set()
        self._wake.set()
        self._thread.join(timeout)


@dataclass
class PollerStats:
    """Counts of one poller since start: `received`, `succeeded`, `failed` (handler raised)."""

    received: int = 0
    succeeded: int = 0
    failed: int = 0


class SqsPoller:
    """N threads long-polling one queue for one handler (see module doc).

    Args:
        queue_name: the queue's name.
        handler: `(event, context) -> Any`; raising leaves the message for redelivery.
        client: a boto3 SQS client (thread-safe; its connection pool should exceed `workers`).
        region: put into each record's `awsRegion`.
        function_name: the context's `function_name`.
        workers: concurrent handler invocations (threads), default 8.
        wait_seconds: long-poll wait per receive, 0-20 s; `stop()` takes up to about this long.
        timeout_seconds: the context's timeout; default the queue's visibility timeout, at most
            Lambda's 900 s.
    """

    def __init__(
        self,
        *,
        queue_name: str,
        handler: Callable[..., Any],
        client: Any,
        region: str,
        function_name: str | None = None,
        workers: int = 8,
        wait_seconds: int = 1,
        timeout_seconds: float | None = None,
    ) -> None:
        if workers < 1:
            raise ValueError("workers must be >= 1")
        self.queue_name = queue_name
        self.function_name = function_name or queue_name
        self.stats = PollerStats()
        self._handler = handler
        self._client = client
        self._region = region
        self._workers = workers
        self._wait_seconds = wait_seconds
        self._stop = threading.Event()
        self._threads: list[threading.Thread] = []
        self._handling = 0
        self._contexts: set[LocalLambdaContext] = set()
        self._idle = threading.Condition()
        self._stats_lock = threading.Lock()
        self.queue_url: str = client.get_queue_url(QueueName=queue_name)["QueueUrl"]
        attrs = client.get_queue_attributes(
            QueueUrl=self.queue_url, AttributeNames=["QueueArn", "VisibilityTimeout"]
        )["Attributes"]
        self.queue_arn: str = attrs["QueueArn"]
        self._timeout_seconds = (
            timeout_seconds
            if timeout_seconds is not None
            else min(float(attrs.get("VisibilityTimeout", 30)), LAMBDA_MAX_TIMEOUT_SECONDS)
        )
        self._deletes: _Deletes | None = None

    def start(self) -> SqsPoller:
        """Start the worker threads (daemon threads named `sqs-<queue>-<i>`) and the one that
        deletes handled messages."""
        self._deletes = _Deletes(self._client, self.queue_url, self.queue_name, DELETE_INTERVAL_S)
        for i in range(self._workers):
            thread = threading.Thread(
                target=self._run, name=f"sqs-{self.queue_name}-{i}", daemon=True
            )
            thread.start()
            self._threads.append(thread)
        return self

    @property
    def handling(self) -> int:
        """Messages whose handler is running now."""
        with self._idle:
            return self._handling

    def signal_stop(self) -> None:
        """Ask workers to stop after their current receive or handler; returns at once.

        A running handler's invocation has no time left from now on, as a Lambda being shut
        down: one that asks before carrying on with the next task of its lane (the case worker)
        finishes the task in hand and queues the next as a message instead, which a later start
        of the stack delivers (`assay dev` keeps its queues across restarts).
        """
        with self._idle:
            self._stop.set()
            for context in self._contexts:
                context.expire()

    def stop(self, timeout: float | None = None, *, wait_for_receives: bool = True) -> None:
        """Ask workers to stop and wait for them (a running handler is allowed to finish).

        `wait_for_receives=False` waits for running handlers only, not for long polls in flight
        (a process about to exit need not sit out a 20 s wait): a worker whose receive answers
        after the stop hands its message back (visibility 0) and ends.
        """
        self.signal_stop()
        deadline = time.monotonic() + (timeout if timeout is not None else self._wait_seconds + 10)
        if wait_for_receives:
            for thread in self._threads:
                thread.join(max(0.0, deadline - time.monotonic()))
        else:
            with self._idle:
                self._idle.wait_for(
                    lambda: self._handling == 0, max(0.0, deadline - time.monotonic())
                )
        if self._deletes is not None:
            self._deletes.stop(max(1.0, deadline - time.monotonic()))

    def _count(self, field: str) -> None:
        with self._stats_lock:
            setattr(self.stats, field, getattr(self.stats, field) + 1)

    def _run(self) -> None:
        failures = 0
        while not self._stop.is_set():
            try:
                response = self._client.receive_message(
                    QueueUrl=self.queue_url,
                    MaxNumberOfMessages=1,  # batch_size=1: Chalice cannot report partial failures
                    WaitTimeSeconds=self._wait_seconds,
                    AttributeNames=["All"],  # older servers (LocalStack) read only this one
                    MessageSystemAttributeNames=["All"],
                    MessageAttributeNames=["All"],
                )
                failures = 0
            except Exception:  # noqa: BLE001 - a poller outlives a flaky endpoint, as Lambda's does
                if self._stop.is_set():
                    return
                failures += 1
                log.warning("receive from %s failed", self.queue_name, exc_info=failures == 1)
                self._stop.wait(min(5.0, 0.2 * 2 ** min(failures, 5)))
                continue
            messages = response.get("Messages", [])
            if not messages:
                continue
            with self._idle:  # the stop flag is set under this lock: a stop sees this handler
                stopped = self._stop.is_set()
                if not stopped:
                    self._handling += 1
            if stopped:
                self._hand_back(messages)
                return
            try:
                for message in messages:
                    self._deliver(message)
            finally:
                with self._idle:
                    self._handling -= 1
                    self._idle.notify_all()

    def _hand_back(self, messages: list[dict[str, Any]]) -> None:
        """Make messages received after a stop visible again at once (best effort: one that
        cannot be handed back comes back when its visibility lapses, as after any crash)."""
        for message in messages:
            try:
                self._client.change_message_visibility(
                    QueueUrl=self.queue_url,
                    ReceiptHandle=message["ReceiptHandle"],
                    VisibilityTimeout=0,
                )
            except Exception:  # noqa: BLE001 - the server may be going away with us
                log.info("could not hand back message %s", message.get("MessageId"))

    def _deliver(self, message: dict[str, Any]) -> None:
        self._count("received")
        event = sqs_lambda_event(message, self.queue_arn, self._region)
        context = LocalLambdaContext(self.function_name, self._timeout_seconds, region=self._region)
        with self._idle:
            if self._stop.is_set():
                context.expire()
            self._contexts.add(context)
        try:
            try:
                self._handler(event, context)
            finally:
                with self._idle:
                    self._contexts.discard(context)
        except Exception as exc:  # noqa: BLE001 - as Lambda: log, leave the message, SQS redelivers
            self._count("failed")
            if getattr(exc, "redelivery_expected", False):  # a handler's way of saying "later"
                log.info(
                    "message %s left on %s: %s", message.get("MessageId"), self.queue_name, exc
                )
                return
            log.exception(
                "handler %s failed on message %s (receive %s); left on %s",
                self.function_name,
                message.get("MessageId"),
                message.get("Attributes", {}).get("ApproximateReceiveCount"),
                self.queue_name,
            )
            return
        if self._deletes is not None:
            self._deletes.add(message["ReceiptHandle"])
        else:  # delivered by a caller that never started the poller's threads
            self._client.delete_message(
                QueueUrl=self.queue_url, ReceiptHandle=message["ReceiptHandle"]
            )
        self._count("succeeded")


class Pollers:
    """Every `SqsPoller` of an app; `stop()` stops them all, `by_queue` finds one by queue name."""

    def __init__(self, pollers: list[SqsPoller]) -> None:
        self.pollers = pollers
        self.by_queue: dict[str, SqsPoller] = {p.queue_name: p for p in pollers}

    def stats(self) -> dict[str, PollerStats]:
        """`PollerStats` by queue name."""
        return {p.queue_name: p.stats for p in self.pollers}

    def handling(self) -> int:
        """Messages whose handler is running now, over every poller."""
        return sum(p.handling for p in self.pollers)

    def stop(self, timeout: float | None = None, *, wait_for_receives: bool = True) -> None:
        """Stop every poller; all are signalled first, so stopping takes one poll wait, not N
        (`wait_for_receives=False`: only as long as the running handlers, see `SqsPoller.stop`)."""
        for poller in self.pollers:
            poller.signal_stop()
        for poller in self.pollers:
            poller.stop(timeout, wait_for_receives=wait_for_receives)


def sqs_event_sources(app: Any) -> list[Any]:
    """The app's `chalice.app.SQSEventConfig`s, in registration order."""
    from chalice.app import SQSEventConfig

    return [s for s in app.event_sources if isinstance(s, SQSEventConfig)]


def start_pollers(
    app: Any,
    *,
    endpoint_url: str | None,
    region: str,
    workers: int | Mapping[str, int] = 8,
    wait_seconds: int = 1,
    app_module: ModuleType | None = None,
    client_factory: Callable[[int], Any] | None = None,
) -> Pollers:
    """Start one `SqsPoller` per `on_sqs_message` handler of the Chalice `app`.

    Args:
        app: the `chalice.Chalice` object (blueprints registered).
        endpoint_url / region: where the queues are (None: AWS).
        workers: threads per handler: one number for all, or by handler name (the Chalice
            function name, e.g. `handle_case_task`) or queue name, with `"*"` for the others
            (default 1).
        wait_seconds: long-poll wait per receive.
        app_module: the module `app` lives in, for `handler_string` fallback (`resolve_handler`).
        client_factory: `(max_pool_connections) -> SQS client`; default boto3 with the endpoint.

    Raises:
        botocore.exceptions.ClientError: a handler's queue does not exist (run bootstrap first).
        LookupError: a handler cannot be found.
    """

    sessions: list[Any] = []

    def default_factory(pool: int) -> Any:
        import boto3
        from botocore.config import Config

        # One session for every poller's client: a session loads botocore's endpoint and service
        # data once (~40 ms each); its clients are independent and thread-safe.
        if not sessions:
            sessions.append(boto3.session.Session())
        session = sessions[0]
        keys: dict[str, str] = {}
        if endpoint_url and session.get_credentials() is None:
            # moto and LocalStack take any key, but botocore refuses to sign without one.
            keys = {"aws_access_key_id": "testing", "aws_secret_access_key": "testing"}
        return session.client(
            "sqs",
            endpoint_url=endpoint_url,
            region_name=region,
            **keys,
            config=Config(
                max_pool_connections=pool,
                retries={"max_attempts": 5, "mode": "standard"},
                read_timeout=wait_seconds + 30,
            ),
        )

    factory = client_factory or default_factory
    pollers: list[SqsPoller] = []
    seen: Counter[str] = Counter()
    try:
        for config in sqs_event_sources(app):
            queue_name = config.queue or config.queue_arn.rsplit(":", 1)[-1]
            seen[queue_name] += 1
            if seen[queue_name] > 1:
                # Two mappings on one queue split its messages on AWS too; allowed but unusual.
                log.warning("queue %s has %d handlers", queue_name, seen[queue_name])
            threads = (
                workers
                if isinstance(workers, int)
                else workers.get(config.name, workers.get(queue_name, workers.get("*", 1)))
            )
            poller = SqsPoller(
                queue_name=queue_name,
                handler=resolve_handler(app, config, app_module),
                client=factory(threads * 2 + 2),  # every worker may hold a receive and a delete
                region=region,
                function_name=config.name,
                workers=threads,
                wait_seconds=wait_seconds,
            )
            pollers.append(poller.start())
    except Exception:
        Pollers(pollers).stop()
        raise
    return Pollers(pollers)
