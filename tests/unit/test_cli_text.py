"""How the CLI words things (issue 29): tables without `None`, durations rounded for a person,
schedules in words, a failed case's reasons, what the gate compared, and the command that fixes an
API error (`assay.hints`)."""

from __future__ import annotations

import pytest

from assay import hints, text
from assay.cli_agents import verdict_text
from assay.cli_cases import failure_reasons
from assay.cli_common import error_line
from assay.cli_resources import price_text, scorers_text
from assay.cli_runs import candidate_efficiency, compared_text
from assay.cli_suites import last_result_text
from assay.client import ApiError, ApiUnreachable


def test_a_table_aligns_its_columns_and_shows_a_dash_for_what_is_absent() -> None:
    out = text.table(["ID", "NAME", "LIVE"], [["a1", None, True], ["agent-2", "Bot", False]])
    assert out.splitlines() == [
        "ID       NAME  LIVE",
        "a1       -     yes",
        "agent-2  Bot   no",
    ]
    assert text.table(["ID"], []) == "ID"
    assert text.cell("two\nlines") == "two lines" and text.cell("") == "-"
    assert (text.cell(0.0), text.cell(0.7), text.cell(3)) == ("0", "0.7", "3")


@pytest.mark.parametrize(
    ("ms", "said"),
    [
        (None, "-"),
        (0, "0 ms"),
        (0.4, "<1 ms"),
        (11.3765, "11 ms"),
        (999.4, "999 ms"),
        (999.6, "1.0 s"),
        (1234.5, "1.2 s"),
        (59_940, "59.9 s"),
        (125_000, "2 min 5 s"),
        (120_000, "2 min"),
    ],
)
def test_a_duration_is_rounded_to_what_a_person_reads(ms: float | None, said: str) -> None:
    assert text.duration_ms(ms) == said


def test_usd_keeps_two_digits_of_a_fraction_of_a_cent() -> None:
    assert (text.usd(None), text.usd(0), text.usd(0.0042), text.usd(1234.5)) == (
        "-",
        "$0.00",
        "$0.0042",
        "$1,234.50",
    )


def test_what_reruns_auto_chose_is_said_as_the_console_says_it() -> None:
    auto = {"chosen": 3, "reason": "as run r1 measured the noise (0.4 %)", "from_run_id": "r1"}
    assert text.reruns_auto_line(auto, 0.12) == (
        "Reruns: auto suggests 3 reruns of each flip: as run r1 measured the noise (0.4 %). "
        "They cost up to $0.12."
    )
    one = {"chosen": 1, "reason": "no earlier comparison measured the noise"}
    assert text.reruns_auto_line(one, 0.0042) == (
        "Reruns: auto suggests 1 rerun of each flip: no earlier comparison measured the noise. "
        "They cost up to $0.0042."
    )
    assert text.reruns_auto_line(auto, started=True) == (
        "Reruns: auto chose 3 reruns of each flip: as run r1 measured the noise (0.4 %)."
    )
    assert text.reruns_auto_line(None, 0.12) is None  # the reruns were not left to assay
    said = ['reruns "auto": 3, as run r1 measured the noise (0.4 %)', "the judge grades at 0.7"]
    assert text.warnings_besides_reruns_auto({"warnings": said, "reruns_auto": auto}) == [
        "the judge grades at 0.7"
    ]
    assert text.warnings_besides_reruns_auto({"warnings": said, "reruns_auto": None}) == said


@pytest.mark.parametrize(
    ("cron", "tz", "said"),
    [
        ("0 6 * * *", None, "every day at 06:00 UTC"),
        ("30 9 * * 1", "Europe/Paris", "every Monday at 09:30 Europe/Paris"),
        ("0 8 * * 1-5", "UTC", "weekdays at 08:00 UTC"),
        ("15 * * * *", None, "every hour at :15"),
        ("*/15 * * * *", None, "every 15 minutes"),
        ("0 0 1 * *", None, "on day 1 of each month at 00:00 UTC"),
        ("0 6 * 1 *", None, 'cron "0 6 * 1 *" UTC'),
        ("nonsense", None, 'cron "nonsense"'),
    ],
)
def test_a_cron_schedule_is_said_in_words(cron: str, tz: str | None, said: str) -> None:
    assert text.cron_words(cron, tz) == said


def test_a_suites_triggers_are_said_in_words() -> None:
    assert text.schedule_words(None) == "manual only"
    assert text.schedule_words({}) == "manual only"
    assert (
        text.schedule_words(
            {"schedule": {"cron": "0 6 * * *", "timezone": "UTC"}, "on_publish": True}
        )
        == "every day at 06:00 UTC; on publish"
    )
    assert text.schedule_words({"on_promotion": True}) == "before promotion"


def test_a_suites_last_result_and_pause() -> None:
    assert last_result_text({}) == "never run"
    assert last_result_text({"last_result": {"result": "failed"}}) == "failed"
    assert (
        last_result_text({"last_result": "passed", "paused": True, "paused_reason": "owner left"})
        == "passed (paused: owner left)"
    )


def test_a_failed_sides_reason_is_each_failing_scorers_then_the_attempts_own() -> None:
    side = {
        "settled": "failed",
        "attempts": [
            {
                "passed": False,
                "scores": [
                    {"scorer": "contains", "passed": True, "reason": "ok"},
                    {"scorer": "equals", "passed": False, "reason": "expected 42,\n got 41"},
                    {"scorer": "judge", "passed": None, "reason": ""},
                ],
            }
        ],
    }
    assert failure_reasons(side) == "equals: expected 42, got 41; judge: could not decide"
    crashed = {"attempts": [{"passed": False, "scores": [], "error": "timeout after 30 s"}]}
    assert failure_reasons(crashed) == "timeout after 30 s"
    assert failure_reasons({"attempts": [{"passed": True, "scores": []}]}) == ""


def test_what_the_gate_compared_never_says_none() -> None:
    assert compared_text(None) == "no baseline: the pass rate alone (and --min-pass-rate) decides"
    assert (
        compared_text({"verdict": None, "could_not_run": {"baseline": "no such model"}})
        == "against the baseline: no verdict (baseline: no such model)"
    )
    said = compared_text({"verdict": "worse", "confirmed_regressions": 1, "p_value": 0.03125})
    assert said == (
        "against the baseline: worse; 1 confirmed regression, 0 confirmed fixes; overall not "
        "significant (exact McNemar p = 0.0312)"
    )


def test_the_candidates_latency_and_cost_are_rounded() -> None:
    run = {
        "arms": [{"arm_id": "candidate", "role": "candidate"}],
        "summaries": {
            "candidate": {
                "efficiency": {
                    "latency_p50_ms": 11.3765,
                    "latency_p95_ms": 1234.0,
                    "cost_usd": 0.0042,
                }
            }
        },
    }
    assert candidate_efficiency(run) == "latency p50 11 ms, p95 1.2 s; cost $0.0042"
    assert candidate_efficiency({"summaries": {}}) is None


def test_verdicts_scorers_and_prices_in_words() -> None:
    assert verdict_text(None) == "-"  # nothing published, or a reader without runs:view
    assert verdict_text({"verdict": "none"}) == "none (not measured yet)"  # never a failure
    assert verdict_text({"verdict": "pass", "passed": 9, "total": 10}) == "pass (9/10)"
    assert scorers_text({"required": ["equals", "regex"], "settings": {}}) == "equals, regex"
    assert scorers_text(None) == "none"
    assert price_text(None) == "-"
    assert (
        price_text({"input_per_mtok_usd": 2.5, "output_per_mtok_usd": 10})
        == "$2.50 in / $10.00 out per 1M tokens"
    )


def _error(status: int, message: str, path: str = "/api/v1/x") -> ApiError:
    return ApiError("GET", path, status, {"error": {"code": "c", "message": message}})


@pytest.mark.parametrize(
    ("status", "message", "path", "fix"),
    [
        (
            404,
            "the organization has no default environment: create one",
            "/api/v1/agents/a1/suites",
            "create one: assay environments create production --default (or pass environment_id)",
        ),
        (
            404,
            "agent a1 not found",
            "/api/v1/agents/a1",
            "create it: assay agents create a1 --spec FILE (assay agents list shows the agents "
            "there are)",
        ),
        (
            404,
            "version 3 of agent a1 not found",
            "/api/v1/agents/a1/eval-runs",
            "publish the draft: assay agents publish a1 (assay agents show a1 lists its versions)",
        ),
        (
            404,
            "environment prod not found",
            "/api/v1/environments/prod",
            "create it: assay environments create prod (assay environments list shows the "
            "environments there are)",
        ),
        (
            404,
            "dataset ds not found",
            "/api/v1/datasets/ds",
            "create it: assay import ds FILE --create NAME (assay datasets list shows the "
            "datasets there are)",
        ),
        (
            404,
            "suite s1 not found",
            "/api/v1/agents/a1/suites/s1",
            "assay suites list a1 shows the agent's suites; assay suites create a1 FILE saves one",
        ),
        (
            409,
            "agent a1 already exists",
            "/api/v1/agents",
            "change its draft instead: assay agents draft a1 FILE",
        ),
        (
            409,
            "environment prod is used by eval run run_9 (queued or running): wait for it",
            "/api/v1/environments/prod",
            "cancel the run: assay cancel run_9",
        ),
        (
            409,
            "agent a1 has runs still running (run_1, run_2): cancel them and wait",
            "/api/v1/agents/a1",
            "cancel them, e.g. assay cancel run_1",
        ),
    ],
)
def test_an_api_error_with_a_fix_names_the_command(
    status: int, message: str, path: str, fix: str
) -> None:
    assert hints.fix_for(_error(status, message, path)) == fix


def test_an_error_no_rule_knows_gets_no_hint_and_one_the_api_answered_keeps_its_own() -> None:
    assert hints.fix_for(_error(400, "agent a1 not found")) is None  # a 400 is not a 404
    assert hints.fix_for(_error(409, "eval run r1 already ended (completed)")) is None
    known = _error(404, "agent a1 not found")
    assert error_line(known) == (f"{known} -- {hints.fix_for(known)}", hints.fix_for(known))
    own = _error(404, "no default environment: create one (assay environments create x)")
    assert error_line(own) == (str(own), None)  # the API's message names the command already


def test_no_answer_names_the_url_and_what_starts_an_api() -> None:
    said, fix = error_line(
        ApiUnreachable("x", url="http://127.0.0.1:9", cause="[Errno 111] Connection refused")
    )
    assert fix is None
    assert said == (
        "the API at http://127.0.0.1:9 is not answering ([Errno 111] Connection refused): start "
        "one with `assay dev`, or point ASSAY_URL (or --url) at a running assay"
    )
