"""The environments' rules (docs/guides/suites.md: environments, the default one) on fakes."""

from __future__ import annotations

import pytest

from chalicelib.domain.events import EnvironmentRemoved, Event
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Run
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError
from chalicelib.services import environments
from tests.fakes import FakeContainer
from tests.fakes.ledger import an_arm

ACME = Identity("acme", "ana")


def _run(
    run_id: str, status: str, environment_id: str | None, *, profile: str | None = None
) -> Run:
    return Run(
        run_id=run_id,
        org_id="acme",
        agent_id="a",
        dataset_id="d",
        dataset_version=1,
        created_at=f"2026-12-01T09:00:0{run_id[-1]}.000Z",
        status=status,
        phase="answering",
        candidate="version",
        spec_hash="h",
        environment_id=environment_id,
        arms=(an_arm(model_profile_id=profile),),
        case_ids_text="c1",
        scoring={},
        tasks_total=1,
        expected=1,
        heartbeat_at_ms=0,
    )


def test_the_first_environment_is_the_default_and_a_later_one_is_not(c: FakeContainer) -> None:
    environments.create(c, ACME, environment_id="staging")
    environments.create(c, ACME, environment_id="prod")
    assert environments.default_id(c, "acme") == "staging"
    assert environments.resolve(c, "acme", None).environment_id == "staging"
    environments.create(c, ACME, environment_id="canary", default=True)
    assert environments.default_id(c, "acme") == "canary"


def test_an_id_is_unique_within_its_organization_only(c: FakeContainer) -> None:
    environments.create(c, ACME, environment_id="prod")
    with pytest.raises(ConflictError):
        environments.create(c, ACME, environment_id="prod")
    environments.create(c, Identity("globex", "gil"), environment_id="prod")
    assert [e.org_id for e in c.environments.list("globex")] == ["globex"]
    with pytest.raises(InvalidInputError):
        environments.create(c, ACME, environment_id="a#b")


def test_served_says_which_version_an_environment_serves(c: FakeContainer) -> None:
    environments.create(c, ACME, environment_id="prod")
    assert environments.served(c, "acme", "prod", "a") is None
    assert c.environments.serve("acme", "prod", "a", 3, expect=None)
    assert not c.environments.serve("acme", "prod", "a", 4, expect=None)  # it serves 3 now
    assert environments.served(c, "acme", None, "a") == 3
    with pytest.raises(NotFoundError):
        environments.served(c, "acme", "gone", "a")


def test_no_default_is_a_clear_not_found(c: FakeContainer) -> None:
    with pytest.raises(NotFoundError, match="no default environment"):
        environments.resolve(c, "acme", None)


def test_removing_is_refused_while_a_run_uses_it_even_through_the_default(
    c: FakeContainer, events: list[Event]
) -> None:
    environments.create(c, ACME, environment_id="prod")
    c.runs.add(_run("r1", "running", None))  # runs in the default, which is prod
    c.runs.add(_run("r2", "completed", "prod"))  # ended: does not hold it
    with pytest.raises(ConflictError) as refused:
        environments.delete(c, ACME, "prod")
    assert refused.value.details["run_ids"] == ["r1"]
    assert events == []
    assert c.environments.get("acme", "prod")


def test_removing_the_default_leaves_none_and_tells_the_suites(
    c: FakeContainer, events: list[Event]
) -> None:
    environments.create(c, ACME, environment_id="prod")
    environments.create(c, ACME, environment_id="staging")
    environments.delete(c, ACME, "prod")
    assert environments.default_id(c, "acme") is None
    environments.delete(c, ACME, "staging")
    assert events == [
        EnvironmentRemoved("acme", "prod", True),
        EnvironmentRemoved("acme", "staging", False),
    ]


def test_runs_using_a_model_profile_are_found_by_their_arms(c: FakeContainer) -> None:
    c.runs.add(_run("r1", "queued", "prod", profile="gpt"))
    c.runs.add(_run("r2", "running", "prod", profile="claude"))
    assert environments.active_runs_using(c, "acme", model_profile_id="gpt") == ["r1"]
