"""Ports of what an organization defines: environments, agents and versions, model profiles,
judges, datasets, evaluations (implemented by `chalicelib.adapters.stores.catalog` and `.datasets` /
`.automation`)."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from typing import Any, Protocol

from chalicelib.domain.records import (
    Agent,
    AgentVersion,
    Dataset,
    DatasetCase,
    Environment,
    Evaluation,
    Judge,
    ModelProfile,
)


class Environments(Protocol):
    """An organization's environments and the version of each agent they serve
    (docs/guides/suites.md)."""

    def create(self, environment: Environment) -> None:
        """Keep a new environment. Raises ConflictError (field `environment_id`) when the id is
        taken."""

    def get(
        self, org_id: str, environment_id: str, *, field: str = "environment_id"
    ) -> Environment:
        """The organization's environment. Raises NotFoundError naming `field`."""

    def list(self, org_id: str) -> list[Environment]:
        """Every environment of the organization."""

    def serve(
        self, org_id: str, environment_id: str, agent_id: str, version: int, *, expect: int | None
    ) -> bool:
        """Serve `version` of the agent if it serves `expect` now (None: none); False when it does
        not."""

    def stop_serving(self, org_id: str, environment_id: str, agent_id: str) -> bool:
        """Take the agent out of what the environment serves (conditional on it as read, read
        again while another write wins); False when it served none of the agent's versions.
        Raises ConflictError (field `environment_id`) when it keeps changing."""

    def set_test_connections(
        self, org_id: str, environment_id: str, test_connections: dict[str, str]
    ) -> Environment:
        """Replace the environment's `{connection_id: test_connection_id}`; the environment as it
        now is. Raises NotFoundError (field `environment_id`)."""

    def delete(self, org_id: str, environment_id: str) -> None:
        """Forget the environment (nothing when it is gone already)."""


class Agents(Protocol):
    """An organization's agents: each one's draft, edited in place, and its immutable published
    versions; a draft is never counted as a version (docs/guides/agents.md)."""

    def create(self, agent: Agent) -> None:
        """Keep a new agent. Raises ConflictError (field `agent_id`) when the id is taken."""

    def get(self, org_id: str, agent_id: str) -> Agent:
        """The organization's agent. Raises NotFoundError (field `agent_id`), also for an agent
        being deleted (`start_deleting`)."""

    def get_many(self, org_id: str, agent_ids: Sequence[str]) -> dict[str, Agent]:
        """The organization's agents named, by id, read at most 100 at a time (consistent).
        Raises NotFoundError (field `agent_id`) for the first of `agent_ids` it does not have
        (or is deleting)."""

    def list(self, org_id: str) -> builtins.list[Agent]:
        """Every agent of the organization, by id (not those being deleted)."""

    def start_deleting(self, org_id: str, agent_id: str, at: str) -> tuple[Agent, bool]:
        """Mark the agent as being deleted at `at` (ISO): from then on it reads as gone, and no
        run, version, suite, evaluation or promotion of it is written. Returns the agent and
        whether this call marked it (False: it was being deleted already).
        Raises NotFoundError (field `agent_id`) when the organization has no such agent."""

    def stop_deleting(self, org_id: str, agent_id: str) -> None:
        """Take the mark off again (a delete refused before it deleted anything)."""

    def delete(self, org_id: str, agent_id: str) -> None:
        """Delete the agent's published versions, then the agent itself."""

    def edit_draft(self, before: Agent, after: Agent) -> None:
        """Write what `after` changes of `before`'s draft (`draft_*`) and `name`; the other fields
        are publishing's and the budgets'. Raises NotFoundError (field `agent_id`) when the agent
        is gone, ValueError when `after` changes another field (a bug)."""

    def get_version(self, org_id: str, agent_id: str, version: int) -> AgentVersion | None:
        """A published version of the organization's agent, None when it has no such version."""

    def get_versions(
        self, org_id: str, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], AgentVersion]:
        """The published versions named by `(agent_id, version)`, by that key, read in batches of
        at most 100 keys; a key with no such version is left out."""

    def list_versions(self, org_id: str, agent_id: str) -> builtins.list[AgentVersion]:
        """The agent's published versions, newest first."""

    def publish(self, version: AgentVersion) -> bool:
        """Keep a new immutable version and make it the agent's latest and live one, atomically
        (an older number than the latest is kept without moving either).

        Returns False when that version exists with the same `spec_hash` (publishing again is a
        no-op). Raises ConflictError (field `version`) when it exists with another spec,
        NotFoundError (field `agent_id`) when the agent is gone or being deleted.
        """


class Judges(Protocol):
    """An organization's judges: a header (`version` 0) and immutable published versions; a
    different judge invalidates the comparison (docs/guides/judges.md)."""

    def create(self, header: Judge) -> None:
        """Keep a new judge header. Raises ConflictError (field `judge_id`) when the id is taken."""

    def get(
        self, org_id: str, judge_id: str, version: int = 0, *, field: str = "judge_id"
    ) -> Judge:
        """The header (`version` 0) or a published version. Raises NotFoundError naming `field`."""

    def versions(self, org_id: str, judge_id: str) -> list[Judge]:
        """The judge's published versions, oldest first."""

    def publish(self, header: Judge, version: Judge) -> bool:
        """Keep `version` and move the header's `latest_version` to its number, together, if the
        header's latest is still `header.latest_version`; False when another publish won (nothing
        is written then)."""


class ModelProfiles(Protocol):
    """An organization's model profiles: the model an arm or a judge runs on
    (docs/reference/runtimes.md)."""

    def create(self, profile: ModelProfile) -> None:
        """Keep a new profile. Raises ConflictError (field `model_profile_id`) when it is taken."""

    def get(
        self, org_id: str, model_profile_id: str, *, field: str = "model_profile_id"
    ) -> ModelProfile:
        """The organization's profile. Raises NotFoundError naming `field`."""

    def delete(self, org_id: str, model_profile_id: str) -> None:
        """Forget the profile (nothing when it is gone already)."""

    def list(self, org_id: str) -> list[ModelProfile]:
        """Every profile of the organization, by id."""


class Datasets(Protocol):
    """An organization's datasets: a header (`version` 0), immutable versions and their cases."""

    def create(self, header: Dataset) -> None:
        """Keep a new dataset header. Raises ConflictError (field `dataset_id`) when it is taken."""

    def get(self, org_id: str, dataset_id: str, version: int = 0) -> Dataset:
        """The header (`version` 0) or a version whose cases are all written. Raises NotFoundError
        (field `dataset_id`, also for a dataset being deleted; `dataset_version` for a version
        unknown or still being written)."""

    def list(self, org_id: str) -> builtins.list[Dataset]:
        """The organization's dataset headers, newest first (not those being deleted)."""

    def list_with_latest(self, org_id: str) -> builtins.list[tuple[Dataset, Dataset | None]]:
        """`list`, each header with its latest ready version (None while it has none), read by
        the same request(s) as the headers."""

    def start_deleting(self, org_id: str, dataset_id: str, at: str) -> tuple[Dataset, bool]:
        """Mark the dataset as being deleted at `at` (ISO): from then on it reads as gone, and no
        version, run, suite or evaluation of it is written. Returns the header and whether this
        call marked it (False: it was being deleted already).
        Raises NotFoundError (field `dataset_id`) when the organization has no such dataset."""

    def stop_deleting(self, org_id: str, dataset_id: str) -> None:
        """Take the mark off again (a delete refused before it deleted anything)."""

    def delete(self, org_id: str, dataset_id: str) -> None:
        """Delete every version of the dataset and its cases, then the header."""

    def next_version(self, org_id: str, dataset_id: str) -> int:
        """One more than the highest version number claimed so far (1 for none)."""

    def add_version(self, version: Dataset, cases: Sequence[DatasetCase]) -> None:
        """Claim `version.version`, keep its cases, then make it readable and the header's latest
        (unless a later version became readable first). Raises ConflictError (field `version`)
        when the number was claimed meanwhile, NotFoundError (field `dataset_id`) when the dataset
        is gone or being deleted; nothing is kept then, nor when writing fails after the claim
        (what was written of the version is taken back before the error is raised)."""

    def get_case(
        self, org_id: str, dataset_id: str, version: int, case_id: str
    ) -> dict[str, Any] | None:
        """One case (its JSON) of a version, None when the version has no such case."""

    def cases(self, org_id: str, dataset_id: str, version: int) -> builtins.list[dict[str, Any]]:
        """Every case (its JSON) of a version, by case id."""

    def cases_page(
        self, org_id: str, dataset_id: str, version: int, *, limit: int, after: str | None
    ) -> tuple[builtins.list[dict[str, Any]], bool]:
        """At most `limit` cases of a version with a case id after `after` (None: from the first),
        by case id, and whether more follow."""

    def delete_empty(self, org_id: str, dataset_id: str) -> bool:
        """Forget a dataset header that has no readable version (how a create whose first version
        failed is undone); False when it has one, or is gone already."""


class Evaluations(Protocol):
    """An organization's evaluations: an agent, a dataset and a version selector
    (docs/guides/by-hand.md)."""

    def create(self, evaluation: Evaluation) -> None:
        """Keep a new evaluation. Raises ConflictError (field `evaluation_id`) when the
        organization has the id, NotFoundError (`agent_id`, `dataset_id`) when its agent or
        dataset is gone or being deleted."""

    def get(self, org_id: str, evaluation_id: str) -> Evaluation:
        """The organization's evaluation. Raises NotFoundError (field `evaluation_id`)."""

    def list(
        self, org_id: str, limit: int = 50, start: str | None = None
    ) -> tuple[builtins.list[Evaluation], str | None]:
        """A page of the organization's evaluations by id, after the id `start`, and the id the
        next page starts after (None after the last)."""

    def update(self, before: Evaluation, after: Evaluation) -> None:
        """Write what `after` changes of `before`. Raises NotFoundError when it is gone."""

    def delete(self, org_id: str, evaluation_id: str) -> None:
        """Delete the evaluation (nothing when it is gone)."""
