"""`dynamo_signing.FastSigV4Auth` signs each request exactly as botocore's `SigV4Auth` does: the
same `Authorization`, `X-Amz-Date` and token headers, whatever the request (a frozen clock)."""

from __future__ import annotations

import datetime
from typing import Any

import botocore.auth
import botocore.session
import pytest
from botocore.auth import SigV4Auth
from botocore.awsrequest import AWSRequest
from botocore.credentials import Credentials
from botocore.exceptions import NoCredentialsError

from chalicelib.adapters import dynamo_signing
from chalicelib.adapters.dynamo_signing import FastSigV4Auth

REQUESTS: list[dict[str, Any]] = [
    {
        "method": "POST",
        "url": "http://127.0.0.1:5000/",
        "data": b'{"TableName": "t"}',
        "headers": {
            "X-Amz-Target": "DynamoDB_20120810.GetItem",
            "Content-Type": "application/x-amz-json-1.0",
            "User-Agent": "Botocore/1",
        },
    },
    {
        "method": "GET",
        "url": "https://dynamodb.us-east-1.amazonaws.com/a%20b/../c?z=1&a=2&a=1",
        "data": b"",
        "headers": {"X-Spaced": "  two   words  ", "x-amz-meta": "v"},
    },
    {
        "method": "POST",
        "url": "https://dynamodb.us-east-1.amazonaws.com/",
        "data": b"{}",
        "params": {"b": "2", "a": "1 2"},
        "headers": {"X-Amz-Content-SHA256": "UNSIGNED-PAYLOAD", "Expect": "100-continue"},
    },
]


@pytest.fixture
def frozen(monkeypatch: pytest.MonkeyPatch) -> None:
    moments = iter(
        datetime.datetime(2026, 12, 6, 7, m, 30, tzinfo=datetime.UTC)
        for m in range(0, 60)
        for _ in range(2)
    )
    monkeypatch.setattr(botocore.auth, "get_current_datetime", lambda: next(moments))


def _signed(cls: type, request: dict[str, Any], credentials: Credentials, region: str) -> Any:
    aws = AWSRequest(
        method=request["method"],
        url=request["url"],
        data=request["data"],
        params=request.get("params"),
        headers=dict(request["headers"]),
    )
    cls(credentials, "dynamodb", region).add_auth(aws)
    return dict(aws.headers.items())


@pytest.mark.usefixtures("frozen")
def test_every_request_is_signed_as_botocore_signs_it() -> None:
    for credentials in (
        Credentials("AKIDEXAMPLE", "secret"),
        Credentials("ASIAEXAMPLE", "other secret", token="session token"),
    ):
        for region in ("us-east-1", "eu-west-1"):
            for request in REQUESTS:
                for _ in range(2):  # the second time from what was kept
                    theirs = _signed(SigV4Auth, request, credentials, region)
                    ours = _signed(FastSigV4Auth, request, credentials, region)
                    assert ours == theirs, (request["url"], region)
                    assert "Signature=" in ours["Authorization"]


def test_no_credentials_is_botocores_error() -> None:
    with pytest.raises(NoCredentialsError):
        FastSigV4Auth(None, "dynamodb", "us-east-1").add_auth(AWSRequest("GET", "http://x/"))


def test_a_client_signs_with_it_after_install() -> None:
    client = botocore.session.get_session().create_client(
        "dynamodb",
        region_name="us-east-1",
        endpoint_url="http://127.0.0.1:9",
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )
    dynamo_signing.install(client)
    dynamo_signing.install(client)  # once
    auth = client._request_signer.get_auth_instance("dynamodb", "us-east-1", "v4")
    assert type(auth) is FastSigV4Auth


@pytest.mark.parametrize(
    ("host", "local"),
    [
        ("http://127.0.0.1:4566", True),
        ("http://localhost:5000", True),
        (None, False),  # AWS
        ("https://dynamodb.us-east-1.amazonaws.com", False),
        ("http://localstack:4566", False),
    ],
)
def test_only_the_embedded_stacks_client_takes_the_fast_paths(host, local) -> None:
    from pynamodb.connection import Connection

    from chalicelib.adapters import table_base
    from chalicelib.adapters.local_http import LocalHTTPSession

    with pytest.MonkeyPatch.context() as mp:
        for name in ("AWS_ENDPOINT_URL", "AWS_ENDPOINT_URL_DYNAMODB"):  # the stack's, in a test run
            mp.delenv(name, raising=False)
        mp.setenv("AWS_ACCESS_KEY_ID", "testing")
        mp.setenv("AWS_SECRET_ACCESS_KEY", "testing")
        mp.setattr(table_base, "_CLIENTS", {})
        client = table_base.share_client(Connection(host=host, region="us-east-1")).client
    auth = client._request_signer.get_auth_instance("dynamodb", "us-east-1", "v4")
    assert (type(auth) is FastSigV4Auth) is local
    assert isinstance(client._endpoint.http_session, LocalHTTPSession) is local
