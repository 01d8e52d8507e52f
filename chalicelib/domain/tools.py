"""The tools an agent may call, as a spec declares them (docs/guides/tools.md).

A spec's `tools` is a list; each entry is either the flat shape::

    {"name": "send_email",                       # [A-Za-z0-9_-], 1..64 characters
     "description": "Send an email",             # optional
     "parameters": {"type": "object", ...},      # optional JSON schema of the arguments
     "effect": "write",                          # "read" | "write"; absent = write
     "connection_id": "mail"}                    # optional: the connection that runs it

or the OpenAI shape `{"type": "function", "function": {"name", "description", "parameters"},
"effect"?, "connection_id"?}` (what `openai` specs carried before tools were isolated).

Every eval attempt also has the built-in workspace tools (`WORKSPACE_TOOLS`): a disposable store
of text files scoped to the attempt; a spec may not declare a tool of their names.

An `mcp` connection's server lists its own tools; `tools_from_mcp` makes them tools of a spec (its
`readOnlyHint` annotation the effect), the spec's own declaration of a tool of the same name
overriding what the server says.

A tool's `parameters` is checked as a JSON schema when the spec is saved and every call's
arguments are checked against it (`argument_problem`). Only references inside the schema
(`$ref`, `$dynamicRef` or `$recursiveRef` starting `#`) are accepted, so checking a schema or
arguments never fetches anything, and each must lead to something the schema holds (a reference
that leads nowhere would fail every call that reaches it).

Pure: no I/O.
"""

from __future__ import annotations

import json
import re
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from functools import lru_cache
from typing import Any

from chalicelib.domain.bounded_patterns import PatternBudget, bounded_validator
from chalicelib.domain.enums import CallStatus, ToolEffect
from chalicelib.domain.ids import check_tenant_id
from chalicelib.domain.tool_isolation import ToolDeclaration
from chalicelib.errors import InvalidInputError

__all__ = [
    "DEFAULT_MAX_STEPS",
    "MAX_STEPS_LIMIT",
    "MAX_TOOLS",
    "TOOL_NAME",
    "WORKSPACE_CONNECTION",
    "WORKSPACE_TOOLS",
    "ToolReply",
    "ToolSpec",
    "argument_problem",
    "check_max_steps",
    "connection_ids",
    "parse_mcp_connections",
    "parse_tools",
    "tools_from_mcp",
    "tools_of",
]

TOOL_NAME = re.compile(r"^[A-Za-z0-9_-]{1,64}$")
"""What a tool's name may be (the names model providers accept for functions)."""

MAX_TOOLS = 128
"""The most tools one spec may declare."""

MAX_SCHEMA_BYTES = 32_768
"""The largest `parameters` schema one tool may carry, as JSON in bytes."""

DEFAULT_MAX_STEPS = 10
"""Model turns an agent's tool loop may take when its spec sets no `max_steps`."""

MAX_STEPS_LIMIT = 50
"""The most `max_steps` a spec may set."""

WORKSPACE_CONNECTION = "workspace"
"""What a call to a built-in workspace tool names as its connection."""


@dataclass(frozen=True)
class ToolSpec:
    """One tool as a spec declares it (see the module docstring).

    `effect` None: the declaration named none (a write). `builtin`: one of `WORKSPACE_TOOLS`.
    """

    name: str
    description: str = ""
    parameters: Mapping[str, Any] = field(default_factory=dict)
    effect: ToolEffect | None = None
    connection_id: str | None = None
    builtin: bool = False

    def declaration(self) -> ToolDeclaration:
        """What `tool_isolation.decide_call` needs of the tool."""
        return ToolDeclaration(self.name, self.effect, self.connection_id)

    def openai_tool(self) -> dict[str, Any]:
        """The tool in a chat-completions request's `tools`."""
        function: dict[str, Any] = {
            "name": self.name,
            "parameters": dict(self.parameters) or {"type": "object", "properties": {}},
        }
        if self.description:
            function["description"] = self.description
        return {"type": "function", "function": function}

    def public(self) -> dict[str, Any]:
        """The declaration as the API shows it (flat shape)."""
        return {
            "name": self.name,
            "description": self.description,
            "parameters": dict(self.parameters),
            "effect": str(self.effect) if self.effect else ToolEffect.WRITE.value,
            "connection_id": self.connection_id,
            "builtin": self.builtin,
        }


@dataclass(frozen=True)
class ToolReply:
    """What one call came to, for the agent and for the attempt.

    `status`: executed, blocked, replayed or divergent. `result`: what the tool returned (or the
    recorded result), None when not executed. `error`: why an executed call failed (the tool's
    own error), None otherwise. `connection_id`: where it ran. `reason`: one sentence for people.
    """

    status: CallStatus
    result: Any = None
    error: str | None = None
    connection_id: str | None = None
    reason: str = ""

    def for_agent(self) -> dict[str, Any]:
        """The JSON the agent is given for the call: `{"status", "result"?, "error"?, "note"?}`.

        A held or blocked call says so in `note`, so the agent can carry on without its result.
        """
        out: dict[str, Any] = {"status": str(self.status)}
        if self.status in (CallStatus.EXECUTED, CallStatus.REPLAYED):
            if self.error is not None:
                out["error"] = self.error
            else:
                out["result"] = self.result
        else:
            out["note"] = (
                "held: this call was not executed during the evaluation"
                if self.status is CallStatus.DIVERGENT
                else "blocked: this call was not executed during the evaluation"
            )
        return out


def _workspace_tool(
    name: str, description: str, properties: dict[str, Any], required: list[str]
) -> ToolSpec:
    return ToolSpec(
        name=name,
        description=description,
        parameters={
            "type": "object",
            "properties": properties,
            "required": required,
            "additionalProperties": False,
        },
        effect=ToolEffect.WRITE if name == "workspace_write" else ToolEffect.READ,
        connection_id=WORKSPACE_CONNECTION,
        builtin=True,
    )


_PATH = {"type": "string", "minLength": 1, "maxLength": 256}

WORKSPACE_TOOLS: tuple[ToolSpec, ...] = (
    _workspace_tool(
        "workspace_read",
        "Read a text file of this attempt's workspace.",
        {"path": _PATH},
        ["path"],
    ),
    _workspace_tool(
        "workspace_write",
        "Write a text file to this attempt's workspace (replacing it).",
        {"path": _PATH, "content": {"type": "string"}},
        ["path", "content"],
    ),
    _workspace_tool(
        "workspace_list",
        "List the files of this attempt's workspace, optionally under a prefix.",
        {"prefix": {"type": "string", "maxLength": 256}},
        [],
    ),
)
"""The built-in tools of every eval attempt's disposable workspace."""

_BUILTIN_NAMES = frozenset(tool.name for tool in WORKSPACE_TOOLS)


_REF_KEYWORDS = ("$ref", "$dynamicRef", "$recursiveRef")
"""The keywords whose value is a reference a validator follows."""


def _refs(schema: Any) -> list[str]:
    """Every reference (`$ref`, `$dynamicRef`, `$recursiveRef` value) in `schema`."""
    found: list[str] = []
    stack = [schema]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            for keyword in _REF_KEYWORDS:
                ref = node.get(keyword)
                if isinstance(ref, str):
                    found.append(ref)
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return found


def _check_schema(schema: Any, where: str) -> Mapping[str, Any]:
    if schema is None:
        return {}
    if not isinstance(schema, Mapping):
        raise InvalidInputError(f"{where} must be a JSON schema object", field=where)
    try:
        size = len(json.dumps(schema).encode("utf-8"))
    except (TypeError, ValueError, RecursionError):
        raise InvalidInputError(f"{where} must be JSON", field=where) from None
    if size > MAX_SCHEMA_BYTES:
        raise InvalidInputError(f"{where} is over {MAX_SCHEMA_BYTES} bytes", field=where)
    remote = [ref for ref in _refs(schema) if not ref.startswith("#")]
    if remote:
        raise InvalidInputError(
            f"{where} refers outside itself ({remote[0][:80]!r}); only '#...' references are "
            "accepted",
            field=where,
        )
    # jsonschema is imported when a schema is checked, not when a worker starts (its cold start).
    from jsonschema import Draft202012Validator
    from jsonschema.exceptions import SchemaError

    try:
        Draft202012Validator.check_schema(schema)
    except SchemaError as exc:
        raise InvalidInputError(
            f"{where} is not a valid JSON schema: {exc.message[:200]}", field=where
        ) from None
    if schema.get("type", "object") != "object":
        raise InvalidInputError(f"{where} must describe an object (type: object)", field=where)
    dangling = _dangling_ref(schema)
    if dangling is not None:
        raise InvalidInputError(
            f"{where} refers to {dangling[:80]!r}, which it does not hold", field=where
        )
    return dict(schema)


def _nested_ids(schema: Mapping[str, Any]) -> bool:
    """Whether a schema below the root sets `$id` (its references resolve against it)."""
    stack: list[Any] = [v for k, v in schema.items() if k != "$id"]
    while stack:
        node = stack.pop()
        if isinstance(node, Mapping):
            if "$id" in node:
                return True
            stack.extend(node.values())
        elif isinstance(node, list):
            stack.extend(node)
    return False


def _dangling_ref(schema: Mapping[str, Any]) -> str | None:
    """The first local reference of `schema` that leads nowhere (a validator would fail on it
    when it reaches it), None when all resolve. A schema with a nested `$id` is not looked into
    here: `argument_problem` still refuses arguments its references cannot check."""
    if _nested_ids(schema):
        return None
    from referencing import Registry
    from referencing.exceptions import Unresolvable
    from referencing.jsonschema import DRAFT202012

    resolver = Registry().resolver_with_root(DRAFT202012.create_resource(dict(schema)))
    for ref in _refs(schema):
        try:
            resolver.lookup(ref)
        except Unresolvable:
            return ref
    return None


def _parse_one(raw: Any, where: str) -> ToolSpec:
    if not isinstance(raw, Mapping):
        raise InvalidInputError(f"{where} must be an object", field=where)
    body: Mapping[str, Any] = raw
    if "function" in raw or raw.get("type") == "function":
        function = raw.get("function")
        if raw.get("type", "function") != "function" or not isinstance(function, Mapping):
            raise InvalidInputError(
                f"{where} must be {{'type': 'function', 'function': {{'name': ...}}}} or "
                "{'name': ..., 'effect': ..., 'connection_id': ...}",
                field=where,
            )
        body = {**function, **{k: raw[k] for k in ("effect", "connection_id") if k in raw}}
    unknown = sorted(
        set(body) - {"name", "description", "parameters", "effect", "connection_id", "strict"}
    )
    if unknown:
        raise InvalidInputError(
            f"{where} has unknown keys {unknown}; allowed: name, description, parameters, "
            "effect, connection_id",
            field=f"{where}.{unknown[0]}",
        )
    name = body.get("name")
    if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
        raise InvalidInputError(
            f"{where}.name must be 1 to 64 letters, digits, '_' or '-'", field=f"{where}.name"
        )
    if name in _BUILTIN_NAMES:
        raise InvalidInputError(
            f"{where}.name {name!r} is a built-in workspace tool every eval attempt has",
            field=f"{where}.name",
        )
    description = body.get("description", "")
    if not isinstance(description, str) or len(description) > 4096:
        raise InvalidInputError(
            f"{where}.description must be text of at most 4096 characters",
            field=f"{where}.description",
        )
    effect_raw = body.get("effect")
    try:
        effect = None if effect_raw is None else ToolEffect(effect_raw)
    except ValueError:
        raise InvalidInputError(
            f"{where}.effect must be 'read' or 'write'", field=f"{where}.effect"
        ) from None
    connection_id = body.get("connection_id")
    if connection_id is not None:
        if not isinstance(connection_id, str):
            raise InvalidInputError(
                f"{where}.connection_id must be a string", field=f"{where}.connection_id"
            )
        check_tenant_id(connection_id, f"{where}.connection_id")
    return ToolSpec(
        name=name,
        description=description,
        parameters=_check_schema(body.get("parameters"), f"{where}.parameters"),
        effect=effect,
        connection_id=connection_id,
    )


def parse_tools(raw: Any, where: str = "spec.tools") -> tuple[ToolSpec, ...]:
    """A spec's `tools`, checked (see the module docstring); () when absent.

    Raises:
        InvalidInputError: naming the field at fault (`spec.tools`, `spec.tools[i].name`,
            `.effect`, `.parameters`, `.connection_id`): not a list, more than `MAX_TOOLS`, a
            name that is not a tool name, repeated or built in, an unknown key, an effect that is
            neither read nor write, a schema that is not a JSON schema of an object or refers
            outside itself.
    """
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidInputError(f"{where} must be a list of tools", field=where)
    if len(raw) > MAX_TOOLS:
        raise InvalidInputError(f"{where} may declare at most {MAX_TOOLS} tools", field=where)
    try:
        text = json.dumps(raw)
    except (TypeError, ValueError, RecursionError):
        return _parse_list(raw, where)  # not JSON: refused below, naming the place
    # Every attempt of a run parses its arm's tools, and checking a schema costs milliseconds:
    # the same declarations are checked once per process.
    return _parse_text(text, where)


@lru_cache(maxsize=256)
def _parse_text(text: str, where: str) -> tuple[ToolSpec, ...]:
    """`_parse_list` of the JSON `text`, kept per process (a refusal is not kept)."""
    return _parse_list(json.loads(text), where)


def _parse_list(raw: list[Any], where: str) -> tuple[ToolSpec, ...]:
    tools = tuple(_parse_one(item, f"{where}[{i}]") for i, item in enumerate(raw))
    seen: set[str] = set()
    for i, tool in enumerate(tools):
        if tool.name in seen:
            raise InvalidInputError(
                f"{where}[{i}].name {tool.name!r} is declared twice", field=f"{where}[{i}].name"
            )
        seen.add(tool.name)
    return tools


def tools_of(spec: Mapping[str, Any]) -> dict[str, ToolSpec]:
    """Every tool an eval attempt of `spec` may call, by name: its declared tools, then the
    built-in workspace tools.

    Raises:
        InvalidInputError: the spec's `tools` do not pass `parse_tools`.
    """
    declared = parse_tools(spec.get("tools"))
    return {tool.name: tool for tool in (*declared, *WORKSPACE_TOOLS)}


def check_max_steps(spec: Mapping[str, Any]) -> int:
    """The spec's `max_steps`: the model turns its tool loop may take before the attempt is a
    crash; `DEFAULT_MAX_STEPS` when the spec sets none.

    Raises:
        InvalidInputError: (field `spec.max_steps`) not an integer from 1 to `MAX_STEPS_LIMIT`.
    """
    value: Any = spec.get("max_steps", DEFAULT_MAX_STEPS)
    if isinstance(value, bool) or not isinstance(value, int) or not 1 <= value <= MAX_STEPS_LIMIT:
        raise InvalidInputError(
            f"spec.max_steps must be an integer from 1 to {MAX_STEPS_LIMIT}",
            field="spec.max_steps",
        )
    return int(value)


def _mcp_effect(annotations: Any) -> ToolEffect:
    """`read` when the annotations say `readOnlyHint: true`, else `write` (MCP's default)."""
    if isinstance(annotations, Mapping) and annotations.get("readOnlyHint") is True:
        return ToolEffect.READ
    return ToolEffect.WRITE


def tools_from_mcp(
    listed: Iterable[Mapping[str, Any]],
    overrides: Iterable[ToolSpec] = (),
    connection_id: str | None = None,
) -> tuple[ToolSpec, ...]:
    """The tools an MCP server lists, as tools of a spec, in the server's order.

    Args:
        listed: what the server's `tools/list` gave, `[{"name", "description"?, "inputSchema"?,
            "annotations"?}]` (`ToolTransport.list_tools`).
        overrides: the spec's own declarations; one of the same name as a listed tool overrides
            its `effect`, `description` and `parameters`, each only when the declaration sets it
            (an effect, a description that is not empty, a schema that is not empty), and its
            `connection_id` when it names one. Declarations that name no listed tool are not in
            the result (the spec keeps them as it declares them).
        connection_id: the connection the server is (each tool's `connection_id`).

    The rule: `annotations.readOnlyHint` exactly `true` is effect `read`; anything else (false,
    absent, no annotations) is `write`, as MCP's own default says a tool may change the world.

    The server is the tenant's and untrusted: a listed tool whose name is not a tool name
    (`TOOL_NAME`), repeats an earlier one or is a built-in workspace tool's, whose description is
    not text, or whose `inputSchema` does not pass the checks a spec's `parameters` pass (a JSON
    schema of an object that refers only inside itself) is left out; descriptions are cut to 4096
    characters; at most `MAX_TOOLS` tools are kept. Never raises.
    """
    declared = {tool.name: tool for tool in overrides}
    out: list[ToolSpec] = []
    seen: set[str] = set()
    for raw in listed:
        if len(out) == MAX_TOOLS:
            break
        if not isinstance(raw, Mapping):
            continue
        name = raw.get("name")
        if not isinstance(name, str) or not TOOL_NAME.fullmatch(name):
            continue
        if name in seen or name in _BUILTIN_NAMES:
            continue
        description = raw.get("description") or ""
        if not isinstance(description, str):
            continue
        try:
            parameters = _check_schema(raw.get("inputSchema"), f"{name}.inputSchema")
        except InvalidInputError:
            continue
        seen.add(name)
        tool = ToolSpec(
            name=name,
            description=description[:4096],
            parameters=parameters,
            effect=_mcp_effect(raw.get("annotations")),
            connection_id=connection_id,
        )
        own = declared.get(name)
        if own is not None:
            tool = ToolSpec(
                name=name,
                description=own.description or tool.description,
                parameters=own.parameters or tool.parameters,
                effect=own.effect or tool.effect,
                connection_id=own.connection_id or tool.connection_id,
            )
        out.append(tool)
    return tuple(out)


MAX_MCP_CONNECTIONS = 8
"""The most MCP connections one spec may take its tools from."""


def parse_mcp_connections(raw: Any, where: str = "spec.mcp_connections") -> tuple[str, ...]:
    """A spec's `mcp_connections`: the ids of the `mcp` connections whose servers' tools the
    agent may call (each attempt lists them, `tools_from_mcp`); () when absent.

    Raises:
        InvalidInputError: (field `where` or `where[i]`) not a list, more than
            `MAX_MCP_CONNECTIONS`, an id that cannot be one, or an id named twice.
    """
    if raw is None:
        return ()
    if not isinstance(raw, list):
        raise InvalidInputError(f"{where} must be a list of connection ids", field=where)
    if len(raw) > MAX_MCP_CONNECTIONS:
        raise InvalidInputError(
            f"{where} may name at most {MAX_MCP_CONNECTIONS} connections", field=where
        )
    out: list[str] = []
    for i, item in enumerate(raw):
        if not isinstance(item, str):
            raise InvalidInputError(f"{where}[{i}] must be a connection id", field=f"{where}[{i}]")
        check_tenant_id(item, f"{where}[{i}]")
        if item in out:
            raise InvalidInputError(f"{where}[{i}] names {item!r} twice", field=f"{where}[{i}]")
        out.append(item)
    return tuple(out)


def connection_ids(spec: Mapping[str, Any]) -> list[str]:
    """The connections a spec names (its tools' and its `mcp_connections`), sorted, each once;
    [] when they are malformed (a saved spec's always parse)."""
    try:
        declared: Sequence[ToolSpec] = parse_tools(spec.get("tools"))
        servers = parse_mcp_connections(spec.get("mcp_connections"))
    except InvalidInputError:
        return []
    return sorted({tool.connection_id for tool in declared if tool.connection_id} | set(servers))


def argument_problem(tool: ToolSpec, arguments: Any) -> str | None:
    """Why `arguments` cannot be a call of `tool`, or None when they can.

    Arguments are a JSON object that validates against the tool's `parameters` (none: any
    object). The message names the first failing place, e.g. "arguments.to: 3 is not of type
    'string'". Patterns are matched under a time bound (`domain.bounded_patterns`): one that
    would backtrack for ever refuses the arguments instead.
    """
    if not isinstance(arguments, Mapping):
        return "arguments must be a JSON object"
    if not tool.parameters:
        return None
    from referencing.exceptions import Unresolvable

    try:
        with PatternBudget():  # a tenant's pattern may backtrack: every match is bounded
            errors = sorted(
                bounded_validator(tool.parameters).iter_errors(dict(arguments)),
                key=lambda e: list(e.absolute_path),
            )
    except Unresolvable as exc:  # a reference that leads nowhere: nothing can be checked
        return f"arguments cannot be checked: the tool's parameters refer to {str(exc)[:120]}"
    if not errors:
        return None
    first = errors[0]
    place = ".".join(str(p) for p in first.absolute_path)
    return f"arguments{'.' + place if place else ''}: {first.message[:200]}"
