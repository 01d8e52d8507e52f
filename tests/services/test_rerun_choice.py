"""`reruns: "auto"` (`services.rerun_choice`, docs/concepts/noise.md) on fakes: the smallest
reruns in 1-5 under EVAL_MAX_LUCK from the newest measured comparison of the agent on the
dataset, 5 when none is, the default without one; the read stops after a few pages."""

from __future__ import annotations

from typing import Any

import pytest

from chalicelib.config import Settings
from chalicelib.domain.records import Run
from chalicelib.services import rerun_choice
from tests.fakes import FakeContainer
from tests.fakes.builders import a_run, an_outcome

LUCK = [0.0, 0.5, 0.12, 0.03, 0.008, 0.002]


def _measured(run_id: str, hour: int, luck: list[float] | None, **fields: Any) -> Run:
    outcome = an_outcome(total=3, passed=3)
    if luck is not None:
        outcome = outcome.model_copy(update={"noise": {"luck_by_reruns": luck, "bound": 0.01}})
    values: dict[str, Any] = {
        "status": "completed",
        "created_at": f"2026-12-01T{hour:02d}:00:00.000Z",
        "outcome": outcome,
        **fields,
    }
    return a_run(run_id, **values)


def test_the_smallest_reruns_under_the_bound_from_the_newest_measured_run() -> None:
    c = FakeContainer()
    c.runs.add(_measured("r1", 1, [0.0, 0.9, 0.9, 0.9, 0.9, 0.9]))  # older: not read
    c.runs.add(_measured("r2", 2, LUCK))
    c.runs.add(_measured("r3", 3, None))  # no noise measured (no baseline)
    c.runs.add(_measured("r4", 4, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], dataset_id="other"))
    c.runs.add(_measured("r5", 5, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], status="failed"))
    chosen, kept, said = rerun_choice.choose(c, "acme", "a", "d", default=2)
    assert chosen == 4
    assert kept == {
        "chosen": 4,
        "reason": kept["reason"],
        "from_run_id": "r2",
        "luck": 0.008,
        "bound": 0.01,
    }
    assert "fewer than 1 % of runs, as run r2 measured the noise (0.8 %)" in kept["reason"]
    assert said == f'reruns "auto": 4, {kept["reason"]}'


def test_a_run_being_deleted_or_of_another_organization_is_never_the_measured_run() -> None:
    """Another organization's run of an agent and dataset of the same ids, and a run whose
    delete has begun, are not read: the measured run is the organization's, and it can be
    opened."""
    c = FakeContainer()
    c.runs.add(_measured("mine", 1, LUCK))
    c.runs.add(_measured("theirs", 2, [0.0, 0.0, 0.0, 0.0, 0.0, 0.0], org_id="other"))
    gone = [0.0, 0.9, 0.9, 0.9, 0.9, 0.9]
    c.runs.add(_measured("going", 3, gone, deleting_at="2026-12-01T04:00:00.000Z"))
    _, kept, _ = rerun_choice.choose(c, "acme", "a", "d", default=2)
    assert (kept["from_run_id"], kept["chosen"]) == ("mine", 4)
    advice = rerun_choice.luck_advice(c, "acme", "a", "d", 1, CEILINGS)
    assert advice is not None and advice["from_run_id"] == "mine"
    assert rerun_choice.choose(c, "other", "a", "d", default=2)[1]["from_run_id"] == "theirs"


@pytest.mark.parametrize(("bound", "chosen"), [(0.2, 2), (0.05, 3), (0.001, 5)])
def test_the_bound_is_the_setting(bound: float, chosen: int) -> None:
    c = FakeContainer(settings=Settings(eval_max_luck=bound))
    c.runs.add(_measured("r2", 2, LUCK))
    assert rerun_choice.choose(c, "acme", "a", "d", default=2)[0] == chosen


def test_when_no_count_is_under_the_bound_it_takes_five_and_says_so() -> None:
    c = FakeContainer()
    c.runs.add(_measured("r2", 2, [0.0, 0.9, 0.8, 0.7, 0.6, 0.5]))
    chosen, kept, _ = rerun_choice.choose(c, "acme", "a", "d", default=2)
    assert (chosen, kept["luck"]) == (5, 0.5)
    assert kept["reason"].startswith(
        "no count of reruns up to 5 brings the chance of luck under 1 %"
    )


def test_without_a_measured_run_the_default_and_the_reason() -> None:
    c = FakeContainer()
    c.runs.add(_measured("r1", 1, None))
    chosen, kept, said = rerun_choice.choose(c, "acme", "a", "d", default=3)
    assert chosen == 3
    assert kept == {
        "chosen": 3,
        "reason": "no earlier comparison measured the noise",
        "from_run_id": None,
        "luck": None,
        "bound": 0.01,
    }
    assert said == 'reruns "auto": 3, the default: no earlier comparison measured the noise'


def test_the_read_stops_after_a_few_pages_of_the_agent_s_runs() -> None:
    c = FakeContainer()
    c.runs.add(_measured("old", 0, LUCK))
    newest = rerun_choice.PAGE * rerun_choice.PAGES
    for i in range(newest):
        c.runs.add(
            _measured(
                f"n{i:03d}", 1, None, created_at=f"2026-12-02T00:{i // 60:02d}:{i % 60:02d}.000Z"
            )
        )
    assert rerun_choice.newest_measured(c, "acme", "a", "d") is None
    c.runs.delete("acme", "n000")
    found = rerun_choice.newest_measured(c, "acme", "a", "d")
    assert found is not None and found.run_id == "old"


CEILINGS = [0, 100_000, 200_000, 300_000, 400_000, 500_000]  # micro-USD at 0..5 reruns


def test_an_estimates_luck_at_its_reruns_and_the_fewest_that_keep_it_under_the_bound() -> None:
    c = FakeContainer()
    c.runs.add(_measured("r2", 2, LUCK))
    advice = rerun_choice.luck_advice(c, "acme", "a", "d", 2, CEILINGS)
    assert advice == {
        "from_run_id": "r2",
        "bound": 0.01,
        "reruns": 2,
        "luck": 0.12,
        "suggested_reruns": 4,
        "suggested_rerun_ceiling_usd": 0.4,
        "sentence": "With the noise run r2 measured, a candidate that changed nothing would show a "
        "confirmed regression in 12 % of runs at 2 reruns; 4 reruns bring that under 1 %, for "
        "reruns of up to $0.40.",
    }


def test_an_estimate_already_under_the_bound_says_so_and_one_past_every_count_says_what_would() -> (
    None
):
    c = FakeContainer()
    c.runs.add(_measured("r2", 2, LUCK))
    under = rerun_choice.luck_advice(c, "acme", "a", "d", 5, CEILINGS)
    assert under is not None and under["suggested_reruns"] == 4
    assert under["sentence"].endswith("in 0.2 % of runs at 5 reruns, under 1 %.")
    c.runs.add(_measured("r3", 3, [0.0, 0.9, 0.8, 0.7, 0.6, 0.5]))
    past = rerun_choice.luck_advice(c, "acme", "a", "d", 1, CEILINGS)
    assert past is not None
    assert (past["from_run_id"], past["luck"], past["suggested_reruns"]) == ("r3", 0.9, None)
    assert past["suggested_rerun_ceiling_usd"] is None
    assert past["sentence"].endswith(
        "in 90 % of runs at 1 rerun; no count of reruns up to 5 brings that under 1 %: a steadier "
        "model (e.g. a lower temperature) would."
    )


def test_an_estimate_without_a_measured_comparison_says_nothing_of_luck() -> None:
    c = FakeContainer()
    c.runs.add(_measured("r3", 3, None))
    assert rerun_choice.luck_advice(c, "acme", "a", "d", 2, CEILINGS) is None


def test_an_estimate_with_no_reruns_says_nothing_is_confirmed_not_that_luck_is_nil() -> None:
    """A comparison with 0 reruns (an implied baseline allows it) confirms nothing: its chance
    of luck is 0, but so is a real regression's of being confirmed. The sentence says so and
    names the reruns that would keep luck rare, not "0 % of runs"."""
    c = FakeContainer()
    c.runs.add(_measured("r2", 2, [-0.0, *LUCK[1:]]))  # as a run measured before kept it
    advice = rerun_choice.luck_advice(c, "acme", "a", "d", 0, CEILINGS)
    assert advice is not None
    assert (advice["reruns"], advice["luck"], advice["suggested_reruns"]) == (0, 0.0, 4)
    assert str(advice["luck"]) == "0.0"  # never -0.0
    assert advice["sentence"] == (
        "Without reruns nothing is confirmed: a confirmed regression needs at least 1 rerun. With "
        "the noise run r2 measured, 4 reruns keep a candidate that changed nothing from showing "
        "one in more than 1 % of runs, for reruns of up to $0.40."
    )
    c.runs.add(_measured("r3", 3, [0.0, 0.9, 0.8, 0.7, 0.6, 0.5]))
    none = rerun_choice.luck_advice(c, "acme", "a", "d", 0, CEILINGS)
    assert none is not None and none["sentence"] == (
        "Without reruns nothing is confirmed: a confirmed regression needs at least 1 rerun. With "
        "the noise run r3 measured, no count of reruns up to 5 keeps a candidate that changed "
        "nothing from showing one in more than 1 % of runs: a steadier model (e.g. a lower "
        "temperature) would."
    )
