"""Agents for benchmarks and tests, asked through the `python` runtime.

`sleepy` sleeps, answers, and records how many of its calls were in flight at once, per run
and in total, so a benchmark or test can check the concurrency limits from the agent's side.
"""

from __future__ import annotations

import threading
import time
from collections import defaultdict
from typing import Any

_lock = threading.Lock()
_changed = threading.Condition(_lock)
_opened: set[str] = set()
_in_flight: dict[str, int] = defaultdict(int)
_peak: dict[str, int] = defaultdict(int)
_calls: dict[str, int] = defaultdict(int)
_first: dict[str, float] = {}
_last: dict[str, float] = {}


def _enter(keys: list[str]) -> None:
    with _lock:
        for k in keys:
            _in_flight[k] += 1
            _calls[k] += 1
            _peak[k] = max(_peak[k], _in_flight[k])
            _first.setdefault(k, time.monotonic())
        _changed.notify_all()


def _hold(key: str, until: int, at_most_s: float) -> None:
    """A barrier that opens once: wait until `until` calls are in flight under `key` together (or
    `at_most_s` passed), so a test proves overlap by state rather than by how long calls sleep."""
    with _changed:
        _changed.wait_for(lambda: key in _opened or _in_flight[key] >= until, timeout=at_most_s)
        _opened.add(key)


def _leave(keys: list[str]) -> None:
    with _lock:
        for k in keys:
            _in_flight[k] -= 1
            _last[k] = time.monotonic()
        _changed.notify_all()


LATENCIES = ("fixed", "lognormal", "one-slow")
"""How `durations_ms` draws a run's case durations."""

SLOW_EVERY = 20
"""`one-slow`: one case in this many is slow."""

SLOW_TIMES = 20.0
"""`one-slow`: a slow case takes this many times the median."""

LOGNORMAL_SIGMA = 1.0
"""`lognormal`: the sigma of the log of a duration (its median is the median given)."""


def durations_ms(kind: str, cases: int, median_ms: float, seed: int) -> list[float]:
    """The duration in ms of each of `cases` cases, in case order, drawn up front from `seed`.

    `fixed`: every case `median_ms`. `lognormal`: log-normal with median `median_ms` and sigma
    `LOGNORMAL_SIGMA`. `one-slow`: `median_ms`, but `cases // SLOW_EVERY` cases picked at random
    (at least one) take `SLOW_TIMES` times as long. The same arguments give the same list, in the
    benchmark and in the agent. Raises ValueError for an unknown `kind`.
    """
    import random

    rng = random.Random(f"{kind}#{cases}#{median_ms}#{seed}")
    if kind == "fixed":
        return [float(median_ms)] * cases
    if kind == "lognormal":
        return [median_ms * rng.lognormvariate(0.0, LOGNORMAL_SIGMA) for _ in range(cases)]
    if kind == "one-slow":
        slow = set(rng.sample(range(cases), max(1, cases // SLOW_EVERY))) if cases else set()
        return [median_ms * (SLOW_TIMES if i in slow else 1.0) for i in range(cases)]
    raise ValueError(f"latency must be one of {', '.join(LATENCIES)}, not {kind!r}")


_drawn: dict[tuple[str, int, float, int], list[float]] = {}


def _sleep_ms(request: dict[str, Any], options: dict[str, Any]) -> float:
    """How long `sleepy` sleeps on this case: `options["sleep_ms"]`, or with `options["latency"]`
    the case's own duration (`durations_ms`; case ids end in their number, `c00012` is case 12)."""
    median = float(options.get("sleep_ms", 0))
    kind = str(options.get("latency") or "fixed")
    if kind == "fixed":
        return median
    key = (kind, int(options["cases"]), median, int(options.get("seed", 0)))
    with _lock:
        if key not in _drawn:
            _drawn[key] = durations_ms(*key)
        drawn = _drawn[key]
    return drawn[int(str(request["case_id"]).lstrip("c") or 0)]


def sleepy(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Sleep `options["sleep_ms"]` (with `options["latency"]`, `options["cases"]` and
    `options["seed"]`: the case's own duration drawn by `durations_ms`), then answer
    `options.get("answer", "42")`, reporting `options["model"]` as its `model` when given.

    In-flight counts are kept under `run:<run_id>` and under `options["probe"]` (a name the
    caller picks for everything it wants counted together). With `options["hold_until"]` = N, the
    first calls of a probe wait (at most `hold_max_ms`, default 30 s) until N of them are in flight
    at once, then every call goes on.
    """
    keys = [f"run:{request['run_id']}"]
    if options.get("probe"):
        keys.append(str(options["probe"]))
    _enter(keys)
    try:
        if options.get("probe") and options.get("hold_until"):
            _hold(
                str(options["probe"]),
                int(options["hold_until"]),
                float(options.get("hold_max_ms", 30_000)) / 1000,
            )
        time.sleep(_sleep_ms(request, options) / 1000.0)
        answers = options.get("answers") or {}
        out: dict[str, Any] = {
            "answer": str(answers.get(request["case_id"], options.get("answer", "42"))),
            "usage": {"input_tokens": 100, "output_tokens": 20},
        }
        if options.get("model"):
            out["model"] = str(options["model"])  # the model the answer reports
        return out
    finally:
        _leave(keys)


def span(key: str) -> tuple[float, float] | None:
    """(first call's start, last call's end) under `key`, `time.monotonic()` seconds, or None
    before any call ended: a benchmark tells the run's start-up and its tail from the asking."""
    with _lock:
        if key not in _first or key not in _last:
            return None
        return _first[key], _last[key]


def first(key: str) -> float | None:
    """The first call's start under `key` (`time.monotonic()` seconds), or None before any call:
    a benchmark tells how long a run waited for its first case."""
    with _lock:
        return _first.get(key)


def wait_calls(key: str, n: int, timeout_s: float) -> bool:
    """Block until `n` calls under `key` were made and none is in flight (True), or `timeout_s`
    passed (False): a benchmark waits for its run's asking to end without polling the API."""
    with _changed:
        return _changed.wait_for(
            lambda: _calls[key] >= n and _in_flight[key] == 0, timeout=timeout_s
        )


def peak(key: str) -> int:
    """Most calls seen in flight at once under `key`."""
    with _lock:
        return _peak[key]


def calls(key: str) -> int:
    """Calls seen under `key`."""
    with _lock:
        return _calls[key]


def numbered(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Like `sleepy`, but every answer carries its call number (`"42 call-7"`), so a test can
    tell which call's answer was kept. Calls are counted per `probe#case_id`."""
    key = f"{options.get('probe', '')}#{request['case_id']}"
    _enter([key, str(options.get("probe", ""))])
    try:
        time.sleep(float(options.get("sleep_ms", 0)) / 1000.0)
        with _lock:
            n = _calls[str(options.get("probe", ""))]
        return {"answer": f"{options.get('answer', '42')} call-{n}"}
    finally:
        _leave([key, str(options.get("probe", ""))])


def crashing(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """An agent whose tool raises on every case (with `options["only"]`, a case id: on that case
    only, answering `42` on the others): its attempts are `failed` with `crash: true`."""
    if options.get("only") and request["case_id"] != options["only"]:
        return {"answer": "42"}
    raise ValueError(f"tool lookup_order raised on {request['case_id']}")


def verbose(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Answers `options["size"]` characters ending in the expected `42` (large answers go to S3)."""
    return {"answer": "x" * int(options.get("size", 1000)) + " 42"}


def flaky(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Answers right (`options["answer"]`, default "42") with probability `options["p"]` (0.5),
    drawn from a generator seeded by `options["seed"]`, the case and the attempt: the same spec
    gives the same answers on every run, and a rerun is a fresh draw."""
    import random

    rng = random.Random(f"{options.get('seed', 0)}#{request['case_id']}#{request['attempt']}")
    right = rng.random() < float(options.get("p", 0.5))
    return {"answer": str(options.get("answer", "42")) if right else "0"}


CALL_LOG_ENV = "ASSAY_BENCH_CALL_LOG"
"""Directory where `logged` appends one line per call (set by the benchmark, not by a tenant)."""


def logged(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Answer "42" at once, first appending `<run_id> <case_id> <attempt>` to a file of this
    process under `$ASSAY_BENCH_CALL_LOG`: one `write` of a line in append mode, so the count
    survives a worker killed right after (the chaos benchmark counts agent calls across worker
    processes that it kills)."""
    import os

    folder = os.environ.get(CALL_LOG_ENV)
    if folder:
        line = f"{request['run_id']} {request['case_id']} {request['attempt']}\n".encode()
        fd = os.open(
            os.path.join(folder, f"calls-{os.getpid()}.log"),
            os.O_WRONLY | os.O_CREAT | os.O_APPEND,
            0o600,
        )
        try:
            os.write(fd, line)
        finally:
            os.close(fd)
    return {"answer": "42", "usage": {"input_tokens": 3, "output_tokens": 1}}
