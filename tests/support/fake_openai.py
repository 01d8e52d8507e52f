"""A scripted, OpenAI-compatible chat-completions server for tests (stdlib only).

Run it as a subprocess; it binds 127.0.0.1 only and prints its port as the first stdout line::

    python tests/support/fake_openai.py --port 0 --script script.json

Endpoints:

- ``POST /chat/completions`` and ``POST /v1/chat/completions``: answers per the script.
- ``GET /_requests``: every chat request received so far, oldest first, as
  ``[{"path", "headers", "body"}]`` (headers lower-cased).
- ``POST /_script``: replace the script (body: a script object); resets the counters.
- ``POST /_reset``: forget recorded requests and rule counters.

A script is ``{"rules": [rule, ...], "default": rule}``. The first rule whose matcher fits the
request's last user message wins; with none, ``default`` applies (default: echo). Matchers (all
given must hold): ``match`` (exact text), ``contains`` (substring), ``regex`` (re.search),
``match_model`` (the request's model). Behaviour keys of a rule:

- ``answer``: the assistant's content (string; a JSON object is sent as its JSON text, handy for
  judges returning grades); ``"answer": null`` sends content null. Without ``answer`` (and
  without ``tool_calls``/``refusal``), or with ``echo: true``, it answers
  ``"echo: <last user message>"``.
- ``tool_calls``: ``[{"name": ..., "arguments": {...} | "raw json text"}]``; content is null
  and finish_reason ``tool_calls`` unless ``answer`` is also given.
- ``usage``: ``{"prompt_tokens", "completion_tokens"}``; default: word counts.
- ``model``: the response's model; default the request's.
- ``finish_reason``: the choice's finish_reason, overriding ``stop``/``tool_calls`` (e.g.
  ``"content_filter"`` for a provider content-filter block; give ``"answer": null`` for one
  without content, or ``answer`` for partial content).
- ``refusal``: a model refusal (OpenAI structured outputs): the message gets this
  ``refusal`` string and content null (``answer`` is ignored).
- ``status`` + ``error``: always answer this HTTP status with an OpenAI-style error body.
- ``fail_status`` + ``fail_times``: answer ``fail_status`` for the first N matching requests,
  then succeed (per rule, counted across the process until ``/_reset``).
- ``delay_ms``: sleep before answering.
- ``raw``: send this JSON body verbatim (with ``status``, default 200).
- ``turns``: ``[behaviour, ...]`` for an agent's tool loop: the behaviour (rule keys above) for
  the request's turn, laid over the rule's own keys. A request's turn is the number of assistant
  messages after its last user message (0 for the first request of a case, 1 once the agent
  answered with tool calls and their results, ...); past the list, its last entry. Decided by
  the conversation, never by counters, so concurrent attempts each get their own turns.
- In ``tool_calls`` arguments, ``{turn}`` and ``{input}`` inside a string are replaced by the
  turn number and the last user message (e.g. ``{"page": "{turn}"}``: a different call each turn).
- ``echo_tools: true``: the answer is the content of every tool (or function) message after the
  last user message, one per line (what the tools returned, as the agent was given it).

Use ``FakeOpenAI`` (below) from tests to start, query and stop it.
"""

from __future__ import annotations

import argparse
import json
import re
import subprocess
import sys
import threading
import time
import urllib.request
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from pathlib import Path
from typing import Any

DEFAULT_RULE: dict[str, Any] = {"echo": True}


class ScriptState:
    """The script, per-rule counters and received requests, shared by handler threads."""

    def __init__(self, script: dict[str, Any] | None = None) -> None:
        self.lock = threading.Lock()
        self.requests: list[dict[str, Any]] = []
        self.set_script(script or {})

    def set_script(self, script: dict[str, Any]) -> None:
        with self.lock:
            self.rules: list[dict[str, Any]] = list(script.get("rules") or [])
            self.default: dict[str, Any] = script.get("default") or DEFAULT_RULE
            self.counts: dict[int, int] = {}

    def reset(self) -> None:
        with self.lock:
            self.requests.clear()
            self.counts.clear()

    def pick(self, body: dict[str, Any]) -> tuple[dict[str, Any], int]:
        """The rule for this request and how many times it matched before (0-based)."""
        text = last_user_text(body)
        with self.lock:
            for index, rule in enumerate(self.rules):
                if rule_matches(rule, text, body):
                    seen = self.counts.get(index, 0)
                    self.counts[index] = seen + 1
                    return rule, seen
            seen = self.counts.get(-1, 0)
            self.counts[-1] = seen + 1
            return self.default, seen


def last_user_text(body: dict[str, Any]) -> str:
    """Text of the last user message (text parts joined), "" when there is none."""
    for message in reversed(body.get("messages") or []):
        if isinstance(message, dict) and message.get("role") == "user":
            content = message.get("content")
            if isinstance(content, list):
                return "".join(p.get("text", "") for p in content if isinstance(p, dict))
            return "" if content is None else str(content)
    return ""


def turn_of(body: dict[str, Any]) -> int:
    """The request's turn of a tool loop: assistant messages after its last user message."""
    turn = 0
    for message in reversed(body.get("messages") or []):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            break
        if message.get("role") == "assistant":
            turn += 1
    return turn


def tool_results(body: dict[str, Any]) -> list[str]:
    """The content of every tool (or function) message after the last user message, in order."""
    out: list[str] = []
    for message in reversed(body.get("messages") or []):
        if not isinstance(message, dict):
            continue
        if message.get("role") == "user":
            break
        if message.get("role") in ("tool", "function"):
            out.append(str(message.get("content") or ""))
    return out[::-1]


def _fill(value: Any, turn: int, text: str) -> Any:
    if isinstance(value, str):
        return value.replace("{turn}", str(turn)).replace("{input}", text)
    if isinstance(value, dict):
        return {k: _fill(v, turn, text) for k, v in value.items()}
    if isinstance(value, list):
        return [_fill(v, turn, text) for v in value]
    return value


def at_turn(rule: dict[str, Any], body: dict[str, Any]) -> dict[str, Any]:
    """The rule as it applies to this request: its ``turns`` entry laid over it, and ``{turn}`` /
    ``{input}`` filled in its tool calls' arguments."""
    turn = turn_of(body)
    out = {k: v for k, v in rule.items() if k != "turns"}
    turns = rule.get("turns") or []
    if turns:
        out.update(turns[min(turn, len(turns) - 1)])
    if out.get("tool_calls"):
        text = last_user_text(body)
        out["tool_calls"] = [
            {**call, "arguments": _fill(call.get("arguments"), turn, text)}
            for call in out["tool_calls"]
        ]
    return out


def rule_matches(rule: dict[str, Any], text: str, body: dict[str, Any]) -> bool:
    if "match" in rule and text != rule["match"]:
        return False
    if "contains" in rule and rule["contains"] not in text:
        return False
    if "regex" in rule and not re.search(rule["regex"], text):
        return False
    if "match_model" in rule and body.get("model") != rule["match_model"]:
        return False
    return True


def completion(rule: dict[str, Any], body: dict[str, Any], serial: int) -> dict[str, Any]:
    """The chat.completion object a rule answers with."""
    text = last_user_text(body)
    content: Any = rule.get("answer")
    refusal = rule.get("refusal")
    if rule.get("echo_tools"):
        content = "\n".join(tool_results(body))
    elif rule.get("echo") or (
        "answer" not in rule and not rule.get("tool_calls") and refusal is None
    ):
        content = f"echo: {text}"
    if refusal is not None:
        content = None
    if content is not None and not isinstance(content, str):
        content = json.dumps(content)
    message: dict[str, Any] = {"role": "assistant", "content": content}
    if refusal is not None:
        message["refusal"] = refusal
    finish = "stop"
    if rule.get("tool_calls"):
        message["tool_calls"] = [
            {
                "id": f"call_{serial}_{i}",
                "type": "function",
                "function": {
                    "name": call["name"],
                    "arguments": call["arguments"]
                    if isinstance(call.get("arguments"), str)
                    else json.dumps(call.get("arguments") or {}),
                },
            }
            for i, call in enumerate(rule["tool_calls"])
        ]
        finish = "tool_calls"
    finish = rule.get("finish_reason") or finish
    usage = rule.get("usage") or {
        "prompt_tokens": sum(
            len(str(m.get("content") or "").split()) for m in body.get("messages") or []
        ),
        "completion_tokens": len((content or refusal or "").split()),
    }
    total = usage.get("prompt_tokens", 0) + usage.get("completion_tokens", 0)
    usage = {**usage, "total_tokens": total}
    return {
        "id": f"chatcmpl-fake-{serial}",
        "object": "chat.completion",
        "created": int(time.time()),
        "model": rule.get("model") or body.get("model") or "fake-model",
        "choices": [{"index": 0, "message": message, "finish_reason": finish}],
        "usage": usage,
    }


def error_body(status: int, message: str | None) -> dict[str, Any]:
    return {
        "error": {
            "message": message or f"scripted error {status}",
            "type": "fake_error",
            "code": status,
        }
    }


def make_handler(state: ScriptState) -> type[BaseHTTPRequestHandler]:
    class Handler(BaseHTTPRequestHandler):
        protocol_version = "HTTP/1.1"

        def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - stdlib name
            pass  # keep test output clean

        def _send(self, status: int, payload: Any) -> None:
            data = json.dumps(payload).encode("utf-8")
            try:
                self.send_response(status)
                self.send_header("content-type", "application/json")
                self.send_header("content-length", str(len(data)))
                self.end_headers()
                self.wfile.write(data)
            except (BrokenPipeError, ConnectionResetError):
                pass  # the client gave up (a timeout test); nothing to tell it

        def _body(self) -> Any:
            length = int(self.headers.get("content-length") or 0)
            raw = self.rfile.read(length) if length else b""
            return json.loads(raw) if raw else {}

        def do_GET(self) -> None:  # noqa: N802 - stdlib name
            if self.path == "/_requests":
                with state.lock:
                    self._send(200, list(state.requests))
            elif self.path == "/_health":
                self._send(200, {"ok": True})
            else:
                self._send(404, error_body(404, f"no route GET {self.path}"))

        def do_POST(self) -> None:  # noqa: N802 - stdlib name
            try:
                body = self._body()
            except ValueError:
                self._send(400, error_body(400, "body is not JSON"))
                return
            if self.path == "/_script":
                state.set_script(body)
                self._send(200, {"ok": True})
                return
            if self.path == "/_reset":
                state.reset()
                self._send(200, {"ok": True})
                return
            if self.path.rstrip("/") not in ("/chat/completions", "/v1/chat/completions"):
                self._send(404, error_body(404, f"no route POST {self.path}"))
                return
            with state.lock:
                serial = len(state.requests)
                state.requests.append(
                    {
                        "path": self.path,
                        "headers": {k.lower(): v for k, v in self.headers.items()},
                        "body": body,
                    }
                )
            rule, seen = state.pick(body if isinstance(body, dict) else {})
            rule = at_turn(rule, body if isinstance(body, dict) else {})
            if rule.get("delay_ms"):
                time.sleep(rule["delay_ms"] / 1000)
            if "raw" in rule:
                self._send(int(rule.get("status", 200)), rule["raw"])
            elif rule.get("status"):
                self._send(int(rule["status"]), error_body(int(rule["status"]), rule.get("error")))
            elif rule.get("fail_status") and seen < int(rule.get("fail_times", 1)):
                status = int(rule["fail_status"])
                self._send(status, error_body(status, rule.get("error")))
            else:
                self._send(200, completion(rule, body, serial))

    return Handler


def serve(port: int, script: dict[str, Any] | None) -> ThreadingHTTPServer:
    """Build (not start) a server on 127.0.0.1:`port` (0 = any free port)."""
    server = ThreadingHTTPServer(("127.0.0.1", port), make_handler(ScriptState(script)))
    server.daemon_threads = True  # a delayed answer never holds up shutdown
    return server


def main(argv: list[str] | None = None) -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--port", type=int, default=0, help="port to bind (0: any free port)")
    parser.add_argument("--script", type=Path, help="JSON script file (default: echo)")
    args = parser.parse_args(argv)
    script = json.loads(args.script.read_text(encoding="utf-8")) if args.script else None
    server = serve(args.port, script)
    print(server.server_address[1], flush=True)
    try:
        server.serve_forever(poll_interval=0.1)
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()


class FakeOpenAI:
    """The server as a subprocess, for tests: `with FakeOpenAI(script) as fake: fake.base_url`.

    Args:
        script: the script object (see the module docstring), sent via `/_script` once
            started; None = echo everything (or what `script_file` says).
        script_file: a JSON script file passed as `--script` on the command line.
    """

    def __init__(
        self, script: dict[str, Any] | None = None, script_file: str | Path | None = None
    ) -> None:
        self._script = script
        self._script_file = script_file
        self._process: subprocess.Popen[str] | None = None
        self.port: int | None = None

    @property
    def url(self) -> str:
        """`http://127.0.0.1:<port>` (no path)."""
        return f"http://127.0.0.1:{self.port}"

    @property
    def base_url(self) -> str:
        """The OpenAI-style base URL, `http://127.0.0.1:<port>/v1`."""
        return f"{self.url}/v1"

    def start(self, timeout_s: float = 10.0) -> FakeOpenAI:
        """Start the subprocess and wait for its port line.

        Raises:
            RuntimeError: it exited or printed no port within `timeout_s` seconds.
        """
        command = [sys.executable, str(Path(__file__).resolve()), "--port", "0"]
        if self._script_file is not None:
            command += ["--script", str(self._script_file)]
        # stderr is inherited (pytest captures it) so a handler traceback is never lost and
        # never fills an unread pipe.
        self._process = subprocess.Popen(command, stdout=subprocess.PIPE, text=True)
        line: list[str] = []
        reader = threading.Thread(
            target=lambda: line.append(self._process.stdout.readline()), daemon=True
        )
        reader.start()
        reader.join(timeout_s)
        if not line or not line[0].strip().isdigit():
            self.stop()
            raise RuntimeError("fake OpenAI server did not report its port")
        self.port = int(line[0])
        if self._script is not None:
            self.set_script(self._script)
        return self

    def stop(self) -> None:
        """Terminate the subprocess (kill it if it does not exit within 5 s)."""
        if self._process is None:
            return
        self._process.terminate()
        try:
            self._process.wait(5)
        except subprocess.TimeoutExpired:
            self._process.kill()
            self._process.wait()
        if self._process.stdout:
            self._process.stdout.close()
        self._process = None

    def __enter__(self) -> FakeOpenAI:
        return self.start()

    def __exit__(self, *exc: Any) -> None:
        self.stop()

    def _call(self, method: str, path: str, payload: Any = None) -> Any:
        data = None if payload is None else json.dumps(payload).encode("utf-8")
        req = urllib.request.Request(
            self.url + path, data=data, method=method, headers={"content-type": "application/json"}
        )
        with urllib.request.urlopen(req, timeout=5) as response:  # noqa: S310 - local test server
            return json.loads(response.read())

    def set_script(self, script: dict[str, Any]) -> None:
        """Replace the script (and reset rule counters)."""
        self._call("POST", "/_script", script)

    def reset(self) -> None:
        """Forget recorded requests and rule counters."""
        self._call("POST", "/_reset", {})

    def requests(self) -> list[dict[str, Any]]:
        """Every chat request received since the last reset: `[{path, headers, body}]`."""
        return self._call("GET", "/_requests")


if __name__ == "__main__":
    main()
