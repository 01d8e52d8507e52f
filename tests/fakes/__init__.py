"""In-memory fakes of the services' ports (`chalicelib.services.ports`), for unit tests of the
services' rules without DynamoDB, SQS or S3 (issue 10, scope 2).

A fake keeps frozen records (`chalicelib.domain.records`) in a dict and honours the same
conditions as the store it stands for (a conditional write on a record that changed since it was
read returns False), so the services' retry paths run in unit tests too. `FakeContainer` holds
them with a fixed clock and default settings; a test builds one, seeds it, calls a service.
"""

from __future__ import annotations

from datetime import UTC, datetime
from typing import Any

from chalicelib.clock import FixedClock
from chalicelib.config import Settings
from tests.fakes.catalog import FakeEnvironments
from tests.fakes.ledger import FakeQueue, FakeRuns, WaitingOrganizations

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
"""Where a fake container's clock starts."""


class FakeContainer:
    """What `bootstrap.Container` offers the services, built of fakes (the message bus as wired:
    `tests/services/conftest.py`'s `events` fixture records events instead of handling them)."""

    def __init__(self, *, settings: Settings | None = None, at: datetime = START, **collaborators: Any) -> None:
        self.settings = settings or Settings()
        self.clock = FixedClock(at)
        self.environments = FakeEnvironments()
        self.orgs = WaitingOrganizations()
        self.runs = FakeRuns(self.orgs)
        self.case_queue = FakeQueue()
        for name, value in collaborators.items():
            setattr(self, name, value)
