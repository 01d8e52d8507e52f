"""Pure run rules with hand-computed values (docs/architecture/run-lifecycle.md,
docs/concepts/verdicts.md)."""

from __future__ import annotations

import json
from decimal import Decimal

import pytest

from chalicelib.domain.enums import AttemptState as S
from chalicelib.domain.enums import RunStatus, Verdict
from chalicelib.domain.money import micros_to_usd, token_cost_micros, usd_to_micros
from chalicelib.domain.redaction import redact, redact_value
from chalicelib.domain.run_rules import (
    AttemptFacts,
    Task,
    is_stale_heartbeat,
    percentile,
    settle,
    slots_to_claim,
    summarize_arm,
    task_at,
    verdict_word,
)
from chalicelib.domain.spec import canonical_json, spec_hash


@pytest.mark.parametrize(
    ("total", "passed", "word"),
    [
        (0, 0, Verdict.NONE),
        (5, 5, Verdict.PASS),
        (5, 0, Verdict.FAIL),
        (5, 3, Verdict.PARTIAL),
        (30, 28, Verdict.PARTIAL),
        (1, 1, Verdict.PASS),
    ],
)
def test_the_verdict_word_comes_from_the_summed_totals(total, passed, word):
    assert verdict_word(total, passed) is word


def test_never_evaluated_is_none_not_fail():
    assert verdict_word(0, 0) is Verdict.NONE and Verdict.NONE.value == "none"


@pytest.mark.parametrize(
    ("tries", "settled"),
    [
        ([S.PASSED], S.PASSED),
        ([S.FAILED], S.FAILED),
        ([S.PASSED, S.FAILED, S.FAILED], S.FAILED),
        ([S.FAILED, S.PASSED, S.PASSED], S.PASSED),
        ([S.PASSED, S.FAILED], S.INCOMPLETE),  # a tie is incomplete
        ([S.PASSED, S.INCOMPLETE, S.FAILED], S.INCOMPLETE),  # undecided tries do not vote
        ([S.INCOMPLETE, S.PASSED], S.PASSED),
        ([S.UNGRADED], S.UNGRADED),
        ([S.INCOMPLETE, S.INCOMPLETE], S.INCOMPLETE),
        ([], S.INCOMPLETE),
    ],
)
def test_a_case_settles_by_the_majority_of_its_decided_tries(tries, settled):
    assert settle(tries) is settled


def test_tasks_put_every_arm_of_a_case_side_by_side_then_the_reruns():
    arms, case_ids = ["candidate", "baseline"], ["a", "b", "c"]
    assert [task_at(i, arms, case_ids) for i in range(6)] == [
        Task("candidate", "a", 1),
        Task("baseline", "a", 1),
        Task("candidate", "b", 1),
        Task("baseline", "b", 1),
        Task("candidate", "c", 1),
        Task("baseline", "c", 1),
    ]
    extra = [["candidate", "b", 2], ["baseline", "b", 2]]
    assert task_at(6, arms, case_ids, extra) == Task("candidate", "b", 2)
    assert task_at(7, arms, case_ids, extra).key == "baseline#b#002"
    with pytest.raises(IndexError):
        task_at(8, arms, case_ids, extra)


@pytest.mark.parametrize(
    ("run_limit", "held", "pending", "free", "k"),
    [
        (3, 0, 100, 6, 3),
        (3, 0, 2, 6, 2),
        (3, 1, 100, 6, 2),
        (3, 0, 100, 1, 1),
        (3, 3, 5, 6, 0),
        (3, 0, 0, 6, 0),
        (3, 0, 5, 0, 0),
        (3, 0, 5, -1, 0),
    ],
)
def test_a_run_claims_the_least_of_its_room_its_pending_tasks_and_the_free_slots(
    run_limit, held, pending, free, k
):
    assert slots_to_claim(run_limit=run_limit, run_slots=held, pending=pending, org_free=free) == k


def test_percentiles_interpolate_between_ranks():
    assert percentile([], 50) is None
    assert percentile([10.0], 95) == 10.0
    assert percentile([1, 2, 3, 4], 50) == 2.5
    assert percentile(list(range(1, 101)), 95) == pytest.approx(95.05)


def test_an_arm_summary_counts_cases_by_their_settled_state_and_keeps_the_first_pass_rate():
    attempts = [
        AttemptFacts(
            "a",
            1,
            S.PASSED,
            score=1.0,
            cost_micros=1000,
            input_tokens=10,
            output_tokens=5,
            latency_ms=100,
        ),
        AttemptFacts("b", 1, S.FAILED, cost_micros=1000, latency_ms=200),
        AttemptFacts("b", 2, S.PASSED, cost_micros=1000, latency_ms=300),
        AttemptFacts("b", 3, S.PASSED, cost_micros=1000, latency_ms=400),
        AttemptFacts("c", 1, S.INCOMPLETE, reason="provider error after 3 tries"),
        AttemptFacts("d", 1, S.FAILED, crash=True, reason="agent crashed: boom"),
        AttemptFacts("zzz", 1, S.PASSED),  # not a case of this arm's run: ignored
    ]
    s = summarize_arm(attempts, ["a", "b", "c", "d", "e"])
    assert (s.cases, s.passed, s.failed, s.incomplete, s.ungraded) == (5, 2, 1, 2, 0)
    assert s.pass_rate == pytest.approx(2 / 3)  # over decided cases a, b, d
    assert s.first_pass_rate == pytest.approx(1 / 3)  # first answers: a passed, b and d failed
    assert s.crashed == 1
    assert s.cost_micros == 4000 and s.input_tokens == 10 and s.output_tokens == 5
    # Latency of every answer that came back (not the incomplete one): 0, 100, 200, 300, 400.
    assert s.latency_p50_ms == 200.0
    assert s.latency_p95_ms == pytest.approx(380.0)  # rank 3.8: 300 + 0.8 * 100
    assert s.undecided_reasons == {"provider error after 3 tries": 1, "not answered": 1}


def test_the_sweep_waits_the_full_abandoned_time():
    ten = 10 * 60_000
    assert not is_stale_heartbeat(
        status=RunStatus.RUNNING, heartbeat_at_ms=0, now_ms=ten - 1, abandoned_after_minutes=10
    )
    assert is_stale_heartbeat(
        status=RunStatus.RUNNING, heartbeat_at_ms=0, now_ms=ten, abandoned_after_minutes=10
    )
    assert not is_stale_heartbeat(
        status=RunStatus.COMPLETED, heartbeat_at_ms=0, now_ms=10 * ten, abandoned_after_minutes=10
    )


def test_money_is_exact_in_micro_dollars():
    # 1,234 input tokens at $0.15/M and 567 output at $0.60/M = 185.1 + 340.2 = 525.3 micro-USD
    assert (
        token_cost_micros(1234, 567, {"input_per_mtok_usd": "0.15", "output_per_mtok_usd": "0.60"})
        == 525
    )
    assert token_cost_micros(1000, 0, None) == 0
    assert sum(usd_to_micros("0.1") for _ in range(10)) == usd_to_micros("1.0") == 1_000_000
    assert micros_to_usd(3_010_000) == 3.01
    assert Decimal(str(micros_to_usd(1))) == Decimal("0.000001")


def test_the_spec_hash_ignores_key_order_and_whitespace():
    a = {"runtime": "http", "url": "http://x", "headers": {"b": "1", "a": "2"}}
    b = {"headers": {"a": "2", "b": "1"}, "url": "http://x", "runtime": "http"}
    assert canonical_json(a) == '{"headers":{"a":"2","b":"1"},"runtime":"http","url":"http://x"}'
    assert spec_hash(a) == spec_hash(b)
    assert spec_hash(a) != spec_hash({**a, "url": "http://y"})
    assert len(spec_hash(a)) == 64


def test_recognized_secrets_are_replaced_before_an_answer_is_kept():
    text = "key sk-abcdefghijklmnopqrstuvwxyz123456 and AKIAABCDEFGHIJKLMNOP, fine: sk-short"
    assert redact(text) == "key [REDACTED:openai_key] and [REDACTED:aws_access_key], fine: sk-short"
    assert redact_value({"args": ["Bearer abcdefghijklmnopqrstuvwxyz0123"], "n": 3}) == {
        "args": ["Bearer [REDACTED:bearer_token]"],
        "n": 3,
    }


def test_a_case_task_message_naming_no_well_formed_organization_is_malformed():
    from chalicelib.services.run_case import parse_message

    task = {"run_id": "run_1", "arm_id": "candidate", "case_id": "c1", "attempt": 1}
    assert parse_message(json.dumps({**task, "org_id": "org_a"})) is not None
    for org in ("", "a..b", "org/b", "org#b", 7, None, "[" * 3):
        assert parse_message(json.dumps({**task, "org_id": org})) is None, org
    assert parse_message('{"org_id": ' + "[" * 100_000) is None


def test_lanes_own_strides_and_start_their_tasks_in_turn():
    from chalicelib.domain.run_rules import Lanes

    lanes = Lanes.start(3)
    assert (lanes.next, lanes.busy, lanes.n, lanes.held) == ((0, 1, 2), (False,) * 3, 3, 0)
    assert [lanes.lane_of(i) for i in range(3)] == [None] * 3  # no lane runs a task yet
    # 7 tasks: lane 0 owns 0, 3, 6; lane 1 owns 1, 4; lane 2 owns 2, 5.
    assert lanes.startable(7) == [0, 1, 2] and lanes.pending(7) == 7
    two = lanes.claiming([0, 1])
    assert (two.next, two.busy, two.held) == ((3, 4, 2), (True, True, False), 2)
    assert [two.lane_of(i) for i in range(4)] == [0, 1, None, None]  # tasks 0 and 1 in flight
    assert two.startable(7) == [2] and two.pending(7) == 5
    assert two.claimed(7) == [0, 1] and two.is_claimed(1) and not two.is_claimed(4)
    assert two.successor(0, 7) == 3 and two.successor(1, 7) == 4
    # Lane 1 after task 4 has nothing below 7 (its next would be 7): it gives its slot back.
    late = Lanes((6, 7, 5), (True, True, False))
    assert late.successor(1, 7) is None and late.successor(0, 7) == 6
    assert late.pending(7) == 2 and late.startable(7) == [2]  # tasks 5 and 6
    # Lane 1 gave its slot back; reruns appended at 7..9 give it work again (earliest lane first).
    idle = Lanes(late.next, (True, False, False))
    assert idle.startable(7) == [2] and idle.startable(10) == [2, 1]
    assert late.startable(10) == [2] and late.pending(10) == 5  # 5, 6, 7, 8, 9
    with pytest.raises(ValueError):
        Lanes.start(0)


def test_a_dry_stride_takes_the_back_half_of_the_longest_one_left():
    from chalicelib.domain.run_rules import OPEN, Claim, Lanes

    # 14 tasks, 3 lanes: lane 0 is stuck on task 0 with 3, 6, 9, 12 behind it; lane 1 ran dry
    # (its task 13 in flight), lane 2 runs 11 with nothing after it.
    lanes = Lanes((3, 16, 14), (True, True, True))
    assert [lanes.left(j, 14) for j in range(3)] == [4, 0, 0]
    claim = lanes.claim_for(1, 14)
    assert claim == Claim(1, 9, victim=0, victim_end=OPEN)  # the back half: 9 and 12
    after = lanes.after(claim)
    assert (after.next, after.end) == ((3, 12, 14), (9, OPEN, OPEN))
    assert [after.left(j, 14) for j in range(3)] == [2, 1, 0]
    assert after.lane_of(9) == 1 and after.lane_of(0) == 0 and after.lane_of(13) is None
    assert not after.is_claimed(3) and after.is_claimed(9) and not after.is_claimed(12)
    # Lane 2 runs dry next: lane 0 has the most left (3 and 6), it takes 6.
    assert after.claim_for(2, 14) == Claim(2, 6, victim=0, victim_end=9)
    # Ties go to the first lane after the dry one.
    tie = Lanes((12, 5, 6, 13), (True,) * 4)
    assert tie.claim_for(3, 12) == Claim(3, 9, victim=1) and tie.claim_for(2, 12) is not None
    assert tie.claim_for(0, 12) == Claim(0, 9, victim=1)
    # A stride with one task left gives it up whole; with none left anywhere, nothing.
    last = Lanes((6, 10, 9), (True, True, True), (9, OPEN, OPEN))
    assert last.claim_for(2, 9) == Claim(2, 6, victim=0, victim_end=9)
    assert Lanes((9, 10, 11), (True,) * 3).claim_for(1, 9) is None
    assert Lanes((3,), (True,)).claim_for(0, 2) is None  # one lane: nobody to take from
    # Reruns appended past 14 open every stride again, lane j on the indices i % 3 == j.
    again = Lanes.reopened(14, (False,) * 3)
    assert (again.next, again.end) == ((15, 16, 14), (OPEN,) * 3)


def test_a_task_s_index_in_the_plan_is_checked_against_the_plan():
    from chalicelib.domain.run_rules import Task, index_of, task_at

    arms, cases, extra = ["cand", "base"], ["a", "b", "c"], [["cand", "b", 2], ["base", "b", 2]]
    for i in range(8):
        assert index_of(task_at(i, arms, cases, extra), arms, cases, extra) == i
        assert index_of(task_at(i, arms, cases, extra), arms, cases, extra, hint=i) == i
    assert index_of(Task("base", "c", 1), arms, cases, extra, hint=0) == 5  # a wrong hint
    assert index_of(Task("base", "c", 1), arms, cases, extra, hint=10**9) == 5
    assert index_of(Task("other", "a", 1), arms, cases, extra) is None
    assert index_of(Task("cand", "zz", 1), arms, cases, extra) is None
    assert index_of(Task("cand", "a", 99), arms, cases, extra) is None
    assert index_of(Task("cand", "a", 2), arms, cases, extra) is None  # only b is rerun
