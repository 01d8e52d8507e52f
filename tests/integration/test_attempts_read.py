"""A run's attempts are read from the query's items directly (`base.query_records`), not through
PynamoDB rows (issue 12, the end of a run): against moto's server over HTTP, what the reader
returns must equal what PynamoDB's own rows give, field for field, across pages."""

from __future__ import annotations

from dataclasses import replace
from typing import Any

import pytest

from assay_local.motoserver import MotoHandle
from chalicelib.adapters.stores.base import query_records, record_of, row_of
from chalicelib.adapters.tables import AttemptRow, org_key
from chalicelib.domain.records import Attempt
from tests.integration.conftest import store_tables

pytestmark = pytest.mark.usefixtures("models_put_back")

RUN_KEY = org_key("acme", "r1")


@pytest.fixture
def ddb(moto: MotoHandle, monkeypatch: pytest.MonkeyPatch) -> Any:
    return store_tables(moto, monkeypatch, "attempts-read-")


def _every_field(i: int) -> Attempt:
    return Attempt(
        attempt_key=f"cand#c{i:04d}#001",
        run_id="r1",
        recorded_key=f"{1_790_000_000_000 + i:013d}#cand#c{i:04d}#001",
        arm_id="cand",
        case_id=f"c{i:04d}",
        attempt=1,
        state="failed",
        answer="é" * 300 + " 42",
        answer_ref="s3://b/acme/answers/r1/x.txt",
        answer_bytes=603,
        answer_truncated=True,
        calls=[{"tool": "search", "args": {"q": "x"}, "n": 1.5}],
        scores=[{"scorer": "equals", "passed": False, "reason": "0 != 42"}],
        reason="0 != 42",
        error="timeout",
        crash=True,
        guardrail="blocked",
        cost_micros=1234,
        judge_cost_micros=56,
        judge_calls=2,
        regraded=[{"by": "u", "at": "2026-12-01T00:00:00Z", "state_before": "passed"}],
        input_tokens=100,
        output_tokens=20,
        latency_ms=201.375,
        model="gpt-x",
        recorded_at="2026-12-01T09:00:00.000Z",
        successor={"run_id": "r1", "index": 7},
        delivery="m-1",
    )


def _fewest_fields(i: int) -> Attempt:
    return Attempt(
        attempt_key=f"base#c{i:04d}#002",
        run_id="r1",
        recorded_key=f"{1_790_000_000_000 + i:013d}#base#c{i:04d}#002",
        arm_id="base",
        case_id=f"c{i:04d}",
        attempt=2,
        state="incomplete",
        recorded_at="2026-12-01T09:00:00.000Z",
    )


def test_the_attempts_read_directly_equal_pynamodbs_rows_across_pages(ddb: Any) -> None:
    # ~3 KB apiece: 600 of them need two 1 MB pages
    wanted = [_every_field(i) for i in range(300)] + [_fewest_fields(i) for i in range(300)]
    big = "x" * 2500
    with AttemptRow.batch_write() as batch:
        for a in wanted:
            row = row_of(a, AttemptRow, run_key=RUN_KEY)
            if a.arm_id == "cand":
                row.reason = big
            batch.save(row)
    # an item written without the attributes PynamoDB gives defaults to, and one with a NULL
    ddb.put_item(
        TableName="attempts-read-attempts",
        Item={
            "run_key": {"S": RUN_KEY},
            "attempt_key": {"S": "base#raw#001"},
            "run_id": {"S": "r1"},
            "recorded_key": {"S": "0#base#raw#001"},
            "arm_id": {"S": "base"},
            "case_id": {"S": "raw"},
            "attempt": {"N": "1"},
            "state": {"S": "passed"},
            "recorded_at": {"S": "2026-12-01T09:00:00.000Z"},
            "model": {"NULL": True},
        },
    )
    pages = ddb.query(
        TableName="attempts-read-attempts",
        KeyConditionExpression="run_key = :k",
        ExpressionAttributeValues={":k": {"S": RUN_KEY}},
    )
    assert "LastEvaluatedKey" in pages  # the read below has to follow a second page

    direct = query_records(AttemptRow, Attempt, RUN_KEY)
    through_rows = [record_of(r, Attempt) for r in AttemptRow.query(RUN_KEY, consistent_read=True)]

    assert len(direct) == 601
    assert direct == through_rows
    raw = next(a for a in direct if a.case_id == "raw")
    assert (raw.calls, raw.scores, raw.reason, raw.crash, raw.model) == ([], [], "", False, None)
    full = next(a for a in direct if a.attempt_key == "cand#c0007#001")
    assert full == replace(_every_field(7), reason=big)
    assert isinstance(full.cost_micros, int) and isinstance(full.latency_ms, float)
