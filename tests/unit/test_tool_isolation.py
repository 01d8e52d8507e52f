"""The rule deciding each tool call an agent makes during an eval attempt: replayed, divergent,
executed (on a test connection, or a read on its own) or blocked, and the repeated-call loop."""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

import pytest

from chalicelib.domain.enums import CallStatus, ToolEffect
from chalicelib.domain.tool_isolation import (
    CallDecision,
    IsolationSettings,
    RecordedCall,
    ToolDeclaration,
    call_loop,
    canonical_arguments,
    decide_call,
)

READ, WRITE = ToolEffect.READ, ToolEffect.WRITE
EXECUTED, BLOCKED = CallStatus.EXECUTED, CallStatus.BLOCKED
REPLAYED, DIVERGENT = CallStatus.REPLAYED, CallStatus.DIVERGENT

# crm-prod has a test connection on the environment; mail-prod has none.
TEST_CONNECTIONS = {"crm-prod": "crm-test"}

LOOKUP = ToolDeclaration("lookup", READ, "crm-prod")  # a read with a test connection
SEARCH = ToolDeclaration("search", READ, "mail-prod")  # a read without one
TICKET = ToolDeclaration("file_ticket", WRITE, "crm-prod")  # a write with a test connection
SEND = ToolDeclaration("send_email", WRITE, "mail-prod")  # a write without one
REFUND = ToolDeclaration("refund", None, "mail-prod")  # no effect declared, no test connection
REFUND_CRM = ToolDeclaration("refund", None, "crm-prod")  # no effect declared, a test connection
NOW = ToolDeclaration("now", READ, None)  # a read with no connection
NOTIFY = ToolDeclaration("notify", WRITE, None)  # a write with no connection

PLAIN = IsolationSettings(TEST_CONNECTIONS)
LIVE_ONLY = IsolationSettings(TEST_CONNECTIONS, live_reads=True)  # live_reads alone changes nothing
REPLAY = IsolationSettings(TEST_CONNECTIONS, from_recordings=True)
REPLAY_LIVE = IsolationSettings(TEST_CONNECTIONS, from_recordings=True, live_reads=True)
NOTHING = IsolationSettings()

RECORDED = (
    RecordedCall("lookup", {"id": 7}, {"name": "Ada"}),  # 0
    RecordedCall("file_ticket", {"title": "refund", "priority": 2}, {"ticket": "T-1"}),  # 1
    RecordedCall("lookup", {"id": 7}, {"name": "Ada again"}),  # 2: a recorded repeat of 0
    RecordedCall("send_email", {"to": "a@example.com", "body": "hi"}, "sent"),  # 3
    RecordedCall("lookup", {"id": 1}, "one"),  # 4
    RecordedCall("file_ticket", {"meta": {"b": [1, 2], "a": "x"}}, {"ticket": "T-2"}),  # 5
)

NONE: frozenset[int] = frozenset()

# (tool, arguments, settings, consumed before)
#   -> (status, connection, result, recorded index, consumed after)
DECISIONS: list[Any] = [
    # Replayed: the first unconsumed recorded call of the same tool with equal arguments.
    pytest.param(
        LOOKUP,
        {"id": 7},
        REPLAY,
        NONE,
        (REPLAYED, None, {"name": "Ada"}, 0, {0}),
        id="replay-first-match",
    ),
    pytest.param(
        LOOKUP,
        {"id": 7},
        REPLAY,
        {0},
        (REPLAYED, None, {"name": "Ada again"}, 2, {0, 2}),
        id="replay-repeat-takes-next",
    ),
    pytest.param(
        LOOKUP,
        {"id": 7},
        REPLAY,
        {0, 2},
        (DIVERGENT, None, None, None, {0, 2}),
        id="repeats-used-up-divergent",
    ),
    pytest.param(
        SEND,
        {"body": "hi", "to": "a@example.com"},
        REPLAY,
        NONE,
        (REPLAYED, None, "sent", 3, {3}),
        id="replay-write-without-test-connection",
    ),
    # Replay beats the test connection (for a write and for a read).
    pytest.param(
        TICKET,
        {"priority": 2, "title": "refund"},
        REPLAY,
        NONE,
        (REPLAYED, None, {"ticket": "T-1"}, 1, {1}),
        id="replay-beats-test-connection-write",
    ),
    pytest.param(
        LOOKUP,
        {"id": 7},
        REPLAY_LIVE,
        {2},
        (REPLAYED, None, {"name": "Ada"}, 0, {0, 2}),
        id="replay-beats-live-read",
    ),
    # Canonical argument equality: key order, 1 == 1.0, nested objects; true != 1; list order.
    pytest.param(
        TICKET,
        {"title": "refund", "priority": 2.0},
        REPLAY,
        NONE,
        (REPLAYED, None, {"ticket": "T-1"}, 1, {1}),
        id="canonical-whole-float-equals-int",
    ),
    pytest.param(
        LOOKUP,
        {"id": 1.0},
        REPLAY,
        NONE,
        (REPLAYED, None, "one", 4, {4}),
        id="canonical-1.0-matches-1",
    ),
    pytest.param(
        LOOKUP,
        {"id": True},
        REPLAY,
        NONE,
        (DIVERGENT, None, None, None, set()),
        id="canonical-true-is-not-1",
    ),
    pytest.param(
        LOOKUP,
        {"id": "7"},
        REPLAY,
        NONE,
        (DIVERGENT, None, None, None, set()),
        id="canonical-string-is-not-number",
    ),
    pytest.param(
        TICKET,
        {"meta": {"a": "x", "b": [1.0, 2]}},
        REPLAY,
        {1},
        (REPLAYED, None, {"ticket": "T-2"}, 5, {1, 5}),
        id="canonical-nested-objects",
    ),
    pytest.param(
        TICKET,
        {"meta": {"a": "x", "b": [2, 1]}},
        REPLAY,
        NONE,
        (DIVERGENT, None, None, None, set()),
        id="canonical-list-order-matters",
    ),
    pytest.param(
        TICKET,
        {"title": "refund", "priority": 2, "extra": None},
        REPLAY,
        NONE,
        (DIVERGENT, None, None, None, set()),
        id="canonical-extra-key-differs",
    ),
    pytest.param(
        SEARCH,
        {"id": 7},
        REPLAY,
        NONE,
        (DIVERGENT, None, None, None, set()),
        id="same-arguments-other-tool-divergent",
    ),
    # Divergent beats the test connection; live_reads lets only reads through, on their own
    # connection.
    pytest.param(
        TICKET,
        {"title": "other"},
        REPLAY,
        {0},
        (DIVERGENT, None, None, None, {0}),
        id="divergent-beats-test-connection",
    ),
    pytest.param(
        TICKET,
        {"title": "other"},
        REPLAY_LIVE,
        NONE,
        (DIVERGENT, None, None, None, set()),
        id="live-reads-holds-write",
    ),
    pytest.param(
        REFUND,
        {"id": 7},
        REPLAY_LIVE,
        NONE,
        (DIVERGENT, None, None, None, set()),
        id="live-reads-holds-missing-effect",
    ),
    pytest.param(
        LOOKUP,
        {"id": 8},
        REPLAY,
        NONE,
        (DIVERGENT, None, None, None, set()),
        id="read-divergent-without-live-reads",
    ),
    pytest.param(
        LOOKUP,
        {"id": 8},
        REPLAY_LIVE,
        {0},
        (EXECUTED, "crm-prod", None, None, {0}),
        id="live-read-runs-on-normal-connection",
    ),
    pytest.param(
        SEARCH,
        {"q": "x"},
        REPLAY_LIVE,
        NONE,
        (EXECUTED, "mail-prod", None, None, set()),
        id="live-read-without-test-connection",
    ),
    pytest.param(
        NOW,
        {},
        REPLAY_LIVE,
        NONE,
        (BLOCKED, None, None, None, set()),
        id="live-read-without-connection-blocked",
    ),
    # Not replaying: the recording is not consulted; a test connection stands in for production.
    pytest.param(
        LOOKUP,
        {"id": 7},
        PLAIN,
        NONE,
        (EXECUTED, "crm-test", None, None, set()),
        id="read-with-test-connection-goes-to-test",
    ),
    pytest.param(
        TICKET,
        {"priority": 2, "title": "refund"},
        PLAIN,
        {1},
        (EXECUTED, "crm-test", None, None, {1}),
        id="write-with-test-connection-goes-to-test",
    ),
    pytest.param(
        REFUND_CRM,
        {"id": 7},
        PLAIN,
        NONE,
        (EXECUTED, "crm-test", None, None, set()),
        id="missing-effect-with-test-connection",
    ),
    pytest.param(
        SEARCH,
        {"q": "x"},
        PLAIN,
        NONE,
        (EXECUTED, "mail-prod", None, None, set()),
        id="read-runs-on-its-connection",
    ),
    pytest.param(
        SEND,
        {"body": "hi", "to": "a@example.com"},
        PLAIN,
        NONE,
        (BLOCKED, None, None, None, set()),
        id="write-without-test-connection-blocked",
    ),
    pytest.param(
        REFUND,
        {"id": 7},
        PLAIN,
        NONE,
        (BLOCKED, None, None, None, set()),
        id="missing-effect-is-write-blocked",
    ),
    pytest.param(
        NOW,
        {},
        PLAIN,
        NONE,
        (BLOCKED, None, None, None, set()),
        id="read-without-connection-blocked",
    ),
    pytest.param(
        NOTIFY,
        {"to": "ops"},
        PLAIN,
        NONE,
        (BLOCKED, None, None, None, set()),
        id="write-without-connection-blocked",
    ),
    pytest.param(
        SEND,
        {"to": "a@example.com"},
        LIVE_ONLY,
        NONE,
        (BLOCKED, None, None, None, set()),
        id="live-reads-alone-still-blocks-write",
    ),
    pytest.param(
        SEARCH,
        {"q": "x"},
        LIVE_ONLY,
        NONE,
        (EXECUTED, "mail-prod", None, None, set()),
        id="live-reads-alone-read-runs",
    ),
    pytest.param(
        TICKET,
        {"title": "refund"},
        NOTHING,
        NONE,
        (BLOCKED, None, None, None, set()),
        id="no-test-connections-write-never-production",
    ),
    pytest.param(
        LOOKUP,
        {"id": 7},
        NOTHING,
        NONE,
        (EXECUTED, "crm-prod", None, None, set()),
        id="no-test-connections-read-on-its-own",
    ),
]


@pytest.mark.parametrize(("tool", "arguments", "settings", "consumed", "expected"), DECISIONS)
def test_decide_call(
    tool: ToolDeclaration,
    arguments: dict[str, Any],
    settings: IsolationSettings,
    consumed: set[int],
    expected: tuple[CallStatus, str | None, Any, int | None, set[int]],
) -> None:
    decision = decide_call(tool, arguments, settings, RECORDED, frozenset(consumed))
    status, connection, result, index, consumed_after = expected
    got = (
        decision.status,
        decision.connection_id,
        decision.result,
        decision.recorded_index,
        decision.consumed,
    )
    assert got == (status, connection, result, index, frozenset(consumed_after))
    assert decision.executed is (status is EXECUTED)
    assert decision.reason


@pytest.mark.parametrize(
    ("tool", "settings", "words"),
    [
        pytest.param(NOW, PLAIN, "'now' has no connection", id="read-without-connection"),
        pytest.param(NOW, REPLAY_LIVE, "'now' has no connection", id="live-read-no-connection"),
        pytest.param(SEND, PLAIN, "no test connection", id="write-without-test-connection"),
        pytest.param(TICKET, PLAIN, "test connection 'crm-test'", id="test-connection"),
        pytest.param(TICKET, REPLAY, "no unused call of 'file_ticket'", id="divergent"),
    ],
)
def test_reason_says_why(tool: ToolDeclaration, settings: IsolationSettings, words: str) -> None:
    assert words in decide_call(tool, {"x": 1}, settings, RECORDED).reason


# One attempt's calls in order, each decided with the consumption the previous one returned:
# (tool, arguments) ... -> (status, recorded index) ...
SEQUENCES: list[Any] = [
    pytest.param(
        [(LOOKUP, {"id": 7}), (LOOKUP, {"id": 7}), (LOOKUP, {"id": 7})],
        [(REPLAYED, 0), (REPLAYED, 2), (DIVERGENT, None)],
        id="repeats-in-recorded-order-then-divergent",
    ),
    pytest.param(
        [(TICKET, {"priority": 2, "title": "refund"}), (LOOKUP, {"id": 7}), (LOOKUP, {"id": 7.0})],
        [(REPLAYED, 1), (REPLAYED, 0), (REPLAYED, 2)],
        id="interleaved-calls",
    ),
    pytest.param(
        [(LOOKUP, {"id": 9}), (LOOKUP, {"id": 7}), (TICKET, {"title": "refund", "priority": 2})],
        [(DIVERGENT, None), (REPLAYED, 0), (REPLAYED, 1)],
        id="divergent-consumes-nothing",
    ),
    pytest.param(
        [
            (TICKET, {"priority": 2, "title": "refund"}),
            (TICKET, {"priority": 2, "title": "refund"}),
        ],
        [(REPLAYED, 1), (DIVERGENT, None)],
        id="a-write-replays-once-per-recording",
    ),
]


@pytest.mark.parametrize(("calls", "expected"), SEQUENCES)
def test_repeats_consumed_in_order(
    calls: list[tuple[ToolDeclaration, dict[str, Any]]],
    expected: list[tuple[CallStatus, int | None]],
) -> None:
    consumed: frozenset[int] = frozenset()
    got = []
    for tool, arguments in calls:
        decision = decide_call(tool, arguments, REPLAY, RECORDED, consumed)
        consumed = decision.consumed
        got.append((decision.status, decision.recorded_index))
    assert got == expected


def test_decision_is_frozen() -> None:
    decision = decide_call(LOOKUP, {"id": 7}, PLAIN)
    assert isinstance(decision, CallDecision)
    with pytest.raises(AttributeError):
        decision.status = BLOCKED  # type: ignore[misc]


@pytest.mark.parametrize(
    ("arguments", "text"),
    [
        pytest.param({"b": 2, "a": 1}, '{"a":1,"b":2}', id="sorted-keys"),
        pytest.param({"a": 1.0}, '{"a":1}', id="whole-float-is-int"),
        pytest.param({"a": 1.5}, '{"a":1.5}', id="fraction-kept"),
        pytest.param({"a": True, "b": False}, '{"a":true,"b":false}', id="booleans-kept"),
        pytest.param({"a": None}, '{"a":null}', id="null"),
        pytest.param({"a": [1.0, (2, 3)]}, '{"a":[1,[2,3]]}', id="lists-and-tuples"),
        pytest.param({"z": {"y": 1, "x": 2}}, '{"z":{"x":2,"y":1}}', id="nested-sorted"),
        pytest.param({"é": "ü"}, '{"é":"ü"}', id="non-ascii-kept"),
        pytest.param({}, "{}", id="empty"),
    ],
)
def test_canonical_arguments(arguments: Mapping[str, Any], text: str) -> None:
    assert canonical_arguments(arguments) == text


def test_canonical_arguments_refuses_non_json() -> None:
    with pytest.raises(TypeError, match="not set"):
        canonical_arguments({"a": {1, 2}})


A = ("lookup", {"id": 7})
A_SAME = ("lookup", {"id": 7.0})  # canonically equal to A
B = ("lookup", {"id": 8})
OTHER_TOOL = ("search", {"id": 7})


@pytest.mark.parametrize(
    ("calls", "times", "index"),
    [
        pytest.param([], 3, None, id="no-calls"),
        pytest.param([A, A], 3, None, id="too-few"),
        pytest.param([A, A, A], 3, 2, id="three-in-a-row"),
        pytest.param([A, B, A, A], 3, None, id="not-in-a-row"),
        pytest.param([A, A, B, A, A, A], 3, 5, id="run-restarts-after-another-call"),
        pytest.param([A, A_SAME, A], 3, 2, id="canonical-arguments"),
        pytest.param([A, OTHER_TOOL], 2, None, id="other-tool-same-arguments"),
        pytest.param([A, A, A, A], 2, 1, id="first-index-that-loops"),
        pytest.param([B, A, A], 2, 2, id="loop-at-the-end"),
    ],
)
def test_call_loop(calls: list[tuple[str, dict[str, Any]]], times: int, index: int | None) -> None:
    assert call_loop(calls, times) == index


@pytest.mark.parametrize("times", [1, 0, -1])
def test_call_loop_needs_two(times: int) -> None:
    with pytest.raises(ValueError, match="at least 2"):
        call_loop([A, A], times)
