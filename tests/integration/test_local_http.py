"""`local_http` puts on the wire exactly what botocore's urllib3 session puts there, reads every
kind of reply the same, and fails with botocore's own errors (a raw socket server on 127.0.0.1
that records each request and answers as scripted)."""

from __future__ import annotations

import re
import socket
import threading
from collections.abc import Iterator
from typing import Any

import botocore.session
import pytest
from botocore.config import Config
from botocore.exceptions import ClientError, EndpointConnectionError, ReadTimeoutError

from chalicelib.adapters import local_http
from chalicelib.adapters.local_http import LocalHTTPSession

ERROR = b'{"__type":"x#ResourceNotFoundException","message":"no table t"}'
OK = b"HTTP/1.1 200 OK\r\nContent-Type: application/x-amz-json-1.0\r\nx-amzn-RequestId: r1\r\n"


class RawServer:
    """Accepts connections on 127.0.0.1; reads each request whole and answers it with the next
    of `replies` (bytes, or None: say nothing), closing the connection after it when
    `close_after` is set. `requests` keeps every request's bytes, `connections` counts."""

    def __init__(self) -> None:
        self.listener = socket.create_server(("127.0.0.1", 0))
        self.port = self.listener.getsockname()[1]
        self.replies: list[bytes | None] = []
        self.close_after = False
        self.requests: list[bytes] = []
        self.connections = 0
        self.idle = threading.Event()
        self.closed = threading.Semaphore(0)
        """Released each time the server closed a connection after its reply."""
        threading.Thread(target=self._accept, daemon=True).start()

    def _accept(self) -> None:
        while True:
            try:
                conn, _ = self.listener.accept()
            except OSError:
                return
            self.connections += 1
            threading.Thread(target=self._serve, args=(conn,), daemon=True).start()

    def _serve(self, conn: socket.socket) -> None:
        data = b""
        with conn:
            while True:
                while b"\r\n\r\n" not in data:
                    chunk = conn.recv(65536)
                    if not chunk:
                        return
                    data += chunk
                head, _, data = data.partition(b"\r\n\r\n")
                length = int(re.search(rb"(?i)content-length: *(\d+)", head).group(1))  # type: ignore[union-attr]
                while len(data) < length:
                    data += conn.recv(65536)
                self.requests.append(head + b"\r\n\r\n" + data[:length])
                data = data[length:]
                reply = self.replies.pop(0)
                if reply is None:
                    self.idle.wait()
                    return
                conn.sendall(reply)
                if self.close_after:
                    conn.close()
                    self.closed.release()
                    return

    def stop(self) -> None:
        self.idle.set()
        self.listener.close()


@pytest.fixture
def server() -> Iterator[RawServer]:
    s = RawServer()
    yield s
    s.stop()


def _client(port: int, local: bool, **config: Any) -> Any:
    client = botocore.session.get_session().create_client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url=f"http://127.0.0.1:{port}",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
        config=Config(parameter_validation=False, retries={"total_max_attempts": 1}, **config),
    )
    if local:
        local_http.install(client)
        assert isinstance(client._endpoint.http_session, LocalHTTPSession)
    return client


def _same_but_signing(request: bytes) -> bytes:
    """A request with its time, signature, invocation id and idempotency token (each new per
    request) blanked."""
    request = re.sub(rb'"ClientRequestToken": "[\w-]+"', b'"ClientRequestToken": "-"', request)
    request = re.sub(rb"X-Amz-Date: \w+", b"X-Amz-Date: -", request)
    request = re.sub(rb"Signature=\w+", b"Signature=-", request)
    request = re.sub(rb"Credential=testing/\d+/", b"Credential=testing/-/", request)
    return re.sub(rb"amz-sdk-invocation-id: [\w-]+", b"amz-sdk-invocation-id: -", request)


def test_the_request_bytes_are_urllib3s_and_each_reply_reads_the_same(server: RawServer) -> None:
    body = b'{"Item": {"pk": {"S": "\\u00e9"}, "n": {"N": "1"}}}'
    replies = [
        OK + b"Content-Length: %d\r\n\r\n" % len(body) + body,
        # chunked, with a repeated header
        OK.replace(b"x-amzn-RequestId: r1\r\n", b"x-amzn-RequestId: r2\r\nx-extra: a\r\n")
        + b"x-extra: b\r\nTransfer-Encoding: chunked\r\n\r\n"
        + b"%x\r\n" % 10
        + body[:10]
        + b"\r\n%x;ext=1\r\n" % (len(body) - 10)
        + body[10:]
        + b"\r\n0\r\n\r\n",
        # an error
        b"HTTP/1.1 400 Bad Request\r\nContent-Type: application/x-amz-json-1.0\r\n"
        b"Content-Length: %d\r\n\r\n" % len(ERROR) + ERROR,
    ]
    seen: dict[bool, list[Any]] = {}
    sent: dict[bool, list[bytes]] = {}
    for local in (False, True):
        server.requests.clear()
        server.replies = list(replies)
        client = _client(server.port, local)
        key = {"pk": {"S": 'é "x"'}}
        results: list[Any] = [
            client.get_item(TableName="t", Key=key),
            client.get_item(TableName="t", Key=key, ConsistentRead=True),
        ]
        with pytest.raises(ClientError) as caught:
            client.get_item(TableName="t", Key=key)
        results.append(caught.value.response)
        for result in results:
            result["ResponseMetadata"].pop("RetryAttempts", None)
        seen[local] = results
        sent[local] = [_same_but_signing(r) for r in server.requests]
    assert sent[True] == sent[False]
    assert sent[True][0].startswith(b"POST / HTTP/1.1\r\nHost: 127.0.0.1:%d\r\n" % server.port)
    assert seen[True] == seen[False]
    assert seen[True][0]["Item"] == {"pk": {"S": "é"}, "n": {"N": "1"}}
    assert seen[True][1]["ResponseMetadata"]["HTTPHeaders"]["x-extra"] == "a, b"
    assert seen[True][2]["Error"]["Code"] == "ResourceNotFoundException"


def test_a_connection_is_kept_and_one_the_server_closed_is_replaced(server: RawServer) -> None:
    reply = OK + b"Content-Length: 2\r\n\r\n{}"
    client = _client(server.port, local=True)
    server.replies = [reply] * 3
    for _ in range(3):
        client.get_item(TableName="t", Key={"pk": {"S": "a"}})
    assert server.connections == 1  # kept alive
    server.close_after = True
    server.replies = [reply] * 3
    for _ in range(3):
        client.get_item(TableName="t", Key={"pk": {"S": "a"}})
        assert server.closed.acquire(timeout=10)  # the server has closed it
    assert server.connections == 3  # each closed one noticed before it was used again
    assert len(server.requests) == 6  # and no request sent twice


def test_failures_are_botocores_own_errors(server: RawServer) -> None:
    closed = socket.create_server(("127.0.0.1", 0))
    port = closed.getsockname()[1]
    closed.close()
    with pytest.raises(EndpointConnectionError):
        _client(port, local=True).get_item(TableName="t", Key={"pk": {"S": "a"}})
    server.replies = [None]  # the server reads the request and says nothing
    slow = _client(server.port, local=True, read_timeout=0.2)
    with pytest.raises(ReadTimeoutError):
        slow.get_item(TableName="t", Key={"pk": {"S": "a"}})


def test_only_a_plain_http_loopback_endpoint_takes_it() -> None:
    session = botocore.session.get_session()

    def installed(url: str, **config: Any) -> bool:
        client = session.create_client(
            "dynamodb",
            region_name="us-east-1",
            endpoint_url=url,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(**config),
        )
        local_http.install(client)
        return isinstance(client._endpoint.http_session, LocalHTTPSession)

    assert installed("http://127.0.0.1:8000")
    assert installed("http://localhost:8000")
    assert not installed("https://127.0.0.1:8000")
    assert not installed("http://10.0.0.5:8000")
    assert not installed("https://dynamodb.us-east-1.amazonaws.com")
    assert not installed("http://127.0.0.1:8000", proxies={"http": "http://127.0.0.1:3128"})


def test_the_endpoint_is_kept_per_operation_and_the_requests_stay_the_same(
    server: RawServer,
) -> None:
    """A DynamoDB client on a loopback endpoint resolves its endpoint once per operation: the
    same answer as botocore's resolution, and the same request bytes (the user agent's
    features included) on every later request."""
    reply = OK + b"Content-Length: 2\r\n\r\n{}"
    calls = [
        ("batch_get_item", {"RequestItems": {"t": {"Keys": [{"pk": {"S": "a"}}]}}}),
        (
            "transact_write_items",
            {
                "TransactItems": [
                    {"Put": {"TableName": "t", "Item": {"pk": {"S": "a"}}}},
                    {"Delete": {"TableName": "u", "Key": {"pk": {"S": "b"}}}},
                ]
            },
        ),
    ]
    sent: dict[bool, list[bytes]] = {}
    for local in (False, True):
        server.requests.clear()
        server.replies = [reply] * 6
        client = _client(server.port, local)
        for _ in range(3):
            for method, params in calls:
                getattr(client, method)(**params)
        sent[local] = [_same_but_signing(r) for r in server.requests]
    assert sent[True] == sent[False]
    local_client, plain = _client(server.port, True), _client(server.port, False)
    for _ in range(2):
        for operation, params in (
            ("BatchGetItem", calls[0][1]),
            ("TransactWriteItems", calls[1][1]),
        ):
            model = plain.meta.service_model.operation_model(operation)
            assert local_client._resolve_endpoint_ruleset(
                model, params, {}
            ) == plain._resolve_endpoint_ruleset(model, params, {})
