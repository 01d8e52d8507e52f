"""DynamoDB's item responses taken as the wire writes them (issue 12).

botocore parses a JSON response by walking the operation's output shape member by member: for an
item read that is every attribute of every item, wrapped in `AttributeValue` structures whose wire
form is already what the parsed form is (`{"S": "..."}`, `{"N": "1"}`, `{"M": {...}}`), except a
binary's base64 text, which becomes bytes. Reading a run of 1,319 attempts spent ~45 % of the API
process there. For the item operations below a successful response is `json.loads`, its binaries
decoded, and its metadata added as botocore adds it; errors, other operations and anything not an
object go to botocore's own parser. The same for AWS, LocalStack and moto: it reads the same JSON.
"""

from __future__ import annotations

import re
from typing import Any

from botocore.parsers import JSONParser, ResponseParserFactory

ITEM_OPERATIONS = frozenset(
    {
        "GetItem",
        "Query",
        "Scan",
        "BatchGetItem",
        "TransactGetItems",
        "PutItem",
        "UpdateItem",
        "DeleteItem",
        "BatchWriteItem",
        "TransactWriteItems",
    }
)
"""Operations whose output holds no timestamps: only `AttributeValue`s need anything done."""

_OUTPUT_SHAPES = frozenset(f"{name}Output" for name in ITEM_OPERATIONS)
BINARY = re.compile(rb'"BS?"\s*:')
"""Where a DynamoDB JSON body may hold a binary (`B`) or a binary set (`BS`): text that reads so
only costs the slow path."""


class DynamoJSONParser(JSONParser):
    """botocore's `JSONParser`, taking the JSON of `ITEM_OPERATIONS`' results as it is."""

    def _do_parse(self, response: dict[str, Any], shape: Any) -> dict[str, Any]:
        body = response.get("body")
        if shape is None or shape.name not in _OUTPUT_SHAPES or not body:
            return super()._do_parse(response, shape)
        parsed = self._parse_body_as_json(body)
        if not isinstance(parsed, dict):
            return super()._do_parse(response, shape)
        if BINARY.search(body):  # a binary or a binary set somewhere (or text that reads so)
            self._decode_binaries(parsed)
        self._inject_response_metadata(parsed, response["headers"])
        return parsed

    def _decode_binaries(self, value: Any) -> None:
        """Decode every `{"B": base64}` and `{"BS": [base64]}` in place. In an item response an
        object of one member `B` holding a string is an `AttributeValue` (an attribute named `B`
        holds an `AttributeValue` object, never a string)."""
        if isinstance(value, dict):
            if len(value) == 1:
                ((kind, inner),) = value.items()
                if kind == "B" and isinstance(inner, str):
                    value["B"] = self._blob_parser(inner)
                    return
                if (
                    kind == "BS"
                    and isinstance(inner, list)
                    and all(isinstance(b, str) for b in inner)
                ):
                    value["BS"] = [self._blob_parser(b) for b in inner]
                    return
            for inner in value.values():
                self._decode_binaries(inner)
        elif isinstance(value, list):
            for inner in value:
                self._decode_binaries(inner)


class DynamoParserFactory(ResponseParserFactory):
    """botocore's parser factory, with `DynamoJSONParser` for the `json` protocol (register it as
    a session's `response_parser_factory` before its DynamoDB client is made)."""

    def create_parser(self, protocol_name: str) -> Any:
        if protocol_name == "json":
            return DynamoJSONParser(**self._defaults)
        return super().create_parser(protocol_name)
