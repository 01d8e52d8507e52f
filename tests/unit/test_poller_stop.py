"""The local SQS poller's stop (assay_local.poller): a stop that does not wait for long polls
returns while a receive is still out, once the running handlers are done; a message that
receive brings back after the stop is handed back (visibility 0), never handled."""

from __future__ import annotations

import threading
from typing import Any

from assay_local.poller import SqsPoller


class _Queue:
    """A fake SQS client: each receive blocks until the test releases it with a message."""

    def __init__(self) -> None:
        self.release = threading.Event()
        self.receiving = threading.Event()
        self.handed_back: list[tuple[str, int]] = []
        self.deleted: list[str] = []
        self._served = 0

    def get_queue_url(self, QueueName: str) -> dict[str, str]:  # noqa: N803 - boto3's names
        return {"QueueUrl": f"http://q/{QueueName}"}

    def get_queue_attributes(self, **_: Any) -> dict[str, Any]:
        return {"Attributes": {"QueueArn": "arn:aws:sqs:us-east-1:0:q", "VisibilityTimeout": "30"}}

    def receive_message(self, **_: Any) -> dict[str, Any]:
        self.receiving.set()
        self.release.wait(30)
        self._served += 1
        return {
            "Messages": [
                {"MessageId": f"m{self._served}", "ReceiptHandle": f"r{self._served}", "Body": "{}"}
            ]
        }

    def change_message_visibility(
        self,
        QueueUrl: str,  # noqa: N803
        ReceiptHandle: str,  # noqa: N803
        VisibilityTimeout: int,  # noqa: N803
    ) -> None:
        self.handed_back.append((ReceiptHandle, VisibilityTimeout))

    def delete_message_batch(self, QueueUrl: str, Entries: list[dict[str, str]]) -> dict:  # noqa: N803
        self.deleted.extend(e["ReceiptHandle"] for e in Entries)
        return {"Successful": [{"Id": e["Id"]} for e in Entries], "Failed": []}


def test_a_stop_not_waiting_for_receives_hands_back_what_arrives_after_it() -> None:
    queue = _Queue()
    handled: list[Any] = []
    poller = SqsPoller(
        queue_name="q",
        handler=lambda event, context: handled.append(event),
        client=queue,
        region="us-east-1",
        workers=1,
        wait_seconds=20,
    ).start()
    assert queue.receiving.wait(30)

    poller.stop(timeout=30, wait_for_receives=False)  # returns with the receive still out
    assert not queue.release.is_set()

    queue.release.set()  # the long poll answers after the stop
    poller._threads[0].join(30)
    assert not poller._threads[0].is_alive()
    assert handled == []
    assert queue.handed_back == [("r1", 0)]


def test_a_stop_waits_for_a_running_handler() -> None:
    queue = _Queue()
    queue.release.set()
    started, finish = threading.Event(), threading.Event()
    done: list[str] = []

    def handler(event: Any, context: Any) -> None:
        if done:
            return
        started.set()
        finish.wait(30)
        done.append("handled")

    poller = SqsPoller(
        queue_name="q", handler=handler, client=queue, region="us-east-1", workers=1
    ).start()
    assert started.wait(30)
    stopper = threading.Thread(target=poller.stop, kwargs={"wait_for_receives": False})
    stopper.start()
    stopper.join(0.2)
    assert stopper.is_alive()  # held by the handler, not by a receive
    finish.set()
    stopper.join(30)
    assert not stopper.is_alive()
    assert done == ["handled"]


def test_a_stop_leaves_a_running_handler_no_time_to_carry_on() -> None:
    queue = _Queue()
    queue.release.set()
    started, stopping = threading.Event(), threading.Event()
    left: list[int] = []

    def handler(event: Any, context: Any) -> None:
        if left:
            return
        left.append(context.get_remaining_time_in_millis())
        started.set()
        stopping.wait(30)
        # As the case worker asks before carrying on with its lane's next task.
        left.append(context.get_remaining_time_in_millis())

    poller = SqsPoller(
        queue_name="q", handler=handler, client=queue, region="us-east-1", workers=1
    ).start()
    assert started.wait(30)
    poller.signal_stop()
    stopping.set()
    poller.stop(timeout=30, wait_for_receives=False)
    assert left[0] > 20_000 and left[1] == 0
