"""Every table's model, and the transactions, share one DynamoDB client per endpoint and region
(`tables.share_client`): PynamoDB would make one per table, ~60 ms of CPU each on first use."""

from __future__ import annotations

import pytest

from chalicelib.adapters import stores, tables
from chalicelib.adapters.stores.base import TX

pytestmark = pytest.mark.usefixtures("models_put_back")


def _client(model: type) -> object:
    return model._get_connection().connection.client  # noqa: SLF001


def test_every_model_and_the_transactions_use_one_client_per_endpoint(moto, monkeypatch) -> None:
    # PynamoDB makes a client again while one has no credentials
    monkeypatch.setenv("AWS_ACCESS_KEY_ID", "testing")
    monkeypatch.setenv("AWS_SECRET_ACCESS_KEY", "testing")
    tables.configure(prefix="shared-", endpoint_url=moto.url, region="us-east-1")
    stores.reset_connections()
    first = _client(tables.RunRow)
    assert all(_client(m) is first for m in tables.ALL_MODELS)
    assert TX._conn().client is first  # noqa: SLF001
    assert first.meta.endpoint_url == moto.url
    # its item requests written as they are, its HTTP to the loopback endpoint local_http's
    assert type(first._serializer).__name__ == "DynamoJSONSerializer"  # noqa: SLF001
    assert type(first._endpoint.http_session).__name__ == "LocalHTTPSession"  # noqa: SLF001
    assert "TableNames" in first.list_tables()  # and it answers

    # pointed elsewhere (no request is made: a client connects on its first call)
    tables.configure(prefix="other-", endpoint_url="http://127.0.0.1:9", region="eu-west-1")
    stores.reset_connections()
    second = _client(tables.AttemptRow)
    assert second is not first
    assert (second.meta.endpoint_url, second.meta.region_name) == (
        "http://127.0.0.1:9",
        "eu-west-1",
    )
    assert all(_client(m) is second for m in tables.ALL_MODELS)


def test_the_queues_and_the_buckets_share_one_client_per_service(moto) -> None:
    """A client per queue or bucket cost a session and ~100 ms of CPU each, in the first request
    that used it (the run start that sent its first tasks)."""
    from chalicelib.bootstrap import Container
    from chalicelib.config import Settings

    c = Container(Settings(aws_endpoint_url=moto.url, assay_resource_prefix="shared-"))
    assert c.case_queue.client is c.case_dlq.client is c.agent_events_dlq.client
    assert c.case_queue.client.meta.service_model.service_name == "sqs"
    assert c.bucket.client is c.recordings.client
    assert c.bucket.client is not c.case_queue.client
