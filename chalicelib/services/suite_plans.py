"""Planning and pricing a suite's eval runs (docs/guides/suites.md): the run a trigger asks for,
with the baseline its trigger gives it, and what saving a suite agrees to spend.
"""

from __future__ import annotations

from dataclasses import dataclass, replace
from typing import Any

from chalicelib.bootstrap import Container
from chalicelib.domain import schedule
from chalicelib.domain.enums import (
    ArmRole,
    RunStatus,
    TriggerKind,
)
from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Suite, SuiteResultEntry
from chalicelib.domain.suite_rules import (
    SuiteResult,
    grading_changed_since,
)
from chalicelib.errors import (
    AssayError,
    NotFoundError,
)
from chalicelib.services import (
    environments,
    estimates,
    runs,
)
from chalicelib.services.planning import Plan

NOT_COMPARED_CAP = (
    "Not compared: running the earlier version too would exceed the suite's cost cap."
)


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
        version = version_to_check(c, row) or int(
            c.agents.get(row.org_id, row.agent_id).latest_version or 0
        )
        if not version:
            return SuitePrice(
                runs_per_30_days=runs, note="the agent has no published version to check yet"
            )
        _, priced = plan_trigger(c, who, row, {"kind": str(TriggerKind.MANUAL), "version": version})
    except AssayError as exc:
        return SuitePrice(runs_per_30_days=runs, note=f"cannot price a run: {exc.message}")
    one_run = priced.total_micros
    return SuitePrice(
        one_run_micros=one_run,
        runs_per_30_days=runs,
        month_micros=one_run * runs,
        basis=str(priced.estimate.basis),
    )


def version_to_check(c: Container, row: Suite) -> int | None:
    try:
        return environments.served(c, row.org_id, row.environment_id, row.agent_id)
    except NotFoundError:
        return None


def _last_good(
    c: Container, row: Suite, version: int
) -> tuple[SuiteResultEntry | None, list[SuiteResultEntry]]:
    """(the last good result of `version` - passed, or the baseline a first measurement set - and
    the results of `version` newer than it, newest first; results that did not run are left out)."""
    newer: list[SuiteResultEntry] = []
    for result in c.suites.results(row.org_id, row.agent_id, row.suite_id, 200):
        if result.version != version or result.result == SuiteResult.NOT_RUN:
            continue
        if result.result in (SuiteResult.PASSED, SuiteResult.BASELINE_SET) and result.run_id:
            # Only a run that is still there, over the dataset the suite checks now, can stand in.
            run = c.runs.get(row.org_id, result.run_id)
            if (
                run is not None
                and run.dataset_id == row.dataset_id
                and run.status == RunStatus.COMPLETED
            ):
                return result, newer
        newer.append(result)
    return None, newer


def plan_trigger(
    c: Container, who: Identity, row: Suite, entry: dict[str, Any]
) -> tuple[Plan, estimates.Price]:
    """Plan and price the run a trigger asks for, with the baseline its trigger gives it
    (docs/guides/suites.md): publish, promotion and gate run their baseline in the same run;
    schedule, dependency and by-hand runs compare with the suite's last passing run of the same
    version, or - after a result that could not be compared - run the version before beside it;
    past `max_run_usd` the candidate runs alone against the last comparable run of the version
    before, else on its own numbers. Returns (plan, price) with `price["note"]` when it says so.

    A guard grades with the judge publication it is pinned to, never another: when that one is
    missing it raises NotFoundError (field `pins.judge_version`) saying so, and the suite does not
    run. Raises what `runs.plan_run` raises otherwise.
    """
    pins = row.pins if row.guards else None
    try:
        return _plan_trigger(c, who, row, entry)
    except NotFoundError as exc:
        pinned = (pins or {}).get("judge_version")
        if pinned is None or exc.field != f"{PINNED_JUDGE_FIELD}.version":
            raise
        judge_id = (pins or {}).get("judge_id")
        named = f"{judge_id} version {pinned}" if judge_id else f"version {pinned}"
        raise NotFoundError(
            f"the judge it is pinned to, {named}, is "
            "missing: a guard never grades with another publication of it; moving its pins "
            "(needs promotions:override) grades with the latest",
            field="pins.judge_version",
        ) from None


PINNED_JUDGE_FIELD = "scoring.settings.judge"
"""The field `judges.resolve` names for the judge a run's scoring names."""


def _plan_trigger(
    c: Container, who: Identity, row: Suite, entry: dict[str, Any]
) -> tuple[Plan, estimates.Price]:
    """`plan_trigger` without its account of a missing pinned judge."""
    version = int(entry["version"])
    pins = row.pins if row.guards else None
    body: dict[str, Any] = {
        "dataset_id": row.dataset_id,
        "candidate": "version",
        "version": version,
        "dataset_version": (pins or {}).get("dataset_version") or row.dataset_version,
        "environment_id": environments.resolve(c, row.org_id, row.environment_id).environment_id,
        **(row.replay or {}),  # how its runs answer tool calls from a recording, checked again
    }
    judge_version = (pins or {}).get("judge_version")
    kind = entry["kind"]
    paired_with: int | None = None
    if kind in (TriggerKind.PUBLISH, TriggerKind.PROMOTION, TriggerKind.GATE):
        paired_with = entry.get("baseline_version")
    else:
        last_pass, newer = _last_good(c, row, version)
        # A result since could not be compared with it - the grading changed - so this one runs
        # the version before beside it, graded the way it is now, instead of comparing again.
        invalid = grading_changed_since(newer)
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
