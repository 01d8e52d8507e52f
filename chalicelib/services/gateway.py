"""The tool gateway: where an `http` or `lambda` agent calls its tools during an eval attempt
(docs/guides/tools.md, "The tool gateway").

Before such an agent is asked, `open` starts a session for the attempt: a bearer token
(`secrets.token_urlsafe(32)`, only its SHA-256 kept) and one item in `tool_sessions` holding what a
call needs - the attempt's tools, the run's isolation settings, the case's recorded calls, the
connections the calls may run on, the calls kept so far and a version. The case payload carries
the gateway's URL and the token (`ToolGateway`). Each call (`call`) then costs two AWS requests
beyond the tool's own: one `GetItem` (the token checked in constant time, the session open and
not past `until_ms`), the isolation rule deciding the call and making it if allowed (`ToolBox`),
and one conditional `UpdateItem` keeping it (appended, `version` + 1, conditional on the version
read). After the agent answered, `close` closes the session in one `UpdateItem` and returns every
call kept, which the attempt keeps ahead of what the agent reported.

Concurrent calls of one attempt: the write that loses the race reads the session again. A call
that was made (`executed`: a connection or the workspace was called) is never made again: only
its record's write is retried. A call that made nothing (`replayed`, `divergent`, `blocked`) is
decided again on what the session now holds, so two calls never replay the same recorded call.

A session lasts `until`: the case timeout plus `SESSION_MARGIN_S` from its opening. The agent is
asked within the case timeout (`asking.ask`'s deadline covers every try), so the session outlives
every legitimate call without a write per heartbeat; it is closed as soon as the agent answered,
and a session a dead worker left open ends by itself soon after.
"""

from __future__ import annotations

import hashlib
import hmac
import json
import logging
import secrets
from collections.abc import Mapping
from dataclasses import dataclass, replace
from typing import Any

from chalicelib import retrying
from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms
from chalicelib.domain.enums import CallStatus
from chalicelib.domain.models import ToolCall
from chalicelib.domain.records import Run, ToolSession
from chalicelib.domain.tools import ToolReply, ToolSpec
from chalicelib.errors import (
    ForbiddenError,
    InvalidInputError,
    UnauthenticatedError,
)
from chalicelib.services import mcp_gateway, tool_calls
from chalicelib.services.ports import ToolGateway
from chalicelib.services.tool_calls import ToolBox

log = logging.getLogger(__name__)

SESSION_MARGIN_S = 30
"""Seconds a session outlives the case timeout from its opening (see the module docstring)."""

WRITE_TRIES = retrying.TRIES
"""Writes of one call's record lost to the attempt's other calls before the call gives up on
keeping it (`retrying.change`)."""

MAX_KEPT_BYTES = 300_000
"""The most bytes of kept calls one session holds (DynamoDB's items hold 400 KB); past it a call
is kept without its result, then without its arguments."""

MAX_BOX_BYTES = 90_000
"""The most bytes of JSON the attempt's tools, recorded calls and connections may take in its
session (what `MAX_KEPT_BYTES` leaves of an item's 400 KB)."""

TOKEN_KIND = "tool_token"
"""How a gateway token is named where it is redacted (`[REDACTED:tool_token]`)."""

_ENDED_DURING = "the eval attempt this token was given for ended during the call: it is not kept"

_NO_SESSION = "0" * 64
"""Compared against when there is no session, so a missing one takes as long as a wrong token."""


@dataclass(frozen=True)
class GatewaySession:
    """An open session: where it is kept (`org_id`, `run_id`, `session_id`) and what the agent is
    given (`gateway`: the tools URL, the token, the MCP URL)."""

    org_id: str
    run_id: str
    session_id: str
    gateway: ToolGateway


def _digest(token: str) -> str:
    return hashlib.sha256(token.encode("utf-8", "surrogatepass")).hexdigest()


def _now_ms(c: Container) -> int:
    return epoch_ms(c.clock.now())


def until(c: Container) -> int:
    """When a session opened now ends (epoch ms): the case timeout plus `SESSION_MARGIN_S`."""
    return _now_ms(c) + (c.settings.evaluation_case_timeout_seconds + SESSION_MARGIN_S) * 1000


def base_url(c: Container, org_id: str, run_id: str, session_id: str) -> str:
    """`{ASSAY_PUBLIC_URL}/api/v1/gateway/{org_id}/{run_id}/{session_id}`: the session's address
    (its tools under `/tools`, its MCP server at `/mcp`)."""
    root = c.settings.assay_public_url.rstrip("/")
    return f"{root}/api/v1/gateway/{org_id}/{run_id}/{session_id}"


def open(c: Container, run: Run, tools: ToolBox, until_ms: int) -> GatewaySession:  # noqa: A001 - the session's verb
    """Open the tool gateway's session of one attempt (`tools.attempt_key` of `run`): one listing
    of the organization's connections when the tools name any (kept on `tools.connections`),
    then one PutItem.

    `until_ms`: when the session ends on its own (epoch ms; `until(c)`). Needs
    `ASSAY_PUBLIC_URL` (the caller checks it is set).

    Returns the session, whose `gateway` goes into the attempt's `AskContext`.

    Raises:
        InvalidInputError: (field `spec.tools`) the tools, recorded calls and connections take
            more than `MAX_BOX_BYTES` of JSON (nothing is written).
    """
    if tools.connections is None:
        tools.connections = tool_calls.connections_for(c, tools)
    box = tool_calls.box_state(tools)
    size = len(json.dumps(box, ensure_ascii=False).encode("utf-8"))
    if size > MAX_BOX_BYTES:
        raise InvalidInputError(
            f"the spec's tools and the case's recorded calls take {size} bytes as JSON; the tool "
            f"gateway holds at most {MAX_BOX_BYTES} for one attempt",
            field="spec.tools",
        )
    token = secrets.token_urlsafe(32)
    session_id = secrets.token_hex(12)
    c.tool_sessions.create(
        ToolSession(
            org_id=run.org_id,
            run_id=run.run_id,
            session_id=session_id,
            attempt_key=tools.attempt_key,
            token_sha256=_digest(token),
            until_ms=until_ms,
            box=box,
        )
    )
    base = base_url(c, run.org_id, run.run_id, session_id)
    return GatewaySession(
        run.org_id, run.run_id, session_id, ToolGateway(f"{base}/tools", token, f"{base}/mcp")
    )


def authenticate(
    c: Container, org_id: str, run_id: str, session_id: str, token: str | None
) -> ToolSession:
    """The open session `token` was given for: one consistent GetItem.

    Raises:
        UnauthenticatedError: (field `Authorization`) no token, or one that is not this session's
            (compared in constant time), or no such session, run or organization: which of them
            is never said.
        ForbiddenError: (field `Authorization`) the right token of a session that ended: its
            attempt was asked (closed) or it is past its `until_ms`.
    """
    session = c.tool_sessions.get(org_id, run_id, session_id) if token else None
    given = _digest(token or "")
    if not hmac.compare_digest(given, session.token_sha256 if session else _NO_SESSION) or (
        session is None
    ):
        raise UnauthenticatedError(
            "the bearer token opens no tool session at this address: send the tools_token of "
            "the case payload this URL came with (Authorization: Bearer <tools_token>)",
            field="Authorization",
        )
    if not session.open or _now_ms(c) >= session.until_ms:
        raise ForbiddenError(
            "the eval attempt this token was given for has ended: its tools take no more calls",
            field="Authorization",
        )
    return session


def toolbox(c: Container, session: ToolSession) -> ToolBox:
    """The attempt's `ToolBox` as the session holds it, with no calls (one per call)."""
    return tool_calls.from_state(
        c, session.org_id, session.run_id, session.attempt_key, session.box, session.consumed
    )


def _kept_text(call: ToolCall, kept_bytes: int) -> str:
    """The call as the session keeps it (JSON text), within `MAX_KEPT_BYTES` of kept calls."""
    data = tool_calls.calls_json([call])[0]
    text = json.dumps(data, ensure_ascii=False)
    for drop in ("result", "arguments"):
        if kept_bytes + len(text.encode("utf-8")) <= MAX_KEPT_BYTES:
            break
        data[drop] = {"_dropped": f"the attempt's kept calls reached {MAX_KEPT_BYTES} bytes"}
        text = json.dumps(data, ensure_ascii=False)
    return text


def call(
    c: Container,
    org_id: str,
    run_id: str,
    session_id: str,
    token: str | None,
    tool_name: str,
    arguments: Any,
) -> ToolReply:
    """One call an agent makes through the gateway: authenticated (`authenticate`), then
    `call_in`. Two AWS requests beyond the tool's own, and one more read per lost race.

    Returns what the call came to (`ToolReply.for_agent()` is what the agent is answered).

    Raises: as `authenticate` and `call_in`; each refusal keeps nothing and makes nothing.
    """
    session = authenticate(c, org_id, run_id, session_id, token)
    return call_in(c, session, tool_name, arguments)


def call_in(
    c: Container,
    session: ToolSession,
    tool_name: str,
    arguments: Any,
    *,
    unreadable: str | None = None,
) -> ToolReply:
    """One call on a session `authenticate` returned: checked, decided by the isolation rule, made
    if allowed, kept (see the module docstring): one conditional UpdateItem, and one more read
    per lost race.

    `unreadable`: why the request's arguments could not be read as JSON (then `arguments` is
    ignored).

    Raises (each refusal keeps nothing and makes nothing):
        NotFoundError: (field `tool_name`) the attempt has no tool of that name.
        InvalidInputError: (field `arguments`) arguments that are not JSON, not an object, or
            fail the tool's schema, naming the first failing place.
        ForbiddenError: the attempt ended while the call was made (the call was not kept; made
            when it was `executed`).
        ConflictError: (field `session_id`) the record could not be written in `WRITE_TRIES`.
    """
    org_id, run_id, session_id = session.org_id, session.run_id, session.session_id
    box = toolbox(c, session)
    if unreadable is not None:
        if tool_name not in box.tools:
            box.check(tool_name, {})  # the unknown tool's 404 first
        raise InvalidInputError(f"{tool_name}: arguments {unreadable}", field="arguments")
    tool = box.check(tool_name, arguments)
    reply: ToolReply | None = None
    first: list[ToolSession] = [session]  # read already: the first try decides on it

    def read() -> ToolSession | None:
        return first.pop() if first else c.tool_sessions.get(org_id, run_id, session_id)

    def decide(now: ToolSession) -> ToolSession:
        nonlocal box, reply
        if not now.open:
            raise ForbiddenError(_ENDED_DURING, field="Authorization")
        if reply is not None and reply.status is CallStatus.EXECUTED:
            box.consumed = frozenset(now.consumed)  # made once: only its record is written again
        else:  # nothing was made yet: decide on what the session holds now
            if reply is not None:
                box = toolbox(c, now)
            reply = box.call_checked(tool, arguments)
        text = _kept_text(box.calls[-1], now.kept_bytes)
        return replace(
            now,
            calls=(*now.calls, text),
            consumed=tuple(sorted(box.consumed)),
            kept_bytes=now.kept_bytes + len(text.encode("utf-8")),
            version=now.version + 1,
        )

    def write(before: ToolSession, after: ToolSession) -> bool:
        return c.tool_sessions.append(before, after.calls[-1], frozenset(after.consumed))

    try:
        kept = retrying.change(
            read,
            decide,
            write,
            conflict="the attempt's other calls kept changing its tool session: call again",
            field="session_id",
            tries=WRITE_TRIES,
        )
    except ForbiddenError:
        if reply is not None and reply.status is CallStatus.EXECUTED:
            log.warning("a call of %s was made as its attempt ended: not kept", tool_name)
        raise
    if kept is None or reply is None:  # the session is gone (its run was deleted)
        raise ForbiddenError(_ENDED_DURING, field="Authorization")
    return reply


class SessionTools:
    """An attempt's tools as the MCP dispatcher (`services.mcp_gateway.answer`) calls them: each
    call goes through `call_in`, so it is decided, made and kept exactly as a call to
    `{tools_url}/{tool_name}` is."""

    def __init__(self, c: Container, session: ToolSession) -> None:
        self._c, self._session = c, session
        self._box = toolbox(c, session)

    @property
    def tools(self) -> Mapping[str, ToolSpec]:
        """Every tool the attempt may call, by name."""
        return self._box.tools

    def check(self, name: str, arguments: Any) -> ToolSpec:
        """See `ToolBox.check`."""
        return self._box.check(name, arguments)

    def call_checked(self, tool: ToolSpec, arguments: Mapping[str, Any]) -> ToolReply:
        """The call made through `call_in` (kept on the session)."""
        return call_in(self._c, self._session, tool.name, arguments)


def mcp_answer(
    c: Container, session: ToolSession, message: bytes | str
) -> tuple[int, dict[str, Any] | None, dict[str, str]]:
    """What the gateway answers one MCP message POSTed to an attempt's `tools_mcp_url` (the
    session `authenticate` returned): `(HTTP status, JSON-RPC body or None, headers)`, the session
    id as `Mcp-Session-Id` (docs/guides/tools.md, "The tool gateway as an MCP server").

    Raises: as `call_in` for a `tools/call` whose attempt ended while it was made.
    """
    return mcp_gateway.answer(message, SessionTools(c, session), session_id=session.session_id)


def restart(c: Container, session: GatewaySession) -> None:
    """Forget the calls of a try that failed before the attempt is asked again (one UpdateItem):
    the calls kept are those of the try that answered, and its replays start afresh."""
    c.tool_sessions.restart(session.org_id, session.run_id, session.session_id)


def close(c: Container, session: GatewaySession) -> list[ToolCall]:
    """Close the session (one UpdateItem): every call after this is refused (403). Returns the
    calls kept, in the order made."""
    closed = c.tool_sessions.close(session.org_id, session.run_id, session.session_id)
    if closed is None:
        return []
    return [ToolCall.model_validate(json.loads(text)) for text in closed.calls]
