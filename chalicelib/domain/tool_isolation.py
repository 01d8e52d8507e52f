"""What happens to each tool call an agent makes during an eval attempt (to be documented in
docs/guides/agents.md).

An eval run asks every case several times, so no attempt may perform a production write. For one
call, `decide_call` takes the tool's declaration (`ToolDeclaration`: name, effect, connection),
the run's environment settings (`IsolationSettings`: test connections, `from_recordings`,
`live_reads`), the case's recorded calls (`RecordedCall`s) and which of them this attempt has
already consumed, and returns a frozen `CallDecision`. The rule, first match wins:

1. `from_recordings` on and the recording has an unconsumed call of the same tool with canonically
   equal arguments: `replayed` with that call's recorded result (the first unconsumed match, so
   repeated identical calls take recorded repeats in order).
2. `from_recordings` on and nothing matches: `divergent`, held (not executed); except a `read`
   tool when `live_reads` is on, which runs on its own (normal) connection: `executed`.
3. The tool's connection has a test connection on the run's environment: `executed` against the
   test connection, never production.
4. A `read` tool: `executed` on its normal connection.
5. Anything else (a `write`, a tool without an effect): `blocked`, kept with its arguments as an
   intended call.

A tool without a connection cannot run: where the rule would execute it, it is `blocked` instead,
the decision's reason saying so.

`call_loop` finds the same tool called with canonically equal arguments N times in a row within
one attempt (the runtime's loop-crash rule).

Pure: no I/O, no clock, no environment.
"""

from __future__ import annotations

import json
import math
from collections.abc import Iterable, Mapping, Sequence
from dataclasses import dataclass, field
from typing import Any

from chalicelib.domain.enums import CallStatus, ToolEffect

__all__ = [
    "CallDecision",
    "IsolationSettings",
    "RecordedCall",
    "ToolDeclaration",
    "call_loop",
    "canonical_arguments",
    "decide_call",
]


@dataclass(frozen=True)
class ToolDeclaration:
    """A tool an agent may call, as its spec declares it.

    `effect` None means the declaration named no effect: the tool is treated as a `write`.
    `connection_id` is the connection the tool normally calls (production); None when it has none.
    """

    name: str
    effect: ToolEffect | None = None
    connection_id: str | None = None

    @property
    def is_read(self) -> bool:
        """True only for a tool declared `read`; a missing effect is a write."""
        return self.effect == ToolEffect.READ


@dataclass(frozen=True)
class IsolationSettings:
    """What the eval run's environment says about tool calls.

    `test_connections` maps a connection id to the test connection id that stands in for it during
    an eval run (`{connection_id: test_connection_id}`). `from_recordings` answers calls from the
    case's recorded calls; `live_reads` lets `read` tools the recording does not cover run.
    """

    test_connections: Mapping[str, str] = field(default_factory=dict)
    from_recordings: bool = False
    live_reads: bool = False


@dataclass(frozen=True)
class RecordedCall:
    """One call recorded for a case: the tool's name, its arguments (a JSON object) and the
    result it returned (any JSON value)."""

    tool_name: str
    arguments: Mapping[str, Any]
    result: Any = None


@dataclass(frozen=True)
class CallDecision:
    """What happens to one call.

    `status`: `executed`, `blocked`, `replayed` or `divergent`. `connection_id`: the connection to
    call (a test connection's id when one stands in), None when not executed. `result`: the
    recorded result when `replayed`, else None. `recorded_index`: the index into the recorded
    calls this call consumed (0-based), None unless `replayed`. `consumed`: the attempt's consumed
    indices after this call (pass it to the next `decide_call`). `reason`: one sentence saying why,
    for people reading the attempt.
    """

    status: CallStatus
    connection_id: str | None
    consumed: frozenset[int]
    reason: str
    result: Any = None
    recorded_index: int | None = None

    @property
    def executed(self) -> bool:
        """True when the call is to be run (on `connection_id`)."""
        return self.status is CallStatus.EXECUTED


def _normal(value: Any) -> Any:
    """`value` with every number that is a whole float turned into an int, tuples into lists."""
    if isinstance(value, bool) or value is None or isinstance(value, (str, int)):
        return value
    if isinstance(value, float):
        return int(value) if math.isfinite(value) and value.is_integer() else value
    if isinstance(value, Mapping):
        return {key: _normal(item) for key, item in value.items()}
    if isinstance(value, (list, tuple)):
        return [_normal(item) for item in value]
    raise TypeError(f"a tool call's arguments must be JSON values, not {type(value).__name__}")


def canonical_arguments(arguments: Mapping[str, Any]) -> str:
    """The canonical JSON text of a call's arguments: two calls' arguments are equal when these
    texts are.

    Keys sorted, no insignificant whitespace, non-ASCII kept as is, and numbers compared as JSON
    numbers: a whole float equals the integer (`1.0` == `1`, `{"a": 1, "b": 2}` ==
    `{"b": 2.0, "a": 1}`). JSON has one number type and serializers and models write `1` or `1.0`
    for the same value, so a recording must not diverge on that spelling. Booleans stay distinct
    from numbers (`true` != `1`). Strings are compared exactly (no case or Unicode folding).
    `NaN` and `Infinity`, which lenient JSON parsers accept, compare by that spelling.

    Raises:
        TypeError: a value that is not JSON (a set, an object), naming its type.
    """
    return json.dumps(_normal(arguments), sort_keys=True, separators=(",", ":"), ensure_ascii=False)


def _match(
    tool: str, canonical: str, recorded: Sequence[RecordedCall], consumed: frozenset[int]
) -> int | None:
    for index, call in enumerate(recorded):
        if index in consumed or call.tool_name != tool:
            continue
        if canonical_arguments(call.arguments) == canonical:
            return index
    return None


def _run_on(
    connection_id: str | None, consumed: frozenset[int], why: str, tool: str
) -> CallDecision:
    """Executed on `connection_id`, or blocked when the tool has no connection to run on."""
    if connection_id is None:
        return CallDecision(
            CallStatus.BLOCKED,
            None,
            consumed,
            f"tool {tool!r} has no connection to run on",
        )
    return CallDecision(CallStatus.EXECUTED, connection_id, consumed, why)


def decide_call(
    tool: ToolDeclaration,
    arguments: Mapping[str, Any],
    settings: IsolationSettings,
    recorded: Sequence[RecordedCall] = (),
    consumed: frozenset[int] = frozenset(),
) -> CallDecision:
    """Decide what happens to one call an agent makes during an eval attempt (the module's rule).

    `arguments` is the call's JSON object; `recorded` the case's recorded calls in recorded order;
    `consumed` the indices into `recorded` this attempt has already replayed (empty for its first
    call). Only a `replayed` decision adds to `consumed`; the others return it unchanged.

    Outside replay, a tool whose connection has a test connection runs only on the test
    connection, never production. While replaying, the only call that runs is a `read` the
    recording does not cover with `live_reads` on, and it runs on its own connection.

    Raises:
        TypeError: arguments (the call's or a recorded call's) that are not JSON values.
    """
    if settings.from_recordings:
        index = _match(tool.name, canonical_arguments(arguments), recorded, consumed)
        if index is not None:
            return CallDecision(
                CallStatus.REPLAYED,
                None,
                consumed | {index},
                f"answered from recorded call {index}",
                result=recorded[index].result,
                recorded_index=index,
            )
        if tool.is_read and settings.live_reads:
            return _run_on(
                tool.connection_id,
                consumed,
                "a read the recording does not cover, run live",
                tool.name,
            )
        return CallDecision(
            CallStatus.DIVERGENT,
            None,
            consumed,
            f"the recording has no unused call of {tool.name!r} with these arguments",
        )
    test_connection = (
        settings.test_connections.get(tool.connection_id) if tool.connection_id else None
    )
    if test_connection is not None:
        return CallDecision(
            CallStatus.EXECUTED,
            test_connection,
            consumed,
            f"run on test connection {test_connection!r} in place of {tool.connection_id!r}",
        )
    if tool.is_read:
        return _run_on(tool.connection_id, consumed, "a read, run on its connection", tool.name)
    return CallDecision(
        CallStatus.BLOCKED,
        None,
        consumed,
        f"tool {tool.name!r} may write and its connection has no test connection",
    )


def call_loop(calls: Iterable[tuple[str, Mapping[str, Any]]], times: int) -> int | None:
    """Where an attempt's calls loop: the same tool with canonically equal arguments `times` times
    in a row.

    `calls` are `(tool_name, arguments)` in the order the agent made them. Returns the 0-based
    index of the call that first makes `times` in a row (e.g. 2 for three identical calls with
    `times=3`), or None when no call does.

    Raises:
        ValueError: `times` below 2 (one call is not a loop).
        TypeError: arguments that are not JSON values.
    """
    if times < 2:
        raise ValueError(f"times must be at least 2, got {times}")
    previous: tuple[str, str] | None = None
    run = 0
    for index, (name, arguments) in enumerate(calls):
        key = (name, canonical_arguments(arguments))
        run = run + 1 if key == previous else 1
        previous = key
        if run >= times:
            return index
    return None
