"""What an organization defines: judges, agents and their versions, model profiles, evaluations
(its datasets: `stores.datasets`)."""

from __future__ import annotations

import builtins
import logging
from collections.abc import Sequence
from dataclasses import fields

from pynamodb.exceptions import (
    DoesNotExist,
    TransactWriteError,
)

from chalicelib.adapters.stores.base import (
    TX,
    agent_live,
    changes,
    check_agent_live,
    check_dataset_live,
    conditional_update,
    dataset_live,
    delete_found,
    reason_codes,
    record_of,
    row_of,
    save_new,
    unless_condition_failed,
)
from chalicelib.adapters.tables import (
    AgentRow,
    AgentVersionRow,
    EvaluationRow,
    JudgeRow,
    ModelProfileRow,
    org_key,
)
from chalicelib.domain.records import (
    Agent,
    AgentVersion,
    Evaluation,
    Judge,
    ModelProfile,
)
from chalicelib.errors import ConflictError, NotFoundError

log = logging.getLogger(__name__)

# --- judges ----------------------------------------------------------------------------------


def _judge_key(judge: Judge) -> str:
    return org_key(judge.org_id, judge.judge_id)


class JudgeStore:
    """Judges: a header (version 0) and immutable published versions (port
    `ports.catalog.Judges`)."""

    def create(self, header: Judge) -> None:
        """Keep a new judge header. Raises ConflictError when the organization has the id."""
        save_new(
            row_of(header, JudgeRow, judge_key=_judge_key(header)),
            JudgeRow.judge_key.does_not_exist(),
            f"judge {header.judge_id} already exists",
            field="judge_id",
        )

    def get(
        self, org_id: str, judge_id: str, version: int = 0, *, field: str = "judge_id"
    ) -> Judge:
        """The header (version 0) or a published version. Raises NotFoundError (naming `field`) for
        an unknown judge or version of the organization."""
        try:
            row = JudgeRow.get(org_key(org_id, judge_id), version, consistent_read=True)
            return record_of(row, Judge)
        except DoesNotExist:
            what = f"judge {judge_id}" if version == 0 else f"version {version} of judge {judge_id}"
            raise NotFoundError(f"{what} not found", field=field) from None

    def versions(self, org_id: str, judge_id: str) -> list[Judge]:
        """The organization's judge's published versions, oldest first."""
        rows = JudgeRow.query(org_key(org_id, judge_id), JudgeRow.version > 0)
        return [record_of(row, Judge) for row in rows]

    def publish(self, header: Judge, version: Judge) -> bool:
        """Write `version` and move the header's latest to its number, in one transaction,
        conditional on the header's latest still being `header.latest_version`.

        Returns False when another publish took that number first (the caller reads again).
        """
        key = _judge_key(version)
        try:
            with TX.write() as t:
                t.save(
                    row_of(version, JudgeRow, judge_key=key),
                    condition=JudgeRow.version.does_not_exist(),
                )
                t.update(
                    JudgeRow(key, 0),
                    actions=[JudgeRow.latest_version.set(version.version)],
                    condition=JudgeRow.latest_version == int(header.latest_version or 0),
                )
            return True
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            return False


# --- agents ----------------------------------------------------------------------------------

_DRAFT_FIELDS = ("name", "draft_spec", "draft_spec_hash", "draft_updated_at")
"""What editing a draft may change of an agent; the rest belongs to publishing and budgets."""
_NOT_DRAFT = tuple(f.name for f in fields(Agent) if f.name not in _DRAFT_FIELDS)


class AgentStore:
    """Agents (draft edited in place) and their immutable versions (port `ports.catalog.Agents`)."""

    def create(self, agent: Agent) -> None:
        """Raises ConflictError when the organization has the id (another's is no concern)."""
        save_new(
            row_of(agent, AgentRow),
            AgentRow.agent_id.does_not_exist(),
            f"agent {agent.agent_id} already exists",
            field="agent_id",
        )

    def get(self, org_id: str, agent_id: str) -> Agent:
        """Raises NotFoundError for an agent the organization does not have, or is deleting."""
        try:
            row = AgentRow.get(org_id, agent_id, consistent_read=True)
        except DoesNotExist:
            row = None
        if row is None or row.deleting_at is not None:
            raise NotFoundError(f"agent {agent_id} not found", field="agent_id")
        return record_of(row, Agent)

    def get_many(self, org_id: str, agent_ids: Sequence[str]) -> dict[str, Agent]:
        """The organization's agents named, by id (`BatchGetItem`, consistent: PynamoDB asks 100
        keys at a time and again for any left unprocessed). Raises NotFoundError for the first of
        `agent_ids` the organization does not have (or is deleting)."""
        wanted = list(dict.fromkeys(agent_ids))
        rows = AgentRow.batch_get([(org_id, a) for a in wanted], consistent_read=True)
        found = {row.agent_id: record_of(row, Agent) for row in rows if row.deleting_at is None}
        for agent_id in wanted:
            if agent_id not in found:
                raise NotFoundError(f"agent {agent_id} not found", field="agent_id")
        return found

    def list(self, org_id: str) -> list[Agent]:
        """Every agent of the organization, by id (not those being deleted)."""
        return [record_of(row, Agent) for row in AgentRow.query(org_id) if row.deleting_at is None]

    def start_deleting(self, org_id: str, agent_id: str, at: str) -> tuple[Agent, bool]:
        """Mark the agent as being deleted (`deleting_at`, conditional on it existing unmarked);
        returns the agent and True, or the agent and False when it was being deleted already.

        Raises:
            NotFoundError: the organization has no such agent.
        """
        row = AgentRow(org_id, agent_id)
        if conditional_update(
            row,
            [AgentRow.deleting_at.set(at)],
            AgentRow.agent_id.exists() & AgentRow.deleting_at.does_not_exist(),
        ):
            return record_of(row, Agent), True  # the update read back every attribute
        try:
            return record_of(AgentRow.get(org_id, agent_id, consistent_read=True), Agent), False
        except DoesNotExist:
            raise NotFoundError(f"agent {agent_id} not found", field="agent_id") from None

    def stop_deleting(self, org_id: str, agent_id: str) -> None:
        """Take the mark off (a delete refused before it deleted anything)."""
        conditional_update(
            AgentRow(org_id, agent_id), [AgentRow.deleting_at.remove()], AgentRow.agent_id.exists()
        )

    def delete(self, org_id: str, agent_id: str) -> None:
        """Delete the agent's published versions (a query of its key), then the agent itself."""
        key = org_key(org_id, agent_id)
        delete_found(
            AgentVersionRow.query(key, attributes_to_get=["agent_key", "version"]), AgentVersionRow
        )
        AgentRow(org_id, agent_id).delete()

    def edit_draft(self, before: Agent, after: Agent) -> None:
        """Write what `after` changes of `before`'s draft and name (last writer wins per field).

        Raises:
            NotFoundError: the agent is gone.
            ValueError: `after` changes anything but the draft and the name (a bug).
        """
        actions = changes(AgentRow, before, after, fixed=_NOT_DRAFT)
        if actions and not conditional_update(
            AgentRow(before.org_id, before.agent_id), actions, AgentRow.agent_id.exists()
        ):
            raise NotFoundError(f"agent {before.agent_id} not found", field="agent_id")

    def get_version(self, org_id: str, agent_id: str, version: int) -> AgentVersion | None:
        """A published version of the organization's agent, or None."""
        try:
            row = AgentVersionRow.get(org_key(org_id, agent_id), version, consistent_read=True)
            return record_of(row, AgentVersion)
        except DoesNotExist:
            return None

    def get_versions(
        self, org_id: str, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], AgentVersion]:
        """The published versions named by `(agent_id, version)` (`BatchGetItem`, consistent:
        PynamoDB asks 100 keys at a time and again for any left unprocessed); a key with no such
        version is left out."""
        wanted = list(dict.fromkeys(keys))
        rows = AgentVersionRow.batch_get(
            [(org_key(org_id, a), int(v)) for a, v in wanted], consistent_read=True
        )
        found = (record_of(row, AgentVersion) for row in rows)
        return {(v.agent_id, int(v.version)): v for v in found}

    def list_versions(self, org_id: str, agent_id: str) -> builtins.list[AgentVersion]:
        """The organization's agent's published versions, newest first."""
        rows = AgentVersionRow.query(org_key(org_id, agent_id), scan_index_forward=False)
        return [record_of(row, AgentVersion) for row in rows]

    def publish(self, version: AgentVersion) -> bool:
        """Write a new immutable version and raise the agent's `latest_version` and `live_version`
        to it, atomically; an older number than the latest is written without moving them. Either
        write holds only while the agent exists and is not being deleted.

        Returns False when the same version with the same spec hash exists already (a no-op).
        Raises:
            ConflictError: the version exists with another spec.
            NotFoundError: the agent is gone or being deleted.
        """
        row = row_of(version, AgentVersionRow, agent_key=org_key(version.org_id, version.agent_id))
        with_agent = AgentRow(version.org_id, version.agent_id)
        try:
            with TX.write() as t:
                t.save(row, condition=AgentVersionRow.version.does_not_exist())
                t.update(
                    with_agent,
                    actions=[
                        AgentRow.latest_version.set(version.version),
                        AgentRow.live_version.set(version.version),
                    ],
                    condition=AgentRow.agent_id.exists()
                    & AgentRow.deleting_at.does_not_exist()
                    & (AgentRow.latest_version < version.version),
                )
            return True
        except TransactWriteError as exc:
            codes = reason_codes(exc)
            existing = self.get_version(version.org_id, version.agent_id, int(version.version))
            if existing is not None:
                if existing.spec_hash == version.spec_hash:
                    return False
                raise ConflictError(
                    f"version {version.version} of agent {version.agent_id} is already "
                    "published with another spec; versions are immutable",
                    field="version",
                ) from exc
            if len(codes) > 1 and codes[1] == "ConditionalCheckFailed":
                if not agent_live(version.org_id, version.agent_id):
                    raise NotFoundError(
                        f"agent {version.agent_id} not found", field="agent_id"
                    ) from exc
                # An older version number than the latest: store it without moving `latest_version`.
                try:
                    with TX.write() as t:
                        check_agent_live(t, version.org_id, version.agent_id)
                        t.save(row, condition=AgentVersionRow.version.does_not_exist())
                    return True
                except TransactWriteError as put_error:
                    unless_condition_failed(put_error)
                    return self.publish(version)
            raise


# --- model profiles --------------------------------------------------------------------------


class ModelProfileStore:
    """Model profiles of an organization (port `ports.catalog.ModelProfiles`)."""

    def create(self, profile: ModelProfile) -> None:
        """Raises ConflictError when the id is taken in the organization."""
        save_new(
            row_of(profile, ModelProfileRow),
            ModelProfileRow.model_profile_id.does_not_exist(),
            f"model profile {profile.model_profile_id} already exists",
            field="model_profile_id",
        )

    def get(
        self, org_id: str, model_profile_id: str, *, field: str = "model_profile_id"
    ) -> ModelProfile:
        """Raises NotFoundError (naming `field`) for an unknown profile."""
        try:
            row = ModelProfileRow.get(org_id, model_profile_id, consistent_read=True)
            return record_of(row, ModelProfile)
        except DoesNotExist:
            raise NotFoundError(
                f"model profile {model_profile_id} not found", field=field
            ) from None

    def delete(self, org_id: str, model_profile_id: str) -> None:
        """Forget the profile (nothing when it is gone already)."""
        ModelProfileRow(org_id, model_profile_id).delete()

    def list(self, org_id: str) -> list[ModelProfile]:
        """Every profile of the organization, by id."""
        return [record_of(row, ModelProfile) for row in ModelProfileRow.query(org_id)]


# --- evaluations (docs/guides/by-hand.md) --------------------------------------------------------

_EVALUATION_KEYS = ("org_id", "evaluation_id", "created_at", "created_by")


class EvaluationStore:
    """Evaluations by organization and id (port `ports.catalog.Evaluations`)."""

    def create(self, evaluation: Evaluation) -> None:
        """Keep a new evaluation, checking in the same write that its agent and dataset exist and
        are not being deleted.

        Raises:
            ConflictError: (field `evaluation_id`) the organization has the id.
            NotFoundError: its agent (`agent_id`) or dataset (`dataset_id`) is gone or being
                deleted.
        """
        org_id = evaluation.org_id
        try:
            with TX.write() as t:
                check_agent_live(t, org_id, evaluation.agent_id)
                check_dataset_live(t, org_id, evaluation.dataset_id)
                t.save(
                    row_of(evaluation, EvaluationRow),
                    condition=EvaluationRow.evaluation_id.does_not_exist(),
                )
        except TransactWriteError as exc:
            unless_condition_failed(exc)
            if not agent_live(org_id, evaluation.agent_id):
                raise NotFoundError(
                    f"agent {evaluation.agent_id} not found", field="agent_id"
                ) from exc
            if not dataset_live(org_id, evaluation.dataset_id):
                raise NotFoundError(
                    f"dataset {evaluation.dataset_id} not found", field="dataset_id"
                ) from exc
            raise ConflictError(
                f"evaluation {evaluation.evaluation_id} already exists", field="evaluation_id"
            ) from exc

    def get(self, org_id: str, evaluation_id: str) -> Evaluation:
        """Raises NotFoundError (field `evaluation_id`) for one the organization does not have."""
        try:
            row = EvaluationRow.get(org_id, evaluation_id, consistent_read=True)
        except DoesNotExist:
            raise NotFoundError(
                f"evaluation {evaluation_id} not found", field="evaluation_id"
            ) from None
        return record_of(row, Evaluation)

    def list(
        self, org_id: str, limit: int = 50, start: str | None = None
    ) -> tuple[builtins.list[Evaluation], str | None]:
        """A page of the organization's evaluations by id, from after `start` (an evaluation id),
        and the id the next page starts after (None after the last)."""
        rows = EvaluationRow.query(
            org_id,
            limit=limit,
            last_evaluated_key=(
                {"org_id": {"S": org_id}, "evaluation_id": {"S": start}} if start else None
            ),
        )
        found = [record_of(r, Evaluation) for r in rows]
        last = rows.last_evaluated_key
        return found, (last["evaluation_id"]["S"] if last else None)

    def update(self, before: Evaluation, after: Evaluation) -> None:
        """Write what `after` changes of `before` (conditional on the evaluation existing).

        Raises:
            NotFoundError: the evaluation is gone.
            ValueError: `after` changes its organization, id or creation (a bug).
        """
        actions = changes(EvaluationRow, before, after, fixed=_EVALUATION_KEYS)
        if actions and not conditional_update(
            EvaluationRow(before.org_id, before.evaluation_id),
            actions,
            EvaluationRow.evaluation_id.exists(),
        ):
            raise NotFoundError(
                f"evaluation {before.evaluation_id} not found", field="evaluation_id"
            )

    def delete(self, org_id: str, evaluation_id: str) -> None:
        """Delete the evaluation (nothing when it is gone already)."""
        EvaluationRow(org_id, evaluation_id).delete()
