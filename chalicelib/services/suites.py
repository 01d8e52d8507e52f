"""Suites: eval runs nobody has to remember to start (docs/guides/suites.md).

A suite keeps the triggers waiting to run (`pending`, one per version: a later trigger for a
waiting version is absorbed) and runs one eval run at a time (`active_run_id`). Every change of
those is a conditional write on the suite as read, so the one-minute tick, the agent-events
worker and API calls can race without starting a run twice. A run's end (completed, cancelled,
out of budget, failed) becomes the suite's result, tells the owner when it is bad, decides a
waiting promotion when it was a gate, and starts the next waiting trigger.
"""

from __future__ import annotations

import logging
from dataclasses import replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain.enums import (
    RunPurpose,
    RunStatus,
    TriggerKind,
)
from chalicelib.domain.events import (
    GateDropped,
)
from chalicelib.domain.identity import Identity
from chalicelib.domain.money import micros_to_usd
from chalicelib.domain.records import Suite
from chalicelib.domain.suite_rules import (
    SuiteDecision,
    SuiteResult,
    Threshold,
    absorb,
    decide_result,
)
from chalicelib.errors import (
    AssayError,
    BudgetExceededError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
)
from chalicelib.services import access as access_service
from chalicelib.services import (
    environments,
    messagebus,
    runs,
)
from chalicelib.services.suite_plans import NOT_COMPARED_CAP as NOT_COMPARED_CAP
from chalicelib.services.suite_plans import SuitePrice as SuitePrice
from chalicelib.services.suite_plans import plan_trigger, version_to_check
from chalicelib.services.suite_plans import price as price
from chalicelib.services.suite_results import facts_of as facts_of
from chalicelib.services.suite_results import kept_trigger
from chalicelib.services.suite_results import record as record
from chalicelib.services.suite_results import results as results
from chalicelib.services.suite_saving import OWNER_LOST as OWNER_LOST
from chalicelib.services.suite_saving import STALE_START_MS as STALE_START_MS
from chalicelib.services.suite_saving import STARTING as STARTING
from chalicelib.services.suite_saving import change_suite, check_saver, next_fire_ms, touch
from chalicelib.services.suite_saving import create as create
from chalicelib.services.suite_saving import delete as delete
from chalicelib.services.suite_saving import get as get
from chalicelib.services.suite_saving import on_environment_removed as on_environment_removed
from chalicelib.services.suite_saving import owner_refusal as owner_refusal
from chalicelib.services.suite_saving import pause as pause
from chalicelib.services.suite_saving import set_paused as set_paused
from chalicelib.services.suite_saving import update as update

log = logging.getLogger(__name__)

# --- triggers --------------------------------------------------------------------------------


def _answered_by_active(suite: Suite, kind: str, version: int | None) -> bool:
    """Whether the run the suite has going answers a trigger of `kind` for `version` too: it checks
    that very version, and the trigger is neither a changed dependency (the run measured the old
    one) nor a gate (which decides a promotion)."""
    active = suite.active_trigger or {}
    return (
        bool(suite.active_run_id)
        and suite.active_run_id != STARTING
        and kind not in (TriggerKind.GATE, TriggerKind.DEPENDENCY)
        and version is not None
        and active.get("version") == version
    )


def _with_trigger(c: Container, suite: Suite, entry: dict[str, Any]) -> Suite | None:
    """The suite with `entry` among its waiting triggers (absorbed by one for the same version);
    None when it takes none: paused, or its run going now answers it."""
    if suite.paused or _answered_by_active(suite, entry["kind"], entry["version"]):
        return None
    pending = absorb(suite.pending or [], entry)
    return touch(c, suite, pending=pending, due_at_ms=min(int(p["due_at_ms"]) for p in pending))


def trigger(
    c: Container,
    row: Suite,
    kind: str,
    *,
    version: int | None,
    by: str | None = None,
    baseline_version: int | None = None,
    promotion_id: str | None = None,
    delay_s: float = 0,
) -> bool:
    """Add a trigger to a suite's waiting ones and start it when it is due. A paused suite (or one
    that is gone) takes none (False). `version` None checks the version the environment serves when
    it starts. Raises ConflictError when the suite keeps changing (20 lost writes)."""
    now_ms = epoch_ms(c.clock.now())
    # Stored as the plain word: PynamoDB serializes a map's values by their exact type (no StrEnum).
    entry = {
        "kind": str(TriggerKind(kind)),
        "version": version,
        "by": by,
        "baseline_version": baseline_version,
        "promotion_id": promotion_id,
        "due_at_ms": now_ms + int(delay_s * 1000),
        "at": iso(c.clock.now()),
    }
    changed = change_suite(
        c, row.org_id, row.agent_id, row.suite_id, lambda s: _with_trigger(c, s, entry)
    )
    if changed is None or changed.before.paused:
        return False
    if changed.written:
        advance(c, row.org_id, row.agent_id, row.suite_id)
    return True


def run_now(c: Container, who: Identity, agent_id: str, suite_id: str) -> Suite:
    """Run a suite by hand, as whoever asks; returns the suite as it is now. A paused suite is
    refused (409) and nothing is created."""
    row = get(c, who, agent_id, suite_id)
    check_saver(who, row.dataset_id, "running a suite")
    if row.paused:
        raise ConflictError(
            f"suite {suite_id} is paused ({row.paused_reason}): resume it first", field="suite_id"
        )
    trigger(c, row, TriggerKind.MANUAL, version=None, by=who.user_id)
    return get(c, who, agent_id, suite_id)


def _seen(c: Container, suite: Suite, version: int) -> Suite | None:
    """The suite having taken the publish of `version` (the newest 200 are kept); None when it took
    it already."""
    seen = list(suite.published_seen or [])
    if version in seen:
        return None
    return touch(c, suite, published_seen=(seen + [version])[-200:])


def on_published(c: Container, org_id: str, agent_id: str, version: int) -> None:
    """A version was published: every suite on publish checks it beside the version before. Each
    version is taken once per suite (a redelivered publish event finds it taken). A suite that
    cannot take it (it keeps changing, its trigger fails) is logged; the publish stands."""
    for row in c.suites.of_agent(org_id, agent_id):
        if row.org_id != org_id or not (row.triggers or {}).get("on_publish") or row.paused:
            continue
        try:
            changed = change_suite(
                c, org_id, agent_id, row.suite_id, lambda s: _seen(c, s, version), tries=50
            )
            if changed is not None and changed.written:
                trigger(
                    c,
                    changed.after,
                    TriggerKind.PUBLISH,
                    version=version,
                    baseline_version=version - 1 if version > 1 else None,
                )
        except AssayError as exc:  # the publish stands; the suite says why it did not start
            log.error(
                "suite %s could not take the publish of version %s: %s",
                row.suite_id,
                version,
                exc.message,
            )


def on_promoted(
    c: Container,
    org_id: str,
    agent_id: str,
    environment_id: str,
    version: int,
    replaced: int | None,
) -> None:
    """A version was promoted onto an environment: its suites on promotion check it against the
    version it replaced (guards ran before; they are not asked again)."""
    for row in c.suites.of_agent(org_id, agent_id):
        if (
            row.org_id != org_id
            or row.guards
            or not (row.triggers or {}).get("on_promotion")
            or row.paused
        ):
            continue
        try:
            env = environments.resolve(c, org_id, row.environment_id)
        except NotFoundError:
            continue
        if env.environment_id == environment_id:
            trigger(c, row, TriggerKind.PROMOTION, version=version, baseline_version=replaced)


def on_dependency_changed(c: Container, org_id: str, agent_id: str, version: int | None) -> int:
    """A skill, context file or knowledge-base document of a version changed: suites on dependency
    change that check that version run once, `EVAL_SUITE_DEPENDENCY_DEBOUNCE_SECONDS` after the
    first change of a burst. Returns how many suites took it."""
    taken = 0
    for row in c.suites.of_agent(org_id, agent_id):
        if (
            row.org_id != org_id
            or not (row.triggers or {}).get("on_dependency_change")
            or row.paused
        ):
            continue
        checked = version_to_check(c, row)
        if version is not None and checked != version:
            continue
        taken += trigger(
            c,
            row,
            TriggerKind.DEPENDENCY,
            version=checked,
            delay_s=c.settings.eval_suite_dependency_debounce_seconds,
        )
    return taken


# --- starting --------------------------------------------------------------------------------


def _claimed(c: Container, suite: Suite) -> Suite | None:
    """The suite having claimed its first due waiting trigger as its one start (`active_run_id`
    `STARTING`, the trigger in `active_trigger` with `claimed_at_ms`); out of the due index when
    nothing waits; None when there is nothing to write (paused, a run going, nothing due yet)."""
    now_ms = epoch_ms(c.clock.now())
    if suite.paused or suite.active_run_id:
        return None
    pending = list(suite.pending or [])
    due = [p for p in pending if int(p["due_at_ms"]) <= now_ms]
    if not due:
        nothing_waits = not pending and suite.due_at_ms is not None
        return touch(c, suite, due_at_ms=None) if nothing_waits else None
    entry = due[0]
    rest = [p for p in pending if p is not entry]
    # The tick looks again after STALE_START_MS, so a start that dies half-way is retried.
    return touch(
        c,
        suite,
        pending=rest,
        active_run_id=STARTING,
        active_trigger={**entry, "claimed_at_ms": now_ms},
        due_at_ms=min([now_ms + STALE_START_MS, *(int(p["due_at_ms"]) for p in rest)]),
    )


def _claim_due(
    c: Container, org_id: str, agent_id: str, suite_id: str
) -> tuple[Suite, dict[str, Any]] | None:
    """Claim the suite's first due trigger (once, whoever else claims at the same time). Returns the
    suite as claimed and the trigger; None when nothing was claimed (a suite that keeps changing is
    left to the next tick: it is still in the due index)."""
    try:
        changed = change_suite(c, org_id, agent_id, suite_id, lambda s: _claimed(c, s))
    except ConflictError:
        log.warning("suite %s kept changing: its due trigger is left to the next tick", suite_id)
        return None
    if changed is None or changed.before.active_run_id or changed.after.active_run_id != STARTING:
        return None
    entry = {k: v for k, v in (changed.after.active_trigger or {}).items() if k != "claimed_at_ms"}
    claimed = c.suites.get(org_id, agent_id, suite_id)  # gone since: nobody's run to start
    return (claimed, entry) if claimed is not None else None


def advance(c: Container, org_id: str, agent_id: str, suite_id: str) -> str | None:
    """Start the organization's suite's next due trigger unless a run is going or it is paused.
    Returns the run started (None when nothing started). A trigger that cannot run becomes a
    `not_run` result and the next one is tried (each claim takes one waiting trigger off)."""
    while (claimed := _claim_due(c, org_id, agent_id, suite_id)) is not None:
        run_id = _start(c, *claimed)
        if run_id is not None:
            return run_id
    return None


def _named_run(c: Container, suite: Suite, entry: dict[str, Any], run_id: str) -> Suite | None:
    """The suite naming the run it started as its active one (None once its start was cleared)."""
    if suite.active_run_id != STARTING:
        return None
    return touch(
        c, suite, active_run_id=run_id, active_trigger={**kept_trigger(entry), "run_id": run_id}
    )


def _start(c: Container, row: Suite, entry: dict[str, Any]) -> str | None:
    """Start the run of a claimed trigger, or record why it does not run. Returns the run id."""
    # A suite runs as its owner; a run pressed by hand, as whoever pressed it (checked as they
    # asked). Either way with their authority as it is now.
    by = str(entry["by"]) if entry["kind"] == TriggerKind.MANUAL and entry.get("by") else None
    who = access_service.as_member(c, row.org_id, by or row.owner)
    refusal = owner_refusal(who, replace(row, owner=by) if by else row)
    if refusal is not None:
        record(
            c,
            row,
            entry,
            None,
            SuiteDecision(SuiteResult.NOT_RUN, [refusal]),
            started=iso(c.clock.now()),
        )
        _release(c, row, STARTING)
        if by is None:
            pause(c, row, refusal)
        return None
    version = entry.get("version")
    if version is None:
        version = version_to_check(c, row)
    entry = {**entry, "version": version}
    started = iso(c.clock.now())
    try:
        if version is None:
            raise InvalidInputError(
                "its environment serves no published version of the agent to check",
                field="environment_id",
            )
        plan, priced = plan_trigger(c, who, row, entry)
        cap = row.max_run_usd_micros
        if cap is not None and priced.total_micros > int(cap):
            cost = micros_to_usd(priced.total_micros)
            raise BudgetExceededError(
                f"the run could cost up to ${cost}, more than the suite's "
                f"max_run_usd (${micros_to_usd(int(cap))})",
                field="max_run_usd",
            )
        purpose = RunPurpose.GATE if entry["kind"] == TriggerKind.GATE else RunPurpose.SUITE
        run, _ = runs.start_run(
            c,
            who,
            row.agent_id,
            {},
            planned=(plan, priced),
            purpose=str(purpose),
            extra_settings={
                "suite_id": row.suite_id,
                "suite_created_at": row.created_at,
                "suite_trigger": kept_trigger(entry),
                "suite_note": priced.note,
            },
        )
    except AssayError as exc:
        record(
            c, row, entry, None, SuiteDecision(SuiteResult.NOT_RUN, [exc.message]), started=started
        )
        _release(c, row, STARTING)
        return None
    try:
        change_suite(
            c, row.org_id, row.agent_id, row.suite_id, lambda s: _named_run(c, s, entry, run.run_id)
        )
    except ConflictError:  # the run goes on; its end still finds the suite by the run's settings
        log.warning(
            "suite %s kept changing: run %s not named as its active run", row.suite_id, run.run_id
        )
    ended = c.runs.get(row.org_id, run.run_id)
    if ended is not None and RunStatus(ended.status).ended:
        # It ended before the suite named it as its run (a small run is quick): finish now.
        run_ended(c, row.org_id, run.run_id)
    return run.run_id


def _release(c: Container, row: Suite, active: str) -> None:
    """Give up the suite's one-run claim (conditional on it being `active`). A suite that keeps
    changing (20 lost writes) keeps the claim, logged (a stale start is cleared by the tick)."""

    def released(suite: Suite) -> Suite | None:
        if suite.active_run_id != active:
            return None
        return touch(c, suite, active_run_id=None, active_trigger=None)

    try:
        change_suite(c, row.org_id, row.agent_id, row.suite_id, released)
    except ConflictError:
        log.warning("suite %s kept changing: its claim %s was not given up", row.suite_id, active)


# --- results ---------------------------------------------------------------------------------


def run_ended(c: Container, org_id: str, run_id: str) -> None:
    """A run ended (completed, cancelled, out of budget, failed): if a suite started it, record the
    result, tell the owner when it is bad, decide a waiting promotion, and start what waits next.
    Idempotent: a run has one result."""
    run = c.runs.get(org_id, run_id)
    suite_id = (run.settings or {}).get("suite_id") if run is not None else None
    if run is None or not suite_id or not RunStatus(run.status).ended:
        return
    entry = dict((run.settings or {}).get("suite_trigger") or {})
    row = c.suites.get(org_id, run.agent_id, suite_id)
    if row is None or row.created_at != (run.settings or {}).get(
        "suite_created_at", row.created_at
    ):
        # The suite that started it is gone (a new one may have its id): nobody's result; a gate's
        # promotion cannot be decided by it.
        if entry.get("kind") == TriggerKind.GATE and entry.get("promotion_id"):
            messagebus.publish(
                c,
                GateDropped(
                    org_id,
                    run.agent_id,
                    entry["promotion_id"],
                    f"guard {suite_id} was removed before it decided",
                ),
            )
        return
    try:
        decision = decide_result(Threshold.model_validate(row.threshold or {}), facts_of(c, run))
        record(c, row, entry, run, decision, started=run.created_at)
    finally:
        # Whatever became of the result, the suite is free for what waits next.
        _release(c, row, run_id)
        advance(c, row.org_id, row.agent_id, row.suite_id)


# --- the tick --------------------------------------------------------------------------------


def tick(c: Container) -> dict[str, int]:
    """Every minute: fire due schedules (a fire missed while nothing ran runs once; one while paused
    never runs), start due waiting triggers, and clear starts that died. Returns counts."""
    now = c.clock.now()
    now_ms = epoch_ms(now)
    fired = started = cleared = 0
    for row in c.suites.due_to_fire(now_ms):
        nxt = next_fire_ms(row.triggers, now)
        if nxt is None or row.next_fire_at_ms is None or int(row.next_fire_at_ms) > now_ms:
            continue
        # Claim this fire by moving next_fire past now: every fire missed so far collapses into one.
        if not c.suites.replace(row, touch(c, row, next_fire_at_ms=nxt)):
            continue
        fresh = c.suites.get(row.org_id, row.agent_id, row.suite_id)
        if fresh is not None and not fresh.paused:
            fired += trigger(c, fresh, TriggerKind.SCHEDULE, version=None)
    for row in c.suites.due_to_start(now_ms):
        if (
            row.active_run_id == STARTING
            and int((row.active_trigger or {}).get("claimed_at_ms") or 0) <= now_ms - STALE_START_MS
        ):
            # The start died before it wrote a run: put its trigger back and try again.
            dead = {k: v for k, v in (row.active_trigger or {}).items() if k != "claimed_at_ms"}
            _release(c, row, STARTING)
            fresh = c.suites.get(row.org_id, row.agent_id, row.suite_id)
            if fresh is not None and dead:
                trigger(
                    c,
                    fresh,
                    dead.get("kind", TriggerKind.MANUAL),
                    version=dead.get("version"),
                    by=dead.get("by"),
                    baseline_version=dead.get("baseline_version"),
                    promotion_id=dead.get("promotion_id"),
                )
            cleared += 1
        if advance(c, row.org_id, row.agent_id, row.suite_id):
            started += 1
    return {"fired": fired, "started": started, "cleared": cleared}
