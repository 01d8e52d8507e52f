"""The dataset store's undo and its pages of cases (issue 13 scope 3), against moto's server:
deleting a dataset takes every version (written or half written) and its cases, by queries only;
a page of a version's cases reads `limit` + 1 rows from the case after the cursor."""

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


def test_delete_takes_the_header_every_version_and_their_cases_by_queries(
    moto: MotoHandle, monkeypatch: pytest.MonkeyPatch
) -> None:
    store_tables(moto, monkeypatch, "ds-delete-")
    datasets = stores.DatasetStore()
    datasets.create(header())
    datasets.add_version(*version(1, [f"c{i:02d}" for i in range(30)]))
    # A version a crashed import claimed and half wrote: not ready, two cases in.
    half = DatasetRow(org_key("acme", "d"), 2, org_id="acme", dataset_id="d", created_at=NOW)
    half.ready = False
    half.save()
    DatasetCaseRow(org_key("acme", "d", 2), "x", case={"case_id": "x", "input": "?"}).save()
    datasets.create(header("kept"))
    datasets.add_version(*version(1, ["k"], "kept"))
    assert datasets.get_case("acme", "d", 1, "c00") is not None  # cached: delete must drop it

    moto.reset_counts()
    datasets.delete("acme", "d")
    counts = moto.requests()
    assert not any(op.endswith("Scan") for op in counts), counts
    with pytest.raises(NotFoundError):
        datasets.get("acme", "d")
    assert list(DatasetRow.query(org_key("acme", "d"))) == []
    for n in (1, 2):
        assert list(DatasetCaseRow.query(org_key("acme", "d", n))) == []
    assert datasets.get_case("acme", "d", 1, "c00") is None
    assert [c["case_id"] for c in datasets.cases("acme", "kept", 1)] == ["k"]
    datasets.delete("acme", "d")  # gone already: nothing to do, no error


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
