"""The embedded moto server's fixes, over real HTTP with boto3 (docs/guides/local-stack.md).

1. Concurrent conditional transactions have exactly one winner (DynamoDB requests serialized).
2. Transaction latency does not grow with table size (per-item snapshots, not table deep copies).
3. A cancelled transaction leaves every item it touched exactly as it was.
4. Requests are counted by operation, empty receives separately.
"""

from __future__ import annotations

import re
import statistics
import threading
import time
from collections.abc import Callable
from typing import Any

import pytest
from botocore.exceptions import ClientError

from assay_local.moto_http import EMPTY_RECEIVE_KEY
from assay_local.motoserver import MotoHandle
from tests.integration.conftest import create_table

Client = Callable[..., Any]


def _fill(ddb: Any, table: str, count: int) -> None:
    """`count` items of ~200 bytes with BatchWriteItem (25 per request)."""
    for start in range(0, count, 25):
        requests = [
            {
                "PutRequest": {
                    "Item": {
                        "pk": {"S": f"fill-{i:06d}"},
                        "n": {"N": str(i)},
                        "pad": {"S": "x" * 180},
                    }
                }
            }
            for i in range(start, min(count, start + 25))
        ]
        response = ddb.batch_write_item(RequestItems={table: requests})
        assert not response.get("UnprocessedItems")


def _claim_transaction(table: str, claim: str, counter: str) -> list[dict[str, Any]]:
    """The shape of our exactly-once writes: create a claim item, bump a counter."""
    return [
        {
            "Put": {
                "TableName": table,
                "Item": {"pk": {"S": claim}},
                "ConditionExpression": "attribute_not_exists(pk)",
            }
        },
        {
            "Update": {
                "TableName": table,
                "Key": {"pk": {"S": counter}},
                "UpdateExpression": "ADD n :one",
                "ExpressionAttributeValues": {":one": {"N": "1"}},
            }
        },
    ]


def test_concurrent_conditional_transactions_have_one_winner(aws_client: Client) -> None:
    # Unpatched moto 5.2.5 fails this. Measured by hand with
    # `start_moto_server(serialize_dynamodb=False, patch_transactions=False)` after
    # `unpatch_transact_write_items()`: with 2,000 items in the table, 10 rounds of 24 threads
    # ended with counters of 7, 6, 10, 10, 8, 6, 5, 9, 7, 6 (never 1), and some requests got
    # HTTP 500 "dictionary changed size during iteration" from moto's table deep copy. (Earlier
    # we also saw two winners of the conditional put.) With the lock and the patch: 1 every time.
    ddb = aws_client("dynamodb")
    create_table(ddb, "race")
    _fill(ddb, "race", 2000)  # a table big enough that moto's deep copy is slow: the race window
    threads_n = 24
    clients = [aws_client("dynamodb", max_pool_connections=2) for _ in range(threads_n)]
    for round_ in range(3):
        claim, counter = f"claim-{round_}", f"counter-{round_}"
        barrier = threading.Barrier(threads_n)
        outcomes: list[str] = []
        lock = threading.Lock()

        def attempt(
            client: Any,
            barrier: threading.Barrier,
            claim: str,
            counter: str,
            outcomes: list[str],
            lock: threading.Lock,
        ) -> None:
            barrier.wait()
            try:
                client.transact_write_items(
                    TransactItems=_claim_transaction("race", claim, counter)
                )
                outcome = "won"
            except ClientError as exc:
                outcome = exc.response["Error"]["Code"]
            with lock:
                outcomes.append(outcome)

        threads = [
            threading.Thread(target=attempt, args=(c, barrier, claim, counter, outcomes, lock))
            for c in clients
        ]
        for t in threads:
            t.start()
        for t in threads:
            t.join(60)
        assert outcomes.count("won") == 1, outcomes
        assert outcomes.count("TransactionCanceledException") == threads_n - 1, outcomes
        item = ddb.get_item(TableName="race", Key={"pk": {"S": counter}}, ConsistentRead=True)[
            "Item"
        ]
        assert item["n"] == {"N": "1"}


def test_transaction_latency_does_not_grow_with_table_size(aws_client: Client) -> None:
    # Unpatched, moto deep-copies each touched table per transaction: this test then measured
    # medians of 8 ms (100 items) and 209 ms (10,000 items), a ratio of 25. Patched: about 1.
    ddb = aws_client("dynamodb")
    create_table(ddb, "small")
    create_table(ddb, "big")
    _fill(ddb, "small", 100)
    _fill(ddb, "big", 10_000)

    def timed(table: str, i: int) -> float:
        started = time.perf_counter()
        ddb.transact_write_items(
            TransactItems=_claim_transaction(table, f"claim-{i}", f"counter-{i}")
        )
        return time.perf_counter() - started

    for i in range(5):  # warm up connections and code paths
        timed("small", -1 - i), timed("big", -1 - i)
    small: list[float] = []
    big: list[float] = []
    for i in range(60):  # interleaved, so machine noise hits both series alike
        small.append(timed("small", i))
        big.append(timed("big", i))
    ratio = statistics.median(big) / statistics.median(small)
    assert ratio < 2.0, (ratio, statistics.median(small), statistics.median(big))


def _item(ddb: Any, table: str, key: dict[str, Any]) -> dict[str, Any] | None:
    return ddb.get_item(TableName=table, Key=key, ConsistentRead=True).get("Item")


def _scan(ddb: Any, table: str) -> list[dict[str, Any]]:
    return sorted(ddb.scan(TableName=table, ConsistentRead=True)["Items"], key=repr)


def test_cancelled_transaction_restores_every_touched_item(aws_client: Client) -> None:
    ddb = aws_client("dynamodb")
    create_table(ddb, "plain")
    create_table(ddb, "ranged", range_key=True)
    ddb.put_item(
        TableName="plain",
        Item={
            "pk": {"S": "counter"},
            "n": {"N": "5"},
            "tags": {"SS": ["a"]},
            "nested": {"M": {"x": {"N": "1"}}},
        },
    )
    ddb.put_item(TableName="plain", Item={"pk": {"S": "doomed"}, "v": {"S": "keep me"}})
    ddb.put_item(TableName="plain", Item={"pk": {"S": "replaced"}, "v": {"S": "old"}})
    ddb.put_item(TableName="plain", Item={"pk": {"S": "guard"}, "state": {"S": "closed"}})
    ddb.put_item(
        TableName="ranged", Item={"pk": {"S": "run-1"}, "sk": {"S": "a#001"}, "v": {"S": "old"}}
    )
    before = {"plain": _scan(ddb, "plain"), "ranged": _scan(ddb, "ranged")}

    with pytest.raises(ClientError) as caught:
        ddb.transact_write_items(
            TransactItems=[
                # created by this transaction: must not survive it (new hash key in a ranged table)
                {
                    "Put": {
                        "TableName": "ranged",
                        "Item": {"pk": {"S": "run-2"}, "sk": {"S": "a#001"}},
                        "ConditionExpression": "attribute_not_exists(pk)",
                    }
                },
                # created in an existing partition of a ranged table
                {
                    "Put": {
                        "TableName": "ranged",
                        "Item": {"pk": {"S": "run-1"}, "sk": {"S": "a#002"}},
                    }
                },
                # updated in place (moto mutates the stored item): every change undone
                {
                    "Update": {
                        "TableName": "plain",
                        "Key": {"pk": {"S": "counter"}},
                        "UpdateExpression": "ADD n :one, tags :t SET nested.x = :two, fresh = :two",
                        "ExpressionAttributeValues": {
                            ":one": {"N": "1"},
                            ":two": {"N": "2"},
                            ":t": {"SS": ["b"]},
                        },
                    }
                },
                # upsert of a missing item: must not survive
                {
                    "Update": {
                        "TableName": "plain",
                        "Key": {"pk": {"S": "upserted"}},
                        "UpdateExpression": "SET v = :v",
                        "ExpressionAttributeValues": {":v": {"S": "new"}},
                    }
                },
                {
                    "Put": {
                        "TableName": "plain",
                        "Item": {"pk": {"S": "replaced"}, "v": {"S": "new"}},
                    }
                },
                {"Delete": {"TableName": "plain", "Key": {"pk": {"S": "doomed"}}}},
                {
                    "Put": {
                        "TableName": "ranged",
                        "Item": {"pk": {"S": "run-1"}, "sk": {"S": "a#001"}, "v": {"S": "new"}},
                    }
                },
                # the one that fails, last, after every write above has been applied
                {
                    "ConditionCheck": {
                        "TableName": "plain",
                        "Key": {"pk": {"S": "guard"}},
                        "ConditionExpression": "#s = :open",
                        "ExpressionAttributeNames": {"#s": "state"},
                        "ExpressionAttributeValues": {":open": {"S": "open"}},
                    }
                },
            ]
        )
    error = caught.value.response
    assert error["Error"]["Code"] == "TransactionCanceledException"
    reasons = [r["Code"] for r in error["CancellationReasons"]]
    assert reasons == ["None"] * 7 + ["ConditionalCheckFailed"]

    assert {"plain": _scan(ddb, "plain"), "ranged": _scan(ddb, "ranged")} == before
    assert _item(ddb, "ranged", {"pk": {"S": "run-2"}, "sk": {"S": "a#001"}}) is None
    assert _item(ddb, "plain", {"pk": {"S": "upserted"}}) is None
    # a query on the partition the failed Put created finds nothing
    assert (
        ddb.query(
            TableName="ranged",
            KeyConditionExpression="pk = :p",
            ExpressionAttributeValues={":p": {"S": "run-2"}},
        )["Items"]
        == []
    )

    # A transaction that succeeds afterwards still applies (nothing left locked or half-restored).
    ddb.transact_write_items(TransactItems=_claim_transaction("plain", "claim", "counter"))
    assert _item(ddb, "plain", {"pk": {"S": "counter"}})["n"] == {"N": "6"}


def test_invalid_transaction_is_rejected_and_rolled_back(aws_client: Client) -> None:
    ddb = aws_client("dynamodb")
    create_table(ddb, "plain")
    ddb.put_item(TableName="plain", Item={"pk": {"S": "a"}, "n": {"N": "1"}})
    with pytest.raises(ClientError) as caught:
        ddb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": "plain",
                        "Key": {"pk": {"S": "a"}},
                        "UpdateExpression": "ADD n :one",
                        "ExpressionAttributeValues": {":one": {"N": "1"}},
                    }
                },
                {"Put": {"TableName": "plain", "Item": {"pk": {"S": "a"}}}},  # same item twice
            ]
        )
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert _item(ddb, "plain", {"pk": {"S": "a"}}) == {"pk": {"S": "a"}, "n": {"N": "1"}}


def test_requests_are_counted_by_operation(moto: MotoHandle, aws_client: Client) -> None:
    ddb, sqs, s3 = aws_client("dynamodb"), aws_client("sqs"), aws_client("s3")
    create_table(ddb, "plain")
    ddb.transact_write_items(TransactItems=_claim_transaction("plain", "c", "n"))
    url = sqs.create_queue(QueueName="counted")["QueueUrl"]
    sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)
    sqs.send_message(QueueUrl=url, MessageBody="hi")
    assert len(sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0)["Messages"]) == 1
    s3.create_bucket(Bucket="counted-bucket")
    s3.put_object(Bucket="counted-bucket", Key="k", Body=b"x")
    s3.get_object(Bucket="counted-bucket", Key="k")["Body"].read()

    assert moto.requests() == {
        "dynamodb.CreateTable": 1,
        "dynamodb.TransactWriteItems": 1,
        "sqs.CreateQueue": 1,
        "sqs.ReceiveMessage": 2,
        EMPTY_RECEIVE_KEY: 1,
        "sqs.SendMessage": 1,
        "s3.PUT": 2,
        "s3.GET": 1,
    }
    assert moto.total_requests() == 9
    moto.reset_counts()
    assert moto.requests() == {}


@pytest.mark.parametrize("version", ["5.2.4", "5.3.0", "6.0.0", "4.2.14", "5.2", "dev"])
def test_a_moto_the_patches_were_not_written_for_is_refused_naming_both(version: str) -> None:
    from assay_local.moto_patches import UnsupportedMotoError, check_moto_version

    with pytest.raises(
        UnsupportedMotoError, match=rf"moto {re.escape(version)} is installed.*>=5\.2\.5,<5\.3\.0"
    ):
        check_moto_version(version)


@pytest.mark.parametrize("version", ["5.2.5", "5.2.9", "5.2.10.dev3"])
def test_the_releases_the_patches_cover_are_taken(version: str) -> None:
    from assay_local.moto_patches import check_moto_version

    check_moto_version(version)


def test_an_item_past_the_size_limit_is_refused_and_one_within_it_kept(aws_client: Client) -> None:
    """The item-size check moto makes attribute by attribute is made once on the whole item
    (`motofast._cheaper_items`): the same items pass and fail."""
    ddb = aws_client("dynamodb")
    create_table(ddb, "sized")
    limit = 405_000  # moto's limit, in bytes of names and values
    # 2 ("pk") + 3 ("big") + 3 ("two") + len("x") = 9 bytes beside the filler
    fits = {"pk": {"S": "x"}, "big": {"S": "a" * (limit - 9 - 1000)}, "two": {"S": "b" * 1000}}
    ddb.put_item(TableName="sized", Item=fits)
    assert _item(ddb, "sized", {"pk": {"S": "x"}}) == fits
    past = {**fits, "pk": {"S": "y"}, "two": {"S": "b" * 1001}}
    with pytest.raises(ClientError) as caught:
        ddb.put_item(TableName="sized", Item=past)
    assert caught.value.response["Error"]["Code"] == "ValidationException"
    assert "size" in caught.value.response["Error"]["Message"].lower()
    assert _item(ddb, "sized", {"pk": {"S": "y"}}) is None
    # an update past the limit is refused too, the stored item unchanged
    with pytest.raises(ClientError):
        ddb.update_item(
            TableName="sized",
            Key={"pk": {"S": "x"}},
            UpdateExpression="SET three = :v",
            ExpressionAttributeValues={":v": {"S": "c" * 10}},
        )
    assert _item(ddb, "sized", {"pk": {"S": "x"}}) == fits
