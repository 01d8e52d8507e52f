"""The API's response shapes (`chalicelib.api.views`), each checked against a dict written out by
hand from the record it shapes: field names and order, None for what is not there, money in USD,
times as ISO strings. The e2e tests check the same shapes over HTTP."""

from __future__ import annotations

import json
from typing import Any

from chalicelib.api import views
from chalicelib.domain import judge_rules as rules
from chalicelib.domain.estimate_rules import ArmEstimate, Basis, Estimate
from chalicelib.domain.records import (
    Agent,
    AgentVersion,
    BudgetReading,
    Dataset,
    Judge,
    ModelProfile,
    Notification,
)
from chalicelib.services.budgets import Budget
from chalicelib.services.datasets import Written
from chalicelib.services.estimates import Price
from chalicelib.services.notifications import EmailSetting
from chalicelib.services.planning import Plan
from chalicelib.services.ports.objects import RecordingMeta, SecretMeta

AT = "2026-12-01T09:00:00.000Z"
SPEC = {"runtime": "recorded", "inline": {"c1": "4"}}


def _ordered(view: dict, expected: dict) -> None:
    """Equal, and in the same key order: the JSON the API writes is the dict as it is ordered."""
    assert view == expected
    assert json.dumps(view) == json.dumps(expected)


# --- agents ----------------------------------------------------------------------------------


def test_an_agent_with_nothing_published_says_none_for_its_versions() -> None:
    row = Agent(
        org_id="acme",
        agent_id="calc",
        name="Calculator",
        draft_spec=SPEC,
        draft_spec_hash="h1",
        draft_updated_at="2026-12-01T09:05:00.000Z",
        latest_version=0,
        live_version=None,
        monthly_budget_micros=5_000_000,
        created_at=AT,
        created_by="ana",
    )
    _ordered(
        views.agent_view(row),
        {
            "agent_id": "calc",
            "name": "Calculator",
            "org_id": "acme",
            "latest_version": None,
            "live_version": None,
            "draft": {"spec": SPEC, "spec_hash": "h1", "updated_at": "2026-12-01T09:05:00.000Z"},
            "created_at": AT,
        },
    )  # neither its budget nor who created it


def test_an_agent_with_versions_names_its_latest_and_live_ones() -> None:
    row = Agent(
        org_id="acme",
        agent_id="calc",
        name="c",
        draft_spec={},
        draft_spec_hash="h",
        draft_updated_at=AT,
        latest_version=3,
        live_version=2,
        created_at=AT,
    )
    view = views.agent_view(row)
    assert (view["latest_version"], view["live_version"]) == (3, 2)


def test_an_agent_version() -> None:
    row = AgentVersion(
        version=2,
        org_id="acme",
        agent_id="calc",
        spec=SPEC,
        spec_hash="h2",
        model_profile_id="gpt",
        published_at=AT,
        published_by="ana",
        source="api",
    )
    _ordered(
        views.agent_version_view(row),
        {
            "agent_id": "calc",
            "version": 2,
            "spec": SPEC,
            "spec_hash": "h2",
            "model_profile_id": "gpt",
            "published_at": AT,
            "published_by": "ana",
            "source": "api",
        },
    )


# --- budgets ---------------------------------------------------------------------------------


def test_an_agent_s_budget_is_led_by_the_agent_and_none_without_a_budget() -> None:
    _ordered(
        views.budget_view(Budget("calc", "2026-12", None, 0)),
        {
            "agent_id": "calc",
            "scope": "agent",
            "month": "2026-12",
            "monthly_usd": None,
            "spent_usd": 0.0,
            "remaining_usd": None,
        },
    )
    assert (
        views.budget_view(Budget("calc", "2026-12", 2_000_000, 1_250_000))["remaining_usd"] == 0.75
    )


def test_the_organization_s_budget_says_what_is_spent_and_left_in_usd() -> None:
    _ordered(
        views.budget_view(Budget(None, "2026-12", 25_500_000, 1_250_000)),
        {
            "scope": "organization",
            "month": "2026-12",
            "monthly_usd": 25.5,
            "spent_usd": 1.25,
            "remaining_usd": 24.25,
        },
    )


def _price(reading: BudgetReading, **fields: Any) -> Price:
    """The price of a one-case run of version 3 of `calc` on `ds` version 1 (a candidate on
    model `m`, $0.25 a case, no history, no judge), against `reading`."""
    plan = Plan(
        agent_id="calc",
        spec=SPEC,
        version=3,
        draft=False,
        dataset=Dataset(version=1, org_id="acme", dataset_id="ds", created_at=AT, case_count=1),
        case_count=1,
        ungraded=0,
        judged=0,
        judge=None,
        arms=[],
        info={},
        reruns=1,
        stability=False,
        warnings=["w"],
    )
    arm = ArmEstimate(
        arm_id="candidate",
        role="candidate",
        model="m",
        basis=Basis.FALLBACK,
        per_case_micros=250_000,
        first_pass_micros=250_000,
        rerun_ceiling_micros=0,
    )
    estimate = Estimate(
        arms=(arm,),
        judge_first_pass_micros=0,
        judge_rerun_ceiling_micros=0,
        first_pass_micros=250_000,
        rerun_ceiling_micros=0,
        total_micros=250_000,
        basis=Basis.FALLBACK,
    )
    values: dict[str, Any] = {
        "plan": plan,
        "estimate": estimate,
        "judge": None,
        "history": {},
        "reading": reading,
        "month": "2026-12",
        "agent_committed_micros": 0,
        "org_committed_micros": 0,
        "agent_after_micros": None,
        "org_after_micros": None,
        "within_budget": True,
    }
    return Price(**{**values, **fields})


def test_the_estimate_shapes_a_budget_as_the_budget_routes_do() -> None:
    """The `/estimate` response's budgets are the budget routes' (`budget_view`), the agent's
    without its `agent_id`: the same reading is the same dict either way."""
    for reading in (
        BudgetReading(25_500_000, 1_250_000, 2_000_000, 750_000),
        BudgetReading(None, 0, None, 0),
    ):
        org = Budget(None, "2026-12", reading.org_budget_micros, reading.org_spent_micros)
        agent = Budget("calc", "2026-12", reading.agent_budget_micros, reading.agent_spent_micros)
        shown = views.estimate_view(_price(reading))["budgets"]
        _ordered(shown["organization"], views.budget_view(org))
        _ordered({"agent_id": "calc", **shown["agent"]}, views.budget_view(agent))


def test_an_estimate_prices_each_arm_and_what_the_budgets_leave_in_usd() -> None:
    reading = BudgetReading(None, 0, 2_000_000, 750_000)
    price = _price(reading, agent_committed_micros=500_000, agent_after_micros=500_000)
    _ordered(
        views.estimate_view(price),
        {
            "agent_id": "calc",
            "dataset_id": "ds",
            "dataset_version": 1,
            "candidate": "version",
            "resolved_version": 3,
            "cases": 1,
            "ungraded_cases": 0,
            "judged_cases": 0,
            "reruns": 1,
            "reruns_auto": None,
            "luck": None,
            "replay": None,
            "arms": [
                {
                    "arm_id": "candidate",
                    "role": "candidate",
                    "model": "m",
                    "replay": None,
                    "basis": "fallback",
                    "per_case_usd": 0.25,
                    "first_pass_usd": 0.25,
                    "rerun_ceiling_usd": 0.0,
                    "runs_sampled": 0,
                }
            ],
            "judge": None,
            "first_pass_usd": 0.25,
            "rerun_ceiling_usd": 0.0,
            "total_usd": 0.25,
            "basis": "fallback",
            "reused_baseline_run_id": None,
            "missing_baseline_version": None,
            "budgets": {
                "agent": {
                    "scope": "agent",
                    "month": "2026-12",
                    "monthly_usd": 2.0,
                    "spent_usd": 0.75,
                    "remaining_usd": 1.25,
                },
                "organization": {
                    "scope": "organization",
                    "month": "2026-12",
                    "monthly_usd": None,
                    "spent_usd": 0.0,
                    "remaining_usd": None,
                },
            },
            "agent_after_usd": 0.5,
            "org_after_usd": None,
            "agent_committed_usd": 0.5,
            "org_committed_usd": 0.0,
            "within_budget": True,
            "total_micros": 250_000,
            "warnings": ["w"],
        },
    )


# --- the rest ----------------------------------------------------------------------------------


def test_a_model_profile() -> None:
    row = ModelProfile(
        org_id="acme",
        model_profile_id="gpt",
        name="GPT",
        model="gpt-4o",
        settings={"base_url": "https://llm.example.com/v1"},
        temperature=0.2,
        price={"input_per_mtok_usd": "1", "output_per_mtok_usd": "2"},
        created_at=AT,
        created_by="ana",
    )
    _ordered(
        views.model_profile_view(row),
        {
            "model_profile_id": "gpt",
            "name": "GPT",
            "model": "gpt-4o",
            "settings": {"base_url": "https://llm.example.com/v1"},
            "temperature": 0.2,
            "price": {"input_per_mtok_usd": "1", "output_per_mtok_usd": "2"},
            "created_at": AT,
        },
    )


def test_a_judge_s_header_and_a_version_without_its_runtime() -> None:
    header = Judge(
        version=0,
        org_id="acme",
        judge_id="correct",
        name="Correctness",
        latest_version=0,
        created_at=AT,
        created_by="ana",
    )
    _ordered(
        views.judge_view(header),
        {
            "judge_id": "correct",
            "name": "Correctness",
            "latest_version": None,
            "created_at": AT,
            "created_by": "ana",
        },
    )
    body = {
        "model_profile_id": "grader",
        "criteria": [{"criterion_id": "correct", "text": "Says it."}],
    }
    stored = {
        **rules.JudgeSpec.model_validate(body).model_dump(mode="json"),
        "runtime": {
            "runtime": "openai",
            "model": "gpt-grader",
            "base_url": "https://llm.example.com/v1",
        },
    }
    version = Judge(
        version=1,
        org_id="acme",
        judge_id="correct",
        name="Correctness",
        spec=stored,
        rubric_hash="rh",
        created_at=AT,
        created_by="ana",
    )
    spec = {k: v for k, v in stored.items() if k != "runtime"}
    _ordered(
        views.judge_version_view(version),
        {
            "judge_id": "correct",
            "version": 1,
            "spec": spec,
            "model": "gpt-grader",
            "rubric_hash": "rh",
            "fingerprint": {
                "judge_id": "correct",
                "judge_version": 1,
                "model": "gpt-grader",
                "rubric_hash": rules.rubric_hash(rules.JudgeSpec.model_validate(body)),
                "prompt_version": "1",
            },
            "published_at": AT,
            "published_by": "ana",
        },
    )


def test_a_dataset_and_one_of_its_versions() -> None:
    header = Dataset(
        version=0,
        org_id="acme",
        dataset_id="arith",
        name="Arithmetic",
        created_at=AT,
        created_by="ana",
        latest_version=2,
    )
    v2 = Dataset(
        version=2,
        org_id="acme",
        dataset_id="arith",
        name="Arithmetic",
        created_at="2026-12-01T09:01:00.000Z",
        created_by="bob",
        scoring={"required": ["equals"], "settings": {}},
        case_ids=["a", "b"],
        case_count=2,
        ungraded_cases=1,
    )
    expected = {"dataset_id": "arith", "name": "Arithmetic", "latest_version": 2, "created_at": AT}
    _ordered(views.dataset_view(header), expected)
    _ordered(
        views.dataset_view(header, v2),
        {
            **expected,
            "version": {
                "version": 2,
                "case_count": 2,
                "ungraded_cases": 1,
                "scoring": {"required": ["equals"], "settings": {}},
                "created_at": "2026-12-01T09:01:00.000Z",
                "created_by": "bob",
            },
        },
    )
    assert (
        views.dataset_view(Dataset(version=0, org_id="acme", dataset_id="e", created_at=AT))[
            "latest_version"
        ]
        is None
    )


def test_a_written_version_carries_the_lines_of_its_ungraded_cases() -> None:
    header = Dataset(version=0, org_id="acme", dataset_id="arith", created_at=AT, latest_version=1)
    v1 = Dataset(
        version=1,
        org_id="acme",
        dataset_id="arith",
        created_at=AT,
        case_count=3,
        ungraded_cases=1,
    )
    shown = views.written_view(Written(header, v1, [3], "no reference for scorer equals"))
    assert shown["version"]["ungraded_lines"] == [3]
    assert shown["version"]["ungraded_reason"] == "no reference for scorer equals"
    assert {k: v for k, v in shown.items() if k != "version"} == {
        k: v for k, v in views.dataset_view(header, v1).items() if k != "version"
    }
    graded = views.written_view(Written(header, v1, [], None))["version"]
    assert (graded["ungraded_lines"], graded["ungraded_reason"]) == ([], None)


def test_a_notice_and_the_email_choice() -> None:
    row = Notification(
        notification_id="n1",
        org_id="acme",
        kind="suite_result",
        title="Suite s1: failed",
        body="Cases that broke: c2",
        links={"suite_id": "s1"},
        read=False,
        emailed=True,
        created_at=AT,
    )
    _ordered(
        views.notification_view(row),
        {
            "notification_id": "n1",
            "kind": "suite_result",
            "title": "Suite s1: failed",
            "body": "Cases that broke: c2",
            "links": {"suite_id": "s1"},
            "read": False,
            "emailed": True,
            "created_at": AT,
        },
    )
    _ordered(
        views.email_setting_view(EmailSetting(email=True, address="ana@example.com")),
        {"email": True, "address": "ana@example.com"},
    )


def test_a_secret_never_shows_its_value_and_a_listed_recording_shows_what_s3_lists() -> None:
    _ordered(
        views.secret_view(SecretMeta("openai", "2026-12-01T09:00:00Z")),
        {"name": "openai", "updated_at": "2026-12-01T09:00:00Z"},
    )
    listed = RecordingMeta(recording_id="rec-1", bytes=42, uploaded_at="2026-12-01T09:00:00Z")
    _ordered(
        views.recording_view(listed),
        {"recording_id": "rec-1", "bytes": 42, "uploaded_at": "2026-12-01T09:00:00Z"},
    )
    uploaded = RecordingMeta(
        recording_id="rec-1",
        bytes=42,
        uploaded_at="2026-12-01T09:00:00Z",
        lines=2,
        sha256="ab" * 32,
        uploaded_by="ana",
    )
    _ordered(
        views.recording_view(uploaded),
        {
            "recording_id": "rec-1",
            "bytes": 42,
            "uploaded_at": "2026-12-01T09:00:00Z",
            "lines": 2,
            "sha256": "ab" * 32,
            "uploaded_by": "ana",
        },
    )
