"""Fakes of `chalicelib.services.ports.catalog`."""

from __future__ import annotations

from dataclasses import replace

from chalicelib.domain.records import Environment
from chalicelib.errors import ConflictError, NotFoundError


class FakeEnvironments:
    """`ports.catalog.Environments` in a dict keyed by (org_id, environment_id)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], Environment] = {}

    def create(self, environment: Environment) -> None:
        key = (environment.org_id, environment.environment_id)
        if key in self.kept:
            raise ConflictError(f"environment {environment.environment_id} already exists", field="environment_id")
        self.kept[key] = environment

    def get(self, org_id: str, environment_id: str, *, field: str = "environment_id") -> Environment:
        try:
            return self.kept[(org_id, environment_id)]
        except KeyError:
            raise NotFoundError(f"environment {environment_id} not found", field=field) from None

    def list(self, org_id: str) -> list[Environment]:
        return [e for (org, _), e in sorted(self.kept.items()) if org == org_id]

    def serve(self, org_id: str, environment_id: str, agent_id: str, version: int, *, expect: int | None) -> bool:
        env = self.get(org_id, environment_id)
        if (env.serving or {}).get(agent_id) != expect:
            return False
        self.kept[(org_id, environment_id)] = replace(env, serving={**(env.serving or {}), agent_id: version})
        return True

    def delete(self, org_id: str, environment_id: str) -> None:
        self.kept.pop((org_id, environment_id), None)
