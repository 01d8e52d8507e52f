"""The review queue's use cases on the in-memory fakes (docs/guides/review.md): what a finished
run sends and how often, answers of two agents, a newer answer replacing one waiting, a refused
send, two decisions at once, a decision that lost to a regrade, a decision whose process died
before its numbers were in place, and Undo restoring every number."""

from __future__ import annotations

from dataclasses import replace

import pytest

from chalicelib.domain.enums import RunPhase, RunStatus
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Dataset
from chalicelib.domain.review_items import ItemState
from chalicelib.errors import ConflictError
from chalicelib.services import event_handlers, finalize, review, review_decisions, runs
from chalicelib.services.ports.review import Decision, StaleRun
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run, an_attempt

AT = "2026-12-01T08:00:00.000Z"
ANA = Identity("acme", "ana")
FAILED_JUDGE = {"scorer": "judge", "passed": None, "score": 0.0, "reason": "no JSON in reply"}
SKIPPED_JUDGE = {"scorer": "judge", "passed": None, "score": 0.0, "reason": "judge skipped: budget"}


@pytest.fixture
def c() -> FakeContainer:
    c = FakeContainer()
    c.datasets.kept[("acme", "d", 0)] = Dataset(
        version=0, org_id="acme", dataset_id="d", created_at=AT, latest_version=1
    )
    c.datasets.kept[("acme", "d", 1)] = Dataset(
        version=1, org_id="acme", dataset_id="d", created_at=AT
    )
    c.datasets.case_rows[("acme", "d", 1)] = {
        f"c{i}": {"case_id": f"c{i}", "input": f"q{i}", "reference": "42", "tags": ["t"]}
        for i in range(1, 4)
    }
    return c


def finished(
    c: FakeContainer, run_id: str, states: dict[str, str], *, agent: str = "a", at: int = 1
) -> tuple:
    """A completed run of `agent` over c1..c3 whose first answers are `states` (a state
    `judge_failed` or `judge_skipped` is an incomplete answer with such a judge score), recorded
    at epoch ms `at`. Returns (run, its attempts)."""
    run = a_run(run_id, agent_id=agent, status=RunStatus.RUNNING.value)
    c.runs.add(replace(run, phase=RunPhase.FINALIZING.value))
    rows = []
    for case, state in states.items():
        extra = {}
        if state.startswith("judge_"):
            extra = {"scores": [FAILED_JUDGE if state == "judge_failed" else SKIPPED_JUDGE]}
            state = "incomplete"
        key = f"candidate#{case}#001"
        row = an_attempt(
            case, state, run_id=run_id, recorded_key=f"{at:013d}#{key}", answer="7", **extra
        )
        c.runs.add_attempt("acme", row)
        rows.append(row)
    assert finalize.finalize(c, "acme", run_id)
    return c.runs.get("acme", run_id), rows


def test_a_judge_that_failed_sends_its_answer_and_a_skipped_one_sends_nothing(c) -> None:
    run, _ = finished(c, "r1", {"c1": "judge_failed", "c2": "judge_skipped", "c3": "passed"})
    assert (run.routed_to_review, run.routed_replacing, run.routing_error) == (1, 0, None)
    [item] = review.items(c, ANA, "d").items
    assert (item.case_id, item.reason, item.state) == ("c1", "judge_failed", ItemState.WAITING)
    assert item.answer == "7" and item.expected == {"reference": "42"}
    assert item.scores == [{k: FAILED_JUDGE[k] for k in ("scorer", "passed", "score", "reason")}]


def test_a_finalize_delivered_again_sends_nothing_twice_and_counts_the_same(c) -> None:
    run, rows = finished(c, "r1", {"c1": "judge_failed", "c2": "judge_failed", "c3": "passed"})
    again = review.route_finished(c, run, rows)
    assert again == (2, 0, None)
    assert len(review.items(c, ANA, "d").items) == 2
    assert c.review.count_waiting("acme", "d") == 2


def test_another_agents_answer_waits_beside_and_a_newer_one_replaces(c) -> None:
    finished(c, "r1", {"c1": "judge_failed"}, agent="a", at=1)
    finished(c, "r2", {"c1": "judge_failed"}, agent="b", at=2)
    newer, _ = finished(c, "r3", {"c1": "judge_failed"}, agent="a", at=3)
    assert (newer.routed_to_review, newer.routed_replacing) == (1, 1)
    states = {(i.agent_id, i.run_id): i.state for i in review.items(c, ANA, "d").items}
    assert states == {
        ("a", "r1"): ItemState.REPLACED,
        ("b", "r2"): ItemState.WAITING,
        ("a", "r3"): ItemState.WAITING,
    }
    older_run = c.runs.get("acme", "r1")
    attempts = finalize.all_attempts(c, older_run)
    assert review.route_finished(c, older_run, attempts) == (0, 0, None)  # older: not sent


def test_a_refused_send_completes_the_run_and_says_why(c) -> None:
    c.settings = c.settings.model_copy(update={"assay_review_queue_limit": 1})
    run, _ = finished(c, "r1", {"c1": "judge_failed", "c2": "judge_failed"})
    assert run.status == RunStatus.COMPLETED and run.routed_to_review == 1
    assert "holds 1 waiting" in (run.routing_error or "")
    c.review.gone.add(("acme", "d"))
    gone, _ = finished(c, "r2", {"c3": "judge_failed"})
    assert gone.status == RunStatus.COMPLETED and "being deleted" in (gone.routing_error or "")


def _decided_world(c: FakeContainer) -> tuple:
    run, _ = finished(c, "r1", {"c1": "judge_failed", "c2": "passed", "c3": "failed"})
    [item] = review.items(c, ANA, "d").items
    return run, item


def test_a_decision_counts_the_verdict_and_undo_restores_every_number(c) -> None:
    run, item = _decided_world(c)
    before = run.outcome
    assert before is not None and (before.passed, before.undecided) == (1, 1)
    decided = review_decisions.decide(c, ANA, "d", item.item_id, "pass", "fine")
    after = c.runs.get("acme", "r1")
    assert after.outcome is not None and after.outcome.passed == 2 and not after.outcome_stale
    assert decided.audit.runs == [
        {
            "run_id": "r1",
            "before": review_decisions._counts(before),
            "after": review_decisions._counts(after.outcome),
        }
    ]
    assert decided.item.pending_runs is None
    review_decisions.undo(c, ANA, "d", item.item_id)
    assert c.runs.get("acme", "r1").outcome == before
    [entry_1, entry_2] = c.review.audit("acme", "d")
    assert (entry_1.action, entry_1.state_before, entry_1.state_after) == (
        "decide",
        "waiting",
        "decided",
    )
    assert (entry_2.action, entry_2.verdict_before, entry_2.verdict_after) == ("undo", "pass", None)


def test_of_two_decisions_at_once_the_second_is_a_conflict(c) -> None:
    _, item = _decided_world(c)
    c.review.before_decide = lambda: review_decisions.decide(c, ANA, "d", item.item_id, "fail")
    with pytest.raises(ConflictError) as refused:
        review_decisions.decide(c, ANA, "d", item.item_id, "pass")
    assert refused.value.field == "item_id"
    kept = c.review.get("acme", "d", item.item_id)
    assert kept is not None and kept.verdict == "fail"
    assert len(c.review.audit("acme", "d")) == 1


def test_a_decision_that_lost_to_a_regrade_plans_again(c) -> None:
    _, item = _decided_world(c)
    c.review.before_decide = lambda: c.runs.set("acme", "r1", regrades=1)
    review_decisions.decide(c, ANA, "d", item.item_id, "pass")
    run = c.runs.get("acme", "r1")
    assert run.outcome is not None and run.outcome.passed == 2 and run.regrades == 2


def test_numbers_a_dead_process_left_marked_are_put_in_place_by_the_next_read(c) -> None:
    event_handlers.wire()  # the read tells the review use case (`OutcomeStale`)
    run, item = _decided_world(c)
    after = replace(item, state="decided", verdict="pass", decided_by="ana", version=1)
    audit = review_decisions._audit(ANA, item, after, "decide", [], AT)
    review_ = {"verdict": "pass", "item_id": item.item_id, "by": "ana", "at": AT}
    # The decision's transaction alone, as a process that died right after it would leave it.
    assert c.review.decide(
        Decision(item, after, audit, "r1", item.attempt_key, review_, [StaleRun("r1", None)])
    )
    assert c.runs.get("acme", "r1").outcome_stale
    read = runs.read_run(c, ANA, "r1")
    assert read.run.outcome is not None and read.run.outcome.passed == 2
    assert not c.runs.get("acme", "r1").outcome_stale


def test_undo_while_another_answer_waits_leaves_the_item_aside(c) -> None:
    _, item = _decided_world(c)
    review_decisions.decide(c, ANA, "d", item.item_id, "pass")
    finished(c, "r2", {"c1": "judge_failed"}, at=5)
    undone = review_decisions.undo(c, ANA, "d", item.item_id)
    assert undone.item.state == ItemState.REPLACED and undone.item.replaced_by
    assert c.review.count_waiting("acme", "d") == 1
