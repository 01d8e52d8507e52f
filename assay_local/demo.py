"""The main job: four real models' GSM8K answers as four versions of one agent, evaluated on the
embedded stack through the HTTP API and the publish pipeline's queue. Each model's
answers are uploaded as a recording of the organization (`POST /api/v1/recordings`) that its
version's `recorded` spec names by id: no spec names a file.

Our `numeric_answer` scorer grades each recorded solution from its text; the authors' own
`is_correct` label is never read here.
"""

from __future__ import annotations

import json
import secrets
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from assay.client import AssayClient, sign_event
from chalicelib.domain.importers import gsm8k_case_id

MODELS = ("6b_finetuning", "6b_verification", "175b_finetuning", "175b_verification")
"""The four recorded models, published as versions 1-4 in this order."""


def default_data_dir() -> Path:
    """`examples/gsm8k` in the repository: the problems, four models' answers, their LICENSE."""
    return Path(__file__).resolve().parents[1] / "examples" / "gsm8k"


def recording_texts(data_dir: Path) -> dict[str, str]:
    """One recording per model as JSONL text: `{"case_id", "input", "answer"}` lines keyed like the
    dataset."""
    lines: dict[str, list[str]] = {m: [] for m in MODELS}
    with (data_dir / "example_model_solutions.jsonl").open(encoding="utf-8") as src:
        for line in src:
            if not line.strip():
                continue
            row = json.loads(line)
            cid = gsm8k_case_id(row["question"])
            for m in MODELS:
                lines[m].append(
                    json.dumps(
                        {"case_id": cid, "input": row["question"], "answer": row[m]["solution"]}
                    )
                )
    return {m: "\n".join(lines[m]) + "\n" for m in MODELS}


def upload_recordings(api: Api, data_dir: Path) -> dict[str, str]:
    """Upload each model's recording through `POST /api/v1/recordings` (id `gsm8k-<model>`); returns
    the recording id of each model. Uploading the same recordings again is a no-op (200)."""
    ids: dict[str, str] = {}
    for model, text in recording_texts(data_dir).items():
        ids[model] = api.upload_recording(content=text, recording_id=f"gsm8k-{model}")[
            "recording_id"
        ]
    return ids


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


Api = AssayClient
SIGNING_SECRET = "pipeline-signing-key"
"""The secret the demo's pipeline signs its agent-events messages with (`agent_events`)."""
"""The demo's client of the API: the typed `assay.client` every command uses."""


def run_demo(
    api: Api,
    *,
    send_event: Callable[[dict[str, Any]], None],
    org_id: str,
    data_dir: Path,
    limit: int | None,
    latency_ms: float,
    on_progress: Callable[[dict[int, dict[str, Any]]], None] | None = None,
) -> tuple[list[VersionResult], tuple[str, str]]:
    """Upload the four recordings, publish the four versions, import GSM8K, and run `FIRST_RUNS`;
    returns their results and `(agent_id, dataset_id)`.

    Args:
        send_event: puts one message on the agent-events queue (the publish pipeline).
        on_progress: called with `{version: progress}` while the runs go.
    """
    recordings = upload_recordings(api, data_dir)
    suffix = str(int(time.time()))
    dataset = api.create_dataset(name="GSM8K test", dataset_id=f"gsm8k-{suffix}")
    content = (data_dir / "test.jsonl").read_text(encoding="utf-8")
    source: dict[str, Any] = {"format": "gsm8k", "content": content}
    if limit:
        source["limit"] = limit
    api.add_dataset_version(
        dataset["dataset_id"], scoring={"required": ["numeric_answer"]}, source=source
    )

    def spec(model: str) -> dict[str, Any]:
        return {
            "runtime": "recorded",
            "recording_id": recordings[model],
            "model": model,
            "latency_ms": latency_ms,
        }

    agent = api.create_agent(
        name="GSM8K solver", agent_id=f"gsm8k-solver-{suffix}", spec=spec(MODELS[0])
    )
    agent_id = agent["agent_id"]
    # the queue is shared: the pipeline signs each message with the organization's secret
    signing_key = secrets.token_urlsafe(32)
    api.put_secret(SIGNING_SECRET, signing_key)
    for version, model in enumerate(MODELS, start=1):
        event = {
            "type": "version_published",
            "org_id": org_id,
            "agent_id": agent_id,
            "version": version,
            "spec": spec(model),
            "published_by": "demo-pipeline",
        }
        send_event(sign_event(event, signing_key))
    deadline = time.monotonic() + 60
    while api.get_agent(agent_id).get("latest_version") != len(MODELS):
        if time.monotonic() > deadline:
            raise RuntimeError("the publish pipeline's events were not applied within 60 s")
        time.sleep(0.2)

    # The runs are made in `production`, the environment the guard checks: the version it serves
    # then stands in as the gate's baseline (a recent matching arm is reused, not asked again).
    api.create_environment(environment_id=ENVIRONMENT, name="Production")
    runs: dict[int, dict[str, Any]] = {}
    for version in FIRST_RUNS:
        runs[version] = api.start_run(
            agent_id,
            dataset_id=dataset["dataset_id"],
            candidate="version",
            version=version,
            environment_id=ENVIRONMENT,
        )
    progress: dict[int, dict[str, Any]] = {}
    while True:
        for version, run in runs.items():
            progress[version] = api.progress(run["run_id"])
        if on_progress:
            on_progress(progress)
        if all(p["status"] not in ("queued", "running") for p in progress.values()):
            break
        time.sleep(0.25)

    return [version_result(api, version, run["run_id"]) for version, run in runs.items()], (
        agent_id,
        dataset["dataset_id"],
    )


def version_result(
    api: Api, version: int, run_id: str, full: dict[str, Any] | None = None
) -> VersionResult:
    """A run's first candidate as a row of the demo's table (`full`: the run as read already by
    `GET /api/v1/eval-runs/{run_id}`, else it is read)."""
    from chalicelib.clock import parse_iso

    if full is None:
        full = api.get_run(run_id)
    outcome = full.get("outcome") or {}
    queued = wall = 0.0
    if full.get("started_at") and full.get("completed_at"):
        queued = (parse_iso(full["started_at"]) - parse_iso(full["created_at"])).total_seconds()
        wall = (parse_iso(full["completed_at"]) - parse_iso(full["started_at"])).total_seconds()
    return VersionResult(
        version,
        MODELS[version - 1],
        run_id,
        full["status"],
        outcome.get("passed", 0),
        outcome.get("total", 0),
        outcome.get("pass_rate"),
        outcome.get("verdict", "none"),
        queued,
        wall,
    )


def summaries(api: Api, agent_id: str) -> Any:
    """The summaries of every version: its verdict and pass counts, each from its latest completed
    run on the dataset (`POST /api/v1/agent-summaries`)."""
    return api.agent_summaries(
        [{"agentId": agent_id, "version": v} for v in range(1, len(MODELS) + 1)]
    )


FIRST_RUNS = (1, 2)
"""Versions measured first; 3 and 4 are measured by the guard when they are promoted."""


ENVIRONMENT = "production"
GUARD = {"min_pass_rate": 0.5, "max_regressions": 80}
"""The demo's guard: a 50 % floor, and up to 80 confirmed regressions against what is served."""


@dataclass
class GateOutcome:
    """One guarded promotion: the promotion as decided, the guard's result, its run and
    comparison."""

    version: int
    promotion: dict[str, Any]
    result: dict[str, Any] | None
    run: dict[str, Any] | None
    comparison: dict[str, Any] | None


def run_promotions(
    api: Api,
    agent_id: str,
    dataset_id: str,
    on_progress: Callable[[int, dict[str, Any]], None] | None = None,
) -> tuple[dict, list[GateOutcome]]:
    """`production` serves version 2; a suite guards it (`GUARD`); versions 3 and 4 are promoted
    in turn, each waiting for the guard's run of it beside version 2. Returns (suite, outcomes)."""
    api.promote(agent_id, environment_id=ENVIRONMENT, version=2)
    suite = api.create_suite(
        agent_id,
        name="production guard",
        dataset_id=dataset_id,
        environment_id=ENVIRONMENT,
        guards=True,
        threshold=GUARD,
    )
    outcomes = []
    for version in (3, 4):
        promotion = api.promote(agent_id, environment_id=ENVIRONMENT, version=version)
        pid = promotion["promotion_id"]
        while promotion["status"] == "waiting":
            view = api.get_suite(agent_id, suite["suite_id"])
            run_id = view.get("active_run_id")
            if on_progress and run_id and run_id != "starting":
                on_progress(version, api.progress(run_id))
            time.sleep(0.25)
            promotion = api.get_promotion(agent_id, pid)
        run_id = ((promotion.get("guards") or {}).get(suite["suite_id"]) or {}).get("run_id")
        result = (
            next(
                (
                    r
                    for r in api.suite_results(agent_id, suite["suite_id"])["results"]
                    if r["run_id"] == run_id
                ),
                None,
            )
            if run_id
            else None
        )
        run = api.get_run(run_id) if run_id else None
        comparison = api.comparison_or_none(run_id) if run_id else None
        if on_progress and run:
            on_progress(version, run["progress"])
        outcomes.append(GateOutcome(version, promotion, result, run, comparison))
    return suite, outcomes
