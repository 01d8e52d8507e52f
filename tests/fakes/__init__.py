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

from chalicelib.adapters.egress import Egress
from chalicelib.adapters.runtimes import build_runtimes
from chalicelib.adapters.tool_transport import ConnectionTransport
from chalicelib.clock import FixedClock
from chalicelib.config import Settings
from tests.fakes.access import FakeApiKeys, FakeMembers
from tests.fakes.automation import (
    FakeMailer,
    FakeNotifications,
    FakePromotions,
    FakeSuites,
)
from tests.fakes.catalog import (
    FakeAgents,
    FakeDatasets,
    FakeEnvironments,
    FakeEvaluations,
    FakeJudges,
    FakeModelProfiles,
    Liveness,
)
from tests.fakes.ledger import FakeQueue, FakeRuns
from tests.fakes.review import FakeReviewQueue
from tests.fakes.telemetry import FakeMetrics
from tests.fakes.tenants import FakeBudgets, FakeOrganizations
from tests.fakes.tools import (
    FakeConnections,
    FakeToolSessions,
    FakeToolTransport,
    FakeWorkspaces,
)
from tests.fakes.usage import FakeUsage

START = datetime(2026, 12, 1, 9, 0, tzinfo=UTC)
"""Where a fake container's clock starts."""

PUBLIC_ADDRESS = "93.184.216.34"
"""What every host name resolves to in a fake container: a public address, so egress checks pass
without asking DNS."""


class FakeSecrets:
    """The organizations' secrets (`c.secrets`) by (org_id, name); none unless a test puts some."""

    def __init__(self) -> None:
        self.kept: dict[tuple[str, str], str] = {}

    def get(self, org_id: str, name: str) -> str | None:
        return self.kept.get((org_id, name))

    def values(self, org_id: str) -> tuple[str, ...]:
        return tuple(value for (org, _), value in sorted(self.kept.items()) if org == org_id)


class FakeBucket:
    """The results bucket in memory: `s3://results/<key>` pointers, URLs that name them."""

    def __init__(self) -> None:
        self.texts: dict[str, str] = {}

    def put_text(self, key: str, text: str) -> str:
        self.texts[f"s3://results/{key}"] = text
        return f"s3://results/{key}"

    def get_text(self, pointer: str) -> str:
        return self.texts[pointer]

    def url(self, pointer: str, expires_s: int) -> str:
        return f"https://signed.example/{pointer.removeprefix('s3://')}?expires={expires_s}"

    def delete_prefix(self, prefix: str) -> int:
        gone = [p for p in self.texts if p.removeprefix("s3://results/").startswith(prefix)]
        for pointer in gone:
            del self.texts[pointer]
        return len(gone)


class FakeContainer:
    """What `bootstrap.Container` offers the services, built of fakes (the message bus as wired:
    `tests/services/conftest.py`'s `events` fixture records events instead of handling them)."""

    def __init__(
        self, *, settings: Settings | None = None, at: datetime = START, **collaborators: Any
    ) -> None:
        self.settings = settings or Settings()
        self.clock = FixedClock(at)
        self.environments = FakeEnvironments()
        self.orgs = FakeOrganizations()
        self.runs = FakeRuns(self.orgs)
        self.case_queue = FakeQueue()
        self.agents = FakeAgents()
        self.judges = FakeJudges()
        self.model_profiles = FakeModelProfiles()
        self.datasets = FakeDatasets()
        self.evaluations = FakeEvaluations()
        # What a write of an agent's or a dataset's data checks, shared as the stores share it.
        live = Liveness(self.agents, self.datasets)
        self.spend = FakeBudgets(self.orgs, self.agents, self.runs)
        self.usage = FakeUsage(self.runs, self.spend)
        self.secrets = FakeSecrets()
        self.resolver = lambda _host, _port: [PUBLIC_ADDRESS]
        # The real runtimes: validating a spec reads no network with the resolver above.
        self.runtimes = build_runtimes(
            settings=lambda: self.settings, resolver=lambda: self.resolver
        )
        self.connections = FakeConnections()
        # Calls are recorded, not made; checking a URL is the real egress check, which reads no
        # network with the resolver above.
        self.tool_transport = FakeToolTransport(
            check_url=ConnectionTransport(
                Egress(lambda: self.resolver, lambda: self.settings.assay_allow_private_network)
            ).check_url
        )
        self.workspaces = FakeWorkspaces()
        self.suites = FakeSuites()
        self.promotions = FakePromotions()
        self.runs.live = self.suites.live = self.promotions.live = self.evaluations.live = live
        self.notifications = FakeNotifications()
        self.mailer = FakeMailer()
        self.metrics = FakeMetrics()
        self.bucket = FakeBucket()
        self.members = FakeMembers()
        self.api_keys = FakeApiKeys()
        self.tool_sessions = FakeToolSessions()
        self.review = FakeReviewQueue(self.runs, self.suites)
        for name, value in collaborators.items():
            setattr(self, name, value)
