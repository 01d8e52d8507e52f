"""What an agent answered, bounded once where it is received (docs/reference/runtimes.md).

An agent's answer is whatever it sends: a call's `arguments` or `result` may nest hundreds of levels
deep, hold integers too long to print, floats JSON cannot carry, keys that are not strings, values
that are not JSON at all (a `python` agent returns Python objects), or be megabytes long. Every
later step - serialising the calls, redacting them, measuring them, writing the attempt - must not
raise on such a shape, for an error there is assay's own and ends the whole eval run. So
`bound_answer` turns the answer into one whose every value is a JSON value that is safe to handle,
and says what made it malformed when something could not be kept faithfully; the caller then
records that attempt as the agent's crash.

The rule, for each call's `arguments` and `result`:

- strings (keys too) are cleaned by `domain.text.clean_text` (NUL and lone surrogates → U+FFFD);
- `NaN` and infinities are kept as null (as `domain.text.clean_value` does);
- an integer of more than `MAX_INTEGER_DIGITS` digits is kept as the nearest float; one past what a
  float holds is malformed;
- a tuple is kept as a list; an integer key as its decimal text;
- nesting deeper than `MAX_NESTING` levels, any other key, or any other value is malformed: the
  place is kept as `TOO_DEEP` or `NOT_JSON`;
- a value taking more than `MAX_VALUE_BYTES` of JSON is kept cut, as
  `{"_truncated": true, "text": <its first bytes of JSON>}` (not a failure; the agent said it).

Names, models, guardrails and call errors or reasons are cleaned and cut to `MAX_NAME_CHARS` or
`MAX_TEXT_CHARS`. All of an answer's calls together take at most `MAX_CALLS_BYTES` of JSON as
stored (`bound_calls`): past it a call is kept without its result, then without its arguments,
then left out. The answer's text is cleaned, not cut (its attempt keeps it cut,
`ASSAY_ANSWER_MAX_BYTES`).

Pure: no I/O.
"""

from __future__ import annotations

import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from chalicelib.domain.models import AgentAnswer, ToolCall
from chalicelib.domain.text import MAX_INTEGER_DIGITS, MAX_JSON_DEPTH, clean_text, cut_utf8

MAX_NESTING = MAX_JSON_DEPTH
"""How deeply a call's arguments or result may nest (the bound a request body to the API has)."""

MAX_VALUE_BYTES = 16_384
"""The most bytes of JSON one call's arguments, or its result, is kept as; a larger one is kept
cut."""

MAX_CALLS_BYTES = 300_000
"""The most bytes of JSON all of one answer's calls are kept as (as stored, `stored_bytes`)."""

MAX_NAME_CHARS = 200
"""The most characters of a call's name or the model's name kept."""

MAX_TEXT_CHARS = 1_000
"""The most characters of a guardrail's reason, or a call's error or reason, kept."""

MAX_ERROR_CHARS = 2_000
"""The most characters of an agent's error message (a crash's or a provider error's) kept."""

TOO_DEEP = "[nested too deeply]"
"""What a value nested past `MAX_NESTING` is kept as."""

NOT_JSON = "[not a JSON value]"
"""What a value that is not JSON (or an integer past what a float holds) is kept as."""

_EXACT_BELOW = 10**MAX_INTEGER_DIGITS
"""Integers of smaller magnitude have at most `MAX_INTEGER_DIGITS` digits."""


@dataclass(frozen=True)
class Bounded:
    """An answer as `bound_answer` keeps it: `answer` is always safe to serialise and keep;
    `problem` says, in one phrase, what made the agent's answer malformed (the first place found,
    e.g. "call 1 (search) result nests deeper than 24 levels"), None when nothing did."""

    answer: AgentAnswer
    problem: str | None = None


class _Walk:
    """One value's walk: the first problem found, in words."""

    def __init__(self) -> None:
        self.problem: str | None = None

    def fail(self, problem: str) -> None:
        if self.problem is None:
            self.problem = problem

    def value(self, value: Any, depth: int) -> Any:
        if value is None or isinstance(value, bool):
            return value
        if isinstance(value, str):
            return clean_text(value)
        if isinstance(value, int):
            return self._integer(value)
        if isinstance(value, float):
            return value if math.isfinite(value) else None
        if isinstance(value, Mapping | list | tuple):
            if depth >= MAX_NESTING:
                self.fail(f"nests deeper than {MAX_NESTING} levels")
                return TOO_DEEP
            if isinstance(value, Mapping):
                out: dict[str, Any] = {}
                for key, item in value.items():
                    name = self._key(key)
                    if name is not None:
                        out[name] = self.value(item, depth + 1)
                return out
            return [self.value(item, depth + 1) for item in value]
        self.fail(f"holds a {type(value).__name__}, which is not a JSON value")
        return NOT_JSON

    def _integer(self, value: int) -> Any:
        if -_EXACT_BELOW < value < _EXACT_BELOW:
            return int(value)  # a bool subclass or an int subclass kept as a plain int
        try:
            return float(value)
        except OverflowError:
            self.fail("holds an integer too large to keep")
            return NOT_JSON

    def _key(self, key: Any) -> str | None:
        if isinstance(key, str):
            return clean_text(key)
        if isinstance(key, int) and not isinstance(key, bool):
            if -_EXACT_BELOW < key < _EXACT_BELOW:
                return str(key)
            self.fail("holds an integer key too large to keep")
            return None
        self.fail(f"holds a key that is a {type(key).__name__}, not a string")
        return None


def printed(value: Any) -> str:
    """`str(value)` of what an agent sent, or a description of it when it cannot be printed (an
    integer past Python's 4,300 digits, an object whose `__str__` raises): a `python` agent sends
    Python objects and raises exceptions of its own, and printing one must not fail assay."""
    try:
        return str(value)
    except Exception:  # noqa: BLE001 - the agent's object, whatever its __str__ does
        return f"a {type(value).__name__} that cannot be printed"


def bound_value(value: Any) -> tuple[Any, str | None]:
    """`value` (anything) as a JSON value safe to keep, by the module's rule, with what made it
    malformed (a phrase such as "nests deeper than 24 levels"; None when nothing did). Never raises:
    the walk goes at most `MAX_NESTING` levels deep."""
    walk = _Walk()
    kept = walk.value(value, 0)
    return _cut(kept), walk.problem


def _json_bytes(value: Any) -> int:
    return len(json.dumps(value, ensure_ascii=False).encode("utf-8"))


def stored_bytes(value: Any) -> int:
    """Bytes a JSON value takes as it is stored (`json.dumps` with its default ASCII escapes: a
    character past ASCII takes 6 or 12 bytes)."""
    return len(json.dumps(value))


def _cut(value: Any) -> Any:
    """A bounded value, kept cut when its JSON takes more than `MAX_VALUE_BYTES`."""
    if value is None or isinstance(value, bool | int | float) or _fits(value, MAX_VALUE_BYTES):
        return value
    text = json.dumps(value, ensure_ascii=False)
    return {"_truncated": True, "text": cut_utf8(text, MAX_VALUE_BYTES)}


def _fits(value: Any, max_bytes: int) -> bool:
    if isinstance(value, str):  # the common large value, measured without a copy as JSON
        return len(value) * 6 + 2 <= max_bytes or _json_bytes(value) <= max_bytes
    return _json_bytes(value) <= max_bytes


def _text(text: str | None, max_chars: int) -> str | None:
    return None if text is None else clean_text(text)[:max_chars]


def bound_call(call: ToolCall, where: str = "a call") -> tuple[ToolCall, str | None]:
    """One call with its name, arguments, result, error and reason bounded (the module's rule),
    and what made it malformed (a phrase naming `where` and the field), None when nothing did.
    Arguments that are not an object are kept as `{"_value": ...}`."""
    args, args_problem = bound_value(call.arguments)
    if not isinstance(args, dict):
        args = {"_value": args}
    result, result_problem = bound_value(call.result)
    problem = None
    if args_problem is not None:
        problem = f"{where} arguments {args_problem}"
    elif result_problem is not None:
        problem = f"{where} result {result_problem}"
    kept = ToolCall.model_construct(
        name=_text(call.name, MAX_NAME_CHARS) or "",
        arguments=args,
        status=call.status,
        result=result,
        connection_id=_text(call.connection_id, MAX_NAME_CHARS),
        error=_text(call.error, MAX_TEXT_CHARS),
        reason=_text(call.reason, MAX_TEXT_CHARS),
    )
    return kept, problem


_DROPPED = {"_dropped": f"the answer's kept calls reached {MAX_CALLS_BYTES} bytes"}


def bound_calls(calls: Sequence[ToolCall]) -> list[ToolCall]:
    """Calls already bounded one by one (`bound_call`), within `MAX_CALLS_BYTES` of JSON together:
    past it a call is kept without its result, then also without its arguments (each becomes
    `{"_dropped": ...}`), and once not even that fits, it and the calls after it are left out."""
    out: list[ToolCall] = []
    used = 0
    for call in calls:
        for kept in (
            call,
            call.model_copy(update={"result": _DROPPED}),
            call.model_copy(update={"result": _DROPPED, "arguments": _DROPPED}),
        ):
            size = stored_bytes(kept.model_dump(mode="json"))
            if used + size <= MAX_CALLS_BYTES:
                out.append(kept)
                used += size
                break
        else:
            return out
    return out


def bound_answer(answer: AgentAnswer) -> Bounded:
    """`answer` as assay keeps it (the module's rule): its text cleaned, every call bounded
    (`bound_call`, then `bound_calls`), its model's name and guardrail cleaned and cut; usage and
    cost are integers already and are judged against the operator's bounds later
    (`domain.bounds`). `Bounded.problem` names the first malformed place ("call 2 (search) result
    nests deeper than 24 levels"); the answer is then the agent's failure, not assay's."""
    calls: list[ToolCall] = []
    problem: str | None = None
    for number, call in enumerate(answer.calls, start=1):
        name = clean_text(call.name)[:80]
        kept, found = bound_call(call, f"call {number} ({name})")
        calls.append(kept)
        problem = problem or found
    bounded = AgentAnswer.model_construct(
        answer=clean_text(answer.answer),
        calls=bound_calls(calls),
        usage=answer.usage,
        model=_text(answer.model, MAX_NAME_CHARS),
        cost_micros=answer.cost_micros,
        guardrail=_text(answer.guardrail, MAX_TEXT_CHARS),
    )
    return Bounded(bounded, problem)
