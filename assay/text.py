"""How the CLI words values for a person: aligned tables, durations, schedules, absent values.
Pure functions of their arguments (no I/O), so the unit tests can pin each rule."""

from __future__ import annotations

import difflib
import re
from collections.abc import Mapping, Sequence
from typing import Any

DASH = "-"
"""What a table shows for a value the API left out (None): never the word `None`."""

_DAYS = ["Sunday", "Monday", "Tuesday", "Wednesday", "Thursday", "Friday", "Saturday"]


def cell(value: Any) -> str:
    """`value` for one table cell: `-` for None or an empty string, `yes`/`no` for a bool, a float
    in its shortest form (`0`, `0.7`), the rest as `str` on one line."""
    if value is None or value == "":
        return DASH
    if isinstance(value, bool):
        return "yes" if value else "no"
    if isinstance(value, float):
        return f"{value:g}"
    return " ".join(str(value).split())


def table(headers: Sequence[str], rows: Sequence[Sequence[Any]]) -> str:
    """`rows` under `headers` in columns two spaces apart, each cell through `cell`; the last
    column is not padded. No rows: the headers alone. Ends without a newline."""
    texts = [[cell(v) for v in row] for row in rows]
    widths = [len(h) for h in headers]
    for row in texts:
        for i, text in enumerate(row):
            widths[i] = max(widths[i], len(text))

    def line(parts: Sequence[str]) -> str:
        return "  ".join(p.ljust(w) for p, w in zip(parts, widths, strict=False)).rstrip()

    return "\n".join([line(list(headers)), *(line(r) for r in texts)])


def duration_ms(ms: Any) -> str:
    """A duration given in milliseconds, rounded for a person: `-` for None, `<1 ms` below a
    millisecond, whole milliseconds below a second (`11 ms`), tenths of a second below a minute
    (`1.2 s`), then minutes and seconds (`2 min 5 s`)."""
    if ms is None:
        return DASH
    value = float(ms)
    if value < 1:
        return "<1 ms" if value > 0 else "0 ms"
    if value < 999.5:
        return f"{round(value)} ms"
    if value < 59_950:
        return f"{value / 1000:.1f} s"
    minutes, seconds = divmod(round(value / 1000), 60)
    return f"{minutes} min {seconds} s" if seconds else f"{minutes} min"


def usd(value: Any) -> str:
    """USD for a person: `-` for None, `$0.0042` below a cent (two significant digits), else
    `$1,234.56`."""
    if value is None:
        return DASH
    amount = float(value)
    if 0 < abs(amount) < 0.01:
        return f"${amount:.2g}"
    return f"${amount:,.2f}"


def _clock(minute: str, hour: str) -> str | None:
    if minute.isdigit() and hour.isdigit():
        return f"{int(hour):02d}:{int(minute):02d}"
    return None


def cron_words(cron: str, timezone: str | None = None) -> str:
    """A five-field cron expression in words where it is a common one: `every hour at :15`,
    `every day at 06:00 UTC`, `every Monday at 09:30 Europe/Paris`, `weekdays at 08:00`,
    `every 15 minutes`, `on day 1 of each month at 00:00`; anything else as `cron "<expr>"`.
    The timezone (default UTC) follows a time of day."""
    fields = cron.split()
    tz = f" {timezone or 'UTC'}"
    if len(fields) != 5:
        return f'cron "{cron}"'
    minute, hour, dom, month, dow = fields
    clock = _clock(minute, hour)
    if month != "*":
        return f'cron "{cron}"{tz}'
    if minute.startswith("*/") and minute[2:].isdigit() and (hour, dom, dow) == ("*", "*", "*"):
        return f"every {int(minute[2:])} minutes"
    if minute == "*" and (hour, dom, dow) == ("*", "*", "*"):
        return "every minute"
    if minute.isdigit() and (hour, dom, dow) == ("*", "*", "*"):
        return f"every hour at :{int(minute):02d}"
    if clock and dom == "*" and dow == "*":
        return f"every day at {clock}{tz}"
    if clock and dom == "*" and dow in ("1-5", "MON-FRI", "mon-fri"):
        return f"weekdays at {clock}{tz}"
    if clock and dom == "*" and dow.isdigit() and int(dow) <= 7:
        return f"every {_DAYS[int(dow) % 7]} at {clock}{tz}"
    if clock and dom.isdigit() and dow == "*":
        return f"on day {int(dom)} of each month at {clock}{tz}"
    return f'cron "{cron}"{tz}'


def schedule_words(triggers: Any) -> str:
    """A suite's `triggers` in words: its schedule (`cron_words`) and the events it runs on
    (`on publish`, `before promotion`, `on dependency change`), joined by `; `; `manual only`
    when there is none."""
    if not isinstance(triggers, dict):
        return "manual only"
    parts: list[str] = []
    schedule = triggers.get("schedule")
    if isinstance(schedule, dict) and schedule.get("cron"):
        parts.append(cron_words(str(schedule["cron"]), schedule.get("timezone")))
    for key, words in (
        ("on_publish", "on publish"),
        ("on_promotion", "before promotion"),
        ("on_dependency_change", "on dependency change"),
    ):
        if triggers.get(key):
            parts.append(words)
    return "; ".join(parts) or "manual only"


def count(n: Any, one: str, many: str | None = None) -> str:
    """`1 case`, `3 cases` (`many` for an irregular plural)."""
    value = int(n or 0)
    return f"{value} {one if value == 1 else (many or one + 's')}"


_INVALID_CHOICE = re.compile(r"invalid choice: '(?P<given>[^']*)' \(choose from (?P<choices>.*)\)")


def did_you_mean(message: str) -> str:
    """argparse's `invalid choice` error with the nearest choice suggested (`difflib`): "argument
    --scorer: invalid choice: 'equal' (choose from 'contains', 'equals', ...); did you mean
    equals?". Any other message, or a choice near none, comes back as it is."""
    found = _INVALID_CHOICE.search(message)
    if not found:
        return message
    choices = re.findall(r"'([^']*)'", found.group("choices"))
    near = difflib.get_close_matches(found.group("given"), choices, n=1)
    return f"{message}; did you mean {near[0]}?" if near else message


CASE_TEXT_CHARS = 60
"""How much of a case's input a listing shows beside its id."""


def case_label(case_id: Any, text: Any, most: int = CASE_TEXT_CHARS) -> str:
    """A case as a person finds it in a list: its id and the start of its input on one line,
    `case-115049a29853 "What is the capital of Spain?"` (whitespace and newlines collapsed, cut
    at `most` characters with `…`); the id alone when the input is not known or is empty."""
    flat = " ".join(str(text or "").split())
    if not flat:
        return str(case_id)
    if len(flat) > most:
        flat = flat[: most - 1].rstrip() + "…"
    return f'{case_id} "{flat}"'


def run_state(status: Any, phase: Any = None) -> str:
    """A run's state in words, each word once: `running`, `running, confirming` (rerunning flips),
    `completed` (its phase `done` is not repeated)."""
    said = str(status or "")
    if phase and str(phase) not in ("done", said) and said in ("queued", "running"):
        return f"{said}, {_PHASE_WORDS.get(str(phase), str(phase))}"
    return said


_PHASE_WORDS = {
    "answering": "first answers",
    "confirming": "rerunning flips",
    "finalizing": "finalizing",
}


def attempts_line(
    progress: Mapping[str, Any], *, arms: int | None = None, cases: int | None = None
) -> str:
    """A run's progress, saying what is counted: `attempts 32 of 32 (10 cases, 2 arms; reruns of
    flips included, so the total grows as flips are found) completed`. `progress` is the API's
    (`recorded`, `expected`, `status`, `phase`); `arms` and `cases` are said when known."""
    known = [count(n, what) for n, what in ((cases, "case"), (arms, "arm")) if n]
    sides = f"{', '.join(known)}; " if known else ""
    return (
        f"attempts {progress.get('recorded')} of {progress.get('expected')} ({sides}reruns of "
        f"flips included, so the total grows as flips are found) "
        f"{run_state(progress.get('status'), progress.get('phase'))}"
    )


def estimate_basis(est: Mapping[str, Any]) -> list[str]:
    """What an estimate (`POST .../eval-runs/estimate`) rests on, in words, one line per side
    priced by the fallback or borrowed from an earlier run:

    - `fallback`: "candidate (no model named): no run history or price known, so $0.05 a case is
      assumed (the service's EVAL_FALLBACK_CASE_COST_USD, or a typical case at the price its spec
      gives; give a price in the spec or a model profile)";
    - `reused`: "baseline: first answers reused from run RUN_ID, at no cost".
    A `history` side says nothing: its figure is what its recent runs cost."""
    out: list[str] = []
    for arm in est.get("arms") or []:
        model = arm.get("model")
        side = f"{arm.get('arm_id')} ({model or 'no model named'})"
        if arm.get("basis") == "fallback":
            out.append(
                f"{side}: no run history for it, so {usd(arm.get('per_case_usd'))} a case is "
                "assumed (a typical case at the price its spec gives; with no price, the "
                "service's EVAL_FALLBACK_CASE_COST_USD: give a price in the spec or a model "
                "profile)"
            )
        elif arm.get("basis") == "reused":
            run_id = arm.get("reused_run_id") or est.get("reused_baseline_run_id")
            out.append(f"{side}: first answers reused from run {run_id}, at no cost")
    reused = est.get("reused_baseline_run_id")
    if reused and not any("reused from run" in line for line in out):
        out.append(f"baseline: first answers reused from run {reused}")
    return out


RERUNS_AUTO_SAID = 'reruns "auto"'
"""How the API's warning saying what `reruns: "auto"` chose begins (`reruns_auto_line` says it
instead, so the CLI leaves that warning out where it prints the line)."""


def reruns_auto_line(auto: Any, ceiling_usd: Any = None, *, started: bool = False) -> str | None:
    """What `reruns: "auto"` chose, from an estimate's or a run's `reruns_auto`
    (`{chosen, reason, ...}`), worded as the console's start dialog words it: "Reruns: auto
    suggests 3 reruns of each flip: REASON. They cost up to $0.12." (`ceiling_usd`: the
    estimate's `rerun_ceiling_usd`, left out when None); a started run (`started`) says "chose".
    None when the reruns were not left to assay (`auto` not a mapping)."""
    if not isinstance(auto, Mapping):
        return None
    verb = "chose" if started else "suggests"
    reruns = count(auto.get("chosen"), "rerun")
    said = f"Reruns: auto {verb} {reruns} of each flip: {auto.get('reason')}."
    return said if ceiling_usd is None else f"{said} They cost up to {usd(ceiling_usd)}."


def warnings_besides_reruns_auto(found: Mapping[str, Any]) -> list[str]:
    """An estimate's or a start's `warnings` but the one saying what `reruns: "auto"` chose, when
    `reruns_auto` says it (`reruns_auto_line`); all of them otherwise."""
    said = [str(w) for w in found.get("warnings") or []]
    if not isinstance(found.get("reruns_auto"), Mapping):
        return said
    return [w for w in said if not w.startswith(RERUNS_AUTO_SAID)]


_CALL_WORDS = {
    "blocked": "blocked — not executed",
    "replayed": "replayed from the recording",
    "divergent": "divergent — held",
    "unverified": "unverified — reported by the agent",
    "intended": "intended — recorded, not executed",
}


def call_status_words(call: Mapping[str, Any]) -> str:
    """A tool call's status in words (docs/guides/tools.md, "Reading the calls"): `executed on
    shop-test` (the connection it ran on), `blocked — not executed`, `replayed from the
    recording`, `divergent — held`, `unverified — reported by the agent`; a call kept without a
    status is `executed`."""
    status = str(call.get("status") or "executed")
    if status == "executed":
        where = call.get("connection_id")
        return f"executed on {where}" if where else "executed"
    return _CALL_WORDS.get(status, status)


def call_line(call: Mapping[str, Any]) -> str:
    """One call on one line: its name and status in words, then its error or, for a call not
    executed, why: `refund blocked — not executed (tool 'refund' may write ...)`."""
    said = f"{call.get('name')} {call_status_words(call)}"
    why = call.get("error") or (call.get("reason") if call.get("status") != "executed" else None)
    return f"{said} ({' '.join(str(why).split())})" if why else said


def call_counts(blocked: Any, divergent: Any) -> str:
    """A case's calls that did not run as asked, counted: `2 blocked, 1 divergent`; "" for none."""
    return ", ".join(
        f"{int(n)} {word}" for n, word in ((blocked, "blocked"), (divergent, "divergent")) if n
    )


def diverged_line(n: Any) -> str:
    """`3 cases diverged from the recording`."""
    return f"{count(n, 'case')} diverged from the recording"
