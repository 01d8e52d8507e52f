"""Promotions: moving the version an environment serves, guarded by suites (seed 004 "Suites",
environments' "Guarding a promotion with evals").

A promotion onto an environment some suite guards waits: each guard runs on the version about to
be promoted beside the version the environment serves (purpose `gate`), and only when every guard
passed is the version served. `baseline_set`, `inconclusive`, `failed`, `error` and `not_run`
never open a gate. Without guards a promotion is immediate. Either way, suites on promotion then
check the promoted version against the one it replaced.
"""

from __future__ import annotations

import uuid
from typing import Any

from chalicelib.adapters.tables import PromotionRow
from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.enums import PromotionStatus, TriggerKind
from chalicelib.domain.events import GateDecided
from chalicelib.domain.identity import Identity
from chalicelib.domain.suites import SuiteResult
from chalicelib.errors import ConflictError, NotFoundError
from chalicelib.services import environments, suites


def view(row: PromotionRow) -> dict[str, Any]:
    return {"promotion_id": row.promotion_id, "agent_id": row.agent_id, "environment_id": row.environment_id,
            "version": int(row.version), "from_version": int(row.from_version) if row.from_version is not None else None,
            "status": row.status, "guards": row.guards, "reason": row.reason, "created_at": row.created_at,
            "created_by": row.created_by, "decided_at": row.decided_at}


def guards_of(c: Container, org_id: str, agent_id: str, environment_id: str) -> list[Any]:
    """The agent's suites that guard the environment."""
    out = []
    for row in c.suites.of_agent(org_id, agent_id):
        if not row.guards:
            continue
        try:
            if environments.resolve(c, org_id, row.environment_id).environment_id == environment_id:
                out.append(row)
        except NotFoundError:
            continue
    return out


def promote(c: Container, who: Identity, agent_id: str, environment_id: str, version: int) -> PromotionRow:
    """Promote `version` of an agent onto an environment: at once without guards, else once every
    guard passed on it.

    Raises NotFoundError (agent, environment, version), ConflictError (it serves that version
    already; a guard is paused; another promotion onto it waits).
    """
    c.agents.get(who.org_id, agent_id)
    env = c.environments.get(who.org_id, environment_id)
    row = c.agents.get_version(who.org_id, agent_id, version)
    if row is None:
        raise NotFoundError(f"version {version} of agent {agent_id} not found", field="version")
    served = (env.serving or {}).get(agent_id)
    served = int(served) if served is not None else None
    if served == version:
        raise ConflictError(f"environment {environment_id} serves version {version} already", field="version")
    guards = guards_of(c, who.org_id, agent_id, environment_id)
    paused = [g for g in guards if g.paused]
    if paused:
        raise ConflictError(f"suite {paused[0].suite_id} guards {environment_id} and is paused "
                            f"({paused[0].paused_reason}): resume it to promote", field="environment_id")
    now = iso(c.clock.now())
    promotion = PromotionRow(agent_id=agent_id, promotion_id=f"p{epoch_ms(c.clock.now()):013d}{uuid.uuid4().hex[:8]}",
                             org_id=who.org_id,
                             environment_id=environment_id, version=version, from_version=served,
                             status=PromotionStatus.WAITING.value, guards={g.suite_id: {"result": None} for g in guards},
                             created_at=now, created_by=who.user_id)
    if not c.promotions.create_waiting(promotion):
        holder = c.promotions.holder(who.org_id, agent_id, environment_id)
        raise ConflictError(f"promotion {holder} onto {environment_id} is still waiting for its guards",
                            field="environment_id")
    if not guards:
        _serve(c, promotion)
    else:
        for g in guards:
            if not suites.trigger(c, g, TriggerKind.GATE, version=version, baseline_version=served,
                                  promotion_id=promotion.promotion_id, by=who.user_id):
                refuse(c, who.org_id, agent_id, promotion.promotion_id,
                       f"guard {g.suite_id} is paused: it cannot check the version")
                break
    return c.promotions.get(who.org_id, agent_id, promotion.promotion_id) or promotion


def _serve(c: Container, promotion: PromotionRow) -> None:
    """Serve the promoted version (conditional on the environment still serving `from_version`)."""
    now = iso(c.clock.now())
    expect = int(promotion.from_version) if promotion.from_version is not None else None
    try:
        ok = c.environments.serve(promotion.org_id, promotion.environment_id, promotion.agent_id,
                                  int(promotion.version), expect=expect)
        reason = None if ok else "the environment changed while the guards ran: promote again"
    except NotFoundError:
        ok, reason = False, f"environment {promotion.environment_id} was removed"
    c.promotions.decide(promotion, [PromotionRow.status.set((PromotionStatus.PROMOTED if ok else PromotionStatus.REFUSED).value),
                                    PromotionRow.decided_at.set(now)]
                        + ([PromotionRow.reason.set(reason)] if reason else []))
    c.promotions.unlock(promotion)
    if ok:
        suites.on_promoted(c, promotion.org_id, promotion.agent_id, promotion.environment_id,
                           int(promotion.version), expect)


def on_gate_decided(c: Container, event: GateDecided) -> None:
    """A guard's result came in: refuse the organization's promotion unless it passed; serve it once
    all passed."""
    org_id, agent_id, promotion_id, suite_id = event.org_id, event.agent_id, event.promotion_id, event.suite_id
    for _ in range(20):
        promotion = c.promotions.get(org_id, agent_id, promotion_id)
        if promotion is None or promotion.status != PromotionStatus.WAITING or suite_id not in (promotion.guards or {}):
            return
        guards = {**promotion.guards, suite_id: {"result": event.result, "run_id": event.run_id,
                                                  "reasons": list(event.reasons)}}
        actions = [PromotionRow.guards.set(guards)]
        refused = event.result != SuiteResult.PASSED
        if refused:
            why = "; ".join(event.reasons) or event.result
            actions += [PromotionRow.status.set(PromotionStatus.REFUSED.value), PromotionRow.decided_at.set(iso(c.clock.now())),
                        PromotionRow.reason.set(f"guard {suite_id} came out {event.result}: {why}")]
        if not c.promotions.decide(promotion, actions):
            continue
        if refused:
            c.promotions.unlock(promotion)
        elif all(g.get("result") == SuiteResult.PASSED for g in guards.values()):
            fresh = c.promotions.get(org_id, agent_id, promotion_id)
            if fresh is not None:
                _serve(c, fresh)
        return


def refuse(c: Container, org_id: str, agent_id: str, promotion_id: str, reason: str) -> None:
    """Refuse the organization's waiting promotion (its guard cannot check it) and free its environment."""
    for _ in range(20):
        promotion = c.promotions.get(org_id, agent_id, promotion_id)
        if promotion is None or promotion.status != PromotionStatus.WAITING:
            return
        if c.promotions.decide(promotion, [PromotionRow.status.set(PromotionStatus.REFUSED.value), PromotionRow.reason.set(reason),
                                           PromotionRow.decided_at.set(iso(c.clock.now()))]):
            c.promotions.unlock(promotion)
            return


def guard_removed(c: Container, org_id: str, agent_id: str, suite_id: str, reason: str) -> None:
    """A guard was taken off or deleted: the organization's promotions still waiting for it are refused."""
    for promotion in c.promotions.of_agent(org_id, agent_id):
        if promotion.status == PromotionStatus.WAITING and suite_id in (promotion.guards or {}):
            refuse(c, org_id, agent_id, promotion.promotion_id, reason)


def list_promotions(c: Container, who: Identity, agent_id: str) -> list[dict[str, Any]]:
    """The organization's agent's promotions, newest first. Raises NotFoundError for an unknown agent."""
    c.agents.get(who.org_id, agent_id)
    return [view(p) for p in c.promotions.of_agent(who.org_id, agent_id)]


def get(c: Container, who: Identity, agent_id: str, promotion_id: str) -> PromotionRow:
    """Raises NotFoundError for a promotion the organization's agent does not have."""
    row = c.promotions.get(who.org_id, agent_id, promotion_id)
    if row is None:
        raise NotFoundError(f"promotion {promotion_id} not found", field="promotion_id")
    return row
