"""The main job: four real models' GSM8K answers as four versions of one agent, evaluated on the
embedded stack through the HTTP API and the publish pipeline's queue (DESIGN §10).

Our `numeric_answer` scorer grades each recorded solution from its text; the authors' own
`is_correct` label is never read here.
"""

from __future__ import annotations

import json
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

import httpx

from chalicelib.domain.importers import gsm8k_case_id

MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")
"""The four recorded models, published as versions 1-4 in this order."""


def default_data_dir() -> Path:
    """`../shared/data/gsm8k` beside the repository."""
    return Path(__file__).resolve().parents[2] / "shared" / "data" / "gsm8k"


def write_recordings(data_dir: Path, out_dir: Path) -> dict[str, Path]:
    """One recording file per model: `{"case_id", "input", "answer"}` lines keyed like the dataset.

    Returns the path of each model's file.
    """
    out_dir.mkdir(parents=True, exist_ok=True)
    files = {m: out_dir / f"gsm8k-{m}.jsonl" for m in MODELS}
    handles = {m: files[m].open("w", encoding="utf-8") for m in MODELS}
    try:
        with (data_dir / "example_model_solutions.jsonl").open(encoding="utf-8") as src:
            for line in src:
                if not line.strip():
                    continue
                row = json.loads(line)
                cid = gsm8k_case_id(row["question"])
                for m in MODELS:
                    handles[m].write(json.dumps({"case_id": cid, "input": row["question"],
                                                 "answer": row[m]["solution"]}) + "\n")
    finally:
        for h in handles.values():
            h.close()
    return files


@dataclass
class VersionResult:
    version: int
    model: str
    run_id: str
    status: str
    passed: int
    total: int
    pass_rate: float | None
    verdict: str
    queued_s: float
    """From the start request until the run got its first slot (waiting behind the org's limit)."""
    wall_s: float
    """From its first slot until it completed."""


class ApiError(Exception):
    """An assay API call answered 4xx/5xx; the message has the status and the error body."""


class Api:
    """A small HTTP client for the assay API (raises ApiError with the error body on 4xx/5xx)."""

    def __init__(self, base_url: str, token: str) -> None:
        self.http = httpx.Client(base_url=base_url, timeout=60.0,
                                 headers={"Authorization": f"Bearer {token}"})

    def call(self, method: str, path: str, **kwargs: Any) -> Any:
        try:
            resp = self.http.request(method, path, **kwargs)
        except httpx.HTTPError as exc:
            raise ApiError(f"{method} {self.http.base_url}{path}: {exc}") from None
        if resp.status_code >= 400:
            raise ApiError(f"{method} {path} -> {resp.status_code}: {resp.text}")
        return resp.json()


def run_demo(api: Api, *, send_event: Callable[[dict[str, Any]], None], org_id: str, data_dir: Path,
             work_dir: Path, limit: int | None, latency_ms: float,
             on_progress: Callable[[dict[int, dict[str, Any]]], None] | None = None) -> tuple[list[VersionResult], Any]:
    """Publish, import, run and summarise; returns each version's result and the summaries.

    Args:
        send_event: puts one message on the agent-events queue (the publish pipeline).
        on_progress: called with `{version: progress}` while the runs go.
    """
    recordings = write_recordings(data_dir, work_dir / "recordings")
    suffix = str(int(time.time()))
    dataset = api.call("POST", "/api/v1/datasets", json={"name": "GSM8K test", "dataset_id": f"gsm8k-{suffix}"})
    content = (data_dir / "test.jsonl").read_text(encoding="utf-8")
    source: dict[str, Any] = {"format": "gsm8k", "content": content}
    if limit:
        source["limit"] = limit
    api.call("POST", f"/api/v1/datasets/{dataset['dataset_id']}/versions",
             json={"scoring": {"required": ["numeric_answer"]}, "source": source})

    def spec(model: str) -> dict[str, Any]:
        return {"runtime": "recorded", "recording": str(recordings[model]), "model": model,
                "latency_ms": latency_ms}

    agent = api.call("POST", "/api/v1/agents", json={"name": "GSM8K solver", "agent_id": f"gsm8k-solver-{suffix}",
                                                     "spec": spec(MODELS[0])})
    agent_id = agent["agent_id"]
    for version, model in enumerate(MODELS, start=1):
        send_event({"type": "version_published", "org_id": org_id, "agent_id": agent_id,
                    "version": version, "spec": spec(model), "published_by": "demo-pipeline"})
    deadline = time.monotonic() + 60
    while api.call("GET", f"/api/v1/agents/{agent_id}").get("latest_version") != len(MODELS):
        if time.monotonic() > deadline:
            raise RuntimeError("the publish pipeline's events were not applied within 60 s")
        time.sleep(0.2)

    runs: dict[int, dict[str, Any]] = {}
    for version in range(1, len(MODELS) + 1):
        runs[version] = api.call("POST", f"/api/v1/agents/{agent_id}/eval-runs",
                                 json={"dataset_id": dataset["dataset_id"], "candidate": "version",
                                       "version": version})
    progress: dict[int, dict[str, Any]] = {}
    while True:
        for version, run in runs.items():
            progress[version] = api.call("GET", f"/api/v1/eval-runs/{run['run_id']}/progress")
        if on_progress:
            on_progress(progress)
        if all(p["status"] not in ("queued", "running") for p in progress.values()):
            break
        time.sleep(0.25)

    results = []
    for version, run in runs.items():
        full = api.call("GET", f"/api/v1/eval-runs/{run['run_id']}")
        outcome = full.get("outcome") or {}
        from chalicelib.clock import parse_iso

        queued = wall = 0.0
        if full.get("started_at") and full.get("completed_at"):
            queued = (parse_iso(full["started_at"]) - parse_iso(full["created_at"])).total_seconds()
            wall = (parse_iso(full["completed_at"]) - parse_iso(full["started_at"])).total_seconds()
        results.append(VersionResult(version, MODELS[version - 1], run["run_id"], full["status"],
                                     outcome.get("passed", 0), outcome.get("total", 0),
                                     outcome.get("pass_rate"), outcome.get("verdict", "none"), queued, wall))
    summaries = api.call("POST", "/api/evaluations/agent-summaries",
                         json={"agents": [{"agentId": agent_id, "version": v} for v in runs]})
    return results, summaries, (agent_id, dataset["dataset_id"])


def run_comparison(api: Api, agent_id: str, dataset_id: str,
                   on_progress: Callable[[dict[str, Any]], None] | None = None) -> tuple[dict, dict]:
    """Version 4 against version 3 with a baseline in the same run (v3's recent run stands in for
    its first answers; every flip is rerun on both sides). Returns (run, comparison)."""
    run = api.call("POST", f"/api/v1/agents/{agent_id}/eval-runs",
                   json={"dataset_id": dataset_id, "candidate": "version", "version": len(MODELS),
                         "paired_baseline": True, "reruns": 1})
    while True:
        progress = api.call("GET", f"/api/v1/eval-runs/{run['run_id']}/progress")
        if on_progress:
            on_progress(progress)
        if progress["status"] not in ("queued", "running"):
            break
        time.sleep(0.25)
    full = api.call("GET", f"/api/v1/eval-runs/{run['run_id']}")
    return full, api.call("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
