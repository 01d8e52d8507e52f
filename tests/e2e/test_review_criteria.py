"""A note made a judge criterion, through the HTTP API and the CLI on the embedded stack
(docs/guides/judges.md, "A note becomes a criterion").

The judge is asked through the `openai` runtime on a model profile whose `base_url` is a local
scripted OpenAI-compatible server (`FakeOpenAI`); the agent is the `sleepy` python agent.
"""

from __future__ import annotations

import json
from collections.abc import Iterator
from typing import Any

import pytest

from tests.e2e.conftest import sleepy_spec
from tests.support.fake_openai import FakeOpenAI
from tests.support.judges import grader_profile

NOTE = "The reply names the 30-day refund window."
GRADES = {
    "grades": [
        {"criterion_id": "correct", "score": 5, "reason": "right"},
        {"criterion_id": "window", "score": 5, "reason": "names it"},
    ]
}
SCRIPT = {"rules": [], "default": {"answer": GRADES}}
CASES = [
    {"case_id": "c0", "input": "question 0", "reference": "good", "tags": ["refunds"]},
    {"case_id": "c1", "input": "question 1", "reference": "good", "tags": ["tone"]},
    {"case_id": "c2", "input": "question 2", "reference": "good"},
]


@pytest.fixture(scope="module")
def fake() -> Iterator[FakeOpenAI]:
    with FakeOpenAI(SCRIPT) as server:
        yield server


@pytest.fixture
def judged(api, fake) -> tuple[str, str, str]:
    """Judge `quality` v1 (one criterion, `correct`) on the fake's model; dataset `follows` graded
    by its latest version and dataset `pinned` pinned to v1."""
    fake.set_script(SCRIPT)
    fake.reset()
    grader_profile(api, fake.base_url)
    judge = api.ok("POST", "/api/v1/judges", json={"name": "quality"})["judge_id"]
    api.ok(
        "POST",
        f"/api/v1/judges/{judge}/versions",
        json={
            "model_profile_id": "grader",
            "criteria": [
                {"criterion_id": "correct", "text": "The answer says what the reference says."}
            ],
        },
    )
    made = []
    for pin in ({"judge_id": judge}, {"judge_id": judge, "version": 1}):
        ds = api.ok("POST", "/api/v1/datasets", json={"name": "judged"})["dataset_id"]
        api.ok(
            "POST",
            f"/api/v1/datasets/{ds}/versions",
            json={"scoring": {"required": ["judge"], "settings": {"judge": pin}}, "cases": CASES},
        )
        made.append(ds)
    return judge, made[0], made[1]


def _judge_scores(api, run_id: str) -> dict[str, dict[str, Any]]:
    view = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    return {
        r["case_id"]: next(s for s in r["scores"] if s["scorer"] == "judge")
        for r in view["results"]
        if r["arm_id"] == "candidate"
    }


def _criteria_asked(fake: FakeOpenAI) -> dict[str, list[str]]:
    """Per question, the criterion ids the judge was asked to grade."""
    out = {}
    for request in fake.requests():
        user = request["body"]["messages"][-1]["content"]
        listed = user.split("CRITERIA:\n", 1)[1].splitlines()
        out[user.split("\n")[1]] = sorted(line[2:].split(":")[0] for line in listed)
    return out


def test_a_note_becomes_a_criterion_the_next_run_grades_tagged_cases_with(api, fake, judged):
    judge, follows, _ = judged
    agent = api.agent(sleepy_spec(answer="good"))
    first = api.start(agent, follows)["run_id"]
    api.wait(first)
    before = _judge_scores(api, first)["c0"]["fingerprint"]
    assert before["judge_version"] == 1

    status, added = api.call(
        "POST",
        f"/api/v1/datasets/{follows}/criteria",
        json={"note": NOTE, "tags": ["refunds"], "criterion_id": "window"},
    )
    assert status == 201, added
    assert (added["judge_id"], added["version"], added["based_on"]) == (judge, 2, 1)
    assert (added["published"], added["follows_latest"], added["pin_moved"]) == (True, True, False)
    assert added["pinned_version"] is None and added["dataset_version"] == 1
    assert added["criterion"] == {
        "criterion_id": "window",
        "text": NOTE,
        "tags": ["refunds"],
        "source": f"a note on dataset {follows} by {api.user_id}",
    }
    assert added["judge_version"]["fingerprint"]["rubric_hash"] != before["rubric_hash"]
    assert "its next runs grade with v2" in added["message"]
    # The judge's versions: v2 is v1 with the criterion, as GET shows it.
    v2 = api.ok("GET", f"/api/v1/judges/{judge}/versions/2")
    assert [k["criterion_id"] for k in v2["spec"]["criteria"]] == ["correct", "window"]
    assert v2["published_by"] == api.user_id

    fake.reset()
    second = api.start(agent, follows)["run_id"]
    api.wait(second)
    after = _judge_scores(api, second)
    assert {s["passed"] for s in after.values()} == {True}
    fp = after["c0"]["fingerprint"]
    assert fp["judge_version"] == 2 and fp["rubric_hash"] != before["rubric_hash"]
    # Only the case tagged `refunds` is graded on the note.
    assert _criteria_asked(fake) == {
        "question 0": ["correct", "window"],
        "question 1": ["correct"],
        "question 2": ["correct"],
    }
    # Sent again, the same note publishes nothing more (200, the version that holds it).
    status, again = api.call(
        "POST",
        f"/api/v1/datasets/{follows}/criteria",
        json={"note": NOTE, "tags": ["refunds"], "criterion_id": "window"},
    )
    assert (status, again["published"], again["version"]) == (200, False, 2)
    assert api.ok("GET", f"/api/v1/judges/{judge}")["latest_version"] == 2


def test_a_pinned_dataset_stays_pinned_and_grades_with_its_version(api, fake, judged):
    judge, _, pinned = judged
    added = api.ok(
        "POST",
        f"/api/v1/datasets/{pinned}/criteria",
        json={"note": NOTE, "tags": ["refunds", "tone"]},
    )
    assert (added["version"], added["pinned_version"], added["pin_moved"]) == (2, 1, False)
    assert added["follows_latest"] is False and "stays pinned to v1" in added["message"]
    assert added["criterion"]["criterion_id"].startswith("note_")
    dataset = api.ok("GET", f"/api/v1/datasets/{pinned}")
    assert dataset["latest_version"] == 1
    assert dataset["version"]["scoring"]["settings"]["judge"] == {"judge_id": judge, "version": 1}
    fake.reset()
    run = api.start(api.agent(sleepy_spec(answer="good")), pinned)["run_id"]
    api.wait(run)
    assert {s["fingerprint"]["judge_version"] for s in _judge_scores(api, run).values()} == {1}
    assert set(sum(_criteria_asked(fake).values(), [])) == {"correct"}


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"note": "   ", "tags": ["refunds"]}, "note"),
        ({"note": "x" * 2001, "tags": ["refunds"]}, "note"),
        ({"note": NOTE, "tags": []}, "tags"),
        ({"note": NOTE, "tags": ["refunds", "billing"]}, "tags[1]"),
        ({"note": NOTE, "tags": ["refunds"], "criterion_id": "a b"}, "criterion_id"),
        ({"note": NOTE}, "tags"),
        ({"note": NOTE, "tags": ["refunds"], "source": "me"}, "source"),
    ],
)
def test_bad_input_is_a_400_naming_the_field(api, judged, body, field):
    judge, follows, _ = judged
    status, answer = api.call("POST", f"/api/v1/datasets/{follows}/criteria", json=body)
    assert status == 400 and answer["error"]["field"] == field, answer
    assert api.ok("GET", f"/api/v1/judges/{judge}")["latest_version"] == 1


def test_a_dataset_graded_by_no_judge_is_a_400_naming_the_setting(api):
    plain = api.dataset([{**CASES[0], "reference": "42"}])
    status, answer = api.call(
        "POST", f"/api/v1/datasets/{plain}/criteria", json={"note": NOTE, "tags": ["refunds"]}
    )
    assert status == 400 and answer["error"]["field"] == "scoring.settings.judge", answer
    assert "grades with no judge" in answer["error"]["message"]


def test_editing_the_dataset_is_not_enough_publishing_judges_is_needed_too(api, new_api, judged):
    judge, follows, _ = judged
    guest = "gus@example.com"
    api.ok("POST", "/api/v1/members", json={"user_id": guest, "role": "guest"})
    api.ok(
        "PUT",
        f"/api/v1/members/{guest}/grants/dataset/{follows}",
        json={"permissions": ["datasets:view", "datasets:edit"]},
    )
    gus = new_api(org_id=api.org_id, user_id=guest, role=None)
    status, answer = gus.call(
        "POST", f"/api/v1/datasets/{follows}/criteria", json={"note": NOTE, "tags": ["refunds"]}
    )
    assert status == 403 and answer["error"]["permission"] == "datasets:edit", answer
    viewer = new_api(org_id=api.org_id, user_id="vi@example.com", role="viewer")
    status, answer = viewer.call(
        "POST", f"/api/v1/datasets/{follows}/criteria", json={"note": NOTE, "tags": ["refunds"]}
    )
    assert status == 403 and answer["error"]["permission"] == "datasets:edit", answer
    assert api.ok("GET", f"/api/v1/judges/{judge}")["latest_version"] == 1


def test_the_cli_adds_a_criterion_and_names_the_flag_when_a_tag_is_unknown(api, judged, cli):
    judge, follows, pinned = judged
    done = cli("datasets", "add-criterion", follows, "--note", NOTE, "--tag", "refunds")
    assert done.code == 0, done.err
    assert done.out.startswith(f"judge {judge} v2 grades criterion note_")
    assert "its next runs grade with v2" in done.out
    done = cli("datasets", "add-criterion", pinned, "--note", "Polite.", "--tag", "tone", "--json")
    assert done.code == 0, done.err
    said = json.loads(done.out)
    assert (said["version"], said["pinned_version"], said["pin_moved"]) == (3, 1, False)
    refused = cli("datasets", "add-criterion", follows, "--note", NOTE, "--tag", "billing")
    assert refused.code == 3 and refused.out == ""
    [line] = refused.err.splitlines()
    assert "tags[0]: no case of dataset" in line and "'billing'" in line
    assert line.endswith("-- name a tag the dataset's cases carry with --tag (repeatable)")
    no_tag = cli("datasets", "add-criterion", follows, "--note", NOTE)
    assert no_tag.code == 3 and no_tag.err.strip().startswith("assay: no --tag:")
    assert api.ok("GET", f"/api/v1/judges/{judge}")["latest_version"] == 3
