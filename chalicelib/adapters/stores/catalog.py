"""What an organization defines: judges, agents and their versions, model profiles, datasets."""

from __future__ import annotations

import builtins
import threading
from collections import OrderedDict
from collections.abc import Sequence
from typing import Any

from pynamodb.exceptions import (
    DoesNotExist,
    PutError,
    TransactWriteError,
    UpdateError,
)
from pynamodb.expressions.update import Action

from chalicelib.adapters.stores.base import (
    TX,
    reason_codes,
    save_new,
    unless_condition_failed,
)
from chalicelib.adapters.tables import (
    AgentRow,
    AgentVersionRow,
    DatasetCaseRow,
    DatasetRow,
    JudgeRow,
    ModelProfileRow,
    org_key,
)
from chalicelib.errors import ConflictError, NotFoundError

# --- judges ----------------------------------------------------------------------------------


class JudgeStore:
    """Judges: a header row (version 0) and immutable published versions."""

    def create(self, header: JudgeRow) -> None:
        """Write a judge header (its key built from `org_id` and `judge_id`).

        Raises ConflictError when the id is taken in the organization.
        """
        header.judge_key = org_key(header.org_id, header.judge_id)
        save_new(header, JudgeRow.judge_key.does_not_exist(),
                  f"judge {header.judge_id} already exists", field="judge_id")

    def get(self, org_id: str, judge_id: str, version: int = 0, *, field: str = "judge_id") -> JudgeRow:
        """The header (version 0) or a published version. Raises NotFoundError (naming `field`) for
        an unknown judge or version of the organization."""
        try:
            return JudgeRow.get(org_key(org_id, judge_id), version, consistent_read=True)
        except DoesNotExist:
            what = f"judge {judge_id}" if version == 0 else f"version {version} of judge {judge_id}"
            raise NotFoundError(f"{what} not found", field=field) from None

    def versions(self, org_id: str, judge_id: str) -> list[JudgeRow]:
        """The organization's judge's published versions, oldest first."""
        return list(JudgeRow.query(org_key(org_id, judge_id), JudgeRow.version > 0))

    def publish(self, header: JudgeRow, row: JudgeRow) -> bool:
        """Write version `row.version` and move the header's latest to it, in one transaction.

        Returns False when another publish took that number first (the caller reads again).
        """
        row.judge_key = org_key(row.org_id, row.judge_id)
        try:
            with TX.write() as t:
                t.save(row, condition=JudgeRow.version.does_not_exist())
                t.update(JudgeRow(header.judge_key, 0), actions=[JudgeRow.latest_version.set(row.version)],
                         condition=JudgeRow.latest_version == int(header.latest_version or 0))
            return True
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            return False


# --- agents ----------------------------------------------------------------------------------


class AgentStore:
    """Agents (draft edited in place) and their immutable versions."""

    def create(self, row: AgentRow) -> None:
        """Raises ConflictError when the id is taken in the organization (another's is no concern)."""
        save_new(row, AgentRow.agent_id.does_not_exist(),
                  f"agent {row.agent_id} already exists", field="agent_id")

    def get(self, org_id: str, agent_id: str) -> AgentRow:
        """Raises NotFoundError for an agent the organization does not have."""
        try:
            return AgentRow.get(org_id, agent_id, consistent_read=True)
        except DoesNotExist:
            raise NotFoundError(f"agent {agent_id} not found", field="agent_id") from None

    def list(self, org_id: str) -> list[AgentRow]:
        return list(AgentRow.query(org_id))

    def update_draft(self, org_id: str, agent_id: str, spec: dict[str, Any], spec_hash: str,
                     now_iso: str, name: str | None = None) -> None:
        actions: list[Action] = [AgentRow.draft_spec.set(spec), AgentRow.draft_spec_hash.set(spec_hash),
                   AgentRow.draft_updated_at.set(now_iso)]
        if name is not None:
            actions.append(AgentRow.name.set(name))
        AgentRow(org_id, agent_id).update(actions=actions, condition=AgentRow.agent_id.exists())

    def get_version(self, org_id: str, agent_id: str, version: int) -> AgentVersionRow | None:
        """A published version of the organization's agent, or None."""
        try:
            return AgentVersionRow.get(org_key(org_id, agent_id), version, consistent_read=True)
        except DoesNotExist:
            return None

    def list_versions(self, org_id: str, agent_id: str) -> builtins.list[AgentVersionRow]:
        """The organization's agent's published versions, newest first."""
        return list(AgentVersionRow.query(org_key(org_id, agent_id), scan_index_forward=False))

    def publish(self, version_row: AgentVersionRow) -> bool:
        """Write a new immutable version and raise the agent's `latest_version`, atomically (the key
        is built from the row's `org_id` and `agent_id`).

        Returns False when the same version with the same spec hash exists already (a no-op).
        Raises:
            ConflictError: the version exists with another spec.
        """
        version_row.agent_key = org_key(version_row.org_id, version_row.agent_id)
        tx = TX.write()
        with_agent = AgentRow(version_row.org_id, version_row.agent_id)
        try:
            with tx as t:
                t.save(version_row, condition=AgentVersionRow.version.does_not_exist())
                t.update(with_agent, actions=[
                    AgentRow.latest_version.set(version_row.version),
                    AgentRow.live_version.set(version_row.version),
                ], condition=AgentRow.agent_id.exists()
                    & (AgentRow.latest_version < version_row.version))
            return True
        except TransactWriteError as exc:
            codes = reason_codes(exc)
            existing = self.get_version(version_row.org_id, version_row.agent_id, int(version_row.version))
            if existing is not None:
                if existing.spec_hash == version_row.spec_hash:
                    return False
                raise ConflictError(
                    f"version {version_row.version} of agent {version_row.agent_id} is already "
                    "published with another spec; versions are immutable", field="version") from exc
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                # An older version number than the latest: store it without moving `latest_version`.
                try:
                    version_row.save(condition=AgentVersionRow.version.does_not_exist())
                    return True
                except PutError as put_error:
                    unless_condition_failed(put_error)
                    return self.publish(version_row)
            raise


# --- model profiles --------------------------------------------------------------------------


class ModelProfileStore:
    """Model profiles of an organization."""

    def create(self, row: ModelProfileRow) -> None:
        """Raises ConflictError when the id is taken in the organization."""
        save_new(row, ModelProfileRow.model_profile_id.does_not_exist(),
                  f"model profile {row.model_profile_id} already exists", field="model_profile_id")

    def get(self, org_id: str, model_profile_id: str, *, field: str = "model_profile_id") -> ModelProfileRow:
        """Raises NotFoundError (naming `field`) for an unknown profile."""
        try:
            return ModelProfileRow.get(org_id, model_profile_id, consistent_read=True)
        except DoesNotExist:
            raise NotFoundError(f"model profile {model_profile_id} not found", field=field) from None

    def delete(self, org_id: str, model_profile_id: str) -> None:
        ModelProfileRow(org_id, model_profile_id).delete()

    def list(self, org_id: str) -> list[ModelProfileRow]:
        return list(ModelProfileRow.query(org_id))


# --- datasets --------------------------------------------------------------------------------


class DatasetStore:
    """Dataset headers (version 0), immutable versions and their cases.

    A dataset version never changes once written, so its cases are cached per process (a warm
    Lambda keeps them): a case attempt then reads no case from DynamoDB. The cache holds the
    `max_cached_versions` most recently used versions.
    """

    def __init__(self, max_cached_versions: int = 8) -> None:
        self._cases: OrderedDict[str, dict[str, dict[str, Any]]] = OrderedDict()
        self._max = max_cached_versions
        self._lock = threading.Lock()

    def create(self, header: DatasetRow) -> None:
        """Write a dataset header (its key built from `org_id` and `dataset_id`). Raises
        ConflictError when the organization has that id already."""
        header.dataset_key = org_key(header.org_id, header.dataset_id)
        save_new(header, DatasetRow.dataset_key.does_not_exist(),
                  f"dataset {header.dataset_id} already exists", field="dataset_id")

    def get(self, org_id: str, dataset_id: str, version: int = 0) -> DatasetRow:
        """The header (version 0) or a ready version. Raises NotFoundError for a dataset or version
        the organization does not have."""
        try:
            row = DatasetRow.get(org_key(org_id, dataset_id), version, consistent_read=True)
        except DoesNotExist:
            what = f"dataset {dataset_id}" + (f" version {version}" if version else "")
            raise NotFoundError(f"{what} not found",
                                field="dataset_version" if version else "dataset_id") from None
        if version and row.ready is False:
            raise NotFoundError(f"dataset {dataset_id} version {version} is still being written",
                                field="dataset_version")
        return row

    def list(self, org_id: str) -> list[DatasetRow]:
        return [r for r in DatasetRow.org_index.query(org_id, scan_index_forward=False) if r.version == 0]

    def next_version(self, org_id: str, dataset_id: str) -> int:
        """One more than the highest version number claimed so far (written or being written)."""
        last = list(DatasetRow.query(org_key(org_id, dataset_id), scan_index_forward=False, limit=1))
        return int(last[0].version) + 1 if last else 1

    def add_version(self, header: DatasetRow, version_row: DatasetRow,
                    cases: Sequence[tuple[str, dict[str, Any]]]) -> None:
        """Claim the version number, write its cases, then mark it ready and move `latest_version`.

        The number is claimed first (a conditional put of the row, not yet `ready`), so two
        concurrent imports can never write cases under the same version; readers ignore a version
        until it is ready.
        Raises:
            ConflictError: the version number was taken meanwhile (nothing was written).
        """
        version_row.ready = False
        version_row.dataset_key = org_key(version_row.org_id, version_row.dataset_id)
        save_new(version_row, DatasetRow.version.does_not_exist(),
                  "another version was added at the same time; retry", field="version")
        key = org_key(version_row.org_id, version_row.dataset_id, int(version_row.version))
        with DatasetCaseRow.batch_write() as batch:
            for case_id, case in cases:
                batch.save(DatasetCaseRow(key, case_id, case=case))
        version_row.update(actions=[DatasetRow.ready.set(True)])
        try:
            header.update(actions=[DatasetRow.latest_version.set(version_row.version)],
                          condition=DatasetRow.latest_version < version_row.version)
        except UpdateError as exc:
            unless_condition_failed(exc)
            pass  # a later version became ready first: it stays the latest

    def _version_cases(self, org_id: str, dataset_id: str, version: int) -> dict[str, dict[str, Any]]:
        key = org_key(org_id, dataset_id, int(version))   # the cache is keyed as the table: by organization
        with self._lock:
            cases = self._cases.get(key)
            if cases is not None:
                self._cases.move_to_end(key)
                return cases
        cases = {r.case_id: r.case for r in DatasetCaseRow.query(key)}
        if cases:  # an absence (not written yet, or unknown) is never cached
            with self._lock:
                self._cases[key] = cases
                while len(self._cases) > self._max:
                    self._cases.popitem(last=False)
        return cases

    def get_case(self, org_id: str, dataset_id: str, version: int, case_id: str) -> dict[str, Any] | None:
        """One case of an immutable version of the organization's dataset (the whole version is
        loaded and cached on first use); None when there is no such case."""
        return self._version_cases(org_id, dataset_id, version).get(case_id)

    def cases(self, org_id: str, dataset_id: str, version: int) -> builtins.list[dict[str, Any]]:
        """Every case of an immutable version of the organization's dataset, by case id (cached like
        `get_case`)."""
        return list(self._version_cases(org_id, dataset_id, version).values())
