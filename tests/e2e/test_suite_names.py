"""A suite's name is unique among its agent's suites, through the HTTP API (docs/guides/suites.md,
"A suite's name"): two creates or renames of one name at once keep one and refuse the other (409
naming `name`), names compare without case and surrounding spaces, a rename or a delete frees the
old name, and a suite saved before names were unique (no reservation item) keeps working and takes
its reservation at its next rename.

A suite saved before this rule is made here as it was kept then: its reservation item removed from
the suites table (`stores.suite_names`)."""

from __future__ import annotations

import threading
from collections.abc import Callable
from typing import Any

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
