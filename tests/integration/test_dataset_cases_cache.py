"""A dataset version's cases are read from DynamoDB once per process, however many case tasks
want them at the same moment (a run's lanes all start together), against moto's server."""

from __future__ import annotations

import threading
from typing import Any

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib.adapters import stores
from chalicelib.adapters.tables import DatasetCaseRow, org_key
from tests.integration.conftest import store_tables

pytestmark = pytest.mark.usefixtures("models_put_back")


def test_lanes_starting_together_read_a_version_once(
    moto: MotoHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_tables(moto, monkeypatch, "cases-cache-")
    key = org_key("acme", "d1", 1)
    with DatasetCaseRow.batch_write() as batch:
        for i in range(40):
            batch.save(
                DatasetCaseRow(key, f"c{i:02d}", case={"case_id": f"c{i:02d}", "input": "q"})
            )
    datasets = stores.DatasetStore()
    moto.reset_counts()
    lanes = 8
    start = threading.Barrier(lanes)
    found: list[Any] = []

    def lane(n: int) -> None:
        start.wait(timeout=30)
        found.append(datasets.get_case("acme", "d1", 1, f"c{n:02d}"))

    threads = [threading.Thread(target=lane, args=(n,)) for n in range(lanes)]
    for t in threads:
        t.start()
    for t in threads:
        t.join(timeout=60)
    assert sorted(case["case_id"] for case in found) == [f"c{n:02d}" for n in range(lanes)]
    assert moto.requests().get("dynamodb.Query", 0) == 1
    # an unknown version is not cached: read again each time
    assert datasets.get_case("acme", "d1", 2, "c00") is None
    assert datasets.get_case("acme", "d1", 2, "c00") is None
    assert moto.requests().get("dynamodb.Query", 0) == 3
