"""What an organization's datasets are kept as: the header, its immutable versions and their
cases."""

from __future__ import annotations

import builtins
import logging
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from pynamodb.exceptions import (
    DeleteError,
    DoesNotExist,
    TransactWriteError,
)

from chalicelib.adapters.stores.base import (
    TX,
    check_dataset_live,
    condition_failed,
    conditional_update,
    dataset_live,
    delete_found,
    record_of,
    row_of,
    save_new,
    unless_condition_failed,
)
from chalicelib.adapters.tables import (
    DatasetCaseRow,
    DatasetRow,
    org_key,
)
from chalicelib.domain.records import (
    Dataset,
    DatasetCase,
)
from chalicelib.errors import ConflictError, NotFoundError

log = logging.getLogger(__name__)


# --- datasets --------------------------------------------------------------------------------


class DatasetStore:
    """Dataset headers (version 0), immutable versions and their cases (port
    `ports.catalog.Datasets`).

    A dataset version never changes once written, so its cases are cached per process (a warm
    Lambda keeps them): a case attempt then reads no case from DynamoDB. The cache holds the
    `max_cached_versions` most recently used versions. A version is read once however many case
    tasks want it at once (a run's lanes all start together).
    """

    def __init__(self, max_cached_versions: int = 8) -> None:
        self._cases: OrderedDict[str, dict[str, dict[str, Any]]] = OrderedDict()
        self._max = max_cached_versions
        self._lock = threading.Lock()
        self._loading: dict[str, threading.Lock] = {}

    def create(self, header: Dataset) -> None:
        """Keep a new dataset header. Raises ConflictError when the organization has the id."""
        save_new(
            row_of(header, DatasetRow, dataset_key=org_key(header.org_id, header.dataset_id)),
            DatasetRow.dataset_key.does_not_exist(),
            f"dataset {header.dataset_id} already exists",
            field="dataset_id",
        )

    def get(self, org_id: str, dataset_id: str, version: int = 0) -> Dataset:
        """The header (version 0) or a ready version. Raises NotFoundError for a dataset or version
        the organization does not have, or a header being deleted."""
        try:
            row = DatasetRow.get(org_key(org_id, dataset_id), version, consistent_read=True)
        except DoesNotExist:
            row = None
        if row is None or row.deleting_at is not None:
            what = f"dataset {dataset_id}" + (f" version {version}" if version else "")
            raise NotFoundError(
                f"{what} not found", field="dataset_version" if version else "dataset_id"
            )
        if version and row.ready is False:
            raise NotFoundError(
                f"dataset {dataset_id} version {version} is still being written",
                field="dataset_version",
            )
        return record_of(row, Dataset)

    def list(self, org_id: str) -> list[Dataset]:
        """The organization's dataset headers, newest first."""
        rows = DatasetRow.org_index.query(org_id, scan_index_forward=False)
        return [record_of(r, Dataset) for r in rows if r.version == 0 and r.deleting_at is None]

    def list_with_latest(self, org_id: str) -> builtins.list[tuple[Dataset, Dataset | None]]:
        """The organization's dataset headers, newest first, each with its latest ready version:
        the index holds versions beside their headers (all attributes projected), so the one
        query that lists the headers reads them too."""
        headers: builtins.list[DatasetRow] = []
        versions: dict[str, DatasetRow] = {}
        for r in DatasetRow.org_index.query(org_id, scan_index_forward=False):
            if r.version == 0:
                if r.deleting_at is None:
                    headers.append(r)
            elif r.ready is not False:
                held = versions.get(r.dataset_id)
                if held is None or r.version > held.version:
                    versions[r.dataset_id] = r
        out: builtins.list[tuple[Dataset, Dataset | None]] = []
        for h in headers:
            v = versions.get(h.dataset_id)
            latest = None
            if v is not None and v.version <= h.latest_version:
                latest = record_of(v, Dataset)
            out.append((record_of(h, Dataset), latest))
        return out

    def next_version(self, org_id: str, dataset_id: str) -> int:
        """One more than the highest version number claimed so far (written or being written)."""
        last = list(
            DatasetRow.query(org_key(org_id, dataset_id), scan_index_forward=False, limit=1)
        )
        return int(last[0].version) + 1 if last else 1

    def add_version(self, version: Dataset, cases: Sequence[DatasetCase]) -> None:
        """Claim the version number, write its cases, then mark it ready and move the header's
        `latest_version` (unless a later version became ready first).

        The number is claimed first (a conditional put of the row, not yet `ready`, checking that
        the dataset is not being deleted), so two concurrent imports can never write cases under
        the same version; readers ignore a version until it is ready. Marking it ready holds only
        while the row is there: a delete that took the row away meanwhile makes this version take
        its cases back.
        Raises:
            ConflictError: the version number was taken meanwhile (nothing was written).
            NotFoundError: the dataset is gone or being deleted (nothing was written).
        """
        dataset_key = org_key(version.org_id, version.dataset_id)
        row = row_of(version, DatasetRow, dataset_key=dataset_key)
        row.ready = False
        try:
            with TX.write() as t:
                check_dataset_live(t, version.org_id, version.dataset_id)
                t.save(row, condition=DatasetRow.version.does_not_exist())
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            if not dataset_live(version.org_id, version.dataset_id):
                raise NotFoundError(
                    f"dataset {version.dataset_id} not found", field="dataset_id"
                ) from exc
            raise ConflictError(
                "another version was added at the same time; retry", field="version"
            ) from exc
        key = org_key(version.org_id, version.dataset_id, int(version.version))
        try:
            with DatasetCaseRow.batch_write() as batch:
                for case in cases:
                    batch.save(DatasetCaseRow(key, case.case_id, case=case.case))
            if not conditional_update(
                row, [DatasetRow.ready.set(True)], DatasetRow.dataset_key.exists()
            ):
                raise NotFoundError(f"dataset {version.dataset_id} not found", field="dataset_id")
            # False when a later version became ready first: it stays the latest.
            conditional_update(
                DatasetRow(dataset_key, 0),
                [DatasetRow.latest_version.set(version.version)],
                DatasetRow.latest_version < version.version,
            )
        except BaseException:
            # A version half written is never read (not ready) but would hold its number and its
            # cases for ever; a failure while taking it back leaves the first error to be seen.
            try:
                self._take_back(version)
            except Exception:  # noqa: BLE001 - the write's own error is the one to raise
                log.warning("could not take back dataset version %s", key, exc_info=True)
            raise

    def _version_cases(
        self, org_id: str, dataset_id: str, version: int
    ) -> dict[str, dict[str, Any]]:
        # The cache is keyed as the table is: by organization first.
        key = org_key(org_id, dataset_id, int(version))
        with self._lock:
            cases = self._cases.get(key)
            if cases is not None:
                self._cases.move_to_end(key)
                return cases
            loading = self._loading.setdefault(key, threading.Lock())
        with loading:  # one read of the version; the others wait for it
            with self._lock:
                cases = self._cases.get(key)
            if cases is not None:
                return cases
            cases = {r.case_id: r.case for r in DatasetCaseRow.query(key)}
            with self._lock:
                if cases:  # an absence (not written yet, or unknown) is never cached
                    self._cases[key] = cases
                    while len(self._cases) > self._max:
                        self._cases.popitem(last=False)
                self._loading.pop(key, None)
        return cases

    def get_case(
        self, org_id: str, dataset_id: str, version: int, case_id: str
    ) -> dict[str, Any] | None:
        """One case of an immutable version of the organization's dataset (the whole version is
        loaded and cached on first use); None when there is no such case."""
        return self._version_cases(org_id, dataset_id, version).get(case_id)

    def cases(self, org_id: str, dataset_id: str, version: int) -> builtins.list[dict[str, Any]]:
        """Every case of an immutable version of the organization's dataset, by case id (cached like
        `get_case`)."""
        return list(self._version_cases(org_id, dataset_id, version).values())

    def cases_page(
        self, org_id: str, dataset_id: str, version: int, *, limit: int, after: str | None
    ) -> tuple[builtins.list[dict[str, Any]], bool]:
        """At most `limit` cases of the version after the case id `after`, by case id, and whether
        more follow: one query of the version's key from `after` (a page reads `limit` + 1 rows,
        not the version; a warm cache of the version serves it without a read)."""
        key = org_key(org_id, dataset_id, int(version))
        with self._lock:
            cached = self._cases.get(key)
        if cached is not None:
            ids = [i for i in cached if after is None or i > after]  # the cache is in key order
            return [cached[i] for i in ids[:limit]], len(ids) > limit
        condition = DatasetCaseRow.case_id > after if after is not None else None
        rows = list(DatasetCaseRow.query(key, condition, limit=limit + 1))
        return [r.case for r in rows[:limit]], len(rows) > limit

    def delete_empty(self, org_id: str, dataset_id: str) -> bool:
        """Delete the dataset's header unless a version became readable (a conditional delete on
        `latest_version` being 0): how a create whose first version failed is undone."""
        try:
            DatasetRow(org_key(org_id, dataset_id), 0).delete(
                condition=DatasetRow.dataset_key.exists()
                & (DatasetRow.latest_version.does_not_exist() | (DatasetRow.latest_version == 0))
            )
        except DeleteError as exc:
            if not condition_failed(exc):
                raise
            return False
        return True

    def start_deleting(self, org_id: str, dataset_id: str, at: str) -> tuple[Dataset, bool]:
        """Mark the dataset's header as being deleted (`deleting_at`, conditional on it existing
        unmarked); returns the header and True, or the header and False when it was being deleted
        already.

        Raises:
            NotFoundError: the organization has no such dataset.
        """
        row = DatasetRow(org_key(org_id, dataset_id), 0)
        if conditional_update(
            row,
            [DatasetRow.deleting_at.set(at)],
            DatasetRow.dataset_key.exists() & DatasetRow.deleting_at.does_not_exist(),
        ):
            return record_of(row, Dataset), True  # the update read back every attribute
        try:
            kept = DatasetRow.get(org_key(org_id, dataset_id), 0, consistent_read=True)
        except DoesNotExist:
            raise NotFoundError(f"dataset {dataset_id} not found", field="dataset_id") from None
        return record_of(kept, Dataset), False

    def stop_deleting(self, org_id: str, dataset_id: str) -> None:
        """Take the mark off the header (a delete refused before it deleted anything)."""
        conditional_update(
            DatasetRow(org_key(org_id, dataset_id), 0),
            [DatasetRow.deleting_at.remove()],
            DatasetRow.dataset_key.exists(),
        )

    def delete(self, org_id: str, dataset_id: str) -> None:
        """Delete every version of the dataset with its cases (queries of their keys), then the
        header.

        Per version: its cases, its row, its cases again. A version still being written when the
        delete started (claimed before the mark) finds its row gone when it marks itself ready and
        takes back its own cases; the second pass takes those it wrote before that. A delete cut
        short leaves versions whose cases are all there, so asking again finds them.
        """
        dataset_key = org_key(org_id, dataset_id)
        versions = DatasetRow.query(
            dataset_key, DatasetRow.version > 0, attributes_to_get=["dataset_key", "version"]
        )
        for row in versions:
            key = org_key(org_id, dataset_id, int(row.version))
            with self._lock:
                self._cases.pop(key, None)
            self._delete_cases(key)
            row.delete()
            self._delete_cases(key)
        DatasetRow(dataset_key, 0).delete()

    @staticmethod
    def _delete_cases(version_key: str) -> None:
        """Delete every case of one version (a query of its key)."""
        delete_found(
            DatasetCaseRow.query(version_key, attributes_to_get=["version_key", "case_id"]),
            DatasetCaseRow,
        )

    def _take_back(self, version: Dataset) -> None:
        """Delete what `add_version` wrote of a version before it failed: its cases (a query of
        the version's key) and the row that claimed its number."""
        key = org_key(version.org_id, version.dataset_id, int(version.version))
        with self._lock:
            self._cases.pop(key, None)
        self._delete_cases(key)
        DatasetRow(org_key(version.org_id, version.dataset_id), int(version.version)).delete()
