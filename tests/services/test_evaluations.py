"""Evaluations on fakes (docs/guides/by-hand.md): a run of an evaluation pins
the agent and version its selector picked when it was created, the history lists it newest first,
and what an evaluation refuses."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chalicelib.config import Settings
from chalicelib.domain.identity import Identity
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError
from chalicelib.services import agents, datasets, evaluations, runs
from tests.fakes import FakeContainer
from tests.support.e2e import sleepy_spec

ACME = Identity("acme", "ana")
OTHER = Identity("other", "oz")


@pytest.fixture
def c(events) -> FakeContainer:
    """An organization with agent `agt` (versions 1 and 2 published, version 1 served) and dataset
    `ds` (one version of two cases)."""
    c = FakeContainer(settings=Settings(assay_python_agent_modules="bench.agents"))
    agents.create_agent(c, ACME, name="a", spec=sleepy_spec(), agent_id="agt")
    agents.publish(c, ACME, "agt")
    agents.update_draft(c, ACME, "agt", spec=sleepy_spec(answer="41"))
    agents.publish(c, ACME, "agt")
    c.agents.kept[("acme", "agt")] = replace(c.agents.get("acme", "agt"), live_version=1)
    datasets.create_dataset(c, ACME, name="d", dataset_id="ds")
    datasets.add_version(
        c,
        ACME,
        "ds",
        scoring={"required": ["equals"]},
        cases=[{"case_id": f"c{i}", "input": "q", "reference": "42"} for i in (1, 2)],
    )
    return c


def _tick(c: FakeContainer) -> None:
    """Move the clock on, so each run is created after the one before."""
    c.clock.advance(seconds=1)


def test_a_run_pins_what_the_selector_picks_when_it_is_created(c: FakeContainer) -> None:
    evaluations.create_evaluation(c, ACME, agent_id="agt", dataset_id="ds", evaluation_id="ev")
    latest, _ = evaluations.start_evaluation_run(c, ACME, "ev", {})
    assert (latest.evaluation_id, latest.agent_id, latest.resolved_version) == ("ev", "agt", 2)

    evaluations.update_evaluation(c, ACME, "ev", {"version": "published"})
    _tick(c)
    served, _ = evaluations.start_evaluation_run(c, ACME, "ev", {})
    assert served.resolved_version == 1
    assert c.runs.get("acme", latest.run_id).resolved_version == 2  # the past run keeps its pin

    history = evaluations.list_evaluation_runs(c, ACME, "ev")
    assert [r.run_id for r in history.runs] == [served.run_id, latest.run_id]


def test_another_agent_takes_the_next_run_and_the_past_runs_keep_theirs(c: FakeContainer) -> None:
    agents.create_agent(c, ACME, name="b", spec=sleepy_spec(), agent_id="agt-b")
    agents.publish(c, ACME, "agt-b")
    evaluations.create_evaluation(c, ACME, agent_id="agt", dataset_id="ds", evaluation_id="ev")
    first, _ = evaluations.start_evaluation_run(c, ACME, "ev", {})
    changed = evaluations.update_evaluation(c, ACME, "ev", {"agent_id": "agt-b"})
    assert changed.agent_id == "agt-b" and changed.updated_at is not None
    _tick(c)
    second, _ = evaluations.start_evaluation_run(c, ACME, "ev", {})
    assert (second.agent_id, second.resolved_version) == ("agt-b", 1)
    assert (c.runs.get("acme", first.run_id).agent_id, first.resolved_version) == ("agt", 2)


def test_a_numbered_selector_must_name_a_published_version(c: FakeContainer) -> None:
    with pytest.raises(NotFoundError) as missing:
        evaluations.create_evaluation(c, ACME, agent_id="agt", dataset_id="ds", version=3)
    assert missing.value.field == "version"
    evaluations.create_evaluation(c, ACME, agent_id="agt", dataset_id="ds", evaluation_id="e")
    with pytest.raises(NotFoundError):
        evaluations.update_evaluation(c, ACME, "e", {"version": 3})
    assert c.evaluations.get("acme", "e").version == "latest"


def test_a_start_naming_the_evaluation_takes_its_selector(c: FakeContainer) -> None:
    evaluations.create_evaluation(
        c, ACME, agent_id="agt", dataset_id="ds", version=1, evaluation_id="v1"
    )
    run, _ = runs.start_run(c, ACME, "agt", {"dataset_id": "ds", "evaluation_id": "v1"})
    assert (run.evaluation_id, run.resolved_version) == ("v1", 1)
    with pytest.raises(InvalidInputError) as other_selector:
        runs.start_run(
            c, ACME, "agt", {"dataset_id": "ds", "evaluation_id": "v1", "candidate": "latest"}
        )
    assert other_selector.value.field == "candidate"
    priced = runs.estimate(c, ACME, "agt", {"dataset_id": "ds", "evaluation_id": "v1"})
    assert priced.plan.version == 1  # not the latest, 2: the evaluation's selector
    with pytest.raises(InvalidInputError) as estimated:  # an estimate plans the same run
        runs.estimate(c, ACME, "agt", {"dataset_id": "ds", "evaluation_id": "v1", "version": 2})
    assert estimated.value.field == "version"
    with pytest.raises(NotFoundError):
        runs.estimate(c, ACME, "agt", {"dataset_id": "ds", "evaluation_id": "nope"})
    with pytest.raises(InvalidInputError) as implied_elsewhere:
        runs.start_run(c, ACME, "agt", {"dataset_id": "ds", "evaluation_id": "implied~agt~other"})
    assert implied_elsewhere.value.field == "evaluation_id"


def test_a_start_naming_no_evaluation_pins_the_implied_one(c: FakeContainer) -> None:
    run, _ = runs.start_run(c, ACME, "agt", {"dataset_id": "ds", "candidate": "draft"})
    assert run.evaluation_id == "implied~agt~ds"
    listed = evaluations.list_evaluation_runs(c, ACME, "implied~agt~ds")
    assert [r.run_id for r in listed.runs] == [run.run_id]
    assert evaluations.read_evaluation_run(c, ACME, "implied~agt~ds", run.run_id).run == run


def test_the_history_is_paged_newest_first(c: FakeContainer) -> None:
    evaluations.create_evaluation(c, ACME, agent_id="agt", dataset_id="ds", evaluation_id="ev")
    started = []
    for _ in range(3):
        started.append(evaluations.start_evaluation_run(c, ACME, "ev", {})[0].run_id)
        _tick(c)
    page = evaluations.list_evaluation_runs(c, ACME, "ev", limit=2)
    assert [r.run_id for r in page.runs] == started[:0:-1]
    rest = evaluations.list_evaluation_runs(c, ACME, "ev", limit=2, cursor=page.next_cursor)
    assert [r.run_id for r in rest.runs] == [started[0]] and rest.next_cursor is None
    with pytest.raises(InvalidInputError) as foreign:
        evaluations.list_evaluation_runs(c, ACME, "implied~agt~ds", cursor=page.next_cursor)
    assert foreign.value.field == "cursor"


def test_an_evaluation_with_a_run_still_running_is_not_deleted(c: FakeContainer) -> None:
    evaluations.create_evaluation(c, ACME, agent_id="agt", dataset_id="ds", evaluation_id="ev")
    run, _ = evaluations.start_evaluation_run(c, ACME, "ev", {})
    with pytest.raises(ConflictError) as busy:
        evaluations.delete_evaluation(c, ACME, "ev")
    assert busy.value.field == "evaluation_id" and run.run_id in busy.value.message
    assert c.evaluations.get("acme", "ev") and c.runs.get("acme", run.run_id)

    c.runs.set("acme", run.run_id, status="cancelled", slots=0)
    assert evaluations.delete_evaluation(c, ACME, "ev") == 1
    assert c.runs.get("acme", run.run_id) is None
    with pytest.raises(NotFoundError):
        evaluations.get_evaluation(c, ACME, "ev")


def test_a_run_of_another_evaluation_is_not_found_under_this_one(c: FakeContainer) -> None:
    for eid in ("one", "two"):
        evaluations.create_evaluation(c, ACME, agent_id="agt", dataset_id="ds", evaluation_id=eid)
    run, _ = evaluations.start_evaluation_run(c, ACME, "one", {})
    c.runs.set("acme", run.run_id, status="completed", slots=0)
    for call in (evaluations.read_evaluation_run, evaluations.delete_evaluation_run):
        with pytest.raises(NotFoundError) as missing:
            call(c, ACME, "two", run.run_id)
        assert missing.value.field == "run_id"
    evaluations.delete_evaluation_run(c, ACME, "one", run.run_id)
    assert c.runs.get("acme", run.run_id) is None


def test_another_organization_finds_no_evaluation_explicit_or_implied(c: FakeContainer) -> None:
    evaluations.create_evaluation(c, ACME, agent_id="agt", dataset_id="ds", evaluation_id="ev")
    for eid in ("ev", "implied~agt~ds"):
        with pytest.raises(NotFoundError):
            evaluations.get_evaluation(c, OTHER, eid)
        with pytest.raises(NotFoundError):
            evaluations.list_evaluation_runs(c, OTHER, eid)
        with pytest.raises(NotFoundError):
            evaluations.start_evaluation_run(c, OTHER, eid, {})
    assert evaluations.list_evaluations(c, OTHER).evaluations == []


def test_reserved_and_implied_ids_cannot_be_chosen(c: FakeContainer) -> None:
    for bad in ("stream", "implied~agt~ds", "a/b"):
        with pytest.raises(InvalidInputError) as refused:
            evaluations.create_evaluation(
                c, ACME, agent_id="agt", dataset_id="ds", evaluation_id=bad
            )
        assert refused.value.field == "evaluation_id"
