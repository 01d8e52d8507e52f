"""Helpers of the whole-stack tests: an HTTP client per organization, agent specs, case lists,
waiting.

The fixtures that build on them (`stack`, `api`, `new_api`, ...) live in `tests/conftest.py`, so the
e2e and security tests share one embedded stack per session."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx


class Api:
    """An HTTP client for one organization; `call` returns (status, json)."""

    def __init__(self, base_url: str, org_id: str, user_id: str, token: str | None) -> None:
        self.org_id, self.user_id = org_id, user_id
        headers = {"Authorization": f"Bearer {token}"} if token else {}
        self.http = httpx.Client(base_url=base_url, headers=headers, timeout=60.0)

    def call(self, method: str, path: str, **kw: Any) -> tuple[int, Any]:
        r = self.http.request(method, path, **kw)
        try:
            body = r.json()
        except ValueError:
            body = r.text
        return r.status_code, body

    def ok(self, method: str, path: str, **kw: Any) -> Any:
        """The JSON body of a 2xx response; fails the test otherwise."""
        status, body = self.call(method, path, **kw)
        assert 200 <= status < 300, f"{method} {path} -> {status}: {body}"
        return body

    # --- shortcuts used by many tests

    def dataset(self, cases: list[dict[str, Any]], required: list[str] | None = None) -> str:
        ds = self.ok("POST", "/api/v1/datasets", json={"name": "t"})
        self.ok(
            "POST",
            f"/api/v1/datasets/{ds['dataset_id']}/versions",
            json={"scoring": {"required": required or ["equals"]}, "cases": cases},
        )
        return ds["dataset_id"]

    def agent(self, spec: dict[str, Any], publish: int = 0) -> str:
        agent = self.ok("POST", "/api/v1/agents", json={"name": "a", "spec": spec})
        for _ in range(publish):
            self.ok("POST", f"/api/v1/agents/{agent['agent_id']}/versions")
        return agent["agent_id"]

    def start(self, agent_id: str, dataset_id: str, **body: Any) -> dict[str, Any]:
        return self.ok(
            "POST",
            f"/api/v1/agents/{agent_id}/eval-runs",
            json={"dataset_id": dataset_id, "candidate": "draft", **body},
        )

    def wait(
        self, run_id: str, timeout_s: float = 60.0, until: Callable[[dict], bool] | None = None
    ) -> dict:
        """Poll the run's progress until it ended (or `until(progress)`); returns the progress."""
        deadline = time.monotonic() + timeout_s
        while True:
            p = self.ok("GET", f"/api/v1/eval-runs/{run_id}/progress")
            if until(p) if until else p["status"] not in ("queued", "running"):
                return p
            assert time.monotonic() < deadline, f"run {run_id} still {p} after {timeout_s} s"
            time.sleep(0.05)


def sleepy_spec(
    sleep_ms: float = 0,
    probe: str | None = None,
    answer: str = "42",
    answers: dict[str, str] | None = None,
) -> dict[str, Any]:
    """A `python` agent spec (bench.agents.sleepy) that sleeps, then answers."""
    options: dict[str, Any] = {"sleep_ms": sleep_ms, "answer": answer}
    if probe:
        options["probe"] = probe
    if answers:
        options["answers"] = answers
    return {"runtime": "python", "entrypoint": "bench.agents:sleepy", "options": options}


def wait_for(check: Callable[[], Any], timeout_s: float = 60.0, every_s: float = 0.05) -> Any:
    """Call `check` until it returns something truthy (returned), failing the test after
    `timeout_s`."""
    deadline = time.monotonic() + timeout_s
    while True:
        value = check()
        if value:
            return value
        assert time.monotonic() < deadline, f"timed out after {timeout_s} s"
        time.sleep(every_s)


def cases(n: int, reference: str = "42") -> list[dict[str, Any]]:
    """`n` simple cases `c000..` expecting `reference`."""
    return [
        {"case_id": f"c{i:03d}", "input": f"question {i}", "reference": reference} for i in range(n)
    ]
