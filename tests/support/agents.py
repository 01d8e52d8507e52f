"""Agents of the e2e tests, asked through the `python` runtime: they live under `tests.support`, a
module prefix the embedded stack's operator allows (`ASSAY_PYTHON_AGENT_MODULES`), like
`bench.agents`."""

from __future__ import annotations

import json
import threading
import time
from typing import Any


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


_gates: dict[str, threading.Event] = {}
_gates_lock = threading.Lock()


def gate(name: str) -> threading.Event:
    """The gate `gated` agents of `options["gate"] == name` wait on; `.set()` it to let them
    answer."""
    with _gates_lock:
        return _gates.setdefault(name, threading.Event())


def gated(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Answers "42" once the test opens `gate(options["gate"])` (at most 60 s later): a run whose
    attempt cannot land before the test says so, without sleeping for a guessed time."""
    if not gate(str(options["gate"])).wait(timeout=60):
        raise RuntimeError(f"gate {options['gate']!r} was never opened")
    return {"answer": "42", "usage": {"input_tokens": 10, "output_tokens": 2}}


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
