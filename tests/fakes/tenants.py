"""Fakes of `chalicelib.services.ports.tenants`."""

from __future__ import annotations

from dataclasses import replace

from chalicelib.domain.records import Organization


class FakeOrganizations:
    """The organizations' part of `ports.tenants` that the services use, in a dict by org_id."""

    def __init__(self) -> None:
        self.kept: dict[str, Organization] = {}

    def get(self, org_id: str) -> Organization | None:
        return self.kept.get(org_id)

    def ensure(self, org_id: str, *, concurrency_limit: int, now_iso: str) -> Organization:
        return self.kept.setdefault(org_id, Organization(org_id=org_id, concurrency_limit=concurrency_limit,
                                                         created_at=now_iso))

    def set_default_environment(self, org_id: str, environment_id: str | None, *, only_if_unset: bool = False) -> bool:
        org = self.kept[org_id]
        if only_if_unset and org.default_environment_id is not None:
            return False
        self.kept[org_id] = replace(org, default_environment_id=environment_id)
        return True
