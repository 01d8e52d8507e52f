"""At-least-once delivery on the real queue: redeliveries, concurrent duplicates, crashed workers
and the DLQ never lose an attempt nor count one twice (docs/architecture/exactly-once.md,
docs/architecture/slots.md: results are recorded once).

Pollers are paused: each test plays SQS and Lambda by hand against the moto server.
"""

from __future__ import annotations

import json
import threading
import uuid

import pytest

from bench import agents
from chalicelib import names
from chalicelib.domain.run_rules import attempt_key
from chalicelib.services import run_case, sweep
from tests.e2e.conftest import cases
from tests.e2e.manual import Queue


@pytest.fixture
def queue(stack):
    stack.pause_pollers()
    q = Queue(stack)
    q.drain()
    yield q
    q.drain()
    Queue(stack, names.CASE_TASKS_DLQ).drain()
    stack.resume_pollers()


AWS_KEY = "AKIAIOSFODNN7EXAMPLE"


def numbered_spec(probe: str) -> dict:
    return {"runtime": "python", "entrypoint": "bench.agents:numbered", "options": {"probe": probe}}


def progress(api, run_id):
    p = api.ok("GET", f"/api/v1/eval-runs/{run_id}/progress")
    assert p["recorded"] <= p["expected"], p
    return p


def answers_by_case(api, run_id) -> dict[str, str]:
    run = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    return {r["case_id"]: r["answer"] for r in run["results"]}


def test_every_message_delivered_three_times_two_at_once_counts_each_attempt_once(
    api, queue, container
):
    probe = f"p-{uuid.uuid4().hex}"
    ds = api.dataset(cases(5), required=["contains"])
    run = api.start(api.agent(numbered_spec(probe)), ds)
    kept: dict[str, str] = {}
    handled = 0
    while progress(api, run["run_id"])["status"] == "running":
        batch = queue.receive()
        assert batch or handled < 100, "the run stalled with nothing queued"
        for d in batch:
            twins = [
                threading.Thread(
                    target=run_case.handle_task,
                    args=(container, d.body),
                    kwargs={"receive_count": 1},
                )
                for _ in range(2)
            ]
            for t in twins:
                t.start()
            for t in twins:
                t.join()
            case_id = d.task["case_id"]
            kept.setdefault(case_id, answers_by_case(api, run["run_id"])[case_id])
            run_case.handle_task(container, d.body, receive_count=2, message_id=d.message_id)
            queue.delete(d)
            handled += 1
            assert answers_by_case(api, run["run_id"])[case_id] == kept[case_id], (
                "a later delivery replaced the first recorded answer"
            )
    final = progress(api, run["run_id"])
    assert final["status"] == "completed"
    assert (final["recorded"], final["expected"], final["passed"]) == (5, 5, 5)
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert sorted(r["case_id"] for r in full["results"]) == [f"c{i:03d}" for i in range(5)]
    assert full["outcome"]["total"] == 5 and full["outcome"]["passed"] == 5
    assert answers_by_case(api, run["run_id"]) == kept
    for i in range(5):
        assert agents.calls(f"{probe}#c{i:03d}") == 1, "three deliveries asked the agent twice"
    assert container.orgs.get(api.org_id).in_flight == 0


def _killed_once_before_recording(monkeypatch, case_id: str) -> list[str]:
    """The worker is killed (`SystemExit`) once, after the agent answered `case_id` and before
    its attempt is written; returns the list the killed case is appended to."""
    real_record = run_case.record
    crashed: list[str] = []

    def crash_once(c, run_row, task, index, result, **kw):
        if task.case_id == case_id and not crashed:
            crashed.append(task.case_id)
            raise SystemExit(f"worker killed after the agent answered {case_id}")
        return real_record(c, run_row, task, index, result, **kw)

    monkeypatch.setattr(run_case, "record", crash_once)
    return crashed


def test_a_worker_killed_between_the_answer_and_the_write_loses_nothing(
    api, queue, container, monkeypatch
):
    probe = f"p-{uuid.uuid4().hex}"
    ds = api.dataset(cases(4), required=["contains"])
    run = api.start(api.agent(numbered_spec(probe)), ds)
    crashed = _killed_once_before_recording(monkeypatch, "c001")
    while progress(api, run["run_id"])["status"] == "running":
        for d in queue.receive():
            try:
                run_case.handle_task(
                    container, d.body, receive_count=d.receive_count, message_id=d.message_id
                )
            except SystemExit:
                queue.lapse(d, container)  # never deleted: SQS delivers it again, claim lapsed
                continue
            queue.delete(d)
    final = progress(api, run["run_id"])
    assert crashed == ["c001"]
    assert (final["status"], final["recorded"], final["passed"]) == ("completed", 4, 4)
    assert agents.calls(f"{probe}#c001") == 2, "the redelivered task asks the agent again"
    assert agents.calls(f"{probe}#c002") == 1
    assert container.orgs.get(api.org_id).in_flight == 0


def test_a_worker_killed_between_the_write_and_the_delete_counts_nothing_twice(
    api, queue, container
):
    probe = f"p-{uuid.uuid4().hex}"
    ds = api.dataset(cases(6), required=["contains"])
    run = api.start(api.agent(numbered_spec(probe)), ds)
    undeleted = 0
    while progress(api, run["run_id"])["status"] == "running":
        for d in queue.receive():
            run_case.handle_task(
                container, d.body, receive_count=d.receive_count, message_id=d.message_id
            )
            if d.receive_count == 1 and d.task["case_id"] in ("c000", "c003", "c005"):
                undeleted += 1
                queue.release(d)  # killed before DeleteMessage: it comes back
            else:
                queue.delete(d)
    final = progress(api, run["run_id"])
    assert undeleted == 3
    assert (final["status"], final["recorded"], final["expected"], final["passed"]) == (
        "completed",
        6,
        6,
        6,
    )
    for i in range(6):
        assert agents.calls(f"{probe}#c{i:03d}") == 1, "a recorded attempt is never asked again"
    assert container.orgs.get(api.org_id).in_flight == 0


def test_a_task_dead_lettered_before_its_failures_end_the_run_ends_it_naming_the_error(
    api, queue, container, operator, monkeypatch, stack, cli
):
    """The datasets store fails on one case under a running run, on every delivery, and
    `EVAL_CASE_ERROR_TRIES` is past the queue's `maxReceiveCount`: its message reaches the DLQ,
    whose handler ends the run `failed` naming the error its deliveries counted on the attempt
    (the dead letter carries none); the case running beside it is failed, the rest never start,
    its slots are freed, and it is not resumed."""
    operator(
        eval_run_concurrency=2,
        eval_org_concurrency=10,
        eval_case_error_tries=names.MAX_RECEIVE_COUNT + 5,
    )
    ds = api.dataset(cases(6))
    run = api.start(api.agent({"runtime": "python", "entrypoint": "bench.agents:sleepy"}), ds)
    real = container.datasets.get_case

    def broken_for_c002(org_id, dataset_id, version, case_id):
        if case_id == "c002":
            raise RuntimeError("the datasets table is unreachable")
        return real(org_id, dataset_id, version, case_id)

    monkeypatch.setattr(container.datasets, "get_case", broken_for_c002)
    dlq = Queue(stack, names.CASE_TASKS_DLQ)
    receives = 0
    dead = []
    held = {}  # c001's worker is slow: its message stays in flight, its case running
    rounds = 0
    while progress(api, run["run_id"])["status"] == "running":
        rounds += 1
        assert rounds < 200, "the run never ended"
        for d in queue.receive():
            if d.task["case_id"] == "c001":
                held[d.message_id] = d
                continue
            try:
                run_case.handle_task(
                    container, d.body, receive_count=d.receive_count, message_id=d.message_id
                )
            except RuntimeError:
                receives += 1
                queue.release(d)
                continue
            queue.delete(d)
        for d in dlq.receive():
            dead.append(d.task["case_id"])
            run_case.handle_dead_task(
                container,
                d.body,
                receive_count=d.receive_count,
                message_id=d.message_id,
                error=d.attributes.get("reason"),
            )
            dlq.delete(d)
    assert receives == names.MAX_RECEIVE_COUNT
    assert dead == ["c002"]
    monkeypatch.setattr(container.datasets, "get_case", real)  # the store is back for the reads
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert full["status"] == "failed"
    assert full["reason"] == (
        "stopped on an error (RuntimeError: the datasets table is unreachable); the recorded "
        "results are kept, start the run again"
    )
    assert any("stopped on an error" in s for s in full["story"]["sentences"]), full["story"]
    results = {r["case_id"]: (r["state"], r["reason"]) for r in full["results"]}
    stopped = "the run stopped on an error while this case ran"
    assert results == {
        "c000": ("passed", results["c000"][1]),
        "c001": ("failed", stopped),
        "c002": ("failed", stopped),
    }, results
    assert container.orgs.get(api.org_id).in_flight == 0
    assert container.runs.get(api.org_id, run["run_id"]).slots == 0
    gated = cli("gate", run["run_id"])  # the command line says so too
    assert gated.code == 2, gated
    assert f"the run ended failed: {full['reason']}" in gated.out, gated
    # It is not resumed: the slow worker's answer, and whatever else is queued, start nothing.
    for d in held.values():
        _deliver(container, queue, d)
    while batch := queue.receive():
        for d in batch:
            _deliver(container, queue, d)
    after = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert after["status"] == "failed"
    assert {r["case_id"]: (r["state"], r["reason"]) for r in after["results"]} == results
    assert container.orgs.get(api.org_id).in_flight == 0


def test_a_case_failing_on_assay_s_own_error_ends_its_run_failed_at_its_second_failure(
    api, queue, container, operator, frozen, monkeypatch, stack, cli
):
    """`EVAL_CASE_ERROR_TRIES=2`: the datasets store raises for one case under a running run,
    with an AWS key in its message. The first failure is counted on the attempt; the sweep sends
    the task again as a new message (whose receive count starts over), and that copy's failure
    is the second: the run ends `failed` at once, saying it stopped on an error and naming it
    with the key redacted. The case running beside it is failed, the rest never start, its
    slots are freed; the run read and the CLI say so, and the sweep sends nothing of it again."""
    operator(eval_run_concurrency=2, eval_org_concurrency=10, eval_case_error_tries=2)
    ds = api.dataset(cases(6))
    run = api.start(api.agent({"runtime": "python", "entrypoint": "bench.agents:sleepy"}), ds)
    run_id = run["run_id"]
    real = container.datasets.get_case
    broken = []

    def broken_for_c002(org_id, dataset_id, version, case_id):
        if case_id == "c002":
            broken.append(case_id)
            raise RuntimeError(f"the datasets table refused key {AWS_KEY}")
        return real(org_id, dataset_id, version, case_id)

    monkeypatch.setattr(container.datasets, "get_case", broken_for_c002)
    held = {}  # c001's worker is slow: its messages stay in flight, its case running
    first = None  # c002's first delivery, which failed
    while first is None:
        batch = queue.receive()
        assert batch, "c002 was never sent"
        for d in batch:
            if d.task["case_id"] == "c001":
                held[d.message_id] = d
            elif d.task["case_id"] == "c002":
                with pytest.raises(RuntimeError):
                    run_case.handle_task(
                        container, d.body, message_id=d.message_id, receipt_handle=d.receipt
                    )
                first = d
            else:
                _deliver(container, queue, d)
    assert progress(api, run_id)["status"] == "running", "one failure is delivered again"
    # Its own redelivery is far off (as with the queue's visibility timeout): the run stands
    # still, and the sweep takes its running tasks over, sending each as a new message.
    queue.sqs.change_message_visibility(
        QueueUrl=queue.url, ReceiptHandle=first.receipt, VisibilityTimeout=3600
    )
    frozen.advance(minutes=4)
    assert run_id in sweep.sweep(container).resent
    copies = {d.task["case_id"]: d for d in queue.receive()}
    assert sorted(copies) == ["c001", "c002"] and copies["c002"].message_id != first.message_id
    held[copies["c001"].message_id] = copies["c001"]
    run_case.handle_task(  # the copy's failure is the attempt's second: the run fails, no raise
        container, copies["c002"].body, message_id=copies["c002"].message_id
    )
    queue.delete(copies["c002"])
    assert broken == ["c002", "c002"]

    monkeypatch.setattr(container.datasets, "get_case", real)  # the store is back for the reads
    full = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    error = "RuntimeError: the datasets table refused key [REDACTED:aws_access_key]"
    assert full["status"] == "failed"
    assert full["reason"] == sweep.error_reason(error), full["reason"]
    assert AWS_KEY not in json.dumps(full)
    assert any(error in s for s in full["story"]["sentences"]), full["story"]
    results = {r["case_id"]: (r["state"], r["reason"]) for r in full["results"]}
    stopped = "the run stopped on an error while this case ran"
    assert results == {
        "c000": ("passed", results["c000"][1]),
        "c001": ("failed", stopped),
        "c002": ("failed", stopped),
    }, results
    assert container.orgs.get(api.org_id).in_flight == 0
    assert container.runs.get(api.org_id, run_id).slots == 0
    gated = cli("gate", run_id)  # the command line says so too
    assert gated.code == 2, gated
    assert f"the run ended failed: {full['reason']}" in gated.out, gated
    assert AWS_KEY not in gated.out + gated.err
    # The sweep sends nothing of a run that failed, however long it stands still.
    frozen.advance(minutes=4)
    report = sweep.sweep(container)
    assert run_id not in report.resent and run_id not in report.failed
    assert queue.receive() == []
    # Nor is it resumed: the slow worker's answers and the first failure's message start nothing.
    queue.release(first)
    for d in [*held.values(), *queue.receive()]:
        _deliver(container, queue, d)
    after = api.ok("GET", f"/api/v1/eval-runs/{run_id}")
    assert (after["status"], after["reason"]) == ("failed", full["reason"])
    assert {r["case_id"]: (r["state"], r["reason"]) for r in after["results"]} == results
    assert container.orgs.get(api.org_id).in_flight == 0
    assert broken == ["c002", "c002"], "a failed run's task reads nothing more"


def test_an_agent_that_crashes_fails_its_case_only_and_the_run_completes(api):
    """The agent's own failure is no error of assay's: its case is `failed` with `crash`, and the
    run completes."""
    spec = {"runtime": "python", "entrypoint": "bench.agents:crashing", "options": {"only": "c001"}}
    run = api.start(api.agent(spec), api.dataset(cases(3)))
    assert api.wait(run["run_id"])["status"] == "completed"
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    states = {r["case_id"]: (r["state"], r["crash"]) for r in full["results"]}
    assert states == {
        "c000": ("passed", False),
        "c001": ("failed", True),
        "c002": ("passed", False),
    }
    assert full["status"] == "completed" and full["reason"] is None


def _deliver(container, queue, d) -> None:
    run_case.handle_task(container, d.body, receive_count=d.receive_count, message_id=d.message_id)
    queue.delete(d)


def test_copies_of_every_task_before_and_after_it_ran_ask_each_case_once_and_start_no_chain(
    api, queue, container
):
    """Issue 11: a copy (a message of its own) of a task that is being answered or is recorded
    never asks the agent, and never re-sends a successor that is running or recorded."""
    probe = f"p-{uuid.uuid4().hex}"
    ds = api.dataset(cases(8), required=["contains"])
    run = api.start(api.agent(numbered_spec(probe)), ds)
    handled = 0
    while progress(api, run["run_id"])["status"] == "running":
        batch = queue.receive()
        assert batch or handled < 200, "the run stalled with nothing queued"
        for d in batch:
            handled += 1
            if d.receive_count == 1 and "copy" not in d.body:
                for n in (1, 2):  # copies that arrive after the original was answered
                    queue.send(d.body.replace("}", f',"copy":{n}}}'))
            _deliver(container, queue, d)
    final = progress(api, run["run_id"])
    assert (final["status"], final["recorded"], final["expected"], final["passed"]) == (
        "completed",
        8,
        8,
        8,
    )
    for i in range(8):
        assert agents.calls(f"{probe}#c{i:03d}") == 1, f"c{i:03d} was asked more than once"
    # Every original and its two copies, nothing more: no copy started a second chain.
    while batch := queue.receive():
        for d in batch:
            handled += 1
            _deliver(container, queue, d)
    assert handled == 8 * 3
    assert container.orgs.get(api.org_id).in_flight == 0


def test_a_task_outside_the_run_s_plan_goes_to_the_dlq_and_changes_nothing(
    api, queue, container, stack
):
    ds = api.dataset(cases(2), required=["contains"])
    run = api.start(api.agent(numbered_spec(f"p-{uuid.uuid4().hex}")), ds)
    task = None
    while progress(api, run["run_id"])["status"] == "running":
        for d in queue.receive():
            task = d.task
            _deliver(container, queue, d)
    assert task is not None
    before = progress(api, run["run_id"])
    assert (before["status"], before["recorded"], before["expected"]) == ("completed", 2, 2)
    outsiders = {
        "an unknown case": {**task, "case_id": "c999", "index": 0},
        "an unknown arm": {**task, "arm_id": "nobody"},
        "attempt 99": {**task, "attempt": 99},
    }
    for body in outsiders.values():
        queue.send(json.dumps(body))
    for d in queue.receive():
        _deliver(container, queue, d)
    after = progress(api, run["run_id"])
    assert (after["recorded"], after["expected"], after["passed"]) == (2, 2, 2)
    full = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")
    assert len(full["results"]) == 2
    dlq = Queue(stack, names.CASE_TASKS_DLQ)
    dead = dlq.receive()
    reasons = sorted(d.attributes["reason"] for d in dead)
    assert len(dead) == 3 and all(" has no task " in r for r in reasons), reasons
    for d in dead:  # the DLQ's handler drops them too
        run_case.handle_dead_task(container, d.body, message_id=d.message_id)
        dlq.delete(d)
    assert progress(api, run["run_id"])["recorded"] == 2
    assert len(api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}")["results"]) == 2


# --- a delivery carries on with its lane (issue 12) -------------------------------------------


PLENTY = lambda: 10**9  # noqa: E731 - a Lambda context's milliseconds left, never running out


def _lease_key(task: dict) -> str:
    return attempt_key(task["arm_id"], task["case_id"], int(task["attempt"]))


def test_a_delivery_carries_on_with_its_lane_and_one_killed_mid_lane_loses_nothing(
    api, queue, container, limits, monkeypatch
):
    """With time left in its invocation, a delivery asks its lane's next cases itself (no
    message); killed on one of them, its own message comes back, finds the carried case whose
    claim lapsed and sends it, and the lane goes on from there."""
    limits(2, 10)
    probe = f"p-{uuid.uuid4().hex}"
    ds = api.dataset(cases(6), required=["contains"])
    run = api.start(api.agent(numbered_spec(probe)), ds)
    crashed = _killed_once_before_recording(monkeypatch, "c002")
    bodies: list[str] = []
    for _ in range(50):
        if progress(api, run["run_id"])["status"] != "running":
            break
        for d in queue.receive():
            bodies.append(d.task["case_id"])
            try:
                run_case.handle_task(
                    container, d.body, message_id=d.message_id, remaining_ms=PLENTY
                )
            except SystemExit:
                # Killed: nothing is released; once the visibility (and the claims, as long)
                # run out, SQS delivers the message again.
                row = container.runs.get(api.org_id, run["run_id"])
                carried = {**d.task, "case_id": "c002"}
                assert container.runs.lease_of(row, _lease_key(carried)).holder == d.message_id
                container.runs.release_lease(row, _lease_key(carried), d.message_id)
                queue.release(d)
                continue
            queue.delete(d)
    final = progress(api, run["run_id"])
    assert crashed == ["c002"]
    assert (final["status"], final["recorded"], final["passed"]) == ("completed", 6, 6)
    # The two lanes' first tasks, the killed one's message again, then c002 sent for a new
    # delivery, which carried on with c004: no other message.
    assert sorted(bodies) == ["c000", "c000", "c001", "c002"], bodies
    assert agents.calls(f"{probe}#c002") == 2, "the case the worker died on is asked again"
    for case_id in ("c000", "c001", "c003", "c004", "c005"):
        assert agents.calls(f"{probe}#{case_id}") == 1, case_id
    assert container.orgs.get(api.org_id).in_flight == 0


def test_a_copy_of_a_message_whose_lane_is_still_carried_on_waits_and_asks_nobody(
    api, queue, container, limits, monkeypatch
):
    """SQS may deliver a message again while its first delivery is still carrying on with the
    lane: the copy follows the lane to the case being answered and leaves (`LeaseHeld`), asking
    nobody; once the lane ended, a copy only redoes the idempotent hand-off."""
    limits(1, 10)
    probe = f"p-{uuid.uuid4().hex}"
    ds = api.dataset(cases(3), required=["contains"])
    run = api.start(api.agent(numbered_spec(probe)), ds)
    real = run_case.ask_and_grade
    entered, go = threading.Event(), threading.Event()

    def held_on_c001(c, run_row, arm, case, task, **kw):
        if case.case_id == "c001":
            entered.set()
            assert go.wait(60), "the test never let c001 go"
        return real(c, run_row, arm, case, task, **kw)

    monkeypatch.setattr(run_case, "ask_and_grade", held_on_c001)
    (d,) = queue.receive()
    errors: list[BaseException] = []

    def first() -> None:
        try:
            run_case.handle_task(container, d.body, message_id=d.message_id, remaining_ms=PLENTY)
        except BaseException as exc:  # noqa: BLE001 - reported by the assertion below
            errors.append(exc)

    worker = threading.Thread(target=first)
    worker.start()
    assert entered.wait(60), "the delivery never carried on to c001"
    with pytest.raises(run_case.LeaseHeld):
        run_case.handle_task(container, d.body, message_id=d.message_id, remaining_ms=PLENTY)
    go.set()
    worker.join(60)
    assert not worker.is_alive() and errors == []
    queue.delete(d)
    run_case.handle_task(container, d.body, message_id=d.message_id, remaining_ms=PLENTY)
    final = progress(api, run["run_id"])
    assert (final["status"], final["recorded"], final["passed"]) == ("completed", 3, 3)
    for i in range(3):
        assert agents.calls(f"{probe}#c{i:03d}") == 1
    assert queue.receive() == [], "a copy sent a task the lane had carried on with"
    assert container.orgs.get(api.org_id).in_flight == 0


def test_a_delivery_short_of_time_sends_its_lane_s_next_task_instead(api, queue, container, limits):
    """Carrying on needs a case timeout and a margin left in the invocation; short of that, the
    recording sends the next task as a message, as without a Lambda context."""
    limits(1, 10)
    ds = api.dataset(cases(3), required=["contains"])
    run = api.start(api.agent(numbered_spec(f"p-{uuid.uuid4().hex}")), ds)
    needed = (
        container.settings.evaluation_case_timeout_seconds + run_case.CARRY_MARGIN_SECONDS
    ) * 1000
    left = iter([needed + 1, needed])  # enough after c000, not after c001
    seen: list[str] = []
    while progress(api, run["run_id"])["status"] == "running":
        for d in queue.receive():
            seen.append(d.task["case_id"])
            run_case.handle_task(
                container, d.body, message_id=d.message_id, remaining_ms=lambda: next(left, 0)
            )
            queue.delete(d)
    assert seen == ["c000", "c002"]
    assert progress(api, run["run_id"])["recorded"] == 3
