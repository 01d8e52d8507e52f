"""Ports of what an organization defines: environments, agents and versions, model profiles,
judges, datasets (implemented by `chalicelib.adapters.stores.catalog` / `.automation`)."""

from __future__ import annotations

from typing import Protocol

from chalicelib.domain.records import Environment


class Environments(Protocol):
    """An organization's environments and the version of each agent they serve (seed 004)."""

    def create(self, environment: Environment) -> None:
        """Keep a new environment. Raises ConflictError (field `environment_id`) when the id is taken."""

    def get(self, org_id: str, environment_id: str, *, field: str = "environment_id") -> Environment:
        """The organization's environment. Raises NotFoundError naming `field`."""

    def list(self, org_id: str) -> list[Environment]:
        """Every environment of the organization."""

    def serve(self, org_id: str, environment_id: str, agent_id: str, version: int, *, expect: int | None) -> bool:
        """Serve `version` of the agent if it serves `expect` now (None: none); False when it does not."""

    def delete(self, org_id: str, environment_id: str) -> None:
        """Forget the environment (nothing when it is gone already)."""
