"""Agents of the e2e tests, asked through the `python` runtime: they live under `tests.support`, a module
prefix the embedded stack's operator allows (`ASSAY_PYTHON_AGENT_MODULES`), like `bench.agents`."""

from __future__ import annotations

import time
from typing import Any


def tool_agent(request: dict[str, Any], options: dict[str, Any]) -> dict[str, Any]:
    """Looks something up before answering (its call is recorded): "42", or "41" for the cases in
    `options["wrong"]`, after `options["sleep_ms"]`."""
    time.sleep(float(options.get("sleep_ms", 0)) / 1000)
    wrong = request["case_id"] in options.get("wrong", [])
    return {"answer": "41" if wrong else "42", "model": "tool-model-1",
            "calls": [{"name": "lookup", "arguments": {"case": request["case_id"]}, "status": "intended"}],
            "usage": {"input_tokens": 100, "output_tokens": 20}}
