"""Agents of the e2e tests, asked through the `python` runtime: they live under `tests.support`, a
module prefix the embedded stack's operator allows (`ASSAY_PYTHON_AGENT_MODULES`), like
`bench.agents`.

`held` is the agent of every test about overlap or about a run caught mid-way: its calls are held
until the test lets them answer (`Hold.open`, or `Hold.release(n)` for n answers), and it counts
how many are in flight, so a test proves "N ran at once" or "the run was still running" by state,
never by how long a call sleeps on a machine of unknown speed.
"""

from __future__ import annotations

import json
import threading
import time
from collections import defaultdict
from typing import Any

SAFETY_S = 540.0
"""How long a held call waits for the test at most before it raises (under the case timeout,
600 s): a test that forgot to open its hold fails with a message naming it instead of hanging."""

TEST_GUARD_S = 240.0
"""How long a test waits at most for calls to arrive (under pytest's per-test timeout, 300 s):
seconds are enough on any machine, so reaching it means the calls will never come."""


def tool_agent(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Looks something up before answering (its call is recorded): "42", or "41" for the cases in
    `options["wrong"]`, after `options["sleep_ms"]`."""
    time.sleep(float(options.get("sleep_ms", 0)) / 1000)
    wrong = request["case_id"] in options.get("wrong", [])
    return {
        "answer": "41" if wrong else "42",
        "model": "tool-model-1",
        "calls": [
            {"name": "lookup", "arguments": {"case": request["case_id"]}, "status": "intended"}
        ],
        "usage": {"input_tokens": 100, "output_tokens": 20},
    }


LOOKUP_TOOLS = [
    {
        "name": "lookup",
        "description": "Find the answer of a case",
        "parameters": {
            "type": "object",
            "properties": {"case": {"type": "string"}},
            "required": ["case"],
        },
        "effect": "read",
        "connection_id": "kb",
    },
    {"name": "file_ticket", "parameters": {"type": "object"}, "effect": "write"},
]
"""The tools `tool_user` calls: `lookup` reads on connection `kb`; `file_ticket` writes."""


def tool_user(
    request: dict[str, Any], options: dict[str, Any], tools: Any = None
) -> dict[str, Any] | str:
    """Calls `lookup {"case": <case id>}` through the attempt's tools (then `file_ticket` when
    `options["ticket"]`), and answers what the lookup returned, or `held: <status>` when it
    returned nothing. Without tools (outside an eval attempt) it answers "no tools"."""
    if tools is None:
        return "no tools"
    reply = tools.call("lookup", {"case": request["case_id"]})
    if options.get("ticket"):
        tools.call("file_ticket", {"case": request["case_id"]})
    answer = str(reply["result"]) if "result" in reply else f"held: {reply['status']}"
    return {"answer": answer, "model": "tool-user-1"}


def tool_user_spec(**options: Any) -> dict[str, Any]:
    """A `python` agent spec of `tool_user`, declaring `LOOKUP_TOOLS`."""
    return {
        "runtime": "python",
        "entrypoint": "tests.support.agents:tool_user",
        "options": options,
        "tools": LOOKUP_TOOLS,
    }


class Hold:
    """The calls of `held` agents that share one name: counted, and held until the test says so.

    A call enters (counted in flight, overall and per run), waits until the hold is open or a
    permit is free (taking it), answers, and leaves. While nothing is let through nothing answers,
    so the calls in flight only grow: `wait_in_flight(n)` returning proves n were in flight at
    once, and `peak` is the most ever seen together.
    """

    def __init__(self, name: str) -> None:
        self.name = name
        self._cond = threading.Condition()
        self._open = False
        self._permits = 0
        self.in_flight = 0
        self.peak = 0
        self.calls = 0
        self.answered = 0
        self.run_in_flight: dict[str, int] = defaultdict(int)
        self.run_peak: dict[str, int] = defaultdict(int)
        self.run_calls: dict[str, int] = defaultdict(int)

    def open(self) -> None:
        """Let every call answer, now and from now on."""
        with self._cond:
            self._open = True
            self._cond.notify_all()

    set = open  # the name the `gate` tests use, as for a `threading.Event`

    def release(self, n: int = 1) -> None:
        """Let `n` more calls answer (those waiting first)."""
        with self._cond:
            self._permits += n
            self._cond.notify_all()

    def wait_in_flight(self, n: int, guard_s: float = TEST_GUARD_S) -> None:
        """Return once `n` calls are in flight together; fail the test, naming what was seen, if
        they are not after `guard_s` (a hang guard, not a measure of speed)."""
        self._wait(lambda: self.in_flight >= n, guard_s, f"{n} calls in flight at once")

    def wait_calls(self, n: int, guard_s: float = TEST_GUARD_S) -> None:
        """Return once `n` calls have arrived in all; fail the test after `guard_s`."""
        self._wait(lambda: self.calls >= n, guard_s, f"{n} calls in all")

    def _wait(self, reached: Any, guard_s: float, what: str) -> None:
        with self._cond:
            if not self._cond.wait_for(reached, timeout=guard_s):
                raise AssertionError(
                    f"hold {self.name!r}: waited {guard_s:.0f} s for {what}; saw {self.seen()}"
                )

    def seen(self) -> str:
        """What the hold has seen, for failure messages."""
        return (
            f"in flight {self.in_flight}, most at once {self.peak}, calls {self.calls}, "
            f"answered {self.answered}, per run in flight {dict(self.run_in_flight)}"
        )

    def enter(self, run_id: str) -> None:
        with self._cond:
            self.calls += 1
            self.in_flight += 1
            self.peak = max(self.peak, self.in_flight)
            self.run_calls[run_id] += 1
            self.run_in_flight[run_id] += 1
            self.run_peak[run_id] = max(self.run_peak[run_id], self.run_in_flight[run_id])
            self._cond.notify_all()

    def admit(self, at_most_s: float) -> None:
        def free() -> bool:
            return self._open or self._permits > 0

        with self._cond:
            if not self._cond.wait_for(free, timeout=at_most_s):
                raise RuntimeError(
                    f"hold {self.name!r} was never opened ({at_most_s:.0f} s); saw {self.seen()}"
                )
            if not self._open:
                self._permits -= 1

    def leave(self, run_id: str, answered: bool) -> None:
        with self._cond:
            self.in_flight -= 1
            self.run_in_flight[run_id] -= 1
            self.answered += answered
            self._cond.notify_all()


_holds: dict[str, Hold] = {}
_holds_lock = threading.Lock()


def hold(name: str) -> Hold:
    """The hold of the `held` calls whose `options["hold"]` (or `options["gate"]`) is `name`."""
    with _holds_lock:
        return _holds.setdefault(name, Hold(name))


gate = hold  # the long-poll test's name for it


def held_spec(name: str, answer: str = "42", answers: dict[str, str] | None = None) -> dict:
    """A `python` agent spec whose calls wait on `hold(name)`."""
    options: dict[str, Any] = {"hold": name, "answer": answer}
    if answers:
        options["answers"] = answers
    return {"runtime": "python", "entrypoint": "tests.support.agents:held", "options": options}


def held(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Answers `options["answers"][case_id]`, else `options.get("answer", "42")`, with the usage of
    `bench.agents.sleepy` (100 in, 20 out), once `hold(options["hold"])` lets it; raises after
    `SAFETY_S` without that."""
    h = hold(str(options.get("hold", options.get("gate"))))
    run_id = str(request["run_id"])
    h.enter(run_id)
    answered = False
    try:
        h.admit(float(options.get("safety_s", SAFETY_S)))
        answers = options.get("answers") or {}
        reply = {
            "answer": str(answers.get(request["case_id"], options.get("answer", "42"))),
            "usage": {"input_tokens": 100, "output_tokens": 20},
        }
        answered = True
        return reply
    finally:
        h.leave(run_id, answered)


def gated(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """`held` under the hold `options["gate"]` (the long-poll test's agent)."""
    return held(request, options)


_asked: dict[str, int] = {}
_asked_lock = threading.Lock()


def scripted(request: dict[str, Any], options: dict[str, Any]) -> Any:
    """Answers each case with the JSON text `options["payloads"][case_id]` (else
    `options["payload"]`) decoded, as an agent sending that JSON would: `"\\ud800"` in the text
    is a lone surrogate in the answer. Counts its calls under `options.get("probe")` (`asked`)."""
    probe = str(options.get("probe", ""))
    with _asked_lock:
        _asked[probe] = _asked.get(probe, 0) + 1
    text = (options.get("payloads") or {}).get(request["case_id"], options.get("payload"))
    return json.loads(text)


def asked(probe: str) -> int:
    """How many times `scripted` agents of `probe` were asked."""
    with _asked_lock:
        return _asked.get(probe, 0)


_barriers: dict[str, threading.Event] = {}
_barred_calls: dict[str, dict[str, int]] = defaultdict(lambda: defaultdict(int))


def barrier(name: str) -> threading.Event:
    """The barrier the `barred` calls under `options["barrier"]` = `name` wait on."""
    with _holds_lock:
        return _barriers.setdefault(name, threading.Event())


def barred_calls(name: str) -> dict[str, int]:
    """How many times `barred` agents of barrier `name` were asked, by case id."""
    with _holds_lock:
        return dict(_barred_calls[name])


def barred_spec(name: str, barred: list[str]) -> dict[str, Any]:
    """A `python` agent spec of `barred` whose cases `barred` wait on `barrier(name)`."""
    return {
        "runtime": "python",
        "entrypoint": "tests.support.agents:barred",
        "options": {"barrier": name, "barred": barred},
    }


def barred(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Answers "42" at once, but on the cases of `options["barred"]` only once
    `barrier(options["barrier"])` is set (raising after `SAFETY_S` without it); counts its calls
    per case (`barred_calls`)."""
    name, case_id = str(options["barrier"]), str(request["case_id"])
    with _holds_lock:
        _barred_calls[name][case_id] += 1
    if case_id in options.get("barred", []) and not barrier(name).wait(SAFETY_S):
        raise RuntimeError(f"barrier {name!r} was never set")
    return {"answer": "42", "usage": {"input_tokens": 100, "output_tokens": 20}}


def bulky(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Answers "42 " and `options["answer_bytes"]` more ASCII bytes, with `options["calls"]` calls
    each reporting a result of `options["result_bytes"]` bytes: an answer as large as a test
    wants from a spec of a few bytes."""
    result = "r" * int(options["result_bytes"])
    return {
        "answer": "42 " + "a" * int(options["answer_bytes"]),
        "calls": [{"name": f"t{i}", "result": result} for i in range(int(options["calls"]))],
    }
