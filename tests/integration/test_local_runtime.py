"""The local runtime over moto's server: SQS pollers, the scheduler, the whole embedded stack.

Each test defines a tiny Chalice app of its own, so these tests do not depend on `app.py`.
"""

from __future__ import annotations

import json
import os
import threading
import time
import types
from collections.abc import Callable
from concurrent.futures import ThreadPoolExecutor
from datetime import UTC, datetime, timedelta
from typing import Any

import httpx
import pytest
from chalice import Chalice, Cron, Rate

from assay_local.motoserver import MotoHandle
from assay_local.poller import start_pollers
from assay_local.scheduler import Scheduler, aws_cron_to_unix, parse_rate
from assay_local.stack import EmbeddedStack
from chalicelib import names

Client = Callable[..., Any]


def _wait_for(predicate: Callable[[], bool], timeout: float, what: str) -> None:
    deadline = time.monotonic() + timeout
    while not predicate():
        if time.monotonic() > deadline:
            raise AssertionError(f"timed out after {timeout}s waiting for {what}")
        time.sleep(0.05)


def _queue(sqs: Any, name: str, **attributes: Any) -> tuple[str, str]:
    url = sqs.create_queue(QueueName=name, Attributes={k: str(v) for k, v in attributes.items()})[
        "QueueUrl"
    ]
    arn = sqs.get_queue_attributes(QueueUrl=url, AttributeNames=["QueueArn"])["Attributes"][
        "QueueArn"
    ]
    return url, arn


def _depth(sqs: Any, url: str) -> int:
    attrs = sqs.get_queue_attributes(
        QueueUrl=url,
        AttributeNames=["ApproximateNumberOfMessages", "ApproximateNumberOfMessagesNotVisible"],
    )["Attributes"]
    return int(attrs["ApproximateNumberOfMessages"]) + int(
        attrs["ApproximateNumberOfMessagesNotVisible"]
    )


# --- poller ----------------------------------------------------------------------------------


def test_poller_delivers_lambda_events_deletes_on_success_and_redrives_failures(
    moto: MotoHandle, aws_client: Client
) -> None:
    sqs = aws_client("sqs")
    ok_url, ok_arn = _queue(sqs, "ok-q")
    dlq_url, dlq_arn = _queue(sqs, "bad-dlq")
    bad_url, _ = _queue(
        sqs,
        "bad-q",
        VisibilityTimeout=1,
        RedrivePolicy=json.dumps({"deadLetterTargetArn": dlq_arn, "maxReceiveCount": 3}),
    )
    idle_url, _ = _queue(sqs, "idle-q")  # no handler: must not be polled

    app = Chalice(app_name="poller-test")
    lock = threading.Lock()
    delivered: list[tuple[dict[str, Any], Any]] = []
    bad_receive_counts: list[int] = []
    dead: list[str] = []

    @app.on_sqs_message(queue="ok-q", batch_size=1)
    def ok(event: Any) -> None:
        with lock:
            delivered.extend((record.to_dict(), event.context) for record in event)

    @app.on_sqs_message(queue="bad-q", batch_size=1)
    def bad(event: Any) -> None:
        for record in event:
            with lock:
                bad_receive_counts.append(
                    int(record.to_dict()["attributes"]["ApproximateReceiveCount"])
                )
        raise RuntimeError("handler failure (expected by the test)")

    @app.on_sqs_message(queue="bad-dlq", batch_size=1)
    def on_dead(event: Any) -> None:
        with lock:
            dead.extend(record.body for record in event)

    pollers = start_pollers(
        app,
        endpoint_url=moto.url,
        region="us-east-1",
        workers=2,
        wait_seconds=1,
        client_factory=lambda pool: aws_client("sqs", max_pool_connections=pool),
    )
    try:
        assert set(pollers.by_queue) == {"ok-q", "bad-q", "bad-dlq"}
        for i in range(3):
            sqs.send_message(
                QueueUrl=ok_url,
                MessageBody=json.dumps({"i": i}),
                MessageAttributes={"kind": {"DataType": "String", "StringValue": "test"}},
            )
        sqs.send_message(QueueUrl=bad_url, MessageBody="poison")
        sqs.send_message(QueueUrl=idle_url, MessageBody="left alone")

        _wait_for(lambda: len(delivered) == 3, 10, "three deliveries")
        _wait_for(lambda: _depth(sqs, ok_url) == 0, 5, "ok-q to be empty (deleted on success)")
        # Three receives, each failing, then SQS moves the message to the DLQ, whose handler runs.
        _wait_for(lambda: dead == ["poison"], 20, "the poison message to reach the DLQ handler")
    finally:
        pollers.stop()

    assert bad_receive_counts == [1, 2, 3]
    assert pollers.stats()["bad-q"].failed == 3 and pollers.stats()["bad-q"].succeeded == 0
    assert pollers.stats()["ok-q"].succeeded == 3
    assert _depth(sqs, bad_url) == 0 and _depth(sqs, dlq_url) == 0
    assert _depth(sqs, idle_url) == 1

    record, context = delivered[0]
    assert set(record) >= {
        "messageId",
        "receiptHandle",
        "body",
        "attributes",
        "messageAttributes",
        "md5OfBody",
        "eventSource",
        "eventSourceARN",
        "awsRegion",
    }
    assert record["eventSource"] == "aws:sqs"
    assert record["eventSourceARN"] == ok_arn
    assert record["awsRegion"] == "us-east-1"
    assert record["attributes"]["ApproximateReceiveCount"] == "1"
    assert "SentTimestamp" in record["attributes"]
    assert record["messageAttributes"]["kind"]["stringValue"] == "test"
    assert record["messageAttributes"]["kind"]["dataType"] == "String"
    assert sorted(json.loads(r["body"])["i"] for r, _ in delivered) == [0, 1, 2]
    assert len({r["messageId"] for r, _ in delivered}) == 3
    assert context.function_name == "ok"
    assert context.aws_request_id
    assert 0 < context.get_remaining_time_in_millis() <= 900_000


# --- scheduler -------------------------------------------------------------------------------


def test_schedule_expressions_are_parsed() -> None:
    assert parse_rate("rate(1 minute)") == timedelta(minutes=1)
    assert parse_rate("rate(5 minutes)") == timedelta(minutes=5)
    assert parse_rate("rate(2 hours)") == timedelta(hours=2)
    assert parse_rate("cron(0 12 * * ? *)") is None
    # AWS numbers weekdays 1-7 from Sunday; Unix 0-6. `?` means "any".
    assert aws_cron_to_unix("cron(0 12 ? * 2-6 *)") == ("0 12 * * 1-5", "*")
    assert aws_cron_to_unix("cron(15 10 ? * 6#3 2027)") == ("15 10 * * 5#3", "2027")
    with pytest.raises(ValueError):
        aws_cron_to_unix("cron(0 12 * * *)")  # 5 fields: not AWS's


def _schedule_app() -> tuple[Chalice, dict[str, list[dict[str, Any]]]]:
    app = Chalice(app_name="scheduler-test")
    calls: dict[str, list[dict[str, Any]]] = {
        "every_minute": [],
        "two_hours": [],
        "weekday_noon": [],
    }

    @app.schedule("rate(1 minute)")
    def every_minute(event: Any) -> str:
        calls["every_minute"].append(event.to_dict())
        return "done"

    @app.schedule(Rate(2, unit=Rate.HOURS))
    def two_hours(event: Any) -> None:
        calls["two_hours"].append(event.to_dict())

    @app.schedule(Cron(0, 12, "?", "*", "MON-FRI", "*"))
    def weekday_noon(event: Any) -> None:
        calls["weekday_noon"].append(event.to_dict())

    return app, calls


def test_scheduler_fire_all_invokes_every_schedule_with_a_scheduled_event() -> None:
    app, calls = _schedule_app()
    scheduler = Scheduler(app, region="eu-west-1")
    assert scheduler.fire_all() == {"every_minute": "done", "two_hours": None, "weekday_noon": None}
    assert {name: len(c) for name, c in calls.items()} == {
        "every_minute": 1,
        "two_hours": 1,
        "weekday_noon": 1,
    }
    event = calls["every_minute"][0]
    assert event["detail-type"] == "Scheduled Event"
    assert event["source"] == "aws.events"
    assert event["region"] == "eu-west-1"
    assert event["resources"][0].endswith(":rule/every_minute")
    assert event["time"].endswith("Z")
    assert scheduler.fire("two_hours") is None
    assert len(calls["two_hours"]) == 2


def test_scheduler_fire_all_runs_every_handler_then_raises_failures() -> None:
    app = Chalice(app_name="scheduler-fail")
    ran: list[str] = []

    @app.schedule("rate(1 minute)")
    def broken(event: Any) -> None:
        raise RuntimeError("boom")

    @app.schedule("rate(1 minute)")
    def fine(event: Any) -> None:
        ran.append("fine")

    scheduler = Scheduler(app)
    with pytest.raises(ExceptionGroup) as caught:
        scheduler.fire_all()
    assert [str(e) for e in caught.value.exceptions] == ["boom"]
    assert ran == ["fine"]
    assert scheduler.schedules["broken"].failed == 1


def test_scheduler_fires_on_its_own() -> None:
    app, calls = _schedule_app()
    # Real periods: nothing is due for a minute; the cron's next fire is a weekday noon UTC.
    scheduler = Scheduler(app).start()
    try:
        time.sleep(0.3)
        assert all(not c for c in calls.values())
        now = datetime.now(UTC)
        minute_due = scheduler.schedules["every_minute"].next_due
        assert minute_due is not None and timedelta(seconds=58) < minute_due - now <= timedelta(
            minutes=1
        )
        noon = scheduler.schedules["weekday_noon"].next_due
        assert noon is not None and (noon.hour, noon.minute, noon.weekday() < 5) == (12, 0, True)
    finally:
        scheduler.stop()

    # A short tick: every schedule fires every 0.2 s.
    scheduler = Scheduler(app, tick_seconds=0.2).start()
    try:
        _wait_for(
            lambda: len(calls["every_minute"]) >= 3 and len(calls["weekday_noon"]) >= 3,
            10,
            "three ticks of every schedule",
        )
    finally:
        scheduler.stop()
    fired = len(calls["every_minute"])
    time.sleep(0.5)
    assert (
        len(calls["every_minute"]) <= fired + 1
    )  # stopped (one invocation may have been in flight)


# --- the whole embedded stack ----------------------------------------------------------------


def _tiny_app_module() -> tuple[types.ModuleType, dict[str, list[Any]]]:
    import boto3

    from chalicelib.config import get_settings

    app = Chalice(app_name="tiny")
    seen: dict[str, list[Any]] = {"tasks": [], "ticks": []}

    @app.route("/ping")
    def ping() -> dict[str, Any]:
        return {
            "concurrency": get_settings().eval_run_concurrency,
            "endpoint": os.environ.get("AWS_ENDPOINT_URL"),
        }

    @app.route("/slow")
    def slow() -> dict[str, Any]:
        time.sleep(0.5)
        return {}

    @app.route("/tasks", methods=["POST"])
    def enqueue() -> dict[str, Any]:
        sqs = boto3.client("sqs")  # AWS_ENDPOINT_URL points every client at the stack
        url = sqs.get_queue_url(QueueName=names.CASE_TASKS_QUEUE)["QueueUrl"]
        sqs.send_message(QueueUrl=url, MessageBody=json.dumps(app.current_request.json_body))
        return {"queued": True}

    @app.on_sqs_message(queue=names.CASE_TASKS_QUEUE, batch_size=1)
    def run_case(event: Any) -> None:
        seen["tasks"].extend(json.loads(record.body) for record in event)

    @app.schedule("rate(1 minute)")
    def tick(event: Any) -> None:
        seen["ticks"].append(event.to_dict()["time"])

    module = types.ModuleType("tiny_app")
    module.app = app  # type: ignore[attr-defined]
    return module, seen


def test_embedded_stack_serves_routes_polls_queues_and_fires_schedules(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    module, seen = _tiny_app_module()
    with EmbeddedStack(
        module, env={"EVAL_RUN_CONCURRENCY": "7"}, workers=2, tick_seconds=0.3
    ) as stack:
        assert stack.moto is not None and stack.api_url.startswith("http://127.0.0.1:")
        assert {
            names.CASE_TASKS_QUEUE,
            names.CASE_TASKS_DLQ,
            names.AGENT_EVENTS_QUEUE,
            names.AGENT_EVENTS_DLQ,
        } <= set(stack.queue_urls)

        response = httpx.get(f"{stack.api_url}/ping", timeout=10)
        assert response.status_code == 200
        assert response.json() == {"concurrency": 7, "endpoint": stack.moto.url}

        # Concurrent requests are served concurrently (8 x 0.5 s would take 4 s one by one).
        started = time.perf_counter()
        with ThreadPoolExecutor(8) as pool:
            codes = list(
                pool.map(
                    lambda _: httpx.get(f"{stack.api_url}/slow", timeout=10).status_code, range(8)
                )
            )
        assert codes == [200] * 8
        assert time.perf_counter() - started < 2.5

        assert httpx.post(f"{stack.api_url}/tasks", json={"case": 1}, timeout=10).status_code == 200
        _wait_for(lambda: seen["tasks"] == [{"case": 1}], 10, "the task handler")
        _wait_for(lambda: len(seen["ticks"]) >= 2, 10, "two scheduler ticks")
        assert stack.scheduler.fire("tick") is None

    assert "AWS_ENDPOINT_URL" not in os.environ
    assert os.environ.get("EVAL_RUN_CONCURRENCY") is None
    with pytest.raises(httpx.TransportError):
        httpx.get(f"{stack.api_url}/ping", timeout=2)
