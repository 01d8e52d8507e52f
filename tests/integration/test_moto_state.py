"""moto's saved state (assay_local.motostate) through the moto process over real HTTP: what is in
DynamoDB, SQS (queued and in-flight messages), S3 (small and spooled-to-disk objects) and Secrets
Manager comes back after a restart; changes are saved while serving, so a `kill -9` of the moto
process loses nothing saved a moment before; a snapshot another moto wrote, or a damaged one, is
refused naming `--fresh` and left as it is.

Each test starts its own moto process (`start_moto_process(state=...)`): moto's backends are
process-global, so restoring one in this process would overwrite the session's server.
"""

from __future__ import annotations

import hashlib
import json
from collections.abc import Iterator
from importlib.metadata import version
from pathlib import Path
from typing import Any

import boto3
import pytest

from assay_local.motoserver import MotoProcessHandle, MotoStartError, start_moto_process
from assay_local.motostate import MAGIC, read_header
from tests.support.e2e import wait_for

MOTO = version("moto")
"""The installed moto: a snapshot is refused by comparing with this, whatever release is locked."""

BIG = 6 * 1024 * 1024
"""Bytes of an S3 object moto spools to a file (over its 5 MB buffer)."""


@pytest.fixture
def started() -> Iterator[list[MotoProcessHandle]]:
    handles: list[MotoProcessHandle] = []
    yield handles
    for handle in handles:
        handle.stop()


def start(started: list[MotoProcessHandle], state: Path, **kw: Any) -> MotoProcessHandle:
    handle = start_moto_process(state=state, **kw)
    started.append(handle)
    return handle


def client(handle: MotoProcessHandle, service: str) -> Any:
    return boto3.client(
        service,
        endpoint_url=handle.url,
        region_name="us-east-1",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def put_everything(handle: MotoProcessHandle) -> None:
    dynamodb = client(handle, "dynamodb")
    dynamodb.create_table(
        TableName="things",
        KeySchema=[{"AttributeName": "k", "KeyType": "HASH"}],
        AttributeDefinitions=[{"AttributeName": "k", "AttributeType": "S"}],
        BillingMode="PAY_PER_REQUEST",
    )
    dynamodb.put_item(TableName="things", Item={"k": {"S": "a"}, "n": {"N": "7"}})
    sqs = client(handle, "sqs")
    url = sqs.create_queue(QueueName="tasks")["QueueUrl"]
    sqs.send_message(QueueUrl=url, MessageBody="held by a worker")
    held = sqs.receive_message(QueueUrl=url, VisibilityTimeout=3600)["Messages"]
    assert [m["Body"] for m in held] == ["held by a worker"]
    sqs.send_message(QueueUrl=url, MessageBody="queued")
    client(handle, "secretsmanager").create_secret(Name="assay/org/openai", SecretString="sk-1")
    s3 = client(handle, "s3")
    s3.create_bucket(Bucket="results-bucket")
    s3.put_object(Bucket="results-bucket", Key="small", Body=b"answer")
    s3.put_object(Bucket="results-bucket", Key="big", Body=b"x" * BIG)  # the last write


def everything_there(handle: MotoProcessHandle) -> None:
    item = client(handle, "dynamodb").get_item(TableName="things", Key={"k": {"S": "a"}})
    assert item["Item"] == {"k": {"S": "a"}, "n": {"N": "7"}}
    sqs = client(handle, "sqs")
    url = sqs.get_queue_url(QueueName="tasks")["QueueUrl"]
    # The message a worker held stays invisible until its visibility lapses, as after a crash.
    got = sqs.receive_message(QueueUrl=url, MaxNumberOfMessages=10, WaitTimeSeconds=1)
    assert [m["Body"] for m in got["Messages"]] == ["queued"]
    s3 = client(handle, "s3")
    assert s3.get_object(Bucket="results-bucket", Key="small")["Body"].read() == b"answer"
    assert s3.get_object(Bucket="results-bucket", Key="big")["Body"].read() == b"x" * BIG
    secret = client(handle, "secretsmanager").get_secret_value(SecretId="assay/org/openai")
    assert secret["SecretString"] == "sk-1"


def test_what_moto_held_comes_back_after_a_stop_and_a_start(
    tmp_path: Path, started: list[MotoProcessHandle]
) -> None:
    state = tmp_path / "moto-state"
    first = start(started, state)
    assert first.restored is None
    put_everything(first)
    first.stop()
    assert first.stopped is not None and "error" not in first.stopped, first.stopped
    assert sorted(p.name for p in tmp_path.iterdir()) == ["moto-state"]  # no temporary left

    again = start(started, state)
    assert again.restored is not None and again.restored["saved_at"].endswith("Z")
    everything_there(again)


def test_changes_are_saved_while_serving_so_a_killed_moto_keeps_them(
    tmp_path: Path, started: list[MotoProcessHandle]
) -> None:
    state = tmp_path / "moto-state"
    first = start(started, state, min_save_interval_s=0.2)
    put_everything(first)

    def saved_after_the_last_change() -> bool:
        # The big object is the last write: a snapshot larger than it holds everything.
        return state.exists() and read_header(state)["bytes"] > BIG

    wait_for(saved_after_the_last_change, what="a snapshot holding the big object")
    first._process.kill()  # noqa: SLF001 - kill -9: no last save
    first._process.wait()  # noqa: SLF001

    again = start(started, state)
    everything_there(again)


def _snapshot(payload: bytes, **header: Any) -> bytes:
    fields = {
        "moto": MOTO,
        "python": "3.12",
        "saved_at": "2026-01-01T00:00:00Z",
        "bytes": len(payload),
        "sha256": hashlib.sha256(payload).hexdigest(),
    } | header
    return MAGIC + json.dumps(fields).encode() + b"\n" + payload


@pytest.mark.parametrize(
    ("content", "said"),
    [
        (_snapshot(b"anything", moto="0.0.1"), f"was written by moto 0.0.1 (this is moto {MOTO})"),
        (_snapshot(b"anything", python="3.11"), "was written by python 3.11"),
        (_snapshot(b"anything", sha256="0" * 64), "is damaged"),
        (_snapshot(b"not a pickle"), "cannot be loaded"),
        (b"PK\x03\x04 a zip file", "is not a snapshot this assay can read"),
    ],
)
def test_a_snapshot_it_cannot_restore_is_refused_naming_fresh_and_left_alone(
    tmp_path: Path, content: bytes, said: str
) -> None:
    state = tmp_path / "moto-state"
    state.write_bytes(content)
    with pytest.raises(MotoStartError) as refused:
        start_moto_process(state=state)
    message = str(refused.value)
    assert said in message and "--fresh" in message and "\n" not in message
    assert state.read_bytes() == content
