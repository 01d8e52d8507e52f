"""Deliver case-task messages by hand (pollers paused), the way SQS and Lambda would, so tests can
redeliver, deliver concurrently, crash a worker mid-way, or exhaust a message into the DLQ."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import boto3

from chalicelib import names


@dataclass
class Delivery:
    body: str
    receipt: str
    receive_count: int

    @property
    def task(self) -> dict[str, Any]:
        return json.loads(self.body)


class Queue:
    """The case-task queue (or its DLQ) of the embedded stack, for manual delivery."""

    def __init__(self, stack: Any, name: str = names.CASE_TASKS_QUEUE) -> None:
        self.sqs = boto3.client("sqs", endpoint_url=stack.endpoint_url, region_name="us-east-1")
        self.url = stack.queue_urls[name]

    def receive(self, max_messages: int = 10, wait_s: int = 0) -> list[Delivery]:
        resp = self.sqs.receive_message(
            QueueUrl=self.url,
            MaxNumberOfMessages=max_messages,
            WaitTimeSeconds=wait_s,
            MessageSystemAttributeNames=["All"],
        )
        return [
            Delivery(m["Body"], m["ReceiptHandle"], int(m["Attributes"]["ApproximateReceiveCount"]))
            for m in resp.get("Messages", [])
        ]

    def delete(self, d: Delivery) -> None:
        self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=d.receipt)

    def release(self, d: Delivery) -> None:
        """Make a received message visible again at once (as if its visibility timeout ran out)."""
        self.sqs.change_message_visibility(
            QueueUrl=self.url, ReceiptHandle=d.receipt, VisibilityTimeout=0
        )

    def drain(self) -> None:
        while True:
            batch = self.receive()
            if not batch:
                return
            for d in batch:
                self.delete(d)
