"""DynamoDB's item requests written as the parameters are (issue 33).

botocore writes a JSON request by walking the operation's input shape member by member: for an
item operation that is every attribute of every item, wrapped in `AttributeValue` structures
whose wire form is already what PynamoDB hands it (`{"S": "..."}`, `{"N": "1"}`, `{"M": {...}}`),
except a binary, which it base64-encodes. In DynamoDB's input shapes nothing else is converted
(no timestamp, no float; no member renamed), and botocore's body is `json.dumps` of a copy of
the parameters in their own order. So for the item operations below a request whose top-level
members are all the input's and which holds no binary is written by `json.dumps` of the
parameters themselves: the same bytes. Anything else (a binary or text that reads like one,
bytes or any value `json` cannot write, another operation) goes to botocore's own serializer.
Installed only on the embedded stack's loopback client (`table_base.share_client`); AWS and
LocalStack keep botocore's own serializer.
"""

from __future__ import annotations

import json
from typing import Any

from chalicelib.adapters.dynamo_parser import BINARY, ITEM_OPERATIONS


class DynamoJSONSerializer:
    """botocore's request serializer of a DynamoDB client (`inner`), writing the item operations'
    plain requests with `json.dumps` (module docstring). Install with `install`."""

    def __init__(self, inner: Any) -> None:
        self._inner = inner
        self._fixed: dict[str, tuple[frozenset[str], str, dict[str, str]] | None] = {}

    def serialize_to_request(self, parameters: Any, operation_model: Any) -> dict[str, Any]:
        """The request dict botocore's serializer makes (`url_path`, `query_string`, `method`,
        `headers`, `body`) for `parameters` of `operation_model`."""
        fixed = self._plain_operation(operation_model)
        if fixed is None or type(parameters) is not dict:
            return self._inner.serialize_to_request(parameters, operation_model)
        members, method, headers = fixed
        if not members.issuperset(parameters):
            return self._inner.serialize_to_request(parameters, operation_model)
        try:
            text = json.dumps(parameters)
        except (TypeError, ValueError):  # bytes (a binary), or anything json cannot write
            return self._inner.serialize_to_request(parameters, operation_model)
        body = text.encode("utf-8")
        if BINARY.search(body):  # a binary given as text is base64-encoded by botocore
            return self._inner.serialize_to_request(parameters, operation_model)
        return {
            "url_path": "/",
            "query_string": "",
            "method": method,
            "headers": dict(headers),
            "body": body,
        }

    def _plain_operation(
        self, operation_model: Any
    ) -> tuple[frozenset[str], str, dict[str, str]] | None:
        """(input members, method, headers) of an item operation botocore writes as its
        parameters are, or None (another operation; or the model asks for more: a host prefix,
        the query-compatible header, a member renamed or converted)."""
        name = operation_model.name
        if name in self._fixed:
            return self._fixed[name]
        found = None
        shape = operation_model.input_shape
        metadata = operation_model.metadata
        if (
            name in ITEM_OPERATIONS
            and shape is not None
            and metadata.get("protocol") == "json"
            and not operation_model.service_model.is_query_compatible
            and not (operation_model.endpoint or {}).get("hostPrefix")
            and _as_written(shape)
        ):
            found = (
                frozenset(shape.members),
                operation_model.http.get("method", "POST"),
                {
                    "X-Amz-Target": f"{metadata['targetPrefix']}.{name}",
                    "Content-Type": f"application/x-amz-json-{metadata['jsonVersion']}",
                },
            )
        self._fixed[name] = found
        return found


def _as_written(shape: Any) -> bool:
    """Whether botocore's JSON serializer writes every value of `shape` as given: no timestamp,
    float or double anywhere, no member with a wire name of its own, blobs only as
    `AttributeValue`'s `B`/`BS` (kept off the plain path by `BINARY`)."""
    seen: set[str] = set()

    def walk(node: Any, member: str | None) -> bool:
        if node.name in seen:
            return True
        seen.add(node.name)
        kind = node.type_name
        if kind in ("timestamp", "float", "double"):
            return False
        if kind == "blob":
            return member in ("B", "BS")
        if kind == "structure":
            return not node.is_document_type and all(
                inner.serialization.get("name", name) == name and walk(inner, name)
                for name, inner in node.members.items()
            )
        if kind == "list":
            return walk(node.member, member)
        if kind == "map":
            return walk(node.key, None) and walk(node.value, None)
        return True

    return walk(shape, None)


def install(client: Any) -> None:
    """Put `DynamoJSONSerializer` in front of a botocore DynamoDB client's own JSON serializer
    (its `_serializer`). A client that validates its parameters (PynamoDB's do not) or has
    another serializer is left as it is."""
    from botocore.serialize import JSONSerializer

    inner = getattr(client, "_serializer", None)
    if type(inner) is JSONSerializer:
        client._serializer = DynamoJSONSerializer(inner)
