"""The AWS bill on paper (`bench.aws_prices`, `bench.aws_tap`, `bench.aws_cost`), with values
computed by hand from DynamoDB's sizing rules and the prices the module states."""

from __future__ import annotations

import json
import subprocess
import sys
from collections import Counter
from pathlib import Path

import pytest

from bench import aws_prices as p
from bench.aws_cost import Measured, lambda_memory_mb, usage_of
from bench.aws_tap import Invocations, Tally

ROOT = Path(__file__).resolve().parents[2]


def test_item_size_follows_dynamodb_rules():
    # "pk" 2 + "abc" 3; "n" 1 + 123 (3 digits: 2 bytes + 1); "b" 1 + a boolean 1
    assert p.item_bytes({"pk": {"S": "abc"}, "n": {"N": "123"}, "b": {"BOOL": True}}) == 11
    # "m" 1 + map 3 + (1 + "k" 1 + "vv" 2)
    assert p.item_bytes({"m": {"M": {"k": {"S": "vv"}}}}) == 8
    # "l" 1 + list 3 + (1 + "a" 1) + (1 + 5: 1 digit, 1 byte + 1)
    assert p.item_bytes({"l": {"L": [{"S": "a"}, {"N": "5"}]}}) == 9
    # UTF-8 bytes, not characters: "é" is 2
    assert p.item_bytes({"s": {"S": "é"}}) == 3
    assert p.item_bytes({"ss": {"SS": ["ab", "c"]}, "z": {"NULL": True}}) == 2 + 3 + 1 + 1
    assert p.item_bytes(None) == 0
    with pytest.raises(ValueError, match="not a DynamoDB attribute value"):
        p.value_bytes({"X": "1"})


def test_request_units():
    assert p.write_units(0) == 1  # a write costs at least one unit
    assert p.write_units(1024) == 1
    assert p.write_units(1025) == 2
    assert p.write_units(3349, transactional=True) == 8  # 3.27 KB: 4 KB, twice in a transaction
    assert p.read_units(4096, consistent=True) == 1.0
    assert p.read_units(4097, consistent=True) == 2.0
    assert p.read_units(4097, consistent=False) == 1.0
    assert p.read_units(0, consistent=False) == 0.5  # a read that finds nothing: the minimum
    assert p.read_units(100, consistent=True, transactional=True) == 2.0


RUN = {"pk": {"S": "r"}, "status": {"S": "running"}, "hb": {"N": "1"}, "n": {"N": "1"}}
STATUS = p.Index("status_hb", ("status", "hb"))
ORG_KEYS = p.Index("org_keys", ("status",), projection="KEYS_ONLY")
DONE = p.Index("done", ("done_at",))


def test_index_writes():
    keys = ["pk"]
    beat = {**RUN, "hb": {"N": "2"}}
    counted = {**RUN, "n": {"N": "2"}}
    # the index's own key moved: the old entry deleted and the new one put
    assert p.index_write_units(RUN, beat, STATUS, keys) == 2
    # a projected attribute changed: the entry rewritten once
    assert p.index_write_units(RUN, counted, STATUS, keys) == 1
    # an attribute a KEYS_ONLY index does not hold: nothing written there
    assert p.index_write_units(RUN, counted, ORG_KEYS, keys) == 0
    # a sparse index: written when the item enters it or leaves it, never while it is out
    done = {**RUN, "done_at": {"S": "t"}}
    assert p.index_write_units(RUN, done, DONE, keys) == 1
    assert p.index_write_units(done, RUN, DONE, keys) == 1
    assert p.index_write_units(RUN, counted, DONE, keys) == 0
    assert p.index_write_units(None, RUN, STATUS, keys) == 1  # a put
    assert p.index_write_units(RUN, None, STATUS, keys) == 1  # a delete
    big = {**counted, "blob": {"S": "x" * 1500}}
    assert p.index_write_units(RUN, big, STATUS, keys) == 2  # its entry is 2 KB now
    assert p.entry(big, ORG_KEYS, keys) == {"pk": {"S": "r"}, "status": {"S": "running"}}


def test_sqs_chunks_and_gb_seconds():
    assert p.sqs_requests(0) == 1
    assert p.sqs_requests(65536) == 1
    assert p.sqs_requests(65537) == 2
    assert p.gb_seconds(1000, 1024) == 1.0
    assert p.gb_seconds(500, 512) == 0.25


def test_bill_per_1000_attempts_by_hand():
    usage = p.Usage(
        attempts=2,
        dynamodb_rru=4,
        dynamodb_wru=20,
        sqs_requests=6,
        lambda_requests=1,
        lambda_gb_seconds=0.5,
        s3_puts=2,
        api_requests=1,
    )
    lines = {line.item: line for line in p.bill(usage)}
    # 1,000 attempts are 500 times these 2
    assert lines["DynamoDB reads"].quantity == 2000
    assert lines["DynamoDB reads"].usd == pytest.approx(0.00025)  # 2,000 x $0.125 / 1M
    assert lines["DynamoDB writes"].usd == pytest.approx(0.00625)  # 10,000 x $0.625 / 1M
    assert lines["SQS requests"].usd == pytest.approx(0.0012)  # 3,000 x $0.40 / 1M
    assert lines["Lambda requests"].usd == pytest.approx(0.0001)  # 500 x $0.20 / 1M
    assert lines["Lambda duration"].usd == pytest.approx(0.004166675)  # 250 GB-s x 0.0000166667
    assert lines["S3 PUT"].usd == pytest.approx(0.005)  # 1,000 x $0.005 / 1,000
    assert lines["S3 GET"].usd == 0
    assert lines["API Gateway"].usd == pytest.approx(0.00175)  # 500 x $3.50 / 1M
    usd = p.total(list(lines.values()))
    assert usd == pytest.approx(0.018716675)
    day, month = p.at_scale(usd, 1_000_000)
    assert day == pytest.approx(18.716675)
    assert month == pytest.approx(561.50025)
    assert p.usd_text(usd) == "0.0187167"
    assert p.usd_text(day) == "18.7167"
    assert p.usd_text(0) == "0"
    with pytest.raises(ValueError, match="at least one attempt"):
        p.bill(p.Usage(attempts=0))


def test_usage_per_attempt_from_measured_counts():
    tally = Tally(
        rru=Counter({"BatchGetItem": 30.0}),
        wru=Counter({"TransactWriteItems": 36, "UpdateItem": 4}),
        wru_by_target=Counter({"eval_runs": 30, "eval_runs/status_heartbeat": 10}),
        sqs_billed=20,
        s3_puts=5,
    )
    m = Measured(
        cases=10,
        sleep_ms=0,
        concurrency=2,
        status="completed",
        attempts=10,
        tally=tally,
        start_ms=99.2,  # billed as 100 ms
        timed_attempts=5,
        invocations={"handle_case_task": Invocations([1000.4, 499.0])},  # billed 1,001 + 499 ms
    )
    u = usage_of(m, memory_mb=1024, api_memory_mb=1024)
    assert u.attempts == 1
    assert u.dynamodb_rru == 3.0
    assert u.dynamodb_wru == 4.0
    assert u.dynamodb_index_wru == 1.0
    assert u.sqs_requests == 2.0
    assert u.s3_puts == 0.5
    assert u.lambda_requests == pytest.approx(2 / 5 + 1 / 10)  # the worker's, and the start's
    # 1.5 s over 5 attempts at 1 GB, and the start's 0.1 s over the run's 10
    assert u.lambda_gb_seconds == pytest.approx(0.3 + 0.01)
    assert u.api_requests == pytest.approx(0.1)
    usd = p.total(p.bill(u))
    # per 1,000: 3,000 RRU, 4,000 WRU, 2,000 SQS, 500 invocations, 310 GB-s, 500 PUT, 100 API
    assert usd == pytest.approx(
        3000 * 0.125e-6
        + 4000 * 0.625e-6
        + 2000 * 0.4e-6
        + 500 * 0.2e-6
        + 310 * 0.0000166667
        + 500 * 0.005 / 1000
        + 100 * 3.5e-6
    )


def test_lambda_memory_comes_from_chalice_config(tmp_path):
    config = json.loads((ROOT / ".chalice" / "config.json").read_text())
    assert lambda_memory_mb("handle_case_task") == config["lambda_memory_size"]
    own = tmp_path / "config.json"
    own.write_text(
        json.dumps(
            {"lambda_memory_size": 1024, "lambda_functions": {"api": {"lambda_memory_size": 512}}}
        )
    )
    assert lambda_memory_mb("api", own) == 512
    assert lambda_memory_mb("other", own) == 1024
    own.write_text("{}")
    assert lambda_memory_mb("other", own) == 128


def test_the_tap_bills_writes_with_their_indexes(monkeypatch):
    """On moto in this process: an update that moves an index's key costs the table write plus
    two index writes; one inside a transaction costs twice the table's part."""
    import boto3
    from moto import mock_aws

    from bench.aws_tap import Tap

    for name in ("AWS_ENDPOINT_URL", "AWS_PROFILE", "AWS_SESSION_TOKEN"):
        monkeypatch.delenv(name, raising=False)
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    with mock_aws(), Tap("us-east-1") as tap:
        db = boto3.client("dynamodb", region_name="us-east-1")
        db.create_table(
            TableName="tap_runs",
            BillingMode="PAY_PER_REQUEST",
            AttributeDefinitions=[
                {"AttributeName": n, "AttributeType": t}
                for n, t in (("pk", "S"), ("status", "S"), ("hb", "N"))
            ],
            KeySchema=[{"AttributeName": "pk", "KeyType": "HASH"}],
            GlobalSecondaryIndexes=[
                {
                    "IndexName": "status_hb",
                    "KeySchema": [
                        {"AttributeName": "status", "KeyType": "HASH"},
                        {"AttributeName": "hb", "KeyType": "RANGE"},
                    ],
                    "Projection": {"ProjectionType": "ALL"},
                }
            ],
        )
        tap.reset()
        db.put_item(TableName="tap_runs", Item={**RUN, "blob": {"S": "x" * 1500}})
        assert tap.tally.wru_by_target == Counter({"tap_runs": 2, "tap_runs/status_hb": 2})
        tap.reset()
        db.update_item(
            TableName="tap_runs",
            Key={"pk": {"S": "r"}},
            UpdateExpression="SET hb = :b",
            ExpressionAttributeValues={":b": {"N": "2"}},
        )
        # 1.5 KB: 2 units for the table, 2 + 2 for the index entry moved
        assert tap.tally.wru_by_target == Counter({"tap_runs": 2, "tap_runs/status_hb": 4})
        tap.reset()
        db.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": "tap_runs",
                        "Key": {"pk": {"S": "r"}},
                        "UpdateExpression": "ADD n :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                }
            ]
        )
        assert tap.tally.wru_by_target == Counter({"tap_runs": 4, "tap_runs/status_hb": 2})
        assert tap.tally.items["TransactWriteItems"] == 1
        hot = tap.tally.written[("tap_runs", "r")]
        assert (hot.count, hot.transactional, hot.units) == (1, 1, 6)
        tap.reset()
        db.get_item(TableName="tap_runs", Key={"pk": {"S": "r"}}, ConsistentRead=True)
        db.get_item(TableName="tap_runs", Key={"pk": {"S": "gone"}})
        assert tap.tally.rru["GetItem"] == 1.5  # 1.5 KB consistent: 1; nothing found: 0.5
        sqs = boto3.client("sqs", region_name="us-east-1")
        url = sqs.create_queue(QueueName="tap_q")["QueueUrl"]
        tap.reset()
        sqs.send_message(QueueUrl=url, MessageBody="x" * 70_000)
        assert tap.tally.sqs_billed == 2  # two 64 KB chunks
        assert tap.tally.requests["sqs.SendMessage"] == 1


def test_importing_the_bench_starts_nothing():
    """The docs and the tests may import bench modules: importing these starts no thread and
    loads neither botocore, moto nor the embedded stack."""
    code = (
        "import sys, threading\n"
        "import bench.aws_cost, bench.aws_tap, bench.aws_prices\n"
        "assert threading.active_count() == 1, threading.enumerate()\n"
        "heavy = [m for m in sys.modules if m.split('.')[0] in ('moto', 'botocore', 'boto3')"
        " or m.startswith('assay_local')]\n"
        "assert not heavy, heavy\n"
    )
    done = subprocess.run(
        [sys.executable, "-c", code], cwd=ROOT, capture_output=True, text=True, timeout=120
    )
    assert done.returncode == 0, done.stderr
