"""The API's response shapes of suites, their results, environments, promotions and connections
(`chalicelib.api.views`), each checked against a dict written out by hand from the record it
shapes, as `test_views.py` checks the others."""

from __future__ import annotations

from dataclasses import replace

from chalicelib.api import views
from chalicelib.domain.records import (
    Connection,
    Environment,
    Promotion,
    Suite,
    SuiteResultEntry,
)
from chalicelib.services.suites import SuitePrice
from tests.unit.test_views import AT, _ordered

# --- suites ----------------------------------------------------------------------------------


def _suite(**changes: object) -> Suite:
    fields: dict[str, object] = dict(
        suite_id="s1",
        org_id="acme",
        agent_id="calc",
        name="nightly",
        dataset_id="arith",
        dataset_version=2,
        environment_id="prod",
        threshold={"min_pass_rate": 0.9},
        max_run_usd_micros=2_500_000,
        triggers={"schedule": {"cron": "0 3 * * *", "timezone": "UTC"}},
        guards=True,
        pins={"dataset_version": 2, "judge_version": None},
        history=[{"at": AT, "by": "ana", "change": "created"}],
        owner="ana",
        paused=False,
        pending=[],
        active_run_id=None,
        last_result=None,
        next_fire_at_ms=1_796_180_400_000,  # 2026-12-02T03:00:00Z
        due_at_ms=None,
        published_seen=[1],
        notified={"1": False},
        created_at=AT,
        updated_at="2026-12-01T09:30:00.000Z#0badc0de",
    )
    fields.update(changes)
    return Suite(**fields)  # type: ignore[arg-type]


def test_a_suite_in_usd_with_its_next_fire_as_a_time_and_its_stamp_without_the_nonce() -> None:
    _ordered(
        views.suite_view(_suite()),
        {
            "suite_id": "s1",
            "agent_id": "calc",
            "name": "nightly",
            "dataset_id": "arith",
            "dataset_version": 2,
            "environment_id": "prod",
            "threshold": {"min_pass_rate": 0.9},
            "triggers": {"schedule": {"cron": "0 3 * * *", "timezone": "UTC"}},
            "max_run_usd": 2.5,
            "guards": True,
            "pins": {"dataset_version": 2, "judge_version": None},
            "owner": "ana",
            "paused": False,
            "paused_reason": None,
            "pending": [],
            "active_run_id": None,
            "last_result": None,
            "replay": None,
            "next_fire_at": "2026-12-02T03:00:00.000Z",
            "history": [{"at": AT, "by": "ana", "change": "created"}],
            "created_at": AT,
            "updated_at": "2026-12-01T09:30:00.000Z",
        },
    )  # no due time, notices or publishes seen


def test_a_suite_without_a_cap_schedule_or_pinned_version_says_none() -> None:
    view = views.suite_view(
        _suite(
            dataset_version=None,
            max_run_usd_micros=None,
            next_fire_at_ms=None,
            pending=None,
            history=None,
        )
    )
    assert (
        view["dataset_version"],
        view["max_run_usd"],
        view["next_fire_at"],
        view["pending"],
        view["history"],
    ) == (None, None, None, [], [])


def test_a_suite_s_price_gives_the_basis_only_once_a_run_was_priced() -> None:
    _ordered(
        views.suite_price_view(
            SuitePrice(
                one_run_micros=1_250_000,
                runs_per_30_days=30,
                month_micros=37_500_000,
                basis="history",
            )
        ),
        {
            "one_run_usd": 1.25,
            "runs_per_30_days": 30,
            "month_usd": 37.5,
            "note": None,
            "basis": "history",
        },
    )
    _ordered(
        views.suite_price_view(
            SuitePrice(runs_per_30_days=4, note="the agent has no published version")
        ),
        {
            "one_run_usd": None,
            "runs_per_30_days": 4,
            "month_usd": None,
            "note": "the agent has no published version",
        },
    )


def test_a_gate_s_result_is_labelled_before_promotion() -> None:
    trigger = {
        "kind": "gate",
        "kinds": None,
        "version": 3,
        "baseline_version": 2,
        "promotion_id": "p1",
        "by": "ana",
        "at": AT,
    }
    row = SuiteResultEntry(
        started_key=f"{AT}#r1",
        suite_id="s1",
        result_id="r1",
        org_id="acme",
        agent_id="calc",
        trigger=trigger,
        version=3,
        run_id="r1",
        purpose="gate",
        result="failed",
        reasons=["pass rate 0.5 < 0.9"],
        cases_broken=["c2"],
        cases_undecided=[],
        overall="regression",
        started_at=AT,
        completed_at="2026-12-01T09:10:00.000Z",
        measured={"dataset_id": "d", "dataset_version": 2, "baseline_version": 2},
    )
    _ordered(
        views.suite_result_view(row),
        {
            "result_id": "r1",
            "suite_id": "s1",
            "result": "failed",
            "label": "Before promotion",
            "purpose": "gate",
            "trigger": trigger,
            "version": 3,
            "run_id": "r1",
            "reasons": ["pass rate 0.5 < 0.9"],
            "cases_broken": ["c2"],
            "cases_undecided": [],
            "overall": "regression",
            "started_at": AT,
            "completed_at": "2026-12-01T09:10:00.000Z",
            "measured": {"dataset_id": "d", "dataset_version": 2, "baseline_version": 2},
            "reviewed_by": None,
            "result_before_review": None,
            "recomputing": False,
        },
    )
    reviewed = views.suite_result_view(
        replace(row, reviewed_by=["ann", "gone"], result_before_review="failed", stale=True),
        {"ann": "ann", "gone": None},
    )
    assert reviewed["reviewed_by"] == [
        {"user_id": "ann", "name": "ann"},
        {"user_id": "gone", "name": None},
    ]
    assert (reviewed["result_before_review"], reviewed["recomputing"]) == ("failed", True)
    not_run = views.suite_result_view(
        SuiteResultEntry(
            started_key=f"{AT}#nr_1",
            suite_id="s1",
            result_id="nr_1",
            org_id="acme",
            agent_id="calc",
            trigger={"kind": "manual"},
            version=None,
            purpose="suite",
            result="not_run",
            started_at=AT,
        )
    )
    assert (
        not_run["label"],
        not_run["version"],
        not_run["run_id"],
        not_run["completed_at"],
        not_run["measured"],
    ) == (None, None, None, None, None)


# --- environments and promotions ---------------------------------------------------------------


def test_a_promotion() -> None:
    row = Promotion(
        promotion_id="p1796",
        org_id="acme",
        agent_id="calc",
        environment_id="prod",
        version=3,
        from_version=2,
        status="waiting",
        guards={"s1": {"result": None}},
        reason=None,
        created_at=AT,
        created_by="ana",
        decided_at=None,
    )
    _ordered(
        views.promotion_view(row),
        {
            "promotion_id": "p1796",
            "agent_id": "calc",
            "environment_id": "prod",
            "version": 3,
            "from_version": 2,
            "status": "waiting",
            "guards": {"s1": {"result": None}},
            "reason": None,
            "created_at": AT,
            "created_by": "ana",
            "decided_at": None,
        },
    )


def test_a_first_promotion_comes_from_no_version() -> None:
    row = Promotion(
        promotion_id="p1",
        org_id="acme",
        agent_id="calc",
        environment_id="prod",
        version=1,
        status="promoted",
        created_at=AT,
        decided_at=AT,
    )
    view = views.promotion_view(row)
    assert (view["from_version"], view["guards"], view["created_by"], view["decided_at"]) == (
        None,
        {},
        "",
        AT,
    )


def test_an_environment_says_whether_it_is_the_default() -> None:
    row = Environment(
        org_id="acme",
        environment_id="prod",
        name="Production",
        serving={"calc": 3},
        created_at=AT,
        created_by="ana",
        test_connections={"shop": "shop-test"},
    )
    expected = {
        "environment_id": "prod",
        "name": "Production",
        "default": True,
        "serving": {"calc": 3},
        "test_connections": {"shop": "shop-test"},
        "created_at": AT,
        "created_by": "ana",
    }
    _ordered(views.environment_view(row, "prod"), expected)
    _ordered(views.environment_view(row, "staging"), {**expected, "default": False})
    assert views.environment_view(row)["default"] is False


def test_a_connection_shows_its_secret_s_name_only() -> None:
    row = Connection(
        org_id="acme",
        connection_id="shop",
        kind="http",
        url="https://shop.example.com/tools",
        auth_secret="shop-token",
        description="the shop",
        created_at=AT,
        created_by="ana",
    )
    _ordered(
        views.connection_view(row),
        {
            "connection_id": "shop",
            "kind": "http",
            "url": "https://shop.example.com/tools",
            "auth_secret": "shop-token",
            "description": "the shop",
            "created_at": AT,
            "created_by": "ana",
        },
    )
