"""Response shaping: what the API answers, from what the services return (issue 10, scope 3).

Pure functions from frozen records (`chalicelib.domain.records`) or a service's return value to
JSON-ready dicts, one per response shape; the routes call them. Stored data (a suite's kept
trigger) is shaped where it is written, not here; a run's outcome is a domain value
(`domain.outcome`) whose kept JSON the run views show as it is. Money goes out in USD
(`micros_to_usd`), times as ISO-8601 UTC strings.
"""

from __future__ import annotations

from typing import Any
from urllib.parse import quote

from chalicelib.api import chart_svg
from chalicelib.clock import from_epoch_ms, iso
from chalicelib.domain import access
from chalicelib.domain.access import ApiKey, Member
from chalicelib.domain.chart import Chart
from chalicelib.domain.enums import ArmRole, AttemptState, RunPurpose
from chalicelib.domain.estimate_rules import ArmEstimate, round_half_up
from chalicelib.domain.evaluations import evaluation_of, is_implied, selector_value
from chalicelib.domain.identity import Identity
from chalicelib.domain.money import micros_to_usd
from chalicelib.domain.outcome import ArmResult, Comparison
from chalicelib.domain.records import (
    Agent,
    AgentVersion,
    Arm,
    Attempt,
    Dataset,
    Environment,
    Evaluation,
    Judge,
    ModelProfile,
    Notification,
    Promotion,
    Run,
    Suite,
    SuiteResultEntry,
)
from chalicelib.domain.text import utf8_length
from chalicelib.domain.verdict_text import run_story, side_name, tested, verdict_phrase
from chalicelib.services.answers import AnswerRead
from chalicelib.services.budgets import Budget
from chalicelib.services.deletion import Deleted
from chalicelib.services.estimates import Price
from chalicelib.services.evaluations import EvaluationList
from chalicelib.services.grading import GradeAgain, Regraded, Rescore
from chalicelib.services.judges import ResolvedJudge
from chalicelib.services.notifications import EmailSetting
from chalicelib.services.ports.objects import RecordingMeta, SecretMeta
from chalicelib.services.runs import CasesPage, RunEvents, RunList, RunRead, SpecChanges
from chalicelib.services.suites import SuitePrice
from chalicelib.services.summaries import AgentSummary

# --- agents ----------------------------------------------------------------------------------


def agent_view(row: Agent, *, with_draft: bool = True) -> dict[str, Any]:
    """An agent (`POST/GET /agents`, `GET /agents/{id}`, `PUT .../draft`; `GET .../draft` answers
    its `draft`): `{agent_id, name, org_id, latest_version, live_version, draft: {spec, spec_hash,
    updated_at}, created_at}`, a version number None while there is none. Without `with_draft`
    (a reader without agents:edit: the draft is the editors' work in progress) the draft's spec is
    None; its hash still tells whether it differs from a version."""
    return {
        "agent_id": row.agent_id,
        "name": row.name,
        "org_id": row.org_id,
        "latest_version": int(row.latest_version or 0) or None,
        "live_version": int(row.live_version) if row.live_version else None,
        "draft": {
            "spec": row.draft_spec if with_draft else None,
            "spec_hash": row.draft_spec_hash,
            "updated_at": row.draft_updated_at,
        },
        "created_at": row.created_at,
    }


def agent_version_view(row: AgentVersion) -> dict[str, Any]:
    """A published agent version (`GET /agents/{id}/versions[/{version}]`; `POST .../versions` adds
    `created`): `{agent_id, version, spec, spec_hash, model_profile_id, published_at, published_by,
    source}`."""
    return {
        "agent_id": row.agent_id,
        "version": int(row.version),
        "spec": row.spec,
        "spec_hash": row.spec_hash,
        "model_profile_id": row.model_profile_id,
        "published_at": row.published_at,
        "published_by": row.published_by,
        "source": row.source,
    }


# --- access ----------------------------------------------------------------------------------


def member_view(m: Member) -> dict[str, Any]:
    """A member (`/members`): `{user_id, role, permissions (the role's), grants: [{kind,
    resource_id, permissions}], added_at, added_by, updated_at}`."""
    return {
        "user_id": m.user_id,
        "role": m.role,
        "permissions": [p for p in access.PERMISSIONS if p in access.ROLES.get(m.role, ())],
        "grants": [
            {
                "kind": name.split(":", 1)[0],
                "resource_id": name.split(":", 1)[1],
                "permissions": sorted(held),
            }
            for name, held in sorted(m.grants.items())
        ],
        "added_at": m.added_at,
        "added_by": m.added_by,
        "updated_at": m.updated_at,
    }


def me_view(who: Identity, member: Member | None) -> dict[str, Any]:
    """`GET /me`: who the request is resolved as - `{org_id, user_id, member, role, permissions
    (what they hold across the organization, an API key's cut to its scopes), grants, api_key_id,
    actor, person}`."""
    held = [p for p in access.PERMISSIONS if who.may(p)]
    return {
        "org_id": who.org_id,
        "user_id": who.user_id,
        "member": member is not None,
        "role": member.role if member else None,
        "permissions": held,
        "grants": member_view(member)["grants"] if member else [],
        "api_key_id": who.key_id,
        "actor": who.actor,
        "person": who.is_person,
    }


def api_key_view(k: ApiKey) -> dict[str, Any]:
    """An API key (never its secret): `{key_id, name, scopes, created_by, created_at, revoked_at,
    revoked_by}`."""
    return {
        "key_id": k.key_id,
        "name": k.name,
        "scopes": [p for p in access.PERMISSIONS if p in k.scopes],
        "created_by": k.created_by,
        "created_at": k.created_at,
        "revoked_at": k.revoked_at,
        "revoked_by": k.revoked_by,
    }


# --- model profiles --------------------------------------------------------------------------


def model_profile_view(row: ModelProfile) -> dict[str, Any]:
    """A model profile (`POST/GET /model-profiles`, `GET /model-profiles/{id}`): `{model_profile_id,
    name, model, settings, temperature, price, created_at}`."""
    return {
        "model_profile_id": row.model_profile_id,
        "name": row.name,
        "model": row.model,
        "settings": row.settings,
        "temperature": row.temperature,
        "price": row.price,
        "created_at": row.created_at,
    }


# --- environments and promotions ---------------------------------------------------------------


def environment_view(row: Environment, default_id: str | None = None) -> dict[str, Any]:
    """An environment (`POST/GET /environments`, `GET /environments/{id}`): `{environment_id, name,
    default (it is the organization's `default_id`), serving: {agent_id: version}, created_at,
    created_by}`."""
    return {
        "environment_id": row.environment_id,
        "name": row.name,
        "default": row.environment_id == default_id,
        "serving": {k: int(v) for k, v in (row.serving or {}).items()},
        "created_at": row.created_at,
        "created_by": row.created_by,
    }


def promotion_view(row: Promotion) -> dict[str, Any]:
    """A promotion (`POST/GET /agents/{id}/promotions`, `GET .../promotions/{id}`): `{promotion_id,
    agent_id, environment_id, version, from_version, status, guards: {suite_id: {result, ...}},
    reason, created_at, created_by, decided_at}`."""
    return {
        "promotion_id": row.promotion_id,
        "agent_id": row.agent_id,
        "environment_id": row.environment_id,
        "version": int(row.version),
        "from_version": int(row.from_version) if row.from_version is not None else None,
        "status": row.status,
        "guards": row.guards,
        "reason": row.reason,
        "created_at": row.created_at,
        "created_by": row.created_by,
        "decided_at": row.decided_at,
    }


# --- suites ----------------------------------------------------------------------------------


def suite_view(row: Suite) -> dict[str, Any]:
    """A suite (`GET /agents/{id}/suites[/{id}]`, pause, resume and run now; create and update add
    `price`): what it checks, when, against which bar, who owns it and what waits. `max_run_usd` in
    USD, `next_fire_at` an ISO time, `updated_at` without the nonce of its stamp."""
    return {
        "suite_id": row.suite_id,
        "agent_id": row.agent_id,
        "name": row.name,
        "dataset_id": row.dataset_id,
        "dataset_version": int(row.dataset_version) if row.dataset_version is not None else None,
        "environment_id": row.environment_id,
        "threshold": row.threshold,
        "triggers": row.triggers,
        "max_run_usd": micros_to_usd(int(row.max_run_usd_micros))
        if row.max_run_usd_micros is not None
        else None,
        "guards": bool(row.guards),
        "pins": row.pins,
        "owner": row.owner,
        "paused": bool(row.paused),
        "paused_reason": row.paused_reason,
        "pending": row.pending or [],
        "active_run_id": row.active_run_id,
        "last_result": row.last_result,
        "next_fire_at": iso(from_epoch_ms(int(row.next_fire_at_ms)))
        if row.next_fire_at_ms is not None
        else None,
        "history": row.history or [],
        "created_at": row.created_at,
        "updated_at": row.updated_at.split("#", 1)[0],
    }  # the stamp's nonce is for conditional writes only


def suite_price_view(price: SuitePrice) -> dict[str, Any]:
    """What saving a suite agrees to (`price` of `POST /agents/{id}/suites` and `PATCH .../{id}`):
    `{one_run_usd, runs_per_30_days, month_usd, note}`, with the estimate's `basis` once a run
    could be priced."""
    out: dict[str, Any] = {
        "one_run_usd": None
        if price.one_run_micros is None
        else micros_to_usd(price.one_run_micros),
        "runs_per_30_days": price.runs_per_30_days,
        "month_usd": None if price.month_micros is None else micros_to_usd(price.month_micros),
        "note": price.note,
    }
    if price.basis is not None:
        out["basis"] = price.basis
    return out


def suite_result_view(row: SuiteResultEntry) -> dict[str, Any]:
    """One result of a suite (`GET /agents/{id}/suites/{id}/results`): `{result_id, suite_id,
    result, label ("Before promotion" for a gate's), purpose, trigger, version, run_id, reasons,
    cases_broken, cases_undecided, overall, started_at, completed_at}`."""
    return {
        "result_id": row.result_id,
        "suite_id": row.suite_id,
        "result": row.result,
        "label": "Before promotion" if row.purpose == RunPurpose.GATE else None,
        "purpose": row.purpose,
        "trigger": row.trigger,
        "version": int(row.version) if row.version is not None else None,
        "run_id": row.run_id,
        "reasons": row.reasons,
        "cases_broken": row.cases_broken,
        "cases_undecided": row.cases_undecided,
        "overall": row.overall,
        "started_at": row.started_at,
        "completed_at": row.completed_at,
    }


# --- notifications ---------------------------------------------------------------------------


def notification_view(row: Notification) -> dict[str, Any]:
    """One notice (`GET /notifications`): `{notification_id, kind, title, body, links, read,
    emailed, created_at}`."""
    return {
        "notification_id": row.notification_id,
        "kind": row.kind,
        "title": row.title,
        "body": row.body,
        "links": row.links,
        "read": bool(row.read),
        "emailed": bool(row.emailed),
        "created_at": row.created_at,
    }


def email_setting_view(setting: EmailSetting) -> dict[str, Any]:
    """The caller's email choice (`PUT /notifications/settings`): `{email, address}`."""
    return {"email": setting.email, "address": setting.address}


# --- budgets ---------------------------------------------------------------------------------


def budget_view(budget: Budget) -> dict[str, Any]:
    """One monthly budget (`GET/PUT /budget`, `GET/PUT /agents/{id}/budget`, the latter led by
    `agent_id`): `{scope, month, monthly_usd, spent_usd, remaining_usd}`, `monthly_usd` and
    `remaining_usd` None without a budget."""
    owner: dict[str, Any] = {} if budget.agent_id is None else {"agent_id": budget.agent_id}
    return {
        **owner,
        "scope": budget.scope,
        "month": budget.month,
        "monthly_usd": None
        if budget.budget_micros is None
        else micros_to_usd(budget.budget_micros),
        "spent_usd": micros_to_usd(budget.spent_micros),
        "remaining_usd": None
        if budget.budget_micros is None
        else micros_to_usd(budget.budget_micros - budget.spent_micros),
    }


def estimate_view(price: Price) -> dict[str, Any]:
    """What a run would cost (`POST /agents/{id}/eval-runs/estimate`, and `estimate` of a start's
    402): `{agent_id, dataset_id, dataset_version, candidate, resolved_version, cases,
    ungraded_cases, judged_cases, reruns, arms: [{arm_id, role, model, basis, per_case_usd,
    first_pass_usd, rerun_ceiling_usd, runs_sampled, reused_run_id?}], judge, first_pass_usd,
    rerun_ceiling_usd, total_usd, basis, reused_baseline_run_id, missing_baseline_version, budgets:
    {agent, organization} (each a `budget_view` without `agent_id`), agent_after_usd,
    org_after_usd, agent_committed_usd, org_committed_usd, within_budget, total_micros,
    warnings}`; money in USD, computed exactly in micro-USD."""
    plan, est, judge, info = price.plan, price.estimate, price.judge, price.plan.info
    reading = price.reading
    agent_budget = budget_view(
        Budget(plan.agent_id, price.month, reading.agent_budget_micros, reading.agent_spent_micros)
    )
    org_budget = budget_view(
        Budget(None, price.month, reading.org_budget_micros, reading.org_spent_micros)
    )

    def arm(a: ArmEstimate) -> dict[str, Any]:
        history = price.history.get(a.model)
        return {
            "arm_id": a.arm_id,
            "role": a.role,
            "model": a.model,
            "basis": str(a.basis),
            "per_case_usd": micros_to_usd(a.per_case_micros),
            "first_pass_usd": micros_to_usd(a.first_pass_micros),
            "rerun_ceiling_usd": micros_to_usd(a.rerun_ceiling_micros),
            "runs_sampled": history.runs if history and a.basis == "history" else 0,
            **(
                {"reused_run_id": info.get("reused_baseline_run_id")} if a.basis == "reused" else {}
            ),
        }

    return {
        "agent_id": plan.agent_id,
        "dataset_id": plan.dataset.dataset_id,
        "dataset_version": int(plan.dataset.version),
        "candidate": "draft" if plan.draft else "version",
        "resolved_version": plan.version,
        "cases": plan.case_count,
        "ungraded_cases": plan.ungraded,
        "judged_cases": plan.judged,
        "reruns": plan.reruns,
        "arms": [arm(a) for a in est.arms],
        "judge": None
        if plan.judge is None or judge is None
        else {
            "judge_id": plan.judge.judge_id,
            "version": plan.judge.version,
            "model": plan.judge.model,
            "basis": str(judge.basis),
            "per_call_usd": micros_to_usd(round_half_up(judge.per_call)),
            "first_pass_usd": micros_to_usd(est.judge_first_pass_micros),
            "rerun_ceiling_usd": micros_to_usd(est.judge_rerun_ceiling_micros),
        },
        "first_pass_usd": micros_to_usd(est.first_pass_micros),
        "rerun_ceiling_usd": micros_to_usd(est.rerun_ceiling_micros),
        "total_usd": micros_to_usd(est.total_micros),
        "basis": str(est.basis),
        "reused_baseline_run_id": info.get("reused_baseline_run_id"),
        "missing_baseline_version": info.get("missing_baseline_version"),
        "budgets": {
            "agent": {k: v for k, v in agent_budget.items() if k != "agent_id"},
            "organization": org_budget,
        },
        "agent_after_usd": _usd(price.agent_after_micros),
        "org_after_usd": _usd(price.org_after_micros),
        "agent_committed_usd": micros_to_usd(price.agent_committed_micros),
        "org_committed_usd": micros_to_usd(price.org_committed_micros),
        "within_budget": price.within_budget,
        "total_micros": est.total_micros,
        "warnings": list(plan.warnings),
    }


def _usd(micros: int | None) -> float | None:
    return None if micros is None else micros_to_usd(micros)


# --- judges ----------------------------------------------------------------------------------


def judge_view(row: Judge) -> dict[str, Any]:
    """A judge's header (`POST /judges`; `GET /judges/{id}` adds its `versions`): `{judge_id, name,
    latest_version, created_at, created_by}`."""
    return {
        "judge_id": row.judge_id,
        "name": row.name,
        "latest_version": int(row.latest_version or 0) or None,
        "created_at": row.created_at,
        "created_by": row.created_by,
    }


def judge_version_view(row: Judge) -> dict[str, Any]:
    """A published judge version (`POST /judges/{id}/versions`, `GET .../versions/{version}`, each
    of `GET /judges/{id}`'s `versions`): `{judge_id, version, spec (without the runtime it is asked
    through), model, rubric_hash, fingerprint, published_at, published_by}`."""
    spec = dict(row.spec or {})
    runtime = spec.pop("runtime", {})
    return {
        "judge_id": row.judge_id,
        "version": int(row.version),
        "spec": spec,
        "model": runtime.get("model"),
        "rubric_hash": row.rubric_hash,
        "fingerprint": ResolvedJudge.of(row).fingerprint,
        "published_at": row.created_at,
        "published_by": row.created_by,
    }


# --- datasets --------------------------------------------------------------------------------


def dataset_view(header: Dataset, version: Dataset | None = None) -> dict[str, Any]:
    """A dataset (`POST/GET /datasets`, `GET /datasets/{id}` and `POST .../versions` with its latest
    or new `version`): `{dataset_id, name, latest_version, created_at, version?: {version,
    case_count, ungraded_cases, scoring, created_at, created_by}}`."""
    out: dict[str, Any] = {
        "dataset_id": header.dataset_id,
        "name": header.name,
        "latest_version": int(header.latest_version or 0) or None,
        "created_at": header.created_at,
    }
    if version is not None:
        out["version"] = {
            "version": int(version.version),
            "case_count": int(version.case_count),
            "ungraded_cases": int(version.ungraded_cases or 0),
            "scoring": version.scoring,
            "created_at": version.created_at,
            "created_by": version.created_by,
        }
    return out


# --- the organization's secrets and recordings -------------------------------------------------


def deleted_view(gone: Deleted) -> dict[str, Any]:
    """What a delete of an agent or dataset took with it: `{runs_deleted, suites_deleted,
    evaluations_deleted}`."""
    return {
        "runs_deleted": gone.runs,
        "suites_deleted": gone.suites,
        "evaluations_deleted": gone.evaluations,
    }


def secret_view(meta: SecretMeta) -> dict[str, Any]:
    """A secret (`PUT/GET /secrets/{name}`, each of `GET /secrets`): `{name, updated_at}`, never
    its value."""
    return {"name": meta.name, "updated_at": meta.updated_at}


def recording_view(meta: RecordingMeta) -> dict[str, Any]:
    """A recording (`POST /recordings`, `GET /recordings/{id}`, each of `GET /recordings`):
    `{recording_id, bytes, uploaded_at}`, with `lines`, `sha256` and `uploaded_by` when the
    metadata has them (a listing has not); never its content."""
    out: dict[str, Any] = {
        "recording_id": meta.recording_id,
        "bytes": meta.bytes,
        "uploaded_at": meta.uploaded_at,
    }
    if meta.sha256 is not None:
        out |= {"lines": meta.lines, "sha256": meta.sha256, "uploaded_by": meta.uploaded_by}
    return out


# --- verdicts ----------------------------------------------------------------------------------


def agent_summary_view(summary: AgentSummary) -> dict[str, Any]:
    """The verdict beside one agent version (each of `summaries` of `POST /agents/summaries` and
    seed 000's path): `{agent_id, agentId (the same, seed 000's name), version, total, passed,
    failed, evaluations, last_completed_at, stale, verdict, run_ids}`."""
    return {
        "agent_id": summary.agent_id,
        "agentId": summary.agent_id,
        "version": summary.version,
        "total": summary.total,
        "passed": summary.passed,
        "failed": summary.failed,
        "evaluations": summary.evaluations,
        "last_completed_at": summary.last_completed_at,
        "stale": summary.stale,
        "verdict": summary.verdict.value,
        "run_ids": summary.run_ids,
    }


# --- grading again --------------------------------------------------------------------------------


def regraded_view(r: Regraded) -> dict[str, Any]:
    """One score graded again (each of `scores` of a grade again): `{score_id, state_before,
    state, reason}` for a new grade, `{score_id, state_before, kept, reason}` for an earlier one
    kept, `{score_id, skipped}` for one somebody graded meanwhile."""
    if r.skipped is not None:
        return {"score_id": r.score_id, "skipped": r.skipped}
    if r.kept is not None:
        return {
            "score_id": r.score_id,
            "state_before": r.state_before,
            "kept": r.kept,
            "reason": r.reason,
        }
    return {
        "score_id": r.score_id,
        "state_before": r.state_before,
        "state": r.state,
        "reason": r.reason,
    }


def grade_again_view(done: GradeAgain) -> dict[str, Any]:
    """What a grade again did (`POST /eval-runs/{id}/grade-again`, each of a rescore's `runs`):
    `{run_id, graded, changed, still_ungraded, pending, judge_cost_usd, stopped, scores}`."""
    return {
        "run_id": done.run_id,
        "graded": done.graded,
        "changed": done.changed,
        "still_ungraded": done.still_ungraded,
        "pending": done.pending,
        "judge_cost_usd": micros_to_usd(done.judge_cost_micros),
        "stopped": done.stopped,
        "scores": [regraded_view(r) for r in done.scores],
    }


def rescore_view(done: Rescore) -> dict[str, Any]:
    """A dataset's rescore (`POST /datasets/{id}/scores/rescore`): `{dataset_id, runs:
    [grade_again_view], graded, changed}` (summed over its runs)."""
    return {
        "dataset_id": done.dataset_id,
        "runs": [grade_again_view(r) for r in done.runs],
        "graded": sum(r.graded for r in done.runs),
        "changed": sum(r.changed for r in done.runs),
    }


# --- eval runs -------------------------------------------------------------------------------


def progress_view(run: Run) -> dict[str, Any]:
    """A run's progress (`GET /eval-runs/{id}/progress`, `GET /api/evaluations/progress/{id}`, and
    `progress` of a run and of its events): recorded results against the total, read from the
    database (seed 001 "Progress"); `fraction` 0..1, `in_flight` the slots it holds."""
    expected, recorded = int(run.expected), int(run.recorded)
    return {
        "run_id": run.run_id,
        "status": run.status,
        "phase": run.phase,
        "recorded": recorded,
        "expected": expected,
        "total": expected,
        "fraction": (min(recorded, expected) / expected) if expected else 1.0,
        "passed": int(run.passed),
        "failed": int(run.failed),
        "incomplete": int(run.incomplete),
        "ungraded": int(run.ungraded),
        "in_flight": int(run.slots),
    }


def arm_view(arm: Arm) -> dict[str, Any]:
    """One arm of a run header (`arms` of every run view): its kept map without the spec (that
    needs agents:edit, `GET .../arms/{id}/spec`): `{arm_id, role, version, draft, spec_hash,
    model_profile_id}`, then `answers, rerun` for a baseline and `source_run_id, source_arm_id,
    source_dataset_version, source_completed_at` for one whose first answers are borrowed."""
    out: dict[str, Any] = {
        "arm_id": arm.arm_id,
        "role": arm.role.value,
        "version": arm.version,
        "draft": arm.draft,
        "spec_hash": arm.spec_hash,
        "model_profile_id": arm.model_profile_id,
    }
    if arm.role is ArmRole.BASELINE:
        out |= {"answers": arm.answers, "rerun": arm.rerun}
    if arm.source_run_id is not None:
        out |= {
            "source_run_id": arm.source_run_id,
            "source_arm_id": arm.source_arm_id,
            "source_dataset_version": arm.source_dataset_version,
            "source_completed_at": arm.source_completed_at,
        }
    return out


def summary_view(result: ArmResult) -> dict[str, Any]:
    """One arm's summary (each of `summaries` of `GET /eval-runs/{id}`): `{quality, efficiency,
    tags, could_not_run, judges}` as the outcome keeps it (seed 004 "Results"), money in USD."""
    return result.as_json()


def _sides(run: Run) -> tuple[str, str | None]:
    """The names of a run's first candidate and its baseline (None without one): "v4", "the
    draft"."""
    first = run.arms[0] if run.arms else None
    base = next((a for a in run.arms if a.role is ArmRole.BASELINE), None)
    candidate = (
        side_name(first.version, first.draft)
        if first
        else side_name(run.resolved_version, bool(run.draft))
    )
    return candidate, side_name(base.version, base.draft) if base else None


def run_view(run: Run, *, summaries: dict[str, ArmResult] | None = None) -> dict[str, Any]:
    """A run header (`POST /agents/{id}/eval-runs` adds `warnings`, `POST .../cancel`, each of the
    listings; `GET /eval-runs/{id}` adds more): its pins (`evaluation_id`, and seed 001's
    `agentId` and `resolvedAgentVersion` beside `agent_id` and `resolved_version`), times,
    `progress`, costs in USD, tokens, arms without their specs, the kept outcome without its
    `arms`, `summaries` per arm (the outcome's, or `summaries` computed now for a run without
    one), `tested` ("v4 against v3", "The draft alone") and `verdict_phrase` ("Breaks 2", "First
    result", `domain.verdict_text.verdict_phrase`)."""
    kept = run.outcome.as_json() if run.outcome else None
    settings = run.settings or {}
    resolved = int(run.resolved_version) if run.resolved_version is not None else None
    return {
        "run_id": run.run_id,
        "agent_id": run.agent_id,
        "evaluation_id": evaluation_of(run.evaluation_id, run.agent_id, run.dataset_id),
        "agentId": run.agent_id,
        "resolvedAgentVersion": resolved,
        "status": run.status,
        "phase": run.phase,
        "purpose": run.purpose,
        "candidate": run.candidate,
        "resolved_version": resolved,
        "draft": bool(run.draft),
        "spec_hash": run.spec_hash,
        "dataset_id": run.dataset_id,
        "dataset_version": int(run.dataset_version),
        "environment_id": run.environment_id,
        "created_at": run.created_at,
        "created_by": run.created_by,
        "started_at": run.started_at,
        "completed_at": run.completed_at,
        "reason": run.reason,
        "progress": progress_view(run),
        "cost_usd": micros_to_usd(int(run.cost_micros or 0)),
        "judge_cost_usd": micros_to_usd(int(run.judge_cost_micros or 0)),
        "total_cost_usd": micros_to_usd(
            int(run.cost_micros or 0) + int(run.judge_cost_micros or 0)
        ),
        "judge_calls": int(run.judge_calls or 0),
        "warnings": list(settings.get("warnings") or []),
        "gradings": run.gradings or [],
        "tokens": {"input": int(run.input_tokens or 0), "output": int(run.output_tokens or 0)},
        "arms": [arm_view(a) for a in run.arms],
        "outcome": {k: v for k, v in kept.items() if k != "arms"} if kept else None,
        "stability": (kept or {}).get("stability"),
        "reused_baseline_run_id": settings.get("reused_baseline_run_id"),
        "suite_id": settings.get("suite_id"),
        "missing_baseline_version": settings.get("missing_baseline_version"),
        "summaries": (
            {arm_id: summary_view(r) for arm_id, r in summaries.items()}
            if summaries is not None
            else (kept or {}).get("arms")
        ),
        "tested": tested(*_sides(run)),
        "verdict_phrase": verdict_phrase(run.status, run.outcome, summaries),
    }


def evaluation_view(evaluation: Evaluation) -> dict[str, Any]:
    """An evaluation (`/api/evaluations...`): `{evaluation_id, name, agent_id, dataset_id, version
    ("latest" | "published" | number), implied, created_at, created_by, updated_at}`; an implied
    one (`implied: true`) has no creation time."""
    return {
        "evaluation_id": evaluation.evaluation_id,
        "name": evaluation.name,
        "agent_id": evaluation.agent_id,
        "dataset_id": evaluation.dataset_id,
        "version": selector_value(evaluation.version),
        "implied": is_implied(evaluation.evaluation_id),
        "created_at": evaluation.created_at or None,
        "created_by": evaluation.created_by or None,
        "updated_at": evaluation.updated_at,
    }


def evaluation_list_view(page: EvaluationList) -> dict[str, Any]:
    """A page of evaluations (`GET /api/evaluations`): `{evaluations: [evaluation_view],
    next_cursor}`."""
    return {
        "evaluations": [evaluation_view(e) for e in page.evaluations],
        "next_cursor": page.next_cursor,
    }


def run_read_view(read: RunRead) -> dict[str, Any]:
    """One run (`GET /eval-runs/{id}`): its `run_view` with `ungraded_score_ids`, `story` (what
    its console page opens on: `{phrase, sentences, main_action ("publish" | "test_again" |
    None), publish_blockers, draft_changed}`, `domain.verdict_text.run_story`) and, when read,
    `results` (every attempt's `attempt_view`, by attempt key)."""
    run = read.run
    view = run_view(run, summaries=read.summaries)
    view["ungraded_score_ids"] = read.ungraded_score_ids
    name, against = _sides(run)
    story = run_story(
        status=run.status,
        # the sentence opens on its subject: "The draft ...", but a version keeps its name, "v2 ..."
        name=name[:1].upper() + name[1:] if name.startswith("the ") else name,
        against=against,
        draft=bool(run.draft),
        draft_changed=read.draft_hash_now is not None and read.draft_hash_now != run.spec_hash,
        recorded=int(run.recorded),
        expected=int(run.expected),
        reason=run.reason,
        outcome=run.outcome,
        summaries=read.summaries,
        judge_failed=len(read.ungraded_score_ids),
    )
    view["story"] = {
        "phrase": story.phrase,
        "sentences": list(story.sentences),
        "main_action": story.main_action,
        "publish_blockers": list(story.publish_blockers),
        "draft_changed": story.draft_changed,
    }
    if read.attempts is not None:
        view["results"] = [attempt_view(a) for a in read.attempts]
    return view


def run_list_view(page: RunList) -> dict[str, Any]:
    """A page of runs (`GET /eval-runs`, `GET /agents/{id}/eval-runs`, `GET
    /datasets/{id}/eval-runs`): `{runs: [run_view], next_cursor}`."""
    return {"runs": [run_view(r) for r in page.runs], "next_cursor": page.next_cursor}


def answer_url(run_id: str, attempt_key: str) -> str:
    """The path of `GET /eval-runs/{id}/answer` for one attempt (its key percent-encoded)."""
    return f"/api/v1/eval-runs/{run_id}/answer?attempt_key={quote(attempt_key, safe='')}"


def _answer_bytes(row: Attempt) -> int | None:
    """The whole answer's UTF-8 length: as recorded, else (an attempt recorded before it was kept)
    the inline answer's when that is all of it, else unknown (None)."""
    if row.answer_bytes is not None:
        return int(row.answer_bytes)
    if row.answer_ref:
        return None
    return utf8_length(row.answer) if row.answer is not None else 0


def attempt_view(row: Attempt) -> dict[str, Any]:
    """One attempt (`results` of `GET /eval-runs/{id}`, the cases' `attempts`, each event of `GET
    .../events`): its state, `score` (the mean of its decided scores, None without one), answer
    as kept, calls, scores, costs in USD, tokens, `latency_ms` and when it was recorded.

    The answer (issue 11, scope 7): `answer_bytes` is the whole answer's UTF-8 length in bytes;
    `answer_truncated` says it was longer than `ASSAY_ANSWER_MAX_BYTES` and is kept cut there;
    `answer_whole` is false when `answer` here is not everything the agent answered (only the
    first 1,000 characters of one kept in the bucket at `answer_ref`, or a truncated one), and
    `answer_url` (`GET /eval-runs/{id}/answer`) then gives all that is kept.
    """
    scores = row.scores or []
    decided = [s.get("score", 0.0) for s in scores if s.get("passed") is not None]
    has_answer = row.answer is not None
    return {
        "attempt_key": row.attempt_key,
        "arm_id": row.arm_id,
        "case_id": row.case_id,
        "attempt": int(row.attempt),
        "state": row.state,
        "passed": row.state == AttemptState.PASSED,
        "score": (sum(decided) / len(decided)) if decided else None,
        "answer": row.answer,
        "answer_bytes": _answer_bytes(row),
        "answer_truncated": bool(row.answer_truncated),
        "answer_whole": not has_answer or not (row.answer_ref or row.answer_truncated),
        "answer_url": answer_url(row.run_id, row.attempt_key) if has_answer else None,
        "answer_ref": row.answer_ref,
        "calls": row.calls,
        "scores": scores,
        "reason": row.reason,
        "error": row.error,
        "crash": bool(row.crash),
        "guardrail": row.guardrail,
        "cost_usd": micros_to_usd(int(row.cost_micros or 0)),
        "judge_cost_usd": micros_to_usd(int(row.judge_cost_micros or 0)),
        "regraded": row.regraded or [],
        "tokens": {"input": int(row.input_tokens or 0), "output": int(row.output_tokens or 0)},
        "latency_ms": float(row.latency_ms or 0),
        "model": row.model,
        "recorded_at": row.recorded_at,
    }


def answer_view(attempt_key: str, read: AnswerRead) -> dict[str, Any]:
    """One attempt's kept answer (`GET /eval-runs/{id}/answer?attempt_key=`): `{run_id,
    attempt_key, arm_id, case_id, attempt, answer_bytes, answer_truncated, answer}`, with `answer`
    None and `url` + `expires_in_seconds` (a presigned GET of the text) for one kept in the
    results bucket."""
    row = read.attempt
    out: dict[str, Any] = {
        "run_id": read.run_id,
        "attempt_key": attempt_key,
        "arm_id": attempt_key.partition("#")[0],
        "case_id": row.case_id,
        "attempt": int(row.attempt),
        "answer_bytes": read.answer_bytes,
        "answer_truncated": bool(row.answer_truncated),
        "answer": read.answer,
    }
    if read.url is not None:
        out |= {"url": read.url, "expires_in_seconds": read.expires_in_seconds}
    return out


def events_view(found: RunEvents) -> dict[str, Any]:
    """One long-poll of a run's live updates (`GET /eval-runs/{id}/events`, `GET
    /api/evaluations/stream/{id}`): `{run_id, events: [{type: "attempt_recorded", cursor,
    ...attempt_view}], cursor, status, progress, done}`."""
    run = found.run
    return {
        "run_id": run.run_id,
        "events": [
            {"type": "attempt_recorded", "cursor": r.recorded_key, **attempt_view(r)}
            for r in found.attempts
        ],
        "cursor": found.cursor,
        "status": run.status,
        "progress": progress_view(run),
        "done": found.done,
    }


def comparison_view(run: Run, comparison: Comparison) -> dict[str, Any]:
    """A candidate arm against the baseline (`GET /eval-runs/{id}/comparison`): `{run_id,
    status}` and the comparison as the outcome keeps it (verdict, counts, flips, pass rates,
    efficiency axes, each case's outcome)."""
    return {"run_id": run.run_id, "status": run.status, **comparison.as_json()}


def cases_view(run_id: str, page: CasesPage) -> dict[str, Any]:
    """A page of a run's cases (`GET /eval-runs/{id}/cases`): `{run_id, cases: [{case_id, expects,
    outcome, arms: {arm_id: {settled, attempts: [attempt_view]}}}], next_cursor}`."""
    cases = page.cases
    return {
        "run_id": run_id,
        "next_cursor": page.next_cursor,
        "cases": [
            {
                "case_id": case.case_id,
                "expects": case.expects,
                "outcome": case.outcome,
                "arms": {
                    arm_id: {
                        "settled": side.settled,
                        "attempts": [attempt_view(a) for a in side.attempts],
                    }
                    for arm_id, side in case.arms.items()
                },
            }
            for case in cases
        ],
    }


def arm_spec_view(run_id: str, arm: Arm) -> dict[str, Any]:
    """The spec one side ran, as copied onto the run at start (`GET
    /eval-runs/{id}/arms/{arm_id}/spec`): `{run_id, arm_id, version, draft, spec_hash, spec}`."""
    return {"run_id": run_id, **_side(arm), "spec": arm.spec}


def _side(arm: Arm) -> dict[str, Any]:
    return {
        "arm_id": arm.arm_id,
        "version": arm.version,
        "draft": arm.draft,
        "spec_hash": arm.spec_hash,
    }


def spec_changes_view(run_id: str, found: SpecChanges) -> dict[str, Any]:
    """What changed between the specs a run tested (`GET /eval-runs/{id}/spec-changes`):
    `{run_id, candidate, baseline, changes, left_out}`; each side `{arm_id, version, draft,
    spec_hash}`, each change `{path, change, before, after, lines, cut}`, `left_out` the changes
    past the first `domain.spec_diff.MAX_CHANGES` (seed 004 "In the console")."""
    return {
        "run_id": run_id,
        "candidate": _side(found.candidate),
        "baseline": _side(found.baseline),
        "changes": [change.as_json() for change in found.diff.changes],
        "left_out": found.diff.left_out,
    }


def chart_view(chart: Chart) -> dict[str, Any]:
    """The pass-rate chart (`GET …/eval-runs/chart`, seed 004 "In the console"): `svg` to insert
    inline, the window (`last`, `measured`, `shown`, `switch`), the lines and the points (x the
    index oldest first, y the pass rate 0..1)."""
    return {
        "svg": chart_svg.render(chart),
        "last": str(chart.last),
        "measured": chart.measured,
        "shown": chart.shown,
        "switch": chart.switch,
        "series": [
            {"dataset_id": s.dataset_id, "name": s.name, "dash": s.dash} for s in chart.series
        ],
        "points": [
            {
                "run_id": p.run_id,
                "dataset_id": p.dataset_id,
                "x": p.x,
                "y": p.y,
                "colour": str(p.colour),
                "hollow": p.hollow,
                "label": p.label,
                "tooltip": p.tooltip,
            }
            for p in chart.points
        ],
    }
