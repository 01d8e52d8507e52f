"""The WSGI wrapper and HTTP server around moto's app (docs/guides/local-stack.md): every AWS
request counted by operation (the benchmarks read the counts), every DynamoDB request serialized
(1.: moto checks conditions, then writes, with no lock: with 24 threads doing the same
conditional put we saw two winners; SQS long polls keep running side by side), the faster paths
of `assay_local.motofast`, and a keep-alive threaded server.
"""

from __future__ import annotations

import email.parser
import http.client
import http.server
import io
import json
import logging
import re
import socket
import sys
import threading
from collections import Counter
from collections.abc import Callable, Iterable
from http import HTTPStatus
from typing import Any
from urllib.parse import parse_qs, unquote

from assay_local import moto_direct, motofast
from assay_local.motostate import GateClosedError, StateGate

log = logging.getLogger(__name__)

EMPTY_RECEIVE_KEY = "sqs.ReceiveMessage.empty"
"""Key of `MotoHandle.requests()` counting ReceiveMessage responses with no message.

A subset of `sqs.ReceiveMessage`, not extra requests: `total_requests()` leaves it out.
"""


# --- request counting and 1. the DynamoDB lock -----------------------------------------------


class RequestCounter:
    """Thread-safe counts of AWS requests keyed `"service.Operation"` (e.g. `dynamodb.PutItem`)."""

    def __init__(self) -> None:
        self._lock = threading.Lock()
        self._counts: Counter[str] = Counter()

    def add(self, key: str) -> None:
        with self._lock:
            self._counts[key] += 1

    def snapshot(self) -> dict[str, int]:
        with self._lock:
            return dict(self._counts)

    def clear(self) -> None:
        with self._lock:
            self._counts.clear()


def _credential_service(environ: dict[str, Any]) -> str | None:
    """The signing service of a SigV4 request (`sqs`, `s3`, ...), from its credential scope."""
    auth = environ.get("HTTP_AUTHORIZATION", "")
    scope = ""
    if "Credential=" in auth:
        scope = auth.split("Credential=", 1)[1].split(",", 1)[0]
    else:  # presigned URL
        scope = parse_qs(environ.get("QUERY_STRING", "")).get("X-Amz-Credential", [""])[0]
    parts = scope.split("/")
    return parts[3] if len(parts) >= 5 else None


def _form_action(environ: dict[str, Any]) -> str | None:
    """`Action` of a query-protocol request; the body is read and put back for moto."""
    action = parse_qs(environ.get("QUERY_STRING", "")).get("Action", [None])[0]
    if action:
        return action
    if not environ.get("CONTENT_TYPE", "").startswith("application/x-www-form-urlencoded"):
        return None
    try:
        length = int(environ.get("CONTENT_LENGTH") or 0)
    except ValueError:
        return None
    body = environ["wsgi.input"].read(length) if length > 0 else b""
    environ["wsgi.input"] = io.BytesIO(body)
    return parse_qs(body.decode("utf-8", "replace")).get("Action", [None])[0]


def _operation(environ: dict[str, Any]) -> str:
    """`"service.Operation"` of one request: X-Amz-Target, else `Action`, else S3's method."""
    target = environ.get("HTTP_X_AMZ_TARGET", "")
    method = environ.get("REQUEST_METHOD", "GET")
    if target.startswith("DynamoDB_"):
        return "dynamodb." + target.split(".", 1)[-1]
    if target.startswith("AmazonSQS."):
        return "sqs." + target.split(".", 1)[-1]
    service = _credential_service(environ) or "unknown"
    if target:
        return f"{service}.{target.split('.', 1)[-1]}"
    if service == "s3":
        return f"s3.{method}"
    action = _form_action(environ)
    return f"{service}.{action or method}"


def _receive_was_empty(status: str, body: bytes) -> bool:
    """True when a 200 ReceiveMessage response (JSON or XML protocol) holds no message."""
    if not status.startswith("200"):
        return False
    stripped = body.lstrip()
    if stripped.startswith(b"{"):
        try:
            return not json.loads(body).get("Messages")
        except ValueError:
            return False
    return b"<Message>" not in body


def _json_response(
    start_response: Callable[..., Any], value: Any, status: str = "200 OK"
) -> list[bytes]:
    """An `application/json` answer of one of our own paths (counts, fast paths, SES)."""
    body = json.dumps(value).encode()
    start_response(
        status, [("Content-Type", "application/json"), ("Content-Length", str(len(body)))]
    )
    return [body]


_READ_ONLY_PREFIXES = ("Get", "BatchGet", "TransactGet", "Describe", "List", "Query", "Scan")


def _changes_state(operation: str) -> bool:
    """Whether a request (`"service.Operation"`, `_operation`'s key) may change moto's state: a
    saved state is written again only after one did. Reads by their names; S3 by its method."""
    service, _, name = operation.partition(".")
    if service == "s3":
        return name not in ("GET", "HEAD")
    return bool(name) and not name.startswith(_READ_ONLY_PREFIXES)


class CountingSerializingApp:
    """WSGI middleware in front of moto: counts requests, serializes DynamoDB ones.

    Responses of serialized requests are read to the end inside the lock, so no DynamoDB work
    (moto may build a body lazily) escapes it.
    """

    def __init__(
        self,
        app: Callable[..., Iterable[bytes]],
        counter: RequestCounter,
        serialize_dynamodb: bool,
        gate: StateGate | None = None,
    ) -> None:
        self._app = app
        self._counter = counter
        self._serialize = serialize_dynamodb
        self._dynamodb_lock = threading.Lock()
        self._gate = gate

    def __call__(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        gate = self._gate
        if gate is None or environ.get("PATH_INFO", "").startswith("/_assay/"):
            return self._route(environ, start_response)
        # A saved state (`assay_local.motostate`): the request, its body included, is handled
        # inside the gate, so a snapshot sees it whole or not at all.
        try:
            with gate.shared():
                status, body = self._buffered(environ, start_response, None)
        except GateClosedError:
            stopping = {"message": "the local stack is stopping"}
            return _json_response(start_response, stopping, "503 Service Unavailable")
        operation = environ.get("assay.operation", "")
        if _changes_state(operation) and not (
            operation == "sqs.ReceiveMessage" and _receive_was_empty(status, body[0])
        ):
            gate.touch()
        return body

    def _route(
        self, environ: dict[str, Any], start_response: Callable[..., Any]
    ) -> Iterable[bytes]:
        path = environ.get("PATH_INFO", "")
        if path.startswith(COUNTS_PATH):
            # The counts of a server in another process (`start_moto_process`) are read over HTTP.
            if environ.get("REQUEST_METHOD") == "POST":
                self._counter.clear()
            return _json_response(start_response, self._counter.snapshot())
        if path.startswith(FAST_PATHS_PATH):
            return _json_response(
                start_response,
                {"hits": dict(motofast.FAST_HITS), "mismatches": motofast.MISMATCHES},
            )
        if path.startswith(SES_SENT_PATH):
            return _json_response(start_response, _ses_sent())
        if path.startswith("/moto-api"):
            environ["assay.operation"] = "moto-api.POST"  # a reset changes everything
            return self._app(environ, start_response)
        operation = environ["assay.operation"] = _operation(environ)
        self._counter.add(operation)
        service = operation.split(".", 1)[0]
        if operation.startswith("dynamodb.") and self._serialize:
            with self._dynamodb_lock:
                return self._buffered(environ, start_response, service)[1]
        if operation == "sqs.ReceiveMessage":
            status, body = self._buffered(environ, start_response, service)
            if _receive_was_empty(status, body[0]):
                self._counter.add(EMPTY_RECEIVE_KEY)
            return body
        answered = moto_direct.direct(environ, start_response, service)
        if answered is not None:
            return answered
        return self._app(environ, start_response)

    def _buffered(
        self, environ: dict[str, Any], start_response: Callable[..., Any], service: str | None
    ) -> tuple[str, list[bytes]]:
        """`(status, [body])` of the request read to its end: through `motofast` or moto's app
        for `service`, or through `_route` (None)."""
        seen: list[str] = []

        def capture(status: str, headers: Any, exc_info: Any = None) -> Any:
            seen.append(status)
            return (
                start_response(status, headers, exc_info)
                if exc_info
                else start_response(status, headers)
            )

        result: Iterable[bytes]
        if service is None:
            result = self._route(environ, capture)
        else:
            direct = moto_direct.direct(environ, capture, service)
            if direct is not None:
                return (seen[0] if seen else ""), direct
            result = self._app(environ, capture)
        try:
            body = b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        return (seen[0] if seen else ""), [body]


# --- the server ------------------------------------------------------------------------------

_HEADER_LINE = re.compile(r"([\x21-\x39\x3b-\x7e]+):([^\r\n]*\r?\n)\Z")
"""A header line the `email` parser reads as `Name: value`: a name of printable characters but
the colon, the value to the end of the line (no other line break inside)."""


class _KeepAliveHandler(http.server.BaseHTTPRequestHandler):
    """HTTP/1.1 with keep-alive in front of a WSGI app.

    werkzeug's development server (what moto ships) closes the connection after every response,
    so each AWS request paid a TCP handshake and a new server thread. Our clients (botocore,
    PynamoDB) keep connections open; this handler serves request after request on one
    connection. Request bodies come with Content-Length or chunked; responses always carry a
    Content-Length (the app's body is buffered).
    """

    protocol_version = "HTTP/1.1"
    disable_nagle_algorithm = True  # status line, headers and body leave in one flush anyway

    def log_message(self, format: str, *args: Any) -> None:  # noqa: A002 - one line per request is noise
        pass

    def parse_request(self) -> bool:
        """The standard library's `parse_request` (request line, `Connection`, `Expect`), with
        the headers read by `_headers` instead of through the `email` package (a tenth of
        moto's process per request); the same checks and errors."""
        self.command = None  # type: ignore[assignment]
        self.request_version = version = self.default_request_version
        self.close_connection = True
        requestline = str(self.raw_requestline, "iso-8859-1").rstrip("\r\n")
        self.requestline = requestline
        words = requestline.split()
        if len(words) == 0:
            return False
        if len(words) >= 3:  # enough to determine protocol version
            version = words[-1]
            try:
                if not version.startswith("HTTP/"):
                    raise ValueError
                base_version_number = version.split("/", 1)[1]
                version_numbers = base_version_number.split(".")
                if len(version_numbers) != 2:
                    raise ValueError
                if any(not c.isdigit() for c in version_numbers):
                    raise ValueError("non digit in http version")
                if any(len(c) > 10 for c in version_numbers):
                    raise ValueError("unreasonable length http version")
                version_number = int(version_numbers[0]), int(version_numbers[1])
            except (ValueError, IndexError):
                self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request version ({version!r})")
                return False
            if version_number >= (1, 1) and self.protocol_version >= "HTTP/1.1":
                self.close_connection = False
            if version_number >= (2, 0):
                self.send_error(
                    HTTPStatus.HTTP_VERSION_NOT_SUPPORTED,
                    f"Invalid HTTP version ({base_version_number})",
                )
                return False
            self.request_version = version
        if not 2 <= len(words) <= 3:
            self.send_error(HTTPStatus.BAD_REQUEST, f"Bad request syntax ({requestline!r})")
            return False
        command, path = words[:2]
        if len(words) == 2:
            self.close_connection = True
            if command != "GET":
                self.send_error(HTTPStatus.BAD_REQUEST, f"Bad HTTP/0.9 request type ({command!r})")
                return False
        self.command, self.path = command, path
        if self.path.startswith("//"):
            self.path = "/" + self.path.lstrip("/")  # Reduce to a single /
        try:
            self.headers = self._headers()
        except http.client.LineTooLong as err:
            self.send_error(HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Line too long", str(err))
            return False
        except http.client.HTTPException as err:
            self.send_error(
                HTTPStatus.REQUEST_HEADER_FIELDS_TOO_LARGE, "Too many headers", str(err)
            )
            return False
        conntype = self.headers.get("Connection", "")
        if conntype.lower() == "close":
            self.close_connection = True
        elif conntype.lower() == "keep-alive" and self.protocol_version >= "HTTP/1.1":
            self.close_connection = False
        expect = self.headers.get("Expect", "")
        if (
            expect.lower() == "100-continue"
            and self.protocol_version >= "HTTP/1.1"
            and self.request_version >= "HTTP/1.1"
        ):
            if not self.handle_expect_100():
                return False
        return True

    def _headers(self) -> http.client.HTTPMessage:
        """The request's headers as `http.client.parse_headers` gives them: its line and count
        limits, then each plain `Name: value` line taken as the `email` parser takes it (the
        value from the first character that is not a space or tab, line end dropped). Anything
        else (a folded line, a name the parser would not take) goes through that parser."""
        lines = http.client._read_headers(self.rfile)  # type: ignore[attr-defined]
        text = b"".join(lines).decode("iso-8859-1")
        message = http.client.HTTPMessage()
        headers = []
        for raw in lines:
            line = raw.decode("iso-8859-1")
            if line in ("\r\n", "\n"):
                break
            found = _HEADER_LINE.match(line)
            if found is None:
                return email.parser.Parser(_class=http.client.HTTPMessage).parsestr(text)  # type: ignore[return-value]
            headers.append((found.group(1), found.group(2).lstrip(" \t").rstrip("\r\n")))
        message._headers = headers  # type: ignore[attr-defined]
        return message

    def _body(self) -> bytes:
        length = self.headers.get("Content-Length")
        if length is not None:
            return self.rfile.read(int(length))
        if "chunked" in (self.headers.get("Transfer-Encoding") or "").lower():
            chunks = []
            while True:
                size = int(self.rfile.readline().split(b";")[0].strip() or b"0", 16)
                if size == 0:
                    while self.rfile.readline() not in (b"\r\n", b"\n", b""):
                        pass
                    return b"".join(chunks)
                chunks.append(self.rfile.read(size))
                self.rfile.readline()
        return b""

    def _environ(self, body: bytes) -> dict[str, Any]:
        path, _, query = self.path.partition("?")
        environ: dict[str, Any] = {
            "REQUEST_METHOD": self.command,
            "SCRIPT_NAME": "",
            "PATH_INFO": unquote(path),
            "QUERY_STRING": query,
            "RAW_URI": self.path,
            "REQUEST_URI": self.path,
            "SERVER_NAME": self.server.server_address[0],
            "SERVER_PORT": str(self.server.server_address[1]),
            "SERVER_PROTOCOL": self.request_version,
            "REMOTE_ADDR": self.client_address[0],
            "CONTENT_LENGTH": str(len(body)),
            "wsgi.version": (1, 0),
            "wsgi.url_scheme": "http",
            "wsgi.input": io.BytesIO(body),
            "wsgi.errors": sys.stderr,
            "wsgi.multithread": True,
            "wsgi.multiprocess": False,
            "wsgi.run_once": False,
        }
        if self.headers.get("Content-Type"):
            environ["CONTENT_TYPE"] = self.headers["Content-Type"]
        for name, value in self.headers.items():
            key = "HTTP_" + name.upper().replace("-", "_")
            if key in ("HTTP_CONTENT_TYPE", "HTTP_CONTENT_LENGTH"):
                continue
            environ[key] = f"{environ[key]},{value}" if key in environ else value
        return environ

    def _serve(self) -> None:
        body = self._body()
        state: dict[str, Any] = {}

        def start_response(
            status: str, headers: list[tuple[str, str]], exc_info: Any = None
        ) -> Any:
            state["status"], state["headers"] = status, headers
            return lambda data: state.setdefault("written", []).append(data)

        result = self.server.app(self._environ(body), start_response)  # type: ignore[attr-defined]
        try:
            payload = b"".join(state.get("written", [])) + b"".join(result)
        finally:
            close = getattr(result, "close", None)
            if close is not None:
                close()
        code, _, reason = state["status"].partition(" ")
        self.send_response_only(int(code), reason)
        for name, value in state["headers"]:
            if name.lower() not in ("content-length", "connection", "transfer-encoding"):
                self.send_header(name, value)
        self.send_header("Content-Length", str(len(payload)))
        self.end_headers()
        if self.command != "HEAD":
            self.wfile.write(payload)

    do_GET = do_POST = do_PUT = do_DELETE = do_HEAD = do_PATCH = do_OPTIONS = _serve


class KeepAliveWSGIServer(http.server.ThreadingHTTPServer):
    """A threaded HTTP server for a WSGI app, one thread per kept-alive connection.

    `sock`: a socket already bound and listening (handed over by another process,
    `motoserver.spawn_moto_process`) to serve instead of binding `address`.
    """

    daemon_threads = True

    def __init__(
        self,
        address: tuple[str, int],
        app: Callable[..., Iterable[bytes]],
        sock: socket.socket | None = None,
    ) -> None:
        self.app = app
        super().__init__(address, _KeepAliveHandler, bind_and_activate=sock is None)
        if sock is not None:
            self.socket.close()
            self.socket = sock
            self.server_address = sock.getsockname()[:2]
            self.server_name, self.server_port = self.server_address


COUNTS_PATH = "/_assay/requests"
"""GET: the request counts as JSON; POST: zero them (served by our middleware, not moto)."""

SES_SENT_PATH = "/_assay/ses/sent"
FAST_PATHS_PATH = "/_assay/fast-paths"
"""`GET`: `{"hits": {"service.Operation": n}, "mismatches": [...]}` of `assay_local.motofast` (a
server in another process is checked over HTTP; `ASSAY_MOTO_VERIFY=1` makes it compare)."""
"""GET: every email moto's SES accepted, as JSON (moto keeps them only in its own process)."""


def _ses_sent() -> list[dict[str, Any]]:
    from moto.ses import ses_backends

    out = []
    for account in ses_backends.values():
        for backend in account.values():
            for m in backend.sent_messages:
                out.append(
                    {
                        "source": getattr(m, "source", None),
                        "destinations": getattr(m, "destinations", None),
                        "subject": getattr(m, "subject", None),
                        "body": getattr(m, "body", None),
                    }
                )
    return out
