"""What changed between the specs a run tested, on fakes (docs/guides/console.md): the first
candidate against the baseline, as copied onto the run; editors only; a run without a baseline has
nothing to compare."""

from __future__ import annotations

import pytest

from chalicelib.domain.enums import ArmRole
from chalicelib.domain.identity import Identity
from chalicelib.domain.spec_diff import Change
from chalicelib.errors import ConflictError, ForbiddenError, NotFoundError
from chalicelib.services import runs
from tests.fakes import FakeContainer
from tests.fakes.ledger import a_run, an_arm

ACME = Identity("acme", "ana")
V3 = {"model": "m", "prompt": "one\ntwo", "temperature": 0}
DRAFT = {"model": "m", "prompt": "one\n2", "tools": ["calc"]}


def _paired(c: FakeContainer) -> None:
    c.runs.add(
        a_run(
            "r1",
            draft=True,
            resolved_version=None,
            arms=(
                an_arm(version=None, draft=True, spec=DRAFT, spec_hash="hd"),
                an_arm("candidate:other", model_profile_id="other", spec={"model": "x"}),
                an_arm("baseline", ArmRole.BASELINE, spec=V3),
            ),
        )
    )


def test_the_first_candidate_is_compared_with_the_baseline(c: FakeContainer) -> None:
    _paired(c)
    found = runs.spec_changes(c, ACME, "r1")
    assert (found.candidate.arm_id, found.baseline.arm_id) == ("candidate", "baseline")
    assert [(x.path, x.change) for x in found.diff.changes] == [
        ("prompt", Change.CHANGED),
        ("temperature", Change.REMOVED),
        ("tools", Change.ADDED),
    ]
    assert found.diff.changes[0].lines == ("@@ -1,2 +1,2 @@", " one", "-two", "+2")


def test_only_an_editor_of_the_agent_sees_the_changes(c: FakeContainer) -> None:
    _paired(c)
    runner = Identity(
        "acme",
        "rui",
        permissions=frozenset({"runs:view", "agents:view", "agents:run", "datasets:view"}),
    )
    with pytest.raises(ForbiddenError) as refused:
        runs.spec_changes(c, runner, "r1")
    assert refused.value.details["permission"] == "agents:edit"
    with pytest.raises(NotFoundError):
        runs.spec_changes(c, Identity("other", "ana"), "r1")


def test_a_run_without_a_baseline_has_nothing_to_compare(c: FakeContainer) -> None:
    c.runs.add(a_run("alone"))
    with pytest.raises(ConflictError) as refused:
        runs.spec_changes(c, ACME, "alone")
    assert refused.value.field == "run_id"
