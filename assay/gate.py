"""The CI gate: what an eval run, a suite result or a promotion means for a pipeline, as an exit
code, and the reports a pipeline keeps (issue 13, scope 1). Pure: it reads the API's JSON and
writes text; nothing here calls the API.

Exit codes (also in the README, "assay in CI"):

- `0` **passed**: nothing confirmed broke and nothing is undecided.
- `1` **broke**: a confirmed regression (docs/concepts/verdicts.md) whose chance of luck is
  within `--max-luck` (or any, without the flag), a pass
  rate under `--min-pass-rate`, a suite result `failed`, a promotion refused.
- `2` **inconclusive**: cases left undecided (incomplete or ungraded), an invalid comparison, a
  side that could not run, a run that ended `cancelled`, `failed` or `budget_exceeded`, a suite
  result `inconclusive`, `error` or `not_run`, confirmed regressions that a candidate that changed
  nothing would show more often than `--max-luck` (docs/concepts/noise.md).
- `3` **error**: the API refused or could not be reached (auth, a 4xx, a timeout).

A confirmed regression outranks undecided cases: what broke is known whatever else is not.
"""

from __future__ import annotations

import csv
import io
import json
import xml.etree.ElementTree as ET
from collections.abc import Iterable
from dataclasses import dataclass, field
from typing import Any

from assay.text import call_line, case_label

JSON = dict[str, Any]

PASSED, BROKE, INCONCLUSIVE, ERROR = 0, 1, 2, 3
WORDS = {PASSED: "passed", BROKE: "broke", INCONCLUSIVE: "inconclusive", ERROR: "error"}

_SUITE_CODES = {
    "passed": PASSED,
    "baseline_set": PASSED,
    "failed": BROKE,
    "inconclusive": INCONCLUSIVE,
    "error": INCONCLUSIVE,
    "not_run": INCONCLUSIVE,
}


@dataclass(frozen=True)
class Gate:
    """A gate's decision: `code` (the exit code), its `word`, and the sentences that say why."""

    code: int
    reasons: list[str] = field(default_factory=list)

    @property
    def word(self) -> str:
        return WORDS[self.code]

    def as_json(self) -> JSON:
        return {"exit_code": self.code, "result": self.word, "reasons": list(self.reasons)}


def noise_sentence(run: JSON) -> str | None:
    """How far to trust the run's regression verdict given the noise it measured (the run's
    `outcome.noise.sentence`, docs/concepts/noise.md); None without a comparison."""
    noise = (run.get("outcome") or {}).get("noise")
    sentence = noise.get("sentence") if isinstance(noise, dict) else None
    return str(sentence) if sentence else None


def chance(value: float) -> str:
    """A chance 0..1 in the run page's words: `23 %`, `0.4 %`, `under 0.1 %`."""
    points = 100 * float(value)
    if points == 0:
        return "0 %"
    if points < 0.1:
        return "under 0.1 %"
    if points < 10 and round(points, 1) != round(points):
        return f"{points:.1f} %"
    return f"{round(points)} %"


def bound_text(value: float) -> str:
    """A bound the user gave (a fraction 0..1) as the percentage they wrote, never rounded away:
    `0.0005` -> `0.05 %`, `0.01` -> `1 %`, `0.125` -> `12.5 %`."""
    return f"{round(100 * float(value), 6):g} %"


MAX_RERUNS = 5
"""The most reruns a run may ask for (0-5)."""


def luck_reason(run: JSON, max_luck: float) -> str | None:
    """Why the run's confirmed regressions may be luck, when its measured noise says so.

    The rule: the run's `outcome.noise.p_luck_regression` (the chance that a candidate that
    changed nothing shows at least one confirmed regression, docs/concepts/noise.md) above
    `max_luck` (a fraction, 0.01 = 1 %) gives a sentence with that chance and the reruns that
    would settle it: the smallest count in 1-5 whose chance in `luck_by_reruns` is under
    `max_luck`, or that none does, with the run's `advice` when it has one.

    Returns:
        The sentence, or None when the noise was not measured or the chance is within the bound.
    """
    noise = (run.get("outcome") or {}).get("noise")
    if not isinstance(noise, dict) or noise.get("p_luck_regression") is None:
        return None
    luck = float(noise["p_luck_regression"])
    if luck <= max_luck:
        return None
    by_reruns = [float(x) for x in noise.get("luck_by_reruns") or []]
    settles = next((r for r in range(1, len(by_reruns)) if by_reruns[r] < max_luck), None)
    said = (
        f"a candidate that changed nothing would show a confirmed regression in {chance(luck)} "
        f"of runs, over --max-luck {bound_text(max_luck)}"
    )
    if settles is not None:
        reruns = "1 rerun" if settles == 1 else f"{settles} reruns"
        return f"{said}; {reruns} would bring that under {bound_text(max_luck)}"
    said += f"; no count of reruns up to {MAX_RERUNS} brings that under {bound_text(max_luck)}"
    advice = noise.get("advice")
    if advice and float(noise.get("bound") or 0) == max_luck:
        return f"{said}. {advice}"
    return (
        f"{said}. A steadier model (e.g. a lower temperature) would, or fewer cases it answers "
        "unsteadily; a stability run measures the noise on more tries."
    )


def percent(rate: Any) -> str:
    """A rate 0..1 as a percentage with one decimal (`n/a` for None)."""
    return "n/a" if rate is None else f"{100 * float(rate):.1f} %"


def _names(ids: list[str], most: int = 10) -> str:
    shown = ", ".join(ids[:most])
    return shown + (f" and {len(ids) - most} more" if len(ids) > most else "")


def candidate_arm(run: JSON) -> str:
    """The first candidate arm's id (`candidate` unless the run names another)."""
    for arm in run.get("arms") or []:
        if arm.get("role") == "candidate":
            return str(arm.get("arm_id"))
    return str((run.get("outcome") or {}).get("arm_id") or "candidate")


def decide_run(
    run: JSON,
    comparison: JSON | None,
    *,
    min_pass_rate: float | None = None,
    max_luck: float | None = None,
) -> Gate:
    """The gate of an ended run (`GET /eval-runs/{id}`) and its comparison (`GET
    .../comparison`, None without a baseline). `min_pass_rate` is a fraction (0.8 = 80 %) the
    candidate's settled pass rate must reach. A run still queued or running is inconclusive.

    `max_luck` (a fraction, 0.01 = 1 %): confirmed regressions whose chance of luck is above it
    (`luck_reason`) make the run inconclusive instead of broke, the reason saying that chance and
    the reruns that would settle it; a run whose noise was not measured is unaffected, and a pass
    rate under the minimum still breaks."""
    status = run.get("status")
    if status in ("queued", "running"):
        return Gate(INCONCLUSIVE, [f"the run is still {status}"])
    if status != "completed":
        why = f": {run['reason']}" if run.get("reason") else ""
        return Gate(INCONCLUSIVE, [f"the run ended {status}{why}"])
    broke: list[str] = []
    unsure: list[str] = []
    outcome = run.get("outcome") or {}
    summary = (run.get("summaries") or {}).get(candidate_arm(run)) or {}
    if summary.get("could_not_run"):
        unsure.append(f"the candidate could not run: {summary['could_not_run']}")
    if comparison is not None:
        if comparison.get("verdict") == "invalid":
            unsure.append(f"the comparison is invalid: {comparison.get('invalid_reason')}")
        for arm, error in (comparison.get("could_not_run") or {}).items():
            if arm != candidate_arm(run) or not summary.get("could_not_run"):
                unsure.append(f"side {arm} could not run: {error}")
        regressions = [
            case_label(f["case_id"], f.get("question"))
            for f in comparison.get("flips") or []
            if f.get("outcome") == "regression" and f.get("confirmed")
        ]
        if regressions:
            said = (
                f"{len(regressions)} confirmed regression{'s' * (len(regressions) != 1)}: "
                f"{_names(regressions)}"
            )
            luck = luck_reason(run, max_luck) if max_luck is not None else None
            if luck is None:
                broke.append(said)
            else:
                unsure.append(f"{said}; but {luck}")
        incomplete = int((comparison.get("counts") or {}).get("incomplete") or 0)
        if incomplete:
            unsure.append(
                f"{incomplete} case{'s' * (incomplete != 1)} left undecided on one side or both"
            )
    undecided = int(outcome.get("undecided") or 0)
    if undecided and (comparison is None or not (comparison.get("counts") or {}).get("incomplete")):
        reasons = (summary.get("quality") or {}).get("undecided_reasons") or {}
        why = f" ({', '.join(f'{k}: {v}' for k, v in reasons.items())})" if reasons else ""
        unsure.append(f"{undecided} case{'s' * (undecided != 1)} undecided{why}")
    rate = outcome.get("pass_rate")
    if min_pass_rate is not None and (rate is None or float(rate) < min_pass_rate):
        broke.append(f"pass rate {percent(rate)} is under the minimum {percent(min_pass_rate)}")
    if broke:
        return Gate(BROKE, broke + unsure)
    if unsure:
        return Gate(INCONCLUSIVE, unsure)
    return Gate(PASSED, [_passed_sentence(outcome, comparison)])


def _passed_sentence(outcome: JSON, comparison: JSON | None) -> str:
    rate = f"pass rate {percent(outcome.get('pass_rate'))}"
    if comparison is None:
        return f"no baseline to compare with; {rate}"
    fixes = int(comparison.get("confirmed_fixes") or 0)
    fixed = f", {fixes} confirmed fix{'es' * (fixes != 1)}" if fixes else ""
    return f"no confirmed regression{fixed}; {rate}"


def decide_suite_result(result: JSON) -> Gate:
    """The gate of one suite result (`GET .../suites/{id}/results`): its word and reasons."""
    word = str(result.get("result"))
    code = _SUITE_CODES.get(word, INCONCLUSIVE)
    reasons = [str(r) for r in result.get("reasons") or []] or [f"the suite result is {word}"]
    return Gate(code, reasons)


def decide_promotion(promotion: JSON) -> Gate:
    """The gate of a promotion (`GET .../promotions/{id}`): promoted, refused, or still waiting."""
    status = promotion.get("status")
    reason = promotion.get("reason")
    if status == "promoted":
        reused = [
            f"guard {sid} stood on its pass through review (run {g.get('run_id')}): not run again"
            for sid, g in sorted((promotion.get("guards") or {}).items())
            if isinstance(g, dict) and g.get("reused")
        ]
        return Gate(PASSED, [f"version {promotion.get('version')} is promoted", *reused])
    if status == "refused":
        return Gate(BROKE, [f"the promotion was refused: {reason}" if reason else "refused"])
    return Gate(INCONCLUSIVE, [f"the promotion is still {status}"])


# --- reports ---------------------------------------------------------------------------------


def _side(case: JSON, arm: str) -> JSON:
    return (case.get("arms") or {}).get(arm) or {}


def _first_attempt(case: JSON, arm: str) -> JSON:
    attempts = _side(case, arm).get("attempts") or []
    return attempts[0] if attempts else {}


def _tries(case: JSON, arm: str) -> list[str]:
    return [str(a.get("state")) for a in _side(case, arm).get("attempts") or []]


def _expected(case: JSON) -> str:
    expects = case.get("expects") or {}
    reference = expects.get("reference")
    if reference not in (None, ""):
        return str(reference)
    if expects.get("checks"):
        return json.dumps(expects["checks"], ensure_ascii=False)
    return "(no reference: graded by its checks or judge)"


def _question_text(question: Any) -> str:
    """A case's input as a report writes it: a string as it is, anything else as JSON."""
    if question is None or question == "":
        return "(none)"
    if isinstance(question, str):
        return question
    return json.dumps(question, ensure_ascii=False)


def _clean_xml(text: str) -> str:
    """`text` without the characters XML 1.0 cannot hold (an answer may carry any)."""
    return "".join(
        ch
        for ch in text
        if ch in "\t\n\r"
        or 0x20 <= ord(ch) <= 0xD7FF
        or 0xE000 <= ord(ch) <= 0xFFFD
        or 0x10000 <= ord(ch) <= 0x10FFFF
    )


def _calls_text(case: JSON, arm: str) -> str:
    """The calls of the case's attempts on `arm`, one a line (`try 1: refund blocked — not
    executed (...)`); "" when it made none."""
    lines = [
        f"try {attempt.get('attempt') or n}: {call_line(call)}"
        for n, attempt in enumerate(_side(case, arm).get("attempts") or [], 1)
        for call in attempt.get("calls") or []
        if isinstance(call, dict)
    ]
    return "\n".join(lines)


def junit(run: JSON, cases: Iterable[JSON], gate: Gate) -> str:
    """A JUnit XML report: one testsuite for the run, one testcase per case of the candidate.
    A case whose candidate side settled `failed` is a `<failure>` carrying what it expected, the
    answer and the scorers' reasons (and `regression` when it broke against the baseline); one
    left `incomplete` or `ungraded` is an `<error>`; the run's gate and ids are properties.
    Each testcase's `name` is the case id alone (CI tools key on it); the case as the text output
    names it, `id "start of its question"` (`assay.text.case_label`), is its `question` property
    and opens the message of its failure or error, whose text starts with the whole question.

    Tool calls (docs/guides/tools.md, "Reading the calls"): a case with calls has `blocked_calls`
    and `divergent_calls` properties (counted over the case's attempts as the API gives them) and
    a `<system-out>` with each of the candidate's calls, one a line, with their status in words;
    the suite's `diverged_cases` property counts the cases with a divergent call (`cases` is every
    case of the run)."""
    arm = candidate_arm(run)
    suite = ET.Element("testsuite", name=f"assay {run.get('agent_id')} on {run.get('dataset_id')}")
    props = ET.SubElement(suite, "properties")
    for name, value in (
        ("run_id", run.get("run_id")),
        ("status", run.get("status")),
        ("gate", gate.word),
        ("exit_code", gate.code),
        ("gate_reasons", "; ".join(gate.reasons)),
        ("noise", noise_sentence(run) or ""),
    ):
        ET.SubElement(props, "property", name=name, value=_clean_xml(str(value)))
    counts = {"tests": 0, "failures": 0, "errors": 0}
    diverged = 0
    for case in cases:
        counts["tests"] += 1
        diverged += bool(case.get("divergent_calls"))
        first = _first_attempt(case, arm)
        tc = ET.SubElement(
            suite,
            "testcase",
            name=str(case.get("case_id")),
            classname=f"{run.get('dataset_id')}.v{run.get('dataset_version')}",
            time=f"{float(first.get('latency_ms') or 0) / 1000:.3f}",
        )
        question = (case.get("expects") or {}).get("input")
        label = case_label(case.get("case_id"), question)
        case_props: list[tuple[str, Any]] = (
            [("question", label)] if label != str(case.get("case_id")) else []
        )
        calls = _calls_text(case, arm)
        if calls or case.get("blocked_calls") or case.get("divergent_calls"):
            case_props += [
                ("blocked_calls", int(case.get("blocked_calls") or 0)),
                ("divergent_calls", int(case.get("divergent_calls") or 0)),
            ]
        if case_props:
            tc_props = ET.SubElement(tc, "properties")
            for name, value in case_props:
                ET.SubElement(tc_props, "property", name=name, value=_clean_xml(str(value)))
        settled = _side(case, arm).get("settled")
        detail = "\n".join(
            [
                f"question: {_question_text(question)}",
                f"expected: {_expected(case)}",
                f"answer: {first.get('answer') if first.get('answer') is not None else '(none)'}",
                f"tries: {', '.join(_tries(case, arm)) or 'none'}",
                f"reason: {first.get('reason') or ''}",
            ]
        )
        if settled == "failed":
            counts["failures"] += 1
            outcome = case.get("outcome")
            kind = "regression" if outcome == "regression" else "failed"
            el = ET.SubElement(
                tc,
                "failure",
                type=kind,
                message=_clean_xml(f"{label}: {first.get('reason') or kind}"),
            )
            el.text = _clean_xml(detail)
        elif settled != "passed":
            counts["errors"] += 1
            el = ET.SubElement(
                tc,
                "error",
                type=str(settled or "incomplete"),
                message=_clean_xml(f"{label}: {first.get('reason') or 'undecided'}"),
            )
            el.text = _clean_xml(detail)
        if calls:
            ET.SubElement(tc, "system-out").text = _clean_xml(calls)
    ET.SubElement(props, "property", name="diverged_cases", value=str(diverged))
    for k, v in counts.items():
        suite.set(k, str(v))
    ET.indent(suite)
    return (
        '<?xml version="1.0" encoding="UTF-8"?>\n' + ET.tostring(suite, encoding="unicode") + "\n"
    )


def _md(text: Any, most: int = 120) -> str:
    """`text` for one Markdown table cell: one line, pipes escaped, cut at `most` characters."""
    one = " ".join(str(text if text is not None else "").split())
    one = one if len(one) <= most else one[: most - 1] + "…"
    return one.replace("\\", "\\\\").replace("|", "\\|").replace("<", "&lt;")


def _replayed(arm: JSON) -> str:
    """How a side's tool calls were answered, when from a recording: " (from recording rec-1)"."""
    replay = arm.get("replay")
    return f" ({replay.get('label')})" if isinstance(replay, dict) and replay.get("label") else ""


def _subject(run: JSON) -> str:
    arm: JSON = next((a for a in run.get("arms") or [] if a.get("role") == "candidate"), {})
    if arm.get("draft"):
        return "The draft" + _replayed(arm)
    return f"Version {arm.get('version', run.get('resolved_version'))}" + _replayed(arm)


def markdown(
    run: JSON, comparison: JSON | None, gate: Gate, broken: list[JSON], *, url: str | None = None
) -> str:
    """A pull-request comment: the gate's word, the verdict in a few sentences, and the cases
    that broke (question, expected, answer, reason)."""
    lines = [f"### assay: {gate.word} (exit {gate.code})", ""]
    baseline = next((a for a in run.get("arms") or [] if a.get("role") == "baseline"), None)
    against = ""
    if baseline is not None:
        against = (
            " against the draft"
            if baseline.get("draft")
            else f" against version {baseline.get('version')}"
        ) + _replayed(baseline)
    lines.append(
        f"{_subject(run)}{against} on dataset `{run.get('dataset_id')}` "
        f"(version {run.get('dataset_version')}), run `{run.get('run_id')}`: {run.get('status')}."
    )
    outcome = run.get("outcome") or {}
    if comparison is not None and comparison.get("verdict"):
        regressions = int(comparison.get("confirmed_regressions") or 0)
        fixes = int(comparison.get("confirmed_fixes") or 0)
        parts = [
            f"{n} case{'s' * (n != 1)} {what}"
            for n, what in ((regressions, "broke"), (fixes, "fixed"))
            if n
        ]
        they = "they were" if regressions + fixes != 1 else "it was"
        sentence = (
            f"{' and '.join(parts)} every time {they} asked"
            if parts
            else "no case broke or was fixed on every try"
        ) + f"; verdict **{comparison['verdict']}**"
        p = comparison.get("p_value")
        if comparison.get("overall") and isinstance(p, int | float):
            sentence += f", {comparison['overall']} overall (exact McNemar p = {p:.3g})"
        lines.append(sentence + ".")
        lines.append(
            f"Pass rate {percent(comparison.get('pass_rate_before'))} before, "
            f"{percent(comparison.get('pass_rate_after'))} after."
        )
    elif outcome:
        lines.append(
            f"Pass rate {percent(outcome.get('pass_rate'))} "
            f"({outcome.get('passed')}/{outcome.get('total')} passed); no baseline to compare with."
        )
    luck = noise_sentence(run)
    if luck:
        lines += ["", f"Noise: {_md(luck, 400)}"]
    lines += ["", *[f"- {r}" for r in gate.reasons]]
    if broken:
        arm = candidate_arm(run)
        lines += [
            "",
            f"**Cases that broke** ({len(broken)}):",
            "",
            "| case | question | expected | answer | reason |",
            "|---|---|---|---|---|",
        ]
        for case in broken[:50]:
            first = _first_attempt(case, arm)
            question = (case.get("expects") or {}).get("input")
            lines.append(
                f"| {_md(case.get('case_id'), 40)} | {_md(question)} "
                f"| {_md(_expected(case), 60)} | {_md(first.get('answer'), 60)} "
                f"| {_md(first.get('reason'))} |"
            )
        if len(broken) > 50:
            lines.append(f"\n…and {len(broken) - 50} more (see the run).")
    if url:
        lines += ["", f"[The run]({url})"]
    return "\n".join(lines) + "\n"


# --- export ----------------------------------------------------------------------------------

EXPORT_COLUMNS = (
    "case_id",
    "outcome",
    "arm_id",
    "settled",
    "tries",
    "answer",
    "reason",
    "expected",
    "input",
    "tags",
    "cost_usd",
    "latency_ms",
)


def export_rows(cases: Iterable[JSON]) -> Iterable[JSON]:
    """One row per case and side: `EXPORT_COLUMNS`, the first answer's answer, reason, cost and
    latency, every try's state joined by `,`."""
    for case in cases:
        expects = case.get("expects") or {}
        for arm_id, side in (case.get("arms") or {}).items():
            attempts = side.get("attempts") or []
            first = attempts[0] if attempts else {}
            yield {
                "case_id": case.get("case_id"),
                "outcome": case.get("outcome"),
                "arm_id": arm_id,
                "settled": side.get("settled"),
                "tries": ",".join(str(a.get("state")) for a in attempts),
                "answer": first.get("answer"),
                "reason": first.get("reason"),
                "expected": expects.get("reference"),
                "input": expects.get("input")
                if isinstance(expects.get("input"), str)
                else json.dumps(expects.get("input"), ensure_ascii=False),
                "tags": ",".join(expects.get("tags") or []),
                "cost_usd": first.get("cost_usd"),
                "latency_ms": first.get("latency_ms"),
            }


def csv_text(rows: Iterable[JSON]) -> Iterable[str]:
    """`rows` as CSV text, the header first, a chunk per row (a cell that a spreadsheet would
    read as a formula is prefixed with `'`)."""
    buf = io.StringIO()
    writer = csv.DictWriter(buf, fieldnames=list(EXPORT_COLUMNS), lineterminator="\n")
    writer.writeheader()
    yield buf.getvalue()
    for row in rows:
        buf.seek(0)
        buf.truncate()
        writer.writerow({k: _cell(v) for k, v in row.items()})
        yield buf.getvalue()


def _cell(value: Any) -> Any:
    if isinstance(value, str) and value[:1] in ("=", "+", "-", "@", "\t", "\r"):
        return "'" + value
    return "" if value is None else value
