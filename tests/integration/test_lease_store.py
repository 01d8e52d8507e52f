"""The attempts' leases against moto's server over HTTP (docs/architecture/exactly-once.md, "One
ask per attempt"; docs/architecture/run-lifecycle.md, "A run its worker cannot finish"): a
delivery's failure on assay's own error is counted on its attempt's lease in the write that lets
its claim go, and the count outlives every later claim of the attempt."""

from __future__ import annotations

from typing import Any

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib.adapters.stores import RunStore
from chalicelib.adapters.tables import LeaseRow, org_key, table_name
from chalicelib.domain.leases import ERROR_CHARS
from tests.fakes.ledger import a_run
from tests.integration.conftest import store_tables

pytestmark = pytest.mark.usefixtures("models_put_back")

KEY = "candidate#c1#001"
NOW = 1_790_000_000_000
LATER = NOW + 720_000


@pytest.fixture
def ddb(moto: MotoHandle, monkeypatch: pytest.MonkeyPatch) -> Any:
    return store_tables(moto, monkeypatch, "leases-")


def test_failures_are_counted_on_the_attempt_and_outlive_its_later_claims(ddb: Any) -> None:
    runs, run = RunStore(), a_run("r1")
    assert runs.take_lease(run, KEY, "m1", LATER, NOW)
    assert not runs.take_lease(run, KEY, "m2", LATER, NOW), "a live claim is never taken"
    assert runs.fail_lease(run, KEY, "m2", "not theirs") is None, "only the holder's counts"
    failed = runs.fail_lease(run, KEY, "m1", "RuntimeError: " + "x" * 1000)
    assert failed is not None
    assert (failed.holder, failed.until_ms, failed.failures) == ("m1", 0, 1)
    assert failed.last_error == ("RuntimeError: " + "x" * 1000)[:ERROR_CHARS]
    # A copy sent as a new message claims the attempt at once; the count stays with it.
    assert runs.take_lease(run, KEY, "m2", LATER, NOW)
    kept = runs.lease_of(run, KEY)
    assert kept is not None
    assert (kept.holder, kept.until_ms, kept.failures) == ("m2", LATER, 1)
    assert kept.last_error == failed.last_error
    again = runs.fail_lease(run, KEY, "m2", "OSError: the queue is unreachable")
    assert again is not None and again.failures == 2
    assert again.last_error == "OSError: the queue is unreachable"
    assert runs.lease_of(run, KEY) == again


def test_a_recorded_attempt_counts_no_failure_and_is_never_claimed_again(ddb: Any) -> None:
    runs, run = RunStore(), a_run("r1")
    assert runs.take_lease(run, KEY, "m1", LATER, NOW)
    ddb.update_item(  # as the recording's own transaction marks it
        TableName=table_name(LeaseRow),
        Key={"run_key": {"S": org_key("acme", "r1")}, "attempt_key": {"S": KEY}},
        UpdateExpression="SET done = :t",
        ExpressionAttributeValues={":t": {"BOOL": True}},
    )
    assert runs.fail_lease(run, KEY, "m1", "boom") is None
    assert not runs.take_lease(run, KEY, "m2", LATER, LATER + 1)
    kept = runs.lease_of(run, KEY)
    assert kept is not None and kept.done and kept.failures == 0 and kept.last_error is None
