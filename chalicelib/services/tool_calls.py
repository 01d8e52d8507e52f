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

import json
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import CaseRequest, ToolCall
from chalicelib.domain.records import Arm, Run
from chalicelib.domain.tool_isolation import (
    IsolationSettings,
    RecordedCall,
    call_loop,
    decide_call,
)
from chalicelib.domain.tools import (
    WORKSPACE_CONNECTION,
    ToolReply,
    ToolSpec,
    argument_problem,
    tools_of,
)
from chalicelib.errors import InvalidInputError, NotFoundError, PayloadTooLargeError
from chalicelib.services.ports.tools import ToolCallFailed

DEFAULT_MAX_STEPS = 10
"""Model turns an agent loop may take when its spec sets no `max_steps`."""

MAX_STEPS_LIMIT = 50
"""The most `max_steps` a spec may set."""

LOOP_REPEATS = 3
"""The same call (tool and canonically equal arguments) this many times in a row is a loop: the
attempt is a crash."""

MAX_KEPT_RESULT_BYTES = 16_384
"""The largest result kept on the attempt for one call, as JSON in bytes; a larger one is kept cut
(the agent still gets all of it)."""

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


def max_steps_of(spec: Mapping[str, Any]) -> int:
    """The spec's `max_steps` (model turns of its tool loop), default `DEFAULT_MAX_STEPS`.

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


def _kept(result: Any) -> Any:
    """`result` as kept on the attempt: cut to `MAX_KEPT_RESULT_BYTES` of JSON when larger."""
    try:
        text = json.dumps(result, ensure_ascii=False)
    except (TypeError, ValueError):
        return {"_unserializable": True}
    if len(text.encode("utf-8")) <= MAX_KEPT_RESULT_BYTES:
        return result
    return {
        "_truncated": True,
        "text": text.encode("utf-8")[:MAX_KEPT_RESULT_BYTES].decode("utf-8", "ignore"),
    }


@dataclass
class ToolBox:
    """The tools of one eval attempt (port `services.ports.ToolCaller`).

    `tools`: every tool the attempt may call, by name. `settings`: the run's isolation settings for
    this case (`from_recordings` is off for a case without a usable recording). `recorded`: the
    case's recorded calls. `consumed`: indices into `recorded` this attempt replayed. `calls`: the
    calls kept so far, in order.
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
        self.calls.append(
            ToolCall(
                name=name,
                arguments=arguments,
                status=reply.status,
                result=_kept(reply.result),
                connection_id=reply.connection_id,
                error=reply.error,
                reason=reply.reason or None,
            )
        )

    def _execute(
        self, name: str, arguments: Mapping[str, Any], connection_id: str, reason: str
    ) -> ToolReply:
        try:
            connection = self.c.connections.get(self.org_id, connection_id)
        except NotFoundError:
            return ToolReply(
                CallStatus.BLOCKED,
                reason=f"connection {connection_id!r} does not exist: the call was not made",
            )
        headers: dict[str, str] = {}
        if connection.auth_secret:
            value = self.c.secrets.get(self.org_id, connection.auth_secret)
            if value is None:
                return ToolReply(
                    CallStatus.EXECUTED,
                    error=f"the organization has no secret {connection.auth_secret!r} for "
                    f"connection {connection_id!r}",
                    connection_id=connection_id,
                    reason=reason,
                )
            headers["authorization"] = value
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

    Raises:
        InvalidInputError: the arm's spec has tools or a `max_steps` that do not pass their checks
            (a spec saved before they were checked).
    """
    isolation = isolation_of(run)
    recorded = recorded_calls(recording_entry) if isolation.get("from_recordings") else None
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
        tools_of(arm.spec),
        settings,
        recorded or (),
        max_steps_of(arm.spec),
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
