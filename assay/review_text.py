"""How the CLI words the review queue for a person: why an answer was sent, where an item stands
and who decided it, what its case expects, each scorer's reason, and what a decision or an Undo
changed (each run's passed count and verdict, each suite result's word, before -> after).

Pure functions of the API's JSON (`GET /api/v1/datasets/{id}/review`, `.../review/{item_id}`, the
answers of a decision, an Undo and a send), so the unit tests can pin each rule. Tenant text (a
question, an answer, a note, a reason) is printed with its control characters escaped
(`safe`), never raw."""

from __future__ import annotations

import json
from collections.abc import Mapping
from typing import Any

from assay.cli_common import one_line
from assay.text import DASH, case_label, count

FORMER_MEMBER = "a former member"
"""Who a person is when the API no longer knows their name (`name: null`: they left the
organization)."""

_REASONS = {
    "confirmed_regression": "confirmed regression",
    "judge_failed": "the judge could not grade it",
    "sent_by_hand": "sent by hand",
}

_EXPECTED_WORDS = {
    "reference": "reference",
    "counter_example": "not",
    "expected_calls": "calls",
    "checks": "checks",
}


def safe(text: Any) -> str:
    """`text` on one line, each control character (a newline, a terminal's escape) written as its
    escape (`\\n`, `\\x1b`), as `cli_common.one_line`: what the CLI prints of tenant data can
    never move the cursor."""
    return one_line(str(text))


def flat(text: Any) -> str:
    """`text` with its whitespace (newlines too) collapsed to single spaces, then `safe`."""
    return safe(" ".join(str(text).split()))


def person_words(who: Any) -> str:
    """A person of the API (`{user_id, name}`): their name; `a former member` when the name is
    null (they left the organization); `somebody` when nobody is named."""
    if not isinstance(who, Mapping) or not who.get("user_id"):
        return "somebody"
    name = who.get("name")
    return flat(name) if name else FORMER_MEMBER


def reason_words(item: Mapping[str, Any]) -> str:
    """Why an answer went to the queue: `confirmed regression`, `the judge could not grade it`,
    `sent by <name>` (by hand, with who sent it when the API names them); an unknown reason as
    the API gives it."""
    reason = str(item.get("reason") or "")
    if reason == "sent_by_hand" and isinstance(item.get("sent_by"), Mapping):
        return f"sent by {person_words(item['sent_by'])}"
    return _REASONS.get(reason, flat(reason) or DASH)


def verdict_words(item: Mapping[str, Any]) -> str:
    """Where an item stands, in words: `waiting`; `decided pass, corrected by <name>` (the verdict
    overturned the scorers) or `decided fail by <name>` (it agrees with them), the name `a former
    member` when the API has none; `replaced by ri...` (a newer answer of its case took its
    place)."""
    state = str(item.get("state") or "")
    if state == "decided":
        who = person_words(item.get("decided_by"))
        verdict = item.get("verdict") or DASH
        if item.get("corrected"):
            return f"decided {verdict}, corrected by {who}"
        return f"decided {verdict} by {who}"
    if state == "replaced":
        newer = item.get("replaced_by")
        return f"replaced by {newer}" if newer else "replaced by a newer answer"
    return state or DASH


def answered_by(item: Mapping[str, Any]) -> str:
    """The agent and the arm that answered: `agt_1 v2`, `agt_1 draft`."""
    label = item.get("arm_label") or item.get("arm_id")
    return f"{item.get('agent_id')} {flat(label)}" if label else str(item.get("agent_id"))


def item_row(item: Mapping[str, Any]) -> list[Any]:
    """One row of `assay review list`: item id, the case (its id and the start of its question),
    who answered, why it was sent, where it stands."""
    return [
        item.get("item_id"),
        safe(case_label(item.get("case_id"), item.get("question"))),
        answered_by(item),
        reason_words(item),
        verdict_words(item),
    ]


def queue_header(dataset_id: str, listing: Mapping[str, Any]) -> str:
    """The line above a listing: `dataset ds_1: 3 answers waiting for review` (the dataset's
    waiting count, whatever the filters keep)."""
    waiting = count(listing.get("waiting"), "answer")
    return f"dataset {dataset_id}: {waiting} waiting for review"


def value_words(value: Any) -> str:
    """A value of what a case expects: text as it is, anything else as compact JSON."""
    if isinstance(value, str):
        return flat(value)
    return flat(json.dumps(value, ensure_ascii=False, separators=(", ", ": ")))


def expected_lines(expected: Any) -> list[str]:
    """What the case expects, one line per field: `reference: 42`, `not: 41` (a counter example),
    `calls: [...]`, `checks: [...]`; `nothing given` when the case expects nothing."""
    if not isinstance(expected, Mapping) or not expected:
        return ["nothing given"]
    return [f"{_EXPECTED_WORDS.get(k, k)}: {value_words(v)}" for k, v in expected.items()]


def score_line(score: Mapping[str, Any]) -> str:
    """One scorer's word on the answer: `equals failed: expected 42, got 7`, `judge passed (score
    5)`, `judge could not decide`."""
    passed = score.get("passed")
    said = "passed" if passed else "could not decide" if passed is None else "failed"
    line = f"{score.get('scorer')} {said}"
    value = score.get("score")
    if value is not None and not isinstance(value, bool):
        line += f" (score {value:g})" if isinstance(value, int | float) else f" (score {value})"
    reason = score.get("reason")
    return f"{line}: {flat(reason)}" if reason else line


def text_lines(text: Any) -> list[str]:
    """Multi-line tenant text as lines to print (each `safe`); `(empty)` for none."""
    lines = [safe(line.rstrip()) for line in str(text or "").splitlines()]
    return lines if any(lines) else ["(empty)"]


def _arrow(before: Any, after: Any) -> str:
    return str(after) if before == after else f"{before} -> {after}"


def run_change_line(change: Mapping[str, Any]) -> str:
    """What a decision did to one run, from an audit entry's `runs[i]` (`{run_id, before, after}`,
    each `{cases, passed, failed, verdict, confirmed_regressions, ...}`): `run r1: passed 7 -> 8
    of 10; verdict fail; confirmed regressions 3 -> 2` (a part that did not change is said once)."""
    before = change.get("before") or {}
    after = change.get("after") or {}
    total = after.get("cases", before.get("cases"))
    parts = [
        f"passed {_arrow(before.get('passed'), after.get('passed'))}"
        + (f" of {total}" if total is not None else "")
    ]
    verdict = _arrow(before.get("verdict"), after.get("verdict"))
    parts.append(f"verdict {verdict}")
    regressions = (before.get("confirmed_regressions"), after.get("confirmed_regressions"))
    if regressions != (None, None):
        parts.append(f"confirmed regressions {_arrow(*regressions)}")
    return f"run {change.get('run_id')}: " + "; ".join(parts)


def suite_change_line(change: Mapping[str, Any]) -> str:
    """What a decision did to a suite result, from an audit entry's `suite_results[i]`: `suite
    nightly (run r1): failed -> passed`."""
    word = _arrow(change.get("before"), change.get("after"))
    return f"suite {change.get('suite_id')} (run {change.get('run_id')}): {word}"


def changes_lines(audit: Mapping[str, Any]) -> list[str]:
    """Every run and suite result an audit entry changed, a line each; one line saying no run
    rests on the answer when there is none (its run is gone or never completed)."""
    lines = [run_change_line(r) for r in audit.get("runs") or [] if isinstance(r, Mapping)]
    lines += [
        suite_change_line(s) for s in audit.get("suite_results") or [] if isinstance(s, Mapping)
    ]
    return lines or ["no completed run's numbers rest on this answer"]


def audit_head(audit: Mapping[str, Any]) -> str:
    """An audit entry's first line: `2026-12-06T01:00:00Z ana@example.com decided pass (waiting
    -> decided)`, `... took the decision back (decided -> waiting)`, with its note quoted."""
    who = person_words(audit.get("by"))
    if audit.get("action") == "undo":
        did = f"took back {audit.get('verdict_before') or 'the decision'}"
    else:
        did = f"decided {audit.get('verdict_after') or DASH}"
    states = _arrow(audit.get("state_before"), audit.get("state_after"))
    note = audit.get("note")
    return f"{audit.get('at')} {who} {did} ({states})" + (f': "{flat(note)}"' if note else "")


def decided_lines(decided: Mapping[str, Any], *, action: str) -> list[str]:
    """What `review decide` or `review undo` prints from the API's `{item, audit}`: the item and
    where it stands now, then each change (`changes_lines`) indented."""
    item = decided.get("item") or {}
    audit = decided.get("audit") or {}
    case = safe(case_label(item.get("case_id"), item.get("question")))
    if action == "undo":
        head = (
            f"took back the decision on review item {item.get('item_id')} ({case}): "
            f"{_undone_words(item)}"
        )
    else:
        head = f"review item {item.get('item_id')} ({case}): {verdict_words(item)}"
    return [head, *(f"  {line}" for line in changes_lines(audit))]


def _undone_words(item: Mapping[str, Any]) -> str:
    if item.get("state") == "waiting":
        return "it waits again; the scorers' word stands"
    return f"{verdict_words(item)} (a newer answer of its case waits); the scorers' word stands"


def send_lines(run_id: str, side: str, sent: Mapping[str, Any]) -> list[str]:
    """What `review send` prints from the API's send answer (`{routed_to_review,
    routed_replacing, not_sent: [{case_id, agent_id, why}], error}`): how many went, then each
    answer that did not and why, then why the queue refused the rest (when it did)."""
    went = int(sent.get("routed_to_review") or 0)
    replacing = int(sent.get("routed_replacing") or 0)
    head = f"sent {count(went, 'failed answer')} of run {run_id} ({side}) to review"
    if replacing:
        head += f" ({replacing} in place of an older answer waiting)"
    lines = [head]
    not_sent = [n for n in sent.get("not_sent") or [] if isinstance(n, Mapping)]
    if not_sent:
        lines.append(f"not sent: {count(len(not_sent), 'answer')}")
        lines += [f"  {n.get('case_id')}: {flat(n.get('why'))}" for n in not_sent]
    if not went and not not_sent and not sent.get("error"):
        lines.append(f"nothing to send: the {side} has no failed first answer")
    if sent.get("error"):
        lines.append(f"the queue refused the rest: {flat(sent['error'])}")
    return lines
