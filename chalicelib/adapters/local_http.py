"""The shared DynamoDB client's HTTP to a local endpoint, without urllib3 (issue 33).

Against the embedded stack (moto's server on 127.0.0.1) about a third of the service's CPU per
DynamoDB request went to urllib3 and http.client: the pool lookup by URL, the connection check,
header objects built and parsed through the `email` package. `LocalHTTPSession` writes the same
request bytes urllib3 writes (`POST / HTTP/1.1`, `Host`, `Accept-Encoding: identity`, then
botocore's headers in order, then the body) on a kept-alive socket taken from a small pool, and
reads the reply (status line, headers, a `Content-Length` or chunked body, or a body to the
close). A pooled socket the server closed meanwhile is noticed before it is used (as urllib3
does) and another one opened. Failures become botocore's own errors (`EndpointConnectionError`,
`ConnectTimeoutError`, `ReadTimeoutError`, `ConnectionClosedError`), so botocore retries them as
before. Only plain-HTTP endpoints on the loopback address take it (`install`); AWS, LocalStack
elsewhere and any proxy keep botocore's urllib3 session. Such a DynamoDB client also resolves its
endpoint once per operation (`_fixed_endpoint`).
"""

from __future__ import annotations

import select
import socket
import threading
from typing import Any
from urllib.parse import urlsplit

_LOOPBACK = frozenset({"127.0.0.1", "localhost"})
_KEPT = 16
"""Idle connections kept (the pool's size: more threads than that open and close their own)."""


class _Raw:
    """The response body as botocore reads a raw urllib3 response (`stream()`)."""

    def __init__(self, body: bytes) -> None:
        self._body = body

    def stream(self, *_: Any, **__: Any) -> Any:
        yield self._body

    def read(self, *_: Any, **__: Any) -> bytes:
        body, self._body = self._body, b""
        return body

    def close(self) -> None:
        pass


class _Closed(Exception):
    """The server closed the connection before a whole response came."""


class LocalHTTPSession:
    """An HTTP session of botocore's (`send(request) -> AWSResponse`) for one plain-HTTP loopback
    endpoint (`host`, `port`), with `fallback` (botocore's own session) for any request to
    another URL or whose body botocore streams.

    Timeouts (seconds, None for none): `connect_timeout` opening a connection, `read_timeout`
    waiting for each read of the response (as urllib3 applies them).
    """

    def __init__(
        self,
        host: str,
        port: int,
        fallback: Any,
        *,
        connect_timeout: float | None,
        read_timeout: float | None,
    ) -> None:
        self._address = (host, port)
        self._fallback = fallback
        self._connect_timeout = connect_timeout
        self._read_timeout = read_timeout
        self._prefix = f"http://{host}:{port}"
        shown = host if port == 80 else f"{host}:{port}"  # http.client leaves out port 80
        self._host_line = f"Host: {shown}\r\nAccept-Encoding: identity\r\n".encode("latin-1")
        self._idle: list[socket.socket] = []
        self._lock = threading.Lock()

    def send(self, request: Any) -> Any:
        """Send botocore's prepared `request`; returns its `AWSResponse` with the body read.

        Raises botocore's `EndpointConnectionError`, `ConnectTimeoutError`, `ReadTimeoutError`,
        `ConnectionClosedError` or `HTTPClientError`, as its urllib3 session does."""
        from botocore.awsrequest import AWSResponse
        from botocore.exceptions import (
            ConnectionClosedError,
            ConnectTimeoutError,
            EndpointConnectionError,
            HTTPClientError,
            ReadTimeoutError,
        )

        url = request.url
        body = request.body
        if (
            request.stream_output
            or not url.startswith(self._prefix)
            or (body is not None and not isinstance(body, bytes))
            or (getattr(request, "context", None) or {}).get("read_timeout") is not None
        ):
            return self._fallback.send(request)
        path = url[len(self._prefix) :] or "/"
        if not path.startswith("/"):
            return self._fallback.send(request)
        try:
            head = self._head(request.method, path, request.headers)
        except ValueError as exc:  # a header http.client would refuse
            raise HTTPClientError(error=exc) from exc
        message = head + body if body else head
        try:
            sock = self._take()
        except TimeoutError as exc:
            raise ConnectTimeoutError(endpoint_url=url, error=exc) from exc
        except OSError as exc:
            raise EndpointConnectionError(endpoint_url=url, error=exc) from exc
        try:
            sock.sendall(message)
            status, headers, content, keep = self._response(sock, request.method)
        except TimeoutError as exc:
            sock.close()
            raise ReadTimeoutError(endpoint_url=url, error=exc) from exc
        except (OSError, _Closed) as exc:
            sock.close()
            raise ConnectionClosedError(endpoint_url=url, error=exc, request=request) from exc
        except Exception as exc:
            sock.close()
            raise HTTPClientError(error=exc) from exc
        if keep:
            self._give_back(sock)
        else:
            sock.close()
        response = AWSResponse(url, status, headers, _Raw(content))
        response.content  # noqa: B018 - read now, as botocore's session does
        return response

    def close(self) -> None:
        """Close the idle connections (and botocore's own session's)."""
        with self._lock:
            idle, self._idle = self._idle, []
        for sock in idle:
            sock.close()
        self._fallback.close()

    # --- the wire ---------------------------------------------------------------------------

    def _head(self, method: str, path: str, headers: Any) -> bytes:
        """The request line and headers as http.client writes them for urllib3 (values as
        latin-1; a value or name with a line break refused as http.client refuses it)."""
        lines = [f"{method} {path} HTTP/1.1\r\n".encode("latin-1"), self._host_line]
        for name, value in headers.items():
            raw_name = name.encode("ascii") if isinstance(name, str) else bytes(name)
            if isinstance(value, str):
                raw = value.encode("latin-1")
            elif isinstance(value, bytes):
                raw = value
            else:
                raw = str(value).encode("latin-1")
            if b"\r" in raw or b"\n" in raw or b"\r" in raw_name or b"\n" in raw_name:
                raise ValueError(f"Invalid header {name!r}")
            lines.append(raw_name + b": " + raw + b"\r\n")
        lines.append(b"\r\n")
        return b"".join(lines)

    def _take(self) -> socket.socket:
        while True:
            with self._lock:
                sock = self._idle.pop() if self._idle else None
            if sock is None:
                sock = socket.create_connection(self._address, timeout=self._connect_timeout)
                sock.setsockopt(socket.IPPROTO_TCP, socket.TCP_NODELAY, 1)
                sock.settimeout(self._read_timeout)
                return sock
            # A kept connection the server closed (or wrote to) meanwhile reads as ready.
            try:
                ready = select.select([sock], [], [], 0)[0]
            except (OSError, ValueError):
                ready = [sock]
            if not ready:
                return sock
            sock.close()

    def _give_back(self, sock: socket.socket) -> None:
        with self._lock:
            if len(self._idle) < _KEPT:
                self._idle.append(sock)
                return
        sock.close()

    def _response(
        self, sock: socket.socket, method: str
    ) -> tuple[int, list[tuple[str, str]], bytes, bool]:
        """(status, headers as (name, value) pairs, body, whether the connection stays open)."""
        reader = _Reader(sock)
        while True:
            status_line = reader.line()
            version, _, rest = status_line.partition(b" ")
            code = int(rest[:3])
            headers: list[tuple[str, str]] = []
            while True:
                line = reader.line()
                if line in (b"", b"\r\n", b"\n"):
                    if line == b"":
                        raise _Closed("the headers did not end")
                    break
                name, _, value = line.decode("latin-1").partition(":")
                headers.append((name.strip(), value.strip()))
            if code != 100:  # an interim 100 Continue: its headers end, the real reply follows
                break
        found = {name.lower(): value for name, value in headers}
        keep = version == b"HTTP/1.1" and found.get("connection", "").lower() != "close"
        if method == "HEAD" or code in (204, 304) or 100 <= code < 200:
            body = b""
        elif "chunked" in found.get("transfer-encoding", "").lower():
            body = reader.chunked()
        elif "content-length" in found:
            body = reader.exactly(int(found["content-length"]))
        else:
            body, keep = reader.to_close(), False
        return code, _joined(headers), body, keep and not reader.pending()


def _joined(headers: list[tuple[str, str]]) -> list[tuple[str, str]]:
    """The headers with a repeated name's values joined by ", " (as urllib3's header dict)."""
    seen: dict[str, int] = {}
    out: list[tuple[str, str]] = []
    for name, value in headers:
        at = seen.get(name.lower())
        if at is None:
            seen[name.lower()] = len(out)
            out.append((name, value))
        else:
            out[at] = (out[at][0], f"{out[at][1]}, {value}")
    return out


class _Reader:
    """Reads lines and counted bytes from a socket through one buffer."""

    def __init__(self, sock: socket.socket) -> None:
        self._sock = sock
        self._buffer = b""

    def _more(self) -> bool:
        data = self._sock.recv(65536)
        self._buffer += data
        return bool(data)

    def line(self) -> bytes:
        while True:
            end = self._buffer.find(b"\n")
            if end >= 0:
                line, self._buffer = self._buffer[: end + 1], self._buffer[end + 1 :]
                return line
            if len(self._buffer) > 65536:
                raise _Closed("a header line longer than 64 KB")
            if not self._more():
                line, self._buffer = self._buffer, b""
                return line

    def exactly(self, size: int) -> bytes:
        while len(self._buffer) < size:
            if not self._more():
                raise _Closed(f"{len(self._buffer)} of {size} bytes came")
        data, self._buffer = self._buffer[:size], self._buffer[size:]
        return data

    def chunked(self) -> bytes:
        parts: list[bytes] = []
        while True:
            size = int(self.line().split(b";")[0].strip() or b"0", 16)
            if size == 0:
                while self.line() not in (b"\r\n", b"\n", b""):
                    pass
                return b"".join(parts)
            parts.append(self.exactly(size))
            self.line()

    def to_close(self) -> bytes:
        while self._more():
            pass
        data, self._buffer = self._buffer, b""
        return data

    def pending(self) -> bool:
        """Bytes past the response (a server speaking out of turn: the socket is not reused)."""
        return bool(self._buffer)


def is_local(client: Any) -> bool:
    """Whether a botocore client's endpoint is plain HTTP on the loopback address with no proxy:
    the embedded stack's, where the service's own fast paths apply (never AWS's)."""
    parts = urlsplit(getattr(client.meta, "endpoint_url", None) or "")
    return (
        parts.scheme == "http"
        and parts.hostname in _LOOPBACK
        and parts.path in ("", "/")
        and not client.meta.config.proxies
    )


def install(client: Any) -> None:
    """Give a botocore client whose endpoint is plain HTTP on the loopback address a
    `LocalHTTPSession` (botocore's own session kept for anything else); any other client is
    left as it is."""
    endpoint = getattr(client, "_endpoint", None)
    session = getattr(endpoint, "http_session", None)
    if session is None or isinstance(session, LocalHTTPSession) or not is_local(client):
        return
    parts = urlsplit(client.meta.endpoint_url)
    config = client.meta.config
    port = parts.port or 80
    endpoint.http_session = LocalHTTPSession(  # type: ignore[union-attr]
        parts.hostname,
        port,
        session,
        connect_timeout=config.connect_timeout,
        read_timeout=config.read_timeout,
    )
    if client.meta.service_model.service_name == "dynamodb":
        _fixed_endpoint(client)


_FEATURE_PARAMS = frozenset({"AccountIdEndpointMode", "AccountId"})
"""Endpoint parameters whose resolution adds a feature to the user agent's metrics."""


def _fixed_endpoint(client: Any) -> None:
    """Resolve a DynamoDB client's endpoint once per operation when it is the client's own
    endpoint URL.

    botocore resolves the endpoint for every request through DynamoDB's rule set, gathering
    every parameter first (the tables a transaction names, by JMESPath: ~64 us for a
    TransactWriteItems). With an endpoint URL given, the rule set's answer is that URL whatever
    the request (only the region, FIPS and dual-stack settings, fixed for the client, could
    make it an error), so the first answer for an operation is kept and handed out again, with
    the user agent's features registered as the resolution registers them. An answer that is
    not the plain endpoint URL is never kept."""
    resolver = getattr(client, "_ruleset_resolver", None)
    url = client.meta.endpoint_url
    if resolver is None or not url:
        return
    original = resolver.construct_endpoint
    kept: dict[str, tuple[Any, list[tuple[str, Any]]]] = {}

    def construct_endpoint(operation_model: Any, call_args: Any, request_context: Any) -> Any:
        found = kept.get(operation_model.name)
        if found is not None:
            result, features = found
            for name, value in features:
                resolver._register_endpoint_feature_ids(name, value)
            return result._replace(headers={}, properties={})
        result = original(operation_model, call_args, request_context)
        if result.url == url and not result.headers and not result.properties:
            params = resolver._get_provider_params(
                operation_model, call_args or {}, request_context or {}
            )
            features = [(n, v) for n, v in params.items() if n in _FEATURE_PARAMS]
            kept[operation_model.name] = (result, features)
        return result

    resolver.construct_endpoint = construct_endpoint
