"""Fakes of `chalicelib.services.ports.ledger`."""

from __future__ import annotations

from chalicelib.domain.enums import RunStatus
from chalicelib.domain.records import Run


class FakeRuns:
    """The runs' part of `ports.ledger` that the services use, in a dict by (org_id, run_id)."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], Run] = {}

    def add(self, run: Run) -> None:
        """Seed a run (tests)."""
        self.kept[(run.org_id, run.run_id)] = run

    def get(self, org_id: str, run_id: str) -> Run | None:
        return self.kept.get((org_id, run_id))

    def recent_active(self, org_id: str, limit: int) -> list[Run]:
        active = [r for (org, _), r in self.kept.items()
                  if org == org_id and r.status in (RunStatus.QUEUED, RunStatus.RUNNING)]
        return sorted(active, key=lambda r: r.created_at, reverse=True)[:limit]
