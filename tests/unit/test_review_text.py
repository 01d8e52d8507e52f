"""How the CLI words the review queue (`assay.review_text`) and the fixes `assay.hints` gives its
errors: each rule pinned on the API's JSON."""

from __future__ import annotations

import pytest

from assay import hints
from assay import review_text as rt
from assay.client import ApiError

ANA = {"user_id": "ana@example.com", "name": "Ana"}
GONE = {"user_id": "old@example.com", "name": None}


def test_a_person_is_their_name_a_former_member_or_somebody() -> None:
    assert rt.person_words(ANA) == "Ana"
    assert rt.person_words(GONE) == "a former member"
    assert rt.person_words(None) == "somebody" and rt.person_words({"name": "x"}) == "somebody"
    assert rt.person_words({"user_id": "u", "name": "Ana\x1b[31m\nB"}) == "Ana\\x1b[31m B"


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ({"reason": "confirmed_regression"}, "confirmed regression"),
        ({"reason": "judge_failed"}, "the judge could not grade it"),
        ({"reason": "sent_by_hand", "sent_by": ANA}, "sent by Ana"),
        ({"reason": "sent_by_hand", "sent_by": GONE}, "sent by a former member"),
        ({"reason": "sent_by_hand", "sent_by": None}, "sent by hand"),
        ({"reason": "something_new"}, "something_new"),
        ({}, "-"),
    ],
)
def test_why_an_answer_was_sent(item, said) -> None:
    assert rt.reason_words(item) == said


@pytest.mark.parametrize(
    ("item", "said"),
    [
        ({"state": "waiting"}, "waiting"),
        (
            {"state": "decided", "verdict": "pass", "corrected": True, "decided_by": ANA},
            "decided pass, corrected by Ana",
        ),
        (
            {"state": "decided", "verdict": "pass", "corrected": True, "decided_by": GONE},
            "decided pass, corrected by a former member",
        ),
        (
            {"state": "decided", "verdict": "fail", "corrected": False, "decided_by": ANA},
            "decided fail by Ana",
        ),
        ({"state": "replaced", "replaced_by": "ri2"}, "replaced by ri2"),
        ({"state": "replaced"}, "replaced by a newer answer"),
        ({}, "-"),
    ],
)
def test_where_an_item_stands(item, said) -> None:
    assert rt.verdict_words(item) == said


def test_a_row_of_the_listing_and_its_header() -> None:
    item = {
        "item_id": "ri1",
        "case_id": "c005",
        "question": "What is\n6 x 7?",
        "agent_id": "agt_1",
        "arm_label": "v2",
        "reason": "confirmed_regression",
        "state": "waiting",
    }
    assert rt.item_row(item) == [
        "ri1",
        'c005 "What is 6 x 7?"',
        "agt_1 v2",
        "confirmed regression",
        "waiting",
    ]
    assert rt.answered_by({"agent_id": "agt_1", "arm_label": "", "arm_id": "candidate"}) == (
        "agt_1 candidate"
    )
    assert rt.queue_header("ds", {"waiting": 1}) == "dataset ds: 1 answer waiting for review"
    assert rt.queue_header("ds", {"waiting": 0}) == "dataset ds: 0 answers waiting for review"


def test_what_a_case_expects_and_each_scorer_s_word() -> None:
    assert rt.expected_lines({"reference": "42", "counter_example": "41"}) == [
        "reference: 42",
        "not: 41",
    ]
    assert rt.expected_lines({"checks": [{"kind": "regex", "pattern": "a+"}]}) == [
        'checks: [{"kind": "regex", "pattern": "a+"}]'
    ]
    assert rt.expected_lines({}) == ["nothing given"] == rt.expected_lines(None)
    assert rt.score_line(
        {"scorer": "equals", "passed": False, "score": 0.0, "reason": "expected '42', got '7'"}
    ) == ("equals failed (score 0): expected '42', got '7'")
    assert rt.score_line({"scorer": "judge", "passed": True, "score": 5}) == (
        "judge passed (score 5)"
    )
    assert rt.score_line({"scorer": "judge", "passed": None, "reason": "no reply"}) == (
        "judge could not decide: no reply"
    )
    assert rt.text_lines("one\n\x1b[2Jtwo\n") == ["one", "\\x1b[2Jtwo"]
    assert rt.text_lines("") == ["(empty)"]


def test_what_a_decision_changed_is_said_before_and_after() -> None:
    change = {
        "run_id": "r1",
        "before": {"cases": 10, "passed": 7, "verdict": "partial", "confirmed_regressions": 3},
        "after": {"cases": 10, "passed": 8, "verdict": "partial", "confirmed_regressions": 2},
    }
    assert rt.run_change_line(change) == (
        "run r1: passed 7 -> 8 of 10; verdict partial; confirmed regressions 3 -> 2"
    )
    plain = {
        "run_id": "r2",
        "before": {"cases": 2, "passed": 1, "verdict": "partial", "confirmed_regressions": None},
        "after": {"cases": 2, "passed": 2, "verdict": "pass", "confirmed_regressions": None},
    }
    assert rt.run_change_line(plain) == "run r2: passed 1 -> 2 of 2; verdict partial -> pass"
    suite = {"suite_id": "nightly", "run_id": "r1", "before": "failed", "after": "passed"}
    assert rt.suite_change_line(suite) == "suite nightly (run r1): failed -> passed"
    assert rt.changes_lines({"runs": [change], "suite_results": [suite]}) == [
        rt.run_change_line(change),
        rt.suite_change_line(suite),
    ]
    assert rt.changes_lines({"runs": [], "suite_results": []}) == [
        "no completed run's numbers rest on this answer"
    ]


def test_an_audit_entry_and_what_decide_and_undo_print() -> None:
    entry = {
        "action": "decide",
        "by": GONE,
        "at": "2026-12-06T01:00:00Z",
        "state_before": "waiting",
        "state_after": "decided",
        "verdict_before": None,
        "verdict_after": "pass",
        "note": "fine\nreally",
        "runs": [],
    }
    assert rt.audit_head(entry) == (
        '2026-12-06T01:00:00Z a former member decided pass (waiting -> decided): "fine really"'
    )
    undo = {**entry, "action": "undo", "by": ANA, "verdict_before": "pass", "note": None}
    undo |= {"state_before": "decided", "state_after": "waiting"}
    assert rt.audit_head(undo) == "2026-12-06T01:00:00Z Ana took back pass (decided -> waiting)"
    item = {
        "item_id": "ri1",
        "case_id": "c1",
        "question": "q",
        "state": "decided",
        "verdict": "fail",
        "corrected": False,
        "decided_by": ANA,
    }
    assert rt.decided_lines({"item": item, "audit": entry}, action="decide") == [
        'review item ri1 (c1 "q"): decided fail by Ana',
        "  no completed run's numbers rest on this answer",
    ]
    aside = {**item, "state": "replaced", "replaced_by": "ri9"}
    assert rt.decided_lines({"item": aside, "audit": {}}, action="undo")[0] == (
        'took back the decision on review item ri1 (c1 "q"): replaced by ri9 (a newer answer of '
        "its case waits); the scorers' word stands"
    )


def test_what_a_send_prints() -> None:
    sent = {
        "routed_to_review": 2,
        "routed_replacing": 1,
        "not_sent": [{"case_id": "c3", "agent_id": "a", "why": "in the queue already as item ri3"}],
        "error": "the queue holds 5000 waiting",
    }
    assert rt.send_lines("r1", "candidate", sent) == [
        "sent 2 failed answers of run r1 (candidate) to review (1 in place of an older answer "
        "waiting)",
        "not sent: 1 answer",
        "  c3: in the queue already as item ri3",
        "the queue refused the rest: the queue holds 5000 waiting",
    ]
    nothing = {"routed_to_review": 0, "routed_replacing": 0, "not_sent": [], "error": None}
    assert rt.send_lines("r1", "baseline", nothing) == [
        "sent 0 failed answers of run r1 (baseline) to review",
        "nothing to send: the baseline has no failed first answer",
    ]


def _error(method: str, path: str, status: int, message: str) -> ApiError:
    return ApiError(method, path, status, {"error": {"code": "x", "message": message}})


@pytest.mark.parametrize(
    ("status", "path", "message", "fix"),
    [
        (
            404,
            "/api/v1/datasets/ds1/review/ri-x",
            "review item ri-x not found",
            "assay review list ds1 --all lists the items of the dataset's queue",
        ),
        (
            409,
            "/api/v1/datasets/ds1/review/ri1/decision",
            "review item ri1 is decided already (pass): undo it first",
            "take the decision back first: assay review undo ds1 ri1",
        ),
        (
            409,
            "/api/v1/datasets/ds1/review/ri1/decision",
            "review item ri1 is replaced by a newer answer of its case (item ri2)",
            "decide the newer answer: assay review show ds1 ri2",
        ),
        (
            409,
            "/api/v1/datasets/ds1/review/ri1/undo",
            "review item ri1 is not decided: nothing to undo",
            "assay review show ds1 ri1 shows where it stands",
        ),
        (
            400,
            "/api/v1/datasets/ds1/review/ri1/criterion",
            "review item ri1 has no note to make a criterion of: decide it with a note",
            "take the decision back (assay review undo ds1 ri1), then decide it again with "
            "--note TEXT",
        ),
        (
            400,
            "/api/v1/datasets/ds1/review/ri1/decision",
            "note: String should have at most 4000 characters",
            "shorten --note to 4000 characters or fewer",
        ),
        (
            409,
            "/api/v1/eval-runs/r1/review",
            "eval run r1 is still running: send its failed answers once it has ended",
            "wait for it to end (assay watch r1), then send again",
        ),
        (
            404,
            "/api/v1/datasets/a;rm%20x/review/ri-x",
            "review item ri-x not found",
            "assay review list 'a;rm x' --all lists the items of the dataset's queue",
        ),
    ],
)
def test_the_fix_for_a_review_error(status, path, message, fix) -> None:
    assert hints.fix_for(_error("POST", path, status, message)) == fix


def test_a_dataset_id_with_a_control_character_gets_no_hint() -> None:
    err = _error("GET", "/api/v1/datasets/ds%1B/review/ri-x", 404, "review item ri-x not found")
    assert hints.fix_for(err) is None
