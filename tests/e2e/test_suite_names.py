"""A suite's name is unique among its agent's suites, through the HTTP API (docs/guides/suites.md,
"A suite's name"): two creates or renames of one name at once keep one and refuse the other (409
naming `name` and quoting the kept suite's name), names compare without case, surrounding spaces
or invisible characters (format characters and default-ignorable code points), a name with a
control character, a line or paragraph separator or U+FFFC, or one that reads as blank, is a 400
naming `name`, a rename
or a delete frees the old name, and a suite saved before names were unique (no reservation
item) keeps working and takes its reservation at its next rename.

A suite saved before this rule is made here as it was kept then: its reservation item removed from
the suites table (`stores.suite_names`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from dataclasses import replace
from typing import Any

import pytest

from chalicelib.adapters.stores import suite_names
from chalicelib.adapters.tables import SuiteRow, org_key
from chalicelib.domain.suite_rules import name_key
from tests.e2e.conftest import Api, cases, sleepy_spec


def _agent_and_dataset(api: Api) -> tuple[str, str]:
    """An agent with a published version, a dataset, and the organization's default
    environment (a suite checks the version it serves)."""
    api.ok("POST", "/api/v1/environments", json={"environment_id": "production"})
    return api.agent(sleepy_spec(), publish=1), api.dataset(cases(2))


def _create(api: Api, agent: str, ds: str, name: str) -> tuple[int, Any]:
    return api.call("POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": ds, "name": name})


def _rename(api: Api, agent: str, suite_id: str, name: str) -> tuple[int, Any]:
    return api.call("PATCH", f"/api/v1/agents/{agent}/suites/{suite_id}", json={"name": name})


def _at_once(*calls: Callable[[], tuple[int, Any]]) -> list[tuple[int, Any]]:
    """Each call on a thread of its own, all released together by a barrier; their answers in
    order."""
    barrier = threading.Barrier(len(calls))
    answers: list[tuple[int, Any] | None] = [None] * len(calls)

    def run(i: int) -> None:
        barrier.wait()
        answers[i] = calls[i]()

    threads = [threading.Thread(target=run, args=(i,)) for i in range(len(calls))]
    for thread in threads:
        thread.start()
    for thread in threads:
        thread.join()
    assert all(a is not None for a in answers)
    return [a for a in answers if a is not None]


def _names(api: Api, agent: str) -> list[str]:
    return sorted(s["name"] for s in api.ok("GET", f"/api/v1/agents/{agent}/suites")["suites"])


def _forget_reservation(api: Api, agent: str, name: str) -> None:
    """Make the suite holding `name` one saved before names were unique: no reservation item."""
    SuiteRow(org_key(api.org_id, agent), suite_names.item_id(name_key(name))).delete()


def test_two_creates_of_one_name_at_once_keep_one_and_refuse_the_other(api):
    agent, ds = _agent_and_dataset(api)
    for round_ in range(3):
        name = f"Nightly {round_}"
        answers = _at_once(
            lambda n=name: _create(api, agent, ds, n),
            lambda n=name: _create(api, agent, ds, f"  {n.upper()} "),
        )
        statuses = sorted(status for status, _ in answers)
        assert statuses == [201, 409], answers
        refused = next(body for status, body in answers if status == 409)
        kept = next(body for status, body in answers if status == 201)
        assert refused["error"]["field"] == "name", refused
        assert refused["error"]["suite_id"] == kept["suite_id"], refused
        assert "unique per agent" in refused["error"]["message"]
    assert len(_names(api, agent)) == 3


def test_two_renames_onto_one_name_at_once_keep_one(api):
    agent, ds = _agent_and_dataset(api)
    first = _create(api, agent, ds, "First")[1]["suite_id"]
    second = _create(api, agent, ds, "Second")[1]["suite_id"]
    answers = _at_once(
        lambda: _rename(api, agent, first, "Weekly"),
        lambda: _rename(api, agent, second, "weekly"),
    )
    assert sorted(status for status, _ in answers) == [200, 409], answers
    refused = next(body for status, body in answers if status == 409)
    assert refused["error"]["field"] == "name"
    assert sorted(n.casefold() for n in _names(api, agent)) == sorted(
        ["weekly", "first" if answers[1][0] == 200 else "second"]
    )


def test_a_rename_onto_another_suite_s_name_is_refused_and_changes_nothing(api):
    agent, ds = _agent_and_dataset(api)
    nightly = _create(api, agent, ds, "Nightly")[1]["suite_id"]
    other = _create(api, agent, ds, "Other")[1]
    status, body = _rename(api, agent, other["suite_id"], " NIGHTLY ")
    assert status == 409 and body["error"]["field"] == "name", body
    assert body["error"]["suite_id"] == nightly
    kept = api.ok("GET", f"/api/v1/agents/{agent}/suites/{other['suite_id']}")
    assert kept["name"] == "Other" and kept["updated_at"] == other["updated_at"]
    # its own name in another case is its own: kept as written, without the spaces at its ends
    renamed = api.ok(
        "PATCH", f"/api/v1/agents/{agent}/suites/{nightly}", json={"name": "  nightly  "}
    )
    assert renamed["name"] == "nightly"


def test_a_rename_or_a_delete_frees_the_old_name(api):
    agent, ds = _agent_and_dataset(api)
    nightly = _create(api, agent, ds, "Nightly")[1]["suite_id"]
    assert _create(api, agent, ds, "nightly")[0] == 409
    api.ok("PATCH", f"/api/v1/agents/{agent}/suites/{nightly}", json={"name": "Weekly"})
    status, again = _create(api, agent, ds, "Nightly")
    assert status == 201, again
    assert _create(api, agent, ds, "WEEKLY")[0] == 409
    api.ok("DELETE", f"/api/v1/agents/{agent}/suites/{nightly}")
    assert _create(api, agent, ds, "Weekly")[0] == 201
    assert _names(api, agent) == ["Nightly", "Weekly"]


def test_another_agent_or_no_name_shares_nothing(api):
    agent, ds = _agent_and_dataset(api)
    other_agent = api.agent(sleepy_spec(), publish=1)
    assert _create(api, agent, ds, "Nightly")[0] == 201
    assert _create(api, other_agent, ds, "Nightly")[0] == 201
    for _ in range(2):  # suites without a name hold none
        status, body = api.call("POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": ds})
        assert status == 201 and body["name"] == "", body
    assert _create(api, agent, ds, "   ")[0] == 201


def test_a_suite_saved_before_names_were_unique_keeps_working_and_claims_its_name(api):
    agent, ds = _agent_and_dataset(api)
    legacy = _create(api, agent, ds, "Nightly")[1]["suite_id"]
    _forget_reservation(api, agent, "Nightly")
    assert suite_names.holder(api.org_id, agent, name_key("Nightly")) is None
    # its name is still its own: read from the agent's suites
    status, body = _create(api, agent, ds, "nightly")
    assert status == 409 and body["error"]["suite_id"] == legacy, body
    # changed without a rename, it keeps working
    api.ok(
        "PATCH",
        f"/api/v1/agents/{agent}/suites/{legacy}",
        json={"threshold": {"min_pass_rate": 0.5}},
    )
    # renamed, it takes a reservation of its new name
    renamed = api.ok("PATCH", f"/api/v1/agents/{agent}/suites/{legacy}", json={"name": "Legacy"})
    assert renamed["name"] == "Legacy"
    assert suite_names.holder(api.org_id, agent, name_key("legacy")) == legacy
    assert _create(api, agent, ds, "Nightly")[0] == 201
    assert _create(api, agent, ds, "LEGACY")[0] == 409


def test_two_suites_named_alike_before_the_rule_both_keep_working(api):
    agent, ds = _agent_and_dataset(api)
    first = _create(api, agent, ds, "Nightly")[1]["suite_id"]
    second = _create(api, agent, ds, "Second")[1]["suite_id"]
    _forget_reservation(api, agent, "Nightly")
    _forget_reservation(api, agent, "Second")
    SuiteRow(org_key(api.org_id, agent), second).update(actions=[SuiteRow.name.set("nightly")])
    assert _names(api, agent) == ["Nightly", "nightly"]
    for suite_id in (first, second):
        api.ok("PATCH", f"/api/v1/agents/{agent}/suites/{suite_id}", json={"triggers": {}})
    renamed = api.ok("PATCH", f"/api/v1/agents/{agent}/suites/{first}", json={"name": "Renamed"})
    assert renamed["name"] == "Renamed"
    assert suite_names.holder(api.org_id, agent, name_key("renamed")) == first
    assert _rename(api, agent, first, "NIGHTLY")[0] == 409  # the other one still has it
    api.ok("DELETE", f"/api/v1/agents/{agent}/suites/{second}")
    assert _create(api, agent, ds, "Nightly")[0] == 201


def test_a_reservation_whose_suite_is_gone_is_taken_over(api):
    agent, ds = _agent_and_dataset(api)
    SuiteRow(org_key(api.org_id, agent), suite_names.item_id(name_key("Ghost"))).update(
        actions=[SuiteRow.reserved_by.set("suite_gone"), SuiteRow.name.set("ghost")]
    )
    status, made = _create(api, agent, ds, "Ghost")
    assert status == 201, made
    assert suite_names.holder(api.org_id, agent, "ghost") == made["suite_id"]
    assert _names(api, agent) == ["Ghost"]  # the reservation is never listed as a suite


LOOK_ALIKES = [
    "Night\u200bly",  # a zero-width space inside
    "Nightly\u200b",  # ... at the end
    "\ufeffNightly",  # a byte order mark first
    "Nig\u00adhtly",  # a soft hyphen
    "Nightly\u200d",  # a zero-width joiner
    "\u202aNightly\u202c",  # a bidirectional embedding around it
]
"""Names that read as "Nightly": each holds an invisible format character (Unicode Cf)."""

IGNORABLE_LOOK_ALIKES = [
    "Nightly\ufe0f",  # VARIATION SELECTOR-16
    "Night\ufe00ly",  # VARIATION SELECTOR-1
    "Night\u034fly",  # COMBINING GRAPHEME JOINER
    "Nightly\u3164",  # HANGUL FILLER
    "\u115fNightly",  # HANGUL CHOSEONG FILLER
    "Nightly\U000e0100",  # VARIATION SELECTOR-17
    "Nightly\u2800",  # BRAILLE PATTERN BLANK, compared as a space
]
"""Names that read as "Nightly" with a character that is no format character: default-ignorable
code points (Unicode's Default_Ignorable_Code_Point) and a braille blank."""


def test_names_differing_only_by_default_ignorable_characters_are_one_name(api):
    agent, ds = _agent_and_dataset(api)
    nightly = _create(api, agent, ds, "Nightly")[1]["suite_id"]
    for look_alike in IGNORABLE_LOOK_ALIKES:
        status, body = _create(api, agent, ds, look_alike)
        assert status == 409, (look_alike, body)
        assert (body["error"]["field"], body["error"]["suite_id"]) == ("name", nightly), body
    other = _create(api, agent, ds, "Other")[1]["suite_id"]
    for look_alike in IGNORABLE_LOOK_ALIKES:
        status, body = _rename(api, agent, other, look_alike)
        assert status == 409 and body["error"]["suite_id"] == nightly, (look_alike, body)
    assert _names(api, agent) == ["Nightly", "Other"]


@pytest.mark.parametrize("blank", ["\u3164", "\u2800", "\u200b", " \ufe0f "])
def test_a_name_that_reads_as_blank_is_refused_naming_the_field(api, blank):
    agent, ds = _agent_and_dataset(api)
    status, body = _create(api, agent, ds, blank)
    assert status == 400, body
    assert (body["error"]["code"], body["error"]["field"]) == ("invalid_input", "name"), body
    assert "must hold a character a person can see" in body["error"]["message"], body
    assert _names(api, agent) == []
    suite = _create(api, agent, ds, "Nightly")[1]["suite_id"]
    status, body = _rename(api, agent, suite, blank)
    assert status == 400 and body["error"]["field"] == "name", body
    assert _names(api, agent) == ["Nightly"]


@pytest.mark.parametrize("name", ["Night\u2028ly", "Nightly\u2029", "Nightly\ufffc"])
def test_a_separator_or_an_object_replacement_is_refused_naming_the_field(api, name):
    agent, ds = _agent_and_dataset(api)
    status, body = _create(api, agent, ds, name)
    assert status == 400, body
    assert (body["error"]["code"], body["error"]["field"]) == ("invalid_input", "name"), body
    assert _names(api, agent) == []


@pytest.mark.parametrize("look_alike", LOOK_ALIKES)
def test_a_name_that_differs_only_by_invisible_characters_is_the_same_name(api, look_alike):
    agent, ds = _agent_and_dataset(api)
    nightly = _create(api, agent, ds, "Nightly")[1]["suite_id"]
    status, body = _create(api, agent, ds, look_alike)
    assert status == 409, body
    assert (body["error"]["field"], body["error"]["suite_id"]) == ("name", nightly), body
    assert "already has a suite named 'Nightly'" in body["error"]["message"], body
    other = _create(api, agent, ds, "Other")[1]["suite_id"]
    status, body = _rename(api, agent, other, look_alike)
    assert status == 409 and body["error"]["suite_id"] == nightly, body
    assert _names(api, agent) == ["Nightly", "Other"]


def test_a_name_with_an_invisible_character_is_kept_as_written(api):
    agent, ds = _agent_and_dataset(api)
    status, made = _create(api, agent, ds, " Night\u200bly ")
    assert status == 201 and made["name"] == "Night\u200bly", made
    assert _create(api, agent, ds, "NIGHTLY")[0] == 409
    renamed = api.ok(
        "PATCH", f"/api/v1/agents/{agent}/suites/{made['suite_id']}", json={"name": "Weekly"}
    )
    assert renamed["name"] == "Weekly"
    assert _create(api, agent, ds, "Nightly")[0] == 201  # the old name was freed


@pytest.mark.parametrize("name", ["Nightly\x00\x07\x1b[31m", "Night\nly", "Nightly\x9b"])
def test_a_name_with_control_characters_is_refused_naming_the_field(api, name):
    agent, ds = _agent_and_dataset(api)
    status, body = _create(api, agent, ds, name)
    assert status == 400, body
    assert (body["error"]["code"], body["error"]["field"]) == ("invalid_input", "name"), body
    assert "must not contain control characters (found U+" in body["error"]["message"]
    assert _names(api, agent) == []
    suite = _create(api, agent, ds, "Nightly")[1]["suite_id"]
    status, body = _rename(api, agent, suite, name)
    assert status == 400 and body["error"]["field"] == "name", body
    assert _names(api, agent) == ["Nightly"]


def test_the_control_characters_are_named_as_code_points(api):
    agent, ds = _agent_and_dataset(api)
    status, body = _create(api, agent, ds, "Nightly\x00\x07\x1b[31m")
    assert status == 400, body
    assert "(found U+0000, U+0007, U+001B)" in body["error"]["message"], body


def _hiding(container: Any, monkeypatch: Any, hidden: str) -> None:
    """Make each save's read of the agent's suites miss the suite `hidden`, as a save whose read
    ran just before `hidden` was written would: the save then meets the name's reservation in its
    conditional write (the race path), not in the read."""
    real = container.suites.of_agent

    def before_the_other_save(org_id: str, agent_id: str) -> list[Any]:
        return [s for s in real(org_id, agent_id) if s.suite_id != hidden]

    monkeypatch.setattr(container.suites, "of_agent", before_the_other_save)


def test_a_create_that_loses_the_race_quotes_the_kept_suite_s_name(api, container, monkeypatch):
    agent, ds = _agent_and_dataset(api)
    kept = _create(api, agent, ds, "race0")[1]["suite_id"]
    _hiding(container, monkeypatch, kept)
    status, body = _create(api, agent, ds, " RACE0 ")
    assert status == 409, body
    assert (body["error"]["field"], body["error"]["suite_id"]) == ("name", kept), body
    assert "already has a suite named 'race0'" in body["error"]["message"], body
    assert "RACE0" not in body["error"]["message"]


def test_a_rename_that_loses_the_race_quotes_the_kept_suite_s_name(api, container, monkeypatch):
    agent, ds = _agent_and_dataset(api)
    kept = _create(api, agent, ds, "Weekly run")[1]["suite_id"]
    other = _create(api, agent, ds, "Other")[1]["suite_id"]
    _hiding(container, monkeypatch, kept)
    status, body = _rename(api, agent, other, "WEEKLY\u200b  RUN")
    assert status == 409, body
    assert (body["error"]["field"], body["error"]["suite_id"]) == ("name", kept), body
    assert "already has a suite named 'Weekly run'" in body["error"]["message"], body
    monkeypatch.undo()
    assert _names(api, agent) == ["Other", "Weekly run"]


def test_two_creates_at_once_quote_the_kept_suite_s_name_whichever_path_refused(api):
    agent, ds = _agent_and_dataset(api)
    for round_ in range(3):
        name = f"race{round_}"
        answers = _at_once(
            lambda n=name: _create(api, agent, ds, n),
            lambda n=name: _create(api, agent, ds, n.upper()),
        )
        assert sorted(status for status, _ in answers) == [201, 409], answers
        kept = next(body for status, body in answers if status == 201)
        refused = next(body for status, body in answers if status == 409)
        assert f"already has a suite named {kept['name']!r}" in refused["error"]["message"]


def test_a_rename_meeting_another_change_reads_the_suite_again(api, container, monkeypatch):
    agent, ds = _agent_and_dataset(api)
    suite = _create(api, agent, ds, "Nightly")[1]["suite_id"]
    real = container.suites.replace
    others: list[str] = []

    def another_writer_first(before: Any, after: Any) -> bool:
        if not others:  # another save changes the suite between this save's read and its write
            other = replace(before, threshold={"min_pass_rate": 0.5}, updated_at="other-stamp")
            assert real(before, other)
            others.append(other.updated_at)
        return real(before, after)

    monkeypatch.setattr(container.suites, "replace", another_writer_first)
    status, body = _rename(api, agent, suite, "Weekly")
    assert status == 200, body
    assert body["name"] == "Weekly" and body["threshold"]["min_pass_rate"] == 0.5, body
    assert suite_names.holder(api.org_id, agent, name_key("weekly")) == suite
    assert suite_names.holder(api.org_id, agent, name_key("nightly")) is None
