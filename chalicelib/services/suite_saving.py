"""Saving suites (docs/guides/suites.md): reading, saving, changing, deleting, pausing and
resuming them, each change a conditional write on the suite as read (`change_suite`, `touch`).
Running them is `services.suites`; planning and pricing their runs `services.suite_plans`.
"""

from __future__ import annotations

import logging
import uuid
from collections.abc import Callable
from dataclasses import replace
from datetime import datetime
from typing import Any

from pydantic import ValidationError

from chalicelib.bootstrap import Container
from chalicelib.clock import epoch_ms, iso
from chalicelib.domain import access, schedule
from chalicelib.domain.enums import (
    TriggerKind,
)
from chalicelib.domain.events import (
    EnvironmentRemoved,
    GateDropped,
    GuardWithdrawn,
)
from chalicelib.domain.identity import Identity
from chalicelib.domain.ids import check_tenant_id
from chalicelib.domain.records import Suite
from chalicelib.domain.spec import spec_hash
from chalicelib.domain.suite_rules import (
    Threshold,
    Triggers,
    name_key,
    name_taken,
    shown_name,
)
from chalicelib.errors import (
    ConflictError,
    InvalidInputError,
    NotFoundError,
    invalid_input,
)
from chalicelib.retrying import TRIES, Changed, change
from chalicelib.services import (
    budgets,
    environments,
    judges,
    messagebus,
    recordings,
)
from chalicelib.services import datasets as dataset_service
from chalicelib.services.suite_plans import SuitePrice, price

log = logging.getLogger(__name__)


def change_suite(
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


# --- reading ---------------------------------------------------------------------------------


OWNER_LOST = "its owner "
"""How the reason of a suite paused for its owner starts: a save by somebody who may run it takes
it over and resumes it."""


def check_name_free(c: Container, org_id: str, agent_id: str, suite_id: str, name: str) -> None:
    """Refuse a name another suite of the agent has (`suite_rules.name_key`), read from the
    agent's suites: this sees a suite saved before names were unique, which holds no reservation;
    the store's conditional write is what refuses two saves of one name at once.

    Raises:
        ConflictError: (409, field `name`) naming the suite that has it.
    """
    key = name_key(name)
    if not key:
        return
    for other in c.suites.of_agent(org_id, agent_id):
        if other.suite_id != suite_id and name_key(other.name) == key:
            raise name_taken(other.name, other.suite_id)


def check_saver(who: Identity, dataset_id: str, what: str) -> None:
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


def next_fire_ms(triggers: dict[str, Any] | None, now: datetime) -> int | None:
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


REPLAY_FIELDS = ("from_recordings", "recording_id", "live_reads")
"""The fields of a suite body that say how its runs answer tool calls from a recording."""


def _replay(c: Container, who: Identity, body: dict[str, Any]) -> dict[str, Any] | None:
    """What a suite keeps of the replay its body asks for (`recordings.replay_options` checks it):
    `{"from_recordings", "recording_id", "live_reads"}`, None when its runs answer no tool call
    from a recording and read nothing live. Raises what `replay_options` raises."""
    options = recordings.replay_options(c, who.org_id, body)
    if not options.from_recordings and not options.live_reads:
        return None
    return {
        "from_recordings": options.from_recordings,
        "recording_id": options.recording_id,
        "live_reads": options.live_reads,
    }


def create(
    c: Container, who: Identity, agent_id: str, body: dict[str, Any]
) -> tuple[Suite, SuitePrice]:
    """Save a new suite; its saver owns it. Returns the suite and its price (one run, a month).

    A suite id is unique among the agent's suites in the organization only.
    `from_recordings`, `recording_id` and `live_reads` say how its runs answer tool calls from a
    recording, as a start's do (docs/guides/tools.md).
    A suite's name is kept without the spaces at either end, and is unique among the agent's
    suites (`domain.suite_rules.name_key`: without case; a blank name is nobody's).
    Raises NotFoundError (agent, dataset, environment, `recording_id`), InvalidInputError
    (threshold, triggers, max_run_usd, a dataset version that does not exist, a `suite_id` with `#`
    or `/`, `recording_id` with or without `from_recordings`), ConflictError (the agent has a suite
    with that id, `suite_id`, or of that name, `name`).
    """
    if body.get("suite_id") is not None:
        check_tenant_id(body["suite_id"], "suite_id")
    check_saver(who, body["dataset_id"], "saving a suite")
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
    replay = _replay(c, who, body)
    suite_id = body.get("suite_id") or f"suite_{uuid.uuid4().hex[:12]}"
    check_name_free(c, who.org_id, agent_id, suite_id, body.get("name") or "")
    suite = Suite(
        agent_id=agent_id,
        suite_id=suite_id,
        org_id=who.org_id,
        name=shown_name(body.get("name") or ""),
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
        next_fire_at_ms=next_fire_ms(parsed["triggers"], now),
        replay=replay,
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
            fields[key] = shown_name(body[key]) if key == "name" else body[key]
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
        fields["next_fire_at_ms"] = next_fire_ms(parsed["triggers"], now)
    guards = bool(body.get("guards", row.guards))
    if any(k in body for k in REPLAY_FIELDS):
        kept = {k: v for k, v in (row.replay or {}).items() if k in REPLAY_FIELDS}
        asked = {**kept, **{k: body[k] for k in REPLAY_FIELDS if k in body}}
        if not asked.get("from_recordings") and "recording_id" not in body:
            asked.pop("recording_id", None)  # answering from recordings is turned off
        fields["replay"] = _replay(c, who, asked)
    guarded = sorted(
        k
        for k in (
            "threshold",
            "environment_id",
            "dataset_id",
            "dataset_version",
            "max_run_usd",
            *REPLAY_FIELDS,
        )
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
    return touch(c, row, **fields, owner=who.user_id, history=history[-100:])


def update(
    c: Container, who: Identity, agent_id: str, suite_id: str, body: dict[str, Any]
) -> tuple[Suite, SuitePrice]:
    """Change a suite; whoever changes it takes it over (the owner). Moving a guard's pins (its
    dataset version or judge version) needs `promotions:override` and is recorded.

    Raises ForbiddenError (403) for a pin move without the permission, ConflictError when the suite
    keeps changing under the change (10 lost writes), and what `create` raises.
    """
    row = get(c, who, agent_id, suite_id)
    check_saver(who, row.dataset_id, "changing a suite")
    if body.get("dataset_id") and body["dataset_id"] != row.dataset_id:
        check_saver(who, body["dataset_id"], "changing a suite")
    parsed = _parse(body, partial=True)
    if "name" in body and name_key(body["name"] or "") != name_key(row.name):
        check_name_free(c, who.org_id, agent_id, suite_id, body["name"] or "")
    changed = change_suite(
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
    check_saver(who, row.dataset_id, "deleting a suite")
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


def touch(c: Container, suite: Suite, **changes: Any) -> Suite:
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
        return touch(c, suite, paused=True, paused_reason=reason, pending=[], due_at_ms=None)

    changed = change_suite(c, row.org_id, row.agent_id, row.suite_id, paused, tries=10)
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
    check_saver(who, row.dataset_id, "pausing a suite" if paused else "resuming a suite")
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
        change_suite(
            c,
            who.org_id,
            agent_id,
            suite_id,
            lambda s: touch(c, s, paused=False, paused_reason=None),
            tries=10,
        )
    return get(c, who, agent_id, suite_id)
