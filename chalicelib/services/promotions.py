"""Promotions: moving the version an environment serves, guarded by suites
(docs/guides/suites.md).

A promotion onto an environment some suite guards waits: each guard runs on the version about to
be promoted beside the version the environment serves (purpose `gate`), and only when every guard
passed is the version served. `baseline_set`, `inconclusive`, `failed`, `error` and `not_run`
never open a gate. Without guards a promotion is immediate. Either way, suites on promotion then
check the promoted version against the one it replaced.

A guard whose newest result of the version passed through review and still holds
(`guard_status.reusable_pass`) is not run again: the promotion stands on that result (`reused`).
A result that people's verdicts turn into a pass never serves a version by itself: only a
promotion asked for afterwards stands on it.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.enums import PromotionStatus, TriggerKind
from chalicelib.domain.events import GateDecided
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Promotion, Suite, SuiteResultEntry
from chalicelib.domain.suite_rules import SuiteResult
from chalicelib.errors import ConflictError, NotFoundError
from chalicelib.retrying import Changed, change
from chalicelib.services import environments, guard_status, suites

log = logging.getLogger(__name__)


def _change_promotion(
    c: Container,
    org_id: str,
    agent_id: str,
    promotion_id: str,
    decide: Callable[[Promotion], Promotion | None],
) -> Changed[Promotion] | None:
    """`retrying.change` of one promotion, `Promotions.decide` as the write (it holds only while
    the promotion waits with the guards as read). Returns None when the promotion does not exist;
    raises ConflictError after 20 lost writes."""
    return change(
        lambda: c.promotions.get(org_id, agent_id, promotion_id),
        decide,
        c.promotions.decide,
        conflict=f"promotion {promotion_id} keeps changing: try again",
        field="promotion_id",
    )


def guards_of(c: Container, org_id: str, agent_id: str, environment_id: str) -> list[Suite]:
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


def reused_guard(result: SuiteResultEntry) -> dict[str, Any]:
    """A promotion's entry of a guard that stands on a pass through review instead of running:
    `{result: "passed", run_id, reasons, reviewed_by, reused: True}`."""
    return {
        "result": SuiteResult.PASSED.value,
        "run_id": result.run_id,
        "reasons": list(result.reasons or []),
        "reviewed_by": list(result.reviewed_by or []),
        "reused": True,
    }


def _reused_no_longer_hold(c: Container, promotion: Promotion) -> str | None:
    """Why a guard the promotion stands on without running it no longer allows it (its result was
    reviewed again, went out of date, or the guard is gone); None while each still does."""
    served = int(promotion.from_version) if promotion.from_version is not None else None
    for suite_id, entry in sorted((promotion.guards or {}).items()):
        if not (entry or {}).get("reused"):
            continue
        suite = c.suites.get(promotion.org_id, promotion.agent_id, suite_id)
        if suite is None:
            return f"guard {suite_id} was removed while the promotion waited"
        result = guard_status.reusable_pass(c, suite, int(promotion.version), served)
        if result is None or result.run_id != entry.get("run_id"):
            return (
                f"the reviewed pass of guard {suite_id} (run {entry.get('run_id')}) no longer "
                "holds: promote again"
            )
    return None


def _serve_if_reused_hold(c: Container, promotion: Promotion) -> None:
    """Serve a promotion whose every guard passed, unless a guard it stands on without running it
    no longer allows it (then it is refused, saying why)."""
    why = _reused_no_longer_hold(c, promotion)
    if why is None:
        _serve(c, promotion)
    else:
        refuse(c, promotion.org_id, promotion.agent_id, promotion.promotion_id, why)


def promote(
    c: Container, who: Identity, agent_id: str, environment_id: str, version: int
) -> Promotion:
    """Promote `version` of an agent onto an environment: at once without guards, else once every
    guard passed on it. A guard whose newest result of `version` is a pass through review that
    still holds (`guard_status.reusable_pass`: same dataset version, scoring, threshold, and the
    version the environment serves now as its baseline) is not run again and counts as passed
    (`guards[suite_id]` is `reused_guard`); when every guard is such, the version is served at
    once.

    Raises NotFoundError (agent, environment, version), ConflictError (it serves that version
    already; a guard is paused; another promotion onto it waits).
    """
    c.agents.get(who.org_id, agent_id)
    env = c.environments.get(who.org_id, environment_id)
    if c.agents.get_version(who.org_id, agent_id, version) is None:
        raise NotFoundError(f"version {version} of agent {agent_id} not found", field="version")
    served = (env.serving or {}).get(agent_id)
    served = int(served) if served is not None else None
    if served == version:
        raise ConflictError(
            f"environment {environment_id} serves version {version} already", field="version"
        )
    guards = guards_of(c, who.org_id, agent_id, environment_id)
    paused = [g for g in guards if g.paused]
    if paused:
        raise ConflictError(
            f"suite {paused[0].suite_id} guards {environment_id} and is paused "
            f"({paused[0].paused_reason}): resume it to promote",
            field="environment_id",
        )
    reused = {
        g.suite_id: found
        for g in guards
        if (found := guard_status.reusable_pass(c, g, version, served)) is not None
    }
    now = iso(c.clock.now())
    promotion = Promotion(
        agent_id=agent_id,
        promotion_id=f"p{epoch_ms(c.clock.now()):013d}{uuid.uuid4().hex[:8]}",
        org_id=who.org_id,
        environment_id=environment_id,
        version=version,
        from_version=served,
        status=PromotionStatus.WAITING.value,
        guards={
            g.suite_id: reused_guard(reused[g.suite_id])
            if g.suite_id in reused
            else {"result": None}
            for g in guards
        },
        created_at=now,
        created_by=who.user_id,
    )
    if not c.promotions.create_waiting(promotion):
        holder = c.promotions.lock_holder(who.org_id, agent_id, environment_id)
        raise ConflictError(
            f"promotion {holder} onto {environment_id} is still waiting for its guards",
            field="environment_id",
        )
    if not guards:
        _serve(c, promotion)
    elif len(reused) == len(guards):
        _serve_if_reused_hold(c, promotion)
    else:
        for g in guards:
            if g.suite_id in reused:
                continue
            if not suites.trigger(
                c,
                g,
                TriggerKind.GATE,
                version=version,
                baseline_version=served,
                promotion_id=promotion.promotion_id,
                by=who.user_id,
            ):
                refuse(
                    c,
                    who.org_id,
                    agent_id,
                    promotion.promotion_id,
                    f"guard {g.suite_id} is paused: it cannot check the version",
                )
                break
    return c.promotions.get(who.org_id, agent_id, promotion.promotion_id) or promotion


def _decided(
    c: Container, promotion: Promotion, status: PromotionStatus, reason: str | None
) -> Promotion:
    """The promotion as decided now (`reason` None keeps the one it has)."""
    return replace(
        promotion,
        status=status.value,
        decided_at=iso(c.clock.now()),
        reason=reason if reason is not None else promotion.reason,
    )


def _serve(c: Container, promotion: Promotion) -> None:
    """Serve the promoted version (conditional on the environment still serving `from_version`)."""
    expect = int(promotion.from_version) if promotion.from_version is not None else None
    try:
        ok = c.environments.serve(
            promotion.org_id,
            promotion.environment_id,
            promotion.agent_id,
            int(promotion.version),
            expect=expect,
        )
        reason = None if ok else "the environment changed while the guards ran: promote again"
    except NotFoundError:
        ok, reason = False, f"environment {promotion.environment_id} was removed"
    status = PromotionStatus.PROMOTED if ok else PromotionStatus.REFUSED
    c.promotions.decide(promotion, _decided(c, promotion, status, reason))
    c.promotions.release_lock(promotion)
    if ok:
        suites.on_promoted(
            c,
            promotion.org_id,
            promotion.agent_id,
            promotion.environment_id,
            int(promotion.version),
            expect,
        )


def _waits_for(promotion: Promotion, suite_id: str) -> bool:
    """Whether the promotion is still waiting, and for that guard among others."""
    return promotion.status == PromotionStatus.WAITING and suite_id in (promotion.guards or {})


def _with_guard_result(c: Container, promotion: Promotion, event: GateDecided) -> Promotion | None:
    """A waiting promotion with one guard's result kept, and refused unless it passed; None when the
    promotion is decided already or does not wait for that guard."""
    if not _waits_for(promotion, event.suite_id):
        return None
    guards = {
        **promotion.guards,
        event.suite_id: {
            "result": event.result,
            "run_id": event.run_id,
            "reasons": list(event.reasons),
        },
    }
    recorded = replace(promotion, guards=guards)
    if event.result == SuiteResult.PASSED:
        return recorded
    why = "; ".join(event.reasons) or event.result
    return _decided(
        c,
        recorded,
        PromotionStatus.REFUSED,
        f"guard {event.suite_id} came out {event.result}: {why}",
    )


def on_gate_decided(c: Container, event: GateDecided) -> None:
    """A guard's result came in: refuse the organization's promotion unless it passed; serve it once
    all passed. A promotion that keeps changing under it (20 lost writes) is left to its other
    guards and logged."""
    try:
        changed = _change_promotion(
            c,
            event.org_id,
            event.agent_id,
            event.promotion_id,
            lambda p: _with_guard_result(c, p, event),
        )
    except ConflictError:
        log.warning(
            "promotion %s kept changing: the result of guard %s was not kept",
            event.promotion_id,
            event.suite_id,
        )
        return
    if changed is None or not _waits_for(changed.before, event.suite_id):
        return
    if changed.after.status == PromotionStatus.REFUSED:
        c.promotions.release_lock(changed.after)
    elif all(g.get("result") == SuiteResult.PASSED for g in changed.after.guards.values()):
        fresh = c.promotions.get(event.org_id, event.agent_id, event.promotion_id)
        if fresh is not None:
            _serve_if_reused_hold(c, fresh)


def refuse(c: Container, org_id: str, agent_id: str, promotion_id: str, reason: str) -> None:
    """Refuse the organization's waiting promotion (its guard cannot check it) and free its
    environment. A promotion decided already is left as it is."""

    def decide(promotion: Promotion) -> Promotion | None:
        if promotion.status != PromotionStatus.WAITING:
            return None
        return _decided(c, promotion, PromotionStatus.REFUSED, reason)

    try:
        changed = _change_promotion(c, org_id, agent_id, promotion_id, decide)
    except ConflictError:
        log.warning("promotion %s kept changing: not refused (%s)", promotion_id, reason)
        return
    if changed is not None and changed.written:
        c.promotions.release_lock(changed.after)


def guard_removed(c: Container, org_id: str, agent_id: str, suite_id: str, reason: str) -> None:
    """A guard was taken off or deleted: the organization's promotions still waiting for it are
    refused."""
    for promotion in c.promotions.of_agent(org_id, agent_id):
        if promotion.status == PromotionStatus.WAITING and suite_id in (promotion.guards or {}):
            refuse(c, org_id, agent_id, promotion.promotion_id, reason)


def list_promotions(c: Container, who: Identity, agent_id: str) -> list[Promotion]:
    """The organization's agent's promotions, newest first. Raises NotFoundError for an unknown
    agent."""
    c.agents.get(who.org_id, agent_id)
    return c.promotions.of_agent(who.org_id, agent_id)


def get(c: Container, who: Identity, agent_id: str, promotion_id: str) -> Promotion:
    """Raises NotFoundError for a promotion the organization's agent does not have."""
    row = c.promotions.get(who.org_id, agent_id, promotion_id)
    if row is None:
        raise NotFoundError(f"promotion {promotion_id} not found", field="promotion_id")
    return row
