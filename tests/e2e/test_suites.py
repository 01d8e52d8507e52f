"""Suites end to end: saving, every trigger against a fixed clock, one run at a time, results,
guarded promotions and owner notices (docs/guides/suites.md).

The one-minute tick is called by hand (`suites.tick`) with the clock the test sets; with pollers
paused (`frozen`) a started run stays queued, which is all a trigger test needs.
"""

from __future__ import annotations

import json
import urllib.request
from datetime import UTC, datetime
from typing import Any

import pytest

from chalicelib.services import agent_events, suites
from tests.e2e.conftest import Api, cases, sleepy_spec, wait_for
from tests.support.e2e import signed

CASES = cases(5)
ALL_PASS = {f"c{i:03d}": "42" for i in range(5)}


def answers(wrong: int) -> dict[str, str]:
    """The first `wrong` cases answered wrongly, the rest right."""
    return {f"c{i:03d}": ("41" if i < wrong else "42") for i in range(5)}


def agent_with_versions(api: Api, *wrongs: int) -> str:
    """An agent with one published version per entry, version n getting `wrongs[n-1]` cases
    wrong."""
    agent = api.agent(sleepy_spec(answers=answers(wrongs[0])))
    for i, wrong in enumerate(wrongs):
        if i:
            api.ok(
                "PUT",
                f"/api/v1/agents/{agent}/draft",
                json={"spec": sleepy_spec(answers=answers(wrong))},
            )
        api.ok("POST", f"/api/v1/agents/{agent}/versions")
    return agent


def environment(api: Api, agent: str, serving: int | None, env_id: str = "production") -> str:
    api.ok("POST", "/api/v1/environments", json={"environment_id": env_id})
    if serving is not None:
        api.ok(
            "POST",
            f"/api/v1/agents/{agent}/promotions",
            json={"environment_id": env_id, "version": serving},
        )
    return env_id


def suite(api: Api, agent: str, ds: str, **body: Any) -> dict[str, Any]:
    return api.ok("POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": ds, **body})


def suite_view(api: Api, agent: str, suite_id: str) -> dict[str, Any]:
    return api.ok("GET", f"/api/v1/agents/{agent}/suites/{suite_id}")


def results(api: Api, agent: str, suite_id: str) -> list[dict[str, Any]]:
    return api.ok("GET", f"/api/v1/agents/{agent}/suites/{suite_id}/results")["results"]


def runs_of(api: Api, agent: str) -> list[dict[str, Any]]:
    return api.ok("GET", f"/api/v1/agents/{agent}/eval-runs")["runs"]


@pytest.fixture(autouse=True)
def quiet_suites(api, container):
    """Pause this test's suites afterwards, so later ticks of the shared stack leave them alone."""
    yield
    for row in container.suites.of_org(api.org_id):
        suites.pause(container, row, "test over")


def tick(container) -> dict[str, int]:
    return suites.tick(container)


# --- saving ----------------------------------------------------------------------------------


@pytest.mark.parametrize(
    ("triggers", "field"),
    [
        ({"schedule": {"cron": "0 6 * * * *", "timezone": "UTC"}}, "triggers.schedule.cron"),
        ({"schedule": {"cron": "61 6 * * *", "timezone": "UTC"}}, "triggers.schedule.cron"),
        (
            {"schedule": {"cron": "0 6 * * *", "timezone": "Mars/Base"}},
            "triggers.schedule.timezone",
        ),
        ({"on_publish": "yes"}, "triggers.on_publish"),
    ],
)
def test_a_bad_trigger_is_a_400_naming_the_field(api, triggers, field):
    agent = agent_with_versions(api, 0)
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={"dataset_id": api.dataset(CASES), "triggers": triggers},
    )
    assert status == 400 and body["error"]["field"] == field, body


def test_saving_prices_a_run_and_a_month_and_whoever_changes_it_owns_it(api, new_api):
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    ds = api.dataset(CASES)
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/suites",
        json={"dataset_id": ds, "threshold": {"min_pass_rate": 1.5}},
    )
    assert status == 400 and body["error"]["field"] == "threshold.min_pass_rate"
    status, body = api.call(
        "POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": ds, "environment_id": "nope"}
    )
    assert status == 404 and body["error"]["field"] == "environment_id"
    made = suite(
        api,
        agent,
        ds,
        name="nightly",
        triggers={"schedule": {"cron": "0 6 * * *", "timezone": "Europe/Warsaw"}},
    )
    # One run of version 1 alone (nothing earlier passed): 5 cases x $0.05; a daily schedule: 30 a
    # month.
    assert made["price"]["one_run_usd"] == 0.25 and made["price"]["runs_per_30_days"] == 30
    assert made["price"]["month_usd"] == 7.5
    assert made["owner"] == api.user_id
    other = new_api(org_id=api.org_id, user_id="second@example.com")
    changed = other.ok(
        "PATCH",
        f"/api/v1/agents/{agent}/suites/{made['suite_id']}",
        json={"threshold": {"min_pass_rate": 0.8}},
    )
    assert changed["owner"] == "second@example.com" and changed["threshold"]["min_pass_rate"] == 0.8
    assert any(h["change"] == "owner" and h["old"] == api.user_id for h in changed["history"])
    listed = api.ok("GET", f"/api/v1/agents/{agent}/suites")["suites"]
    assert [s["suite_id"] for s in listed] == [made["suite_id"]]
    api.ok("DELETE", f"/api/v1/agents/{agent}/suites/{made['suite_id']}")
    assert api.call("GET", f"/api/v1/agents/{agent}/suites/{made['suite_id']}")[0] == 404


# --- the schedule --------------------------------------------------------------------------


def test_the_tick_fires_on_the_local_wall_clock_once_for_missed_fires_and_never_while_paused(
    api, frozen, container
):
    clock = frozen
    clock.at = datetime(2026, 3, 28, 4, 0, tzinfo=UTC)
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    made = suite(
        api,
        agent,
        api.dataset(CASES),
        triggers={"schedule": {"cron": "0 6 * * *", "timezone": "Europe/Warsaw"}},
    )
    sid = made["suite_id"]
    assert made["next_fire_at"] == "2026-03-28T05:00:00.000Z"  # 06:00 CET
    clock.at = datetime(2026, 3, 28, 4, 59, tzinfo=UTC)
    tick(container)
    assert runs_of(api, agent) == []
    clock.at = datetime(2026, 3, 28, 5, 0, tzinfo=UTC)
    tick(container)
    [run] = runs_of(api, agent)
    assert run["suite_id"] == sid and run["purpose"] == "suite" and run["resolved_version"] == 1
    assert (
        suite_view(api, agent, sid)["next_fire_at"] == "2026-03-29T04:00:00.000Z"
    )  # 06:00 CEST, after the change
    api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/cancel")
    assert results(api, agent, sid)[0]["result"] == "inconclusive"
    # Three days with nothing running: the missed fires run once, not three times.
    clock.at = datetime(2026, 4, 1, 9, 0, tzinfo=UTC)
    tick(container)
    tick(container)
    assert len(runs_of(api, agent)) == 2
    assert suite_view(api, agent, sid)["next_fire_at"] == "2026-04-02T04:00:00.000Z"
    for r in runs_of(api, agent):
        if r["status"] in ("queued", "running"):
            api.ok("POST", f"/api/v1/eval-runs/{r['run_id']}/cancel")
    # Paused: the fire passes and never runs, not even once it resumes.
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/pause")
    clock.at = datetime(2026, 4, 2, 4, 30, tzinfo=UTC)
    tick(container)
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/resume")
    tick(container)
    assert len(runs_of(api, agent)) == 2
    assert suite_view(api, agent, sid)["next_fire_at"] == "2026-04-03T04:00:00.000Z"


def test_a_toronto_schedule_fires_once_on_the_day_the_clock_falls_back(api, frozen, container):
    clock = frozen
    clock.at = datetime(2026, 10, 31, 12, 0, tzinfo=UTC)
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    sid = suite(
        api,
        agent,
        api.dataset(CASES),
        triggers={"schedule": {"cron": "30 1 * * *", "timezone": "America/Toronto"}},
    )["suite_id"]
    assert (
        suite_view(api, agent, sid)["next_fire_at"] == "2026-11-01T05:30:00.000Z"
    )  # 01:30 EDT, first time
    clock.at = datetime(2026, 11, 1, 5, 30, tzinfo=UTC)
    tick(container)
    # 01:30 EST an hour later is the same wall time again: it does not fire; the next is tomorrow's.
    assert suite_view(api, agent, sid)["next_fire_at"] == "2026-11-02T06:30:00.000Z"
    clock.at = datetime(2026, 11, 1, 6, 30, tzinfo=UTC)
    tick(container)
    assert len(runs_of(api, agent)) == 1


# --- other triggers ------------------------------------------------------------------------


def test_dependency_changes_debounce_into_one_run(api, frozen, container):
    clock = frozen
    clock.at = datetime(2026, 6, 1, 12, 0, tzinfo=UTC)
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    sid = suite(api, agent, api.dataset(CASES), triggers={"on_dependency_change": True})["suite_id"]
    event = {
        "type": "dependency_changed",
        "org_id": api.org_id,
        "agent_id": agent,
        "version": 1,
        "dependency": {"kind": "knowledge_base", "id": "kb-1", "change": "reingested"},
    }
    for seconds in (0, 100, 300):
        clock.at = datetime(2026, 6, 1, 12, 0, seconds % 60, tzinfo=UTC).replace(
            minute=seconds // 60
        )
        agent_events.handle(container, signed(api, event))
    pending = suite_view(api, agent, sid)["pending"]
    assert len(pending) == 1 and pending[0]["kind"] == "dependency"
    clock.at = datetime(2026, 6, 1, 12, 9, 59, tzinfo=UTC)  # 599 s after the first change
    tick(container)
    assert runs_of(api, agent) == []
    clock.at = datetime(2026, 6, 1, 12, 10, 0, tzinfo=UTC)
    tick(container)
    assert len(runs_of(api, agent)) == 1 and suite_view(api, agent, sid)["pending"] == []
    # A change to a version the suite does not check is nobody's business.
    agent_events.handle(container, signed(api, {**event, "version": 7}))
    assert suite_view(api, agent, sid)["pending"] == []
    with pytest.raises(agent_events.MalformedEventError):
        agent_events.handle(
            container, json.dumps({**event, "dependency": {"kind": "weather", "id": "x"}})
        )
    for org in (
        "org/other",
        "a..b",
        "x" * 101,
        " org",
    ):  # not an organization: no key may start with it
        with pytest.raises(agent_events.MalformedEventError, match="org_id"):
            agent_events.handle(container, json.dumps({**event, "org_id": org}))


def test_one_run_at_a_time_and_a_waiting_version_absorbs_the_next_trigger(api, frozen, container):
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    sid = suite(
        api, agent, api.dataset(CASES), triggers={"on_publish": True, "on_promotion": True}
    )["suite_id"]
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")  # runs version 1 now
    for wrong in (0, 0):
        api.ok(
            "PUT",
            f"/api/v1/agents/{agent}/draft",
            json={"spec": sleepy_spec(answers=answers(wrong), sleep_ms=1)},
        )
        api.ok("POST", f"/api/v1/agents/{agent}/versions")  # versions 2, then 3
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    view = suite_view(api, agent, sid)
    assert [(p["version"], p["kinds"]) for p in view["pending"]] == [
        (2, ["promotion", "publish"]),
        (3, ["publish"]),
    ]
    assert len(runs_of(api, agent)) == 1
    first = runs_of(api, agent)[0]["run_id"]
    api.ok("POST", f"/api/v1/eval-runs/{first}/cancel")
    runs = runs_of(api, agent)
    [new] = [r for r in runs if r["run_id"] != first]  # same instant: order by id
    assert len(runs) == 2 and new["resolved_version"] == 2
    assert [a["version"] for a in new["arms"]] == [2, 1]  # the version before beside it
    assert [p["version"] for p in suite_view(api, agent, sid)["pending"]] == [3]


def test_run_now_runs_as_whoever_presses_it_and_a_paused_suite_refuses(api, new_api, frozen):
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    sid = suite(api, agent, api.dataset(CASES))["suite_id"]
    other = new_api(org_id=api.org_id, user_id="presser@example.com")
    other.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
    [run] = runs_of(api, agent)
    assert run["created_by"] == "presser@example.com" and run["suite_id"] == sid
    api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/cancel")
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/pause")
    status, body = api.call("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
    assert status == 409 and "paused" in body["error"]["message"]
    assert len(runs_of(api, agent)) == 1 and suite_view(api, agent, sid)["pending"] == []


# --- results, notices ----------------------------------------------------------------------


def ses_sent(stack) -> list[dict[str, Any]]:
    with urllib.request.urlopen(stack.endpoint_url + "/_assay/ses/sent", timeout=10) as reply:  # noqa: S310
        return json.loads(reply.read())


def test_a_failing_publish_tells_its_owner_once_in_the_center_and_by_email(api, stack):
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    sid = suite(
        api, agent, api.dataset(CASES), triggers={"on_publish": True, "on_promotion": True}
    )["suite_id"]
    api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": sleepy_spec(answers=answers(2))})
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    [result] = wait_for(lambda: results(api, agent, sid))
    assert (
        result["result"] == "failed"
        and result["version"] == 2
        and result["trigger"]["kind"] == "publish"
    )
    assert result["reasons"][0] == "2 confirmed regressions, 0 allowed"
    assert result["cases_broken"] == ["c000", "c001"]
    run = api.ok("GET", f"/api/v1/eval-runs/{result['run_id']}")
    assert run["suite_id"] == sid and [a["version"] for a in run["arms"]] == [2, 1]
    # The notice follows the result (and its mail, the notice): wait for both.
    [notice] = wait_for(
        lambda: [n for n in api.ok("GET", "/api/v1/notifications")["notifications"] if n["emailed"]]
    )
    assert notice["kind"] == "suite_result" and "failed on version 2" in notice["title"]
    assert "Cases that broke: c000, c001" in notice["body"] and notice["emailed"] is True
    mail = [
        m
        for m in ses_sent(stack)
        if m["destinations"]["ToAddresses"] == [api.user_id] and m["subject"] == notice["title"]
    ]
    assert len(mail) == 1 and "c000, c001" in mail[0]["body"]
    # Failing again on the same version is the same run of bad results: nobody is told twice.
    api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    wait_for(lambda: len(results(api, agent, sid)) == 2)
    assert results(api, agent, sid)[0]["result"] == "failed"
    assert len(api.ok("GET", "/api/v1/notifications")["notifications"]) == 1
    api.ok("POST", f"/api/v1/notifications/{notice['notification_id']}/read")
    assert api.ok("GET", "/api/v1/notifications?unread=true")["notifications"] == []
    assert api.call("POST", "/api/v1/notifications/nope/read")[0] == 404


def test_a_first_measurement_sets_a_baseline_and_a_cost_cap_runs_the_candidate_alone(api):
    priced_spec = {
        **sleepy_spec(answers=ALL_PASS),
        "price": {"input_per_mtok_usd": "1", "output_per_mtok_usd": "1"},
    }
    agent = api.agent(priced_spec)
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    environment(api, agent, serving=1)
    ds = api.dataset(CASES)
    # Fallback price: 2000 + 400 tokens at $1/M = 2400 micro-USD a case. Alone: 5 x 2400 = $0.012.
    # With the version before beside it: 2 x 0.012 first + 2 reruns x 5 x 2 sides x 2400 = $0.072.
    sid = suite(api, agent, ds, triggers={"on_publish": True}, max_run_usd=0.05)["suite_id"]
    api.ok(
        "PUT",
        f"/api/v1/agents/{agent}/draft",
        json={"spec": {**priced_spec, "options": {"answer": "42"}}},
    )
    api.ok("POST", f"/api/v1/agents/{agent}/versions")
    [result] = wait_for(lambda: results(api, agent, sid))
    assert result["result"] == "baseline_set"
    assert (
        "Not compared: running the earlier version too would exceed the suite's cost cap."
        in result["reasons"]
    )
    run = api.ok("GET", f"/api/v1/eval-runs/{result['run_id']}")
    assert [a["role"] for a in run["arms"]] == ["candidate"]
    # Too small a cap for even the candidate alone: the suite does not run, and says why. (Priced
    # from history now: 100 in + 20 out at $1/M = 120 micro-USD a case, 5 cases = $0.0006.)
    assert api.ok("GET", f"/api/v1/agents/{agent}/suites/{sid}")["max_run_usd"] == 0.05
    api.ok("PATCH", f"/api/v1/agents/{agent}/suites/{sid}", json={"max_run_usd": 0.0005})
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
    latest = results(api, agent, sid)[0]
    assert (
        latest["result"] == "not_run"
        and "max_run_usd" in latest["reasons"][0]
        and latest["run_id"] is None
    )


def test_a_guarded_promotion_waits_for_its_guard_and_opens_only_on_a_pass(api, new_api):
    agent = agent_with_versions(api, 0, 1, 4)  # v2 breaks one case, v3 four
    environment(api, agent, serving=1)
    ds = api.dataset(CASES)
    guard = suite(
        api, agent, ds, guards=True, threshold={"min_pass_rate": 0.5, "max_regressions": 1}
    )
    assert guard["pins"]["dataset_version"] == 1
    promo = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    assert promo["status"] == "waiting" and promo["from_version"] == 1
    done = wait_for(
        lambda: (
            (p := api.ok("GET", f"/api/v1/agents/{agent}/promotions/{promo['promotion_id']}"))[
                "status"
            ]
            != "waiting"
            and p
        )
    )
    assert done["status"] == "promoted", done
    assert api.ok("GET", "/api/v1/environments/production")["serving"] == {agent: 2}
    [gate] = results(api, agent, guard["suite_id"])
    assert (
        gate["purpose"] == "gate"
        and gate["label"] == "Before promotion"
        and gate["result"] == "passed"
    )

    refused = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 3},
    )
    done = wait_for(
        lambda: (
            (p := api.ok("GET", f"/api/v1/agents/{agent}/promotions/{refused['promotion_id']}"))[
                "status"
            ]
            != "waiting"
            and p
        )
    )
    assert done["status"] == "refused"
    assert "came out failed" in done["reason"] and "below the minimum 50.0%" in done["reason"]
    assert api.ok("GET", "/api/v1/environments/production")["serving"] == {agent: 2}

    # A guard cannot be deleted, and moving its pins needs promotions:override (and is recorded).
    assert api.call("DELETE", f"/api/v1/agents/{agent}/suites/{guard['suite_id']}")[0] == 409
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={"scoring": {"required": ["equals"]}, "cases": CASES},
    )
    limited = new_api(org_id=api.org_id, user_id="dev@example.com", role="editor")
    status, body = limited.call(
        "PATCH", f"/api/v1/agents/{agent}/suites/{guard['suite_id']}", json={"move_pins": True}
    )
    assert status == 403 and body["error"]["permission"] == "promotions:override", body
    moved = api.ok(
        "PATCH", f"/api/v1/agents/{agent}/suites/{guard['suite_id']}", json={"move_pins": True}
    )
    assert moved["pins"]["dataset_version"] == 2
    assert any(h["change"] == "agent.environment_guards_changed" for h in moved["history"])


def test_what_a_running_run_uses_cannot_be_removed_and_a_removed_environment_pauses_its_suites(
    api, frozen
):
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1, env_id="staging")
    api.ok("POST", "/api/v1/model-profiles", json={"model_profile_id": "m1", "model": "m1"})
    ds = api.dataset(CASES)
    sid = suite(api, agent, ds, environment_id="staging")["suite_id"]
    run = api.start(agent, ds, environment_id="staging", model_profile_ids=["m1"])
    status, body = api.call("DELETE", "/api/v1/environments/staging")
    assert status == 409 and body["error"]["run_ids"] == [run["run_id"]]
    assert api.call("DELETE", "/api/v1/model-profiles/m1")[0] == 409
    api.ok("POST", f"/api/v1/eval-runs/{run['run_id']}/cancel")
    api.ok("DELETE", "/api/v1/model-profiles/m1")
    api.ok("DELETE", "/api/v1/environments/staging")
    view = suite_view(api, agent, sid)
    assert view["paused"] is True and "staging was removed" in view["paused_reason"]
    assert api.call("POST", f"/api/v1/agents/{agent}/suites/{sid}/resume")[0] == 409
    environment(api, agent, serving=1, env_id="production")
    api.ok("PATCH", f"/api/v1/agents/{agent}/suites/{sid}", json={"environment_id": "production"})
    assert api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/resume")["paused"] is False


# --- what trying to break it found ---------------------------------------------------------


def test_pausing_a_guard_refuses_the_promotion_waiting_for_it(api, frozen):
    agent = agent_with_versions(api, 0, 0)
    environment(api, agent, serving=1)
    sid = suite(api, agent, api.dataset(CASES), guards=True)["suite_id"]
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")  # busy: the gate has to wait
    promo = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    assert [p["kind"] for p in suite_view(api, agent, sid)["pending"]] == ["gate"]
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/pause")
    refused = api.ok("GET", f"/api/v1/agents/{agent}/promotions/{promo['promotion_id']}")
    assert refused["status"] == "refused" and "was paused" in refused["reason"]
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/resume")
    again = api.call(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    assert again[0] == 202, again  # the environment is free again


def test_concurrent_promotions_onto_one_environment_are_one_at_a_time(api, frozen):
    import concurrent.futures

    agent = agent_with_versions(api, 0, 0)
    environment(api, agent, serving=1)
    suite(api, agent, api.dataset(CASES), guards=True)
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        replies = list(
            pool.map(
                lambda _: api.call(
                    "POST",
                    f"/api/v1/agents/{agent}/promotions",
                    json={"environment_id": "production", "version": 2},
                ),
                range(4),
            )
        )
    assert sorted(status for status, _ in replies) == [202, 409, 409, 409], replies
    assert (
        len(api.ok("GET", f"/api/v1/agents/{agent}/promotions")["promotions"]) == 2
    )  # v1's and one of these


def test_a_guard_keeps_its_environment_and_its_changes_need_an_override(api, new_api):
    agent = agent_with_versions(api, 0, 4)
    environment(api, agent, serving=1)
    guard = suite(api, agent, api.dataset(CASES), guards=True, threshold={"min_pass_rate": 1})
    assert guard["environment_id"] == "production"  # pinned, not "the default"
    api.ok("POST", "/api/v1/environments", json={"environment_id": "other", "default": True})
    promo = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    assert promo["status"] == "waiting"
    done = wait_for(
        lambda: (
            (p := api.ok("GET", f"/api/v1/agents/{agent}/promotions/{promo['promotion_id']}"))[
                "status"
            ]
            != "waiting"
            and p
        )
    )
    assert done["status"] == "refused"
    failing = results(api, agent, guard["suite_id"])[0]
    assert failing["cases_broken"] == [
        "c000",
        "c001",
        "c002",
        "c003",
    ]  # named: the minimum failed on them
    limited = new_api(org_id=api.org_id, user_id="dev@example.com", role="editor")
    for change in (
        {"guards": False},
        {"threshold": {"max_regressions": 1000}},
        {"environment_id": "other"},
    ):
        status, body = limited.call(
            "PATCH", f"/api/v1/agents/{agent}/suites/{guard['suite_id']}", json=change
        )
        assert status == 403 and body["error"]["permission"] == "promotions:override", (
            change,
            body,
        )
    off = api.ok(
        "PATCH", f"/api/v1/agents/{agent}/suites/{guard['suite_id']}", json={"guards": False}
    )
    assert (
        off["guards"] is False
        and off["history"][-2]["change"] == "agent.environment_guards_changed"
    )


def test_every_concurrent_publish_is_checked_once(api):
    import concurrent.futures

    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    sid = suite(api, agent, api.dataset(CASES), triggers={"on_publish": True})["suite_id"]
    with concurrent.futures.ThreadPoolExecutor(4) as pool:
        replies = list(
            pool.map(
                lambda v: api.call("POST", f"/api/v1/agents/{agent}/versions", json={"version": v}),
                range(2, 6),
            )
        )
    assert all(status == 201 for status, _ in replies), replies
    checked = wait_for(lambda: (r := results(api, agent, sid)) and len(r) >= 4 and r)
    assert sorted(r["version"] for r in checked) == [2, 3, 4, 5]


def test_a_dependency_change_during_a_run_of_that_version_runs_again_later(api, frozen, container):
    frozen.at = datetime(2026, 7, 1, 8, 0, tzinfo=UTC)
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    sid = suite(api, agent, api.dataset(CASES), triggers={"on_dependency_change": True})["suite_id"]
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
    agent_events.handle(
        container,
        signed(
            api,
            {
                "type": "dependency_changed",
                "org_id": api.org_id,
                "agent_id": agent,
                "version": 1,
                "dependency": {"kind": "skill", "id": "s"},
            },
        ),
    )
    assert [p["kind"] for p in suite_view(api, agent, sid)["pending"]] == ["dependency"]


def test_without_a_minimum_the_next_run_compares_with_the_baseline_the_first_set(api):
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    sid = suite(api, agent, api.dataset(CASES))["suite_id"]
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
    first = wait_for(lambda: results(api, agent, sid))[0]
    assert first["result"] == "baseline_set"
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
    second = wait_for(lambda: (r := results(api, agent, sid)) and len(r) == 2 and r[0])
    assert second["result"] == "passed", second
    run = api.ok("GET", f"/api/v1/eval-runs/{second['run_id']}")
    assert run["reused_baseline_run_id"] == first["run_id"]


@pytest.mark.parametrize(
    ("body", "field"),
    [
        ({"threshold": {"bogus": 1}}, "threshold.bogus"),
        ({"threshold": {"min_pass_rate": True}}, "threshold.min_pass_rate"),
        ({"threshold": {"max_regressions": 10**40}}, "threshold.max_regressions"),
        ({"max_run_usd": "1_000"}, "max_run_usd"),
        ({"max_run_usd": "0.0000001"}, "max_run_usd"),
        (
            {"triggers": {"schedule": {"cron": "0 6 * * *", "timezone": "posix/Europe/Warsaw"}}},
            "triggers.schedule.timezone",
        ),
    ],
)
def test_more_bad_suite_bodies_name_their_field(api, body, field):
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    status, reply = api.call(
        "POST", f"/api/v1/agents/{agent}/suites", json={"dataset_id": api.dataset(CASES), **body}
    )
    assert status == 400 and reply["error"]["field"] == field, reply


def test_concurrent_default_environments_leave_exactly_one_default(api):
    import concurrent.futures

    with concurrent.futures.ThreadPoolExecutor(6) as pool:
        list(
            pool.map(
                lambda i: api.ok(
                    "POST",
                    "/api/v1/environments",
                    json={"environment_id": f"e{i}", "default": True},
                ),
                range(6),
            )
        )
    envs = api.ok("GET", "/api/v1/environments")["environments"]
    assert sum(e["default"] for e in envs) == 1


def test_a_guard_taken_off_or_deleted_refuses_the_promotion_waiting_for_it(api, frozen):
    agent = agent_with_versions(api, 0, 0)
    environment(api, agent, serving=1)
    sid = suite(api, agent, api.dataset(CASES), guards=True)["suite_id"]
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")  # busy: the gate waits
    promo = api.ok(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    api.ok("PATCH", f"/api/v1/agents/{agent}/suites/{sid}", json={"guards": False})
    api.ok("DELETE", f"/api/v1/agents/{agent}/suites/{sid}")
    refused = api.ok("GET", f"/api/v1/agents/{agent}/promotions/{promo['promotion_id']}")
    assert refused["status"] == "refused" and "taken off" in refused["reason"]
    status, body = api.call(
        "POST",
        f"/api/v1/agents/{agent}/promotions",
        json={"environment_id": "production", "version": 2},
    )
    assert status == 201 and body["status"] == "promoted"  # no guard left: at once


def test_a_reference_run_that_is_gone_or_of_another_dataset_is_not_compared_with(api):
    agent = agent_with_versions(api, 0)
    environment(api, agent, serving=1)
    ds = api.dataset(CASES)
    sid = suite(api, agent, ds)["suite_id"]
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
    first = wait_for(lambda: results(api, agent, sid))[0]
    api.ok("DELETE", f"/api/v1/eval-runs/{first['run_id']}")
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
    second = wait_for(lambda: (r := results(api, agent, sid)) and len(r) == 2 and r[0])
    assert second["result"] == "baseline_set", second  # measured afresh, not "not_run"
    other = api.dataset([{"case_id": "x1", "input": "q", "reference": "nope"}])
    api.ok("PATCH", f"/api/v1/agents/{agent}/suites/{sid}", json={"dataset_id": other})
    api.ok("POST", f"/api/v1/agents/{agent}/suites/{sid}/run")
    third = wait_for(lambda: (r := results(api, agent, sid)) and len(r) == 3 and r[0])
    assert third["result"] == "baseline_set", third  # nothing in common: never "passed"
