"""A reviewer's note made a judge criterion, on fakes (docs/guides/judges.md): scoped to case tags
of the dataset, published as the judge's next version (so its fingerprint changes), never moving
a pin, refused with a 400 naming the field or a 403 naming the permission."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.domain import judge_rules as rules
from chalicelib.domain.identity import Identity
from chalicelib.domain.models import Case
from chalicelib.domain.records import Judge, Suite
from chalicelib.errors import ConflictError, ForbiddenError, InvalidInputError, NotFoundError
from chalicelib.services import datasets, judges, model_profiles
from chalicelib.services.review_criteria import add_note_as_criterion, default_criterion_id
from tests.fakes import FakeContainer

ACME = Identity("acme", "ana")
SOURCE = "review item ri_0123"
NOTE = "The reply names the 30-day refund window."
JUDGE_V1 = {
    "model_profile_id": "grader",
    "criteria": [
        {"criterion_id": "correct", "text": "The answer says what the reference says."},
        {"criterion_id": "polite", "text": "The answer is polite.", "tags": ["tone"]},
    ],
}
THRESHOLD_5 = {**JUDGE_V1, "threshold": 5}
CASES = [
    {"case_id": "c1", "input": "Can I return it?", "reference": "yes", "tags": ["refunds"]},
    {"case_id": "c2", "input": "Where is my parcel?", "reference": "on its way", "tags": ["tone"]},
    {"case_id": "c3", "input": "Hello", "reference": "hi"},
]


@pytest.fixture(autouse=True)
def no_cached_versions(monkeypatch: pytest.MonkeyPatch) -> None:
    """Each test publishes its own versions: none is read from another test's process cache."""
    monkeypatch.setattr(judges, "_versions", {})


def _dataset(c: FakeContainer, dataset_id: str, judge: dict[str, Any] | None) -> None:
    datasets.create_dataset(c, ACME, name=dataset_id, dataset_id=dataset_id)
    scoring: dict[str, Any] = (
        {"required": ["judge"], "settings": {"judge": judge}}
        if judge is not None
        else {"required": ["equals"]}
    )
    datasets.add_version(c, ACME, dataset_id, scoring=scoring, cases=CASES)


@pytest.fixture
def org(c: FakeContainer) -> FakeContainer:
    """A `grader` profile, judge `quality` at v1, dataset `latest` following its latest version,
    dataset `pinned` pinned to v1, dataset `plain` graded by no judge."""
    model_profiles.create(
        c,
        ACME,
        model_profile_id="grader",
        model="gpt-grader",
        settings={"base_url": "https://llm.example.com/v1"},
    )
    judges.create(c, ACME, name="Quality", judge_id="quality")
    judges.publish(c, ACME, "quality", JUDGE_V1)
    _dataset(c, "latest", {"judge_id": "quality"})
    _dataset(c, "pinned", {"judge_id": "quality", "version": 1})
    _dataset(c, "plain", None)
    return c


def _case(case_id: str) -> Case:
    return Case.model_validate(next(x for x in CASES if x["case_id"] == case_id))


def test_the_note_is_published_as_a_criterion_scoped_to_the_tags_and_the_next_runs_grade_with_it(
    org: FakeContainer,
) -> None:
    c = org
    before = judges.resolve(c, "acme", {"judge_id": "quality"})
    added = add_note_as_criterion(c, ACME, "latest", f"  {NOTE}\n", ["refunds"], source=SOURCE)

    assert (added.published, added.based_on, int(added.judge.version)) == (True, 1, 2)
    assert added.criterion == rules.Criterion(
        criterion_id=default_criterion_id(NOTE, ["refunds"]),
        text=NOTE,
        tags=["refunds"],
        source=SOURCE,
    )
    assert added.criterion.criterion_id.startswith("note_")
    assert added.follows_latest and added.pinned_version is None and added.pin_moved is False
    assert "its next runs grade with v2" in added.message
    assert c.judges.get("acme", "quality").latest_version == 2
    now = judges.resolve(c, "acme", {"judge_id": "quality"})
    # v2 is v1 with the criterion added: same profile, scale, threshold; published by ana.
    assert [k.criterion_id for k in now.spec.criteria] == [
        "correct",
        "polite",
        added.criterion.criterion_id,
    ]
    assert (now.spec.threshold, now.model, added.judge.created_by) == (4, "gpt-grader", "ana")
    # The rubric changed, so every judge score's fingerprint does.
    assert now.fingerprint["rubric_hash"] != before.fingerprint["rubric_hash"]
    assert now.key != before.key and now.fingerprint["judge_version"] == 2
    # Scoped: the case tagged `refunds` is graded on it, the others are not.
    scoped = {
        cid: [k.criterion_id for k in rules.applicable_criteria(_case(cid), now.spec.criteria)]
        for cid in ("c1", "c2", "c3")
    }
    assert scoped == {
        "c1": ["correct", added.criterion.criterion_id],
        "c2": ["correct", "polite"],
        "c3": ["correct"],
    }
    # Where it came from is kept with the version, never asked of the judge.
    assert c.judges.get("acme", "quality", 2).spec["criteria"][2]["source"] == SOURCE
    _, asked = rules.messages(now.spec, _case("c1"), "yes", scoped_criteria(now, "c1"))
    assert NOTE in asked and SOURCE not in asked
    # The dataset's latest version, following the judge's latest, now grades with v2.
    version = c.datasets.get("acme", "latest", 1)
    assert judges.of_scoring(c, "acme", version.scoring).version == 2  # type: ignore[union-attr]


def scoped_criteria(judge: judges.ResolvedJudge, case_id: str) -> list[rules.Criterion]:
    return rules.applicable_criteria(_case(case_id), judge.spec.criteria)


def test_a_pinned_dataset_stays_pinned_and_says_so(org: FakeContainer) -> None:
    c = org
    added = add_note_as_criterion(
        c,
        ACME,
        "pinned",
        NOTE,
        ["refunds", "tone", "refunds"],
        source=SOURCE,
        criterion_id="window",
    )
    assert (added.published, int(added.judge.version), added.pinned_version) == (True, 2, 1)
    assert added.criterion.tags == ["refunds", "tone"]  # each tag once
    assert not added.follows_latest and added.pin_moved is False
    assert "stays pinned to v1" in added.message and "scoring.settings.judge" in added.message
    # The dataset still names version 1, and grades with it.
    version = c.datasets.get("acme", "pinned", 1)
    assert version.scoring["settings"]["judge"] == {"judge_id": "quality", "version": 1}
    assert judges.of_scoring(c, "acme", version.scoring).version == 1  # type: ignore[union-attr]
    assert c.datasets.get("acme", "pinned").latest_version == 1  # no dataset version was added


def test_guard_suites_on_the_dataset_are_named_with_the_judge_version_they_keep(
    org: FakeContainer,
) -> None:
    c = org
    for suite_id, dataset_id, guards in (("g1", "latest", True), ("s2", "latest", False)):
        c.suites.create(
            Suite(
                suite_id=suite_id,
                org_id="acme",
                agent_id="a",
                dataset_id=dataset_id,
                owner="ana",
                guards=guards,
                pins={"dataset_version": 1, "scoring_hash": "h", "judge_version": 1},
                created_at="2026-12-01T09:00:00.000Z",
                updated_at="2026-12-01T09:00:00.000Z#0",
            )
        )
    added = add_note_as_criterion(c, ACME, "latest", NOTE, ["tone"], source=SOURCE)
    assert [(g.agent_id, g.suite_id, g.judge_version) for g in added.guards] == [("a", "g1", 1)]
    assert "1 guard suite(s) keep the judge version they pinned" in added.message
    # Somebody who may not see the agent is not told of its suite.
    granted = Identity(
        "acme",
        "gus",
        frozenset({"datasets:view", "datasets:edit"}),
    )
    again = add_note_as_criterion(c, granted, "latest", "Another note.", ["tone"], source=SOURCE)
    assert again.guards == [] and int(again.judge.version) == 3


def test_the_same_note_twice_publishes_once(org: FakeContainer) -> None:
    c = org
    first = add_note_as_criterion(c, ACME, "latest", NOTE, ["refunds"], source=SOURCE)
    second = add_note_as_criterion(c, ACME, "latest", NOTE, ["refunds"], source="review item ri_9")
    assert (first.published, second.published) == (True, False)
    assert int(second.judge.version) == 2 and c.judges.get("acme", "quality").latest_version == 2
    assert "already grades" in second.message and second.criterion.source == SOURCE
    # Another text under a taken id is refused, naming the id.
    with pytest.raises(InvalidInputError) as taken:
        add_note_as_criterion(
            c, ACME, "latest", "Something else.", ["refunds"], source=SOURCE, criterion_id="polite"
        )
    assert taken.value.field == "criterion_id" and "choose another id" in taken.value.message


@pytest.mark.parametrize(
    ("note", "tags", "criterion_id", "field"),
    [
        ("", ["refunds"], None, "note"),
        ("  \n\t ", ["refunds"], None, "note"),
        ("x" * (rules.CRITERION_TEXT_CHARS + 1), ["refunds"], None, "note"),
        (NOTE, [], None, "tags"),
        (NOTE, ["missing"], None, "tags[0]"),
        (NOTE, ["refunds", "tone", "billing"], None, "tags[2]"),
        (NOTE, ["refunds", ""], None, "tags[1]"),
        (NOTE, ["refunds"], "has space", "criterion_id"),
        (NOTE, ["refunds"], "x" * 65, "criterion_id"),
    ],
)
def test_bad_input_is_a_400_naming_the_field_and_publishes_nothing(
    org: FakeContainer, note: str, tags: list[str], criterion_id: str | None, field: str
) -> None:
    c = org
    with pytest.raises(InvalidInputError) as refused:
        add_note_as_criterion(
            c, ACME, "latest", note, tags, source=SOURCE, criterion_id=criterion_id
        )
    assert refused.value.field == field, refused.value.message
    assert c.judges.get("acme", "quality").latest_version == 1


def test_an_unknown_tag_is_named_with_the_tags_the_cases_carry(org: FakeContainer) -> None:
    with pytest.raises(InvalidInputError) as refused:
        add_note_as_criterion(org, ACME, "latest", NOTE, ["refund"], source=SOURCE)
    assert refused.value.message == (
        "tags[0]: no case of dataset latest v1 carries the tag 'refund' (its tags: refunds, tone)"
    )


def test_a_dataset_graded_by_no_judge_names_the_setting_with_a_hint(org: FakeContainer) -> None:
    c = org
    with pytest.raises(InvalidInputError) as no_judge:
        add_note_as_criterion(c, ACME, "plain", NOTE, ["refunds"], source=SOURCE)
    assert no_judge.value.field == "scoring.settings.judge"
    assert 'requires "judge" and names it in scoring.settings.judge' in no_judge.value.message
    datasets.create_dataset(c, ACME, name="empty", dataset_id="empty")
    with pytest.raises(InvalidInputError) as no_version:
        add_note_as_criterion(c, ACME, "empty", NOTE, ["refunds"], source=SOURCE)
    assert no_version.value.field == "scoring.settings.judge"
    assert "no version yet" in no_version.value.message


def test_a_judge_holding_the_most_criteria_is_refused_naming_the_setting(
    org: FakeContainer,
) -> None:
    c = org
    full = {
        **JUDGE_V1,
        "criteria": [
            {"criterion_id": f"k{i}", "text": f"Criterion {i}."} for i in range(rules.MAX_CRITERIA)
        ],
    }
    judges.publish(c, ACME, "quality", full)
    with pytest.raises(InvalidInputError) as refused:
        add_note_as_criterion(c, ACME, "latest", NOTE, ["refunds"], source=SOURCE)
    assert (
        refused.value.field == "scoring.settings.judge" and "50 criteria" in refused.value.message
    )


def test_the_note_and_its_source_are_kept_redacted(org: FakeContainer) -> None:
    c = org
    c.secrets.kept[("acme", "openai")] = "org-secret-value-7f3c9a"
    added = add_note_as_criterion(
        c,
        ACME,
        "latest",
        "Never echo org-secret-value-7f3c9a or AKIAIOSFODNN7EXAMPLE back.",
        ["refunds"],
        source="review item ri_1 (note: org-secret-value-7f3c9a)",
    )
    kept = c.judges.get("acme", "quality", int(added.judge.version)).spec["criteria"][-1]
    assert "org-secret-value-7f3c9a" not in str(kept) and "AKIAIOSFODNN7EXAMPLE" not in str(kept)
    assert "[REDACTED" in kept["text"] and "[REDACTED" in kept["source"]


def test_a_long_source_is_cut_to_the_criterion_s_limit(org: FakeContainer) -> None:
    added = add_note_as_criterion(org, ACME, "latest", NOTE, ["refunds"], source="s" * 1000)
    assert added.criterion.source == "s" * rules.CRITERION_SOURCE_CHARS


def test_a_version_published_meanwhile_keeps_its_changes_and_gets_the_criterion_too(
    org: FakeContainer,
) -> None:
    """Somebody publishes v2 (a new threshold) between our read of v1 and our publish: ours is
    v3, made from v2, so v2's change is not lost."""
    c = org
    real = c.judges.publish
    rival: list[Judge] = []

    def somebody_first(header: Judge, version: Judge) -> bool:
        c.judges.publish = real  # type: ignore[method-assign]  # one rival publish only
        rival.append(judges.publish(c, Identity("acme", "bob"), "quality", THRESHOLD_5))
        return real(header, version)

    c.judges.publish = somebody_first  # type: ignore[method-assign]
    added = add_note_as_criterion(c, ACME, "latest", NOTE, ["refunds"], source=SOURCE)
    assert (int(rival[0].version), int(added.judge.version), added.based_on) == (2, 3, 2)
    v3 = c.judges.get("acme", "quality", 3)
    assert v3.spec["threshold"] == 5 and v3.spec["criteria"][-1]["text"] == NOTE


def test_a_judge_published_by_others_every_time_is_a_conflict(
    org: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    c = org
    real = c.judges.publish

    def somebody_always_first(header: Judge, version: Judge) -> bool:
        c.judges.publish = real  # type: ignore[method-assign]
        try:
            judges.publish(c, Identity("acme", "bob"), "quality", JUDGE_V1)
        finally:
            c.judges.publish = somebody_always_first  # type: ignore[method-assign]
        return real(header, version)

    c.judges.publish = somebody_always_first  # type: ignore[method-assign]
    with pytest.raises(ConflictError) as lost:
        add_note_as_criterion(c, ACME, "latest", NOTE, ["refunds"], source=SOURCE)
    assert lost.value.field == "judge_id"
    c.judges.publish = real  # type: ignore[method-assign]
    latest = c.judges.get("acme", "quality").latest_version
    assert all(
        NOTE not in str(c.judges.get("acme", "quality", v).spec) for v in range(1, latest + 1)
    )


def test_permissions_editing_the_dataset_and_publishing_judges(org: FakeContainer) -> None:
    c = org
    viewer = Identity("acme", "vi", frozenset({"datasets:view"}))
    with pytest.raises(ForbiddenError) as no_edit:
        add_note_as_criterion(c, viewer, "latest", NOTE, ["refunds"], source=SOURCE)
    assert no_edit.value.details["permission"] == "datasets:edit"
    assert "on dataset latest" in no_edit.value.message
    # A grant to edit this one dataset is not the organization's datasets:edit, which publishing
    # a judge (shared by every dataset naming it) needs.
    granted = Identity(
        "acme",
        "gus",
        frozenset(),
        grants={"dataset:latest": frozenset({"datasets:view", "datasets:edit"})},
    )
    with pytest.raises(ForbiddenError) as no_publish:
        add_note_as_criterion(c, granted, "latest", NOTE, ["refunds"], source=SOURCE)
    assert no_publish.value.details["permission"] == "datasets:edit"
    assert (
        no_publish.value.message == "publishing a judge version needs the datasets:edit permission"
    )
    # A dataset the caller may not see is a 404, as another organization's.
    with pytest.raises(NotFoundError) as unseen:
        add_note_as_criterion(c, granted, "pinned", NOTE, ["refunds"], source=SOURCE)
    assert unseen.value.field == "dataset_id" and "permission" not in unseen.value.details
    with pytest.raises(NotFoundError):
        add_note_as_criterion(
            c, Identity("other", "oz"), "latest", NOTE, ["refunds"], source=SOURCE
        )
    assert c.judges.get("acme", "quality").latest_version == 1
