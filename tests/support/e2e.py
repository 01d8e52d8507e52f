"""Helpers of the whole-stack tests: an HTTP client per organization, agent specs, case lists,
waiting.

The fixtures that build on them (`stack`, `api`, `new_api`, ...) live in `tests/conftest.py`, so the
e2e and security tests share one embedded stack per session."""

from __future__ import annotations

import time
from collections.abc import Callable
from typing import Any

import httpx

from tests.support.agents import TEST_GUARD_S

STALL_S = 120.0
"""How long a run's progress may stand still before `Api.wait` fails: a case takes seconds even
on a loaded machine, so two minutes without a counter moving is a run that stopped."""

HANG_GUARD_S = 1500.0
"""`Api.wait`'s bound in all, a hang guard only (pytest's per-test timeout usually comes first)."""


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
        self,
        run_id: str,
        timeout_s: float = HANG_GUARD_S,
        until: Callable[[dict], bool] | None = None,
        stall_s: float = STALL_S,
    ) -> dict:
        """Poll the run's progress until it ended (or `until(progress)`); returns the progress.

        Waits on state, not on a guess of how long the run takes: it fails only when the progress
        (status and counters) stood still for `stall_s`, or, as a hang guard, after `timeout_s`
        in all; the message names the state last seen.
        """
        started = last_change = time.monotonic()
        seen: dict | None = None
        while True:
            p = self.ok("GET", f"/api/v1/eval-runs/{run_id}/progress")
            if until(p) if until else p["status"] not in ("queued", "running"):
                return p
            now = time.monotonic()
            if p != seen:
                seen, last_change = p, now
            assert now - last_change < stall_s, (
                f"run {run_id} stood still for {stall_s:.0f} s at {p}"
                + (" (waiting for a condition on it)" if until else "")
            )
            assert now - started < timeout_s, f"run {run_id} still {p} after {timeout_s:.0f} s"
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


def wait_for(
    check: Callable[[], Any],
    timeout_s: float = TEST_GUARD_S,
    every_s: float = 0.05,
    what: str = "",
) -> Any:
    """Call `check` until it returns something truthy (returned), failing the test after
    `timeout_s`: a hang guard, far beyond what a loaded machine needs, not a measure of speed."""
    started = time.monotonic()
    while True:
        value = check()
        if value:
            return value
        waited = time.monotonic() - started
        assert waited < timeout_s, f"waited {waited:.0f} s for {what or check}; last saw {value!r}"
        time.sleep(every_s)


def cases(n: int, reference: str = "42") -> list[dict[str, Any]]:
    """`n` simple cases `c000..` expecting `reference`."""
    return [
        {"case_id": f"c{i:03d}", "input": f"question {i}", "reference": reference} for i in range(n)
    ]


_SIGNING_KEYS: dict[str, str] = {}


def signing_key(api: Api) -> str:
    """The organization's `pipeline-signing-key` secret, set through the API on first use."""
    import secrets

    key = _SIGNING_KEYS.get(api.org_id)
    if key is None:
        key = _SIGNING_KEYS[api.org_id] = secrets.token_urlsafe(24)
        api.ok("PUT", "/api/v1/secrets/pipeline-signing-key", json={"value": key})
    return key


def signed(api: Api, event: dict[str, Any]) -> str:
    """The JSON text of an agent-events message signed as `api`'s organization's pipeline signs
    it (`assay.client.sign_event`)."""
    import json

    from assay.client import sign_event

    return json.dumps(sign_event(event, signing_key(api)))
