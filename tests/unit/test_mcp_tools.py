"""An MCP server's listed tools as tools of a spec (`domain.tools.tools_from_mcp`): the
`readOnlyHint` annotation makes a read and anything else a write, the spec's own declaration of
the same name overrides, and what no model could call is left out."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain.enums import ToolEffect
from chalicelib.domain.tools import MAX_TOOLS, ToolSpec, parse_tools, tools_from_mcp

READ, WRITE = ToolEffect.READ, ToolEffect.WRITE
SCHEMA = {"type": "object", "properties": {"q": {"type": "string"}}, "required": ["q"]}


def listed(name: str, annotations: Any = None, **extra: Any) -> dict[str, Any]:
    out: dict[str, Any] = {"name": name, "description": f"{name} things", "inputSchema": SCHEMA}
    if annotations is not None:
        out["annotations"] = annotations
    out.update(extra)
    return out


@pytest.mark.parametrize(
    ("annotations", "effect"),
    [
        ({"readOnlyHint": True}, READ),
        ({"readOnlyHint": True, "destructiveHint": False, "title": "Search"}, READ),
        ({"readOnlyHint": False}, WRITE),
        ({"readOnlyHint": "true"}, WRITE),  # only the JSON true is a read
        ({"readOnlyHint": 1}, WRITE),
        ({"destructiveHint": False}, WRITE),  # not destructive is still a write
        ({}, WRITE),
        (None, WRITE),  # no annotations at all
        ("readOnly", WRITE),  # annotations that are no object
    ],
)
def test_read_only_hint_true_is_a_read_and_anything_else_a_write(annotations, effect):
    (tool,) = tools_from_mcp([listed("search", annotations)])
    assert tool.effect is effect
    assert tool.declaration().effect is effect


def test_a_listed_tool_keeps_its_name_description_schema_and_order_on_its_connection():
    tools = tools_from_mcp(
        [listed("search", {"readOnlyHint": True}), listed("send_email")], connection_id="mail"
    )
    assert tools == (
        ToolSpec("search", "search things", SCHEMA, READ, "mail"),
        ToolSpec("send_email", "send_email things", SCHEMA, WRITE, "mail"),
    )
    assert tools[0].public()["effect"] == "read" and tools[1].public()["effect"] == "write"


def test_the_spec_declaration_of_the_same_name_overrides_effect_description_and_schema():
    own_schema = {"type": "object", "properties": {"q": {"type": "string", "maxLength": 10}}}
    overrides = parse_tools(
        [
            # the server says nothing of send_email's effect; the spec knows it only reads
            {"name": "send_email", "effect": "read", "description": "Drafts only"},
            # the server says search reads; the spec says it writes, with its own schema
            {"name": "search", "effect": "write", "parameters": own_schema},
            {"name": "not_listed", "effect": "read"},
        ]
    )
    tools = tools_from_mcp(
        [listed("search", {"readOnlyHint": True}), listed("send_email")],
        overrides,
        connection_id="mail",
    )
    assert tools == (
        ToolSpec("search", "search things", own_schema, WRITE, "mail"),
        ToolSpec("send_email", "Drafts only", SCHEMA, READ, "mail"),
    )  # a declaration that names no listed tool is not added


def test_a_declaration_that_sets_nothing_keeps_what_the_server_says():
    overrides = parse_tools([{"name": "search"}])  # no effect, description or schema
    (tool,) = tools_from_mcp([listed("search", {"readOnlyHint": True})], overrides, "crm")
    assert tool == ToolSpec("search", "search things", SCHEMA, READ, "crm")


def test_a_declaration_naming_a_connection_moves_the_tool_there():
    overrides = parse_tools([{"name": "search", "connection_id": "crm-other"}])
    (tool,) = tools_from_mcp([listed("search")], overrides, "crm")
    assert tool.connection_id == "crm-other" and tool.effect is WRITE


def test_a_tool_without_description_or_schema_takes_any_object():
    (tool,) = tools_from_mcp([{"name": "now", "annotations": {"readOnlyHint": True}}])
    assert tool == ToolSpec("now", "", {}, READ, None)
    assert tool.openai_tool()["function"]["parameters"] == {"type": "object", "properties": {}}


@pytest.mark.parametrize(
    "bad",
    [
        {"name": "files.read"},  # not a tool name a model accepts
        {"name": "x" * 65},
        {"name": ""},
        {"name": 7},
        {"description": "no name"},
        "search",  # not an object
        {"name": "workspace_read"},  # a built-in tool's name
        {"name": "odd", "description": ["not", "text"]},
        {"name": "odd", "inputSchema": {"type": "array"}},  # not an object's schema
        {"name": "odd", "inputSchema": {"type": "object", "properties": 3}},  # not a schema
        {"name": "odd", "inputSchema": {"$ref": "https://schemas.example/x.json"}},  # outside
        {"name": "odd", "inputSchema": "object"},
    ],
)
def test_what_no_spec_could_declare_is_left_out(bad):
    tools = tools_from_mcp([bad, listed("ok")])
    assert [tool.name for tool in tools] == ["ok"]


def test_a_repeated_name_keeps_the_first_and_at_most_max_tools_are_kept():
    tools = tools_from_mcp(
        [listed("a", {"readOnlyHint": True}), listed("a"), *(listed(f"t{i}") for i in range(200))]
    )
    assert len(tools) == MAX_TOOLS
    assert tools[0].name == "a" and tools[0].effect is READ
    assert [tool.name for tool in tools].count("a") == 1


def test_a_long_description_is_cut():
    (tool,) = tools_from_mcp([listed("a", description="d" * 5000)])
    assert tool.description == "d" * 4096


def test_nothing_listed_is_no_tools():
    assert tools_from_mcp([], parse_tools([{"name": "a", "effect": "read"}])) == ()
