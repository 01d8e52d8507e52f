"""The tool gateway's rules on fakes (`services.gateway`, docs/guides/tools.md): a session per
attempt, each call authenticated, decided, made at most once and kept with one read and one
conditional write; refusals keep and make nothing; a lost race is written again, never made
again."""

from __future__ import annotations

import hashlib
import json
from dataclasses import replace
from datetime import timedelta

import pytest

from chalicelib.config import Settings
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.records import Connection
from chalicelib.errors import (
    ForbiddenError,
    InvalidInputError,
    NotFoundError,
    UnauthenticatedError,
)
from chalicelib.services import gateway, tool_calls
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run, an_arm

PUBLIC = "https://assay.test"
TOOLS = [
    {
        "name": "refund",
        "parameters": {
            "type": "object",
            "properties": {"order_id": {"type": "string"}},
            "required": ["order_id"],
        },
        "effect": "write",
        "connection_id": "shop",
    },
    {"name": "send_email", "effect": "write", "connection_id": "mail"},
    {"name": "lookup", "effect": "read", "connection_id": "crm"},
]


@pytest.fixture
def c() -> FakeContainer:
    c = FakeContainer(settings=Settings(assay_public_url=PUBLIC + "/"))
    for connection_id in ("shop", "shop-test", "mail", "crm", "elsewhere"):
        c.connections.create(
            Connection(
                org_id="acme",
                connection_id=connection_id,
                kind="http",
                url=f"https://{connection_id}.test",
                created_at="2026-12-01T00:00:00Z",
            )
        )
    c.tool_transport.answer = lambda connection, _tool, _args: {"made_on": connection.connection_id}
    return c


def _made(c) -> list[tuple[str, str, dict]]:
    """`(connection_id, tool, arguments)` of every call the fake transport made."""
    return [made[:3] for made in c.tool_transport.made]


def _box(c, *, recorded=None, live_reads=False):
    isolation = {"test_connections": {"shop": "shop-test"}}
    if recorded is not None:
        isolation |= {"from_recordings": True, "recording_id": "rec", "live_reads": live_reads}
    run = a_run(
        settings={"isolation": isolation},
        arms=(an_arm(spec={"runtime": "http", "url": "https://agent.test", "tools": TOOLS}),),
    )
    entry = {"calls": recorded} if recorded is not None else None
    box = tool_calls.toolbox_for(c, run, run.arms[0], "c1", "candidate#c1#001", entry)
    return run, box


def _open(c, **kw):
    run, box = _box(c, **kw)
    session = gateway.open(c, run, box, gateway.until(c))
    c.tool_sessions.requests.clear()
    return session


def _call(c, session, tool, arguments, token=None):
    return gateway.call(
        c,
        session.org_id,
        session.run_id,
        session.session_id,
        session.gateway.token if token is None else token,
        tool,
        arguments,
    )


def _kept(c, session):
    found = c.tool_sessions.kept[(session.org_id, session.run_id, session.session_id)]
    return found, [json.loads(t) for t in found.calls]


def test_open_keeps_the_tokens_digest_not_the_token_and_names_the_gateway_under_the_public_url(c):
    run, box = _box(c)
    session = gateway.open(c, run, box, 123_000)
    kept, calls = _kept(c, session)
    token = session.gateway.token
    assert len(token) >= 43 and token not in repr(kept)
    assert kept.token_sha256 == hashlib.sha256(token.encode()).hexdigest()
    assert (kept.attempt_key, kept.until_ms, kept.open, calls) == (
        "candidate#c1#001",
        123_000,
        True,
        [],
    )
    base = f"{PUBLIC}/api/v1/gateway/acme/r1/{session.session_id}"
    assert (session.gateway.url, session.gateway.mcp_url) == (f"{base}/tools", f"{base}/mcp")
    # The connections the tools may run on were read once, and only those are kept.
    assert c.connections.listed == 1
    assert sorted(kept.box["connections"]) == ["crm", "mail", "shop", "shop-test"]
    assert [t["name"] for t in kept.box["tools"]] == ["refund", "send_email", "lookup"]


def test_each_call_is_decided_made_if_allowed_and_kept_with_one_read_and_one_write(c):
    session = _open(c)
    refund = _call(c, session, "refund", {"order_id": "A1"})
    email = _call(c, session, "send_email", {"to": "x@example.com"})
    lookup = _call(c, session, "lookup", {"q": "C1"})
    assert refund.for_agent() == {"status": "executed", "result": {"made_on": "shop-test"}}
    assert email.status is CallStatus.BLOCKED and "not executed" in email.for_agent()["note"]
    assert lookup.connection_id == "crm"
    # The write ran on the test connection only; the blocked one nowhere.
    assert _made(c) == [
        ("shop-test", "refund", {"order_id": "A1"}),
        ("crm", "lookup", {"q": "C1"}),
    ]
    kept, calls = _kept(c, session)
    assert [(k["name"], k["status"], k.get("connection_id")) for k in calls] == [
        ("refund", "executed", "shop-test"),
        ("send_email", "blocked", None),
        ("lookup", "executed", "crm"),
    ]
    assert kept.version == 3
    # Two AWS requests per call, and no connection read: the session holds them.
    assert c.tool_sessions.requests == ["GetItem", "UpdateItem"] * 3
    assert c.connections.listed == 1


def test_a_workspace_call_runs_on_the_attempts_own_workspace(c):
    session = _open(c)
    _call(c, session, "workspace_write", {"path": "notes.txt", "content": "hi"})
    read = _call(c, session, "workspace_read", {"path": "notes.txt"})
    assert read.result == {"path": "notes.txt", "content": "hi"}
    assert list(c.workspaces.files) == [("acme", "r1", "candidate#c1#001", "notes.txt")]


@pytest.mark.parametrize("token", ["", "not-the-token"])
def test_a_missing_or_wrong_token_is_401_and_changes_nothing(c, token):
    session = _open(c)
    with pytest.raises(UnauthenticatedError) as err:
        _call(c, session, "refund", {"order_id": "A1"}, token=token)
    assert err.value.field == "Authorization"
    assert _kept(c, session)[1] == [] and _made(c) == []


def test_another_sessions_token_and_an_unknown_session_read_alike(c):
    first, second = _open(c), _open(c)
    with pytest.raises(UnauthenticatedError) as crossed:
        _call(c, first, "refund", {"order_id": "A1"}, token=second.gateway.token)
    with pytest.raises(UnauthenticatedError) as unknown:
        gateway.call(c, "acme", "r1", "nope", first.gateway.token, "refund", {"order_id": "A1"})
    with pytest.raises(UnauthenticatedError) as other_org:
        gateway.call(
            c, "other", "r1", first.session_id, first.gateway.token, "refund", {"order_id": "A1"}
        )
    assert crossed.value.message == unknown.value.message == other_org.value.message
    assert _made(c) == []


def test_a_closed_or_expired_session_is_403_for_its_own_token(c):
    session = _open(c)
    gateway.close(c, session)
    with pytest.raises(ForbiddenError):
        _call(c, session, "refund", {"order_id": "A1"})
    later = _open(c)
    c.clock.advance(seconds=c.settings.evaluation_case_timeout_seconds + gateway.SESSION_MARGIN_S)
    with pytest.raises(ForbiddenError):
        _call(c, later, "refund", {"order_id": "A1"})
    assert _made(c) == [] and _kept(c, later)[1] == []


def test_an_unknown_tool_is_404_and_bad_arguments_400_each_keeping_nothing(c):
    session = _open(c)
    with pytest.raises(NotFoundError) as unknown:
        _call(c, session, "drop_tables", {})
    assert unknown.value.field == "tool_name" and "refund" in unknown.value.message
    for arguments in ({"order_id": 5}, [1, 2], "x"):
        with pytest.raises(InvalidInputError) as bad:
            _call(c, session, "refund", arguments)
        assert bad.value.field == "arguments"
    found = c.tool_sessions.get("acme", "r1", session.session_id)
    with pytest.raises(InvalidInputError) as unreadable:
        gateway.call_in(c, found, "refund", None, unreadable="malformed JSON")
    assert unreadable.value.field == "arguments"
    with pytest.raises(NotFoundError):  # an unknown tool is named first, whatever the body
        gateway.call_in(c, found, "drop_tables", None, unreadable="malformed JSON")
    assert _kept(c, session)[1] == [] and _made(c) == []


def test_a_call_that_loses_the_race_after_it_was_made_is_written_again_never_made_again(c):
    session = _open(c)

    def concurrent() -> None:  # another call of the attempt keeps its record first
        _call(c, session, "send_email", {"to": "x@example.com"})

    c.tool_sessions.before_append = concurrent
    reply = _call(c, session, "refund", {"order_id": "A1"})
    assert reply.status is CallStatus.EXECUTED
    assert _made(c) == [("shop-test", "refund", {"order_id": "A1"})]
    kept, calls = _kept(c, session)
    assert [k["name"] for k in calls] == ["send_email", "refund"] and kept.version == 2


def test_a_call_that_made_nothing_is_decided_again_on_what_the_session_holds(c):
    recorded = [{"name": "lookup", "arguments": {"q": "C1"}, "result": {"name": "Ada"}}]
    session = _open(c, recorded=recorded)

    def concurrent() -> None:  # the same call, at once, replays the one recorded call first
        _call(c, session, "lookup", {"q": "C1"})

    c.tool_sessions.before_append = concurrent
    reply = _call(c, session, "lookup", {"q": "C1"})
    # The recorded call is replayed once; the other call, decided again, diverges.
    assert reply.status is CallStatus.DIVERGENT
    kept, calls = _kept(c, session)
    assert [k["status"] for k in calls] == ["replayed", "divergent"]
    assert kept.consumed == (0,) and _made(c) == []


def test_a_call_whose_attempt_ends_meanwhile_is_403_and_not_kept(c):
    session = _open(c)
    c.tool_sessions.before_append = lambda: gateway.close(c, session)
    with pytest.raises(ForbiddenError):
        _call(c, session, "refund", {"order_id": "A1"})
    assert len(_made(c)) == 1  # it was made, once
    assert _kept(c, session)[1] == []


def test_close_returns_the_calls_in_order_and_restart_forgets_a_failed_trys(c):
    recorded = [{"name": "lookup", "arguments": {"q": "C1"}, "result": 1}]
    session = _open(c, recorded=recorded)
    _call(c, session, "lookup", {"q": "C1"})
    gateway.restart(c, session)
    assert _kept(c, session)[0].consumed == ()
    again = _call(c, session, "lookup", {"q": "C1"})
    assert again.status is CallStatus.REPLAYED  # the recording starts afresh
    _call(c, session, "refund", {"order_id": "A2"})  # a write the recording lacks: held
    calls = gateway.close(c, session)
    assert [(k.name, k.status) for k in calls] == [
        ("lookup", CallStatus.REPLAYED),
        ("refund", CallStatus.DIVERGENT),
    ]
    assert _made(c) == []


def test_a_session_keeps_calls_within_its_byte_budget_dropping_results_first(c):
    session = _open(c)
    found = c.tool_sessions.kept[("acme", "r1", session.session_id)]
    c.tool_sessions.kept[("acme", "r1", session.session_id)] = replace(
        found, kept_bytes=gateway.MAX_KEPT_BYTES - 50
    )
    reply = _call(c, session, "lookup", {"q": "C1"})
    assert reply.result == {"made_on": "crm"}  # the agent still gets the whole result
    [kept] = _kept(c, session)[1]
    assert kept["result"] == {
        "_dropped": f"the attempt's kept calls reached {gateway.MAX_KEPT_BYTES} bytes"
    }


def test_until_is_the_case_timeout_and_the_margin_from_now(c):
    c.clock.advance(seconds=1)
    start = c.clock.now()
    assert gateway.until(c) == int(
        (start + timedelta(seconds=c.settings.evaluation_case_timeout_seconds + 30)).timestamp()
        * 1000
    )


def test_tools_too_large_for_one_session_open_none_and_say_so(c):
    run, box = _box(c)
    huge = "x" * gateway.MAX_BOX_BYTES
    box.tools["refund"] = replace(box.tools["refund"], description=huge)
    with pytest.raises(InvalidInputError) as err:
        gateway.open(c, run, box, gateway.until(c))
    assert err.value.field == "spec.tools" and str(gateway.MAX_BOX_BYTES) in err.value.message
    assert c.tool_sessions.kept == {}
