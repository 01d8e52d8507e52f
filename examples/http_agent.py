#!/usr/bin/env python3
"""An example agent that answers assay's `http` runtime: a small arithmetic solver.

Python's standard library only; run it beside `assay dev`:

    python examples/http_agent.py --port 8765

and give assay the spec in `examples/http-agent.json`
(`{"runtime": "http", "url": "http://127.0.0.1:8765/"}`).

The contract (what assay sends and reads back):

- assay POSTs one case per request, `Content-Type: application/json`, with the body
  `{"run_id", "case_id", "attempt", "input", "history": [{"role", "content"}], "metadata":
  {"tags": [...]}}`. `attempt` is 1 for the first answer and 2.. for the reruns of a flip.
- The agent answers 200 with `{"answer": "<text>"}` and, optionally, `"calls"` (the tool calls it
  made: `[{"name", "arguments", "status"?, "result"?}]`), `"usage"` (`{"input_tokens",
  "output_tokens"}`), `"model"` and `"cost_usd"`.
- `{"error": "...", "crash": true}` says the agent's own run failed (the attempt is `failed`, a
  crash); a 5xx, 408 or 429 is retried and then leaves the attempt `incomplete`; a 401/403 is
  "credentials rejected".
- Headers the spec names are sent as written, or from one of the organization's secrets:
  `"headers": {"Authorization": {"secret": "agent-key", "prefix": "Bearer "}}`. Started with
  `--token-env VAR`, this agent requires `Authorization: Bearer <the value of VAR>`.

What it solves: the arithmetic in the question, e.g. "What is 12 * (3 + 4)?" or "What is 7
divided by 2?" (`plus`, `minus`, `times`, `multiplied by`, `divided by`, `over` are read as
operators). It shows its working and ends with `#### <number>`, the line assay's
`numeric_answer` scorer reads first. A question without arithmetic gets an honest "I cannot
find arithmetic in this question" (graded as a wrong answer, not a crash).

Two paths give two behaviours, so a draft can change what it does by changing its URL:

- `POST /` works exactly (7 / 2 = 3.5);
- `POST /integer` divides with integers (7 / 2 = 3): a plausible "optimization" whose
  regressions an eval run confirms.
"""

from __future__ import annotations

import argparse
import ast
import json
import operator
import os
import re
import sys
from decimal import Decimal, DivisionByZero, InvalidOperation, localcontext
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from typing import Any

MODEL = "arith-solver-1"
"""What the agent reports as its `model`."""

MAX_BODY_BYTES = 1_048_576
"""The largest request body read; a larger one is refused with 413."""

_WORDS = (
    (r"\bmultiplied by\b", "*"),
    (r"\bdivided by\b", "/"),
    (r"\btimes\b", "*"),
    (r"\bplus\b", "+"),
    (r"\bminus\b", "-"),
    (r"\bover\b", "/"),
    (r"×", "*"),
    (r"÷", "/"),
)
_EXPRESSION = re.compile(r"[\d.()+\-*/\s]*\d[\d.()+\-*/\s]*")
_OPERATORS: dict[type, Any] = {
    ast.Add: operator.add,
    ast.Sub: operator.sub,
    ast.Mult: operator.mul,
    ast.Div: operator.truediv,
    ast.FloorDiv: operator.floordiv,
}


class NoArithmeticError(ValueError):
    """The question holds no arithmetic this agent can work out."""


def _evaluate(node: ast.AST, integer: bool) -> Decimal:
    """The value of a parsed expression of numbers, + - * / and parentheses (nothing else)."""
    if isinstance(node, ast.Expression):
        return _evaluate(node.body, integer)
    if isinstance(node, ast.Constant) and isinstance(node.value, int | float):
        return Decimal(str(node.value))
    if isinstance(node, ast.UnaryOp) and isinstance(node.op, ast.USub | ast.UAdd):
        value = _evaluate(node.operand, integer)
        return -value if isinstance(node.op, ast.USub) else value
    if isinstance(node, ast.BinOp) and type(node.op) in _OPERATORS:
        op = type(node.op)
        if integer and op is ast.Div:
            op = ast.FloorDiv
        return _OPERATORS[op](_evaluate(node.left, integer), _evaluate(node.right, integer))
    raise NoArithmeticError("only numbers, + - * / and parentheses are worked out")


def solve(question: str, integer: bool = False) -> tuple[str, Decimal]:
    """Find the arithmetic in `question` and work it out.

    Args:
        question: e.g. "What is 40 + 2?" or "What is 9 divided by 4?".
        integer: divide with integers (9 / 4 = 2), as the `/integer` path does.

    Returns:
        (the expression as read, its value).

    Raises:
        NoArithmeticError: nothing in the question is arithmetic that can be worked out.
    """
    text = question.lower()
    for pattern, symbol in _WORDS:
        text = re.sub(pattern, f" {symbol} ", text)
    text = re.sub(r"(?<=\d),(?=\d{3})", "", text)  # 1,000 is one thousand
    candidates = [m.group(0).strip() for m in _EXPRESSION.finditer(text)]
    candidates = [c.rstrip(".").strip() for c in candidates if re.search(r"\d\s*[-+*/]", c)]
    if not candidates:
        raise NoArithmeticError("no arithmetic in the question")
    expression = max(candidates, key=len)
    try:
        tree = ast.parse(expression, mode="eval")
        with localcontext() as ctx:
            ctx.prec = 28
            ctx.traps[DivisionByZero] = True
            value = _evaluate(tree, integer)
    except (SyntaxError, InvalidOperation, DivisionByZero, ZeroDivisionError) as exc:
        raise NoArithmeticError(f"cannot work out {expression!r}") from exc
    return " ".join(expression.split()), value


def _number(value: Decimal) -> str:
    """`value` without trailing zeros or an exponent: 3.50 -> "3.5", 4E+1 -> "40"."""
    text = format(value.normalize(), "f")
    return text.rstrip("0").rstrip(".") if "." in text else text


def answer(case: dict[str, Any], integer: bool = False) -> dict[str, Any]:
    """The answer payload for one case assay sent.

    Args:
        case: the request body, `{"run_id", "case_id", "attempt", "input", "history",
            "metadata"}`.
        integer: divide with integers.

    Returns:
        `{"answer", "usage", "model"}`: the working and `#### <number>`, or a refusal to guess.
    """
    question = case.get("input") or ""
    try:
        expression, value = solve(question, integer=integer)
        text = f"{expression} = {_number(value)}\n#### {_number(value)}"
    except NoArithmeticError:
        text = "I cannot find arithmetic in this question."
    return {
        "answer": text,
        "usage": {"input_tokens": len(question.split()), "output_tokens": len(text.split())},
        "model": MODEL,
    }


class AgentHandler(BaseHTTPRequestHandler):
    """Answers `POST /` (exact) and `POST /integer` (integer division) with the answer payload."""

    server_version = "assay-example-agent/1"
    token: str | None = None
    """The bearer token required in `Authorization`, or None for none."""

    def do_POST(self) -> None:
        path = self.path.split("?", 1)[0]
        if path not in ("/", "/integer"):
            self._reply(404, {"error": f"no agent at {path}; POST / or /integer", "crash": True})
            return
        if self.token is not None and self.headers.get("Authorization") != f"Bearer {self.token}":
            self._reply(401, {"error": "a bearer token is required"})
            return
        length = int(self.headers.get("Content-Length") or 0)
        if length > MAX_BODY_BYTES:
            self._reply(413, {"error": "the case is too large for this agent", "crash": True})
            return
        try:
            case = json.loads(self.rfile.read(length) or b"{}")
        except ValueError:
            self._reply(400, {"error": "the body is not JSON", "crash": True})
            return
        if not isinstance(case, dict) or not isinstance(case.get("input"), str):
            self._reply(400, {"error": "the body has no input text", "crash": True})
            return
        self._reply(200, answer(case, integer=path == "/integer"))

    def do_GET(self) -> None:
        self._reply(200, {"agent": MODEL, "ask": "POST / or /integer with a case"})

    def _reply(self, status: int, body: dict[str, Any]) -> None:
        data = json.dumps(body).encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", "application/json")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def log_message(self, format: str, *args: Any) -> None:
        if not self.server.quiet:  # type: ignore[attr-defined]
            super().log_message(format, *args)


def main(argv: list[str] | None = None) -> int:
    """Serve the agent on 127.0.0.1 until Ctrl-C; print one line once it listens."""
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--host", default="127.0.0.1", help="the address (default 127.0.0.1)")
    parser.add_argument("--port", type=int, default=8765, help="the port (default 8765; 0: any)")
    parser.add_argument(
        "--token-env",
        metavar="VAR",
        help="require 'Authorization: Bearer <the value of VAR>' (store it as a secret in assay)",
    )
    parser.add_argument("--quiet", action="store_true", help="no line per request")
    args = parser.parse_args(argv)
    if args.token_env:
        token = os.environ.get(args.token_env)
        if not token:
            parser.error(f"--token-env {args.token_env}: that variable is not set")
        AgentHandler.token = token
    server = ThreadingHTTPServer((args.host, args.port), AgentHandler)
    server.quiet = args.quiet  # type: ignore[attr-defined]
    host, port = server.server_address[:2]
    print(f"example agent on http://{host}:{port}/ (exact) and /integer", flush=True)
    try:
        server.serve_forever()
    except KeyboardInterrupt:
        pass
    finally:
        server.server_close()
    return 0


if __name__ == "__main__":
    sys.exit(main())
