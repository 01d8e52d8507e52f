"""An `http` agent and a tool server on 127.0.0.1 for the tool gateway's tests
(docs/guides/tools.md): the agent calls its tools through the gateway the case payload names, and
the tool server counts every request each of its connections' endpoints receives."""

from __future__ import annotations

import json
import threading
from collections import Counter
from collections.abc import Callable
from typing import Any

import httpx

from tests.support.local_http import LocalServer


class ToolServer(LocalServer):
    """Connections' endpoints: `POST /<where>/<connection>/<tool>` (where: `prod` or `test`)
    answers `{"where", "tool", "arguments"}`; `received[(where, connection, tool)]` counts them,
    `calls(where, connection)` lists `(tool, arguments)` in the order received."""

    def __init__(self) -> None:
        self.received: Counter[tuple[str, str, str]] = Counter()
        self._made: list[tuple[str, str, str, Any]] = []
        self._lock = threading.Lock()
        super().__init__(self._answer)

    def calls(self, where: str, connection: str) -> list[tuple[str, Any]]:
        """`(tool, arguments)` of every call the endpoint of `where` for `connection` received."""
        with self._lock:
            return [(t, a) for w, c, t, a in self._made if (w, c) == (where, connection)]

    def url(self, where: str, connection: str) -> str:
        """The URL a connection of `where` (`prod`/`test`) named `connection` is served at."""
        return f"{self.base}/{where}/{connection}"

    def _answer(self, path: str, raw: bytes) -> tuple[int, Any]:
        where, connection, tool = path.strip("/").split("/")[:3]
        arguments = json.loads(raw or b"{}")
        with self._lock:
            self.received[(where, connection, tool)] += 1
            self._made.append((where, connection, tool, arguments))
        return 200, {"where": where, "tool": tool, "arguments": arguments}


def _refusal(reply: httpx.Response) -> tuple[int, str | None]:
    """A refused call's status and the field its error names."""
    return reply.status_code, reply.json().get("error", {}).get("field")


class GatewayAgent(LocalServer):
    """An `http` agent that, asked a case, calls its tools through the gateway and answers
    (`answer(payload)`, default "42").

    It first tries calls the gateway must refuse (`refusals[case_id]`: each one's status and the
    field its error names), then makes
    `calls` (`made[case_id]`: the gateway's answers), and reports one call it never made through
    the gateway (`notify_slack`). Every case payload is kept (`payloads`, by case id): a test
    calls the gateway again after the run with what an attempt was given.
    """

    def __init__(
        self,
        calls: list[tuple[str, dict[str, Any]]],
        answer: Callable[[dict[str, Any]], str] = lambda _payload: "42",
    ) -> None:
        self.calls, self.answer = calls, answer
        self.payloads: dict[str, dict[str, Any]] = {}
        self.refusals: dict[str, dict[str, tuple[int, str | None]]] = {}
        self.made: dict[str, list[dict[str, Any]]] = {}
        self._lock = threading.Lock()
        super().__init__(self._answer)
        self.url = f"{self.base}/agent"

    def _answer(self, path: str, raw: bytes) -> tuple[int, Any]:
        payload = json.loads(raw)
        case_id = payload["case_id"]
        with self._lock:
            others = [p for cid, p in self.payloads.items() if cid != case_id]
            self.payloads[case_id] = payload
        url, token = payload.get("tools_url"), payload.get("tools_token")
        if not url or not token:
            return 200, {"answer": "no gateway"}
        with httpx.Client(timeout=60) as http:

            def post(tool: str, body: Any, bearer: str | None = token) -> httpx.Response:
                headers = {"Authorization": f"Bearer {bearer}"} if bearer else {}
                if isinstance(body, bytes):
                    return http.post(f"{url}/{tool}", content=body, headers=headers)
                return http.post(f"{url}/{tool}", json=body, headers=headers)

            refused = {
                "no_token": _refusal(post("refund", {"order_id": "A1"}, bearer=None)),
                "unknown_tool": _refusal(post("no_such_tool", {})),
                "bad_arguments": _refusal(post("refund", {"order_id": 5})),
                "not_an_object": _refusal(post("refund", [1, 2])),
                "not_json": _refusal(post("refund", b"{nope")),
            }
            if others:  # another attempt's token, on this attempt's address
                refused["other_token"] = _refusal(
                    post("refund", {"order_id": "A1"}, bearer=others[0]["tools_token"])
                )
            made = []
            for tool, arguments in self.calls:
                reply = post(tool, arguments)
                made.append({"status_code": reply.status_code, **reply.json()})
        with self._lock:
            self.refusals[case_id] = refused
            self.made[case_id] = made
        return 200, {
            "answer": self.answer(payload),
            "calls": [
                {"name": "notify_slack", "arguments": {"channel": "#ops"}, "status": "executed"}
            ],
        }


class McpAgent(LocalServer):
    """An `http` agent that takes its tools from MCP: asked a case, it points the MCP SDK's client
    at the case payload's `tools_mcp_url` (the attempt's `tools_token` as bearer), lists the tools,
    makes `calls` and answers "42". `listed[case_id]`: the tool names it was given;
    `results[case_id]`: each call's structured result."""

    def __init__(self, calls: list[tuple[str, dict[str, Any]]]) -> None:
        self.calls = calls
        self.listed: dict[str, list[str]] = {}
        self.results: dict[str, list[Any]] = {}
        self._lock = threading.Lock()
        super().__init__(self._answer)
        self.url = f"{self.base}/agent"

    def _answer(self, path: str, raw: bytes) -> tuple[int, Any]:
        import anyio
        from mcp import ClientSession
        from mcp.client.streamable_http import streamable_http_client

        payload = json.loads(raw)
        url, token = payload.get("tools_mcp_url"), payload.get("tools_token")
        if not url or not token:
            return 200, {"answer": "no gateway"}

        async def steps() -> tuple[list[str], list[Any]]:
            headers = {"Authorization": f"Bearer {token}"}
            async with httpx.AsyncClient(trust_env=False, timeout=60, headers=headers) as client:
                async with streamable_http_client(url, http_client=client) as (read, write, _):
                    async with ClientSession(read, write) as session:
                        await session.initialize()
                        listed = [tool.name for tool in (await session.list_tools()).tools]
                        results = []
                        for tool, arguments in self.calls:
                            reply = await session.call_tool(tool, arguments)
                            results.append(reply.structuredContent)
                        return listed, results

        listed, results = anyio.run(steps)
        with self._lock:
            self.listed[payload["case_id"]] = listed
            self.results[payload["case_id"]] = results
        return 200, {"answer": "42"}
