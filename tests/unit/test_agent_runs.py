"""The pure rules of agent runs (docs/reference/usage.md): derived ids, a usage report's
validation, the surfaces a listing reads, the month."""

from __future__ import annotations

import pytest

from chalicelib.domain import agent_runs as ar
from chalicelib.errors import InvalidInputError


def test_ids_derive_from_what_the_run_answered_and_never_collide_across_kinds() -> None:
    assert ar.eval_run_id("run_1", "candidate#c1#001") == ar.eval_run_id(
        "run_1", "candidate#c1#001"
    )
    ids = {
        ar.eval_run_id("run_1", "candidate#c1#001"),
        ar.grader_run_id("run_1", "candidate#c1#001"),
        ar.grader_run_id("run_1", "candidate#c1#001", 1),
        ar.production_run_id("org_a", "k"),
        ar.production_run_id("org_b", "k"),
    }
    assert len(ids) == 5 and all(ar.is_agent_run_id(i) for i in ids)
    assert not ar.is_agent_run_id("ar_XYZ") and not ar.is_agent_run_id("")


def test_a_report_counts_a_key_once_and_keeps_each_run_s_index() -> None:
    runs = ar.parse_report(
        {
            "runs": [
                {"key": "k1", "agent_id": "a", "cost_usd": "0.0042"},
                {"key": "k1", "agent_id": "a", "cost_usd": 9},
                {
                    "key": "k2",
                    "agent_id": "b",
                    "cost_usd": 1.5,
                    "input_tokens": 812,
                    "asked": "x" * 2000,
                },
            ]
        }
    )
    assert [(r.key, r.index, r.cost_micros) for r in runs] == [
        ("k1", 0, 4200),
        ("k2", 2, 1_500_000),
    ]
    assert runs[1].input_tokens == 812 and len(runs[1].asked or "") == ar.ASKED_CHARS


@pytest.mark.parametrize(
    ("run", "field"),
    [
        ({"agent_id": "a", "cost_usd": 1}, "runs[0].key"),
        ({"key": "has space", "agent_id": "a", "cost_usd": 1}, "runs[0].key"),
        ({"key": "k", "agent_id": "a#b", "cost_usd": 1}, "runs[0].agent_id"),
        ({"key": "k", "agent_id": "a"}, "runs[0].cost_usd"),
        ({"key": "k", "agent_id": "a", "cost_usd": "1e400"}, "runs[0].cost_usd"),
        ({"key": "k", "agent_id": "a", "cost_usd": 1001}, "runs[0].cost_usd"),
        ({"key": "k", "agent_id": "a", "cost_usd": True}, "runs[0].cost_usd"),
        ({"key": "k", "agent_id": "a", "cost_usd": 1, "version": 0}, "runs[0].version"),
        (
            {"key": "k", "agent_id": "a", "cost_usd": 1, "output_tokens": -1},
            "runs[0].output_tokens",
        ),
    ],
)
def test_a_malformed_run_is_refused_naming_its_field(run: dict, field: str) -> None:
    with pytest.raises(InvalidInputError) as err:
        ar.parse_report({"runs": [run]})
    assert err.value.field == field


def test_surfaces_a_listing_reads() -> None:
    assert ar.surfaces_listed(None, None) == ("production", "eval", "grader")
    assert ar.surfaces_listed(None, "eval") == ("production", "grader")
    assert ar.surfaces_listed("eval", None) == ("eval",)
    assert ar.surfaces_listed("eval", "eval") == ()


def test_a_month_is_yyyy_mm() -> None:
    assert ar.month_ok("2026-12") and ar.month_ok("2027-01")
    assert not any(ar.month_ok(m) for m in ("2026-13", "2026-00", "26-12", "2026-1", ""))
