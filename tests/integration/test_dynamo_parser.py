"""`dynamo_parser` reads every item operation's answer as botocore's own parser does (against the
moto server over HTTP): every attribute type, binaries included, and errors untouched."""

from __future__ import annotations

from typing import Any

import botocore.session
import pytest
from botocore.exceptions import ClientError

from chalicelib.adapters.dynamo_parser import ITEM_OPERATIONS, DynamoJSONParser, DynamoParserFactory
from tests.integration.conftest import create_table

ITEM = {
    "pk": {"S": "org#1"},
    "sk": {"S": "a"},
    "n": {"N": "12.50"},
    "b": {"B": b"\x00\xffbytes"},
    "bs": {"BS": [b"\x01", b"\x02"]},
    "ss": {"SS": ["x", "y"]},
    "ns": {"NS": ["1", "2.5"]},
    "m": {
        "M": {"B": {"S": "an attribute named B"}, "deep": {"L": [{"B": b"\x03"}, {"NULL": True}]}}
    },
    "t": {"BOOL": False},
    "text": {"S": '"B": "not a binary"'},
}
KEY = {"pk": ITEM["pk"], "sk": ITEM["sk"]}


def _client(moto: Any, fast: bool) -> Any:
    session = botocore.session.get_session()
    if fast:
        session.register_component("response_parser_factory", DynamoParserFactory())
    return session.create_client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url=moto.url,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def _calls(table: str) -> dict[str, tuple[str, dict[str, Any]]]:
    """One request per item operation (each its output's members filled)."""
    return {
        "GetItem": ("get_item", {"TableName": table, "Key": KEY, "ConsistentRead": True}),
        "Query": (
            "query",
            {
                "TableName": table,
                "KeyConditionExpression": "pk = :p",
                "ExpressionAttributeValues": {":p": ITEM["pk"]},
                "Limit": 1,
                "ReturnConsumedCapacity": "TOTAL",
            },
        ),
        "Scan": ("scan", {"TableName": table}),
        "BatchGetItem": ("batch_get_item", {"RequestItems": {table: {"Keys": [KEY]}}}),
        "TransactGetItems": (
            "transact_get_items",
            {"TransactItems": [{"Get": {"TableName": table, "Key": KEY}}]},
        ),
        "PutItem": ("put_item", {"TableName": table, "Item": ITEM, "ReturnValues": "ALL_OLD"}),
        "UpdateItem": (
            "update_item",
            {
                "TableName": table,
                "Key": KEY,
                "UpdateExpression": "SET #x = :x",
                "ExpressionAttributeNames": {"#x": "x"},
                "ExpressionAttributeValues": {":x": {"B": b"\x04"}},
                "ReturnValues": "ALL_NEW",
            },
        ),
        "DeleteItem": ("delete_item", {"TableName": table, "Key": KEY, "ReturnValues": "ALL_OLD"}),
        "BatchWriteItem": (
            "batch_write_item",
            {"RequestItems": {table: [{"PutRequest": {"Item": ITEM}}]}},
        ),
        "TransactWriteItems": (
            "transact_write_items",
            {"TransactItems": [{"Put": {"TableName": table, "Item": ITEM}}]},
        ),
    }


def test_every_item_operation_reads_as_botocore_reads_it(moto, monkeypatch) -> None:
    slow, fast = _client(moto, fast=False), _client(moto, fast=True)
    walked: list[str] = []
    original = DynamoJSONParser._handle_json_body

    def walking(self: Any, raw_body: Any, shape: Any) -> Any:
        walked.append(shape.name)
        return original(self, raw_body, shape)

    create_table(slow, "parsed", range_key=True)
    calls = _calls("parsed")
    assert set(calls) == ITEM_OPERATIONS
    for operation, (method, kwargs) in calls.items():
        slow.put_item(TableName="parsed", Item=ITEM)
        theirs = getattr(slow, method)(**kwargs)
        slow.put_item(TableName="parsed", Item=ITEM)
        monkeypatch.setattr(DynamoJSONParser, "_handle_json_body", walking)
        ours = getattr(fast, method)(**kwargs)
        monkeypatch.undo()
        for parsed in (theirs, ours):
            parsed.pop("ResponseMetadata")
        assert ours == theirs, operation
    assert walked == [], "botocore walked the shape of a fast operation's answer"
    got = fast.get_item(TableName="parsed", Key=KEY)["Item"]
    assert got["b"] == {"B": b"\x00\xffbytes"} and got["bs"] == {"BS": [b"\x01", b"\x02"]}
    assert got["m"]["M"]["deep"]["L"][0] == {"B": b"\x03"}
    assert got["text"] == ITEM["text"]
    assert isinstance(fast._endpoint._response_parser_factory, DynamoParserFactory)  # noqa: SLF001


def test_an_error_is_parsed_by_botocore(moto) -> None:
    fast = _client(moto, fast=True)
    with pytest.raises(ClientError) as caught:
        fast.get_item(TableName="no-such-table", Key=KEY)
    assert caught.value.response["Error"]["Code"] == "ResourceNotFoundException"
