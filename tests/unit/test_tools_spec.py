"""A spec's `tools` (domain.tools): both declaration shapes, every refusal naming its field, the
arguments check, and what the agent is told of a call."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain.enums import CallStatus, ToolEffect
from chalicelib.domain.tools import (
    WORKSPACE_TOOLS,
    ToolReply,
    argument_problem,
    connection_ids,
    parse_tools,
    tools_of,
)
from chalicelib.errors import InvalidInputError

ORDER = {
    "type": "object",
    "properties": {"order_id": {"type": "string"}, "amount": {"type": "number"}},
    "required": ["order_id"],
}


def test_the_flat_and_the_openai_shapes_give_the_same_tool():
    flat = parse_tools(
        [{"name": "refund", "parameters": ORDER, "effect": "write", "connection_id": "shop"}]
    )
    wrapped = parse_tools(
        [
            {
                "type": "function",
                "function": {"name": "refund", "parameters": ORDER},
                "effect": "write",
                "connection_id": "shop",
            }
        ]
    )
    assert flat == wrapped
    assert flat[0].effect is ToolEffect.WRITE and flat[0].connection_id == "shop"
    assert flat[0].openai_tool() == {
        "type": "function",
        "function": {"name": "refund", "parameters": ORDER},
    }


def test_no_effect_is_kept_as_none_and_shown_as_a_write():
    (tool,) = parse_tools([{"name": "notify"}])
    assert tool.effect is None
    assert tool.public()["effect"] == "write"
    assert tool.openai_tool()["function"]["parameters"] == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    ("tools", "field"),
    [
        ("refund", "spec.tools"),
        ([{"name": "has space"}], "spec.tools[0].name"),
        ([{"name": "x" * 65}], "spec.tools[0].name"),
        ([{"name": "workspace_read"}], "spec.tools[0].name"),
        ([{"name": "a"}, {"name": "a"}], "spec.tools[1].name"),
        ([{"name": "a", "effect": "delete"}], "spec.tools[0].effect"),
        ([{"name": "a", "api_key_env": "HOME"}], "spec.tools[0].api_key_env"),
        ([{"name": "a", "connection_id": "a#b"}], "spec.tools[0].connection_id"),
        ([{"name": "a", "connection_id": 3}], "spec.tools[0].connection_id"),
        ([{"name": "a", "parameters": {"type": "string"}}], "spec.tools[0].parameters"),
        ([{"name": "a", "parameters": {"type": 12}}], "spec.tools[0].parameters"),
        (
            [{"name": "a", "parameters": {"$ref": "https://evil.example/schema.json"}}],
            "spec.tools[0].parameters",
        ),
        (
            [{"name": "a", "parameters": {"properties": {"x": {"$ref": "file:///etc/passwd"}}}}],
            "spec.tools[0].parameters",
        ),
        ([{"type": "function", "function": "refund"}], "spec.tools[0]"),
        ([{"name": f"t{i}"} for i in range(129)], "spec.tools"),
    ],
)
def test_a_malformed_declaration_is_refused_naming_its_field(tools: Any, field: str):
    with pytest.raises(InvalidInputError) as err:
        parse_tools(tools)
    assert err.value.field == field


def test_a_reference_inside_the_schema_is_accepted():
    schema = {
        "type": "object",
        "$defs": {"id": {"type": "string"}},
        "properties": {"order_id": {"$ref": "#/$defs/id"}},
    }
    (tool,) = parse_tools([{"name": "a", "parameters": schema}])
    assert argument_problem(tool, {"order_id": "A1"}) is None
    assert (
        argument_problem(tool, {"order_id": 1}) == "arguments.order_id: 1 is not of type 'string'"
    )


@pytest.mark.parametrize(
    "schema",
    [
        {"type": "object", "properties": {"a": {"$ref": "#/$defs/nope"}}},
        {"type": "object", "properties": {"a": {"$dynamicRef": "https://tools.example/x"}}},
        {"type": "object", "properties": {"a": {"$recursiveRef": "other.json"}}},
        {"type": "object", "properties": {"a": {"$ref": "#missing-anchor"}}},
    ],
)
def test_a_reference_that_leads_nowhere_or_outside_is_refused_when_declared(schema: Any):
    with pytest.raises(InvalidInputError) as err:
        parse_tools([{"name": "a", "parameters": schema}])
    assert err.value.field == "spec.tools[0].parameters"


def test_references_to_anchors_and_the_root_are_accepted():
    schema = {
        "type": "object",
        "$defs": {"id": {"$anchor": "id", "type": "string"}},
        "properties": {"a": {"$ref": "#id"}, "b": {"$ref": "#"}},
    }
    (tool,) = parse_tools([{"name": "a", "parameters": schema}])
    assert argument_problem(tool, {"a": "x"}) is None


def test_arguments_a_schema_cannot_check_are_a_problem_not_an_error():
    """A nested `$id` leaves its references to the validator: one that leads nowhere is told as
    the arguments' problem, never raised."""
    schema = {"type": "object", "properties": {"a": {"$id": "urn:x", "$ref": "#/$defs/nope"}}}
    (tool,) = parse_tools([{"name": "a", "parameters": schema}])
    problem = argument_problem(tool, {"a": 1})
    assert problem is not None and problem.startswith("arguments cannot be checked")


@pytest.mark.parametrize("name", ["refund\n", "refund\r", "a\u00e9"])
def test_a_tool_name_with_a_trailing_line_break_or_other_characters_is_refused(name: str):
    with pytest.raises(InvalidInputError) as err:
        parse_tools([{"name": name}])
    assert err.value.field == "spec.tools[0].name"


def test_arguments_are_checked_against_the_schema():
    (tool,) = parse_tools([{"name": "refund", "parameters": ORDER}])
    assert argument_problem(tool, {"order_id": "A1", "amount": 3}) is None
    assert argument_problem(tool, {}) == "arguments: 'order_id' is a required property"
    assert argument_problem(tool, ["A1"]) == "arguments must be a JSON object"
    (free,) = parse_tools([{"name": "free"}])
    assert argument_problem(free, {"anything": [1, 2]}) is None


def test_every_attempt_has_the_workspace_tools_after_the_declared_ones():
    tools = tools_of({"tools": [{"name": "lookup", "effect": "read"}]})
    assert list(tools) == ["lookup", "workspace_read", "workspace_write", "workspace_list"]
    assert all(t.builtin for t in WORKSPACE_TOOLS)
    assert tools_of({}) == {t.name: t for t in WORKSPACE_TOOLS}


def test_connection_ids_lists_each_connection_once():
    spec = {
        "tools": [
            {"name": "a", "connection_id": "shop"},
            {"name": "b", "connection_id": "mail"},
            {"name": "c", "connection_id": "shop"},
            {"name": "d"},
        ]
    }
    assert connection_ids(spec) == ["mail", "shop"]
    assert connection_ids({"tools": "broken"}) == []


@pytest.mark.parametrize(
    ("reply", "told"),
    [
        (
            ToolReply(CallStatus.EXECUTED, result={"n": 1}),
            {"status": "executed", "result": {"n": 1}},
        ),
        (ToolReply(CallStatus.REPLAYED, result=2), {"status": "replayed", "result": 2}),
        (ToolReply(CallStatus.EXECUTED, error="boom"), {"status": "executed", "error": "boom"}),
        (
            ToolReply(CallStatus.BLOCKED),
            {
                "status": "blocked",
                "note": "blocked: this call was not executed during the evaluation",
            },
        ),
        (
            ToolReply(CallStatus.DIVERGENT),
            {
                "status": "divergent",
                "note": "held: this call was not executed during the evaluation",
            },
        ),
    ],
)
def test_what_the_agent_is_told_of_a_call(reply: ToolReply, told: dict[str, Any]):
    assert reply.for_agent() == told
