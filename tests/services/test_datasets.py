"""Datasets' rules on fakes: numbered immutable versions, their cases, cases nothing grades
counted up front, ids unique within an organization (seed 004 "What is refused")."""

from __future__ import annotations

import pytest

from chalicelib.domain.identity import Identity
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError
from chalicelib.services import datasets
from tests.fakes import FakeContainer

ACME = Identity("acme", "ana")
EQUALS = {"required": ["equals"]}
TWO = [
    {"case_id": "add", "input": "2+2?", "reference": "4"},
    {"case_id": "open", "input": "Say hi."},
]


def test_versions_are_numbered_1_2_and_the_header_names_the_latest(c: FakeContainer) -> None:
    header = datasets.create_dataset(c, ACME, name="arithmetic", dataset_id="arith")
    assert (header.version, header.latest_version, header.created_by) == (0, 0, "ana")
    after1, v1 = datasets.add_version(c, ACME, "arith", scoring=EQUALS, cases=TWO)
    c.clock.advance(minutes=1)
    after2, v2 = datasets.add_version(
        c,
        ACME,
        "arith",
        scoring={"required": ["contains"]},
        cases=[{"case_id": "add", "input": "2+2, again?", "reference": "4"}],
    )
    assert (v1.version, v1.case_ids, v1.case_count, v1.name) == (
        1,
        ["add", "open"],
        2,
        "arithmetic",
    )
    assert (v2.version, v2.case_ids, v2.scoring, v2.created_at) == (
        2,
        ["add"],
        {"required": ["contains"], "settings": {}},
        "2026-12-01T09:01:00.000Z",
    )
    assert (after1.latest_version, after2.latest_version) == (1, 2)
    assert datasets.resolve_version(c, ACME, "arith", "latest") == v2
    assert datasets.resolve_version(c, ACME, "arith", 1) == v1
    assert (after2.latest_version, v2.version, v2.case_count) == (2, 2, 1)


def test_a_version_keeps_its_cases_and_a_later_one_does_not_change_them(c: FakeContainer) -> None:
    datasets.create_dataset(c, ACME, name="d", dataset_id="d")
    datasets.add_version(c, ACME, "d", scoring=EQUALS, cases=TWO)
    datasets.add_version(
        c, ACME, "d", scoring=EQUALS, cases=[{"case_id": "add", "input": "2+3?", "reference": "5"}]
    )
    first = c.datasets.get_case("acme", "d", 1, "add")
    assert first is not None and (first["input"], first["reference"], first["split"]) == (
        "2+2?",
        "4",
        "train",
    )
    assert [case["case_id"] for case in c.datasets.cases("acme", "d", 1)] == ["add", "open"]
    assert [case["input"] for case in c.datasets.cases("acme", "d", 2)] == ["2+3?"]
    assert c.datasets.get_case("acme", "d", 2, "open") is None


def test_cases_nothing_grades_are_counted_when_the_version_is_added(c: FakeContainer) -> None:
    datasets.create_dataset(c, ACME, name="d", dataset_id="d")
    _, version = datasets.add_version(c, ACME, "d", scoring=EQUALS, cases=TWO)
    assert version.ungraded_cases == 1  # "open" has no reference for `equals` to compare with
    assert datasets.coverage(c, version, None) == (1, 0)


def test_a_taken_dataset_id_is_a_conflict_in_its_own_organization_only(c: FakeContainer) -> None:
    datasets.create_dataset(c, ACME, name="d", dataset_id="d")
    with pytest.raises(ConflictError) as taken:
        datasets.create_dataset(c, ACME, name="again", dataset_id="d")
    assert (taken.value.field, taken.value.message) == ("dataset_id", "dataset d already exists")
    datasets.create_dataset(c, Identity("globex", "gil"), name="theirs", dataset_id="d")
    assert [d.name for d in c.datasets.list("globex")] == ["theirs"]
    assert c.datasets.get("acme", "d").name == "d"


def test_a_version_number_claimed_meanwhile_is_a_conflict_and_keeps_nothing(
    c: FakeContainer,
) -> None:
    datasets.create_dataset(c, ACME, name="d", dataset_id="d")
    next_version = c.datasets.next_version
    c.datasets.next_version = lambda org_id, dataset_id: 1  # type: ignore[method-assign]
    datasets.add_version(c, ACME, "d", scoring=EQUALS, cases=TWO)
    with pytest.raises(ConflictError) as raced:  # another import read the same next number
        datasets.add_version(
            c, ACME, "d", scoring=EQUALS, cases=[{"case_id": "x", "input": "?", "reference": "1"}]
        )
    assert raced.value.field == "version"
    c.datasets.next_version = next_version  # type: ignore[method-assign]
    assert [case["case_id"] for case in c.datasets.cases("acme", "d", 1)] == ["add", "open"]


def test_what_is_refused_before_a_version_is_written(c: FakeContainer) -> None:
    datasets.create_dataset(c, ACME, name="d", dataset_id="d")
    refusals = [
        ({"scoring": EQUALS, "cases": []}, "cases"),
        ({"scoring": None, "cases": TWO}, "scoring"),
        ({"scoring": {"required": ["telepathy"]}, "cases": TWO}, "scoring.required[0]"),
        ({"scoring": EQUALS, "cases": [TWO[0], TWO[0]]}, "cases[1].case_id"),
        ({"scoring": EQUALS, "cases": [{"case_id": "blank", "input": "  "}]}, "cases[0].input"),
        (
            {"scoring": EQUALS, "cases": TWO, "source": {"format": "csv", "content": "input\nx"}},
            "cases",
        ),
    ]
    for body, field in refusals:
        with pytest.raises(InvalidInputError) as refused:
            datasets.add_version(c, ACME, "d", **body)
        assert refused.value.field == field, body
    with pytest.raises(InvalidInputError) as empty:
        datasets.resolve_version(c, ACME, "d", "latest")
    assert empty.value.field == "dataset_version"
    assert c.datasets.next_version("acme", "d") == 1  # nothing was claimed
    with pytest.raises(NotFoundError):
        datasets.add_version(c, ACME, "nothing", scoring=EQUALS, cases=TWO)
