"""Deliver case-task messages by hand (pollers paused), the way SQS and Lambda would, so tests can
redeliver, deliver concurrently, crash a worker mid-way, or exhaust a message into the DLQ."""

from __future__ import annotations

import json
from dataclasses import dataclass
from typing import Any

import boto3

from chalicelib import names
from chalicelib.domain.run_rules import attempt_key


@dataclass
class Delivery:
    body: str
    receipt: str
    receive_count: int
    message_id: str
    attributes: dict[str, str]

    @property
    def task(self) -> dict[str, Any]:
        return json.loads(self.body)


class Queue:
    """The case-task queue (or its DLQ) of the embedded stack, for manual delivery."""

    def __init__(self, stack: Any, name: str = names.CASE_TASKS_QUEUE) -> None:
        self.sqs = boto3.client("sqs", endpoint_url=stack.endpoint_url, region_name="us-east-1")
        self.url = stack.queue_urls[name]

    def send(self, body: str) -> None:
        """Send one message: a copy of a task is a message of its own (its own message id)."""
        self.sqs.send_message(QueueUrl=self.url, MessageBody=body)

    def receive(self, max_messages: int = 10, wait_s: int = 0) -> list[Delivery]:
        resp = self.sqs.receive_message(
            QueueUrl=self.url,
            MaxNumberOfMessages=max_messages,
            WaitTimeSeconds=wait_s,
            MessageSystemAttributeNames=["All"],
            MessageAttributeNames=["All"],
        )
        return [
            Delivery(
                m["Body"],
                m["ReceiptHandle"],
                int(m["Attributes"]["ApproximateReceiveCount"]),
                m["MessageId"],
                {k: v["StringValue"] for k, v in m.get("MessageAttributes", {}).items()},
            )
            for m in resp.get("Messages", [])
        ]

    def delete(self, d: Delivery) -> None:
        self.sqs.delete_message(QueueUrl=self.url, ReceiptHandle=d.receipt)

    def release(self, d: Delivery) -> None:
        """Make a received message visible again at once (as if its visibility timeout ran out)."""
        self.sqs.change_message_visibility(
            QueueUrl=self.url, ReceiptHandle=d.receipt, VisibilityTimeout=0
        )

    def lapse(self, d: Delivery, container: Any) -> None:
        """As if the message's visibility timeout ran out after its worker died: visible again, and
        the lease that delivery held on its attempt (as long as the visibility) lapsed with it."""
        task = d.task
        run = container.runs.get(task["org_id"], task["run_id"])
        key = attempt_key(task["arm_id"], task["case_id"], int(task["attempt"]))
        container.runs.release_lease(run, key, d.message_id)
        self.release(d)

    def drain(self) -> None:
        while True:
            batch = self.receive()
            if not batch:
                return
            for d in batch:
                self.delete(d)
