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
import uuid
from collections.abc import Callable
from dataclasses import dataclass, replace
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain import access, schedule
from chalicelib.domain.enums import (
    ArmRole,
    AttemptState,
    CaseOutcome,
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
from chalicelib.domain.records import Run, Suite, SuiteResultEntry
from chalicelib.domain.run_rules import settle
from chalicelib.domain.spec import spec_hash
from chalicelib.domain.suite_rules import (
    RunFacts,
    SuiteDecision,
    SuiteResult,
    Threshold,
    Triggers,
    absorb,
    decide_result,
)
from chalicelib.errors import (
    AssayError,
    BudgetExceededError,
    ConflictError,
    InvalidInputError,
    NotFoundError,
    invalid_input,
)
from chalicelib.retrying import TRIES, Changed, change
from chalicelib.services import access as access_service
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
from chalicelib.services.planning import Plan

log = logging.getLogger(__name__)


def _change_suite(
    c: Container,
    org_id: str,
    agent_id: str,
    suite_id: str,
    decide: Callable[[Suite], Suite | None],
    *,
    tries: int = TRIES,
) -> Changed[Suite] | None:
    """`retrying.change` of one suite: read it, `decide` (the suite as it should be, with a new
    stamp; None when nothing changes), `replace` it as read, again while another writer wins.

    Returns None when the suite does not exist. Raises ConflictError after `tries` lost writes.
    """
    return change(
        lambda: c.suites.get(org_id, agent_id, suite_id),
        decide,
        c.suites.replace,
        conflict=f"suite {suite_id} keeps changing: try again",
        field="suite_id",
        tries=tries,
    )


STARTING = "starting"
"""`active_run_id` while a run is being started; a start that died leaves it, and the tick clears
it after `STALE_START_MS`."""
STALE_START_MS = 5 * 60_000
NOT_COMPARED_CAP = (
    "Not compared: running the earlier version too would exceed the suite's cost cap."
)


# --- reading ---------------------------------------------------------------------------------


OWNER_LOST = "its owner "
"""How the reason of a suite paused for its owner starts: a save by somebody who may run it takes
it over and resumes it."""


def _check_saver(who: Identity, dataset_id: str, what: str) -> None:
    """What saving, changing, pausing or running a suite needs beyond the route's agent checks
    (docs/reference/access.md), in its order: `datasets:run` on its dataset, `runs:view`, and a
    person signed in as themselves - a suite spends as whoever saves it. Raises ForbiddenError, or
    NotFoundError for a dataset the caller may not see."""
    who.require_on(access.DATASETS_RUN, "dataset", dataset_id, what)
    who.require(access.RUNS_VIEW, what)
    who.require_person(what)


def owner_refusal(who: Identity, row: Suite) -> str | None:
    """Why the suite's owner (`who`, resolved now) cannot run it, None when they can: a suite runs
    with its owner's authority as it is when the run starts (docs/reference/access.md)."""
    if not who.member:
        return f"{OWNER_LOST}{row.owner} is no longer a member of the organization"
    needed = (
        (access.RUNS_VIEW, None),
        (access.AGENTS_EDIT, access.agent(row.agent_id)),
        (access.AGENTS_RUN, access.agent(row.agent_id)),
        (access.DATASETS_RUN, access.dataset(row.dataset_id)),
    )
    missing = who.first_missing(needed)
    return f"{OWNER_LOST}{row.owner} can no longer run it (no {missing})" if missing else None


def get(c: Container, who: Identity, agent_id: str, suite_id: str) -> Suite:
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
            out["threshold"] = Threshold.model_validate(body.get("threshold") or {}).model_dump(
                mode="json"
            )
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
                raise InvalidInputError(
                    str(exc),
                    field="triggers.schedule.cron"
                    if str(exc).startswith("cron")
                    else "triggers.schedule.timezone",
                ) from None
        out["triggers"] = triggers.model_dump(mode="json")
    if "max_run_usd" in body:
        out["max_run_usd_micros"] = budgets.parse_usd(body["max_run_usd"], "max_run_usd")
    return out


def _next_fire_ms(triggers: dict[str, Any] | None, now: datetime) -> int | None:
    """When a suite's schedule fires next after `now` (epoch ms), None without a schedule."""
    sched = (triggers or {}).get("schedule")
    return epoch_ms(schedule.next_fire(sched["cron"], sched["timezone"], now)) if sched else None


def _pins(
    c: Container, who: Identity, dataset_id: str, dataset_version: int | None
) -> dict[str, Any]:
    """What a guard is pinned to: the dataset version, its scoring and the judge publication now."""
    version = dataset_service.resolve_version(c, who, dataset_id, dataset_version)
    judge = judges.of_scoring(c, who.org_id, version.scoring)
    return {
        "dataset_version": int(version.version),
        "scoring_hash": spec_hash(version.scoring),
        "judge_id": judge.judge_id if judge else None,
        "judge_version": judge.version if judge else None,
    }


def create(
    c: Container, who: Identity, agent_id: str, body: dict[str, Any]
) -> tuple[Suite, SuitePrice]:
    """Save a new suite; its saver owns it. Returns the suite and its price (one run, a month).

    A suite id is unique among the agent's suites in the organization only.
    Raises NotFoundError (agent, dataset, environment), InvalidInputError (threshold, triggers,
    max_run_usd, a dataset version that does not exist, a `suite_id` with `#` or `/`), ConflictError
    (the agent has a suite with that id).
    """
    if body.get("suite_id") is not None:
        check_tenant_id(body["suite_id"], "suite_id")
    _check_saver(who, body["dataset_id"], "saving a suite")
    c.agents.get(who.org_id, agent_id)
    parsed = _parse(body, partial=False)
    dataset = dataset_service.resolve_version(
        c, who, body["dataset_id"], body.get("dataset_version") or "latest"
    )
    env_id = body.get("environment_id")
    env = environments.resolve(c, who.org_id, env_id)
    now = c.clock.now()
    guards = bool(body.get("guards"))
    if guards:
        env_id = (
            env.environment_id
        )  # a guard guards this environment, whatever becomes the default later
    suite = Suite(
        agent_id=agent_id,
        suite_id=body.get("suite_id") or f"suite_{uuid.uuid4().hex[:12]}",
        org_id=who.org_id,
        name=body.get("name") or "",
        dataset_id=body["dataset_id"],
        dataset_version=body.get("dataset_version"),
        environment_id=env_id,
        threshold=parsed["threshold"],
        triggers=parsed["triggers"],
        max_run_usd_micros=parsed.get("max_run_usd_micros"),
        guards=guards,
        pins=_pins(c, who, dataset.dataset_id, body.get("dataset_version")) if guards else None,
        history=[{"at": iso(now), "by": who.user_id, "change": "created"}],
        owner=who.user_id,
        paused=False,
        pending=[],
        notified={},
        next_fire_at_ms=_next_fire_ms(parsed["triggers"], now),
        created_at=iso(now),
        updated_at=iso(now),
    )
    c.suites.create(suite)
    return suite, price(c, who, suite)


def _updated(
    c: Container, who: Identity, row: Suite, body: dict[str, Any], parsed: dict[str, Any]
) -> Suite:
    """The suite as `update` leaves it, given the suite as read (`update` says what it raises)."""
    now = c.clock.now()
    fields: dict[str, Any] = {}
    history = list(row.history or [])
    for key in ("name", "dataset_id"):
        if key in body and body[key] is None:
            raise InvalidInputError(f"{key} cannot be null", field=key)
        if key in body:
            fields[key] = body[key]
    if "environment_id" in body:  # null: the organization's default environment
        fields["environment_id"] = body["environment_id"]
        environments.resolve(c, who.org_id, body["environment_id"])
    if "dataset_version" in body:
        fields["dataset_version"] = body["dataset_version"]
    if "dataset_id" in body or "dataset_version" in body:
        dataset_service.resolve_version(
            c,
            who,
            body.get("dataset_id", row.dataset_id),
            body.get("dataset_version", row.dataset_version) or "latest",
        )
    for key in ("threshold", "triggers", "max_run_usd_micros"):
        if key in parsed:
            fields[key] = parsed[key]
    if "triggers" in parsed:
        fields["next_fire_at_ms"] = _next_fire_ms(parsed["triggers"], now)
    guards = bool(body.get("guards", row.guards))
    guarded = sorted(
        k
        for k in ("threshold", "environment_id", "dataset_id", "dataset_version", "max_run_usd")
        if k in body
    )
    if row.guards and guarded:
        # A guard's bar and what it checks decide promotions: changing them is an override.
        who.require("promotions:override", f"changing a guard's {', '.join(guarded)}")
    if guards and (not row.guards or "environment_id" in body):
        fields["environment_id"] = environments.resolve(
            c, who.org_id, body.get("environment_id", row.environment_id)
        ).environment_id
    dataset_id = body.get("dataset_id", row.dataset_id)
    new_pins = None
    if guards and (
        not row.guards or "dataset_version" in body or "dataset_id" in body or body.get("move_pins")
    ):
        new_pins = _pins(c, who, dataset_id, body.get("dataset_version", row.dataset_version))
        if row.guards and row.pins and new_pins != row.pins:
            who.require("promotions:override", "moving a guard's pins")
            history.append(
                {
                    "at": iso(now),
                    "by": who.user_id,
                    "change": "agent.environment_guards_changed",
                    "old": row.pins,
                    "new": new_pins,
                }
            )
    if "guards" in body:
        if row.guards and not guards:
            # Taking a guard off opens its environment to unchecked promotions.
            who.require("promotions:override", "taking a guard off its environment")
            history.append(
                {
                    "at": iso(now),
                    "by": who.user_id,
                    "change": "agent.environment_guards_changed",
                    "old": row.pins,
                    "new": None,
                }
            )
        fields["guards"] = guards
        if not guards:
            fields["pins"] = None
    if new_pins is not None:
        fields["pins"] = new_pins
    if row.owner != who.user_id:
        history.append(
            {
                "at": iso(now),
                "by": who.user_id,
                "change": "owner",
                "old": row.owner,
                "new": who.user_id,
            }
        )
        fields["notified"] = {}  # the new owner is told of bad results from now on
    history.append(
        {
            "at": iso(now),
            "by": who.user_id,
            "change": "updated",
            "fields": sorted(k for k in body if k != "move_pins"),
        }
    )
    if row.paused and (row.paused_reason or "").startswith(OWNER_LOST):
        fields.update(paused=False, paused_reason=None)  # saved again: the saver owns it now
    return _touch(c, row, **fields, owner=who.user_id, history=history[-100:])


def update(
    c: Container, who: Identity, agent_id: str, suite_id: str, body: dict[str, Any]
) -> tuple[Suite, SuitePrice]:
    """Change a suite; whoever changes it takes it over (the owner). Moving a guard's pins (its
    dataset version or judge version) needs `promotions:override` and is recorded.

    Raises ForbiddenError (403) for a pin move without the permission, ConflictError when the suite
    keeps changing under the change (10 lost writes), and what `create` raises.
    """
    row = get(c, who, agent_id, suite_id)
    _check_saver(who, row.dataset_id, "changing a suite")
    if body.get("dataset_id") and body["dataset_id"] != row.dataset_id:
        _check_saver(who, body["dataset_id"], "changing a suite")
    parsed = _parse(body, partial=True)
    changed = _change_suite(
        c, who.org_id, agent_id, suite_id, lambda row: _updated(c, who, row, body, parsed), tries=10
    )
    if changed is None:
        raise NotFoundError(f"suite {suite_id} not found", field="suite_id")
    if changed.before.guards and not changed.after.guards:
        messagebus.publish(
            c,
            GuardWithdrawn(
                who.org_id, agent_id, suite_id, f"guard {suite_id} was taken off before it decided"
            ),
        )
    fresh = c.suites.get(who.org_id, agent_id, suite_id) or changed.after
    return fresh, price(c, who, fresh)


def delete(c: Container, who: Identity, agent_id: str, suite_id: str) -> None:
    """Delete a suite and its results. Refused (409) while it guards an environment."""
    row = get(c, who, agent_id, suite_id)
    _check_saver(who, row.dataset_id, "deleting a suite")
    if row.guards:
        raise ConflictError(
            f"suite {suite_id} guards an environment: take it off there first (guards: false)",
            field="suite_id",
        )
    c.suites.delete(who.org_id, agent_id, suite_id)
    c.suites.delete_results(who.org_id, agent_id, suite_id)
    messagebus.publish(
        c,
        GuardWithdrawn(
            who.org_id, agent_id, suite_id, f"guard {suite_id} was deleted before it decided"
        ),
    )


def _stamp(c: Container) -> str:
    """A fresh `updated_at`: the time plus a nonce, so two writes in one millisecond still
    differ."""
    return f"{iso(c.clock.now())}#{uuid.uuid4().hex[:8]}"


def _touch(c: Container, suite: Suite, **changes: Any) -> Suite:
    """`suite` with `changes` and a fresh stamp (every write of a suite tells later writers)."""
    return replace(suite, **changes, updated_at=_stamp(c))


def on_environment_removed(c: Container, event: EnvironmentRemoved) -> None:
    """Pause every suite that ran in the removed environment (or in the default, when it was). A
    suite that keeps changing under the pause (10 lost writes) is logged and left running."""
    for suite in c.suites.of_org(event.org_id):
        if suite.environment_id == event.environment_id or (
            suite.environment_id is None and event.was_default
        ):
            try:
                pause(
                    c,
                    suite,
                    f"its environment {event.environment_id} was removed: "
                    "choose another to resume it",
                )
            except ConflictError:
                log.error(
                    "suite %s kept changing: not paused after its environment %s was removed",
                    suite.suite_id,
                    event.environment_id,
                )


def _waiting_gates(suite: Suite) -> list[dict[str, Any]]:
    """The suite's waiting triggers that check a waiting promotion's version."""
    return [
        p
        for p in suite.pending or []
        if p.get("kind") == TriggerKind.GATE and p.get("promotion_id")
    ]


def pause(c: Container, row: Suite, reason: str) -> None:
    """Pause a suite (idempotent); nothing waiting runs while it is paused, and a promotion waiting
    for its check is refused (a paused guard opens no gate: `GateDropped`).

    Raises ConflictError when the suite keeps changing under the pause (10 lost writes).
    """

    def paused(suite: Suite) -> Suite:
        return _touch(c, suite, paused=True, paused_reason=reason, pending=[], due_at_ms=None)

    changed = _change_suite(c, row.org_id, row.agent_id, row.suite_id, paused, tries=10)
    if changed is None:
        return
    for gate in _waiting_gates(changed.before):
        messagebus.publish(
            c,
            GateDropped(
                row.org_id,
                row.agent_id,
                gate["promotion_id"],
                f"guard {row.suite_id} was paused before it checked the version: {reason}",
            ),
        )


def set_paused(c: Container, who: Identity, agent_id: str, suite_id: str, paused: bool) -> Suite:
    """Pause or resume by hand. Resuming needs its environment to exist (409 otherwise); a suite
    that keeps changing under it (10 lost writes) is a 409 as well."""
    row = get(c, who, agent_id, suite_id)
    _check_saver(who, row.dataset_id, "pausing a suite" if paused else "resuming a suite")
    if paused:
        pause(c, row, f"paused by {who.user_id}")
    else:
        try:
            environments.resolve(c, who.org_id, row.environment_id)
        except NotFoundError:
            raise ConflictError(
                "its environment is gone: choose an environment (PATCH environment_id) to "
                "resume it",
                field="environment_id",
            ) from None
        _change_suite(
            c,
            who.org_id,
            agent_id,
            suite_id,
            lambda s: _touch(c, s, paused=False, paused_reason=None),
            tries=10,
        )
    return get(c, who, agent_id, suite_id)


# --- pricing ---------------------------------------------------------------------------------


@dataclass(frozen=True)
class SuitePrice:
    """What saving a suite agrees to: one run of the version it would check now and a month of its
    schedule (`runs_per_30_days` runs), in micro-USD; None (with a `note` saying why) when no run
    could be priced. `basis` is the estimate's, once one was."""

    one_run_micros: int | None = None
    runs_per_30_days: int = 0
    month_micros: int | None = None
    note: str | None = None
    basis: str | None = None


def price(c: Container, who: Identity, row: Suite) -> SuitePrice:
    """What saving agrees to: one run of the version it would check now, and a month of its schedule
    (`fires_per_30_days` runs), priced as the estimate prices a run."""
    runs = 0
    sched = (row.triggers or {}).get("schedule")
    if sched:
        runs = schedule.fires_per_30_days(sched["cron"], sched["timezone"], c.clock.now())
    try:
        version = _version_to_check(c, row) or int(
            c.agents.get(row.org_id, row.agent_id).latest_version or 0
        )
        if not version:
            return SuitePrice(
                runs_per_30_days=runs, note="the agent has no published version to check yet"
            )
        _, priced = _plan(c, who, row, {"kind": str(TriggerKind.MANUAL), "version": version})
    except AssayError as exc:
        return SuitePrice(runs_per_30_days=runs, note=f"cannot price a run: {exc.message}")
    one_run = priced.total_micros
    return SuitePrice(
        one_run_micros=one_run,
        runs_per_30_days=runs,
        month_micros=one_run * runs,
        basis=str(priced.estimate.basis),
    )


# --- triggers --------------------------------------------------------------------------------


def _version_to_check(c: Container, row: Suite) -> int | None:
    try:
        return environments.served(c, row.org_id, row.environment_id, row.agent_id)
    except NotFoundError:
        return None


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
    return _touch(c, suite, pending=pending, due_at_ms=min(int(p["due_at_ms"]) for p in pending))


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
    changed = _change_suite(
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
    _check_saver(who, row.dataset_id, "running a suite")
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
    return _touch(c, suite, published_seen=(seen + [version])[-200:])


def on_published(c: Container, org_id: str, agent_id: str, version: int) -> None:
    """A version was published: every suite on publish checks it beside the version before. Each
    version is taken once per suite (a redelivered publish event finds it taken). A suite that
    cannot take it (it keeps changing, its trigger fails) is logged; the publish stands."""
    for row in c.suites.of_agent(org_id, agent_id):
        if row.org_id != org_id or not (row.triggers or {}).get("on_publish") or row.paused:
            continue
        try:
            changed = _change_suite(
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
        checked = _version_to_check(c, row)
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


def _last_result(
    c: Container, row: Suite, version: int
) -> tuple[SuiteResultEntry | None, SuiteResultEntry | None]:
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
            if (
                run is not None
                and run.dataset_id == row.dataset_id
                and run.status == RunStatus.COMPLETED
            ):
                last_pass = result
                break
    return last_pass, last


def _plan(
    c: Container, who: Identity, row: Suite, entry: dict[str, Any]
) -> tuple[Plan, estimates.Price]:
    """Plan and price the run a trigger asks for, with the baseline its trigger gives it
    (docs/guides/suites.md): publish, promotion and gate run their baseline in the same run;
    schedule, dependency and by-hand runs compare with the suite's last passing run of the same
    version, or - after a result that could not be compared - run the version before beside it;
    past `max_run_usd` the candidate runs alone against the last comparable run of the version
    before, else on its own numbers. Returns (plan, price) with `price["note"]` when it says so.
    """
    version = int(entry["version"])
    pins = row.pins if row.guards else None
    body: dict[str, Any] = {
        "dataset_id": row.dataset_id,
        "candidate": "version",
        "version": version,
        "dataset_version": (pins or {}).get("dataset_version") or row.dataset_version,
        "environment_id": environments.resolve(c, row.org_id, row.environment_id).environment_id,
    }
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
        plan = runs.plan_run(
            c,
            who,
            row.agent_id,
            {**body, "paired_baseline": True},
            baseline_version=paired_with,
            default_baseline=False,
            judge_version=judge_version,
        )
        priced = estimates.price(c, who, plan)
        if cap is None or priced.total_micros <= int(cap):
            return plan, priced
        # Both would cross the cap: the candidate alone, against the last comparable run if any.
        plan = runs.plan_run(c, who, row.agent_id, body, judge_version=judge_version)
        if not any(a.role is ArmRole.BASELINE for a in plan.arms):
            note = NOT_COMPARED_CAP
    else:
        plan = runs.plan_run(
            c, who, row.agent_id, body, default_baseline=False, judge_version=judge_version
        )
    return plan, replace(estimates.price(c, who, plan), note=note)


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
        return _touch(c, suite, due_at_ms=None) if nothing_waits else None
    entry = due[0]
    rest = [p for p in pending if p is not entry]
    # The tick looks again after STALE_START_MS, so a start that dies half-way is retried.
    return _touch(
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
        changed = _change_suite(c, org_id, agent_id, suite_id, lambda s: _claimed(c, s))
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
    return _touch(
        c, suite, active_run_id=run_id, active_trigger={**_kept_trigger(entry), "run_id": run_id}
    )


def _start(c: Container, row: Suite, entry: dict[str, Any]) -> str | None:
    """Start the run of a claimed trigger, or record why it does not run. Returns the run id."""
    # A suite runs as its owner; a run pressed by hand, as whoever pressed it (checked as they
    # asked). Either way with their authority as it is now.
    by = str(entry["by"]) if entry["kind"] == TriggerKind.MANUAL and entry.get("by") else None
    who = access_service.as_member(c, row.org_id, by or row.owner)
    refusal = owner_refusal(who, replace(row, owner=by) if by else row)
    if refusal is not None:
        _record(
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
        version = _version_to_check(c, row)
    entry = {**entry, "version": version}
    started = iso(c.clock.now())
    try:
        if version is None:
            raise InvalidInputError(
                "its environment serves no published version of the agent to check",
                field="environment_id",
            )
        plan, priced = _plan(c, who, row, entry)
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
                "suite_trigger": _kept_trigger(entry),
                "suite_note": priced.note,
            },
        )
    except AssayError as exc:
        _record(
            c, row, entry, None, SuiteDecision(SuiteResult.NOT_RUN, [exc.message]), started=started
        )
        _release(c, row, STARTING)
        return None
    try:
        _change_suite(
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


def _kept_trigger(entry: dict[str, Any]) -> dict[str, Any]:
    """A trigger as a run's settings, the suite's active trigger and a result keep it (stored data,
    not a response)."""
    return {
        k: entry.get(k)
        for k in ("kind", "kinds", "version", "baseline_version", "promotion_id", "by", "at")
    }


def _release(c: Container, row: Suite, active: str) -> None:
    """Give up the suite's one-run claim (conditional on it being `active`). A suite that keeps
    changing (20 lost writes) keeps the claim, logged (a stale start is cleared by the tick)."""

    def released(suite: Suite) -> Suite | None:
        if suite.active_run_id != active:
            return None
        return _touch(c, suite, active_run_id=None, active_trigger=None)

    try:
        _change_suite(c, row.org_id, row.agent_id, row.suite_id, released)
    except ConflictError:
        log.warning("suite %s kept changing: its claim %s was not given up", row.suite_id, active)


# --- results ---------------------------------------------------------------------------------


def facts_of(c: Container, run: Run) -> RunFacts:
    """What a finished run says about its first candidate, for the suite's threshold."""
    attempts = finalize.all_attempts(c, run)
    summaries = finalize.summarize(run, attempts)
    cand = next(a.arm_id for a in run.arms if a.role is ArmRole.CANDIDATE)
    summary = summaries[cand]
    by_case = finalize.by_case(run, attempts, cand)
    settled = {cid: settle(a.state for a in by_case.get(cid, [])) for cid in run.case_ids}
    undecided = [
        cid
        for cid, state in settled.items()
        if state in (AttemptState.INCOMPLETE, AttemptState.UNGRADED)
    ]
    failed_cases = [cid for cid, state in settled.items() if state is AttemptState.FAILED]
    crashes = [r.case_id for r in attempts if r.arm_id == cand and int(r.attempt) == 1 and r.crash]
    kept = run.outcome if run.status == RunStatus.COMPLETED else None
    comparison = kept.comparison if kept is not None else None
    if comparison is None and any(a.role is ArmRole.BASELINE for a in run.arms):
        comparison = finalize.comparison_of(c, run, attempts)
    base = next((a.arm_id for a in run.arms if a.role is ArmRole.BASELINE), None)
    base_summary = summaries.get(base) if base else None
    regressions = [
        f.case_id
        for f in (comparison.flips if comparison is not None else ())
        if f.outcome is CaseOutcome.REGRESSION and f.confirmed
    ]
    counts = comparison.counts if comparison is not None else {}
    compared = (
        CaseOutcome.REGRESSION,
        CaseOutcome.FIXED,
        CaseOutcome.UNCHANGED,
        CaseOutcome.INCOMPLETE,
    )
    if comparison is not None and not any(counts.get(k) for k in compared):
        comparison = None  # no case in common with the baseline: nothing was compared
    return RunFacts(
        status=run.status,
        total=summary.cases,
        passed=summary.passed,
        undecided=undecided,
        failed_cases=failed_cases,
        first_crashes=sorted(set(crashes), key=run.case_ids.index),
        compared=comparison is not None,
        invalid_reason=comparison.invalid_reason if comparison is not None else None,
        confirmed_regressions=regressions,
        overall=comparison.overall.value if comparison is not None and comparison.overall else None,
        cost_per_pass_micros=(
            summary.cost_micros // summary.passed if summary.passed else None,
            (base_summary.cost_micros // base_summary.passed)
            if base_summary and base_summary.passed
            else None,
        ),
        p95_latency_ms=(
            summary.latency_p95_ms,
            base_summary.latency_p95_ms if base_summary else None,
        ),
        could_not_run="; ".join(
            f"{k}: {v}"
            for k, v in (
                (comparison.could_not_run if comparison is not None else None) or {}
            ).items()
        )
        or None,
        reason=run.reason,
        note=(run.settings or {}).get("suite_note"),
    )


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
        _record(c, row, entry, run, decision, started=run.created_at)
    finally:
        # Whatever became of the result, the suite is free for what waits next.
        _release(c, row, run_id)
        advance(c, row.org_id, row.agent_id, row.suite_id)


def _told(
    c: Container, suite: Suite, version: int | None, result: SuiteResultEntry, bad: bool
) -> Suite:
    """The suite with its last result, and whether its owner was told of the bad results of
    `version` so far (a good result ends the run of bad ones: the next bad one tells again)."""
    last = {
        "result": result.result,
        "result_id": result.result_id,
        "run_id": result.run_id,
        "version": version,
        "at": result.completed_at,
    }
    return _touch(
        c, suite, notified={**(suite.notified or {}), str(version): bad}, last_result=last
    )


def _record(
    c: Container,
    row: Suite,
    entry: dict[str, Any],
    run: Run | None,
    decision: SuiteDecision,
    *,
    started: str,
) -> None:
    """Keep a result (once per run), tell the owner when it is bad (once per run of bad results of
    a version), and decide a gate's promotion (`GateDecided`)."""
    result_id = run.run_id if run is not None else f"nr_{uuid.uuid4().hex[:12]}"
    if (
        run is not None
        and c.suites.result_of_run(row.org_id, row.agent_id, row.suite_id, run.run_id) is not None
    ):
        return
    version = entry.get("version")
    purpose = RunPurpose.GATE if entry.get("kind") == TriggerKind.GATE else RunPurpose.SUITE
    result = SuiteResultEntry(
        suite_id=row.suite_id,
        started_key=f"{started}#{result_id}",
        result_id=result_id,
        org_id=row.org_id,
        agent_id=row.agent_id,
        trigger=_kept_trigger(entry),
        version=version,
        run_id=run.run_id if run else None,
        purpose=purpose.value,
        result=decision.result.value,
        reasons=redacting.for_org(c, row.org_id).value(list(decision.reasons)),
        cases_broken=decision.broken,
        cases_undecided=decision.undecided,
        overall=decision.overall,
        started_at=started,
        completed_at=iso(c.clock.now()),
    )
    if not c.suites.add_result(result):
        return
    bad = decision.result.bad
    try:
        changed = _change_suite(
            c, row.org_id, row.agent_id, row.suite_id, lambda s: _told(c, s, version, result, bad)
        )
        # As read before the write (or as the caller read it, when the suite is gone).
        told = changed.before if changed is not None else row
    except ConflictError:  # the result is kept; whether to tell goes by the suite as it is now
        log.warning(
            "suite %s kept changing: its last result and notices were not updated", row.suite_id
        )
        told = c.suites.get(row.org_id, row.agent_id, row.suite_id) or row
    if bad and not (told.notified or {}).get(str(version)):
        notifications.suite_result(c, told, result)
    if entry.get("kind") == TriggerKind.GATE and entry.get("promotion_id"):
        messagebus.publish(
            c,
            GateDecided(
                row.org_id,
                row.agent_id,
                entry["promotion_id"],
                row.suite_id,
                str(result.result),
                result.run_id,
                tuple(result.reasons or ()),
            ),
        )


def results(
    c: Container, who: Identity, agent_id: str, suite_id: str, limit: int = 50
) -> list[SuiteResultEntry]:
    """The suite's newest `limit` results, newest first. Raises NotFoundError for a suite or agent
    the organization does not have."""
    get(c, who, agent_id, suite_id)
    return c.suites.results(who.org_id, agent_id, suite_id, limit)


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
        if not c.suites.replace(row, _touch(c, row, next_fire_at_ms=nxt)):
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
