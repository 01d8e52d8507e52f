"""moto's fast paths (`assay_local.motofast`) answer what moto's own serializer answers.

With `VERIFY` on, every fast response is also written by moto's serializer and compared; these
tests drive each fast operation with every DynamoDB type and SQS attribute kind, then read the
mismatches (none) and the hits (each operation took the fast path).
"""

from __future__ import annotations

import json
from collections.abc import Callable, Iterator
from typing import Any

import pytest

from assay_local import motofast

Client = Callable[..., Any]


@pytest.fixture
def verify(moto: Any) -> Iterator[None]:
    motofast.VERIFY = True
    motofast.MISMATCHES.clear()
    motofast.FAST_HITS.clear()
    try:
        yield
    finally:
        motofast.VERIFY = False


def _not_taken(service: str) -> list[str]:
    """The service's `FAST_OPERATIONS` that no response of the test took the fast path for."""
    return sorted(
        op for op in motofast.FAST_OPERATIONS[service] if not motofast.FAST_HITS[f"{service}.{op}"]
    )


ITEM = {
    "pk": {"S": "org#1"},
    "sk": {"S": "a"},
    "n": {"N": "12.50"},
    "b": {"B": b"\x00\xffbytes"},
    "ss": {"SS": ["x", "y"]},
    "ns": {"NS": ["1", "2.5"]},
    "bs": {"BS": [b"\x01", b"\x02"]},
    "m": {"M": {"deep": {"L": [{"S": "é"}, {"NULL": True}, {"BOOL": False}]}}},
    "gk": {"S": "g"},
}


def _table(ddb: Any) -> None:
    ddb.create_table(
        TableName="t",
        KeySchema=[
            {"AttributeName": "pk", "KeyType": "HASH"},
            {"AttributeName": "sk", "KeyType": "RANGE"},
        ],
        AttributeDefinitions=[
            {"AttributeName": "pk", "AttributeType": "S"},
            {"AttributeName": "sk", "AttributeType": "S"},
            {"AttributeName": "gk", "AttributeType": "S"},
        ],
        GlobalSecondaryIndexes=[
            {
                "IndexName": "by_g",
                "KeySchema": [{"AttributeName": "gk", "KeyType": "HASH"}],
                "Projection": {"ProjectionType": "ALL"},
            }
        ],
        BillingMode="PAY_PER_REQUEST",
    )


def test_dynamodb_fast_responses_equal_motos(aws_client: Client, verify: None) -> None:
    ddb = aws_client("dynamodb")
    _table(ddb)
    ddb.put_item(TableName="t", Item=ITEM)
    old = ddb.put_item(TableName="t", Item={**ITEM, "n": {"N": "3"}}, ReturnValues="ALL_OLD")
    assert old["Attributes"]["b"] == {"B": b"\x00\xffbytes"}
    got = ddb.get_item(TableName="t", Key={"pk": ITEM["pk"], "sk": ITEM["sk"]})
    assert got["Item"]["m"] == ITEM["m"] and got["Item"]["bs"]["BS"] == [b"\x01", b"\x02"]
    assert "Item" not in ddb.get_item(TableName="t", Key={"pk": {"S": "none"}, "sk": {"S": "a"}})
    ddb.get_item(
        TableName="t",
        Key={"pk": ITEM["pk"], "sk": ITEM["sk"]},
        ProjectionExpression="#n, m.deep",
        ExpressionAttributeNames={"#n": "n"},
        ReturnConsumedCapacity="TOTAL",
    )
    ddb.batch_write_item(
        RequestItems={
            "t": [
                {"PutRequest": {"Item": {"pk": {"S": "org#1"}, "sk": {"S": f"k{i}"}}}}
                for i in range(5)
            ]
        }
    )
    batch = ddb.batch_get_item(
        RequestItems={
            "t": {"Keys": [{"pk": {"S": "org#1"}, "sk": {"S": f"k{i}"}} for i in range(3)]}
        }
    )
    assert len(batch["Responses"]["t"]) == 3 and batch["UnprocessedKeys"] == {}
    page = ddb.query(
        TableName="t",
        KeyConditionExpression="pk = :p",
        ExpressionAttributeValues={":p": {"S": "org#1"}},
        Limit=2,
        ScanIndexForward=False,
    )
    assert page["Count"] == 2 and "LastEvaluatedKey" in page
    ddb.query(
        TableName="t",
        IndexName="by_g",
        KeyConditionExpression="gk = :g",
        ExpressionAttributeValues={":g": {"S": "g"}},
    )
    updated = ddb.update_item(
        TableName="t",
        Key={"pk": ITEM["pk"], "sk": ITEM["sk"]},
        UpdateExpression="ADD n :one SET l = :l",
        ExpressionAttributeValues={":one": {"N": "1"}, ":l": {"L": []}},
        ReturnValues="ALL_NEW",
    )
    assert updated["Attributes"]["n"] == {"N": "4"}
    ddb.transact_write_items(
        TransactItems=[
            {"Put": {"TableName": "t", "Item": {"pk": {"S": "org#2"}, "sk": {"S": "x"}}}},
            {
                "Update": {
                    "TableName": "t",
                    "Key": {"pk": ITEM["pk"], "sk": ITEM["sk"]},
                    "UpdateExpression": "SET z = :z",
                    "ExpressionAttributeValues": {":z": {"BOOL": True}},
                }
            },
        ]
    )
    ddb.transact_get_items(
        TransactItems=[{"Get": {"TableName": "t", "Key": {"pk": ITEM["pk"], "sk": ITEM["sk"]}}}]
    )
    with pytest.raises(ddb.exceptions.ConditionalCheckFailedException):
        ddb.put_item(TableName="t", Item=ITEM, ConditionExpression="attribute_not_exists(pk)")
    ddb.delete_item(TableName="t", Key={"pk": ITEM["pk"], "sk": ITEM["sk"]}, ReturnValues="ALL_OLD")

    assert motofast.MISMATCHES == []
    assert _not_taken("dynamodb") == []  # every fast operation of the service was driven


def test_dynamodb_parameters_read_plainly_equal_motos_parse(
    aws_client: Client, verify: None
) -> None:
    """A request with no binary and no null is read by `json.loads` (VERIFY compares it with
    moto's parser), the text `null` inside a string too; one with a binary or a JSON null goes
    through moto's parser and means the same."""
    ddb = aws_client("dynamodb")
    _table(ddb)

    def hits() -> int:
        return motofast.FAST_HITS["dynamodb.plain-parameters"]

    before = hits()
    plain = {k: v for k, v in ITEM.items() if k not in ("b", "bs", "m")}
    ddb.put_item(TableName="t", Item=plain, ConditionExpression="attribute_not_exists(pk)")
    ddb.update_item(
        TableName="t",
        Key={"pk": ITEM["pk"], "sk": ITEM["sk"]},
        UpdateExpression="ADD n :one",
        ExpressionAttributeValues={":one": {"N": "1"}},
    )
    assert hits() == before + 2
    ddb.put_item(TableName="t", Item={**plain, "sk": {"S": "bin"}, "b": ITEM["b"]})
    assert hits() == before + 2  # moto's parser read it

    def with_null(request: Any, **_: Any) -> None:
        # botocore never writes a JSON null: one is put in before the request is signed.
        body = json.loads(request.data)
        body["ReturnValues"] = None
        request.data = json.dumps(body).encode()

    ddb.meta.events.register("before-sign.dynamodb.PutItem", with_null)
    try:
        ddb.put_item(TableName="t", Item={**plain, "sk": {"S": "json null"}})
    finally:
        ddb.meta.events.unregister("before-sign.dynamodb.PutItem", with_null)
    assert hits() == before + 2  # moto's parser read the null
    text = {"S": 'a "null", [null] and {"k": null}'}
    ddb.put_item(TableName="t", Item={**plain, "sk": {"S": "null"}, "z": {"NULL": True}, "t": text})
    assert hits() == before + 3  # `null` inside a string is text: read plainly
    got_text = ddb.get_item(TableName="t", Key={"pk": ITEM["pk"], "sk": {"S": "null"}})["Item"]
    assert got_text["t"] == text and got_text["z"] == {"NULL": True}
    assert (
        "sk"
        in ddb.get_item(TableName="t", Key={"pk": ITEM["pk"], "sk": {"S": "json null"}})["Item"]
    )
    got = ddb.get_item(TableName="t", Key={"pk": ITEM["pk"], "sk": {"S": "bin"}})["Item"]
    assert got["b"] == {"B": b"\x00\xffbytes"}  # decoded by moto's parser, not kept as text
    n = ddb.get_item(TableName="t", Key={"pk": ITEM["pk"], "sk": ITEM["sk"]})["Item"]["n"]
    assert float(n["N"]) == 13.5
    assert motofast.MISMATCHES == []


def test_sqs_fast_responses_equal_motos(aws_client: Client, verify: None) -> None:
    sqs = aws_client("sqs")
    url = sqs.create_queue(QueueName="q")["QueueUrl"]
    assert sqs.get_queue_url(QueueName="q")["QueueUrl"] == url
    sqs.send_message(
        QueueUrl=url,
        MessageBody="one",
        MessageAttributes={
            "s": {"DataType": "String", "StringValue": "é"},
            "n": {"DataType": "Number", "StringValue": "7"},
            "b": {"DataType": "Binary", "BinaryValue": b"\x00\x01"},
        },
    )
    sent = sqs.send_message_batch(
        QueueUrl=url,
        Entries=[{"Id": f"m{i}", "MessageBody": f"body {i}"} for i in range(3)],
    )
    assert len(sent["Successful"]) == 3
    got = sqs.receive_message(
        QueueUrl=url,
        MaxNumberOfMessages=10,
        MessageAttributeNames=["All"],
        MessageSystemAttributeNames=["All"],
        WaitTimeSeconds=0,
    )["Messages"]
    assert len(got) == 4
    with_attributes = next(m for m in got if m["Body"] == "one")
    assert with_attributes["MessageAttributes"]["b"]["BinaryValue"] == b"\x00\x01"
    sqs.change_message_visibility(
        QueueUrl=url, ReceiptHandle=got[0]["ReceiptHandle"], VisibilityTimeout=0
    )
    sqs.change_message_visibility_batch(
        QueueUrl=url,
        Entries=[{"Id": "a", "ReceiptHandle": got[1]["ReceiptHandle"], "VisibilityTimeout": 5}],
    )
    sqs.delete_message(QueueUrl=url, ReceiptHandle=got[2]["ReceiptHandle"])
    deleted = sqs.delete_message_batch(
        QueueUrl=url,
        Entries=[
            {"Id": "ok", "ReceiptHandle": got[3]["ReceiptHandle"]},
            {"Id": "bad", "ReceiptHandle": "not-a-receipt"},
        ],
    )
    assert [e["Id"] for e in deleted["Successful"]] == ["ok"]
    assert [e["Id"] for e in deleted["Failed"]] == ["bad"]
    assert sqs.receive_message(QueueUrl=url, WaitTimeSeconds=0).get("Messages", []) != []

    assert motofast.MISMATCHES == []
    assert _not_taken("sqs") == []  # every fast operation of the service was driven


def test_a_query_on_the_tables_key_reads_that_key_only(aws_client: Client, moto: Any) -> None:
    ddb = aws_client("dynamodb")
    _table(ddb)
    for org in range(30):
        ddb.batch_write_item(
            RequestItems={
                "t": [
                    {
                        "PutRequest": {
                            "Item": {
                                "pk": {"S": f"org#{org}"},
                                "sk": {"S": f"k{i:02d}"},
                                "v": {"N": str(i)},
                                "gk": {"S": f"g{org % 3}"},
                            }
                        }
                    }
                    for i in range(10)
                ]
            }
        )
    motofast.FULL_LISTINGS.clear()

    def keys(**kw: Any) -> list[str]:
        return [i["sk"]["S"] for i in ddb.query(TableName="t", **kw)["Items"]]

    def by_org(org: int, **kw: Any) -> dict[str, Any]:
        return {
            "KeyConditionExpression": "pk = :p" + kw.pop("extra", ""),
            "ExpressionAttributeValues": {":p": {"S": f"org#{org}"}, **kw.pop("values", {})},
            **kw,
        }

    assert keys(**by_org(7)) == [f"k{i:02d}" for i in range(10)]
    assert keys(**by_org(7, ScanIndexForward=False, Limit=3)) == ["k09", "k08", "k07"]
    start = {"pk": {"S": "org#7"}, "sk": {"S": "k04"}}
    assert keys(**by_org(7, ExclusiveStartKey=start, Limit=2)) == ["k05", "k06"]
    between = by_org(7, extra=" AND sk BETWEEN :a AND :b", values={":a": {"S": "k02"}})
    between["ExpressionAttributeValues"][":b"] = {"S": "k04"}
    assert keys(**between) == ["k02", "k03", "k04"]
    filtered = by_org(7, FilterExpression="v > :five", values={":five": {"N": "5"}})
    assert keys(**filtered) == ["k06", "k07", "k08", "k09"]
    assert keys(**by_org(99)) == []
    assert motofast.FULL_LISTINGS["t"] == 0

    # An index query still lists the table (moto keeps no index): same answers as before.
    gsi = ddb.query(
        TableName="t",
        IndexName="by_g",
        KeyConditionExpression="gk = :g",
        ExpressionAttributeValues={":g": {"S": "g1"}},
    )
    assert gsi["Count"] == 100
    assert motofast.FULL_LISTINGS["t"] == 1


def test_only_a_query_that_neither_projects_nor_filters_hands_on_the_items_uncopied(
    aws_client: Client, verify: None
) -> None:
    """moto copies a query's items before it projects or filters them; a plain query's are only
    read, inside the DynamoDB lock, so they are not copied: the answers stay moto's (VERIFY) and
    the stored items keep every attribute after a projecting or filtering query."""
    ddb = aws_client("dynamodb")
    _table(ddb)
    ddb.put_item(TableName="t", Item=ITEM)
    ddb.put_item(TableName="t", Item={**ITEM, "sk": {"S": "b"}, "n": {"N": "9"}})
    by_pk = {"KeyConditionExpression": "pk = :p", "ExpressionAttributeValues": {":p": ITEM["pk"]}}
    hits = motofast.FAST_HITS["dynamodb.query-uncopied"]
    plain = ddb.query(TableName="t", **by_pk)["Items"]
    assert [i["sk"]["S"] for i in plain] == ["a", "b"] and plain[0]["m"] == ITEM["m"]
    assert motofast.FAST_HITS["dynamodb.query-uncopied"] == hits + 1
    projected = ddb.query(TableName="t", ProjectionExpression="sk, m.deep", **by_pk)["Items"]
    assert projected[0] == {"sk": ITEM["sk"], "m": {"M": {"deep": ITEM["m"]["M"]["deep"]}}}
    filtered = ddb.query(
        TableName="t",
        KeyConditionExpression="pk = :p",
        FilterExpression="n < :ten",
        ExpressionAttributeValues={":p": ITEM["pk"], ":ten": {"N": "10"}},
    )["Items"]
    assert [i["sk"]["S"] for i in filtered] == ["b"]
    assert motofast.FAST_HITS["dynamodb.query-uncopied"] == hits + 1
    assert ddb.query(TableName="t", **by_pk)["Items"] == plain  # nothing was projected away
    assert motofast.MISMATCHES == []


def test_a_cached_expression_takes_each_requests_values(aws_client: Client, moto: Any) -> None:
    # The same texts with other values, in an update, a condition and a transaction, twice each:
    # a parse kept from the first request must not keep its values.
    ddb = aws_client("dynamodb")
    _table(ddb)
    key = {"pk": {"S": "org#1"}, "sk": {"S": "run"}}
    ddb.put_item(TableName="t", Item={**key, "n": {"N": "0"}, "lanes": {"L": [{"N": "0"}] * 3}})
    update = "SET lanes[1] = :lane, #s = :s ADD n :step"
    condition = "n < :limit AND attribute_exists(pk)"
    for step, lane, limit, held in ((2, 5, 1, True), (3, 7, 1, False), (4, 9, 100, True)):
        try:
            ddb.update_item(
                TableName="t",
                Key=key,
                UpdateExpression=update,
                ConditionExpression=condition,
                ExpressionAttributeNames={"#s": "status"},
                ExpressionAttributeValues={
                    ":lane": {"N": str(lane)},
                    ":s": {"S": f"s{step}"},
                    ":step": {"N": str(step)},
                    ":limit": {"N": str(limit)},
                },
            )
            assert held
        except ddb.exceptions.ConditionalCheckFailedException:
            assert not held
    item = ddb.get_item(TableName="t", Key=key)["Item"]
    assert item["n"] == {"N": "6"} and item["status"] == {"S": "s4"}
    assert item["lanes"]["L"] == [{"N": "0"}, {"N": "9"}, {"N": "0"}]

    for value, held in (("a", True), ("b", False)):
        try:
            ddb.transact_write_items(
                TransactItems=[
                    {
                        "Update": {
                            "TableName": "t",
                            "Key": key,
                            "UpdateExpression": "SET #s = :v ADD n :one",
                            "ConditionExpression": "#s <> :v",
                            "ExpressionAttributeNames": {"#s": "status"},
                            "ExpressionAttributeValues": {":v": {"S": "a"}, ":one": {"N": "1"}}
                            if value == "a"
                            else {":v": {"S": "a"}, ":one": {"N": "10"}},
                        }
                    }
                ]
            )
            assert held
        except ddb.exceptions.TransactionCanceledException:
            assert not held
    item = ddb.get_item(TableName="t", Key=key)["Item"]
    assert item["n"] == {"N": "7"} and item["status"] == {"S": "a"}


def test_a_whole_run_reads_what_motos_serializer_would_have_written(
    monkeypatch: pytest.MonkeyPatch,
) -> None:
    # A stack whose moto server (a child process) compares every fast response with moto's own:
    # a comparison run with confirmed flips, the reads of its result, the listings. Its own
    # server, not the endpoint an earlier stack of this session left in the environment.
    monkeypatch.delenv("AWS_ENDPOINT_URL", raising=False)
    import json
    import urllib.request

    from assay_local.moto_http import FAST_PATHS_PATH
    from assay_local.stack import EmbeddedStack
    from chalicelib.api.common import issue_token
    from tests.support.e2e import Api, cases, sleepy_spec

    with EmbeddedStack(
        workers=4,
        scheduler=False,
        env={
            motofast.VERIFY_ENV: "1",
            "ASSAY_RETRY_BACKOFF_SECONDS": "0.01",
            "ASSAY_PYTHON_AGENT_MODULES": "bench.agents,tests.support",
        },
    ) as stack:
        s = stack.settings
        token = issue_token(
            "org_fast", "t@example.com", secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer
        )
        api = Api(stack.api_url, "org_fast", "t@example.com", token)
        ds = api.dataset(cases(8))
        agent = api.agent(sleepy_spec(), publish=1)
        api.ok(
            "PUT",
            f"/api/v1/agents/{agent}/draft",
            json={"spec": sleepy_spec(answers={"c003": "7"})},
        )
        run = api.start(agent, ds, paired_baseline=True)
        assert api.wait(run["run_id"])["status"] == "completed"
        comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
        assert [f["case_id"] for f in comparison["flips"] if f["confirmed"]] == ["c003"]
        api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/cases")
        api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")
        assert stack.moto is not None
        with urllib.request.urlopen(f"{stack.moto.url}{FAST_PATHS_PATH}", timeout=10) as r:
            seen = json.loads(r.read())
    assert seen["mismatches"] == []
    for operation in (
        "dynamodb.TransactWriteItems",
        "dynamodb.BatchGetItem",
        "dynamodb.PutItem",
        "dynamodb.Query",
        "sqs.ReceiveMessage",
        "sqs.SendMessageBatch",
        "sqs.DeleteMessageBatch",
        "dynamodb.plain-update",
        "dynamodb.query-uncopied",
    ):
        assert seen["hits"].get(operation, 0) >= 1, operation


def _update(ddb: Any, expression: str, names: dict[str, str], values: dict[str, Any]) -> Any:
    return ddb.update_item(
        TableName="t",
        Key={"pk": ITEM["pk"], "sk": ITEM["sk"]},
        UpdateExpression=expression,
        ExpressionAttributeNames=names,
        **({"ExpressionAttributeValues": values} if values else {}),
        ReturnValues="ALL_NEW",
    )["Attributes"]


def test_plain_updates_change_the_item_as_motos_own_validator_and_executor(
    aws_client: Client, verify: None
) -> None:
    """`SET #n = :v`, `SET #n[i] = :v`, `ADD #n :v`, `REMOVE #n` are applied without moto's
    validator; with VERIFY each is also run through moto's own path and compared. What is not
    plain, or breaks a rule, goes to moto: the same errors."""
    from botocore.exceptions import ClientError

    ddb = aws_client("dynamodb")
    _table(ddb)
    ddb.put_item(TableName="t", Item={**ITEM, "lanes": {"L": [{"N": "0"}, {"N": "1"}]}})
    after = _update(
        ddb,
        "SET #a = :a, #l[1] = :one, #l[7] = :two ADD #n :half, #fresh :one REMOVE #gone, #m",
        {"#a": "a", "#l": "lanes", "#n": "n", "#fresh": "fresh", "#gone": "nothing", "#m": "m"},
        {
            ":a": {"M": {"x": {"SS": ["q"]}}},
            ":one": {"N": "1"},
            ":two": {"N": "2"},
            ":half": {"N": "0.5"},
        },
    )
    assert after["a"] == {"M": {"x": {"SS": ["q"]}}}
    assert after["lanes"] == {"L": [{"N": "0"}, {"N": "1"}, {"N": "2"}]}  # past the end: appended
    assert _update(ddb, "SET #l[0] = :one", {"#l": "lanes"}, {":one": {"N": "1"}})["lanes"] == {
        "L": [{"N": "1"}, {"N": "1"}, {"N": "2"}]
    }
    assert after["n"] == {"N": "13.00"} and after["fresh"] == {"N": "1"}
    assert "m" not in after and "nothing" not in after
    assert motofast.FAST_HITS["dynamodb.plain-update"] >= 1
    ddb.put_item(TableName="t", Item={**ITEM, "text": {"S": "s"}})
    refused = [
        # ADD onto a string, SET into a missing list, a key attribute, a missing value
        ("ADD #t :one", {"#t": "text"}, {":one": {"N": "1"}}),
        ("SET #x[0] = :one", {"#x": "missing"}, {":one": {"N": "1"}}),
        ("SET #k = :v", {"#k": "sk"}, {":v": {"S": "b"}}),
        ("SET #a = :nope", {"#a": "a"}, {":v": {"S": "b"}}),
    ]
    for expression, names, values in refused:
        hits = motofast.FAST_HITS["dynamodb.plain-update"]
        with pytest.raises(ClientError) as caught:
            _update(ddb, expression, names, values)
        assert caught.value.response["Error"]["Code"] == "ValidationException", expression
        assert motofast.FAST_HITS["dynamodb.plain-update"] == hits, f"{expression} was not moto's"
    # An index key by placeholder: moto checks neither its type nor its emptiness, nor do we.
    hits = motofast.FAST_HITS["dynamodb.plain-update"]
    assert _update(ddb, "SET #g = :v", {"#g": "gk"}, {":v": {"N": "1"}})["gk"] == {"N": "1"}
    assert motofast.FAST_HITS["dynamodb.plain-update"] == hits + 1
    assert motofast.MISMATCHES == []


def test_plain_updates_past_the_size_limit_are_refused_as_motos_own(
    aws_client: Client, verify: None
) -> None:
    """A plain update keeps one running sum of the item's size instead of moto's sum at every
    set: a set or an ADD that takes the item past moto's limit is refused and one that reaches
    it exactly is kept, a list element grows the item unchecked (moto checks none), as moto's own
    path decides (VERIFY compares each update with it)."""
    from botocore.exceptions import ClientError

    ddb = aws_client("dynamodb")
    _table(ddb)
    limit = 405_000  # moto's limit, in bytes of names and values
    key = {"pk": ITEM["pk"], "sk": ITEM["sk"]}
    item = {**key, "big": {"S": "x"}, "n": {"N": "1"}, "lanes": {"L": [{"N": "0"}]}}
    ddb.put_item(TableName="t", Item=item)
    room = limit - _moto_size(item)  # bytes left beside the item as it is

    def refused(expression: str, names: dict[str, str], values: dict[str, Any]) -> None:
        before = ddb.get_item(TableName="t", Key=key)["Item"]
        with pytest.raises(ClientError) as caught:
            _update(ddb, expression, names, values)
        assert caught.value.response["Error"]["Code"] == "ValidationException", expression
        assert ddb.get_item(TableName="t", Key=key)["Item"] == before, expression

    hits = motofast.FAST_HITS["dynamodb.plain-update"]
    # moto refuses a set when the item's names and values, the replaced value included, plus
    # the set's name and new value pass the limit
    refused("SET #f = :v", {"#f": "f"}, {":v": {"S": "y" * room}})  # 1 + room: one past
    refused(
        "SET #b = :v, #n = :two",
        {"#b": "big", "#n": "n"},
        {":v": {"S": "y" * (room - 2)}, ":two": {"N": "2"}},  # 3 + room - 2 on top: one past
    )
    full = _update(ddb, "SET #b = :v", {"#b": "big"}, {":v": {"S": "y" * (room - 3)}})
    assert full["big"] == {"S": "y" * (room - 3)}  # 3 + room - 3 on top: exactly the limit
    assert _moto_size(full) == limit - 4  # the 1-byte "x" it replaced is gone
    assert _update(ddb, "ADD #n :one", {"#n": "n"}, {":one": {"N": "1"}})["n"] == {"N": "2"}
    grown = _update(ddb, "SET #l[1] = :v", {"#l": "lanes"}, {":v": {"N": "7"}})
    assert grown["lanes"] == {"L": [{"N": "0"}, {"N": "7"}]} and _moto_size(grown) == limit - 2
    refused("ADD #n :one", {"#n": "n"}, {":one": {"N": "1"}})  # limit - 2 + 1 + 2: one past
    after = _update(ddb, "REMOVE #b ADD #n :one", {"#b": "big", "#n": "n"}, {":one": {"N": "1"}})
    assert after["n"] == {"N": "3"} and "big" not in after
    assert motofast.FAST_HITS["dynamodb.plain-update"] >= hits + 7  # each was plain
    assert motofast.MISMATCHES == []


def _moto_size(item: dict[str, Any]) -> int:
    """moto's size of an item given in its wire form: its names' bytes and its values' sizes."""
    from moto.dynamodb.models.dynamo_type import DynamoType

    return sum(len(k.encode()) + DynamoType(v).size() for k, v in item.items())


def test_a_condition_parse_is_reused_only_for_the_same_text_names_and_values(
    aws_client: Client, verify: None
) -> None:
    """A condition's parse is kept by its text, names and values: the same condition decides
    the same again (VERIFY parses each reuse afresh and compares), and the same text with other
    values is parsed anew and decides by those values."""
    from botocore.exceptions import ClientError

    ddb = aws_client("dynamodb")
    _table(ddb)
    key = {"pk": ITEM["pk"], "sk": ITEM["sk"]}
    new = {
        "ConditionExpression": "attribute_not_exists(#k)",
        "ExpressionAttributeNames": {"#k": "pk"},
    }
    ddb.put_item(TableName="t", Item={**key, "n": {"N": "1"}}, **new)
    reused = motofast.FAST_HITS["dynamodb.condition-reused"]
    with pytest.raises(ClientError) as caught:
        ddb.put_item(TableName="t", Item={**key, "n": {"N": "9"}}, **new)
    assert caught.value.response["Error"]["Code"] == "ConditionalCheckFailedException"
    assert motofast.FAST_HITS["dynamodb.condition-reused"] > reused  # moto parses it thrice

    def bump(expected: str) -> None:
        # The handler's validation and the transaction each parse the condition.
        ddb.transact_write_items(
            TransactItems=[
                {
                    "Update": {
                        "TableName": "t",
                        "Key": key,
                        "ConditionExpression": "#n = :was",
                        "UpdateExpression": "ADD #n :one",
                        "ExpressionAttributeNames": {"#n": "n"},
                        "ExpressionAttributeValues": {":was": {"N": expected}, ":one": {"N": "1"}},
                    }
                }
            ]
        )

    reused = motofast.FAST_HITS["dynamodb.condition-reused"]
    bump("1")
    assert motofast.FAST_HITS["dynamodb.condition-reused"] == reused + 1  # the second parse
    with pytest.raises(ClientError) as cancelled:
        bump("1")  # the same text and values, a different item now: the condition fails
    assert cancelled.value.response["Error"]["Code"] == "TransactionCanceledException"
    bump("2")  # the same text, other values: parsed anew, and holds
    got = ddb.get_item(TableName="t", Key=key, ConsistentRead=True)["Item"]
    assert got["n"] == {"N": "3"}
    assert motofast.MISMATCHES == []
