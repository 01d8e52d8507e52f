"""What `assay demo` says, in the words the CLI and the console use: pure text from the API's
answers, so it can be read and tested without a stack (`cli_demo` prints it).

Two kinds of verdict meet on the demo's screen, and each keeps its own words:

- a version's verdict on its dataset: `pass`, `partial`, `fail` or `none` (never evaluated);
- a comparison's verdict against its baseline: `better`, `worse`, `mixed` or `no difference`
  (with `overall`, the exact McNemar test's `worse`/`better` when it tells the sides apart).

`LEGEND` is the one line that says so where both appear. A guarded promotion is one plain
sentence ("v3 onto production: held back: the guard's suite failed (...)").
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from typing import Any

from assay.text import run_state

VERSION_VERDICTS = ("pass", "partial", "fail", "none")
"""A version's verdict on its dataset (`domain.enums.Verdict`)."""

COMPARISON_VERDICTS = ("better", "worse", "mixed", "no difference")
"""A comparison's verdict against its baseline, as a person reads it."""

LEGEND = (
    "verdicts: a version passes, is partial or fails its dataset (every case, some or none "
    "passed; none: never evaluated); a comparison is better, worse, mixed or no difference "
    "against its baseline"
)
"""Printed once where both kinds of verdict meet."""

_COMPARISON_WORDS = {"no_difference": "no difference", "invalid": "not comparable"}

_PROMOTION_WORDS = {"promoted": "promoted", "refused": "held back", "waiting": "still waiting"}


def starting_line(endpoint: str | None) -> str:
    """The demo's first line (rich markup), naming where its AWS services are: `endpoint` is the
    `AWS_ENDPOINT_URL` it runs against (LocalStack, a moto server of one's own), or None for
    the embedded moto server the stack starts on 127.0.0.1."""
    where = f"AWS at {endpoint}, AWS_ENDPOINT_URL" if endpoint else "moto server on 127.0.0.1"
    return f"[bold]assay demo[/bold]: starting the embedded stack ({where})…"


def comparison_word(verdict: str | None) -> str:
    """A comparison's verdict as a person reads it: `no_difference` -> "no difference",
    `invalid` -> "not comparable", None -> "none"; the others as they are."""
    if verdict is None:
        return "none"
    return _COMPARISON_WORDS.get(verdict, verdict)


def _count(n: Any, one: str, many: str | None = None) -> str:
    count = int(n or 0)
    return f"{count} {one if count == 1 else (many or one + 's')}"


def confirmed(comparison: Mapping[str, Any]) -> str:
    """ "209 confirmed regressions, 152 confirmed fixes" (the CLI's words)."""
    return (
        f"{_count(comparison.get('confirmed_regressions'), 'confirmed regression')}, "
        f"{_count(comparison.get('confirmed_fixes'), 'confirmed fix', 'confirmed fixes')}"
    )


def verdict_line(comparison: Mapping[str, Any]) -> str:
    """The comparison's verdict in one line, as `assay comparison` says it: "verdict mixed: 209
    confirmed regressions, 152 confirmed fixes (of 361 flips); overall worse (exact McNemar p =
    0.00315)"; "overall not significant" when the test does not tell the sides apart."""
    flips = comparison.get("flips") or []
    p = comparison.get("p_value")
    overall = comparison.get("overall") or "not significant"
    test = f" (exact McNemar p = {p:.3g})" if isinstance(p, int | float) else ""
    return (
        f"verdict {comparison_word(comparison.get('verdict'))}: {confirmed(comparison)} "
        f"(of {_count(len(flips), 'flip')}); overall {overall}{test}"
    )


def _percent(rate: Any) -> str:
    return f"{rate * 100:.1f}%" if isinstance(rate, int | float) else "-"


def gate_sentence(
    version: int,
    promotion: Mapping[str, Any],
    result: Mapping[str, Any] | None,
    run: Mapping[str, Any] | None,
    comparison: Mapping[str, Any] | None,
    guard: Mapping[str, Any],
) -> str:
    """A guarded promotion as one plain sentence: "v3 onto production: held back: the guard's
    suite failed (209 confirmed regressions, 80 allowed; pass rate 34.7% is below the minimum
    50.0%)" or "v4 onto production: promoted: the guard's suite passed (79 confirmed regressions,
    up to 80 allowed; pass rate 56.3%, at least 50.0%)".

    Args:
        promotion: the promotion as decided (`status`, `environment_id`).
        result: the guard's suite result (`result`, `reasons`), or None when it has none.
        run, comparison: the guard's run and its comparison, or None.
        guard: the suite's threshold (`min_pass_rate`, `max_regressions`).
    """
    status = str(promotion.get("status"))
    head = (
        f"v{version} onto {promotion.get('environment_id')}: {_PROMOTION_WORDS.get(status, status)}"
    )
    if not result:
        return f"{head}: the guard's suite has no result"
    luck = noise_sentence(run)  # said on its own line (`noise_line`), not twice
    reasons = [str(r) for r in result.get("reasons") or [] if r != luck]
    if not reasons:
        parts = []
        if comparison is not None:
            parts.append(
                f"{_count(comparison.get('confirmed_regressions'), 'confirmed regression')}, "
                f"up to {guard.get('max_regressions')} allowed"
            )
        rate = ((run or {}).get("outcome") or {}).get("pass_rate")
        if rate is not None:
            parts.append(
                f"pass rate {_percent(rate)}, at least {_percent(guard.get('min_pass_rate'))}"
            )
        reasons = ["; ".join(parts)] if parts else []
    why = f" ({'; '.join(reasons)})" if reasons else ""
    return f"{head}: the guard's suite {result.get('result')}{why}"


def noise_sentence(run: Mapping[str, Any] | None) -> str | None:
    """The compared run's noise sentence (`outcome.noise.sentence`, docs/concepts/noise.md), or
    None for a run that compared nothing."""
    measured = ((run or {}).get("outcome") or {}).get("noise") or {}
    sentence = measured.get("sentence")
    return str(sentence) if sentence else None


def noise_line(run: Mapping[str, Any] | None) -> str | None:
    """How likely the run's confirmed regressions are luck, as the demo prints it under the
    comparison's verdict: "noise: 209 confirmed regressions. With the noise earlier runs of this
    spec measured, ..."; None for a run that compared nothing."""
    sentence = noise_sentence(run)
    return f"noise: {sentence}" if sentence else None


OWN_AGENT_LINE = (
    "next, your own agent: `make dev` keeps a stack up (and its data) until Ctrl-C; the README's "
    '"Five minutes with your own agent" goes from there'
)
"""Where a person goes after the demo."""


def closing_lines(console_url: str, *, serve: bool, seconds: float) -> list[str]:
    """The demo's last lines, printed once they are true.

    Without `serve` (printed after the stack stopped): that it has stopped, how to keep it up with
    a live signed-in console link (`make demo ARGS=--serve`), and the next step for one's own
    agent; no link, as it would already be dead. With `serve` (printed while the stack is up): the
    same next step, then the live console link, last.
    """
    if serve:
        return [
            f"demo finished in {seconds:.1f} s; the stack stays up until Ctrl-C",
            OWN_AGENT_LINE,
            f"console (signed in; works until Ctrl-C): {console_url}",
        ]
    return [
        f"demo finished in {seconds:.1f} s; the stack has stopped, and its console with it",
        "to look around in the console, run `make demo ARGS=--serve` (`assay demo --serve`): it "
        "prints a live signed-in console link and keeps the stack up until Ctrl-C",
        OWN_AGENT_LINE,
    ]


def progress_state(progress: Mapping[str, Any]) -> str:
    """What a demo progress bar says after its count of attempts: `(reruns of flips included)
    running, rerunning flips`, `(reruns of flips included) completed` - each state word once
    (a run's phase `done` is not said beside `completed`)."""
    state = run_state(progress.get("status"), progress.get("phase"))
    return f"(reruns of flips included) {state}"


def summary_line(summaries: Sequence[Mapping[str, Any]]) -> str:
    """The versions' summaries in one line: "v1 partial (286 of 1319 passed), v2 ..."."""
    return ", ".join(
        f"v{s.get('version')} {s.get('verdict')} ({s.get('passed')} of {s.get('total')} passed)"
        for s in summaries
    )
