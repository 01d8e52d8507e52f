"""Suites: eval runs nobody has to remember to start (seed 004 "Suites").

A suite keeps the triggers waiting to run (`pending`, one per version: a later trigger for a
waiting version is absorbed) and runs one eval run at a time (`active_run_id`). Every change of
those is a conditional write on the suite as read, so the one-minute tick, the agent-events
worker and API calls can race without starting a run twice. A run's end (completed, cancelled,
out of budget, failed) becomes the suite's result, tells the owner when it is bad, decides a
waiting promotion when it was a gate, and starts the next waiting trigger.
"""

from __future__ import annotations

import logging
import random
import time
import uuid
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from chalicelib.adapters.tables import RunRow, SuiteResultRow, SuiteRow
from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, from_epoch_ms, iso
from chalicelib.domain import schedule
from chalicelib.domain.enums import (
    ArmRole,
    AttemptState,
    RunPurpose,
    RunStatus,
    TriggerKind,
)
from chalicelib.domain.events import (
    EnvironmentRemoved,
    GateDecided,
    GateDropped,
    GuardWithdrawn,
)
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import check_tenant_id
from chalicelib.domain.money import micros_to_usd
from chalicelib.domain.runs import settle
from chalicelib.domain.spec import spec_hash
from chalicelib.domain.suites import (
    Judgement,
    RunFacts,
    SuiteResult,
    Threshold,
    Triggers,
    absorb,
    judge,
)
from chalicelib.errors import (
    AssayError,
    BudgetExceededError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    invalid_input,
)
from chalicelib.services import (
    budgets,
    environments,
    estimates,
    finalize,
    judges,
    messagebus,
    notifications,
    redacting,
    runs,
)
from chalicelib.services import datasets as dataset_service

log = logging.getLogger(__name__)

FLAG = "1"
"""Value of the sparse index flags (`fire_flag`, `due_flag`)."""
STARTING = "starting"
"""`active_run_id` while a run is being started; a start that died leaves it, and the tick clears
it after `STALE_START_MS`."""
STALE_START_MS = 5 * 60_000
NOT_COMPARED_CAP = "Not compared: running the earlier version too would exceed the suite's cost cap."


# --- reading ---------------------------------------------------------------------------------


def view(row: SuiteRow) -> dict[str, Any]:
    """The API shape of a suite."""
    return {
        "suite_id": row.suite_id, "agent_id": row.agent_id, "name": row.name, "dataset_id": row.dataset_id,
        "dataset_version": int(row.dataset_version) if row.dataset_version is not None else None,
        "environment_id": row.environment_id, "threshold": row.threshold, "triggers": row.triggers,
        "max_run_usd": micros_to_usd(int(row.max_run_usd_micros)) if row.max_run_usd_micros is not None else None,
        "guards": bool(row.guards), "pins": row.pins, "owner": row.owner, "paused": bool(row.paused),
        "paused_reason": row.paused_reason, "pending": row.pending or [], "active_run_id": row.active_run_id,
        "last_result": row.last_result,
        "next_fire_at": iso(from_epoch_ms(int(row.next_fire_at_ms))) if row.next_fire_at_ms is not None else None,
        "history": row.history or [], "created_at": row.created_at,
        "updated_at": row.updated_at.split("#", 1)[0]}   # the stamp's nonce is for conditional writes only


def result_view(row: SuiteResultRow) -> dict[str, Any]:
    return {"result_id": row.result_id, "suite_id": row.suite_id, "result": row.result,
            "label": "Before promotion" if row.purpose == RunPurpose.GATE else None, "purpose": row.purpose,
            "trigger": row.trigger, "version": int(row.version) if row.version is not None else None,
            "run_id": row.run_id, "reasons": row.reasons, "cases_broken": row.cases_broken,
            "cases_undecided": row.cases_undecided, "overall": row.overall,
            "started_at": row.started_at, "completed_at": row.completed_at}


def get(c: Container, who: Identity, agent_id: str, suite_id: str) -> SuiteRow:
    """The organization's agent's suite. Raises NotFoundError for a suite or agent the organization
    does not have."""
    c.agents.get(who.org_id, agent_id)
    row = c.suites.get(who.org_id, agent_id, suite_id)
    if row is None:
        raise NotFoundError(f"suite {suite_id} not found", field="suite_id")
    return row


# --- saving ----------------------------------------------------------------------------------


def _parse(body: dict[str, Any], *, partial: bool) -> dict[str, Any]:
    """Validate the parts of a suite body given. Raises InvalidInputError naming the field."""
    out: dict[str, Any] = {}
    if "threshold" in body or not partial:
        try:
            out["threshold"] = Threshold.model_validate(body.get("threshold") or {}).model_dump(mode="json")
        except ValidationError as exc:
            raise invalid_input(exc, "threshold") from None
    if "triggers" in body or not partial:
        try:
            triggers = Triggers.model_validate(body.get("triggers") or {})
        except ValidationError as exc:
            raise invalid_input(exc, "triggers") from None
        if triggers.schedule is not None:
            try:
                schedule.validate(triggers.schedule.cron, triggers.schedule.timezone)
            except schedule.CronError as exc:
                raise InvalidInputError(str(exc), field="triggers.schedule.cron" if str(exc).startswith("cron")
                                        else "triggers.schedule.timezone") from None
        out["triggers"] = triggers.model_dump(mode="json")
    if "max_run_usd" in body:
        out["max_run_usd_micros"] = budgets.parse_usd(body["max_run_usd"], "max_run_usd")
    return out


def _next_fire_ms(triggers: dict[str, Any] | None, now: datetime) -> int | None:
    """When a suite's schedule fires next after `now` (epoch ms), None without a schedule."""
    sched = (triggers or {}).get("schedule")
    return epoch_ms(schedule.next_fire(sched["cron"], sched["timezone"], now)) if sched else None


def _next_fire_actions(triggers: dict[str, Any], now: datetime) -> list:
    nxt = _next_fire_ms(triggers, now)
    if nxt is None:
        return [SuiteRow.fire_flag.remove(), SuiteRow.next_fire_at_ms.remove()]
    return [SuiteRow.fire_flag.set(FLAG), SuiteRow.next_fire_at_ms.set(nxt)]


def _pins(c: Container, who: Identity, dataset_id: str, dataset_version: int | None) -> dict[str, Any]:
    """What a guard is pinned to: the dataset version, its scoring and the judge publication now."""
    version = dataset_service.resolve_version(c, who, dataset_id, dataset_version)
    judge = judges.of_scoring(c, who.org_id, version.scoring)
    return {"dataset_version": int(version.version), "scoring_hash": spec_hash(version.scoring),
            "judge_id": judge.judge_id if judge else None, "judge_version": judge.version if judge else None}


def create(c: Container, who: Identity, agent_id: str, body: dict[str, Any]) -> tuple[SuiteRow, dict[str, Any]]:
    """Save a new suite; its saver owns it. Returns the suite and its price (one run, a month).

    A suite id is unique among the agent's suites in the organization only.
    Raises NotFoundError (agent, dataset, environment), InvalidInputError (threshold, triggers,
    max_run_usd, a dataset version that does not exist, a `suite_id` with `#` or `/`), ConflictError
    (the agent has a suite with that id).
    """
    if body.get("suite_id") is not None:
        check_tenant_id(body["suite_id"], "suite_id")
    c.agents.get(who.org_id, agent_id)
    parsed = _parse(body, partial=False)
    dataset = dataset_service.resolve_version(c, who, body["dataset_id"], body.get("dataset_version") or "latest")
    env_id = body.get("environment_id")
    env = environments.resolve(c, who.org_id, env_id)
    now = c.clock.now()
    guards = bool(body.get("guards"))
    if guards:
        env_id = env.environment_id   # a guard guards this environment, whatever becomes the default later
    row = SuiteRow(agent_id=agent_id, suite_id=body.get("suite_id") or f"suite_{uuid.uuid4().hex[:12]}", org_id=who.org_id,
                   name=body.get("name") or "", dataset_id=body["dataset_id"],
                   dataset_version=body.get("dataset_version"), environment_id=env_id,
                   threshold=parsed["threshold"], triggers=parsed["triggers"],
                   max_run_usd_micros=parsed.get("max_run_usd_micros"), guards=guards,
                   pins=_pins(c, who, dataset.dataset_id, body.get("dataset_version")) if guards else None,
                   history=[{"at": iso(now), "by": who.user_id, "change": "created"}], owner=who.user_id,
                   paused=False, pending=[], notified={}, created_at=iso(now), updated_at=iso(now))
    row.next_fire_at_ms = _next_fire_ms(parsed["triggers"], now)
    row.fire_flag = FLAG if row.next_fire_at_ms is not None else None
    c.suites.create(row)
    return row, price(c, who, row)


def update(c: Container, who: Identity, agent_id: str, suite_id: str, body: dict[str, Any]) -> tuple[SuiteRow, dict]:
    """Change a suite; whoever changes it takes it over (the owner). Moving a guard's pins (its
    dataset version or judge version) needs `promotions:override` and is recorded.

    Raises ForbiddenError (403) for a pin move without the permission, and what `create` raises.
    """
    for _ in range(10):
        row = get(c, who, agent_id, suite_id)
        parsed = _parse(body, partial=True)
        now = c.clock.now()
        actions: list = []
        history = list(row.history or [])
        for key in ("name", "dataset_id"):
            if key in body and body[key] is None:
                raise InvalidInputError(f"{key} cannot be null", field=key)
            if key in body:
                actions.append(getattr(SuiteRow, key).set(body[key]))
        if "environment_id" in body:   # null: the organization's default environment
            actions.append(SuiteRow.environment_id.set(body["environment_id"]) if body["environment_id"] is not None
                           else SuiteRow.environment_id.remove())
        if "environment_id" in body:
            environments.resolve(c, who.org_id, body["environment_id"])
        if "dataset_version" in body:
            actions.append(SuiteRow.dataset_version.set(body["dataset_version"]) if body["dataset_version"] is not None
                           else SuiteRow.dataset_version.remove())
        if "dataset_id" in body or "dataset_version" in body:
            dataset_service.resolve_version(c, who, body.get("dataset_id", row.dataset_id),
                                            body.get("dataset_version", row.dataset_version) or "latest")
        for key in ("threshold", "triggers"):
            if key in parsed:
                actions.append(getattr(SuiteRow, key).set(parsed[key]))
        if "max_run_usd_micros" in parsed:
            actions.append(SuiteRow.max_run_usd_micros.set(parsed["max_run_usd_micros"])
                           if parsed["max_run_usd_micros"] is not None else SuiteRow.max_run_usd_micros.remove())
        if "triggers" in parsed:
            actions += _next_fire_actions(parsed["triggers"], now)
        guards = bool(body.get("guards", row.guards))
        guarded = sorted(k for k in ("threshold", "environment_id", "dataset_id", "dataset_version", "max_run_usd")
                         if k in body)
        if row.guards and guarded:
            # A guard's bar and what it checks decide promotions: changing them is an override.
            who.require("promotions:override", f"changing a guard's {', '.join(guarded)}")
        if guards and (not row.guards or "environment_id" in body):
            actions.append(SuiteRow.environment_id.set(
                environments.resolve(c, who.org_id, body.get("environment_id", row.environment_id)).environment_id))
        dataset_id = body.get("dataset_id", row.dataset_id)
        new_pins = None
        if guards and (not row.guards or "dataset_version" in body or "dataset_id" in body or body.get("move_pins")):
            new_pins = _pins(c, who, dataset_id, body.get("dataset_version", row.dataset_version))
            if row.guards and row.pins and new_pins != row.pins:
                who.require("promotions:override", "moving a guard's pins")
                history.append({"at": iso(now), "by": who.user_id, "change": "agent.environment_guards_changed",
                                "old": row.pins, "new": new_pins})
        if "guards" in body:
            if row.guards and not guards:
                # Taking a guard off opens its environment to unchecked promotions.
                who.require("promotions:override", "taking a guard off its environment")
                history.append({"at": iso(now), "by": who.user_id, "change": "agent.environment_guards_changed",
                                "old": row.pins, "new": None})
            actions.append(SuiteRow.guards.set(guards))
            if not guards:
                actions.append(SuiteRow.pins.remove())
        if new_pins is not None:
            actions.append(SuiteRow.pins.set(new_pins))
        if row.owner != who.user_id:
            history.append({"at": iso(now), "by": who.user_id, "change": "owner", "old": row.owner,
                            "new": who.user_id})
            actions.append(SuiteRow.notified.set({}))   # the new owner is told of bad results from now on
        history.append({"at": iso(now), "by": who.user_id, "change": "updated",
                        "fields": sorted(k for k in body if k != "move_pins")})
        actions += [SuiteRow.owner.set(who.user_id), SuiteRow.history.set(history[-100:])]
        if c.suites.update(row, actions, stamp=_stamp(c)):
            if row.guards and not guards:
                messagebus.publish(c, GuardWithdrawn(who.org_id, agent_id, suite_id,
                                                     f"guard {suite_id} was taken off before it decided"))
            fresh = c.suites.get(who.org_id, agent_id, suite_id)
            return fresh, price(c, who, fresh)
    raise ConflictError(f"suite {suite_id} keeps changing: try again", field="suite_id")


def delete(c: Container, who: Identity, agent_id: str, suite_id: str) -> None:
    """Delete a suite and its results. Refused (409) while it guards an environment."""
    row = get(c, who, agent_id, suite_id)
    if row.guards:
        raise ConflictError(f"suite {suite_id} guards an environment: take it off there first (guards: false)",
                            field="suite_id")
    c.suites.delete(row)
    c.suites.delete_results(who.org_id, agent_id, suite_id)
    messagebus.publish(c, GuardWithdrawn(who.org_id, agent_id, suite_id,
                                         f"guard {suite_id} was deleted before it decided"))


def _stamp(c: Container) -> str:
    """A fresh `updated_at`: the time plus a nonce, so two writes in one millisecond still differ."""
    return f"{iso(c.clock.now())}#{uuid.uuid4().hex[:8]}"


def on_environment_removed(c: Container, event: EnvironmentRemoved) -> None:
    """Pause every suite that ran in the removed environment (or in the default, when it was)."""
    for suite in c.suites.of_org(event.org_id):
        if suite.environment_id == event.environment_id or (suite.environment_id is None and event.was_default):
            pause(c, suite, f"its environment {event.environment_id} was removed: choose another to resume it")


def pause(c: Container, row: SuiteRow, reason: str) -> None:
    """Pause a suite (idempotent); nothing waiting runs while it is paused, and a promotion waiting
    for its check is refused (a paused guard opens no gate)."""
    for _ in range(10):
        dropped = [p for p in row.pending or [] if p.get("kind") == TriggerKind.GATE and p.get("promotion_id")]
        if c.suites.update(row, [SuiteRow.paused.set(True), SuiteRow.paused_reason.set(reason),
                                 SuiteRow.pending.set([]), SuiteRow.due_flag.remove(), SuiteRow.due_at_ms.remove()],
                           stamp=_stamp(c)):
            for gate in dropped:
                messagebus.publish(c, GateDropped(
                    row.org_id, row.agent_id, gate["promotion_id"],
                    f"guard {row.suite_id} was paused before it checked the version: {reason}"))
            return
        row = c.suites.get(row.org_id, row.agent_id, row.suite_id) or row


def set_paused(c: Container, who: Identity, agent_id: str, suite_id: str, paused: bool) -> SuiteRow:
    """Pause or resume by hand. Resuming needs its environment to exist (409 otherwise)."""
    row = get(c, who, agent_id, suite_id)
    if paused:
        pause(c, row, f"paused by {who.user_id}")
    else:
        try:
            environments.resolve(c, who.org_id, row.environment_id)
        except NotFoundError:
            raise ConflictError("its environment is gone: choose an environment (PATCH environment_id) to resume it",
                                field="environment_id") from None
        for _ in range(10):
            if c.suites.update(row, [SuiteRow.paused.set(False), SuiteRow.paused_reason.remove()], stamp=_stamp(c)):
                break
            row = get(c, who, agent_id, suite_id)
    return get(c, who, agent_id, suite_id)


# --- pricing ---------------------------------------------------------------------------------


def price(c: Container, who: Identity, row: SuiteRow) -> dict[str, Any]:
    """What saving agrees to: one run of the version it would check now, and a month of its schedule
    (`fires_per_30_days` runs), priced as the estimate prices a run."""
    out: dict[str, Any] = {"one_run_usd": None, "runs_per_30_days": 0, "month_usd": None, "note": None}
    sched = (row.triggers or {}).get("schedule")
    if sched:
        out["runs_per_30_days"] = schedule.fires_per_30_days(sched["cron"], sched["timezone"], c.clock.now())
    try:
        version = _version_to_check(c, row) or int(c.agents.get(row.org_id, row.agent_id).latest_version or 0)
        if not version:
            out["note"] = "the agent has no published version to check yet"
            return out
        _, priced = _plan(c, who, row, {"kind": str(TriggerKind.MANUAL), "version": version})
    except AssayError as exc:
        out["note"] = f"cannot price a run: {exc.message}"
        return out
    out["one_run_usd"] = priced["total_usd"]
    out["month_usd"] = micros_to_usd(int(priced["total_micros"]) * out["runs_per_30_days"])
    out["basis"] = priced["basis"]
    return out


# --- triggers --------------------------------------------------------------------------------


def _version_to_check(c: Container, row: SuiteRow) -> int | None:
    try:
        return environments.served(c, row.org_id, row.environment_id, row.agent_id)
    except NotFoundError:
        return None


def trigger(c: Container, row: SuiteRow, kind: str, *, version: int | None, by: str | None = None,
            baseline_version: int | None = None, promotion_id: str | None = None, delay_s: float = 0) -> bool:
    """Add a trigger to a suite's waiting ones and start it when it is due. A paused suite takes
    none (False). `version` None checks the version the environment serves when it starts."""
    now_ms = epoch_ms(c.clock.now())
    # Stored as the plain word: PynamoDB serializes a map's values by their exact type (no StrEnum).
    entry = {"kind": str(TriggerKind(kind)), "version": version, "by": by, "baseline_version": baseline_version,
             "promotion_id": promotion_id, "due_at_ms": now_ms + int(delay_s * 1000), "at": iso(c.clock.now())}
    for _ in range(20):
        if row.paused:
            return False
        active = row.active_trigger or {}
        if row.active_run_id and row.active_run_id != STARTING and kind not in (TriggerKind.GATE, TriggerKind.DEPENDENCY) \
                and version is not None and active.get("version") == version:
            # The run going now checks this very version: it answers this trigger too. (Not a changed
            # dependency - the run measured the old one - and not a gate, which decides a promotion.)
            return True
        pending = absorb(row.pending or [], entry)
        due = min(int(p["due_at_ms"]) for p in pending)
        if c.suites.update(row, [SuiteRow.pending.set(pending), SuiteRow.due_flag.set(FLAG),
                                 SuiteRow.due_at_ms.set(due)], stamp=_stamp(c)):
            break
        _backoff()
        fresh = c.suites.get(row.org_id, row.agent_id, row.suite_id)
        if fresh is None:
            return False
        row = fresh
    else:
        raise ConflictError(f"suite {row.suite_id} keeps changing: try again", field="suite_id")
    advance(c, row.org_id, row.agent_id, row.suite_id)
    return True


def run_now(c: Container, who: Identity, agent_id: str, suite_id: str) -> dict[str, Any]:
    """Run a suite by hand, as whoever asks. A paused suite is refused (409) and nothing is created."""
    row = get(c, who, agent_id, suite_id)
    if row.paused:
        raise ConflictError(f"suite {suite_id} is paused ({row.paused_reason}): resume it first", field="suite_id")
    trigger(c, row, TriggerKind.MANUAL, version=None, by=who.user_id)
    return view(c.suites.get(who.org_id, agent_id, suite_id))


def on_published(c: Container, org_id: str, agent_id: str, version: int) -> None:
    """A version was published: every suite on publish checks it beside the version before. Each
    version is taken once per suite (a redelivered publish event finds it taken)."""
    for row in c.suites.of_agent(org_id, agent_id):
        if row.org_id != org_id or not (row.triggers or {}).get("on_publish") or row.paused:
            continue
        try:
            for _ in range(50):
                seen = list(row.published_seen or [])
                if version in seen:
                    break
                if c.suites.update(row, [SuiteRow.published_seen.set((seen + [version])[-200:])], stamp=_stamp(c)):
                    fresh = c.suites.get(org_id, agent_id, row.suite_id)
                    if fresh is not None:
                        trigger(c, fresh, TriggerKind.PUBLISH, version=version,
                                baseline_version=version - 1 if version > 1 else None)
                    break
                _backoff()
                row = c.suites.get(org_id, agent_id, row.suite_id) or row
        except AssayError as exc:   # the publish stands; the suite says why it did not start
            log.error("suite %s could not take the publish of version %s: %s", row.suite_id, version, exc.message)


def _backoff() -> None:
    """A short random pause before retrying a write another worker won (spreads a burst)."""
    time.sleep(random.uniform(0.002, 0.02))  # noqa: S311 - jitter, not security


def on_promoted(c: Container, org_id: str, agent_id: str, environment_id: str, version: int,
                replaced: int | None) -> None:
    """A version was promoted onto an environment: its suites on promotion check it against the
    version it replaced (guards ran before; they are not asked again)."""
    for row in c.suites.of_agent(org_id, agent_id):
        if row.org_id != org_id or row.guards or not (row.triggers or {}).get("on_promotion") or row.paused:
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
        if row.org_id != org_id or not (row.triggers or {}).get("on_dependency_change") or row.paused:
            continue
        checked = _version_to_check(c, row)
        if version is not None and checked != version:
            continue
        taken += trigger(c, row, TriggerKind.DEPENDENCY, version=checked,
                         delay_s=c.settings.eval_suite_dependency_debounce_seconds)
    return taken


# --- starting --------------------------------------------------------------------------------


def _last_result(c: Container, row: SuiteRow, version: int) -> tuple[SuiteResultRow | None, SuiteResultRow | None]:
    """(the last good result of `version` - passed, or the baseline a first measurement set - and
    the last result of `version`)."""
    last_pass = last = None
    for result in c.suites.results(row.org_id, row.agent_id, row.suite_id, 200):
        if result.version != version or result.result == SuiteResult.NOT_RUN:
            continue
        last = last or result
        if result.result in (SuiteResult.PASSED, SuiteResult.BASELINE_SET) and result.run_id:
            # Only a run that is still there, over the dataset the suite checks now, can stand in.
            run = c.runs.get(row.org_id, result.run_id)
            if run is not None and run.dataset_id == row.dataset_id and run.status == RunStatus.COMPLETED:
                last_pass = result
                break
    return last_pass, last


def _plan(c: Container, who: Identity, row: SuiteRow, entry: dict[str, Any]) -> tuple[Any, dict[str, Any]]:
    """Plan and price the run a trigger asks for, with the baseline the seed gives it (seed 004
    "What a result must meet"): publish, promotion and gate run their baseline in the same run;
    schedule, dependency and by-hand runs compare with the suite's last passing run of the same
    version, or - after a result that could not be compared - run the version before beside it;
    past `max_run_usd` the candidate runs alone against the last comparable run of the version
    before, else on its own numbers. Returns (plan, price) with `price["note"]` when it says so.
    """
    version = int(entry["version"])
    pins = row.pins if row.guards else None
    body: dict[str, Any] = {"dataset_id": row.dataset_id, "candidate": "version", "version": version,
                            "dataset_version": (pins or {}).get("dataset_version") or row.dataset_version,
                            "environment_id": environments.resolve(c, row.org_id, row.environment_id).environment_id}
    judge_version = (pins or {}).get("judge_version")
    kind = entry["kind"]
    paired_with: int | None = None
    if kind in (TriggerKind.PUBLISH, TriggerKind.PROMOTION, TriggerKind.GATE):
        paired_with = entry.get("baseline_version")
    else:
        last_pass, last = _last_result(c, row, version)
        invalid = last is not None and "comparison is invalid" in " ".join(last.reasons or [])
        if invalid or last_pass is None:
            paired_with = version - 1 if invalid and version > 1 else None
        if last_pass is not None and not invalid:
            body["baseline_run_id"] = last_pass.run_id
    cap = row.max_run_usd_micros
    note = None
    if paired_with is not None and paired_with >= 1 and paired_with != version:
        plan = runs.plan_run(c, who, row.agent_id, {**body, "paired_baseline": True}, baseline_version=paired_with,
                             default_baseline=False, judge_version=judge_version)
        priced = estimates.price(c, who, plan)
        if cap is None or int(priced["total_micros"]) <= int(cap):
            return plan, priced
        # Both would cross the cap: the candidate alone, against the last comparable run if any.
        plan = runs.plan_run(c, who, row.agent_id, body, judge_version=judge_version)
        if not any(a["role"] == ArmRole.BASELINE for a in plan.arms):
            note = NOT_COMPARED_CAP
    else:
        plan = runs.plan_run(c, who, row.agent_id, body, default_baseline=False, judge_version=judge_version)
    priced = estimates.price(c, who, plan)
    priced["note"] = note
    return plan, priced


def advance(c: Container, org_id: str, agent_id: str, suite_id: str) -> str | None:
    """Start the organization's suite's next due trigger unless a run is going or it is paused.
    Returns the run started (None when nothing started). A trigger that cannot run becomes a
    `not_run` result and the next one is tried."""
    for _ in range(20):
        row = c.suites.get(org_id, agent_id, suite_id)
        now_ms = epoch_ms(c.clock.now())
        if row is None or row.paused or row.active_run_id:
            return None
        pending = list(row.pending or [])
        due = [p for p in pending if int(p["due_at_ms"]) <= now_ms]
        if not due:
            if not pending and row.due_flag:
                c.suites.update(row, [SuiteRow.due_flag.remove(), SuiteRow.due_at_ms.remove()], stamp=_stamp(c))
            return None
        entry = due[0]
        rest = [p for p in pending if p is not entry]
        # The tick looks again after STALE_START_MS, so a start that dies half-way is retried.
        actions = [SuiteRow.pending.set(rest), SuiteRow.active_run_id.set(STARTING),
                   SuiteRow.active_trigger.set({**entry, "claimed_at_ms": now_ms}), SuiteRow.due_flag.set(FLAG),
                   SuiteRow.due_at_ms.set(min([now_ms + STALE_START_MS, *(int(p["due_at_ms"]) for p in rest)]))]
        if not c.suites.update(row, actions, stamp=_stamp(c)):
            continue
        claimed = c.suites.get(org_id, agent_id, suite_id)
        run_id = _start(c, claimed, entry) if claimed is not None else None
        if run_id is not None:
            return run_id
    return None


def _start(c: Container, row: SuiteRow, entry: dict[str, Any]) -> str | None:
    """Start the run of a claimed trigger, or record why it does not run. Returns the run id."""
    who = Identity(row.org_id, str(entry["by"]) if entry["kind"] == TriggerKind.MANUAL and entry.get("by") else row.owner)
    version = entry.get("version")
    if version is None:
        version = _version_to_check(c, row)
    entry = {**entry, "version": version}
    started = iso(c.clock.now())
    try:
        if version is None:
            raise InvalidInputError("its environment serves no published version of the agent to check",
                                    field="environment_id")
        plan, priced = _plan(c, who, row, entry)
        cap = row.max_run_usd_micros
        if cap is not None and int(priced["total_micros"]) > int(cap):
            raise BudgetExceededError(f"the run could cost up to ${priced['total_usd']}, more than the suite's "
                                      f"max_run_usd (${micros_to_usd(int(cap))})", field="max_run_usd")
        purpose = RunPurpose.GATE if entry["kind"] == TriggerKind.GATE else RunPurpose.SUITE
        run, _ = runs.start_run(c, who, row.agent_id, {}, planned=(plan, priced), purpose=str(purpose),
                                extra_settings={"suite_id": row.suite_id, "suite_created_at": row.created_at,
                                                "suite_trigger": _trigger_view(entry),
                                                "suite_note": priced.get("note")})
    except AssayError as exc:
        _record(c, row, entry, None, Judgement(SuiteResult.NOT_RUN, [exc.message]), started=started)
        _release(c, row, STARTING)
        return None
    for _ in range(20):
        fresh = c.suites.get(row.org_id, row.agent_id, row.suite_id)
        if fresh is None or fresh.active_run_id != STARTING:
            break
        if c.suites.update(fresh, [SuiteRow.active_run_id.set(run.run_id),
                                   SuiteRow.active_trigger.set({**_trigger_view(entry), "run_id": run.run_id})],
                           stamp=_stamp(c)):
            break
    ended = c.runs.get(row.org_id, run.run_id)
    if ended is not None and RunStatus(ended.status).ended:
        # It ended before the suite named it as its run (a small run is quick): finish now.
        run_ended(c, row.org_id, run.run_id)
    return run.run_id


def _trigger_view(entry: dict[str, Any]) -> dict[str, Any]:
    return {k: entry.get(k) for k in ("kind", "kinds", "version", "baseline_version", "promotion_id", "by", "at")}


def _release(c: Container, row: SuiteRow, active: str) -> None:
    """Give up the suite's one-run claim (conditional on it being `active`)."""
    for _ in range(20):
        fresh = c.suites.get(row.org_id, row.agent_id, row.suite_id)
        if fresh is None or fresh.active_run_id != active:
            return
        if c.suites.update(fresh, [SuiteRow.active_run_id.remove(), SuiteRow.active_trigger.remove()],
                           stamp=_stamp(c)):
            return


# --- results ---------------------------------------------------------------------------------


def facts_of(c: Container, run: RunRow) -> RunFacts:
    """What a finished run says about its first candidate, for the suite's threshold."""
    attempts = finalize.all_attempts(c, run)
    summaries = finalize.summarize(run, attempts)
    cand = next(a["arm_id"] for a in run.arms if a["role"] == ArmRole.CANDIDATE)
    summary = summaries[cand]
    by_case = finalize.by_case(run, attempts, cand)
    settled = {cid: settle(a.state for a in by_case.get(cid, [])) for cid in run.case_ids}
    undecided = [cid for cid, state in settled.items() if state in (AttemptState.INCOMPLETE, AttemptState.UNGRADED)]
    failed_cases = [cid for cid, state in settled.items() if state is AttemptState.FAILED]
    crashes = [r.case_id for r in attempts if r.arm_id == cand and int(r.attempt) == 1 and r.crash]
    comparison = (run.outcome or {}).get("comparison") if run.status == RunStatus.COMPLETED else None
    if comparison is None and any(a["role"] == ArmRole.BASELINE for a in run.arms):
        comparison = finalize.comparison_of(c, run, attempts)
    base = next((a["arm_id"] for a in run.arms if a["role"] == ArmRole.BASELINE), None)
    base_summary = summaries.get(base) if base else None
    regressions = [f["case_id"] for f in (comparison or {}).get("flips", [])
                   if f.get("outcome") == "regression" and f.get("confirmed")]
    counts = (comparison or {}).get("counts") or {}
    if comparison is not None and not any(counts.get(k) for k in ("regression", "fixed", "unchanged", "incomplete")):
        comparison = None   # no case in common with the baseline: nothing was compared
    return RunFacts(
        status=run.status, total=summary.cases, passed=summary.passed, undecided=undecided,
        failed_cases=failed_cases,
        first_crashes=sorted(set(crashes), key=run.case_ids.index), compared=comparison is not None,
        invalid_reason=(comparison or {}).get("invalid_reason"), confirmed_regressions=regressions,
        overall=(comparison or {}).get("overall"),
        cost_per_pass_micros=(summary.cost_micros // summary.passed if summary.passed else None,
                              (base_summary.cost_micros // base_summary.passed) if base_summary and base_summary.passed
                              else None),
        p95_latency_ms=(summary.latency_p95_ms, base_summary.latency_p95_ms if base_summary else None),
        could_not_run="; ".join(f"{k}: {v}" for k, v in ((comparison or {}).get("could_not_run") or {}).items()) or None,
        reason=run.reason, note=(run.settings or {}).get("suite_note"))


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
    if row is None or row.created_at != (run.settings or {}).get("suite_created_at", row.created_at):
        # The suite that started it is gone (a new one may have its id): nobody's result; a gate's
        # promotion cannot be decided by it.
        if entry.get("kind") == TriggerKind.GATE and entry.get("promotion_id"):
            messagebus.publish(c, GateDropped(org_id, run.agent_id, entry["promotion_id"],
                                              f"guard {suite_id} was removed before it decided"))
        return
    try:
        judgement = judge(Threshold.model_validate(row.threshold or {}), facts_of(c, run))
        _record(c, row, entry, run, judgement, started=run.created_at)
    finally:
        # Whatever became of the result, the suite is free for what waits next.
        _release(c, row, run_id)
        advance(c, row.org_id, row.agent_id, row.suite_id)


def _record(c: Container, row: SuiteRow, entry: dict[str, Any], run: RunRow | None, judgement: Judgement, *,
            started: str) -> None:
    """Keep a result (once per run), tell the owner when it is bad, and decide a gate's promotion."""
    result_id = run.run_id if run is not None else f"nr_{uuid.uuid4().hex[:12]}"
    if run is not None and c.suites.result_of_run(row.org_id, row.agent_id, row.suite_id, run.run_id) is not None:
        return
    version = entry.get("version")
    result = SuiteResultRow(
        suite_id=row.suite_id, started_key=f"{started}#{result_id}", result_id=result_id, org_id=row.org_id, agent_id=row.agent_id,
        trigger=_trigger_view(entry), version=version, run_id=run.run_id if run else None,
        purpose=(RunPurpose.GATE if entry.get("kind") == TriggerKind.GATE else RunPurpose.SUITE).value,
        result=judgement.result.value,
        reasons=redacting.for_org(c, row.org_id).value(list(judgement.reasons)), cases_broken=judgement.broken,
        cases_undecided=judgement.undecided,
        overall=judgement.overall, started_at=started, completed_at=iso(c.clock.now()))
    if not c.suites.add_result(result):
        return
    fresh = c.suites.get(row.org_id, row.agent_id, row.suite_id) or row
    notify = False
    key = str(version)
    for _ in range(20):
        told = dict(fresh.notified or {})
        notify = judgement.result.bad and not told.get(key)
        told[key] = judgement.result.bad   # a good result ends the run of bad ones: the next bad one tells again
        if c.suites.update(fresh, [SuiteRow.notified.set(told), SuiteRow.last_result.set(
                {"result": judgement.result.value, "result_id": result_id, "run_id": result.run_id, "version": version,
                 "at": result.completed_at})], stamp=_stamp(c)):
            break
        fresh = c.suites.get(row.org_id, row.agent_id, row.suite_id) or fresh
    if notify:
        notifications.suite_result(c, fresh, result)
    if entry.get("kind") == TriggerKind.GATE and entry.get("promotion_id"):
        messagebus.publish(c, GateDecided(row.org_id, row.agent_id, entry["promotion_id"], row.suite_id,
                                          str(result.result), result.run_id, tuple(result.reasons or ())))


def results(c: Container, who: Identity, agent_id: str, suite_id: str, limit: int = 50) -> list[dict[str, Any]]:
    get(c, who, agent_id, suite_id)
    return [result_view(r) for r in c.suites.results(who.org_id, agent_id, suite_id, limit)]


# --- the tick --------------------------------------------------------------------------------


def tick(c: Container) -> dict[str, int]:
    """Every minute: fire due schedules (a fire missed while nothing ran runs once; one while paused
    never runs), start due waiting triggers, and clear starts that died. Returns counts."""
    now = c.clock.now()
    now_ms = epoch_ms(now)
    fired = started = cleared = 0
    for row in c.suites.due_to_fire(now_ms):
        nxt = _next_fire_ms(row.triggers, now)
        if nxt is None or row.next_fire_at_ms is None or int(row.next_fire_at_ms) > now_ms:
            continue
        # Claim this fire by moving next_fire past now: every fire missed so far collapses into one.
        if not c.suites.update(row, [SuiteRow.next_fire_at_ms.set(nxt)], stamp=_stamp(c)):
            continue
        fresh = c.suites.get(row.org_id, row.agent_id, row.suite_id)
        if fresh is not None and not fresh.paused:
            fired += trigger(c, fresh, TriggerKind.SCHEDULE, version=None)
    for row in c.suites.due_to_start(now_ms):
        if row.active_run_id == STARTING and int((row.active_trigger or {}).get("claimed_at_ms") or 0) \
                <= now_ms - STALE_START_MS:
            # The start died before it wrote a run: put its trigger back and try again.
            dead = {k: v for k, v in (row.active_trigger or {}).items() if k != "claimed_at_ms"}
            _release(c, row, STARTING)
            fresh = c.suites.get(row.org_id, row.agent_id, row.suite_id)
            if fresh is not None and dead:
                trigger(c, fresh, dead.get("kind", TriggerKind.MANUAL), version=dead.get("version"), by=dead.get("by"),
                        baseline_version=dead.get("baseline_version"), promotion_id=dead.get("promotion_id"))
            cleared += 1
        if advance(c, row.org_id, row.agent_id, row.suite_id):
            started += 1
    return {"fired": fired, "started": started, "cleared": cleared}
