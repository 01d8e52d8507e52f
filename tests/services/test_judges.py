"""Judges' rules on fakes: a published version copies its model profile and is numbered once
(docs/guides/judges.md), also when another publish wins a race."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from chalicelib import retrying
from chalicelib.domain import judge_rules as rules
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Judge
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError
from chalicelib.services import judges, model_profiles
from tests.fakes import FakeContainer

ACME = Identity("acme", "ana")
BODY = {
    "model_profile_id": "grader",
    "threshold": 4,
    "criteria": [{"criterion_id": "correct", "text": "The answer says what the reference says."}],
}


@pytest.fixture(autouse=True)
def no_cached_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test publishes its own versions 1, 2: none is read from another test's process cache."""
    monkeypatch.setattr(judges, "_versions", {})


@pytest.fixture
def grader(c: FakeContainer) -> FakeContainer:
    """An organization with the `grader` profile (an OpenAI-compatible endpoint, priced) and a
    judge."""
    model_profiles.create(
        c,
        ACME,
        model_profile_id="grader",
        model="gpt-grader",
        settings={"base_url": "https://llm.example.com/v1", "api_key_secret": "openai"},
        price={"input_per_mtok_usd": "1", "output_per_mtok_usd": "2"},
    )
    judges.create(c, ACME, name="Correctness", judge_id="correct")
    return c


@pytest.fixture
def no_pause(monkeypatch: pytest.MonkeyPatch) -> list[float]:
    """Pauses between tries, recorded instead of slept."""
    slept: list[float] = []
    monkeypatch.setattr(retrying.time, "sleep", slept.append)
    return slept


def test_a_published_version_copies_its_profile_and_is_the_judge_s_latest(
    grader: FakeContainer,
) -> None:
    c = grader
    v1 = judges.publish(c, ACME, "correct", BODY)
    assert (v1.version, v1.name, v1.created_by, v1.created_at) == (
        1,
        "Correctness",
        "ana",
        "2026-12-01T09:00:00.000Z",
    )
    assert v1.spec["runtime"] == {
        "runtime": "openai",
        "base_url": "https://llm.example.com/v1",
        "api_key_secret": "openai",
        "model": "gpt-grader",
        "temperature": 0.0,
        "price": {"input_per_mtok_usd": "1", "output_per_mtok_usd": "2"},
    }
    assert v1.rubric_hash == rules.rubric_hash(rules.JudgeSpec.model_validate(BODY))
    assert c.judges.get("acme", "correct").latest_version == 1
    published = judges.ResolvedJudge.of(
        v1
    )  # (its API shape leaves the runtime out: tests/unit/test_views.py)
    assert (published.model, published.fingerprint["judge_version"]) == ("gpt-grader", 1)
    v2 = judges.publish(c, ACME, "correct", {**BODY, "threshold": 5})
    assert (v2.version, v2.spec["threshold"]) == (2, 5)
    assert [v.version for v in c.judges.versions("acme", "correct")] == [1, 2]
    assert judges.resolve(c, "acme", {"judge_id": "correct"}).version == 2  # the latest grades
    assert (
        judges.resolve(c, "acme", {"judge_id": "correct", "version": 1}).spec.threshold == 4
    )  # a pin holds


def test_a_publish_that_loses_the_race_takes_the_next_number(
    grader: FakeContainer, no_pause: list[float]
) -> None:
    c = grader
    real = c.judges.publish
    rival_published: list[Judge] = []

    def rival_first(header: Judge, version: Judge) -> bool:
        if not rival_published:  # somebody else publishes version 1 between our read and our write
            rival = replace(version, created_by="bob", spec={**version.spec, "threshold": 5})
            rival_published.append(rival)
            assert real(header, rival)
        return real(header, version)

    c.judges.publish = rival_first  # type: ignore[method-assign]
    ours = judges.publish(c, ACME, "correct", BODY)
    assert (ours.version, ours.created_by) == (2, "ana")
    assert [(v.version, v.created_by) for v in c.judges.versions("acme", "correct")] == [
        (1, "bob"),
        (2, "ana"),
    ]
    assert c.judges.get("acme", "correct").latest_version == 2
    assert len(no_pause) == 1  # one pause before reading the header again


def test_publishes_lost_five_times_in_a_row_are_one_conflict(
    grader: FakeContainer, no_pause: list[float]
) -> None:
    c = grader
    tries: list[int] = []

    def always_lost(header: Judge, version: Judge) -> bool:
        tries.append(version.version)
        return False

    c.judges.publish = always_lost  # type: ignore[method-assign]
    with pytest.raises(ConflictError) as gave_up:
        judges.publish(c, ACME, "correct", BODY)
    assert (gave_up.value.field, gave_up.value.message) == (
        "judge_id",
        "judge correct is being published by somebody else: try again",
    )
    assert tries == [1, 1, 1, 1, 1]
    assert c.judges.get("acme", "correct").latest_version == 0


def test_what_a_judge_cannot_be_published_with(grader: FakeContainer) -> None:
    c = grader
    cases: list[tuple[Any, type[Exception], str | None]] = [
        (["not", "a", "spec"], InvalidInputError, "body"),
        ({**BODY, "criteria": []}, InvalidInputError, "criteria"),
        ({**BODY, "model_profile_id": "nobody"}, NotFoundError, "model_profile_id"),
    ]
    for body, error, field in cases:
        with pytest.raises(error) as refused:
            judges.publish(c, ACME, "correct", body)
        assert refused.value.field == field, body  # type: ignore[attr-defined]
    model_profiles.create(c, ACME, model_profile_id="local", model="m")  # no base_url to ask it at
    with pytest.raises(InvalidInputError) as unreachable:
        judges.publish(c, ACME, "correct", {**BODY, "model_profile_id": "local"})
    assert unreachable.value.field == "model_profile_id"
    with pytest.raises(NotFoundError):
        judges.publish(c, ACME, "nobody", BODY)
    assert c.judges.versions("acme", "correct") == []


def test_a_judge_id_is_taken_within_its_organization_only(grader: FakeContainer) -> None:
    c = grader
    with pytest.raises(ConflictError) as taken:
        judges.create(c, ACME, name="again", judge_id="correct")
    assert taken.value.field == "judge_id"
    assert (
        judges.create(c, Identity("globex", "gil"), name="theirs", judge_id="correct").org_id
        == "globex"
    )
    with pytest.raises(InvalidInputError):
        judges.resolve(c, "globex", {"judge_id": "correct"})  # theirs was never published
