"""Model profiles' rules on fakes: what a profile may hold, what it lays over a spec
(docs/reference/runtimes.md), and no removal while a queued or running run has an arm on it."""

from __future__ import annotations

import pytest

from chalicelib.domain.identity import Identity
from chalicelib.domain.records import Run
from chalicelib.errors import ConflictError, InvalidInputError, NotFoundError
from chalicelib.services import model_profiles
from tests.fakes import FakeContainer
from tests.fakes.ledger import an_arm

ACME = Identity("acme", "ana")


def _run(run_id: str, status: str, *profiles: str | None) -> Run:
    return Run(
        run_id=run_id,
        org_id="acme",
        agent_id="a",
        dataset_id="d",
        dataset_version=1,
        created_at=f"2026-12-01T09:00:0{run_id[-1]}.000Z",
        status=status,
        phase="answering",
        candidate="version",
        spec_hash="h",
        environment_id="prod",
        arms=tuple(an_arm(f"arm{i}", model_profile_id=p) for i, p in enumerate(profiles)),
        case_ids_text="c1",
        scoring={},
        tasks_total=1,
        expected=1,
        heartbeat_at_ms=0,
    )


def test_a_profile_keeps_its_price_as_exact_decimals_and_lays_itself_over_a_spec(
    c: FakeContainer,
) -> None:
    profile = model_profiles.create(
        c,
        ACME,
        model_profile_id="mini",
        model="gpt-mini",
        temperature=0.2,
        settings={"base_url": "https://llm.example.com/v1", "max_tokens": 100},
        price={"input_per_mtok_usd": 0.15, "output_per_mtok_usd": "0.60"},
    )
    assert (profile.name, profile.price) == (
        "mini",
        {"input_per_mtok_usd": "0.15", "output_per_mtok_usd": "0.60"},
    )
    assert c.model_profiles.get("acme", "mini") == profile
    spec = {
        "runtime": "openai",
        "base_url": "https://other.example.com/v1",
        "model": "gpt-big",
        "max_tokens": 5,
    }
    assert model_profiles.apply(spec, profile) == {
        "runtime": "openai",
        "base_url": "https://llm.example.com/v1",
        "model": "gpt-mini",
        "max_tokens": 100,
        "model_profile_id": "mini",
        "temperature": 0.2,
        "price": {"input_per_mtok_usd": "0.15", "output_per_mtok_usd": "0.60"},
    }


def test_what_a_profile_may_not_hold(c: FakeContainer) -> None:
    refusals = [
        ({"price": {"input_per_mtok_usd": 1}}, "price"),
        ({"price": {"input_per_mtok_usd": -1, "output_per_mtok_usd": 1}}, "price"),
        ({"settings": {"runtime": "python"}}, "settings.runtime"),
        ({"settings": {"api_key_env": "ASSAY_JWT_SECRET"}}, "settings.api_key_env"),
        ({"model_profile_id": "a/b"}, "model_profile_id"),
    ]
    for extra, field in refusals:
        with pytest.raises(InvalidInputError) as refused:
            model_profiles.create(c, ACME, **{"model_profile_id": "p", "model": "m", **extra})
        assert refused.value.field == field, extra
    assert c.model_profiles.list("acme") == []
    model_profiles.create(c, ACME, model_profile_id="p", model="m")
    with pytest.raises(ConflictError):
        model_profiles.create(c, ACME, model_profile_id="p", model="other")


def test_removing_is_refused_while_a_queued_or_running_run_has_an_arm_on_it(
    c: FakeContainer,
) -> None:
    model_profiles.create(c, ACME, model_profile_id="mini", model="gpt-mini")
    c.runs.add(_run("r1", "running", "big", "mini"))
    c.runs.add(_run("r2", "queued", "mini"))
    c.runs.add(_run("r3", "completed", "mini"))  # ended: holds nothing
    with pytest.raises(ConflictError) as refused:
        model_profiles.delete(c, ACME, "mini")
    assert refused.value.field == "model_profile_id"
    assert refused.value.details["run_ids"] == ["r2", "r1"]  # newest first
    assert refused.value.message == "model profile mini is used by eval run r2 (queued or running)"
    assert c.model_profiles.get("acme", "mini").model == "gpt-mini"


def test_a_profile_no_active_run_uses_is_removed(c: FakeContainer) -> None:
    model_profiles.create(c, ACME, model_profile_id="mini", model="gpt-mini")
    c.runs.add(_run("r1", "running", "big"))
    c.runs.add(_run("r2", "cancelled", "mini"))
    model_profiles.delete(c, ACME, "mini")
    with pytest.raises(NotFoundError):
        c.model_profiles.get("acme", "mini")
    with pytest.raises(NotFoundError):
        model_profiles.delete(c, ACME, "mini")
