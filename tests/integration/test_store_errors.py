"""A failed condition is told apart from every other failure by AWS's error code (issue 10 scope 2),
against moto's server over HTTP: "somebody else won" only when a condition really did not hold."""

from __future__ import annotations

import uuid
from collections.abc import Iterator

import pytest
from pynamodb.attributes import NumberAttribute, UnicodeAttribute
from pynamodb.exceptions import PutError, TransactWriteError, UpdateError
from pynamodb.models import Model
from pynamodb.transactions import TransactWrite

from assay_local.motoserver import MotoHandle
from chalicelib.adapters.stores.base import (
    condition_failed,
    conditional_update,
    error_code,
    transaction_condition_failed,
)
from tests.integration.conftest import REGION


@pytest.fixture
def model(moto: MotoHandle, monkeypatch: pytest.MonkeyPatch) -> Iterator[type[Model]]:
    for name, value in (("AWS_ACCESS_KEY_ID", "testing"), ("AWS_SECRET_ACCESS_KEY", "testing")):
        monkeypatch.setenv(name, value)

    class Counter(Model):
        class Meta:
            table_name = f"errors-{uuid.uuid4().hex[:8]}"
            host = moto.url
            region = REGION

        key = UnicodeAttribute(hash_key=True)
        n = NumberAttribute(default=0)
        label = UnicodeAttribute(null=True)

    Counter.create_table(billing_mode="PAY_PER_REQUEST", wait=True)
    yield Counter


def test_a_condition_that_did_not_hold_is_a_failed_condition(model):
    model("a", n=1).save()
    with pytest.raises(PutError) as put:
        model("a", n=2).save(condition=model.key.does_not_exist())
    assert condition_failed(put.value)
    assert conditional_update(model("a"), [model.n.add(1)], condition=model.n == 5) is False


def test_any_other_failure_is_not_a_failed_condition_and_is_raised(model):
    model("a", n=1).save()
    too_big = [
        model.label.set("x" * 410_000)
    ]  # past DynamoDB's 400 KB item: AWS's ValidationException
    with pytest.raises(UpdateError) as update:
        model("a").update(actions=too_big)
    assert error_code(update.value) == "ValidationException" and not condition_failed(update.value)
    with pytest.raises(UpdateError):
        conditional_update(model("a"), too_big, condition=model.n == 1)


def test_a_transaction_cancelled_by_a_condition_is_told_from_an_invalid_one(model, moto):
    from pynamodb.connection import Connection

    model("a", n=1).save()
    connection = Connection(region=REGION, host=moto.url)
    with pytest.raises(TransactWriteError) as cancelled:
        with TransactWrite(connection=connection) as t:
            t.update(model("a"), actions=[model.n.add(1)], condition=model.n == 7)
            t.save(model("b", n=1))
    assert transaction_condition_failed(cancelled.value)
    with pytest.raises(
        TransactWriteError
    ) as invalid:  # two operations on one item: a ValidationException
        with TransactWrite(connection=connection) as t:
            t.update(model("a"), actions=[model.n.add(1)])
            t.save(model("a", n=3))
    assert not transaction_condition_failed(invalid.value)
