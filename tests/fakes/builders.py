"""Records as the tests build them: runs, arms, attempts and outcomes of organization `acme`
(re-exported by `tests.fakes.ledger`, where the tests import them from)."""

from __future__ import annotations

from typing import Any

from chalicelib.domain.enums import ArmRole, RunPhase, RunStatus
from chalicelib.domain.outcome import ArmResult, Efficiency, Outcome, Quality
from chalicelib.domain.records import Arm, Attempt, Run
from chalicelib.domain.run_rules import Lanes, verdict_word


def an_arm(arm_id: str = "candidate", role: ArmRole = ArmRole.CANDIDATE, **fields_: Any) -> Arm:
    """An arm of version 3 on model `m` (spec hash `h3`); any field may be given."""
    values: dict[str, Any] = {
        "arm_id": arm_id,
        "role": role,
        "version": 3,
        "draft": False,
        "spec": {"model": "m"},
        "spec_hash": "h3",
        "model_profile_id": None,
    }
    return Arm(**{**values, **fields_})


def an_arm_result(
    *,
    cases: int = 2,
    incomplete: int = 0,
    judges: tuple[str, ...] = (),
    cost_micros: int = 0,
    attempts: int | None = None,
) -> ArmResult:
    """An arm's result over `cases` cases, `incomplete` of them undecided (the others passed),
    graded by `judges`, whose `attempts` (default one per case) cost `cost_micros`."""
    passed = cases - incomplete
    quality = Quality(
        cases=cases,
        passed=passed,
        failed=0,
        incomplete=incomplete,
        ungraded=0,
        crashed=0,
        pass_rate=1.0 if passed else None,
        first_pass_rate=1.0 if passed else None,
        average_score=1.0 if passed else None,
        undecided=incomplete,
        undecided_reasons={},
    )
    efficiency = Efficiency(
        cost_usd=0.0,
        cost_per_passed_case_usd=0.0 if passed else None,
        tokens_per_case=0.0,
        input_tokens=0,
        output_tokens=0,
        latency_p50_ms=None,
        latency_p95_ms=None,
        cost_micros=cost_micros,
        attempts=cases if attempts is None else attempts,
    )
    return ArmResult(quality=quality, efficiency=efficiency, judges=judges)


def an_outcome(
    *, total: int = 1, passed: int = 0, arms: dict[str, ArmResult] | None = None
) -> Outcome:
    """The outcome of a run whose candidate passed `passed` of `total` cases (the others failed)."""
    values: dict[str, Any] = {
        "arm_id": "candidate",
        "total": total,
        "passed": passed,
        "failed": total - passed,
        "incomplete": 0,
        "ungraded": 0,
        "crashed": 0,
        "pass_rate": passed / total if total else None,
        "first_pass_rate": passed / total if total else None,
        "average_score": None,
        "verdict": verdict_word(total, passed),
        "undecided": 0,
    }
    if arms is not None:
        values["arms"] = arms
    return Outcome(**values)


def a_run(
    run_id: str = "r1",
    *,
    cases: int = 3,
    arm_ids: tuple[str, ...] = ("candidate",),
    limit: int = 3,
    **fields_: Any,
) -> Run:
    """A queued run of organization `acme` over `cases` cases `c1..cN` on candidate arms `arm_ids`
    (version 3), at most `limit` of its cases at once; any field may be given (`arms` too)."""
    arm_list = tuple(an_arm(arm) for arm in arm_ids)
    values: dict[str, Any] = {
        "run_id": run_id,
        "org_id": "acme",
        "agent_id": "a",
        "dataset_id": "d",
        "dataset_version": 1,
        "created_at": "2026-12-01T08:00:00.000Z",
        "status": RunStatus.QUEUED.value,
        "phase": RunPhase.ANSWERING.value,
        "candidate": "version",
        "resolved_version": 3,
        "spec_hash": "h3",
        "arms": arm_list,
        "case_ids_text": "\n".join(f"c{i}" for i in range(1, cases + 1)),
        "scoring": {"required": ["exact"]},
        "settings": {"run_concurrency": limit, "reruns": 0},
        "tasks_total": cases * len(arm_ids),
        "expected": cases * len(arm_ids),
        "heartbeat_at_ms": 0,
    }
    if "lane_next" not in fields_:
        values |= _lanes_after(fields_.get("next_index", 0), fields_.get("slots", 0), limit)
    return Run(**{**values, **fields_})


def _lanes_after(claimed: int, in_flight: int, n: int) -> dict[str, Any]:
    """The lanes of a run whose first `claimed` tasks started, the last `in_flight` of them still
    running (how a run moves when nothing finished out of turn)."""
    lanes = Lanes.start(n).claiming(range(min(claimed, n)))
    for index in range(n, claimed):
        lanes = Lanes(
            tuple(nxt + n if j == index % n else nxt for j, nxt in enumerate(lanes.next)),
            lanes.busy,
        )
    running = {i % n for i in range(max(0, claimed - in_flight), claimed)}
    return {
        "lane_next": lanes.next,
        "lane_busy": tuple(j in running for j in range(n)),
        "lane_end": lanes.end,
    }


def an_attempt(
    case_id: str,
    state: str,
    attempt: int = 1,
    *,
    run_id: str = "r1",
    arm_id: str = "candidate",
    **fields_: Any,
) -> Attempt:
    """An attempt of `case_id` on `arm_id` recorded as `state` (a decided one scores 1 or 0)."""
    key = f"{arm_id}#{case_id}#{attempt:03d}"
    decided = state in ("passed", "failed")
    scores = (
        [{"scorer": "exact", "passed": state == "passed", "score": float(state == "passed")}]
        if decided
        else []
    )
    values: dict[str, Any] = {
        "attempt_key": key,
        "run_id": run_id,
        "recorded_key": f"{attempt:013d}#{key}",
        "arm_id": arm_id,
        "case_id": case_id,
        "attempt": attempt,
        "state": state,
        "scores": scores,
        "recorded_at": "2026-12-01T08:30:00.000Z",
    }
    return Attempt(**{**values, **fields_})
