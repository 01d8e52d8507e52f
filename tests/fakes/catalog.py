"""Fakes of `chalicelib.services.ports.catalog`."""

from __future__ import annotations

import builtins
from collections.abc import Sequence
from dataclasses import replace
from typing import Any

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
from chalicelib.errors import ConflictError, NotFoundError


class Liveness:
    """What the stores' transactions check before writing something of an agent's or a
    dataset's: that it is not being deleted. A fake given one (`FakeContainer` wires them)
    refuses such a write as the store does; unlike the store, it lets through one of an agent or
    dataset it never had, so a test may seed a run or a suite alone."""

    def __init__(self, agents: FakeAgents, datasets: FakeDatasets) -> None:
        self.agents, self.datasets = agents, datasets

    def agent(self, org_id: str, agent_id: str) -> None:
        """Raises NotFoundError (field `agent_id`) while the agent is being deleted."""
        if (org_id, agent_id) in self.agents.deleting:
            raise NotFoundError(f"agent {agent_id} not found", field="agent_id")

    def dataset(self, org_id: str, dataset_id: str) -> None:
        """Raises NotFoundError (field `dataset_id`) while the dataset is being deleted."""
        if (org_id, dataset_id) in self.datasets.deleting:
            raise NotFoundError(f"dataset {dataset_id} not found", field="dataset_id")


class FakeEnvironments:
    """`ports.catalog.Environments` in a dict keyed by (org_id, environment_id)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], Environment] = {}

    def create(self, environment: Environment) -> None:
        key = (environment.org_id, environment.environment_id)
        if key in self.kept:
            raise ConflictError(
                f"environment {environment.environment_id} already exists", field="environment_id"
            )
        self.kept[key] = environment

    def get(
        self, org_id: str, environment_id: str, *, field: str = "environment_id"
    ) -> Environment:
        try:
            return self.kept[(org_id, environment_id)]
        except KeyError:
            raise NotFoundError(f"environment {environment_id} not found", field=field) from None

    def list(self, org_id: str) -> list[Environment]:
        return [e for (org, _), e in sorted(self.kept.items()) if org == org_id]

    def serve(
        self, org_id: str, environment_id: str, agent_id: str, version: int, *, expect: int | None
    ) -> bool:
        env = self.get(org_id, environment_id)
        if (env.serving or {}).get(agent_id) != expect:
            return False
        self.kept[(org_id, environment_id)] = replace(
            env, serving={**(env.serving or {}), agent_id: version}
        )
        return True

    def stop_serving(self, org_id: str, environment_id: str, agent_id: str) -> bool:
        env = self.kept.get((org_id, environment_id))
        if env is None or agent_id not in (env.serving or {}):
            return False
        serving = {a: v for a, v in env.serving.items() if a != agent_id}
        self.kept[(org_id, environment_id)] = replace(env, serving=serving)
        return True

    def set_test_connections(
        self, org_id: str, environment_id: str, test_connections: dict[str, str]
    ) -> Environment:
        env = self.get(org_id, environment_id)
        self.kept[(org_id, environment_id)] = replace(env, test_connections=dict(test_connections))
        return self.kept[(org_id, environment_id)]

    def delete(self, org_id: str, environment_id: str) -> None:
        self.kept.pop((org_id, environment_id), None)


class FakeAgents:
    """`ports.catalog.Agents`: agents by (org_id, agent_id), versions by (org_id, agent_id,
    version)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], Agent] = {}
        self.versions: dict[tuple[str, str, int], AgentVersion] = {}
        self.deleting: set[tuple[str, str]] = set()
        """The agents being deleted: they read as gone."""

    def seed(
        self, org_id: str, agent_id: str, *, versions: int = 0, at: str = "2026-12-01T08:00:00.000Z"
    ) -> Agent:
        """Keep agent `agent_id` with versions 1..`versions` published (tests)."""
        self.create(
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
        for version in range(1, versions + 1):
            self.publish(
                AgentVersion(
                    org_id=org_id,
                    agent_id=agent_id,
                    version=version,
                    spec={},
                    spec_hash=f"h{version}",
                    published_at=at,
                )
            )
        return self.get(org_id, agent_id)

    def create(self, agent: Agent) -> None:
        key = (agent.org_id, agent.agent_id)
        if key in self.kept:
            raise ConflictError(f"agent {agent.agent_id} already exists", field="agent_id")
        self.kept[key] = agent

    def get(self, org_id: str, agent_id: str) -> Agent:
        found = self.kept.get((org_id, agent_id))
        if found is None or (org_id, agent_id) in self.deleting:
            raise NotFoundError(f"agent {agent_id} not found", field="agent_id")
        return found

    def get_many(self, org_id: str, agent_ids: Sequence[str]) -> dict[str, Agent]:
        return {agent_id: self.get(org_id, agent_id) for agent_id in agent_ids}

    def list(self, org_id: str) -> builtins.list[Agent]:
        return [
            a
            for key, a in sorted(self.kept.items())
            if key[0] == org_id and key not in self.deleting
        ]

    def start_deleting(self, org_id: str, agent_id: str, at: str) -> tuple[Agent, bool]:
        found = self.kept.get((org_id, agent_id))
        if found is None:
            raise NotFoundError(f"agent {agent_id} not found", field="agent_id")
        marked = (org_id, agent_id) not in self.deleting
        self.deleting.add((org_id, agent_id))
        return found, marked

    def stop_deleting(self, org_id: str, agent_id: str) -> None:
        self.deleting.discard((org_id, agent_id))

    def delete(self, org_id: str, agent_id: str) -> None:
        for key in [k for k in self.versions if k[:2] == (org_id, agent_id)]:
            del self.versions[key]
        self.kept.pop((org_id, agent_id), None)
        self.deleting.discard((org_id, agent_id))

    def edit_draft(self, before: Agent, after: Agent) -> None:
        now = self.get(before.org_id, before.agent_id)
        edited = {
            name: getattr(after, name)
            for name in ("name", "draft_spec", "draft_spec_hash", "draft_updated_at")
            if getattr(after, name) != getattr(before, name)
        }
        if replace(before, **edited) != after:
            raise ValueError("only the draft and the name of an agent are edited")
        self.kept[(before.org_id, before.agent_id)] = replace(now, **edited)

    def get_version(self, org_id: str, agent_id: str, version: int) -> AgentVersion | None:
        return self.versions.get((org_id, agent_id, version))

    def get_versions(
        self, org_id: str, keys: Sequence[tuple[str, int]]
    ) -> dict[tuple[str, int], AgentVersion]:
        return {
            (a, v): self.versions[(org_id, a, v)]
            for a, v in keys
            if (org_id, a, v) in self.versions
        }

    def list_versions(self, org_id: str, agent_id: str) -> builtins.list[AgentVersion]:
        return sorted(
            (
                v
                for (org, agent, _), v in self.versions.items()
                if (org, agent) == (org_id, agent_id)
            ),
            key=lambda v: v.version,
            reverse=True,
        )

    def publish(self, version: AgentVersion) -> bool:
        key = (version.org_id, version.agent_id, version.version)
        existing = self.versions.get(key)
        if existing is not None:
            if existing.spec_hash == version.spec_hash:
                return False
            raise ConflictError(
                f"version {version.version} of agent {version.agent_id} is already published "
                "with another spec; versions are immutable",
                field="version",
            )
        agent = self.get(version.org_id, version.agent_id)
        self.versions[key] = version
        if agent.latest_version < version.version:
            self.kept[(agent.org_id, agent.agent_id)] = replace(
                agent, latest_version=version.version, live_version=version.version
            )
        return True


class FakeJudges:
    """`ports.catalog.Judges`: headers and versions by (org_id, judge_id, version)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str, int], Judge] = {}

    def create(self, header: Judge) -> None:
        key = (header.org_id, header.judge_id, 0)
        if key in self.kept:
            raise ConflictError(f"judge {header.judge_id} already exists", field="judge_id")
        self.kept[key] = header

    def get(
        self, org_id: str, judge_id: str, version: int = 0, *, field: str = "judge_id"
    ) -> Judge:
        try:
            return self.kept[(org_id, judge_id, version)]
        except KeyError:
            what = f"judge {judge_id}" if version == 0 else f"version {version} of judge {judge_id}"
            raise NotFoundError(f"{what} not found", field=field) from None

    def versions(self, org_id: str, judge_id: str) -> list[Judge]:
        return sorted(
            (
                j
                for (org, judge, v), j in self.kept.items()
                if (org, judge) == (org_id, judge_id) and v > 0
            ),
            key=lambda j: j.version,
        )

    def publish(self, header: Judge, version: Judge) -> bool:
        stored = self.get(header.org_id, header.judge_id)
        key = (version.org_id, version.judge_id, version.version)
        if key in self.kept or stored.latest_version != header.latest_version:
            return False
        self.kept[key] = version
        self.kept[(header.org_id, header.judge_id, 0)] = replace(
            stored, latest_version=version.version
        )
        return True


class FakeModelProfiles:
    """`ports.catalog.ModelProfiles` in a dict keyed by (org_id, model_profile_id)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], ModelProfile] = {}

    def create(self, profile: ModelProfile) -> None:
        key = (profile.org_id, profile.model_profile_id)
        if key in self.kept:
            raise ConflictError(
                f"model profile {profile.model_profile_id} already exists", field="model_profile_id"
            )
        self.kept[key] = profile

    def get(
        self, org_id: str, model_profile_id: str, *, field: str = "model_profile_id"
    ) -> ModelProfile:
        try:
            return self.kept[(org_id, model_profile_id)]
        except KeyError:
            raise NotFoundError(
                f"model profile {model_profile_id} not found", field=field
            ) from None

    def delete(self, org_id: str, model_profile_id: str) -> None:
        self.kept.pop((org_id, model_profile_id), None)

    def list(self, org_id: str) -> list[ModelProfile]:
        return [p for (org, _), p in sorted(self.kept.items()) if org == org_id]


class FakeDatasets:
    """`ports.catalog.Datasets`: headers and versions by (org_id, dataset_id, version), cases by
    version."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str, int], Dataset] = {}
        self.case_rows: dict[tuple[str, str, int], dict[str, dict[str, Any]]] = {}
        self.deleting: set[tuple[str, str]] = set()
        """The datasets being deleted: their headers read as gone."""

    def create(self, header: Dataset) -> None:
        key = (header.org_id, header.dataset_id, 0)
        if key in self.kept:
            raise ConflictError(f"dataset {header.dataset_id} already exists", field="dataset_id")
        self.kept[key] = header

    def get(self, org_id: str, dataset_id: str, version: int = 0) -> Dataset:
        found = self.kept.get((org_id, dataset_id, version))
        if found is None or (version == 0 and (org_id, dataset_id) in self.deleting):
            what = f"dataset {dataset_id}" + (f" version {version}" if version else "")
            raise NotFoundError(
                f"{what} not found", field="dataset_version" if version else "dataset_id"
            )
        return found

    def list(self, org_id: str) -> builtins.list[Dataset]:
        headers = [
            d
            for (org, ds, v), d in self.kept.items()
            if org == org_id and v == 0 and (org, ds) not in self.deleting
        ]
        return sorted(headers, key=lambda d: d.created_at, reverse=True)

    def list_with_latest(self, org_id: str) -> builtins.list[tuple[Dataset, Dataset | None]]:
        return [
            (
                h,
                self.kept.get((org_id, h.dataset_id, h.latest_version))
                if h.latest_version
                else None,
            )
            for h in self.list(org_id)
        ]

    def start_deleting(self, org_id: str, dataset_id: str, at: str) -> tuple[Dataset, bool]:
        found = self.kept.get((org_id, dataset_id, 0))
        if found is None:
            raise NotFoundError(f"dataset {dataset_id} not found", field="dataset_id")
        marked = (org_id, dataset_id) not in self.deleting
        self.deleting.add((org_id, dataset_id))
        return found, marked

    def stop_deleting(self, org_id: str, dataset_id: str) -> None:
        self.deleting.discard((org_id, dataset_id))

    def delete(self, org_id: str, dataset_id: str) -> None:
        for key in [k for k in self.kept if k[:2] == (org_id, dataset_id) and k[2] > 0]:
            del self.kept[key]
            self.case_rows.pop(key, None)
        self.kept.pop((org_id, dataset_id, 0), None)
        self.deleting.discard((org_id, dataset_id))

    def next_version(self, org_id: str, dataset_id: str) -> int:
        return (
            max((v for (org, ds, v) in self.kept if (org, ds) == (org_id, dataset_id)), default=0)
            + 1
        )

    def add_version(self, version: Dataset, cases: Sequence[DatasetCase]) -> None:
        key = (version.org_id, version.dataset_id, version.version)
        self.get(version.org_id, version.dataset_id)  # the store's claim checks the header
        if key in self.kept:
            raise ConflictError(
                "another version was added at the same time; retry", field="version"
            )
        self.kept[key] = version
        self.case_rows[key] = {
            case.case_id: case.case for case in sorted(cases, key=lambda case: case.case_id)
        }
        header = self.kept[(version.org_id, version.dataset_id, 0)]
        if header.latest_version < version.version:
            self.kept[(version.org_id, version.dataset_id, 0)] = replace(
                header, latest_version=version.version
            )

    def get_case(
        self, org_id: str, dataset_id: str, version: int, case_id: str
    ) -> dict[str, Any] | None:
        return self.case_rows.get((org_id, dataset_id, version), {}).get(case_id)

    def cases(self, org_id: str, dataset_id: str, version: int) -> builtins.list[dict[str, Any]]:
        return list(self.case_rows.get((org_id, dataset_id, version), {}).values())

    def cases_page(
        self, org_id: str, dataset_id: str, version: int, *, limit: int, after: str | None
    ) -> tuple[builtins.list[dict[str, Any]], bool]:
        rows = self.case_rows.get((org_id, dataset_id, version), {})
        ids = sorted(i for i in rows if after is None or i > after)
        return [rows[i] for i in ids[:limit]], len(ids) > limit

    def delete_empty(self, org_id: str, dataset_id: str) -> bool:
        header = self.kept.get((org_id, dataset_id, 0))
        if header is None or header.latest_version:
            return False
        del self.kept[(org_id, dataset_id, 0)]
        return True


class FakeEvaluations:
    """`ports.catalog.Evaluations` in a dict keyed by (org_id, evaluation_id)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], Evaluation] = {}
        self.live: Liveness | None = None

    def create(self, evaluation: Evaluation) -> None:
        if self.live is not None:
            self.live.agent(evaluation.org_id, evaluation.agent_id)
            self.live.dataset(evaluation.org_id, evaluation.dataset_id)
        key = (evaluation.org_id, evaluation.evaluation_id)
        if key in self.kept:
            raise ConflictError(
                f"evaluation {evaluation.evaluation_id} already exists", field="evaluation_id"
            )
        self.kept[key] = evaluation

    def get(self, org_id: str, evaluation_id: str) -> Evaluation:
        try:
            return self.kept[(org_id, evaluation_id)]
        except KeyError:
            raise NotFoundError(
                f"evaluation {evaluation_id} not found", field="evaluation_id"
            ) from None

    def list(
        self, org_id: str, limit: int = 50, start: str | None = None
    ) -> tuple[builtins.list[Evaluation], str | None]:
        mine = [e for (org, eid), e in sorted(self.kept.items()) if org == org_id]
        after = [e for e in mine if start is None or e.evaluation_id > start]
        page = after[:limit]
        return page, (page[-1].evaluation_id if len(after) > limit else None)

    def update(self, before: Evaluation, after: Evaluation) -> None:
        key = (before.org_id, before.evaluation_id)
        if key not in self.kept:
            raise NotFoundError(
                f"evaluation {before.evaluation_id} not found", field="evaluation_id"
            )
        self.kept[key] = after

    def delete(self, org_id: str, evaluation_id: str) -> None:
        self.kept.pop((org_id, evaluation_id), None)
