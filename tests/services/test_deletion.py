"""Deleting an agent or a dataset on fakes (issue 14 scope 6; docs/reference/data-protection.md):
everything of theirs goes and nothing of anybody else's, a delete waits (409) while one of their
runs runs, a run started while the delete goes on is refused, and a delete cut short is finished
by asking again."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from chalicelib.config import Settings
from chalicelib.domain import history
from chalicelib.domain.enums import ArmRole
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import (
    Environment,
    Notification,
    Promotion,
    Suite,
    SuiteResultEntry,
)
from chalicelib.domain.spec import spec_hash
from chalicelib.errors import ConflictError, ForbiddenError, NotFoundError
from chalicelib.services import (
    agents,
    answers,
    datasets,
    deletion,
    estimates,
    evaluations,
    finalize,
    runs,
)
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run, an_arm, an_arm_result, an_attempt, an_outcome
from tests.support.e2e import sleepy_spec

ACME = Identity("acme", "ana")
OTHER = Identity("other", "oz")
T0 = "2026-12-01T08:00:00.000Z"


@pytest.fixture
def c(events) -> FakeContainer:
    """Organization `acme` with agents `a` (created in October, 2 versions) and `keep` (1
    version), datasets `d` and `d2` (cases c1..c3 each), and organization `other` with an agent
    `a` and a dataset `d` of its own."""
    c = FakeContainer(settings=Settings(assay_python_agent_modules="bench.agents"))
    c.agents.seed("acme", "a", versions=2, at="2026-10-15T08:00:00.000Z")
    c.agents.seed("acme", "keep", versions=1)
    c.agents.seed("other", "a", versions=1)
    for who, dataset_id in ((ACME, "d"), (ACME, "d2"), (OTHER, "d")):
        datasets.create_dataset(c, who, name=dataset_id, dataset_id=dataset_id)
        datasets.add_version(
            c,
            who,
            dataset_id,
            scoring={"required": ["equals"]},
            cases=[{"case_id": f"c{i}", "input": "q", "reference": "42"} for i in (1, 2, 3)],
        )
    return c


def _run(c: FakeContainer, run_id: str, org_id: str = "acme", **fields: Any) -> None:
    """A completed run with one attempt per case, its first answer kept in the results bucket."""
    run = a_run(
        run_id,
        org_id=org_id,
        status="completed",
        completed_at=T0,
        outcome=an_outcome(total=3, passed=3, arms={"candidate": an_arm_result(cases=3)}),
        **fields,
    )
    c.runs.add(run)
    for case_id in ("c1", "c2", "c3"):
        c.runs.add_attempt(org_id, an_attempt(case_id, "passed", run_id=run_id))
    c.bucket.put_text(f"{org_id}/answers/{run_id}/candidate#c1#001.txt", "a long answer")


def _suite(c: FakeContainer, suite_id: str, agent_id: str, dataset_id: str, **fields: Any) -> None:
    c.suites.create(
        Suite(
            suite_id=suite_id,
            org_id="acme",
            agent_id=agent_id,
            dataset_id=dataset_id,
            owner="ana",
            history=[{"change": "owner", "old": "bob", "new": "ana"}],
            created_at=T0,
            updated_at=f"{T0}#0",
            **fields,
        )
    )
    c.suites.add_result(
        SuiteResultEntry(
            suite_id=suite_id,
            started_key=f"{T0}#{suite_id}",
            result_id=f"res-{suite_id}",
            org_id="acme",
            agent_id=agent_id,
            trigger={},
            result="failed",
            started_at=T0,
        )
    )


def _notice(c: FakeContainer, user_id: str, notice_id: str, **links: Any) -> None:
    c.notifications.add(
        user_id,
        Notification(
            notification_id=notice_id,
            org_id="acme",
            kind="suite_result",
            title="t",
            links=links,
            created_at=T0,
        ),
    )


def _promotion(c: FakeContainer, agent_id: str, promotion_id: str, **fields: Any) -> None:
    assert c.promotions.create_waiting(
        Promotion(
            promotion_id=promotion_id,
            org_id="acme",
            agent_id=agent_id,
            environment_id="prod",
            version=1,
            status="waiting",
            created_at=T0,
            **fields,
        )
    )


def _notices(c: FakeContainer, user_id: str) -> list[str]:
    return sorted(c.notifications.kept.get(("acme", user_id), {}))


# --- agents ----------------------------------------------------------------------------------


def _everything_of_agent_a(c: FakeContainer) -> None:
    """What agent `a` of `acme` has, beside what `keep` and organization `other` have."""
    _run(c, "r1", agent_id="a", dataset_id="d")
    _run(c, "r2", agent_id="a", dataset_id="d2", evaluation_id="ev-a")
    _run(c, "k1", agent_id="keep", dataset_id="d")
    _run(c, "o1", org_id="other", agent_id="a", dataset_id="d")
    _suite(c, "s1", "a", "d")
    _suite(c, "s1", "keep", "d")  # the same suite id under another agent
    _notice(c, "ana", "n1", agent_id="a", suite_id="s1", run_id="r1")
    _notice(c, "bob", "n2", agent_id="a", suite_id="s1")  # its owner before ana
    _notice(c, "ana", "n3", agent_id="keep", suite_id="s1")
    evaluations.create_evaluation(c, ACME, agent_id="a", dataset_id="d2", evaluation_id="ev-a")
    evaluations.create_evaluation(c, ACME, agent_id="keep", dataset_id="d", evaluation_id="ev-k")
    _promotion(c, "a", "p1")
    _promotion(c, "keep", "p2")
    c.environments.create(
        Environment(
            org_id="acme", environment_id="prod", serving={"a": 2, "keep": 1}, created_at=T0
        )
    )
    for month in ("2026-10", "2026-12"):
        c.spend.charge("acme", "a", month, 10, judge=False)
    c.spend.charge("acme", "keep", "2026-12", 10, judge=False)


def test_deleting_an_agent_deletes_everything_of_it_and_nothing_else(c: FakeContainer) -> None:
    _everything_of_agent_a(c)
    assert ("acme", "a", "latest#v3") in c.runs.history_rows

    gone = deletion.delete_agent(c, ACME, "a")

    assert gone == deletion.Deleted(runs=2, suites=1, evaluations=1)
    with pytest.raises(NotFoundError) as missing:
        c.agents.get("acme", "a")
    assert missing.value.field == "agent_id"
    assert ("acme", "a") not in c.agents.kept
    assert [k for k in c.agents.versions if k[:2] == ("acme", "a")] == []
    assert sorted(r for (org, r) in c.runs.kept if org == "acme") == ["k1"]
    assert sorted(k for k in c.runs.attempts_kept if k[0] == "acme") == [("acme", "k1")]
    assert sorted(c.bucket.texts) == [
        "s3://results/acme/answers/k1/candidate#c1#001.txt",
        "s3://results/other/answers/o1/candidate#c1#001.txt",
    ]
    assert list(c.suites.kept) == [("acme", "keep", "s1")]
    assert list(c.suites.kept_results) == [("acme", "keep", "s1")]
    assert (_notices(c, "ana"), _notices(c, "bob")) == (["n3"], [])
    assert sorted(c.evaluations.kept) == [("acme", "ev-k")]
    assert list(c.promotions.kept) == [("acme", "keep", "p2")]
    assert list(c.promotions.locks) == [("acme", "keep", "prod")]
    assert c.environments.get("acme", "prod").serving == {"keep": 1}
    assert sorted(k for k in c.spend.spent if k[1] is not None) == [("acme", "keep", "2026-12")]
    assert [k for k in c.runs.history_rows if k[:2] == ("acme", "a")] == []
    assert ("other", "o1") in c.runs.kept and ("other", "a") in c.agents.kept


def test_deleting_an_agent_asked_again_after_it_finished_is_a_404(c: FakeContainer) -> None:
    _run(c, "r1", agent_id="a", dataset_id="d")
    deletion.delete_agent(c, ACME, "a")
    with pytest.raises(NotFoundError) as again:
        deletion.delete_agent(c, ACME, "a")
    assert again.value.field == "agent_id"


@pytest.mark.parametrize(
    "fields",
    [{"status": "running"}, {"status": "queued"}, {"status": "cancelled", "slots": 1}],
    ids=["running", "queued", "ended-holding-a-slot"],
)
def test_an_agent_with_a_run_going_is_not_deleted_and_stays_as_it_was(
    c: FakeContainer, fields: dict[str, Any]
) -> None:
    c.runs.add(a_run("busy", agent_id="a", **fields))
    _suite(c, "s1", "a", "d")
    with pytest.raises(ConflictError) as refused:
        deletion.delete_agent(c, ACME, "a")
    assert refused.value.field == "agent_id" and "busy" in refused.value.message
    assert c.agents.get("acme", "a").agent_id == "a"  # no longer marked: it reads as before
    assert ("acme", "busy") in c.runs.kept and ("acme", "a", "s1") in c.suites.kept

    c.runs.set("acme", "busy", status="cancelled", slots=0)
    assert deletion.delete_agent(c, ACME, "a").runs == 1


def test_a_run_planned_before_the_delete_started_is_refused_when_it_is_written(
    c: FakeContainer,
) -> None:
    agents.update_draft(c, ACME, "a", spec=sleepy_spec())
    body = {"dataset_id": "d", "candidate": "draft"}
    plan = runs.plan_run(c, ACME, "a", body)
    priced = estimates.price(c, ACME, plan)
    c.agents.start_deleting("acme", "a", T0)  # the delete marks it meanwhile
    with pytest.raises(NotFoundError) as refused:
        runs.start_run(c, ACME, "a", body, planned=(plan, priced))
    assert refused.value.field == "agent_id"
    assert [r for (org, r) in c.runs.kept if org == "acme"] == []
    with pytest.raises(NotFoundError):  # nor is a new one estimated or started
        runs.estimate(c, ACME, "a", body)
    with pytest.raises(NotFoundError):
        agents.publish(c, ACME, "a")


def test_a_delete_cut_short_is_finished_by_asking_again(
    c: FakeContainer, monkeypatch: pytest.MonkeyPatch
) -> None:
    _everything_of_agent_a(c)

    def cut(org_id: str, agent_id: str) -> int:
        raise RuntimeError("the connection was reset")

    monkeypatch.setattr(c.promotions, "delete_of_agent", cut)
    with pytest.raises(RuntimeError):
        deletion.delete_agent(c, ACME, "a")
    with pytest.raises(NotFoundError):  # still marked: it reads as gone, nothing starts
        c.agents.get("acme", "a")
    assert ("acme", "r1") not in c.runs.kept and ("acme", "a") in c.agents.kept
    monkeypatch.undo()

    assert deletion.delete_agent(c, ACME, "a").runs == 0  # what was left, the agent last
    assert ("acme", "a") not in c.agents.kept and list(c.promotions.kept) == [
        ("acme", "keep", "p2")
    ]


def test_deleting_an_agent_needs_the_permission_to_edit_agents(c: FakeContainer) -> None:
    viewer = Identity("acme", "vi", frozenset({"agents:view"}))
    with pytest.raises(ForbiddenError):
        deletion.delete_agent(c, viewer, "a")
    assert c.agents.get("acme", "a").agent_id == "a"


def test_spend_months_run_from_the_agents_creation_to_now() -> None:
    assert deletion.months_between("2026-11-30T23:59:59.000Z", "2027-01-02T00:00:00.000Z") == [
        "2026-11",
        "2026-12",
        "2027-01",
    ]
    assert deletion.months_between("2026-12-01T00:00:00Z", "2026-12-31T23:59:59Z") == ["2026-12"]
    assert deletion.months_between("2027-01-01T00:00:00Z", "2026-12-31T00:00:00Z") == []


# --- datasets --------------------------------------------------------------------------------


def test_deleting_a_dataset_deletes_its_runs_suites_and_evaluations_of_every_agent(
    c: FakeContainer, events
) -> None:
    _run(c, "r1", agent_id="a", dataset_id="d", resolved_version=2, arms=(an_arm(version=2),))
    _run(c, "k1", agent_id="keep", dataset_id="d")
    _run(c, "r2", agent_id="a", dataset_id="d2")
    _suite(c, "s1", "a", "d")
    _suite(c, "s2", "keep", "d", guards=True)
    _suite(c, "s3", "a", "d2")
    _notice(c, "ana", "n1", agent_id="a", suite_id="s1", run_id="r1")
    _notice(c, "bob", "n2", agent_id="keep", suite_id="s2")
    _notice(c, "ana", "n3", agent_id="a", suite_id="s3", run_id="r2")
    evaluations.create_evaluation(c, ACME, agent_id="a", dataset_id="d", evaluation_id="ev-d")
    evaluations.create_evaluation(c, ACME, agent_id="a", dataset_id="d2", evaluation_id="ev-d2")
    arms_on = {k[2] for k in c.runs.history_rows if k[2].startswith("arms#")}
    assert arms_on == {"arms#v2#d", "arms#v3#d", "arms#v3#d2"}

    gone = deletion.delete_dataset(c, ACME, "d")

    assert gone == deletion.Deleted(runs=2, suites=2, evaluations=1)
    with pytest.raises(NotFoundError) as missing:
        c.datasets.get("acme", "d")
    assert missing.value.field == "dataset_id"
    assert [k for k in c.datasets.kept if k[:2] == ("acme", "d")] == []
    assert [k for k in c.datasets.case_rows if k[:2] == ("acme", "d")] == []
    assert ("other", "d", 1) in c.datasets.case_rows
    assert sorted(r for (org, r) in c.runs.kept if org == "acme") == ["r2"]
    assert sorted(c.bucket.texts) == [
        "s3://results/acme/answers/r2/candidate#c1#001.txt",
    ]
    assert list(c.suites.kept) == [("acme", "a", "s3")]
    assert list(c.suites.kept_results) == [("acme", "a", "s3")]
    assert (_notices(c, "ana"), _notices(c, "bob")) == (["n3"], [])
    assert sorted(c.evaluations.kept) == [("acme", "ev-d2")]
    assert {k[2] for k in c.runs.history_rows if k[2].startswith("arms#")} == {"arms#v3#d2"}
    assert all(
        "d" not in row.results
        for row in c.runs.history_rows.values()
        if isinstance(row, history.LatestRow)
    )
    withdrawn = [e for e in events if type(e).__name__ == "GuardWithdrawn"]
    assert sorted((e.agent_id, e.suite_id) for e in withdrawn) == [("a", "s1"), ("keep", "s2")]
    assert c.agents.get("acme", "a").agent_id == "a"  # the agents stay


def test_a_dataset_with_a_run_going_is_not_deleted(c: FakeContainer) -> None:
    c.runs.add(a_run("busy", agent_id="keep", dataset_id="d", status="running"))
    with pytest.raises(ConflictError) as refused:
        deletion.delete_dataset(c, ACME, "d")
    assert refused.value.field == "dataset_id"
    assert c.datasets.get("acme", "d").dataset_id == "d"
    c.runs.set("acme", "busy", status="failed")
    deletion.delete_dataset(c, ACME, "d")
    with pytest.raises(NotFoundError):
        deletion.delete_dataset(c, ACME, "d")


def test_nothing_of_a_dataset_being_deleted_is_written(c: FakeContainer) -> None:
    c.datasets.start_deleting("acme", "d", T0)
    with pytest.raises(NotFoundError) as version:
        datasets.add_version(c, ACME, "d", scoring={"required": ["equals"]}, cases=[{"input": "q"}])
    assert version.value.field == "dataset_id"
    with pytest.raises(NotFoundError):
        evaluations.create_evaluation(c, ACME, agent_id="a", dataset_id="d")
    with pytest.raises(NotFoundError):
        _suite(c, "s9", "a", "d")
    assert [d.dataset_id for d in c.datasets.list("acme")] == ["d2"]


# --- a baseline borrowed from a run that is deleted ------------------------------------------


def _borrowing(c: FakeContainer) -> None:
    """Run `S` (version 2 of agent `a` on `d`: c1, c2 pass, c3 fails, c1's answer kept in the
    bucket), and run `B` of version 3 whose baseline borrows S's first answers: c2 regresses
    (confirmed by one rerun on each side), c3 is fixed."""
    source = a_run(
        "S",
        status="completed",
        completed_at=T0,
        resolved_version=2,
        arms=(an_arm(version=2),),
        outcome=an_outcome(total=3, passed=2),
    )
    c.runs.add(source)
    pointer = c.bucket.put_text("acme/answers/S/candidate#c1#001.txt", "forty-two, at length")
    for case_id, state in (("c1", "passed"), ("c2", "passed"), ("c3", "failed")):
        extra = {"answer_ref": pointer, "answer": "forty"} if case_id == "c1" else {}
        c.runs.add_attempt("acme", an_attempt(case_id, state, run_id="S", **extra))
    baseline = an_arm(
        "baseline",
        ArmRole.BASELINE,
        version=2,
        answers=False,
        source_run_id="S",
        source_arm_id="candidate",
        source_dataset_version=1,
        source_completed_at=T0,
        source_scoring_hash=spec_hash(source.scoring),
    )
    borrower = a_run(
        "B",
        status="completed",
        completed_at="2026-12-01T08:30:00.000Z",
        created_at="2026-12-01T08:10:00.000Z",
        arms=(an_arm(), baseline),
        settings={"reruns": 1},
    )
    for case_id, state, attempt, arm in (
        ("c1", "passed", 1, "candidate"),
        ("c2", "failed", 1, "candidate"),
        ("c3", "passed", 1, "candidate"),
        ("c2", "failed", 2, "candidate"),
        ("c3", "passed", 2, "candidate"),
        ("c2", "passed", 2, "baseline"),
        ("c3", "failed", 2, "baseline"),
    ):
        c.runs.add_attempt("acme", an_attempt(case_id, state, attempt, run_id="B", arm_id=arm))
    outcome = finalize.compute_outcome(c, borrower, finalize.all_attempts(c, borrower))
    c.runs.add(replace(borrower, outcome=outcome))


def _what_b_shows(c: FakeContainer) -> tuple[Any, ...]:
    run = c.runs.get_for_org("acme", "B")
    cases = runs.cases(c, ACME, "B")
    return (
        runs.comparison(c, ACME, "B")[1],
        finalize.comparison_of(c, run, finalize.all_attempts(c, run)),
        [(k.case_id, k.outcome, {a: s.settled for a, s in k.arms.items()}) for k in cases.cases],
        sorted(
            (a.attempt_key, a.state, a.answer) for a in runs.read_run(c, ACME, "B").attempts or []
        ),
    )


def test_a_run_that_borrowed_a_baseline_keeps_its_comparison_when_that_run_is_deleted(
    c: FakeContainer,
) -> None:
    _borrowing(c)
    before = _what_b_shows(c)
    compared = before[0]
    assert compared.verdict.value == "mixed" and compared.counts["regression"] == 1

    runs.delete_run(c, ACME, "S")

    assert c.runs.get("acme", "S") is None and c.runs.attempts("acme", "S") == []
    assert _what_b_shows(c) == before  # kept, recomputed (as a grade again does), and every case
    read = answers.read_answer(c, ACME, "B", "baseline#c1#001")
    assert read.attempt.answer_ref == "s3://results/acme/answers/B/baseline#c1#001.txt"
    assert c.bucket.get_text(read.attempt.answer_ref) == "forty-two, at length"
    assert sorted(c.bucket.texts) == ["s3://results/acme/answers/B/baseline#c1#001.txt"]
    assert finalize.ungraded_score_ids(c.runs.get_for_org("acme", "B"), []) == []


def test_no_run_borrows_from_a_run_being_deleted(c: FakeContainer) -> None:
    _borrowing(c)
    c.runs.mark_deleting("acme", "S", T0)
    late = replace(c.runs.get_for_org("acme", "B"), run_id="late", status="queued", outcome=None)
    with pytest.raises(ConflictError) as refused:
        c.runs.create(late)
    assert refused.value.field == "baseline_run_id"
