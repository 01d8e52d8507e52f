"""Response shaping: what the API answers, from what the services return (issue 10, scope 3).

Pure functions from frozen records (`chalicelib.domain.records`) or a service's return value to
JSON-ready dicts, one per response shape; the routes call them. Stored data (a suite's kept
trigger) is shaped where it is written, not here; a run's outcome is a domain value
(`domain.outcome`) whose kept JSON the run views show as it is. Money goes out in USD
(`micros_to_usd`), times as ISO-8601 UTC strings.
"""

from __future__ import annotations

from dataclasses import asdict
from typing import Any

from chalicelib.clock import from_epoch_ms, iso
from chalicelib.domain import access
from chalicelib.domain.access import ApiKey, Member
from chalicelib.domain.enums import RunPurpose
from chalicelib.domain.estimate_rules import ArmEstimate, round_half_up
from chalicelib.domain.identity import Identity
from chalicelib.domain.money import micros_to_usd
from chalicelib.domain.records import (
    Agent,
    AgentVersion,
    Connection,
    Dataset,
    Environment,
    Judge,
    ModelProfile,
    Notification,
    Promotion,
    Suite,
    SuiteResultEntry,
)
from chalicelib.domain.replay import Replay
from chalicelib.services.budgets import Budget
from chalicelib.services.datasets import Written
from chalicelib.services.deletion import Deleted
from chalicelib.services.estimates import Price
from chalicelib.services.judges import ResolvedJudge
from chalicelib.services.notifications import EmailSetting
from chalicelib.services.ports.objects import RecordingMeta, SecretMeta
from chalicelib.services.suites import SuitePrice
from chalicelib.services.summaries import AgentOverview, AgentSummary

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


def agent_listed_view(
    row: Agent, seen: AgentOverview, *, with_draft: bool = True
) -> dict[str, Any]:
    """An agent as `GET /agents` lists it: `agent_view` and `{draft_differs, verdicts: {live,
    draft}, last_run: {run_id, dataset_id, completed_at, version}}`, each verdict an
    `agent_summary_view` (`live` None while nothing is published), `verdicts` and `last_run` None
    for a reader without runs:view, `last_run` None too while neither verdict has a run
    (`services.summaries.AgentOverview`)."""
    last = seen.last_run
    return {
        **agent_view(row, with_draft=with_draft),
        "draft_differs": seen.draft_differs,
        "verdicts": None
        if seen.draft is None
        else {
            "live": None if seen.live is None else agent_summary_view(seen.live),
            "draft": agent_summary_view(seen.draft),
        },
        "last_run": None
        if last is None
        else {
            "run_id": last.run_id,
            "dataset_id": last.dataset_id,
            "completed_at": last.completed_at,
            "version": last.version,
        },
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
    """An environment (`POST/GET /environments`, `GET /environments/{id}`, `PUT
    .../test-connections`): `{environment_id, name, default (it is the organization's
    `default_id`), serving: {agent_id: version}, test_connections: {connection_id:
    test_connection_id}, created_at, created_by}`."""
    return {
        "environment_id": row.environment_id,
        "name": row.name,
        "default": row.environment_id == default_id,
        "serving": {k: int(v) for k, v in (row.serving or {}).items()},
        "test_connections": dict(row.test_connections or {}),
        "created_at": row.created_at,
        "created_by": row.created_by,
    }


def connection_view(row: Connection) -> dict[str, Any]:
    """A connection (`POST/GET /connections`, `GET /connections/{id}`): `{connection_id, kind, url,
    auth_secret (the secret's name, never its value; None: no header), description, created_at,
    created_by}`."""
    return {
        "connection_id": row.connection_id,
        "kind": row.kind,
        "url": row.url,
        "auth_secret": row.auth_secret,
        "description": row.description,
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
    `price`): what it checks, when, against which bar, who owns it and what waits. `replay`: how its
    runs answer tool calls from a recording (`{recording_id, live_reads, label}`, None when they do
    not). `max_run_usd` in USD, `next_fire_at` an ISO time, `updated_at` without the nonce of its
    stamp."""
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
        "replay": Replay.of_settings(row.replay).view(),
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


def suite_result_view(
    row: SuiteResultEntry, names: dict[str, str | None] | None = None
) -> dict[str, Any]:
    """One result of a suite (`GET /agents/{id}/suites/{id}/results`): `{result_id, suite_id,
    result, label ("Before promotion" for a gate's), purpose, trigger, version, run_id, reasons,
    cases_broken, cases_undecided, overall, started_at, completed_at, measured, reviewed_by,
    result_before_review, recomputing}` (`measured`: what it was measured on,
    `domain.guard_rules.Measured`; None without a run; `reviewed_by`: `[{user_id, name}]` of the
    people whose review verdicts it rests on, `name` from `names`, None for a former member)."""
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
        "measured": row.measured,
        "reviewed_by": [{"user_id": u, "name": (names or {}).get(u)} for u in row.reviewed_by or []]
        or None,
        "result_before_review": row.result_before_review,
        "recomputing": bool(row.stale),
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
    ungraded_cases, judged_cases, reruns, reruns_auto (with `reruns: "auto"`: `{chosen, reason,
    from_run_id, luck, bound}`, else None), luck (a comparison's chance of luck at these reruns
    as measured before, `rerun_choice.luck_advice`, else None), replay (the run's:
    `{recording_id, live_reads, label}`, None without a recording), arms: [{arm_id, role, model,
    replay (as `run_views.arm_view`'s), basis, per_case_usd, first_pass_usd, rerun_ceiling_usd,
    runs_sampled, reused_run_id?}], judge, first_pass_usd, rerun_ceiling_usd, total_usd, basis,
    reused_baseline_run_id, missing_baseline_version, budgets: {agent, organization} (each a
    `budget_view` without `agent_id`), agent_after_usd, org_after_usd, agent_committed_usd,
    org_committed_usd, within_budget, total_micros, warnings}`; money in USD, computed exactly in
    micro-USD."""
    plan, est, judge, info = price.plan, price.estimate, price.judge, price.plan.info
    reading = price.reading
    agent_budget = budget_view(
        Budget(plan.agent_id, price.month, reading.agent_budget_micros, reading.agent_spent_micros)
    )
    org_budget = budget_view(
        Budget(None, price.month, reading.org_budget_micros, reading.org_spent_micros)
    )

    replays = {arm.arm_id: arm.replay.view() for arm in plan.arms}

    def arm(a: ArmEstimate) -> dict[str, Any]:
        history = price.history.get(a.model)
        return {
            "arm_id": a.arm_id,
            "role": a.role,
            "model": a.model,
            "replay": replays.get(a.arm_id),
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
        "reruns_auto": plan.reruns_auto,
        "luck": price.luck,
        "replay": plan.replay.view(),
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
    or new `version`; `GET /datasets` with each one's latest): `{dataset_id, name, latest_version,
    created_at, version?: {version, case_count, ungraded_cases, scoring, created_at,
    created_by}}`."""
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


def written_view(written: Written) -> dict[str, Any]:
    """A version as an import or a create wrote it (`POST /datasets`, `POST .../versions`):
    `dataset_view` with, in `version`, `ungraded_lines` (the lines of the imported file whose
    cases no required scorer grades: the first 20, empty for inline cases) and `ungraded_reason`
    (why the first of them is not graded, or None).

    Args:
        written: `services.datasets.Written` (header, version, ungraded_lines, ungraded_reason).
    """
    out = dataset_view(written.header, written.version)
    out["version"]["ungraded_lines"] = list(written.ungraded_lines)
    out["version"]["ungraded_reason"] = written.ungraded_reason
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
    """The verdict beside one agent version (each of `summaries` of `POST /api/v1/agent-summaries`
    and `POST /api/evaluations/agent-summaries`): `{agent_id, agentId (the same, under the name
    the evaluation routes use), version, total, passed, failed, evaluations, last_completed_at,
    stale, verdict, run_ids, p_luck_regression, noise}`: `noise` lists, per contributing run
    whose verdict rests on a comparison, `{run_id, dataset_id, p_luck_regression, sentence}`;
    `p_luck_regression` is the chance at least one of them is luck (None without one)."""
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
        "p_luck_regression": summary.p_luck_regression,
        "noise": [asdict(luck) for luck in summary.luck],
    }
