"""Datasets' rules on fakes: numbered immutable versions, their cases, cases nothing grades
counted up front, ids unique within an organization (docs/reference/limits.md)."""

from __future__ import annotations

import pytest

from chalicelib.domain.identity import Identity
from chalicelib.domain.promptfoo_tests import parse_promptfoo
from chalicelib.domain.records import DatasetCase
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError
from chalicelib.services import datasets, judges, model_profiles
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
    after1, v1, *_ = datasets.add_version(c, ACME, "arith", scoring=EQUALS, cases=TWO)
    c.clock.advance(minutes=1)
    after2, v2, *_ = datasets.add_version(
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
    _, version, *_ = datasets.add_version(c, ACME, "d", scoring=EQUALS, cases=TWO)
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


# --- issue 13: a dataset created with its first version, imported files, paged cases ----------

PROMPTFOO = (
    "tests:\n"
    "  - description: greets\n"
    "    vars: {input: Hello}\n"
    "    assert:\n"
    "      - {type: icontains, value: bonjour}\n"
    "  - description: counts\n"
    "    vars: {input: Count to 3}\n"
    "    assert:\n"
    "      - {type: regex, value: '1.*2.*3'}\n"
)


def promptfoo(text: str = PROMPTFOO) -> dict:
    return {"format": "promptfoo", "content": text}


def test_a_dataset_created_with_a_refused_file_is_not_created(c: FakeContainer) -> None:
    bad = PROMPTFOO.replace("type: regex", "type: javascript")
    with pytest.raises(InvalidInputError) as refused:
        datasets.create_with_version(c, ACME, name="pf", dataset_id="pf", source=promptfoo(bad))
    assert refused.value.details == {"line": 9, "source_field": "tests[1].assert[0].type"}
    assert c.datasets.list("acme") == []
    header, first, *_ = datasets.create_with_version(
        c, ACME, name="pf", dataset_id="pf", source=promptfoo()
    )
    assert (header.latest_version, first.version, first.case_count) == (1, 1, 2)
    # The file's assertions said how to grade: no scoring was given.
    assert first.scoring == {"required": ["icontains", "regex"], "settings": {}}
    assert first.ungraded_cases == 0


def test_a_first_version_that_fails_to_be_written_takes_its_dataset_with_it(
    c: FakeContainer,
) -> None:
    real = c.datasets.add_version

    def broken(version, cases):  # the store gave up half way (a throttle, a lost connection)
        raise RuntimeError("DynamoDB went away")

    c.datasets.add_version = broken  # type: ignore[method-assign]
    with pytest.raises(RuntimeError):
        datasets.create_with_version(c, ACME, name="d", dataset_id="d", scoring=EQUALS, cases=TWO)
    assert c.datasets.list("acme") == []
    c.datasets.add_version = real  # type: ignore[method-assign]
    header, first, *_ = datasets.create_with_version(
        c, ACME, name="d", dataset_id="d", scoring=EQUALS, cases=TWO
    )
    assert (header.latest_version, first.case_ids) == (1, ["add", "open"])


def test_a_first_version_that_loses_its_number_to_another_writer_leaves_theirs(
    c: FakeContainer,
) -> None:
    real = c.datasets.add_version

    def rival_first(version, cases):  # another create of the same empty dataset claimed 1 first
        real(version, [DatasetCase(case_id="theirs", case={"case_id": "theirs", "input": "?"})])
        raise ConflictError("another version was added at the same time; retry", field="version")

    c.datasets.add_version = rival_first  # type: ignore[method-assign]
    with pytest.raises(ConflictError):
        datasets.create_with_version(c, ACME, name="d", dataset_id="d", scoring=EQUALS, cases=TWO)
    c.datasets.add_version = real  # type: ignore[method-assign]
    assert c.datasets.get("acme", "d").latest_version == 1
    assert [case["case_id"] for case in c.datasets.cases("acme", "d", 1)] == ["theirs"]


def test_an_empty_dataset_of_the_same_name_gets_the_first_version(c: FakeContainer) -> None:
    datasets.create_dataset(c, ACME, name="d", dataset_id="d")  # left empty (by hand, or a crash)
    header, first, *_ = datasets.create_with_version(
        c, ACME, name="d", dataset_id="d", scoring=EQUALS, cases=TWO
    )
    assert (header.latest_version, first.version) == (1, 1)
    # Now it has a version: creating it again is a conflict, and so is another name.
    for name in ("d", "other"):
        with pytest.raises(ConflictError):
            datasets.create_with_version(
                c, ACME, name=name, dataset_id="d", scoring=EQUALS, cases=TWO
            )
    datasets.create_dataset(c, ACME, name="e", dataset_id="e")
    with pytest.raises(ConflictError):
        datasets.create_with_version(c, ACME, name="f", dataset_id="e", scoring=EQUALS, cases=TWO)
    assert c.datasets.get("acme", "e").latest_version == 0  # the one found was left as it was


def test_scorers_a_file_needs_are_added_to_the_scoring_given(c: FakeContainer) -> None:
    datasets.create_dataset(c, ACME, name="d", dataset_id="d")
    _, version, *_ = datasets.add_version(
        c, ACME, "d", scoring={"required": ["contains", "regex"]}, source=promptfoo()
    )
    assert version.scoring["required"] == ["contains", "regex", "icontains"]
    inspect = '[{"input": "Pick", "choices": ["a", "b"], "target": "A"}]'
    _, version, *_ = datasets.add_version(
        c, ACME, "d", scoring=EQUALS, source={"format": "inspect", "content": inspect}
    )
    assert version.scoring["required"] == ["equals", "regex"]
    with pytest.raises(InvalidInputError) as refused:  # nothing says how to grade plain targets
        datasets.add_version(
            c, ACME, "d", source={"format": "inspect", "content": '[{"input": "q", "target": "a"}]'}
        )
    assert refused.value.field == "scoring"


RUBRIC = "- vars: {q: Say hi}\n  assert:\n    - {type: llm-rubric, value: The reply is polite}\n"


def test_a_file_with_rubrics_needs_a_judge_that_has_them(
    c: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(judges, "_versions", {})  # no version cached by another test's process
    [criterion] = parse_promptfoo(RUBRIC).criteria
    datasets.create_dataset(c, ACME, name="d", dataset_id="d")
    with pytest.raises(InvalidInputError) as no_judge:
        datasets.add_version(c, ACME, "d", source=promptfoo(RUBRIC))
    assert no_judge.value.field == "scoring.settings.judge"
    assert no_judge.value.details["criteria"] == [criterion.model_dump(mode="json")]

    model_profiles.create(
        c,
        ACME,
        model_profile_id="grader",
        model="gpt-grader",
        settings={"base_url": "https://llm.example.com/v1"},
    )
    judges.create(c, ACME, name="Tone", judge_id="tone")
    spec = {"model_profile_id": "grader", "criteria": [{"criterion_id": "other", "text": "x"}]}
    judges.publish(c, ACME, "tone", spec)
    with_judge = {"required": [], "settings": {"judge": {"judge_id": "tone"}}}
    with pytest.raises(InvalidInputError) as lacking:
        datasets.add_version(c, ACME, "d", scoring=with_judge, source=promptfoo(RUBRIC))
    assert lacking.value.field == "scoring.settings.judge"
    assert "lacks 1 of the file's 1" in lacking.value.message
    assert lacking.value.details["criteria"] == [criterion.model_dump(mode="json")]

    spec["criteria"] = [*spec["criteria"], criterion.model_dump(mode="json")]
    judges.publish(c, ACME, "tone", spec)
    _, version, *_ = datasets.add_version(
        c, ACME, "d", scoring=with_judge, source=promptfoo(RUBRIC)
    )
    assert version.scoring["required"] == ["judge"] and version.ungraded_cases == 0


def test_a_version_s_cases_come_in_pages_that_see_each_case_once(c: FakeContainer) -> None:
    datasets.create_dataset(c, ACME, name="d", dataset_id="d")
    cases = [{"case_id": f"c{i:02d}", "input": f"q{i}", "reference": "1"} for i in range(7)]
    _, version, *_ = datasets.add_version(c, ACME, "d", scoring=EQUALS, cases=cases)
    seen, cursor, pages = [], None, 0
    while True:
        page = datasets.list_cases(c, version, limit=3, cursor=cursor)
        seen += [case["case_id"] for case in page.cases]
        pages += 1
        if page.next_cursor is None:
            break
        cursor = page.next_cursor
    assert (seen, pages) == ([f"c{i:02d}" for i in range(7)], 3)
    for bad in ("nonsense", "eyJ4IjogMX0="):  # not base64 JSON; {"x": 1}
        with pytest.raises(InvalidInputError) as refused:
            datasets.list_cases(c, version, cursor=bad)
        assert refused.value.field == "cursor"
    with pytest.raises(InvalidInputError):
        datasets.list_cases(c, version, limit=0)
