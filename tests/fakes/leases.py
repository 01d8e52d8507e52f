"""The attempts' claims of the fake ledger (`FakeRuns`): one lease per attempt, by (org_id,
run_id, attempt key), checked as the real store's conditions check them."""

from __future__ import annotations

from dataclasses import replace

from chalicelib.domain.leases import ERROR_CHARS, Lease
from chalicelib.domain.records import Run


class FakeLeases:
    """The lease methods of `ports.ledger.Runs` over `leases`."""

    leases: dict[tuple[str, str, str], Lease]

    def _others_write(self) -> None:
        """Run what another worker writes first (`FakeRuns.meanwhile`)."""
        raise NotImplementedError

    def take_lease(self, run: Run, key: str, holder: str, until_ms: int, now_ms: int) -> bool:
        self._others_write()
        kept = self.leases.get((run.org_id, run.run_id, key))
        if kept is not None and (kept.done or kept.until_ms >= now_ms):
            return False
        self.leases[(run.org_id, run.run_id, key)] = replace(
            kept or Lease(attempt_key=key), holder=holder, until_ms=until_ms
        )
        return True

    def extend_lease(self, run: Run, key: str, holder: str, until_ms: int) -> bool:
        kept = self.leases.get((run.org_id, run.run_id, key))
        if kept is None or kept.holder != holder:
            return False
        self.leases[(run.org_id, run.run_id, key)] = replace(kept, until_ms=until_ms)
        return True

    def release_lease(self, run: Run, key: str, holder: str) -> bool:
        kept = self.leases.get((run.org_id, run.run_id, key))
        if kept is None or kept.holder != holder or kept.done:
            return False
        self.leases[(run.org_id, run.run_id, key)] = replace(kept, until_ms=0)
        return True

    def fail_lease(self, run: Run, key: str, holder: str, error: str) -> Lease | None:
        kept = self.leases.get((run.org_id, run.run_id, key))
        if kept is None or kept.holder != holder or kept.done:
            return None
        failed = replace(
            kept, until_ms=0, failures=kept.failures + 1, last_error=error[:ERROR_CHARS]
        )
        self.leases[(run.org_id, run.run_id, key)] = failed
        return failed

    def lease_of(self, run: Run, key: str) -> Lease | None:
        return self.leases.get((run.org_id, run.run_id, key))

    def _lease_done(self, run: Run, key: str) -> None:
        kept = self.leases.get((run.org_id, run.run_id, key)) or Lease(attempt_key=key)
        self.leases[(run.org_id, run.run_id, key)] = replace(kept, done=True)
