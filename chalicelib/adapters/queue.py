"""SQS adapter: case-task messages and visibility extension (docs/architecture/exactly-once.md,
docs/architecture/slots.md, docs/guides/deploy.md)."""

from __future__ import annotations

import json
import logging
from collections.abc import Callable, Sequence
from typing import Any

from chalicelib.adapters.lazy import LazyClient
from chalicelib.services.ports.messaging import QueueSendError

log = logging.getLogger(__name__)


class SqsQueue(LazyClient):
    """One SQS queue, addressed by name; its URL is looked up once.

    Args:
        client_factory: returns a boto3 SQS client (built lazily, never at import).
        queue_name: the queue's name (see `chalicelib.names`).
    """

    def __init__(self, client_factory: Callable[[], Any], queue_name: str) -> None:
        super().__init__(client_factory)
        self.queue_name = queue_name
        self._url: str | None = None

    @property
    def url(self) -> str:
        if self._url is None:
            self._url = self.client.get_queue_url(QueueName=self.queue_name)["QueueUrl"]
        return self._url

    def send(self, bodies: Sequence[dict[str, Any]]) -> None:
        """Send JSON bodies, ten per request; every entry's `Failed` is checked.

        Raises:
            QueueSendError: with the bodies that could not be sent after one retry.
        """
        failed: list[dict[str, Any]] = []
        for start in range(0, len(bodies), 10):
            chunk = list(bodies[start : start + 10])
            for _ in range(2):
                entries = [
                    {"Id": str(i), "MessageBody": json.dumps(b, separators=(",", ":"))}
                    for i, b in enumerate(chunk)
                ]
                resp = self.client.send_message_batch(QueueUrl=self.url, Entries=entries)
                bad = {int(f["Id"]) for f in resp.get("Failed", [])}
                chunk = [b for i, b in enumerate(chunk) if i in bad]
                if not chunk:
                    break
            failed.extend(chunk)
        if failed:
            raise QueueSendError(failed)

    def send_text(self, body: str, attributes: dict[str, str]) -> None:
        """Send one message as it came (its text untouched) with string attributes (e.g. a DLQ's
        `reason`)."""
        self.client.send_message(
            QueueUrl=self.url,
            MessageBody=body,
            MessageAttributes={
                name: {"DataType": "String", "StringValue": value}
                for name, value in attributes.items()
            },
        )

    def send_one(self, body: dict[str, Any]) -> None:
        """Send one JSON body (one request)."""
        self.client.send_message(
            QueueUrl=self.url, MessageBody=json.dumps(body, separators=(",", ":"))
        )

    def extend_visibility(self, receipt_handle: str, seconds: int) -> None:
        """Keep a message invisible `seconds` more while its long case runs."""
        self.client.change_message_visibility(
            QueueUrl=self.url, ReceiptHandle=receipt_handle, VisibilityTimeout=seconds
        )

    def waiting(self) -> int:
        """SQS's `ApproximateNumberOfMessages`: messages visible, waiting for a worker."""
        attrs = self.client.get_queue_attributes(
            QueueUrl=self.url, AttributeNames=["ApproximateNumberOfMessages"]
        )["Attributes"]
        return int(attrs.get("ApproximateNumberOfMessages", 0))
