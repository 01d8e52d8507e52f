"""A run's arms as the run row keeps them: `Arm` records in, the same JSON maps out (issue 10)."""

from __future__ import annotations

import json
from typing import Any

import pytest

from chalicelib.adapters.stores.run_rows import arm_of, stored_arm
from chalicelib.domain.enums import ArmRole

SPEC = {"runtime": {"kind": "python"}, "model": "m1"}

CANDIDATE = {
    "arm_id": "candidate",
    "role": "candidate",
    "version": 3,
    "draft": False,
    "spec": SPEC,
    "spec_hash": "h3",
    "model_profile_id": None,
}
PAIRED = {
    "arm_id": "baseline",
    "role": "baseline",
    "version": 2,
    "draft": False,
    "spec": SPEC,
    "spec_hash": "h2",
    "model_profile_id": "fast",
    "answers": True,
    "rerun": False,
}
BORROWED = {
    "arm_id": "baseline",
    "role": "baseline",
    "version": 2,
    "draft": False,
    "spec": SPEC,
    "spec_hash": "h2",
    "model_profile_id": None,
    "answers": False,
    "rerun": True,
    "source_run_id": "run_1",
    "source_arm_id": "candidate",
    "source_dataset_version": 1,
    "source_completed_at": "2026-12-01T07:00:00.000Z",
}


@pytest.mark.parametrize(
    "kept", [CANDIDATE, PAIRED, BORROWED], ids=["candidate", "paired", "borrowed"]
)
def test_an_arm_is_kept_as_the_json_map_runs_always_kept(kept: dict[str, Any]) -> None:
    arm = arm_of(kept)
    assert json.dumps(stored_arm(arm)) == json.dumps(kept)  # same keys, same order, same values
    assert type(stored_arm(arm)["role"]) is str


def test_a_stored_arm_reads_as_typed_fields() -> None:
    arm = arm_of(BORROWED)
    assert arm.role is ArmRole.BASELINE and not arm.answers and arm.source_run_id == "run_1"
    candidate = arm_of(CANDIDATE)
    assert candidate.role is ArmRole.CANDIDATE and candidate.answers and candidate.rerun
