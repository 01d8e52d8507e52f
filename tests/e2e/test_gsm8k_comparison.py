"""The real data (docs/getting-started.md): four real models' recorded GSM8K answers as versions 1-4
of one agent; v4 against v3 and v3 against v2, each with a paired baseline over all 1,319 cases,
give the counts our own grading implies — computed here independently from the recorded answers."""

from __future__ import annotations

import json
import re
from fractions import Fraction
from pathlib import Path

import pytest

from assay_local import demo

DATA = Path(__file__).resolve().parents[2] / "examples" / "gsm8k"


def final_number(text: str) -> Fraction | None:
    """The number after the last `####` or `A:`, else the last number (an independent reading)."""
    marker = max(text.rfind("####"), text.rfind("A:"))
    tail = text[marker:] if marker >= 0 else text
    numbers = re.findall(r"-?\d[\d,]*(?:\.\d+)?", tail)
    if not numbers:
        return None
    return Fraction(numbers[0 if marker >= 0 else -1].replace(",", ""))


def expected_flips(before: str, after: str) -> tuple[int, int, int]:
    """(regressions, fixes, unchanged) between two models' recorded answers."""
    reference = {}
    for line in (DATA / "test.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        reference[row["question"]] = final_number(row["answer"])
    regressions = fixes = unchanged = 0
    for line in (DATA / "example_model_solutions.jsonl").read_text(encoding="utf-8").splitlines():
        row = json.loads(line)
        ref = reference[row["question"]]
        ok_before = final_number(row[before]["solution"]) == ref
        ok_after = final_number(row[after]["solution"]) == ref
        regressions += ok_before and not ok_after
        fixes += ok_after and not ok_before
        unchanged += ok_before == ok_after
    return regressions, fixes, unchanged


# 4 x 1,319 answers and every flip asked again: ten minutes of work on a shared 2-core machine, and
# more when it is loaded. The runs are waited on by their progress (a run that stands still for two
# minutes fails, naming what it saw); this bound is only a hang guard.
@pytest.mark.timeout(3600)
def test_v4_against_v3_and_v3_against_v2_on_every_gsm8k_case(api):
    assert DATA.is_dir(), f"GSM8K data not found at {DATA}: examples/gsm8k is in the repository"
    # Each model's answers are a recording of the organization, uploaded through the API.
    recordings = {}
    for model, text in demo.recording_texts(DATA).items():
        status, body = api.call(
            "POST", "/api/v1/recordings", json={"recording_id": f"gsm8k-{model}", "content": text}
        )
        assert status == 201, body
        assert body["lines"] == 1319
        recordings[model] = body["recording_id"]
    ds = api.ok("POST", "/api/v1/datasets", json={"name": "GSM8K"})["dataset_id"]
    api.ok(
        "POST",
        f"/api/v1/datasets/{ds}/versions",
        json={
            "scoring": {"required": ["numeric_answer"]},
            "source": {
                "format": "gsm8k",
                "content": (DATA / "test.jsonl").read_text(encoding="utf-8"),
            },
        },
    )
    specs = [
        {"runtime": "recorded", "recording_id": recordings[m], "model": m} for m in demo.MODELS
    ]
    agent = api.ok("POST", "/api/v1/agents", json={"name": "gsm8k", "spec": specs[0]})["agent_id"]
    for spec in specs:
        api.ok("PUT", f"/api/v1/agents/{agent}/draft", json={"spec": spec})
        api.ok("POST", f"/api/v1/agents/{agent}/versions")
    runs = {
        v: api.start(agent, ds, candidate="version", version=v, paired_baseline=True, reruns=1)
        for v in (3, 4)
    }
    for version, run in runs.items():
        assert api.wait(run["run_id"], timeout_s=3000)["status"] == "completed"
        comparison = api.ok("GET", f"/api/v1/eval-runs/{run['run_id']}/comparison")
        regressions, fixes, unchanged = expected_flips(
            demo.MODELS[version - 2], demo.MODELS[version - 1]
        )
        counts = comparison["counts"]
        assert (counts["regression"], counts["fixed"], counts["unchanged"]) == (
            regressions,
            fixes,
            unchanged,
        )
        assert regressions + fixes + unchanged == 1319
        # Recorded answers repeat themselves, so every flip holds on its rerun.
        assert (comparison["confirmed_regressions"], comparison["confirmed_fixes"]) == (
            regressions,
            fixes,
        )
        assert comparison["verdict"] == "mixed"
        from scipy.stats import binomtest

        p_value = binomtest(regressions, regressions + fixes, 0.5).pvalue
        assert comparison["p_value"] == pytest.approx(p_value)
        assert comparison["overall"] == (
            None if p_value >= 0.05 else "worse" if regressions > fixes else "better"
        )
