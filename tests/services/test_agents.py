"""Agents' rules on fakes: a draft edited in place, versions published once each and never
changed (docs/guides/agents.md), a publish told to the suites."""

from __future__ import annotations

import pytest

from chalicelib.domain.events import Event, VersionPublished
from chalicelib.domain.identity import Identity
from chalicelib.domain.spec import spec_hash
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError
from chalicelib.services import agents
from tests.fakes import FakeContainer

ACME = Identity("acme", "ana")
FIRST = {"runtime": "recorded", "inline": {"c1": "four"}}
SECOND = {"runtime": "recorded", "inline": {"c1": "4"}}


def test_a_new_agent_s_draft_is_its_spec_and_nothing_is_published(c: FakeContainer) -> None:
    agent = agents.create_agent(c, ACME, name="calc", spec=FIRST, agent_id="calc")
    assert (agent.draft_spec, agent.draft_spec_hash, agent.draft_updated_at) == (
        FIRST,
        spec_hash(FIRST),
        "2026-12-01T09:00:00.000Z",
    )
    kept = c.agents.get(
        "acme", "calc"
    )  # (the API says None for version 0: tests/unit/test_views.py)
    assert (kept.latest_version, kept.live_version, kept.created_at) == (
        0,
        None,
        "2026-12-01T09:00:00.000Z",
    )
    assert agents.list_versions(c, ACME, "calc") == []


def test_an_agent_id_is_taken_within_its_organization_only(c: FakeContainer) -> None:
    agents.create_agent(c, ACME, name="calc", spec=FIRST, agent_id="calc")
    with pytest.raises(ConflictError) as taken:
        agents.create_agent(c, ACME, name="again", spec=FIRST, agent_id="calc")
    assert taken.value.field == "agent_id"
    agents.create_agent(c, Identity("globex", "gil"), name="theirs", spec=SECOND, agent_id="calc")
    assert c.agents.get("acme", "calc").name == "calc"
    assert c.agents.get("globex", "calc").draft_spec == SECOND
    with pytest.raises(InvalidInputError):
        agents.create_agent(c, ACME, name="bad", spec=FIRST, agent_id="a#b")


def test_editing_the_draft_moves_its_hash_and_time_and_saving_it_unchanged_does_not(
    c: FakeContainer,
) -> None:
    agents.create_agent(c, ACME, name="calc", spec=FIRST, agent_id="calc")
    c.clock.advance(minutes=5)
    edited = agents.update_draft(c, ACME, "calc", spec=SECOND)
    assert (edited.draft_spec, edited.draft_spec_hash, edited.draft_updated_at) == (
        SECOND,
        spec_hash(SECOND),
        "2026-12-01T09:05:00.000Z",
    )
    c.clock.advance(minutes=5)
    same = agents.update_draft(c, ACME, "calc", spec={"inline": {"c1": "4"}, "runtime": "recorded"})
    assert (
        same.draft_updated_at == "2026-12-01T09:05:00.000Z"
    )  # the same spec: a verdict on it stays fresh
    renamed = agents.update_draft(c, ACME, "calc", spec=None, name="calculator")
    assert (renamed.name, renamed.draft_spec_hash, renamed.draft_updated_at) == (
        "calculator",
        spec_hash(SECOND),
        "2026-12-01T09:05:00.000Z",
    )
    with pytest.raises(NotFoundError):
        agents.update_draft(c, ACME, "nobody", spec=SECOND)


def test_publishing_numbers_versions_1_2_and_tells_the_suites_each_time(
    c: FakeContainer, events: list[Event]
) -> None:
    agents.create_agent(c, ACME, name="calc", spec=FIRST, agent_id="calc")
    v1, created1 = agents.publish(c, ACME, "calc")
    agents.update_draft(c, ACME, "calc", spec=SECOND)
    c.clock.advance(hours=1)
    v2, created2 = agents.publish(c, ACME, "calc")
    assert (v1.version, v1.spec, created1) == (1, FIRST, True)
    assert (v2.version, v2.spec, v2.published_at, v2.published_by, created2) == (
        2,
        SECOND,
        "2026-12-01T10:00:00.000Z",
        "ana",
        True,
    )
    agent = c.agents.get("acme", "calc")
    assert (agent.latest_version, agent.live_version) == (2, 2)
    assert [v.version for v in agents.list_versions(c, ACME, "calc")] == [2, 1]
    assert events == [VersionPublished("acme", "calc", 1), VersionPublished("acme", "calc", 2)]


def test_a_version_never_changes_once_published(c: FakeContainer, events: list[Event]) -> None:
    agents.create_agent(c, ACME, name="calc", spec=FIRST, agent_id="calc")
    first, _ = agents.publish(c, ACME, "calc")
    agents.update_draft(c, ACME, "calc", spec=SECOND)
    assert (
        agents.get_version(c, ACME, "calc", 1).spec == FIRST
    )  # the draft moved on, version 1 did not
    c.clock.advance(hours=1)
    again, created = agents.publish(c, ACME, "calc", version=1, spec=FIRST)  # a redelivered publish
    assert (created, again) == (False, first)
    with pytest.raises(ConflictError) as refused:
        agents.publish(c, ACME, "calc", version=1, spec=SECOND)
    assert refused.value.field == "version"
    assert agents.get_version(c, ACME, "calc", 1) == first
    assert c.agents.get("acme", "calc").latest_version == 1
    # The redelivered publish is told again (suites take a version once); the refused one is not.
    assert events == [VersionPublished("acme", "calc", 1), VersionPublished("acme", "calc", 1)]


def test_a_version_number_must_be_positive_and_known(c: FakeContainer) -> None:
    agents.create_agent(c, ACME, name="calc", spec=FIRST, agent_id="calc")
    with pytest.raises(InvalidInputError) as bad:
        agents.publish(c, ACME, "calc", version=0)
    assert bad.value.field == "version"
    with pytest.raises(NotFoundError) as missing:
        agents.get_version(c, ACME, "calc", 3)
    assert missing.value.field == "version"
    with pytest.raises(NotFoundError):
        agents.publish(c, ACME, "nobody")


def test_a_spec_that_cannot_run_is_refused_naming_its_field(c: FakeContainer) -> None:
    with pytest.raises(InvalidInputError) as bad:
        agents.create_agent(c, ACME, name="calc", spec={"runtime": "teleport"})
    assert bad.value.field == "spec.runtime"
    with pytest.raises(InvalidInputError):
        agents.create_agent(c, ACME, name="calc", spec=["not", "an", "object"])  # type: ignore[arg-type]
    assert c.agents.list("acme") == []
