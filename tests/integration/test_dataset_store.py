"""The dataset store's undo and its pages of cases (issue 13 scope 3), against moto's server: a
version that fails half written is taken back (its cases and its claimed number, by queries
only); an empty header is deleted, never one another writer gave a readable version; a page of a
version's cases reads `limit` + 1 rows from the case after the cursor."""

from __future__ import annotations

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib.adapters import stores
from chalicelib.adapters.tables import DatasetCaseRow, DatasetRow, org_key
from chalicelib.domain.records import Dataset, DatasetCase
from chalicelib.errors import NotFoundError
from tests.integration.conftest import store_tables

pytestmark = pytest.mark.usefixtures("models_put_back")

NOW = "2026-12-01T09:00:00.000Z"


def header(dataset_id: str = "d") -> Dataset:
    return Dataset(version=0, org_id="acme", dataset_id=dataset_id, name="d", created_at=NOW)


def version(n: int, ids: list[str], dataset_id: str = "d") -> tuple[Dataset, list[DatasetCase]]:
    row = Dataset(
        version=n,
        org_id="acme",
        dataset_id=dataset_id,
        name="d",
        created_at=NOW,
        case_ids=ids,
        case_count=len(ids),
    )
    return row, [DatasetCase(case_id=i, case={"case_id": i, "input": f"q {i}"}) for i in ids]


def test_a_version_that_fails_half_written_is_taken_back(
    moto: MotoHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_tables(moto, monkeypatch, "ds-take-back-")
    datasets = stores.DatasetStore()
    datasets.create(header())
    real_update = DatasetRow.update

    def failing(self, *args, **kwargs):  # the cases are in; marking the version ready fails
        if self.version:
            raise RuntimeError("connection reset")
        return real_update(self, *args, **kwargs)

    monkeypatch.setattr(DatasetRow, "update", failing)
    moto.reset_counts()
    with pytest.raises(RuntimeError):
        datasets.add_version(*version(1, [f"c{i:02d}" for i in range(30)]))
    monkeypatch.setattr(DatasetRow, "update", real_update)
    counts = moto.requests()
    assert not any(op.endswith("Scan") for op in counts), counts
    assert list(DatasetCaseRow.query(org_key("acme", "d", 1))) == []
    assert [int(r.version) for r in DatasetRow.query(org_key("acme", "d"))] == [0]
    assert datasets.next_version("acme", "d") == 1  # the number is free again
    datasets.add_version(*version(1, ["a"]))
    assert [c["case_id"] for c in datasets.cases("acme", "d", 1)] == ["a"]


def test_delete_empty_takes_a_header_without_a_readable_version_only(
    moto: MotoHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_tables(moto, monkeypatch, "ds-delete-empty-")
    datasets = stores.DatasetStore()
    datasets.create(header("empty"))
    datasets.create(header("full"))
    datasets.add_version(*version(1, ["a"], "full"))  # another writer's, readable
    assert datasets.delete_empty("acme", "empty") is True
    with pytest.raises(NotFoundError):
        datasets.get("acme", "empty")
    assert datasets.delete_empty("acme", "empty") is False  # gone already
    assert datasets.delete_empty("acme", "full") is False
    assert datasets.get("acme", "full").latest_version == 1


def test_pages_of_a_version_read_from_the_cursor_and_see_each_case_once(
    moto: MotoHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_tables(moto, monkeypatch, "ds-pages-")
    ids = [f"c{i:02d}" for i in range(25)]
    writer = stores.DatasetStore()
    writer.create(header())
    writer.add_version(*version(1, ids))
    reader = stores.DatasetStore()  # a cold process: nothing cached
    moto.reset_counts()
    seen: list[str] = []
    after = None
    pages = 0
    while True:
        rows, more = reader.cases_page("acme", "d", 1, limit=10, after=after)
        seen += [row["case_id"] for row in rows]
        pages += 1
        if not more:
            break
        after = rows[-1]["case_id"]
    assert (seen, pages) == (ids, 3)
    assert moto.requests() == {"dynamodb.Query": 3}
    # A warm process serves the page from its copy of the version.
    assert reader.get_case("acme", "d", 1, "c00") is not None
    moto.reset_counts()
    rows, more = reader.cases_page("acme", "d", 1, limit=2, after="c22")
    assert ([r["case_id"] for r in rows], more) == (["c23", "c24"], False)
    assert moto.requests() == {}
