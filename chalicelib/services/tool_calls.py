"""The tools of one eval attempt: every call decided by the isolation rule, made if allowed, and
kept (docs/guides/tools.md).

A `ToolBox` is what a runtime calls its tools through. The `openai` runtime runs its agent's tool
loop itself and calls `ToolBox.call` in process; the tool gateway rebuilds a `ToolBox` from the
attempt's session for each call an `http` or `lambda` agent makes (`from_state`). Either way one
rule decides each call (`domain.tool_isolation.decide_call`): replayed from the case's recording,
held as divergent, executed on a test connection (never production) or on the normal connection
for a read, or blocked and kept as an intended call. The built-in workspace tools always run, on
the attempt's own disposable workspace.
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import asdict, dataclass, field
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain.agent_output import bound_call
from chalicelib.domain.enums import CallStatus, ToolEffect
from chalicelib.domain.models import CaseRequest, ToolCall
from chalicelib.domain.records import Arm, Connection, Run
from chalicelib.domain.tool_isolation import (
    IsolationSettings,
    RecordedCall,
    call_loop,
    decide_call,
)
from chalicelib.domain.tools import (
    DEFAULT_MAX_STEPS,
    WORKSPACE_CONNECTION,
    WORKSPACE_TOOLS,
    ToolReply,
    ToolSpec,
    argument_problem,
    check_max_steps,
    parse_mcp_connections,
    tools_from_mcp,
    tools_of,
)
from chalicelib.errors import InvalidInputError, NotFoundError, PayloadTooLargeError
from chalicelib.services.ports.tools import ToolCallFailed

LOOP_REPEATS = 3
"""The same call (tool and canonically equal arguments) this many times in a row is a loop: the
attempt is a crash."""

TOOL_TIMEOUT_S = 30.0
"""Bound on one call made on a connection, in seconds."""


def isolation_of(run: Run) -> dict[str, Any]:
    """The run's isolation settings as its start kept them: `{"test_connections": {...},
    "from_recordings": bool, "recording_id": str | None, "recording_sha256": str | None,
    "live_reads": bool}` (`services.run_plans.isolation` and `domain.replay.Replay.settings`;
    empty settings on runs started before tools were isolated)."""
    settings = run.settings if isinstance(run.settings, Mapping) else {}
    raw = settings.get("isolation")
    return dict(raw) if isinstance(raw, Mapping) else {}


def recorded_calls(entry: Mapping[str, Any] | None) -> tuple[RecordedCall, ...] | None:
    """The calls a recording's entry for a case holds, in recorded order; None when the entry is
    missing (the case has no usable recording)."""
    if entry is None:
        return None
    out = []
    for raw in entry.get("calls") or []:
        if isinstance(raw, Mapping) and isinstance(raw.get("name"), str):
            arguments = raw.get("arguments")
            out.append(
                RecordedCall(
                    raw["name"],
                    arguments if isinstance(arguments, Mapping) else {},
                    raw.get("result"),
                )
            )
    return tuple(out)


@dataclass
class ToolBox:
    """The tools of one eval attempt (port `services.ports.ToolCaller`).

    `tools`: every tool the attempt may call, by name. `settings`: the run's isolation settings for
    this case (`from_recordings` is off for a case without a usable recording). `recorded`: the
    case's recorded calls. `consumed`: indices into `recorded` this attempt replayed. `calls`: the
    calls kept so far, in order. `connections`: the connections its calls may run on, read when
    the tool gateway's session opened (`connections_for`); None reads each from the store.
    """

    c: Container
    org_id: str
    run_id: str
    attempt_key: str
    tools: dict[str, ToolSpec]
    settings: IsolationSettings
    recorded: tuple[RecordedCall, ...] = ()
    max_steps: int = DEFAULT_MAX_STEPS
    consumed: frozenset[int] = frozenset()
    calls: list[ToolCall] = field(default_factory=list)
    connections: Mapping[str, Connection] | None = None

    def reset(self) -> None:
        """Forget the calls of a try that failed, before the next try."""
        self.consumed = frozenset()
        self.calls = []

    def loop_at(self) -> int | None:
        """Where the attempt's calls loop (`LOOP_REPEATS` identical calls in a row), or None."""
        return call_loop(((call.name, call.arguments) for call in self.calls), LOOP_REPEATS)

    def check(self, name: str, arguments: Any) -> ToolSpec:
        """The tool `name` when `arguments` can be a call of it.

        Raises:
            NotFoundError: (field `tool_name`) the attempt has no tool of that name.
            InvalidInputError: (field `arguments`) arguments that are not an object or fail the
                tool's schema, naming the first failing place.
        """
        tool = self.tools.get(name)
        if tool is None:
            raise NotFoundError(
                f"this eval attempt has no tool named {name[:80]!r}: its spec declares "
                f"{', '.join(sorted(self.tools)) or 'none'}",
                field="tool_name",
            )
        problem = argument_problem(tool, arguments)
        if problem is not None:
            raise InvalidInputError(f"{name}: {problem}", field="arguments")
        return tool

    def call(self, name: str, arguments: Any) -> ToolReply:
        """Decide, make if allowed, and keep one call (the module's rule); an unknown tool or
        arguments that fail its schema are kept `blocked`, saying why. Never raises for what the
        agent asked."""
        try:
            tool = self.check(name, arguments)
        except (NotFoundError, InvalidInputError) as exc:
            reply = ToolReply(CallStatus.BLOCKED, reason=exc.message)
            args = dict(arguments) if isinstance(arguments, Mapping) else {"_value": arguments}
            self._keep(name, args, reply)
            return reply
        return self.call_checked(tool, arguments)

    def call_checked(self, tool: ToolSpec, arguments: Mapping[str, Any]) -> ToolReply:
        """`call` for a tool and arguments `check` accepted."""
        if tool.builtin:
            reply = self._workspace(tool.name, arguments)
        else:
            decision = decide_call(
                tool.declaration(), arguments, self.settings, self.recorded, self.consumed
            )
            self.consumed = decision.consumed
            if decision.executed and decision.connection_id is not None:
                reply = self._execute(tool.name, arguments, decision.connection_id, decision.reason)
            else:
                reply = ToolReply(decision.status, result=decision.result, reason=decision.reason)
        self._keep(tool.name, dict(arguments), reply)
        return reply

    def _keep(self, name: str, arguments: dict[str, Any], reply: ToolReply) -> None:
        """Keep one call, bounded as an answer's calls are (`domain.agent_output.bound_call`:
        arguments or a result too deep or not JSON are kept as a marker, one too large cut; the
        agent still got all of the result)."""
        call = ToolCall.model_construct(
            name=name,
            arguments=arguments,
            status=reply.status,
            result=reply.result,
            connection_id=reply.connection_id,
            error=reply.error,
            reason=reply.reason or None,
        )
        self.calls.append(bound_call(call)[0])

    def _execute(
        self, name: str, arguments: Mapping[str, Any], connection_id: str, reason: str
    ) -> ToolReply:
        try:
            if self.connections is None:
                connection = self.c.connections.get(self.org_id, connection_id)
            elif connection_id in self.connections:
                connection = self.connections[connection_id]
            else:
                raise NotFoundError(f"connection {connection_id} not found")
        except NotFoundError:
            return ToolReply(
                CallStatus.BLOCKED,
                reason=f"connection {connection_id!r} does not exist: the call was not made",
            )
        try:
            headers = auth_headers(self.c, self.org_id, connection)
        except ToolCallFailed as exc:
            return ToolReply(
                CallStatus.EXECUTED, error=str(exc), connection_id=connection_id, reason=reason
            )
        try:
            result = self.c.tool_transport.call(
                connection, name, arguments, headers, TOOL_TIMEOUT_S
            )
        except ToolCallFailed as exc:
            return ToolReply(
                CallStatus.EXECUTED,
                error=str(exc)[:500],
                connection_id=connection_id,
                reason=reason,
            )
        return ToolReply(
            CallStatus.EXECUTED, result=result, connection_id=connection_id, reason=reason
        )

    def _workspace(self, name: str, arguments: Mapping[str, Any]) -> ToolReply:
        spaces = self.c.workspaces
        where = (self.org_id, self.run_id, self.attempt_key)
        reason = "the attempt's own workspace"
        try:
            if name == "workspace_read":
                text = spaces.read(*where, str(arguments["path"]))
                if text is None:
                    return ToolReply(
                        CallStatus.EXECUTED,
                        error=f"no file {arguments['path']!r} in this workspace",
                        connection_id=WORKSPACE_CONNECTION,
                        reason=reason,
                    )
                result: Any = {"path": arguments["path"], "content": text}
            elif name == "workspace_write":
                spaces.write(*where, str(arguments["path"]), str(arguments["content"]))
                result = {"path": arguments["path"], "written": True}
            else:
                result = {"paths": spaces.list(*where, str(arguments.get("prefix") or ""))}
        except (PayloadTooLargeError, InvalidInputError) as exc:
            return ToolReply(
                CallStatus.EXECUTED,
                error=exc.message,
                connection_id=WORKSPACE_CONNECTION,
                reason=reason,
            )
        return ToolReply(
            CallStatus.EXECUTED, result=result, connection_id=WORKSPACE_CONNECTION, reason=reason
        )


def auth_headers(c: Container, org_id: str, connection: Connection) -> dict[str, str]:
    """The headers a call on `connection` carries: `Authorization` from the organization's secret
    it names, none when it names none.

    Raises:
        ToolCallFailed: the organization has no secret of that name.
    """
    if not connection.auth_secret:
        return {}
    value = c.secrets.get(org_id, connection.auth_secret)
    if value is None:
        raise ToolCallFailed(
            f"the organization has no secret {connection.auth_secret!r} for connection "
            f"{connection.connection_id!r}"
        )
    return {"authorization": value}


def _with_listed(
    c: Container, org_id: str, tools: dict[str, ToolSpec], servers: Sequence[str]
) -> dict[str, ToolSpec]:
    """`tools` with what each MCP server lists: a declared tool of a listed name is replaced by
    the merged one, listed tools come after the declared ones, the workspace's last."""
    declared = [tool for tool in tools.values() if not tool.builtin]
    listed: dict[str, ToolSpec] = {}
    for server in servers:
        try:
            connection = c.connections.get(org_id, server)
        except NotFoundError:
            raise ToolCallFailed(f"connection {server!r} does not exist") from None
        found = c.tool_transport.list_tools(
            connection, auth_headers(c, org_id, connection), TOOL_TIMEOUT_S
        )
        for tool in tools_from_mcp(found, declared, server):
            listed.setdefault(tool.name, tool)
    merged = {tool.name: listed.pop(tool.name, tool) for tool in declared}
    merged.update(listed)
    merged.update({tool.name: tool for tool in tools.values() if tool.builtin})
    return merged


def toolbox_for(
    c: Container,
    run: Run,
    arm: Arm,
    case_id: str,
    attempt_key: str,
    recording_entry: Mapping[str, Any] | None = None,
) -> ToolBox:
    """The tools of one attempt of `case_id` on `arm` of `run`.

    `recording_entry`: the case's entry in the run's recording (`from_recordings`), None when the
    run replays none or the recording has no entry for the case: that case runs isolated without
    one (`from_recordings` off for it).

    A spec naming `mcp_connections` has, beside its declared tools, the tools each server lists
    now (`domain.tools.tools_from_mcp`: `readOnlyHint` is a read, anything else a write; the
    spec's declaration of the same name overrides).

    Raises:
        InvalidInputError: the arm's spec has tools or a `max_steps` that do not pass their checks
            (a spec saved before they were checked).
        ToolCallFailed: an MCP connection is gone or its server could not list its tools.
    """
    isolation = isolation_of(run)
    recorded = recorded_calls(recording_entry) if isolation.get("from_recordings") else None
    tools = tools_of(arm.spec)
    servers = parse_mcp_connections(arm.spec.get("mcp_connections"))
    if servers:
        tools = _with_listed(c, run.org_id, tools, servers)
    settings = IsolationSettings(
        test_connections=dict(isolation.get("test_connections") or {}),
        from_recordings=recorded is not None,
        live_reads=bool(isolation.get("live_reads")),
    )
    return ToolBox(
        c,
        run.org_id,
        run.run_id,
        attempt_key,
        tools,
        settings,
        recorded or (),
        check_max_steps(arm.spec),
    )


def recording_entry(c: Container, run: Run, request: CaseRequest) -> Mapping[str, Any] | None:
    """The case's entry in the recording the run answers from (`from_recordings`), None when the
    run answers from none, the recording is gone, or it has no entry for the case (found by case
    id, then by input text)."""
    isolation = isolation_of(run)
    recording_id = isolation.get("recording_id")
    if not isolation.get("from_recordings") or not isinstance(recording_id, str):
        return None
    recording = c.recordings.load(run.org_id, recording_id)
    return recording.find(request) if recording is not None else None


def connections_for(c: Container, tools: ToolBox) -> dict[str, Connection]:
    """The organization's connections the attempt's calls may run on: each declared tool's own
    connection and the test connection standing in for it, by id (one listing of the
    organization's connections; none read when no tool names a connection)."""
    wanted: set[str] = set()
    for tool in tools.tools.values():
        if tool.connection_id and not tool.builtin:
            wanted.add(tool.connection_id)
            test = tools.settings.test_connections.get(tool.connection_id)
            if test:
                wanted.add(test)
    if not wanted:
        return {}
    return {
        found.connection_id: found
        for found in c.connections.list(tools.org_id)
        if found.connection_id in wanted
    }


def box_state(tools: ToolBox) -> dict[str, Any]:
    """What rebuilds `tools` for one call (`from_state`), as JSON: `{"tools": [declared tools,
    flat shape], "settings": {"test_connections", "from_recordings", "live_reads"}, "recorded":
    [{"name", "arguments", "result"}], "max_steps": int, "connections": {id: connection}}`. The
    built-in workspace tools are not kept (every attempt has them); nor are the calls.
    """
    return {
        "tools": [tool.public() for tool in tools.tools.values() if not tool.builtin],
        "settings": {
            "test_connections": dict(tools.settings.test_connections),
            "from_recordings": tools.settings.from_recordings,
            "live_reads": tools.settings.live_reads,
        },
        "recorded": [
            {"name": call.tool_name, "arguments": dict(call.arguments), "result": call.result}
            for call in tools.recorded
        ],
        "max_steps": tools.max_steps,
        "connections": {cid: asdict(found) for cid, found in (tools.connections or {}).items()},
    }


def from_state(
    c: Container,
    org_id: str,
    run_id: str,
    attempt_key: str,
    state: Mapping[str, Any],
    consumed: Sequence[int] = (),
) -> ToolBox:
    """The attempt's `ToolBox` as `box_state` kept it, having replayed `consumed`, with no calls
    yet (the tool gateway rebuilds it for each call)."""
    declared = [
        ToolSpec(
            name=raw["name"],
            description=raw.get("description") or "",
            parameters=raw.get("parameters") or {},
            effect=ToolEffect(raw["effect"]) if raw.get("effect") else None,
            connection_id=raw.get("connection_id"),
        )
        for raw in state.get("tools") or []
    ]
    settings = state.get("settings") or {}
    return ToolBox(
        c,
        org_id,
        run_id,
        attempt_key,
        {tool.name: tool for tool in (*declared, *WORKSPACE_TOOLS)},
        IsolationSettings(
            test_connections=dict(settings.get("test_connections") or {}),
            from_recordings=bool(settings.get("from_recordings")),
            live_reads=bool(settings.get("live_reads")),
        ),
        recorded_calls({"calls": state.get("recorded") or []}) or (),
        int(state.get("max_steps") or DEFAULT_MAX_STEPS),
        frozenset(int(i) for i in consumed),
        connections={
            cid: Connection(**raw) for cid, raw in (state.get("connections") or {}).items()
        },
    )


REPORTING_RUNTIMES = frozenset({"http", "lambda"})
"""Runtimes whose agents run their own tools: a call they only report in their answer was not
made through the tool gateway, so assay keeps it `unverified`."""


def kept_calls(
    tools: ToolBox, reported: Sequence[ToolCall], spec: Mapping[str, Any]
) -> list[ToolCall]:
    """The calls kept on an attempt: those the attempt's tools decided (in the order made), then
    those the agent reported in its answer, `unverified` for an `http` or `lambda` agent (the
    status it reported named in `reason`)."""
    out = list(tools.calls)
    unverified = spec.get("runtime") in REPORTING_RUNTIMES
    for call in reported:
        if unverified:
            call = call.model_copy(
                update={
                    "status": CallStatus.UNVERIFIED,
                    "reason": f"reported by the agent as {call.status}; not made through the "
                    "tool gateway",
                }
            )
        out.append(call)
    return out


_OPTIONAL = ("connection_id", "error", "reason")


def calls_json(calls: Sequence[ToolCall]) -> list[dict[str, Any]]:
    """The calls as kept on an attempt: `{name, arguments, status, result}`, with
    `connection_id`, `error` and `reason` when set."""
    out = []
    for call in calls:
        data = call.model_dump(mode="json")
        for key in _OPTIONAL:
            if data.get(key) is None:
                data.pop(key, None)
        out.append(data)
    return out
