"""The whole embedded stack for end-to-end and security tests: moto's server (child process,
127.0.0.1), the resources from `infra/`, the Chalice routes over HTTP, and a poller per queue
handler.

One stack per session; tests stay apart by organization: every `api` fixture is a new
organization with its own token, so nothing one test writes is visible to another.
Schedules do not run on their own here: tests call the sweep with the clock they choose.
"""

from __future__ import annotations

import uuid
from collections.abc import Callable, Iterator, Mapping, Sequence
from datetime import UTC, datetime
from typing import Any

import pytest

from assay_local.stack import EmbeddedStack
from chalicelib import bootstrap
from chalicelib.api.common import issue_token
from chalicelib.clock import FixedClock, SystemClock
from tests.e2e.manual import Queue
from tests.support.e2e import Api

_E2E_DIRS = ("e2e", "security", "fuzz")


def pytest_collection_modifyitems(items: list[pytest.Item]) -> None:
    """Mark every test of `tests/e2e`, `tests/security` and `tests/fuzz` `e2e`, and of
    `tests/browser` `browser` (`make test-fast` leaves both out)."""
    for item in items:
        if item.path.parent.name in _E2E_DIRS and item.path.parent.parent.name == "tests":
            item.add_marker(pytest.mark.e2e)
        if item.path.parent.name == "browser" and item.path.parent.parent.name == "tests":
            item.add_marker(pytest.mark.browser)


@pytest.fixture(scope="session")
def stack() -> Iterator[EmbeddedStack]:
    with EmbeddedStack(
        workers=12,
        scheduler=False,
        env={
            "ASSAY_RETRY_BACKOFF_SECONDS": "0.01",
            # the tests' own agents too (an installed assay has no `tests` package)
            "ASSAY_PYTHON_AGENT_MODULES": "bench.agents,tests.support",
        },
    ) as s:
        yield s


def make_api(
    stack: EmbeddedStack,
    org_id: str | None = None,
    user_id: str = "tester@example.com",
    token: str | None = "sign",
    role: str | None = "admin",
) -> Api:
    """An Api for `user_id` of `org_id` (default a fresh organization, whose first request makes
    them its admin). In an organization that exists, they are made a member with `role` first;
    None leaves them a person of no role there. `token`: "sign" signs one, else it is sent as it
    is (None: no Authorization header)."""
    s = stack.settings
    org = org_id or f"org_{uuid.uuid4().hex[:10]}"
    tok = (
        issue_token(org, user_id, secret=s.assay_jwt_secret, issuer=s.assay_jwt_issuer)
        if token == "sign"
        else token
    )
    if org_id is not None and role is not None:
        add_member(stack, org, user_id, role)
    return Api(stack.api_url, org, user_id, tok)


@pytest.fixture
def new_api(stack: EmbeddedStack) -> Callable[..., Api]:
    """`new_api(org_id=None, user_id="tester@example.com", token="sign", role="admin")` -> an Api
    (`make_api`)."""
    return lambda *args, **kw: make_api(stack, *args, **kw)


def add_member(stack: EmbeddedStack, org_id: str, user_id: str, role: str) -> None:
    """Make `user_id` a member of `org_id` with `role` (or change their role), as its admin would
    through the API. It does not take the bootstrap: the organization's own first sign-in still
    makes its admin."""
    from chalicelib.domain.access import Member

    members = bootstrap.container().members
    now = "2026-12-01T00:00:00Z"
    member = Member(org_id, user_id, role, added_at=now, added_by="tests", updated_at=now)
    members.put(member, new=False)


@pytest.fixture
def api(new_api: Callable[..., Api]) -> Api:
    """An Api for a fresh organization."""
    return new_api()


@pytest.fixture
def container(stack: EmbeddedStack) -> bootstrap.Container:
    """The process's container (the stack's handlers and routes use the same one)."""
    return bootstrap.container()


@pytest.fixture
def limits(container):
    """Set the run limit and the organizations' default limit (`EVAL_ORG_CONCURRENCY`, which every
    organization without its own follows) for this test."""
    original = container.settings

    def apply(run_limit: int, org_limit: int) -> None:
        bootstrap.override(
            settings=original.model_copy(
                update={"eval_run_concurrency": run_limit, "eval_org_concurrency": org_limit}
            )
        )

    yield apply
    bootstrap.override(settings=original)


@pytest.fixture
def frozen(stack, container):
    """Pollers paused and the clock fixed at a known instant; both restored afterwards."""
    stack.pause_pollers()
    clock = FixedClock(datetime(2026, 11, 29, 12, 0, tzinfo=UTC))
    bootstrap.override(clock=clock)
    yield clock
    bootstrap.override(clock=SystemClock())
    Queue(stack).drain()
    stack.resume_pollers()


class StubResolver:
    """A resolver that answers only the names it was given: `{host: [ip, ...]}`.

    Egress checks resolve a URL's host through the container's `resolver`; with this stub a test
    decides what a name resolves to (a metadata address, a private one) and no real DNS is asked.
    A host it does not know raises `OSError`, as a name that does not resolve would. `asked` lists
    every `(host, port)` looked up.
    """

    def __init__(self, names: Mapping[str, Sequence[str]]) -> None:
        self.names = {k.lower(): list(v) for k, v in names.items()}
        self.asked: list[tuple[str, int]] = []

    def __call__(self, host: str, port: int) -> list[str]:
        self.asked.append((host, port))
        found = self.names.get(host.lower().rstrip("."))
        if found is None:
            raise OSError(f"stub resolver: {host} does not resolve")
        return list(found)


@pytest.fixture
def resolver(container) -> Iterator[Callable[[Mapping[str, Sequence[str]]], StubResolver]]:
    """`resolver({"agent.test": ["169.254.169.254"]})` installs a `StubResolver` for this test."""
    original = container.__dict__.get("resolver")

    def install(names: Mapping[str, Sequence[str]]) -> StubResolver:
        stub = StubResolver(names)
        bootstrap.override(resolver=stub)
        return stub

    yield install
    if original is None:
        container.__dict__.pop("resolver", None)
    else:
        bootstrap.override(resolver=original)


@pytest.fixture
def operator(container) -> Iterator[Callable[..., Any]]:
    """`operator(assay_allow_private_network=False, ...)` changes the operator's settings for this
    test."""
    original = container.settings

    def apply(**fields: Any) -> Any:
        settings = original.model_copy(update=fields)
        bootstrap.override(settings=settings)
        return settings

    yield apply
    bootstrap.override(settings=original)
