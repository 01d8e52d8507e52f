"""`dynamo_serializer` writes each item request byte for byte as botocore's own serializer does,
and leaves to it whatever it does not write plainly (binaries, other operations)."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.serialize import JSONSerializer

from chalicelib.adapters import dynamo_serializer
from chalicelib.adapters.dynamo_parser import ITEM_OPERATIONS
from chalicelib.adapters.dynamo_serializer import DynamoJSONSerializer

KEY = {"pk": {"S": "org#1"}, "sk": {"S": 'é "quoted" \\ back'}}
ITEM = {
    **KEY,
    "n": {"N": "12.50"},
    "ss": {"SS": ["x", "y"]},
    "ns": {"NS": ["1", "2.5"]},
    "m": {"M": {"deep": {"L": [{"S": "ü"}, {"NULL": True}, {"BOOL": False}]}}},
    "text": {"S": 'a B, not a binary: {"fingerprint": null}'},
}
UPDATE = {
    "TableName": "t",
    "Key": KEY,
    "ConditionExpression": "((#0[1] = :0 AND #1 = :1) AND #2[1] > :2)",
    "UpdateExpression": "SET #3 = :3 ADD #4 :5",
    "ExpressionAttributeNames": {f"#{i}": f"name{i}" for i in range(5)},
    "ExpressionAttributeValues": {f":{i}": {"N": str(i)} for i in range(6)},
    "ReturnValuesOnConditionCheckFailure": "ALL_OLD",
}
PLAIN: dict[str, dict[str, Any]] = {
    "GetItem": {"TableName": "t", "Key": KEY, "ConsistentRead": True},
    "BatchGetItem": {
        "RequestItems": {
            "t": {"Keys": [KEY], "ConsistentRead": True, "ProjectionExpression": "n"},
            "u": {"Keys": [{"org_id": {"S": "o"}}]},
        },
        "ReturnConsumedCapacity": "TOTAL",
    },
    "PutItem": {
        "TableName": "t",
        "Item": ITEM,
        "ConditionExpression": "attribute_not_exists (#0)",
        "ExpressionAttributeNames": {"#0": "pk"},
        "ReturnConsumedCapacity": "TOTAL",
    },
    "UpdateItem": {**UPDATE, "ReturnValues": "ALL_NEW"},
    "DeleteItem": {"TableName": "t", "Key": KEY, "ReturnValues": "ALL_OLD"},
    "Query": {
        "TableName": "t",
        "KeyConditionExpression": "pk = :p",
        "ExpressionAttributeValues": {":p": KEY["pk"]},
        "ExclusiveStartKey": KEY,
        "Limit": 100,
        "ScanIndexForward": False,
    },
    "Scan": {"TableName": "t", "Segment": 0, "TotalSegments": 2},
    "BatchWriteItem": {"RequestItems": {"t": [{"PutRequest": {"Item": ITEM}}]}},
    "TransactWriteItems": {
        "TransactItems": [
            {"Put": {"TableName": "t", "Item": ITEM}},
            {"Update": UPDATE},
            {"ConditionCheck": {"TableName": "t", "Key": KEY, "ConditionExpression": "a = :1"}},
            {"Delete": {"TableName": "t", "Key": KEY}},
        ],
        "ReturnConsumedCapacity": "TOTAL",
        "ClientRequestToken": "token",
    },
    "TransactGetItems": {"TransactItems": [{"Get": {"TableName": "t", "Key": KEY}}]},
}


@pytest.fixture(scope="module")
def model() -> Any:
    return botocore.session.get_session().get_service_model("dynamodb")


def _both(model: Any, operation: str, params: dict[str, Any]) -> tuple[Any, Any]:
    op = model.operation_model(operation)
    return (
        DynamoJSONSerializer(JSONSerializer()).serialize_to_request(params, op),
        JSONSerializer().serialize_to_request(params, op),
    )


def test_every_item_operation_is_written_as_botocore_writes_it(model: Any) -> None:
    assert set(PLAIN) == set(ITEM_OPERATIONS)
    for operation, params in PLAIN.items():
        ours, theirs = _both(model, operation, params)
        assert ours == theirs, operation
        assert isinstance(ours["body"], bytes)


def test_what_is_not_plain_is_botocores_own(model: Any, monkeypatch: pytest.MonkeyPatch) -> None:
    calls: list[str] = []
    inner = JSONSerializer()
    original = inner.serialize_to_request

    def counted(params: Any, op: Any) -> Any:
        calls.append(op.name)
        return original(params, op)

    monkeypatch.setattr(inner, "serialize_to_request", counted)
    ours = DynamoJSONSerializer(inner)
    cases = [
        ("PutItem", {"TableName": "t", "Item": {**KEY, "b": {"B": b"\x00\xff"}}}),  # bytes
        ("PutItem", {"TableName": "t", "Item": {**KEY, "b": {"B": "dGV4dA=="}}}),  # text
        ("PutItem", {"TableName": "t", "Item": {**KEY, "bs": {"BS": [b"\x01"]}}}),
        ("DescribeTable", {"TableName": "t"}),  # not an item operation
    ]
    for operation, params in cases:
        op = model.operation_model(operation)
        assert ours.serialize_to_request(params, op) == JSONSerializer().serialize_to_request(
            params, op
        )
    assert calls == [operation for operation, _ in cases]
    calls.clear()
    ours.serialize_to_request(PLAIN["GetItem"], model.operation_model("GetItem"))
    assert calls == []  # the plain one written without it
    with pytest.raises(KeyError):  # a member the input lacks: botocore's own error
        ours.serialize_to_request({**PLAIN["GetItem"], "Nope": 1}, model.operation_model("GetItem"))


def test_installed_only_on_a_client_that_does_not_validate() -> None:
    session = botocore.session.get_session()
    kwargs: dict[str, Any] = {
        "region_name": "us-east-1",
        "endpoint_url": "http://127.0.0.1:9",
        "aws_access_key_id": "testing",
        "aws_secret_access_key": "testing",
    }
    unvalidated = session.create_client(
        "dynamodb", config=botocore.client.Config(parameter_validation=False), **kwargs
    )
    dynamo_serializer.install(unvalidated)
    dynamo_serializer.install(unvalidated)  # once
    assert type(unvalidated._serializer) is DynamoJSONSerializer
    assert type(unvalidated._serializer._inner) is JSONSerializer
    validated = session.create_client("dynamodb", **kwargs)
    dynamo_serializer.install(validated)
    assert type(validated._serializer) is not DynamoJSONSerializer
