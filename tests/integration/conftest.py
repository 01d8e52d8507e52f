"""Fixtures for tests against moto's server over real HTTP.

One embedded moto server per test session (moto's state is process-global anyway); every test
that asks for `moto` gets it wiped (`POST /moto-api/reset`) and its request counts zeroed.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import pytest

from assay_local.motoserver import MotoHandle, start_moto_server

REGION = "us-east-1"


@pytest.fixture(scope="session")
def moto_server() -> Iterator[MotoHandle]:
    """The session's embedded moto server (127.0.0.1, free port); not reset between tests."""
    handle = start_moto_server()
    yield handle
    handle.stop()


@pytest.fixture
def moto(moto_server: MotoHandle) -> MotoHandle:
    """The session's moto server, wiped and with zeroed request counts."""
    moto_server.reset()
    moto_server.reset_counts()
    return moto_server


@pytest.fixture
def aws_client(moto: MotoHandle) -> Callable[..., Any]:
    """`aws_client("dynamodb", **config_kwargs)` -> a boto3 client of the moto server.

    Each call builds a new client (give one to each thread you start); extra keyword arguments
    go to `botocore.config.Config`.
    """
    import boto3
    from botocore.config import Config

    session = boto3.session.Session()

    def make(service: str, **config: Any) -> Any:
        return session.client(
            service,
            endpoint_url=moto.url,
            region_name=REGION,
            aws_access_key_id="testing",
            aws_secret_access_key="testing",
            config=Config(**config) if config else None,
        )

    return make


@pytest.fixture(scope="module")
def models_put_back() -> Iterator[None]:
    """The models point at a module's tables while it runs (`store_tables`), and back where they
    were after (a module asks for it with `pytestmark = pytest.mark.usefixtures(...)`)."""
    from tests.support.models import models_kept

    with models_kept():
        yield


def create_table(ddb: Any, name: str, *, range_key: bool = False) -> None:
    """A pay-per-request table keyed by the string `pk` (and `sk` with `range_key`)."""
    keys = [{"AttributeName": "pk", "KeyType": "HASH"}]
    attrs = [{"AttributeName": "pk", "AttributeType": "S"}]
    if range_key:
        keys.append({"AttributeName": "sk", "KeyType": "RANGE"})
        attrs.append({"AttributeName": "sk", "AttributeType": "S"})
    ddb.create_table(
        TableName=name, KeySchema=keys, AttributeDefinitions=attrs, BillingMode="PAY_PER_REQUEST"
    )


def store_tables(moto: MotoHandle, monkeypatch: pytest.MonkeyPatch, prefix: str) -> Any:
    """Every table of assay on `moto` under `prefix`, the stores pointed at them; returns a raw
    DynamoDB client to read items as stored."""
    import boto3

    from chalicelib.adapters import stores
    from infra.resources import ensure_tables

    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)
    ensure_tables(moto.url, REGION, prefix)
    stores.reset_connections()
    return boto3.session.Session().client(
        "dynamodb",
        endpoint_url=moto.url,
        region_name=REGION,
        aws_access_key_id="testing",
        aws_secret_access_key="testing",
    )


def seed_agent_and_dataset(
    org_id: str = "acme",
    agent_id: str = "a",
    dataset_id: str = "d",
    at: str = "2026-12-01T08:00:00.000Z",
) -> None:
    """Agent `agent_id` and dataset `dataset_id` (its header) of `org_id`, through the stores: a
    run, suite, evaluation or promotion is written only while what it belongs to exists."""
    from chalicelib.adapters import stores
    from chalicelib.domain.records import Agent, Dataset

    stores.AgentStore().create(
        Agent(
            org_id=org_id,
            agent_id=agent_id,
            name=agent_id,
            draft_spec={},
            draft_spec_hash="h0",
            draft_updated_at=at,
            created_at=at,
        )
    )
    stores.DatasetStore().create(
        Dataset(version=0, org_id=org_id, dataset_id=dataset_id, name=dataset_id, created_at=at)
    )
