"""The CI gate's decisions and reports (`assay.gate`, issue 13 scope 1), on hand-written API JSON:
0 nothing confirmed broke and nothing undecided, 1 a confirmed regression (or a pass rate under
the minimum, a failed suite result, a refused promotion), 2 inconclusive."""

from __future__ import annotations

import csv
import io
import xml.etree.ElementTree as ET
from typing import Any

import pytest

from assay import gate
from assay.gate import BROKE, INCONCLUSIVE, PASSED


def _run(status: str = "completed", **outcome: Any) -> dict[str, Any]:
    base = {"total": 10, "passed": 10, "failed": 0, "pass_rate": 1.0, "undecided": 0}
    return {
        "run_id": "run_1",
        "agent_id": "agt_1",
        "dataset_id": "ds_1",
        "dataset_version": 2,
        "status": status,
        "reason": "cancelled by ann" if status == "cancelled" else None,
        "arms": [
            {"arm_id": "candidate", "role": "candidate", "version": 3, "draft": False},
            {"arm_id": "baseline", "role": "baseline", "version": 2, "draft": False},
        ],
        "outcome": {**base, **outcome},
        "summaries": {"candidate": {"quality": {"undecided_reasons": {}}, "could_not_run": None}},
    }


def _comparison(regressions: list[str] = (), unconfirmed: list[str] = (), **kw: Any) -> dict:
    flips = [{"case_id": c, "outcome": "regression", "confirmed": True} for c in regressions]
    flips += [{"case_id": c, "outcome": "regression", "confirmed": False} for c in unconfirmed]
    return {
        "verdict": kw.pop("verdict", "worse" if regressions else "no_difference"),
        "confirmed_regressions": len(regressions),
        "confirmed_fixes": kw.pop("fixes", 0),
        "flips": flips,
        "counts": {"incomplete": kw.pop("incomplete", 0)},
        "overall": kw.pop("overall", None),
        "p_value": kw.pop("p_value", None),
        "pass_rate_before": 0.9,
        "pass_rate_after": 0.6,
        **kw,
    }


def test_a_confirmed_regression_breaks_and_names_the_cases() -> None:
    g = gate.decide_run(_run(passed=7, failed=3, pass_rate=0.7), _comparison(["c2", "c5", "c7"]))
    assert g.code == BROKE and g.word == "broke"
    assert g.reasons == ["3 confirmed regressions: c2, c5, c7"]


def test_flips_that_did_not_hold_break_nothing() -> None:
    g = gate.decide_run(_run(), _comparison(unconfirmed=["c1", "c4"]))
    assert (g.code, g.reasons) == (PASSED, ["no confirmed regression; pass rate 100.0 %"])


def test_a_first_result_without_baseline_passes_unless_under_the_minimum() -> None:
    assert gate.decide_run(_run(pass_rate=0.5), None).code == PASSED
    g = gate.decide_run(_run(pass_rate=0.5), None, min_pass_rate=0.8)
    assert (g.code, g.reasons) == (BROKE, ["pass rate 50.0 % is under the minimum 80.0 %"])
    assert gate.decide_run(_run(pass_rate=0.8), None, min_pass_rate=0.8).code == PASSED


def test_undecided_cases_are_inconclusive_with_their_reasons() -> None:
    run = _run(passed=0, pass_rate=None, undecided=10, incomplete=10)
    run["summaries"]["candidate"]["quality"]["undecided_reasons"] = {"credentials missing": 10}
    g = gate.decide_run(run, None)
    assert (g.code, g.reasons) == (INCONCLUSIVE, ["10 cases undecided (credentials missing: 10)"])


def test_a_confirmed_regression_outranks_undecided_cases() -> None:
    g = gate.decide_run(_run(undecided=2), _comparison(["c1"], incomplete=2))
    assert g.code == BROKE
    assert g.reasons == [
        "1 confirmed regression: c1",
        "2 cases left undecided on one side or both",
    ]


@pytest.mark.parametrize(
    ("status", "reason"),
    [
        ("cancelled", "the run ended cancelled: cancelled by ann"),
        ("failed", "the run ended failed"),
        ("budget_exceeded", "the run ended budget_exceeded"),
        ("running", "the run is still running"),
    ],
)
def test_a_run_that_did_not_complete_is_inconclusive(status: str, reason: str) -> None:
    assert gate.decide_run(_run(status), None) == gate.Gate(INCONCLUSIVE, [reason])


def test_an_invalid_comparison_or_a_side_that_could_not_run_is_inconclusive() -> None:
    invalid = _comparison(verdict="invalid", invalid_reason="the judge differs")
    assert gate.decide_run(_run(), invalid).reasons == [
        "the comparison is invalid: the judge differs"
    ]
    broken = _comparison(verdict=None, could_not_run={"baseline": "401 from provider"})
    g = gate.decide_run(_run(), broken)
    assert (g.code, g.reasons) == (INCONCLUSIVE, ["side baseline could not run: 401 from provider"])


@pytest.mark.parametrize(
    ("word", "code"),
    [
        ("passed", PASSED),
        ("baseline_set", PASSED),
        ("failed", BROKE),
        ("inconclusive", INCONCLUSIVE),
        ("error", INCONCLUSIVE),
        ("not_run", INCONCLUSIVE),
    ],
)
def test_a_suite_results_word_gives_its_code(word: str, code: int) -> None:
    g = gate.decide_suite_result({"result": word, "reasons": ["why"]})
    assert (g.code, g.reasons) == (code, ["why"])


def test_a_promotion_promoted_refused_or_waiting() -> None:
    assert gate.decide_promotion({"status": "promoted", "version": 4}).code == PASSED
    refused = gate.decide_promotion({"status": "refused", "reason": "guard s1 failed"})
    assert (refused.code, refused.reasons) == (
        BROKE,
        ["the promotion was refused: guard s1 failed"],
    )
    assert gate.decide_promotion({"status": "waiting"}).code == INCONCLUSIVE


def test_a_promotion_that_stood_on_a_reviewed_pass_says_which_guard_did_not_run() -> None:
    done = gate.decide_promotion(
        {
            "status": "promoted",
            "version": 2,
            "guards": {
                "g2": {"result": "passed", "run_id": "r9"},
                "g1": {"result": "passed", "run_id": "r1", "reviewed_by": ["rui"], "reused": True},
            },
        }
    )
    assert (done.code, done.reasons) == (
        PASSED,
        [
            "version 2 is promoted",
            "guard g1 stood on its pass through review (run r1): not run again",
        ],
    )


def _case(cid: str, settled: str, outcome: str | None = None, answer: str = "7") -> dict:
    return {
        "case_id": cid,
        "outcome": outcome,
        "expects": {"input": f"What is 6*7? <{cid}> | x", "reference": "42", "tags": ["math"]},
        "arms": {
            "candidate": {
                "settled": settled,
                "attempts": [
                    {
                        "state": settled,
                        "answer": answer,
                        "reason": f"equals: expected '42', got '{answer}'",
                        "latency_ms": 1500,
                        "cost_usd": 0.01,
                    }
                ],
            }
        },
    }


def test_junit_has_a_testcase_per_case_failures_with_what_was_expected() -> None:
    cases = [
        _case("c1", "passed", answer="42"),
        _case("c2", "failed", "regression"),
        _case("c3", "incomplete"),
    ]
    g = gate.Gate(BROKE, ["1 confirmed regression: c2"])
    root = ET.fromstring(gate.junit(_run(), cases, g))
    assert (root.get("tests"), root.get("failures"), root.get("errors")) == ("3", "1", "1")
    by_name = {tc.get("name"): tc for tc in root.iter("testcase")}
    failure = by_name["c2"].find("failure")
    assert failure is not None and failure.get("type") == "regression"
    assert "expected: 42" in (failure.text or "") and "answer: 7" in (failure.text or "")
    assert by_name["c3"].find("error") is not None
    assert by_name["c1"].find("failure") is None and by_name["c1"].find("error") is None
    assert by_name["c1"].get("time") == "1.500"
    suite_props = root.find("properties")
    assert suite_props is not None
    props = {p.get("name"): p.get("value") for p in suite_props}
    assert props["exit_code"] == "1" and props["gate"] == "broke"


def test_junit_names_each_case_by_its_id_and_the_start_of_its_question() -> None:
    long_question = _case("c4", "failed")
    long_question["expects"]["input"] = "Which of the planets\nhas the most moons? " + "x" * 200
    cases = [_case("c1", "passed", answer="42"), _case("c2", "failed", "regression")]
    cases += [_case("c3", "incomplete"), long_question, _case("c5", "failed")]
    cases[4]["expects"].pop("input")
    root = ET.fromstring(gate.junit(_run(), cases, gate.Gate(BROKE)))
    by_name = {tc.get("name"): tc for tc in root.iter("testcase")}
    assert list(by_name) == ["c1", "c2", "c3", "c4", "c5"]  # the name stays the id CI keys on

    def question(tc: ET.Element) -> str | None:
        said = {p.get("name"): p.get("value") for p in tc.iter("property")}
        return said.get("question")

    assert question(by_name["c1"]) == 'c1 "What is 6*7? <c1> | x"'
    failure = by_name["c2"].find("failure")
    assert failure is not None
    assert failure.get("message") == (
        "c2 \"What is 6*7? <c2> | x\": equals: expected '42', got '7'"
    )
    assert (failure.text or "").startswith("question: What is 6*7? <c2> | x\nexpected: 42\n")
    error = by_name["c3"].find("error")
    assert error is not None and (error.get("message") or "").startswith('c3 "What is 6*7? <c3>')
    cut = by_name["c4"].find("failure")
    assert cut is not None
    assert (cut.get("message") or "").startswith('c4 "Which of the planets has the most moons? x')
    assert '…": equals:' in (cut.get("message") or "")
    assert "question: Which of the planets\nhas the most moons?" in (cut.text or "")
    no_question = by_name["c5"].find("failure")
    assert no_question is not None
    assert (no_question.get("message") or "").startswith("c5: equals:")
    assert question(by_name["c5"]) is None
    assert "question: (none)\n" in (no_question.text or "")


def test_junit_says_each_call_s_status_and_counts_the_blocked_divergent_and_diverged() -> None:
    called = _case("c1", "passed", answer="42")
    called["arms"]["candidate"]["attempts"][0]["calls"] = [
        {"name": "lookup", "status": "executed", "connection_id": "shop-test", "reason": "r"},
        {"name": "refund", "status": "blocked", "reason": "a write\n without a test connection"},
        {"name": "refund", "status": "divergent", "reason": "no match"},
        {"name": "send", "status": "executed", "connection_id": "mail", "error": "status 500"},
        {"name": "old", "arguments": {}},
        {"name": "told", "status": "unverified", "reason": "reported"},
        {"name": "kept", "status": "replayed", "reason": "recorded call 0"},
    ]
    called |= {"blocked_calls": 1, "divergent_calls": 1}
    held = _case("c2", "failed", "regression") | {"blocked_calls": 0, "divergent_calls": 3}
    cases = [called, held, _case("c3", "passed", answer="42")]
    root = ET.fromstring(gate.junit(_run(), cases, gate.Gate(BROKE)))
    found = root.find("properties")
    assert found is not None
    suite_props = {p.get("name"): p.get("value") for p in found}
    assert suite_props["diverged_cases"] == "2"
    by_name = {tc.get("name"): tc for tc in root.iter("testcase")}

    def said(tc: ET.Element) -> dict[str, str | None]:
        return {p.get("name"): p.get("value") for p in tc.iter("property")}

    assert (said(by_name["c1"])["blocked_calls"], said(by_name["c1"])["divergent_calls"]) == (
        "1",
        "1",
    )
    out = by_name["c1"].find("system-out")
    assert out is not None and (out.text or "").splitlines() == [
        "try 1: lookup executed on shop-test",
        "try 1: refund blocked — not executed (a write without a test connection)",
        "try 1: refund divergent — held (no match)",
        "try 1: send executed on mail (status 500)",
        "try 1: old executed",
        "try 1: told unverified — reported by the agent (reported)",
        "try 1: kept replayed from the recording (recorded call 0)",
    ]
    # counted calls of a case whose candidate made none (its baseline's): counts, no output
    assert said(by_name["c2"])["divergent_calls"] == "3"
    assert by_name["c2"].find("system-out") is None
    assert "blocked_calls" not in said(by_name["c3"]) and by_name["c3"].find("system-out") is None


def test_junit_drops_what_xml_cannot_hold() -> None:
    root = ET.fromstring(
        gate.junit(_run(), [_case("c1", "failed", answer="a\x00b\x1bc")], gate.Gate(BROKE))
    )
    text = next(root.iter("failure")).text or ""
    assert "answer: abc" in text


def test_markdown_says_the_verdict_and_lists_the_broken_cases_escaped() -> None:
    comparison = _comparison(["c2"], overall="worse", p_value=0.03125)
    g = gate.decide_run(_run(), comparison)
    text = gate.markdown(_run(), comparison, g, [_case("c2", "failed", "regression")])
    assert text.startswith("### assay: broke (exit 1)\n")
    assert "Version 3 against version 2 on dataset `ds_1` (version 2)" in text
    assert "1 case broke every time it was asked; verdict **worse**" in text
    both = gate.markdown(_run(), _comparison(["c1", "c2"], fixes=1), g, [])
    assert "2 cases broke and 1 case fixed every time they were asked" in both
    none = gate.markdown(_run(), _comparison(), g, [])
    assert "no case broke or was fixed on every try; verdict **no_difference**" in none
    assert "worse overall (exact McNemar p = 0.0312)" in text
    assert "Pass rate 90.0 % before, 60.0 % after." in text
    assert "| c2 | What is 6*7? &lt;c2> \\| x | 42 | 7 | equals: expected '42', got '7' |" in text


def test_markdown_labels_each_side_whose_tool_calls_came_from_a_recording() -> None:
    run = _run()
    live = {
        "recording_id": "rec-1",
        "live_reads": True,
        "label": "from recording rec-1, live reads",
    }
    run["arms"][0]["replay"] = live
    run["arms"][1]["replay"] = {**live, "live_reads": False, "label": "from recording rec-1"}
    text = gate.markdown(run, _comparison(), gate.decide_run(run, _comparison()), [])
    assert (
        "Version 3 (from recording rec-1, live reads) against version 2 (from recording rec-1) "
        "on dataset `ds_1`"
    ) in text


def test_export_rows_and_csv_guard_formulas() -> None:
    rows = list(gate.export_rows([_case("c1", "failed", answer="=HYPERLINK(1)")]))
    assert rows[0]["tries"] == "failed" and rows[0]["expected"] == "42"
    text = "".join(gate.csv_text(rows))
    parsed = list(csv.DictReader(io.StringIO(text)))
    assert parsed[0]["answer"] == "'=HYPERLINK(1)" and parsed[0]["tags"] == "math"
    assert list(parsed[0]) == list(gate.EXPORT_COLUMNS)
